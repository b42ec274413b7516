// event: created, updated and deleted reach listeners in order; removeEventListener ends a
// listener; ready and error come from the open; a listener that throws never stops the process.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { Storage } from 'objstore-db';

import { MECHANISMS, SCHEMA, openDb, tempDir } from './helpers.mjs';

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

for (const mechanism of MECHANISMS) {
  describe(`event on ${mechanism}`, () => {
    test('created, updated and deleted arrive in order with key and value', async (t) => {
      const db = await openDb(t, mechanism);
      /** @type {unknown[]} */
      const seen = [];
      db.addEventListener(['created', 'updated', 'deleted'], (e) => seen.push([e.kind, e.key, e.value && e.value.name]));
      await db.put('people', { id: 1, name: 'ada', email: 'a' });
      await db.put('people', { id: 1, name: 'ada2', email: 'a' });
      await db.remove('people', 1);
      await settle();
      assert.deepEqual(seen, [
        ['created', 1, 'ada'],
        ['updated', 1, 'ada2'],
        ['deleted', 1, 'ada2'],
      ]);
    });

    test('removeEventListener (and off) ends a listener', async (t) => {
      const db = await openDb(t, mechanism);
      /** @type {unknown[]} */
      const seen = [];
      /** @param {import('objstore-db').StorageEvent} e */
      const listener = (e) => seen.push(e.key);
      db.on('created', listener);
      await db.put('notes', { n: 1 });
      await settle();
      db.off('created', listener);
      await settle();
      await db.put('notes', { n: 2 });
      await settle();
      assert.deepEqual(seen, [1]);
    });

    test('a listener that throws is reported to the error listeners and the next event still arrives', async (t) => {
      const db = await openDb(t, mechanism);
      /** @type {unknown[]} */
      /** @type {unknown[]} */
  const errors = [];
      /** @type {unknown[]} */
      const seen = [];
      db.on('error', (e) => errors.push(e.message));
      db.on('created', (e) => {
        seen.push(e.key);
        if (e.key === 1) throw new Error('listener bug');
      });
      await db.put('notes', [{ n: 1 }, { n: 2 }]);
      await settle();
      assert.deepEqual(seen, [1, 2]);
      assert.deepEqual(errors, ['an event listener threw: listener bug']);
    });

    test('an unknown event kind is refused', async (t) => {
      const db = await openDb(t, mechanism);
      // @ts-expect-error: an unknown kind, on purpose
      assert.throws(() => db.on('exploded', () => {}), { code: 'INVALID_ARGUMENT', message: /exploded/ });
    });
  });
}

test('ready and onReady after the open; error and a rejected ready when it cannot open', async () => {
  const good = new Storage(path.join(tempDir(), 'ok.sqlite3'), SCHEMA);
  /** @type {unknown[]} */
  const events = [];
  good.on('ready', (e) => events.push(e.kind, e.value));
  const fromOnReady = await new Promise((resolve) => good.onReady(resolve));
  assert.equal(fromOnReady, undefined);
  await settle();
  assert.deepEqual(events, ['ready', { version: 1, previousVersion: null }]);
  await good.close();
  // A schema without a version that changed is the next version (YDN-DB's rule).
  const changed = JSON.parse(JSON.stringify(SCHEMA));
  delete changed.version;
  changed.stores[0].indexes = [...(changed.stores[0].indexes ?? []), { keyPath: 'nickname' }];
  const again = new Storage(good.name, changed);
  const opened = await again.ready;
  assert.deepEqual([opened.version, opened.previousVersion], [2, 1]);
  assert.equal((await again.getSchema()).version, 2);
  await again.close();

  const bad = new Storage(path.join(tempDir(), 'no', 'such', 'dir', 'x.sqlite3'), SCHEMA);
  /** @type {unknown[]} */
  const errors = [];
  bad.on('error', (e) => errors.push(e.message));
  await assert.rejects(bad.ready, { code: 'STORAGE' });
  await assert.rejects(bad.get('people', 1));
  await settle();
  assert.equal(errors.length, 1);
});
