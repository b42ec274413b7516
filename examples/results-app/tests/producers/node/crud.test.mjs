// node:test's side of the fixtures: two tests of one name in two describe blocks, a todo whose
// body fails, a skip and a failure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

describe('put', () => {
  test('works', () => assert.equal(1 + 1, 2));
});
describe('get', () => {
  test('works', () => assert.equal(2 * 2, 5, 'get returned the wrong record'));
});
test('later', { todo: 'not written yet' }, () => assert.fail('the body fails'));
test('offline', { skip: 'no network' }, () => {});
test('top level passes', () => {});
