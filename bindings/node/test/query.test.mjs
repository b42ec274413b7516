// query: the builder, pages that continue, count, patch, delete and explain.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MECHANISMS, openDb } from './helpers.mjs';

for (const mechanism of MECHANISMS) {
  describe(`query on ${mechanism}`, () => {
    test('pages continue from call to call', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      const q = db.from('people').where('city', '=', 'paris').order('age');
      assert.deepEqual((await q.list(1)).map((p) => p.name), ['cy']);
      assert.deepEqual((await q.list(5)).map((p) => p.name), ['ada']);
      assert.deepEqual(await q.list(5), []);
    });

    test('and, reverse, unique, select, count and explain', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      const older = db.from('people').where('age', '>', 24).and('city', '=', 'oslo').reverse();
      assert.deepEqual((await older.list(10)).map((p) => p.id), [4, 2]);
      assert.deepEqual(await db.from('people').order('city').unique().select('city').list(10), ['oslo', 'paris']);
      assert.deepEqual(await db.from('people').order('city').unique().select(['city']).list(10), [{ city: 'oslo' }, { city: 'paris' }]);
      assert.equal(await db.from('people').where('name', 'starts', 'd').count(), 1);
      assert.match(JSON.stringify(await db.from('people').where('city', '=', 'paris').order('age').explain()), /city, age/);
    });

    test('patch and delete every match', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.equal(await db.from('people').where('city', '=', 'oslo').patch({ country: 'no' }), 2);
      assert.equal((await db.get('people', 2)).country, 'no');
      assert.equal(await db.from('people').where('age', '<', 30).delete(), 2);
      assert.deepEqual(await db.keys('people'), [1, 4]);
    });

    test('a bad condition or a query changed after it ran is refused with a code', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      // @ts-expect-error: an unknown operator, on purpose
      await assert.rejects(db.from('people').where('age', '~', 1).list(1), { code: 'INVALID_ARGUMENT', message: /~/ });
      // @ts-expect-error: no "not equal" in YDN-DB's operators; the refusal lists them all
      await assert.rejects(db.from('people').where('age', '!=', 1).list(1), { code: 'INVALID_ARGUMENT', message: /"!=".*starts \(or \^\)/ });
      assert.deepEqual((await db.from('people').where('name', '^', 'd').list()).map((p) => p.id), [4]);
      const q = db.from('people');
      await q.list(1);
      assert.throws(() => q.where('age', '>', 1), { code: 'INVALID_ARGUMENT' });
    });
  });
}
