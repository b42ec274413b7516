// Shared by the suites: a fresh database per test on each mechanism, with the people/notes
// schema of the C and Python suites, and the S3 servers tests/run-all starts.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Storage } from 'objstore-db';

/** @typedef {import('objstore-db').Schema} Schema */
/** @typedef {import('objstore-db').SyncOptions} SyncOptions */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** @type {('sqlite' | 'memory')[]} */
export const MECHANISMS = ['sqlite', 'memory'];

/** @type {Schema} */
export const SCHEMA = {
  stores: [
    {
      name: 'people',
      keyPath: 'id',
      indexes: [{ keyPath: 'city' }, { keyPath: 'email', unique: true }, { keyPath: ['city', 'age'] }],
    },
    { name: 'notes', autoIncrement: true },
  ],
};

export const PEOPLE = [
  { id: 1, name: 'ada', city: 'paris', age: 36, email: 'ada@x' },
  { id: 2, name: 'bob', city: 'oslo', age: 25, email: 'bob@x' },
  { id: 3, name: 'cy', city: 'paris', age: 25, email: 'cy@x' },
  { id: 4, name: 'dee', city: 'oslo', age: 41, email: 'dee@x' },
];

/** @type {string[]} */
const tempDirs = [];
// Each test file runs in its own process: its directories go when it exits, databases still
// open among them (a leak here once left 6 GB in /tmp over a day of runs).
process.on('exit', () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

export function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'objstore-node-'));
  tempDirs.push(dir);
  return dir;
}

/**
 * A database on `mechanism`, opened and (with `people`) filled; closed by the test context.
 * @param {import('node:test').TestContext} t
 * @param {'sqlite' | 'memory'} mechanism
 * @param {{people?: boolean, schema?: Schema}} [options]
 */
export async function openDb(t, mechanism, { people = false, schema = SCHEMA } = {}) {
  const db = new Storage(path.join(tempDir(), 't.sqlite3'), schema, { mechanism });
  t.after(() => (db.closed ? undefined : db.close()));
  await db.ready;
  if (people) await db.put('people', PEOPLE);
  return db;
}

/**
 * Starts (or reuses) an S3 server with the project's own script; its settings.
 * @param {string} name
 * @returns {Record<string, string>}
 */
export function server(name) {
  execFileSync(path.join(ROOT, 'tests/servers', name), { stdio: 'ignore' });
  /** @type {Record<string, string>} */
  const env = {};
  for (const line of fs.readFileSync(path.join(ROOT, `target/servers/${name}.env`), 'utf8').split('\n')) {
    const m = /^(?:export )?([A-Z_]+)=['"]?(.*?)['"]?$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

/**
 * Sync options for a fresh prefix on `name` ('moto' or 'garage').
 * @param {'moto' | 'garage'} name
 * @param {string} test
 * @returns {SyncOptions['Options']}
 */
export function syncOptions(name, test) {
  const env = server(name);
  const up = name.toUpperCase();
  return {
    bucket: env[name === 'moto' ? 'MOTO_SIGNED_BUCKET' : 'GARAGE_BUCKET'],
    prefix: `node-${test}-${process.pid}-${Date.now()}-${Math.random().toString(16).slice(2, 8)}/`,
    endpoint: env[`${up}_ENDPOINT`],
    region: env[`${up}_REGION`],
    accessKeyId: env[`${up}_ACCESS_KEY_ID`],
    secretAccessKey: env[`${up}_SECRET_ACCESS_KEY`],
  };
}
