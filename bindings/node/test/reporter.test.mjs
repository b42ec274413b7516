// The node:test reporter: a run's results land in the bucket in the results app's layout,
// written through objstore-db, and read back through it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Storage, version } from 'objstore-db';
import { findCodeowners, platformName, runtimeName } from 'objstore-db/reporter';

import digests from '../digest.js';
import { tempDir } from './helpers.mjs';

const CI_MARKERS = ['GITHUB_ACTIONS', 'GITLAB_CI', 'BUILDKITE', 'CIRCLECI', 'JENKINS_URL', 'TF_BUILD', 'OBJSTORE_RESULTS_RUN'];
const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const SAMPLE = `
import assert from 'node:assert';
import { test } from 'node:test';
test('passes', () => assert.equal(1 + 1, 2));
test('fails', () => assert.equal(1 + 1, 3, 'arithmetic'));
test('skipped', { skip: 'not today' }, () => {});
`;

/**
 * Runs `sample` as `<dir>/crud.test.mjs` with the reporter and `env`.
 * @param {string} dir
 * @param {Record<string, string>} env
 * @param {string} [sample]
 */
function runWithReporter(dir, env, sample = SAMPLE) {
  const file = path.join(dir, 'crud.test.mjs');
  fs.writeFileSync(file, sample);
  const args = ['--test', '--test-reporter=objstore-db/reporter', '--test-reporter-destination=stdout', file];
  // Without the outer runner's NODE_TEST_CONTEXT: the inner run reports on its own; and outside
  // any CI but the one `env` plays.
  const { OBJSTORE_RESULTS: _results, OBJSTORE_COLLECTOR: _collector, NODE_TEST_CONTEXT: _context, ...inherited } = process.env;
  for (const name of CI_MARKERS) delete inherited[name];
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
  assert.match(key, new RegExp(`^${platformName()}/${runtimeName()}/\\d{13}-[0-9a-f]{16}/[0-9a-f]{16}\\.2\\.[A-Za-z0-9._-]+$`));

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
    // The name carries the body's digest: the app's matrix reads it from a listing.
    assert.equal(key.split('/')[3].split('.').slice(1).join('.'), digests.digest(report));
    const described = await viewer.get('results-meta', key);
    const { platform, browser, version: published } = described.metadata;
    // The project's version: the package.json where node ran (here objstore-db's own).
    const projectVersion = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')).version;
    assert.equal(projectVersion, version);
    assert.deepEqual({ platform, browser, version: published }, { platform: platformName(), browser: runtimeName(), version: projectVersion });
  } finally {
    await viewer.close();
  }
});

const NESTED = `
import assert from 'node:assert';
import { describe, test } from 'node:test';
describe('Put Records', () => {
  test('works', () => {});
  describe('in a batch', () => { test('works', () => assert.fail('no batch')); });
});
describe('get', () => { test('works', () => {}); });
test('top level', () => {});
test('with subtests', async (t) => { await t.test('first', () => {}); });
`;

test('tests are named as the app names node JUnit: the outer describe block is the suite, the inner ones name the test', async () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const run = runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}` }, NESTED);
  const line = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'));
  assert.ok(line, run.stdout + run.stderr);
  const viewer = new Storage(path.join(dir, 'viewer.sqlite3'), {
    stores: [{ name: 'results', Sync: { format: 'objstore', immutable: true, Options: { bucket: 'results', endpoint: `file://${bucket}` } } }],
  });
  try {
    const report = await viewer.get('results', line.split(' as ')[1]);
    const named = report.results.tests.map((/** @type {any} */ t) => `${t.suite} | ${t.name}`).sort();
    assert.deepEqual(named, [
      'crud | top level',
      'crud | with subtests',
      'get | works',
      'put records | in a batch > works',
      'put records | works',
      'with subtests | first',
    ]);
  } finally {
    await viewer.close();
  }
});

