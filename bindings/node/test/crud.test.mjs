// crud: put, add, get, remove, clear, count, keys and values, with every key type, and bad
// input refused with a code while nothing changes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { KeyRange } from 'objstore-db';

import { MECHANISMS, PEOPLE, openDb } from './helpers.mjs';

for (const mechanism of MECHANISMS) {
  describe(`crud on ${mechanism}`, () => {
    test('put, get, add and remove one record', async (t) => {
      const db = await openDb(t, mechanism);
      assert.equal(await db.put('people', PEOPLE[0]), 1);
      assert.deepEqual(await db.get('people', 1), PEOPLE[0]);
      assert.equal(await db.get('people', 2), undefined);
      await assert.rejects(db.add('people', PEOPLE[0]), { code: 'CONSTRAINT' });
      assert.equal(await db.remove('people', 1), 1);
      assert.equal(await db.get('people', 1), undefined);
    });

    test('a read of an idle database is settled in the call and sees writes made before it', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      // Settled already: the race sees it before a marker that resolves a few microtasks
      // later (a completion from the worker needs a turn of the event loop).
      /** @type {(n: number) => Promise<string> | string} */
      const ticks = (n) => (n === 0 ? 'pending' : Promise.resolve(n - 1).then(ticks));
      /** @type {(promise: Promise<any>) => Promise<any>} */
      const settled = (promise) => Promise.race([promise, ticks(5)]);
      assert.deepEqual(await settled(db.get('people', 2)), PEOPLE[1]);
      assert.equal(await settled(db.count('people')), 4);
      assert.deepEqual(await settled(db.values('people', [3])), [PEOPLE[2]]);
      const query = db.from('people').order('age');
      /** @type {(p: {id: number}) => number} */
      const id = (p) => p.id;
      assert.deepEqual((await settled(query.list(2))).map(id), [2, 3]);
      assert.deepEqual((await query.list(2)).map(id), [1, 4], 'paging goes on');
      // A put made and not awaited: the get sees it, either waiting behind it on the worker or,
      // when the worker has finished it already (the database is idle again), in the call. Which
      // one is a race with the worker thread, so only what the get sees is asserted.
      const put = db.put('people', { id: 9, name: 'ivy', email: 'ivy@x' });
      const after = db.get('people', 9);
      assert.equal((await after).name, 'ivy');
      assert.equal(await put, 9);
      await assert.rejects(db.get('nowhere', 1), { code: 'NOT_FOUND' });
    });

    test('an array put writes every record in one transaction', async (t) => {
      const db = await openDb(t, mechanism);
      assert.deepEqual(await db.put('people', PEOPLE), [1, 2, 3, 4]);
      // One duplicate email: the whole batch is refused, nothing of it written.
      await assert.rejects(db.put('people', [{ id: 9, email: 'z@x' }, { id: 10, email: 'ada@x' }]), { code: 'CONSTRAINT' });
      assert.equal(await db.count('people'), 4);
    });

    test('keys of every type come back as they went in', async (t) => {
      const db = await openDb(t, mechanism);
      const keys = [7, -1.5, 'text', new Date(86_400_000), Buffer.from([0, 255]), [1, 'a', [2]]];
      for (const key of keys) assert.deepEqual(await db.put('notes', { key: String(key) }, key), key);
      const stored = await db.keys('notes');
      // IndexedDB order: numbers < dates < strings < binary < arrays.
      assert.deepEqual(stored, [-1.5, 7, new Date(86_400_000), 'text', Buffer.from([0, 255]), [1, 'a', [2]]]);
      assert.deepEqual(await db.get('notes', new Uint8Array([0, 255])), { key: String(keys[4]) });
    });

    test('autoIncrement keys count up', async (t) => {
      const db = await openDb(t, mechanism);
      assert.equal(await db.put('notes', { n: 1 }), 1);
      assert.equal(await db.add('notes', { n: 2 }), 2);
      assert.deepEqual(await db.put('notes', [{ n: 3 }, { n: 4 }]), [3, 4]);
    });

    test('count, keys and values by index and range, with limit, offset, reverse and unique', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.equal(await db.count('people'), 4);
      assert.equal(await db.count('people', 'city', KeyRange.only('paris')), 2);
      assert.equal(await db.count('people', KeyRange.bound(2, 3)), 2);
      assert.deepEqual(await db.keys('people', 'city', null, 10, 0, false, true), [2, 1]);
      assert.deepEqual(await db.keys('people', KeyRange.lowerBound(2, true), 2), [3, 4]);
      assert.deepEqual(await db.keys('people', null, 2, 1, true), [3, 2]);
      assert.deepEqual((await db.values('people', 'city', KeyRange.only('oslo'))).map((p) => p.name), ['bob', 'dee']);
      assert.deepEqual((await db.values('people', KeyRange.upperBound(2))).map((p) => p.id), [1, 2]);
      assert.deepEqual(await db.values('people', [4, 99, 1]), [PEOPLE[3], undefined, PEOPLE[0]]);
      assert.deepEqual(await db.keys('people', 'city, age', KeyRange.bound(['paris'], ['paris', []])), [3, 1]);
    });

    test('remove by range and clear', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.equal(await db.remove('people', KeyRange.bound(1, 2)), 2);
      assert.deepEqual(await db.keys('people'), [3, 4]);
      assert.equal(await db.clear('people'), 1, 'one store cleared');
      assert.equal(await db.count('people'), 0);
    });

    test('bad input is a rejection with a code and a message naming what was wrong; nothing changes', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await assert.rejects(db.put('nowhere', { id: 1 }), { code: 'NOT_FOUND', message: /nowhere/ });
      await assert.rejects(db.put('people', { id: 5, score: NaN }), { code: 'INVALID_ARGUMENT', message: /score.*NaN/ });
      await assert.rejects(db.put('people', { id: 5, big: 10n }), { code: 'INVALID_ARGUMENT', message: /BigInt/ });
      /** @type {{id: number, self?: object}} */
      const cyclic = { id: 5 };
      cyclic.self = cyclic;
      await assert.rejects(db.put('people', cyclic), { code: 'INVALID_ARGUMENT', message: /JSON/ });
      await assert.rejects(db.put('people', { name: 'no id' }), { code: 'INVALID_KEY' });
      // @ts-expect-error: not a key, on purpose
      await assert.rejects(db.get('people', { not: 'a key' }), {
        code: 'INVALID_KEY',
        message: /^an object \(\{"not":"a key"\}\) is not a valid key/,
      });
      // @ts-expect-error: not a key, on purpose
      await assert.rejects(db.get('people', true), { code: 'INVALID_KEY', message: /^a boolean \(true\) is not a valid key/ });
      await assert.rejects(db.put('notes', () => 1), { code: 'INVALID_ARGUMENT' });
      assert.equal(await db.count('people'), 4);
      assert.deepEqual(await db.get('people', 1), PEOPLE[0]);
    });

    test('a request is a Promise with done, fail and always', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      /** @type {unknown[]} */
      const seen = [];
      await new Promise((resolve) => {
        db.get('people', 2)
          .done((p) => seen.push(p.name))
          .always(() => seen.push('always'));
        db.get('nowhere', 1)
          .fail((e) => seen.push(e.code))
          .always(resolve);
      });
      assert.deepEqual(seen, ['bob', 'always', 'NOT_FOUND']);
    });
  });
}
