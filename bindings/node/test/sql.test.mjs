// sql: executeSql with bound parameters over the subset; writes report how many changed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MECHANISMS, openDb } from './helpers.mjs';

for (const mechanism of MECHANISMS) {
  describe(`sql on ${mechanism}`, () => {
    test('SELECT with parameters, ORDER BY and LIMIT', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      const rows = await db.executeSql('SELECT name, age FROM people WHERE city = ? ORDER BY age LIMIT 5', ['paris']);
      assert.deepEqual(rows, [
        { name: 'cy', age: 25 },
        { name: 'ada', age: 36 },
      ]);
      assert.equal(await db.executeSql('SELECT COUNT(*) FROM people WHERE age > ?', [30]), 2);
    });

    test('INSERT, UPDATE and DELETE report how many changed', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.equal(await db.executeSql('UPDATE people SET city = ? WHERE city = ?', ['bergen', 'oslo']), 2);
      assert.equal((await db.get('people', 2)).city, 'bergen');
      assert.equal(await db.executeSql('DELETE FROM people WHERE age < ?', [30]), 2);
      assert.equal(await db.count('people'), 2);
    });

    test('a statement outside the subset or with a wrong parameter count is refused, naming why', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await assert.rejects(db.executeSql('DROP TABLE people'), { code: 'INVALID_ARGUMENT' });
      await assert.rejects(db.executeSql('SELECT * FROM people WHERE id = ?', []), { code: 'INVALID_ARGUMENT', message: /parameter/ });
      await assert.rejects(db.executeSql('SELECT * FROM nowhere'), { code: 'NOT_FOUND', message: /nowhere/ });
      assert.equal(await db.count('people'), 4);
    });
  });
}