test('the run is labelled as post labels it: OBJSTORE_RESULTS_PLATFORM, _RUNTIME and _VERSION', async () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const labels = { OBJSTORE_RESULTS_PLATFORM: 'windows-x86_64', OBJSTORE_RESULTS_RUNTIME: 'node-22', OBJSTORE_RESULTS_VERSION: '3.1.0' };
  const run = runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}`, ...labels });
  const line = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'));
  assert.ok(line, run.stdout + run.stderr);
  const key = line.split(' as ')[1];
  assert.ok(key.startsWith('windows-x86_64/node-22/'), key);
  const viewer = new Storage(path.join(dir, 'viewer.sqlite3'), {
    stores: [{ name: 'results', Sync: { format: 'objstore', immutable: true, Options: { bucket: 'results', endpoint: `file://${bucket}` } } }],
  });
  try {
    const report = await viewer.get('results', key);
    assert.deepEqual([report.platform, report.browser, report.version], ['windows-x86_64', 'node-22', '3.1.0']);
  } finally {
    await viewer.close();
  }
  const bad = runWithReporter(tempDir(), { OBJSTORE_RESULTS: `file://${bucket}`, OBJSTORE_RESULTS_RUNTIME: 'node 22' });
  assert.equal(bad.status, 1, 'the run keeps its outcome');
  assert.match(bad.stdout, /^objstore-db: the results were not published: the runtime "node 22" must be/m);
});

test('an unreachable bucket is reported and the run keeps its outcome', () => {
  const run = runWithReporter(tempDir(), { OBJSTORE_RESULTS: 'http://127.0.0.1:9', OBJSTORE_RESULTS_BUCKET: 'results' });
  assert.equal(run.status, 1);
  assert.match(run.stdout, /^objstore-db: the results were not published: .*cannot reach the bucket/m);
});

test('without OBJSTORE_RESULTS it says so and publishes nothing', () => {
  const run = runWithReporter(tempDir(), {});
  assert.match(run.stdout, /neither OBJSTORE_RESULTS nor OBJSTORE_COLLECTOR is set/);
});

test('two jobs of one CI run publish one run, anchored once, with its commit, branch and page', () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const github = { GITHUB_ACTIONS: 'true', GITHUB_RUN_ID: '777', GITHUB_RUN_ATTEMPT: '1', GITHUB_SHA: 'abc123',
    GITHUB_REF_NAME: 'main', GITHUB_SERVER_URL: 'https://github.com', GITHUB_REPOSITORY: 'team/db' };
  const keys = [1, 2].map(() => {
    const run = runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}`, ...github });
    const line = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'));
    assert.ok(line, run.stdout + run.stderr);
    return line.split(' as ')[1];
  });
  const runs = new Set(keys.map((k) => k.slice(0, k.lastIndexOf('/'))));
  assert.equal(runs.size, 1, keys.join(' '));
  assert.notEqual(keys[0], keys[1]);
  assert.match([...runs][0], /\/\d{13}-github-777-1$/);
  assert.ok(fs.existsSync(path.join(bucket, 'results/.runs/github-777-1')));
  const stored = JSON.parse(fs.readFileSync(path.join(bucket, 'results', keys[0]), 'utf8'));
  assert.deepEqual(stored.ci, { run: 'github-777-1', commit: 'abc123', branch: 'main',
    url: 'https://github.com/team/db/actions/runs/777/attempts/1' });
});

test('run ids are made as the app makes them', async () => {
  const { runId, detect } = (await import('../ci.js')).default;
  // examples/results-app/src/ci.rs pins the same value.
  assert.equal(runId('jenkins', 'jenkins-team/db main-12'), 'jenkins-jenkins-team-db-main-12-f4dba2926d3b141c');
  assert.equal(runId('github', '9876543210', '2'), 'github-9876543210-2');
  assert.deepEqual(detect({ GITLAB_CI: 'true', CI_PIPELINE_ID: '77' }), { run: 'gitlab-77' });
  assert.deepEqual(detect({ OBJSTORE_RESULTS_RUN: 'nightly-7' }), { run: 'nightly-7' });
});

test('the digest is the one the results app pins', () => {
  const fixture = JSON.parse(fs.readFileSync(path.join(PACKAGE, '../../examples/results-app/tests/fixtures/digest.json'), 'utf8'));
  assert.equal(digests.digest(fixture.report), fixture.digest);
});

test('a quarantined failure is published marked, and the run passes; elsewhere it fails again', async () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const options = { bucket: 'results', endpoint: `file://${bucket}` };
  /** @param {string} pairs */
  const quarantine = async (pairs) => {
    const editor = new Storage(path.join(dir, 'editor.sqlite3'), { stores: [{ name: 'quarantine', Sync: { format: 'objstore', Options: options } }] });
    try {
      const entry = { suite: 'crud', name: 'fails', pairs, reason: 'known', added: 0 };
      await editor.put('quarantine', { entries: [entry], history: [] }, '.quarantine');
      assert.equal((await editor.flush()).pending, 0);
    } finally {
      await editor.close();
    }
  };
  await quarantine(`${platformName()}/node-*`);
  const run = runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}`, OBJSTORE_RESULTS_BUCKET: 'results' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /1 failure\(s\), every one quarantined: the run passes/);
  const key = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'))?.split(' as ')[1];
  const stored = JSON.parse(fs.readFileSync(path.join(bucket, 'results', String(key)), 'utf8'));
  const fails = stored.results.tests.find((/** @type {any} */ t) => t.name === 'fails');
  assert.deepEqual([fails.status, fails.quarantined], ['failed', true]);
  await quarantine('nowhere/*');
  assert.equal(runWithReporter(dir, { OBJSTORE_RESULTS: `file://${bucket}`, OBJSTORE_RESULTS_BUCKET: 'results' }).status, 1);
});

