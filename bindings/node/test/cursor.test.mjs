// cursor: streaming cursors (open(cb, mode) and for await) that update and clear while other
// requests run, stop on a throw or on false, and keep memory flat on a large store.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MECHANISMS, openDb } from './helpers.mjs';

for (const mechanism of MECHANISMS) {
  describe(`cursor on ${mechanism}`, () => {
    test('open streams every record to a callback that updates and clears while other requests run', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      /** @type {unknown[]} */
      const seen = [];
      const count = await db.from('people').open(async (cursor) => {
        seen.push(cursor.getPrimaryKey());
        assert.equal(await db.count('notes'), 0); // another request between two records
        const person = cursor.getValue();
        if (person.city === 'oslo') await cursor.clear();
        else cursor.update({ ...person, seen: true });
      }, 'readwrite');
      assert.equal(count, 4);
      assert.deepEqual(seen, [1, 2, 3, 4]);
      assert.deepEqual(await db.keys('people'), [1, 3]);
      assert.equal((await db.get('people', 3)).seen, true);
    });

    test('a callback that throws rejects the stream and stops it', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      let calls = 0;
      await assert.rejects(
        db.from('people').open(() => {
          calls += 1;
          if (calls === 2) throw new Error('stop here');
        }),
        /stop here/,
      );
      assert.equal(calls, 2);
      assert.equal(await db.count('people'), 4);
    });

    test('a readonly cursor refuses writes; returning false stops early', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await assert.rejects(db.from('people').open((c) => c.clear()), { code: 'READ_ONLY' });
      assert.equal(await db.from('people').open(() => false), 1);
    });

    test('for await streams a large store in batches', async (t) => {
      const db = await openDb(t, mechanism);
      await db.put('notes', Array.from({ length: 3000 }, (_, n) => ({ n })));
      let total = 0;
      for await (const cursor of db.from('notes')) total += cursor.getValue().n;
      assert.equal(total, (2999 * 3000) / 2);
    });
  });
}

test('streaming a store larger than memory keeps memory flat', async (t) => {
  const db = await openDb(t, 'sqlite', { schema: { stores: [{ name: 'blobs', keyPath: 'id' }] } });
  const filler = 'x'.repeat(1024);
  for (let start = 0; start < 60_000; start += 5_000) {
    await db.put('blobs', Array.from({ length: 5_000 }, (_, i) => ({ id: start + i, body: filler })));
  }
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  let seen = 0;
  await db.from('blobs').open((cursor) => {
    seen += cursor.getValue().body.length;
    if (Number(cursor.getPrimaryKey()) % 2_000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
  });
  assert.equal(seen, 60_000 * 1024);
  // A cursor that kept what it returned would grow by the store's size (~60 MiB).
  assert.ok(peak - before < 24 * 1024 * 1024, `resident memory grew by ${(peak - before) >> 20} MiB`);
});
