// sync against the S3 servers tests/run-all starts (moto and Garage on 127.0.0.1): a write
// reaches another client through the bucket, events and counters say what happened, and an
// unreachable bucket keeps writes and serves the cache.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

import { Storage } from 'objstore-db';

import { syncOptions, tempDir } from './helpers.mjs';

for (const name of /** @type {const} */ (['moto', 'garage'])) {
  test(`a write reaches another client through ${name}`, async () => {
    const dir = tempDir();
    /** @type {Record<string, import('objstore-db').SyncOptions>} */
    const sync = { results: { format: 'objstore', Options: syncOptions(name, 'rt') } };
    const schema = { stores: [{ name: 'results' }] };
    const writer = new Storage(path.join(dir, 'w.sqlite3'), schema, { sync });
    const reader = new Storage(path.join(dir, 'r.sqlite3'), schema, { sync });
    try {
      /** @type {unknown[]} */
    const flushed = [];
      writer.on('flushed', (e) => flushed.push(e.kind));
      await writer.put('results', { ok: true, text: 'ünïcode' }, 'linux/node/1');
      const report = await writer.flush();
      assert.equal(report.pending, 0, JSON.stringify(report));
      assert.deepEqual(await reader.get('results', 'linux/node/1'), { ok: true, text: 'ünïcode' });
      assert.equal(await reader.get('results', 'linux/node/none'), undefined);
      const stats = reader.syncStats(true);
      assert.deepEqual(stats.requests.GET, { 200: 1, 404: 1 }, JSON.stringify(stats));
      // The time waited on the bucket is counted beside the requests.
      assert.ok(Number.isInteger(stats.busyMs) && stats.busyMs >= 0, JSON.stringify(stats));
      // A cached record answers from the cache; {fresh: true} asks the bucket first.
      await writer.put('results', { ok: false }, 'linux/node/1');
      assert.equal((await writer.flush()).pending, 0);
      assert.deepEqual(await reader.get('results', 'linux/node/1', { fresh: true }), { ok: false });
      await reader.prefetch('results');
      assert.equal(await reader.count('results'), 1);
      assert.equal(await reader.syncStatus('results', 'linux/node/1'), 'synced');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(flushed.length >= 1, 'a flushed event');
    } finally {
      await writer.close();
      await reader.close();
    }
  });
}

test('an unreachable bucket keeps writes, serves the cache and rejects with NETWORK what it does not hold', async () => {
  /** @type {Record<string, import('objstore-db').SyncOptions>} */
  const sync = { docs: { format: 'objstore', Options: { bucket: 'b', endpoint: 'http://127.0.0.1:1', retries: 0 } } };
  const db = new Storage(path.join(tempDir(), 'o.sqlite3'), { stores: [{ name: 'docs' }] }, { sync });
  try {
    /** @type {unknown[]} */
    const offline = [];
    db.on('offline', (e) => offline.push(e.kind));
    await assert.rejects(db.get('docs', 'never-cached'), { code: 'NETWORK', message: /cannot reach the bucket/ });
    await db.put('docs', { n: 1 }, 'x');
    assert.equal((await db.flush()).pending, 1);
    assert.deepEqual(await db.get('docs', 'x'), { n: 1 });
    db.setOffline(true);
    await db.put('docs', { n: 2 }, 'y');
    assert.equal(await db.syncStatus('docs', 'y'), 'pending');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(offline.length >= 1, 'an offline event');
  } finally {
    await db.close();
  }
});

test('a bucket that ignores conditional writes (Garage) is found out, and a reopened database warns at once', async () => {
  const dir = tempDir();
  /** @type {Record<string, import('objstore-db').SyncOptions>} */
  const sync = { docs: { format: 'objstore', Options: syncOptions('garage', 'cond') } };
  const schema = { stores: [{ name: 'docs' }] };
  const first = new Storage(path.join(dir, 'c.sqlite3'), schema, { sync });
  try {
    assert.equal((await first.ready).warnings, undefined, 'nothing known yet');
    await first.put('docs', { v: 1 }, 'k');
    const report = await first.flush();
    assert.deepEqual([report.pending, report.refused, report.rejected, report.held], [0, 0, [], []]);
    assert.deepEqual(Object.values(first.syncStats().conditionalWrites), [false]);
  } finally {
    await first.close();
  }
  /** @type {Error[]} */
  const warnings = [];
  const listen = (/** @type {Error} */ w) => warnings.push(w);
  process.on('warning', listen);
  const again = new Storage(path.join(dir, 'c.sqlite3'), schema, { sync });
  try {
    const opened = await again.ready;
    assert.equal(opened.warnings?.length, 1);
    assert.match(opened.warnings?.[0] ?? '', /ignores conditional writes/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings.map((w) => w.name), ['ObjstoreDbSyncWarning']);
  } finally {
    process.off('warning', listen);
    await again.close();
  }
});

test('a withdrawn write leaves the outbox', async () => {
  /** @type {Record<string, import('objstore-db').SyncOptions>} */
  const sync = { docs: { format: 'objstore', Options: { bucket: 'b', endpoint: 'http://127.0.0.1:1', retries: 0 } } };
  const db = new Storage(path.join(tempDir(), 'w.sqlite3'), { stores: [{ name: 'docs' }] }, { sync });
  try {
    await db.put('docs', { n: 1 }, 'x');
    await db.put('docs', { n: 1 }, 'y');
    assert.equal(await db.withdrawPending('docs', 'x'), 1);
    assert.equal((await db.flush()).pending, 1);
    assert.equal(await db.withdrawPending('docs', 'x'), 0);
  } finally {
    await db.close();
  }
});

for (const name of /** @type {const} */ (['moto', 'garage'])) {
  test(`a cold reader starts from a checkpoint on ${name}`, async () => {
    const dir = tempDir();
    const Options = { ...syncOptions(name, 'cp'), changeLog: true, checkpoints: true };
    /** @type {Record<string, import('objstore-db').SyncOptions>} */
    const sync = { results: { format: 'objstore', prefetch: 'full', Options } };
    const schema = { stores: [{ name: 'results' }] };
    const writer = new Storage(path.join(dir, 'w.sqlite3'), schema, { sync });
    try {
      for (let i = 0; i < 5; i++) await writer.put('results', { i }, `linux/node/${i}`);
      assert.equal((await writer.flush()).pending, 0);
      const report = await writer.checkpoint('results');
      assert.equal(report.objects, 5, JSON.stringify(report));
      // The heads and the range shard, and the change log's waves (the background sender may
      // have sent the writes one by one, leaving none).
      assert.ok([2, 3].includes(report.shards), JSON.stringify(report));
      assert.ok(report.manifest.startsWith(`${Options.prefix}.objstore-checkpoints/`), report.manifest);
      await writer.put('results', { i: 'late' }, 'linux/node/late');
      assert.equal((await writer.flush()).pending, 0);
    } finally {
      await writer.close();
    }
    const reader = new Storage(path.join(dir, 'r.sqlite3'), schema, { sync });
    try {
      assert.equal(await reader.count('results'), 6);
      // The checkpoints' newest key and the change log after it.
      assert.deepEqual(reader.syncStats().requests.LIST, { 200: 2 });
    } finally {
      await reader.close();
    }
  });
}