// The results app that cargo test built (bindings/node/run builds it when it is missing).
const RESULTS_APP = path.resolve(PACKAGE, '../../target/debug/objstore-results');
const COLLECTOR_TOKEN = 'node-collector-token-0001';

/**
 * `objstore-results serve` on a free port over a file:// bucket in `dir`, taking posts with one
 * token; its URL, and a stop.
 * @param {string} dir
 */
async function startCollector(dir) {
  assert.ok(fs.existsSync(RESULTS_APP), `${RESULTS_APP} is missing: cargo build -p objstore-results`);
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, OBJSTORE_RESULTS: `file://${path.join(dir, 'bucket')}`, XDG_CACHE_HOME: path.join(dir, 'cache') };
  for (const name of [...CI_MARKERS, 'OBJSTORE_RESULTS_BUCKET', 'OBJSTORE_RESULTS_PREFIX']) delete env[name];
  const server = spawn(RESULTS_APP, ['serve', '--listen', '127.0.0.1:0', '--token', COLLECTOR_TOKEN], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const line = await new Promise((resolve, reject) => {
    let seen = '';
    server.stdout.on('data', (chunk) => {
      seen += chunk;
      if (seen.includes('\n')) resolve(seen.split('\n')[0]);
    });
    server.on('exit', () => reject(new Error(`serve exited: ${seen}`)));
  });
  const url = String(line).trim().split(' ').pop()?.replace(/\/results$/, '') ?? '';
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, String(line));
  return { url, env, stop: () => server.kill() };
}

test("the repository's CODEOWNERS is found from where node runs, up to the repository's top", () => {
  const repo = tempDir();
  fs.mkdirSync(path.join(repo, '.git'));
  fs.mkdirSync(path.join(repo, '.github'));
  fs.writeFileSync(path.join(repo, '.github', 'CODEOWNERS'), '* @team/db\n');
  fs.mkdirSync(path.join(repo, 'packages', 'cart'), { recursive: true });
  assert.deepEqual(findCodeowners(path.join(repo, 'packages', 'cart')), { source: '.github/CODEOWNERS', text: '* @team/db\n' });
  // The repository's top bounds the search: a CODEOWNERS above it is another repository's.
  const inner = path.join(repo, 'vendor');
  fs.mkdirSync(path.join(inner, '.git'), { recursive: true });
  assert.equal(findCodeowners(inner), undefined);
});

