// ydn: the package answers in YDN-DB's forms, as YDN-DB documents them (its API pages and its
// qunit tests): count, keys and values overloads with the default limit of 100, from() with
// bounds, select giving values, unique(false), patch forms, array put/add with keys, clear and
// remove results, ydn.db.Key across stores, KeyRange.starts with an array prefix, run(fn, null,
// mode) and abort(), executeSql's answers, event objects and the storage's name and type.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { KeyRange, Storage, ydn } from 'objstore-db';

import { MECHANISMS, PEOPLE, SCHEMA, openDb, tempDir } from './helpers.mjs';

/** @type {import('objstore-db').Schema} */
const WITH_POSTS = {
  stores: [...SCHEMA.stores, { name: 'posts', keyPath: 'id', indexes: [{ keyPath: 'tags', multiEntry: true }] }],
};

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

for (const mechanism of MECHANISMS) {
  describe(`ydn on ${mechanism}`, () => {
    test('count, keys and values take YDN-DB forms; keys and values stop at 100 by default', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await db.put('notes', Array.from({ length: 150 }, (_, i) => ({ n: i })));
      assert.equal(await db.count('people', KeyRange.bound(2, 3)), 2);
      assert.equal(await db.count('people', 'city', KeyRange.only('paris')), 2);
      assert.equal(await db.count('people', 'city', null, true), 2, 'unique: one per city');
      assert.deepEqual(await db.count(['people', 'notes']), [4, 150]);
      assert.deepEqual(await db.keys('people', null, 2), [1, 2]);
      assert.equal(await db.count('people', null, KeyRange.bound(2, 3)), 2, 'a null index before a range');
      assert.deepEqual((await db.values('people', null, { lower: 2 }, 1)).map((p) => p.id), [2]);
      assert.deepEqual(await db.keys('people', KeyRange.lowerBound(1, true), 2, 1, true), [3, 2]);
      assert.deepEqual(await db.keys('people', { lower: 2, upper: 3 }), [2, 3], 'a plain range object');
      assert.deepEqual(await db.keys('people', 'city', KeyRange.only('oslo')), [2, 4], 'primary keys by index');
      assert.equal((await db.keys('notes')).length, 100);
      assert.equal((await db.values('notes')).length, 100);
      assert.equal((await db.values('notes', null, 500)).length, 150);
      assert.deepEqual((await db.values('people', 'city', KeyRange.only('oslo'), 1)).map((p) => p.name), ['bob']);
      await assert.rejects(db.keys('people', null, -1), { code: 'INVALID_ARGUMENT', message: /limit/ });
    });

    test('from(store, op, value, op2, value2), where with two bounds, list() of 100', async (t) => {
      const db = await openDb(t, mechanism);
      await db.put('people', Array.from({ length: 130 }, (_, i) => ({ id: i + 1, email: `${i}@x`, age: i % 50 })));
      assert.deepEqual((await db.from('people', '>', 1, '<=', 4).list()).map((p) => p.id), [2, 3, 4]);
      assert.deepEqual((await db.from('people', '>=', 128).list()).map((p) => p.id), [128, 129, 130]);
      assert.equal(await db.from('people').where('age', '>', 10, '<=', 12).count(), 6);
      const all = db.from('people');
      assert.equal((await all.list()).length, 100, "YDN-DB's default limit");
      assert.equal((await all.list()).length, 30, 'the next call continues');
      const early = new Storage(path.join(tempDir(), 'early.sqlite3'), SCHEMA, { mechanism });
      t.after(() => early.close());
      assert.deepEqual(await early.from('people', '<', 5).list(), [], 'bounds before the open finished wait for it');
      await assert.rejects(db.from('notes', '>', 1).list(), { code: 'INVALID_ARGUMENT', message: /keyPath/ });
    });

    test('select(field) gives values, of a multiEntry index its elements; unique(false) undoes unique()', async (t) => {
      const db = await openDb(t, mechanism, { people: true, schema: WITH_POSTS });
      await db.put('posts', [{ id: 1, tags: ['b', 'a'] }, { id: 2, tags: ['a'] }, { id: 3, tags: ['c'] }]);
      assert.deepEqual(await db.from('people').order('city').unique().select('city').list(), ['oslo', 'paris']);
      assert.deepEqual(await db.from('people').order('city').unique(false).select('name').list(), ['bob', 'dee', 'ada', 'cy']);
      assert.deepEqual(await db.from('people').where('city', '=', 'oslo').select(['id', 'name']).list(), [
        { id: 2, name: 'bob' },
        { id: 4, name: 'dee' },
      ]);
      assert.deepEqual(await db.from('posts').where('tags', '=', 'a').select('tags').list(), ['a', 'a']);
      assert.deepEqual(await db.from('posts').order('tags').unique(true).select('tags').list(), ['a', 'b', 'c']);
      assert.deepEqual((await db.from('posts').where('tags', '=', 'a').select('*').list())[0], { id: 1, tags: ['b', 'a'] });
      assert.throws(() => db.from('people').unique(/** @type {any} */ ('yes')), { code: 'INVALID_ARGUMENT' });
    });

    test('patch(field, value), patch([fields], [values]) and patch(object)', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.equal(await db.from('people').where('city', '=', 'oslo').patch('country', 'no'), 2);
      assert.equal(await db.from('people').where('city', '=', 'paris').patch(['country', 'meta.checked'], ['fr', true]), 2);
      assert.equal(await db.from('people', '=', 1).patch({ age: 37 }), 1);
      assert.deepEqual(await db.get('people', 1), { ...PEOPLE[0], age: 37, country: 'fr', meta: { checked: true } });
      assert.equal((await db.get('people', 2)).country, 'no');
      await assert.rejects(db.from('people').patch(['a', 'b'], [1]), { code: 'INVALID_ARGUMENT', message: /one value per field/ });
    });

    test('put and add of arrays, with keys; clear and remove say how many', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.deepEqual(await db.put('notes', ['x', 'y'], ['k1', 'k2']), ['k1', 'k2']);
      assert.equal(await db.get('notes', 'k2'), 'y');
      assert.deepEqual(await db.add('people', [{ id: 5, email: 'e@x' }, { id: 6, email: 'f@x' }]), [5, 6]);
      await assert.rejects(db.add('people', [{ id: 7, email: 'g@x' }, { id: 1, email: 'h@x' }]), {
        code: 'CONSTRAINT',
        message: /record \d+ of the batch of 2/,
      });
      assert.equal(await db.get('people', 7), undefined, 'nothing of a refused batch is written');
      assert.equal(await db.put('notes', ['z'], 'k3'), 'k3', 'an array under one key is one record');
      assert.deepEqual(await db.get('notes', 'k3'), ['z']);
      await assert.rejects(db.put('notes', ['a', 'b'], ['k4']), { code: 'INVALID_ARGUMENT', message: /2 records was given 1 keys/ });
      assert.equal(await db.remove('people', 'city', KeyRange.only('oslo')), 2);
      assert.deepEqual(await db.keys('people'), [1, 3, 5, 6]);
      assert.equal(await db.clear('people', KeyRange.bound(5, 6)), 2);
      assert.equal(await db.clear('notes'), 1);
      assert.equal(await db.clear(['notes', 'people']), 2);
      await db.put('notes', 'again');
      assert.equal(await db.run((tx) => tx.clear(), ['notes'], 'readwrite'), 1, 'in a transaction: every store of its scope');
      await db.put('notes', 'again');
      assert.equal(await db.clear(), 2, 'every store');
      assert.deepEqual(await db.count(['people', 'notes']), [0, 0]);
    });

    test('ydn.db.Key reads several stores at once; KeyRange.starts takes an array prefix', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      await db.put('notes', 'hello', 'n1');
      const keys = [new ydn.db.Key('people', 2), new ydn.db.Key({ store: 'notes', id: 'n1' }), new ydn.db.Key('people', 99)];
      assert.deepEqual(await db.values(keys), [PEOPLE[1], 'hello', undefined]);
      assert.equal(keys[1].getStoreName(), 'notes');
      assert.equal(keys[1].getId(), 'n1');
      assert.equal(keys[1].getParent(), null);
      assert.deepEqual(JSON.parse(JSON.stringify(keys[0])), { store: 'people', id: 2 });
      assert.throws(() => new ydn.db.Key('', 1), { code: 'INVALID_ARGUMENT' });
      await assert.rejects(db.values(/** @type {any} */ ([2])), { code: 'INVALID_ARGUMENT', message: /Key/ });
      assert.deepEqual(await db.keys('people', 'city, age', KeyRange.starts(['paris'])), [3, 1]);
    });

    test('run(fn, null, mode) covers every store; abort() rolls it back', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      const counted = await db.run((tx) => tx.count(['people', 'notes']), null, 'readonly');
      assert.deepEqual(counted, [4, 0]);
      const aborted = db.run(
        async (tx) => {
          await tx.put('notes', 'never');
          await tx.remove('people', 1);
          aborted.abort();
        },
        null,
        'readwrite',
      );
      await assert.rejects(aborted, { code: 'TRANSACTION_INACTIVE', message: /abort\(\)/ });
      assert.deepEqual(await db.count(['people', 'notes']), [4, 0], 'rolled back');
      await assert.rejects(
        db.run(async (tx) => {
          tx.abort();
          await tx.get('people', 1);
        }, 'people'),
        { code: 'TRANSACTION_INACTIVE' },
      );
      assert.throws(() => aborted.abort(), { code: 'TRANSACTION_INACTIVE', message: /already ended/ });
    });

    test('executeSql answers as YDN-DB: one column as values, COUNT(*) as a number', async (t) => {
      const db = await openDb(t, mechanism, { people: true });
      assert.deepEqual(await db.executeSql('SELECT name FROM people WHERE city = ? ORDER BY name', ['paris']), ['ada', 'cy']);
      assert.equal(await db.executeSql('SELECT COUNT(*) FROM people'), 4);
      assert.equal(await db.executeSql('SELECT MAX(age) FROM people WHERE city = ?', ['oslo']), 41);
      assert.deepEqual(await db.executeSql('SELECT name, age FROM people WHERE id = ?', [2]), [{ name: 'bob', age: 25 }]);
      assert.equal((await db.executeSql('SELECT * FROM people')).length, 4);
      assert.equal(await db.executeSql('DELETE FROM people WHERE age < ?', [30]), 2);
    });

    test('events are objects with getKey, getValue and getStoreName; ready has getVersion and getOldVersion', async (t) => {
      const db = new Storage(path.join(tempDir(), 'events.sqlite3'), SCHEMA, { mechanism });
      t.after(() => db.close());
      /** @type {unknown[]} */
      const seen = [];
      db.on('ready', (e) => seen.push(['ready', e.getVersion(), e.getOldVersion(), e.name]));
      db.on(['created', 'deleted'], (e) => seen.push([e.type, e.getStoreName(), e.getKey(), e.getValue()]));
      await db.ready;
      await db.put('people', PEOPLE[0]);
      await db.remove('people', 1);
      await settle();
      assert.deepEqual(seen, [
        ['ready', 1, NaN, 'ReadyEvent'],
        ['created', 'people', 1, PEOPLE[0]],
        ['deleted', 'people', 1, PEOPLE[0]],
      ]);
      assert.equal(db.getName(), path.join(path.dirname(db.name), 'events.sqlite3'));
      assert.equal(db.getType(), mechanism);
    });
  });
}
