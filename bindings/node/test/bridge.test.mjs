// The bridge: many concurrent requests, only pending requests keep the process alive (an idle
// database, a listener or a synced store never do), worker threads each open databases, and an
// exit with work in flight loses no committed write.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

import { Storage } from 'objstore-db';

import { SCHEMA, openDb, tempDir } from './helpers.mjs';

const HERE = path.dirname(new URL(import.meta.url).pathname);

/**
 * Runs `body` (an ES module's text) in a fresh node; its exit status, output and time.
 * @param {string} body
 */
function runNode(body, timeout = 30_000) {
  const started = Date.now();
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', body], { cwd: HERE, encoding: 'utf8', timeout });
  return { ...result, ms: Date.now() - started };
}

test('thousands of concurrent requests all settle', async (t) => {
  const db = await openDb(t, 'sqlite');
  const keys = await Promise.all(Array.from({ length: 5000 }, (_, n) => db.put('notes', { n })));
  assert.equal(new Set(keys).size, 5000);
  const values = await Promise.all(keys.map((k) => db.get('notes', k)));
  assert.deepEqual(values.map((v) => v.n), Array.from({ length: 5000 }, (_, n) => n));
});

test('an idle database, a listener and a synced store do not keep the process alive', () => {
  const dir = tempDir();
  const body = `
    import { Storage } from 'objstore-db';
    const db = new Storage(${JSON.stringify(path.join(dir, 'idle.sqlite3'))}, {
      stores: [{ name: 'n' }, { name: 'synced', Sync: { format: 'objstore', Options: { bucket: 'b', endpoint: 'file://${dir}/bucket' } } }],
    });
    db.on('created', () => {});
    await db.put('n', { a: 1 }, 1);
    await db.put('synced', { a: 1 }, 'k');
    console.log('done');`;
  const { status, stdout, stderr, ms, error } = runNode(body);
  assert.equal(error, undefined, `the process did not exit by itself (${ms} ms)`);
  assert.equal(status, 0, stderr);
  assert.match(stdout, /done/);
});

test('a pending request keeps the process alive until it settles', () => {
  const dir = tempDir();
  const body = `
    import { Storage } from 'objstore-db';
    const db = new Storage(${JSON.stringify(path.join(dir, 'p.sqlite3'))}, { stores: [{ name: 'n', autoIncrement: true }] });
    db.put('n', Array.from({ length: 50000 }, (_, i) => ({ i }))).then((keys) => console.log('settled', keys.length));`;
  const { status, stdout, stderr } = runNode(body);
  assert.equal(status, 0, stderr);
  assert.match(stdout, /settled 50000/);
});

test('exit with an open database and work in flight neither hangs nor loses a committed write', async () => {
  const file = path.join(tempDir(), 'exit.sqlite3');
  const body = `
    import { Storage } from 'objstore-db';
    const db = new Storage(${JSON.stringify(file)}, { stores: [{ name: 'n' }] });
    await db.put('n', { committed: true }, 'k');
    for (let i = 0; i < 1000; i++) db.put('n', { i }, i);
    process.exit(0);`;
  const { status, stderr } = runNode(body);
  assert.equal(status, 0, stderr);
  const db = new Storage(file);
  assert.deepEqual(await db.get('n', 'k'), { committed: true });
  await db.close();
});

const WORKER = new URL('./fixtures/worker.mjs', import.meta.url);

/**
 * @param {{file: string, leave?: boolean}} workerData
 * @returns {Promise<{code: number, message: unknown}>}
 */
function worker(workerData) {
  return new Promise((resolve, reject) => {
    const thread = new Worker(WORKER, { workerData });
    /** @type {unknown} */
    let message;
    thread.once('message', (m) => (message = m));
    thread.once('error', reject);
    thread.once('exit', (code) => resolve({ code, message }));
  });
}

test('worker threads each open databases and use them at once', async () => {
  const dir = tempDir();
  const results = await Promise.all([0, 1, 2].map((n) => worker({ file: path.join(dir, `w${n}.sqlite3`) })));
  assert.deepEqual(results, [0, 1, 2].map(() => ({ code: 0, message: 500 })));
});

test('a worker that ends with requests still pending does not take the process down', async () => {
  const dir = tempDir();
  assert.equal((await worker({ file: path.join(dir, 'gone.sqlite3'), leave: true })).code, 0);
  // The completion for the gone thread is dropped; this thread goes on working.
  const db = new Storage(path.join(dir, 'after.sqlite3'), SCHEMA);
  assert.equal(await db.put('notes', { ok: true }), 1);
  await db.close();
});

test('close settles every request made before it, then itself', async (t) => {
  const db = await openDb(t, 'sqlite');
  /** @type {string[]} */
  const order = [];
  const puts = Array.from({ length: 200 }, (_, i) => db.put('notes', { i }).then(() => order.push('put'), () => order.push('failed')));
  const closed = db.close().then(() => order.push('close'));
  await Promise.all([...puts, closed]);
  assert.equal(order.at(-1), 'close');
  assert.equal(order.length, 201);
  await assert.rejects(db.get('notes', 1), { code: 'CLOSED' });
});

test('the package loads through require as well as import', () => {
  const cjs = execFileSync(process.execPath, ['-e', "console.log(typeof require('objstore-db').Storage)"], { cwd: HERE, encoding: 'utf8' });
  assert.equal(cjs.trim(), 'function');
});

test('without its native module the package says how to build it', () => {
  const copy = tempDir();
  for (const file of ['index.js', 'native.js', 'package.json']) fs.copyFileSync(path.join(HERE, '..', file), path.join(copy, file));
  const run = spawnSync(process.execPath, ['-e', "try { require('./') } catch (e) { console.log(e.code, e.message) }"], { cwd: copy, encoding: 'utf8' });
  assert.match(run.stdout, /^OBJSTORE_NOT_BUILT .*has not been built: its package for this platform, objstore-db-linux-x64-gnu, is not installed.*scripts\/build\.js/);
});

test('a file open in another Storage is refused, naming it, until that one closes', async () => {
  const file = path.join(tempDir(), 'held.sqlite3');
  const first = new Storage(file, SCHEMA);
  await first.ready;
  const second = new Storage(file, null, { durability: 'full' });
  await assert.rejects(second.ready, { code: 'STORAGE', message: /held\.sqlite3.*open in another process/ });
  await first.close();
  const again = new Storage(file, null, { durability: 'full' });
  assert.equal(await again.count('people'), 0);
  await again.close();
  assert.throws(
    // @ts-expect-error: an unknown durability, on purpose
    () => new Storage(file, null, { durability: 'eventual' }),
    { code: 'INVALID_ARGUMENT', message: /unknown durability "eventual"/ },
  );
});