test('through a collector a job needs no bucket settings: the run is posted with its token and the quarantine read through it', async () => {
  const dir = tempDir();
  const collector = await startCollector(dir);
  try {
    const add = spawnSync(RESULTS_APP, ['quarantine', 'add', '--suite', 'crud', '--name', 'fails', '--reason', 'known'], { env: collector.env, encoding: 'utf8' });
    assert.equal(add.status, 0, add.stderr);
    const run = runWithReporter(dir, { OBJSTORE_COLLECTOR: collector.url, OBJSTORE_COLLECTOR_TOKEN: COLLECTOR_TOKEN });
    const line = run.stdout.split('\n').find((l) => l.startsWith(`objstore-db: results published to ${collector.url} as `));
    assert.ok(line, run.stdout + run.stderr);
    assert.equal(run.status, 0, 'its one failure is quarantined: the run passes');
    const viewer = new Storage(path.join(dir, 'viewer.sqlite3'), {
      stores: [{ name: 'results', Sync: { format: 'objstore', immutable: true, Options: { bucket: 'results', endpoint: `file://${path.join(dir, 'bucket')}` } } }],
    });
    try {
      const report = await viewer.get('results', line.split(' as ')[1]);
      const fails = report.results.tests.find((/** @type {any} */ t) => t.name === 'fails');
      assert.deepEqual([fails.status, fails.quarantined], ['failed', true]);
    } finally {
      await viewer.close();
    }
    // The repository's CODEOWNERS went through the collector into its bucket, once.
    const codeowners = path.join(dir, 'CODEOWNERS');
    fs.writeFileSync(codeowners, 'crud @team/crud\n');
    const owned = { OBJSTORE_COLLECTOR: collector.url, OBJSTORE_COLLECTOR_TOKEN: COLLECTOR_TOKEN, OBJSTORE_RESULTS_CODEOWNERS: codeowners };
    const kept = runWithReporter(dir, owned).stdout;
    assert.ok(kept.includes(`objstore-db: CODEOWNERS kept from ${codeowners}\n`), kept);
    assert.doesNotMatch(runWithReporter(dir, owned).stdout, /CODEOWNERS/, 'unchanged: not sent again');
    const shown = spawnSync(RESULTS_APP, ['codeowners', 'owners', 'crud'], { env: collector.env, encoding: 'utf8' });
    assert.equal(shown.stdout, 'crud: @team/crud\n', shown.stderr);
    const refused = runWithReporter(tempDir(), { OBJSTORE_COLLECTOR: collector.url, OBJSTORE_COLLECTOR_TOKEN: 'not-the-token-at-all' });
    assert.match(refused.stdout, /^objstore-db: the results were not published: the collector at .* answered 401: .*OBJSTORE_COLLECTOR_TOKEN/m);
  } finally {
    collector.stop();
  }
});

test('a rerun is published as later attempts of its run: ci.rerun, no digest in its name, and only with a run', async () => {
  const dir = tempDir();
  const bucket = path.join(dir, 'bucket');
  const env = { OBJSTORE_RESULTS: `file://${bucket}`, OBJSTORE_RESULTS_RERUN: '1' };
  const alone = runWithReporter(dir, env);
  assert.match(alone.stdout, /not published: OBJSTORE_RESULTS_RERUN publishes later attempts of a run's tests/);
  assert.ok(!fs.existsSync(bucket), 'nothing written');
  const run = runWithReporter(dir, { ...env, OBJSTORE_RESULTS_RUN: 'ci-7' });
  const line = run.stdout.split('\n').find((l) => l.startsWith('objstore-db: results published'));
  assert.ok(line, run.stdout + run.stderr);
  const key = line.split(' as ')[1];
  assert.match(key, /\/\d{13}-ci-7\/[0-9a-f]{16}$/, 'a rerun\'s name carries no digest: the app folds it from its body');
  const viewer = new Storage(path.join(dir, 'viewer.sqlite3'), {
    stores: [{ name: 'results', Sync: { format: 'objstore', immutable: true, Options: { bucket: 'results', endpoint: `file://${bucket}` } } }],
  });
  try {
    const report = await viewer.get('results', key);
    assert.deepEqual(report.ci, { run: 'ci-7', rerun: true });
  } finally {
    await viewer.close();
  }
});
