// transaction: run(fn, stores, mode) commits what fn did when it returns and nothing when it
// throws; a readonly transaction refuses writes; requests outside an open one, and
// overlapping run() calls, wait their turn.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MECHANISMS, PEOPLE, openDb } from './helpers.mjs';

for (const mechanism of MECHANISMS) {
  describe(`transaction on ${mechanism}`, () => {
    test('run commits every write of its function and resolves with what it returned', async (t) => {
      const db = await openDb(t, mechanism);
      const result = await db.run(
        async (tx) => {
          await tx.put('people', PEOPLE[0]);
          await tx.put('notes', { about: 1 });
          return tx.count('people');
        },
        ['people', 'notes'],
        'readwrite',
      );
      assert.equal(result, 1);
      assert.equal(await db.count('notes'), 1);
    });

    test('a function that throws rolls back everything it wrote', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await assert.rejects(
        db.run(
          async (tx) => {
            await tx.remove('people', 1);
            await tx.put('notes', { n: 1 });
            throw new Error('changed my mind');
          },
          ['people', 'notes'],
          'readwrite',
        ),
        /changed my mind/,
      );
      assert.equal(await db.count('people'), 4);
      assert.equal(await db.count('notes'), 0);
    });

    test('a failed write inside rejects; the function decides whether to go on', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await db.run(
        async (tx) => {
          await assert.rejects(tx.add('people', PEOPLE[0]), { code: 'CONSTRAINT' });
          await tx.put('people', { id: 5, email: 'e@x' });
        },
        'people',
        'readwrite',
      );
      assert.equal(await db.count('people'), 5);
    });

    test('readonly refuses writes; queries and SQL run inside', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await db.run(
        async (tx) => {
          await assert.rejects(tx.put('people', { id: 9 }), { code: 'READ_ONLY' });
          assert.equal((await tx.from('people').where('city', '=', 'oslo').list(10)).length, 2);
          assert.deepEqual(await tx.executeSql('SELECT name FROM people WHERE id = ?', [1]), ['ada']);
        },
        ['people'],
      );
    });

    test('a request outside an open transaction waits for it, and two run() calls both complete', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      /** @type {string[]} */
      const order = [];
      /** @type {Promise<unknown> | undefined} */
      let outside;
      const first = db.run(
        async (tx) => {
          order.push('first begun');
          outside = db.get('people', 99).then((found) => order.push(`outside saw ${found && found.name}`));
          await new Promise((resolve) => setTimeout(resolve, 200));
          await tx.put('people', { id: 99, name: 'zed', email: 'z@x' });
          order.push('first done');
        },
        ['people'],
        'readwrite',
      );
      const second = db.run(
        async (tx) => {
          order.push('second begun');
          await tx.put('people', { id: 98, name: 'yan', email: 'y@x' });
          return tx.count('people');
        },
        ['people'],
        'readwrite',
      );
      await first;
      assert.equal(await second, PEOPLE.length + 2);
      await outside;
      // First come, first served: the request made inside the first transaction's body came
      // after the second run() asked to begin.
      assert.deepEqual(order, ['first begun', 'first done', 'second begun', 'outside saw zed']);
    });

    test('a transaction over an unknown store is refused', async (t) => {
      const db = await openDb(t, mechanism);
      await assert.rejects(db.run(async () => {}, ['nowhere'], 'readwrite'), { code: 'NOT_FOUND', message: /nowhere/ });
      // @ts-expect-error: an unknown mode, on purpose
      await assert.rejects(db.run(async () => {}, ['people'], 'sideways'), { code: 'INVALID_ARGUMENT', message: /sideways/ });
    });
  });
}
