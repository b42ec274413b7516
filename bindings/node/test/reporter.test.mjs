// The node:test reporter: a run's results land in the bucket in the results app's layout,
// written through objstore-db, and read back through it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Storage, version } from 'objstore-db';
import { platformName, runtimeName } from 'objstore-db/reporter';

import { tempDir } from './helpers.mjs';

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const SAMPLE = `
import assert from 'node:assert';
import { test } from 'node:test';
test('passes', () => assert.equal(1 + 1, 2));
test('fails', () => assert.equal(1 + 1, 3, 'arithmetic'));
test('skipped', { skip: 'not today' }, () => {});
`;

/**
 * Runs the sample as `<dir>/crud.test.mjs` with the reporter and `env`.
 * @param {string} dir
 * @param {Record<string, string>} env
 */
function runWithReporter(dir, env) {
  const file = path.join(dir, 'crud.test.mjs');
  fs.writeFileSync(file, SAMPLE);
  const args = ['--test', '--test-reporter=objstore-db/reporter', '--test-reporter-destination=stdout', file];
  // Without the outer runner's NODE_TEST_CONTEXT: the inner run reports on its own.
  const { OBJSTORE_RESULTS: _results, NODE_TEST_CONTEXT: _context, ...inherited } = process.env;
  return spawnSync(process.execPath, args, { cwd: PACKAGE, encoding: 'utf8', env: { ...inherited, ...env }, timeout: 60_000 });
}

test('a run is published as one object with a CTRF body and its metadata', async () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const run = runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}`, OBJSTORE_RESULTS_BUCKET: 'results' });
  assert.equal(run.status, 1, 'the run keeps its outcome (one test failed)');
  const line = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'));
  assert.ok(line, run.stdout + run.stderr);
  const key = line.split(' as ')[1];
  assert.match(key, new RegExp(`^${platformName()}/${runtimeName()}/\\d{13}-[0-9a-f]{16}/[0-9a-f]{16}$`));

  const options = { bucket: 'results', endpoint: `file://${bucket}` };
  const viewer = new Storage(path.join(dir, 'viewer.sqlite3'), {
    stores: [
      { name: 'results', Sync: { format: 'objstore', immutable: true, Options: options } },
      {
        name: 'results-meta',
        keyPath: 'name',
        indexes: [{ name: 'platform, browser', keyPath: ['metadata.platform', 'metadata.browser'] }],
        Sync: { format: 'objstore-meta', prefetch: 'meta', Options: { ...options, keyLayout: '{platform}/{browser}/{run}/{file}' } },
      },
    ],
  });
  try {
    const report = await viewer.get('results', key);
    /** @type {Record<string, {status: string, suite: string, message?: string, trace?: string}>} */
    const tests = Object.fromEntries(report.results.tests.map((/** @type {any} */ t) => [t.name, t]));
    assert.deepEqual(
      Object.fromEntries(Object.entries(tests).map(([n, t]) => [n, t.status])),
      { passes: 'passed', fails: 'failed', skipped: 'skipped' },
    );
    assert.ok(Object.values(tests).every((t) => t.suite === 'crud'));
    assert.match(tests.fails.message ?? '', /arithmetic/);
    assert.match(tests.fails.trace ?? '', /crud\.test\.mjs:\d+/, 'the stack names the line');
    assert.equal(report.results.summary.tests, 3);
    const described = await viewer.get('results-meta', key);
    const { platform, browser, version: published } = described.metadata;
    assert.deepEqual({ platform, browser, version: published }, { platform: platformName(), browser: runtimeName(), version });
  } finally {
    await viewer.close();
  }
});

test('an unreachable bucket is reported and the run keeps its outcome', () => {
  const run = runWithReporter(tempDir(), { OBJSTORE_RESULTS: 'http://127.0.0.1:9', OBJSTORE_RESULTS_BUCKET: 'results' });
  assert.equal(run.status, 1);
  assert.match(run.stdout, /^objstore-db: the results were not published: .*cannot reach the bucket/m);
});

test('without OBJSTORE_RESULTS it says so and publishes nothing', () => {
  const run = runWithReporter(tempDir(), {});
  assert.match(run.stdout, /OBJSTORE_RESULTS is not set/);
});
