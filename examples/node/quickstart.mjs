// The Node quickstart: test results in a local database, read back the way the results app
// reads them (newest run per platform/runtime pair), a query in pages, a streaming cursor, a
// transaction and SQL — YDN-DB's API, as Promises.
//
//   npm install ./bindings/node
//   node examples/node/quickstart.mjs [path/to/file.sqlite3]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Storage } from 'objstore-db';

/** @type {import('objstore-db').Schema} */
const schema = {
  stores: [{ name: 'results', keyPath: 'id', indexes: [{ keyPath: 'platform' }, { keyPath: ['platform', 'browser'] }] }],
};

const scratch = process.argv[2] ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'objstore-quickstart-'));
const db = new Storage(process.argv[2] || path.join(/** @type {string} */ (scratch), 'quickstart.sqlite3'), schema);
db.onReady((error) => console.log(error ? `could not open: ${error.message}` : 'ready'));

const pairs = [['linux-x86_64', 'node'], ['linux-x86_64', 'c'], ['macos-arm64', 'node']];
await db.put(
  'results',
  pairs.flatMap(([platform, browser]) =>
    [0, 1, 2].map((run) => ({ id: `${platform}/${browser}/${9999 - run}`, platform, browser, crud: run === 1 ? 'fail' : 'pass' })),
  ),
);

// One key per platform/runtime pair: the newest run (reverse timestamps sort first).
const newest = await db.keys('results', 'platform, browser', null, 50, 0, false, true);
console.log('newest run per pair:', newest);
console.log(await db.values('results', newest));

const linux = db.from('results').where('platform', '=', 'linux-x86_64').order('id');
console.log('first linux page:', (await linux.list(2)).map((r) => r.id));
console.log('next linux page:', (await linux.list(2)).map((r) => r.id));

// A failed run goes; other requests may run between two records.
await db.from('results').where('crud', '=', 'fail').open((cursor) => cursor.clear(), 'readwrite');

await db.run((tx) => tx.put('results', { id: 'linux-x86_64/node/0000', platform: 'linux-x86_64', browser: 'node', crud: 'pass' }), ['results'], 'readwrite');
console.log(await db.executeSql('SELECT COUNT(*) AS runs FROM results WHERE browser = ?', ['node']));

db.get('results', 'no/such/run').done((run) => console.log('a missing run is', run));
await db.close();
if (scratch) fs.rmSync(scratch, { recursive: true });
