'use strict';
// objstore-db for Node: YDN-DB's API as Promises over the native library.
//
//   const { Storage, KeyRange } = require('objstore-db');
//   const db = new Storage('results.sqlite3', schema);
//   await db.put('results', { id: 'a', platform: 'linux' });
//   const rows = await db.from('results').where('platform', '=', 'linux').list(20);
//
// Every request returns a Promise that also has YDN-DB's done(fn), fail(fn) and always(fn).
// Records are plain objects; keys are numbers, strings, Dates, Buffers/Uint8Arrays and arrays
// of them, in IndexedDB order. The work runs on the library's threads; only pending requests
// keep the process alive.

const native = require('./native');

const EVENT_KINDS = ['created', 'updated', 'deleted', 'ready', 'error', 'fetched', 'conflict', 'offline', 'flushed'];

// ----- errors -----------------------------------------------------------------------------------

/** An Error with a stable `code` (NOT_FOUND, CONSTRAINT, INVALID_ARGUMENT, INVALID_KEY, ...). */
function codedError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

/** Native calls that throw (a query that cannot be built) throw "CODE: message". */
function fromNative(error) {
  const match = /^([A-Z_]+): ([\s\S]*)$/.exec(error && error.message);
  return match ? codedError(match[1], match[2]) : error;
}

// ----- requests: Promises with YDN-DB's deferred methods ---------------------------------------

// Shared by every request (no closures per request): `this` is the request.
function done(fn) {
  this.then(fn, ignore);
  return this;
}
function fail(fn) {
  this.then(null, fn);
  return this;
}
function always(fn) {
  this.then(fn, fn);
  return this;
}
function ignore() {}

function decorate(promise) {
  promise.done = done;
  promise.fail = fail;
  promise.always = always;
  return promise;
}

/** Runs `make` (argument conversion and the native call); anything it throws becomes a
 * rejection, so bad input is a rejected request, never a throw. */
function request(make) {
  let promise;
  try {
    promise = make();
  } catch (error) {
    promise = Promise.reject(fromNative(error));
  }
  return decorate(promise);
}

/** As `request`, with `convert` applied to the result. */
function requestThen(make, convert) {
  let promise;
  try {
    promise = make().then(convert);
  } catch (error) {
    promise = Promise.reject(fromNative(error));
  }
  return decorate(promise);
}

// ----- the waker: one per JS thread ---------------------------------------------------------------

const listeners = new Map(); // subscription number -> function(event)
let nextSubscription = 1;

function dispatch(subscription, event) {
  const listener = listeners.get(subscription);
  if (listener) listener(event); // listeners catch their own failures (see Storage#_listen)
}

const waker = new native.Waker(() => waker.settle(), dispatch);

// ----- keys and values --------------------------------------------------------------------------

function keyJson(key) {
  switch (typeof key) {
    case 'number':
      if (!Number.isFinite(key)) throw codedError('INVALID_KEY', `${key} is not a valid key; a number key must be finite`);
      return key;
    case 'string':
      return key;
    case 'object':
      if (key instanceof Date) {
        const time = key.getTime();
        if (Number.isNaN(time)) throw codedError('INVALID_KEY', 'an invalid Date is not a valid key');
        return { $date: time };
      }
      if (key instanceof Uint8Array) return { $binary: Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex') };
      if (key instanceof ArrayBuffer) return { $binary: Buffer.from(key).toString('hex') };
      if (Array.isArray(key)) return key.map(keyJson);
      break;
    default:
  }
  const shown = key === null ? 'null' : typeof key === 'object' ? (key.constructor ? key.constructor.name : 'object') : typeof key;
  throw codedError(
    'INVALID_KEY',
    `a ${shown} is not a valid key (${String(key)}); keys are numbers, strings, Dates, Buffers/Uint8Arrays or arrays of them`,
  );
}

function keyJs(value) {
  if (Array.isArray(value)) return value.map(keyJs);
  if (value !== null && typeof value === 'object') {
    if ('$date' in value) return new Date(value.$date);
    if ('$binary' in value) return Buffer.from(value.$binary, 'hex');
  }
  return value;
}

const keysJs = (keys) => keys.map(keyJs);

function unstorable(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw codedError('INVALID_ARGUMENT', `field ${JSON.stringify(key)} is ${value}, which JSON cannot hold`);
  }
  if (typeof value === 'bigint') {
    throw codedError('INVALID_ARGUMENT', `field ${JSON.stringify(key)} is a BigInt, which JSON cannot hold; store it as a string`);
  }
  return value;
}

/** A value as JSON text, refusing what JSON would silently change or cannot hold. */
function valueJson(what, value) {
  let text;
  try {
    text = JSON.stringify(value, unstorable);
  } catch (error) {
    if (error.code) throw codedError(error.code, `${what}: ${error.message}`);
    throw codedError('INVALID_ARGUMENT', `${what} cannot be stored as JSON: ${error.message}`);
  }
  if (text === undefined) throw codedError('INVALID_ARGUMENT', `${what} cannot be stored as JSON (it is ${typeof value})`);
  return text;
}

const keyText = (key) => JSON.stringify(keyJson(key));

// ----- key ranges -------------------------------------------------------------------------------

/** A range of keys, as YDN-DB (and IndexedDB) name them. */
class KeyRange {
  constructor(spec) {
    this.spec = spec;
  }

  static only(key) {
    return new KeyRange({ only: keyJson(key) });
  }

  static lowerBound(key, open = false) {
    return new KeyRange({ lower: keyJson(key), lowerOpen: open });
  }

  static upperBound(key, open = false) {
    return new KeyRange({ upper: keyJson(key), upperOpen: open });
  }

  static bound(lower, upper, lowerOpen = false, upperOpen = false) {
    return new KeyRange({ lower: keyJson(lower), upper: keyJson(upper), lowerOpen, upperOpen });
  }

  /** Every string key beginning with `prefix`. */
  static starts(prefix) {
    if (typeof prefix !== 'string') throw codedError('INVALID_KEY', 'KeyRange.starts takes a string prefix');
    return new KeyRange({ starts: prefix });
  }
}

function rangeSpec(keyOrRange) {
  if (keyOrRange instanceof KeyRange) return keyOrRange.spec;
  return { only: keyJson(keyOrRange) };
}

function scanText(index, range, limit, offset, reverse, unique) {
  const scan = { offset: offset || 0, reverse: !!reverse, unique: !!unique };
  if (index != null) scan.index = index;
  if (range != null) scan.range = rangeSpec(range);
  if (limit != null) scan.limit = limit;
  return JSON.stringify(scan);
}

// ----- queries and cursors ----------------------------------------------------------------------

/** One record under a cursor (YDN-DB's cursor): getValue, getKey, getPrimaryKey, update, clear. */
class Cursor {
  constructor(item, native, pending) {
    this._item = item;
    this._native = native;
    this._pending = pending;
  }

  getValue() {
    return this._item.value;
  }

  getKey() {
    return keyJs(this._item.key);
  }

  getPrimaryKey() {
    return keyJs(this._item.primaryKey);
  }

  /** Replaces the record (its key must stay the same). */
  update(value) {
    const done = request(() => this._native.update(waker, JSON.stringify(this._item.primaryKey), valueJson('value', value)));
    this._pending.push(done);
    return done;
  }

  /** Removes the record. */
  clear() {
    const done = request(() => this._native.delete(waker, JSON.stringify(this._item.primaryKey)));
    this._pending.push(done);
    return done;
  }
}

const OPS = { '=': '==', '==': '==', '>': '>', '>=': '>=', '<': '<', '<=': '<=', '!=': '!=', starts: 'starts', '^': 'starts' };

/** A query over one store, built step by step (YDN-DB's `from(store).where(...)`). */
class Query {
  constructor(storage, store, tx) {
    this._storage = storage;
    this._tx = tx;
    this._spec = { from: store };
    this._native = null;
  }

  _built() {
    if (this._native === null) {
      try {
        this._native = this._storage._db.query(JSON.stringify(this._spec));
      } catch (error) {
        throw fromNative(error);
      }
    }
    return this._native;
  }

  _with(field, value) {
    if (this._native !== null) throw codedError('INVALID_ARGUMENT', 'a query cannot change after it has run; build a new one');
    this._spec[field] = value;
    return this;
  }

  /** `op`: '=', '>', '>=', '<', '<=', '!=' or 'starts'. */
  where(field, op, value) {
    const known = OPS[op] || op;
    return this._with('where', (this._spec.where || []).concat([[field, known, keyJsonOrValue(value)]]));
  }

  and(field, op, value) {
    return this.where(field, op, value);
  }

  order(...fields) {
    return this._with('order', fields);
  }

  reverse() {
    return this._with('reverse', true);
  }

  unique() {
    return this._with('unique', true);
  }

  select(...fields) {
    return this._with('select', fields);
  }

  /** The next `n` records; each call continues where the last ended. */
  list(n) {
    return request(() => this._built().list(waker, n, false, this._tx));
  }

  count() {
    return request(() => this._built().count(waker, false, this._tx));
  }

  explain() {
    return request(() => this._built().explain(waker, this._tx));
  }

  /** Merges `patch` (a JSON merge patch) into every match; resolves with how many changed. */
  patch(patch) {
    return request(() => this._built().patch(waker, valueJson('patch', patch), this._tx));
  }

  /** Removes every match; resolves with how many went. */
  delete() {
    return request(() => this._built().delete(waker, this._tx));
  }

  /** Streams every match to `callback(cursor)`, `batch` records per request with flat memory.
   * The callback may update or clear the record, may return a promise (awaited before the next
   * record) and may return false to stop. What it throws rejects the promise and stops the
   * stream; changes it made before stay. Resolves with how many records it saw. */
  open(callback, mode = 'readonly', batch = 100) {
    return request(async () => {
      const cursor = this._built().cursor(mode, this._tx);
      let seen = 0;
      for (;;) {
        const items = await cursor.next(waker, batch, false);
        if (items.length === 0) return seen;
        for (const item of items) {
          const pending = [];
          seen += 1;
          const verdict = await callback(new Cursor(item, cursor, pending));
          await Promise.all(pending);
          if (verdict === false) return seen;
        }
      }
    });
  }

  /** `for await (const cursor of query)`: the same stream as an async iterator. */
  async *[Symbol.asyncIterator]() {
    const cursor = this._built().cursor('readwrite', this._tx);
    for (;;) {
      const items = await cursor.next(waker, 100, false);
      if (items.length === 0) return;
      for (const item of items) {
        const pending = [];
        yield new Cursor(item, cursor, pending);
        await Promise.all(pending);
      }
    }
  }
}

function keyJsonOrValue(value) {
  if (value instanceof Date || value instanceof Uint8Array || Array.isArray(value)) return keyJson(value);
  return value;
}

// ----- the record operations, outside a transaction or inside one --------------------------------

class Operations {
  /** Writes one record (replacing one under the same key) or an array of records; resolves
   * with the key, or the keys. */
  put(store, value, key) {
    if (Array.isArray(value) && key === undefined) {
      return requestThen(() => this._db.putMany(waker, store, valueJson('values', value), this._tx), keysJs);
    }
    return requestThen(
      () => this._db.put(waker, store, valueJson('value', value), key === undefined ? null : keyText(key), this._tx),
      keyJs,
    );
  }

  /** Writes a new record; an existing key rejects with CONSTRAINT. */
  add(store, value, key) {
    return requestThen(
      () => this._db.add(waker, store, valueJson('value', value), key === undefined ? null : keyText(key), this._tx),
      keyJs,
    );
  }

  /** The record under `key`, or undefined. */
  get(store, key) {
    return request(() => this._db.get(waker, store, keyText(key), false, this._tx));
  }

  /** Removes the record under a key, or the records in a KeyRange; resolves with how many. */
  remove(store, keyOrRange) {
    return request(() => this._db.remove(waker, store, JSON.stringify(rangeSpec(keyOrRange)), this._tx));
  }

  clear(store) {
    return request(() => this._db.clear(waker, store, this._tx));
  }

  /** count(store), count(store, range) or count(store, index, range). */
  count(store, index, range) {
    if (index instanceof KeyRange) [index, range] = [undefined, index];
    return request(() => this._db.scan(waker, store, 'count', scanText(index, range), false, this._tx));
  }

  /** Primary keys: keys(store, index?, range?, limit?, offset?, reverse?, unique?), or
   * keys(store, range, limit?, offset?, reverse?). */
  keys(store, index, range, limit, offset, reverse, unique) {
    if (index instanceof KeyRange) [index, range, limit, offset, reverse, unique] = [undefined, index, range, limit, offset, reverse];
    return requestThen(() => this._db.scan(waker, store, 'keys', scanText(index, range, limit, offset, reverse, unique), false, this._tx), keysJs);
  }

  /** Records: values(store, [keys]) (undefined where there is none), values(store, range?,
   * limit?, offset?, reverse?), or values(store, index, range?, limit?, offset?, reverse?, unique?). */
  values(store, index, range, limit, offset, reverse, unique) {
    if (Array.isArray(index)) {
      const keys = index;
      return requestThen(
        () => this._db.valuesOf(waker, store, JSON.stringify(keys.map(keyJson)), false, this._tx),
        (found) => found.map(nullToUndefined),
      );
    }
    if (index instanceof KeyRange || index === null || index === undefined) {
      if (typeof range !== 'object' || range === null) [index, range, limit, offset, reverse, unique] = [undefined, index, range, limit, offset, reverse];
    }
    return request(() => this._db.scan(waker, store, 'values', scanText(index, range, limit, offset, reverse, unique), false, this._tx));
  }

  from(store) {
    return new Query(this._storage, store, this._tx);
  }

  /** One SQL statement of the subset, with `?` parameters: resolves with the rows of a SELECT,
   * or with how many records another statement changed. */
  executeSql(sql, params) {
    return requestThen(
      () => this._db.sql(waker, sql, params === undefined ? null : valueJson('SQL parameters', params.map(keyJsonOrValue)), this._tx),
      (result) => ('rows' in result ? result.rows : result.changed),
    );
  }
}

function nullToUndefined(value) {
  return value === null ? undefined : value;
}

/** The operations of one transaction: what `run` hands its function. */
class Transaction extends Operations {
  constructor(storage, tx) {
    super();
    this._storage = storage;
    this._db = storage._db;
    this._tx = tx;
  }
}

// ----- the storage --------------------------------------------------------------------------------

/** A database (YDN-DB's `ydn.db.Storage`): `new Storage(name, schema, options)`.
 * options: `mechanism` ('sqlite', the default, a file at `name`; or 'memory'), `sync`
 * ({store: Sync block}, merged into the schema), `durability` ('normal', the default: a commit
 * survives the process crashing; 'full': an fsync per commit, it survives a machine crash too),
 * `idleTransactionTimeoutMs`, `queueCapacity`,
 * `syncThreads`. */
class Storage extends Operations {
  constructor(name, schema, options = {}) {
    super();
    this.name = name;
    this._storage = this;
    this._tx = null;
    this._listeners = new Map(); // kind -> [{listener, subscription}]
    const { mechanism = 'sqlite', sync, durability, idleTransactionTimeoutMs, queueCapacity, syncThreads } = options;
    if (sync) {
      schema = typeof schema === 'string' ? JSON.parse(schema) : schema || { stores: [] };
      for (const store of schema.stores || []) if (store.name in sync) store.Sync = sync[store.name];
    }
    const openOptions = { mechanism };
    if (durability !== undefined) openOptions.durability = durability;
    if (idleTransactionTimeoutMs !== undefined) openOptions.idleTransactionTimeoutMs = idleTransactionTimeoutMs;
    if (queueCapacity !== undefined) openOptions.queueCapacity = queueCapacity;
    if (syncThreads !== undefined) openOptions.syncThreads = syncThreads;
    const schemaText = schema == null ? null : typeof schema === 'string' ? schema : valueJson('schema', schema);
    let opened;
    try {
      opened = native.open(waker, name, schemaText, JSON.stringify(openOptions));
    } catch (error) {
      throw fromNative(error);
    }
    this._db = opened[0];
    /** Resolves with `{version, previousVersion, stores, warnings?}` once open (previousVersion:
     * the version before this open, null for a new database; warnings also go to
     * process.emitWarning); rejects with why it could not open. */
    this.ready = decorate(opened[1]);
    this.ready.then(
      (opened) => {
        for (const text of opened?.warnings ?? []) process.emitWarning(text, 'ObjstoreDbSyncWarning');
        this._emit('ready', { kind: 'ready', value: { version: opened?.version, previousVersion: opened?.previousVersion ?? null } });
      },
      (error) => this._emit('error', { kind: 'error', message: error.message, error }),
    );
  }

  /** YDN-DB's onReady: `cb(error)` once open (error undefined when it opened). */
  onReady(callback) {
    this.ready.then(() => callback(), (error) => callback(error));
  }

  /** Runs `fn(tx)` in one transaction over `storeNames`: committed when it returns (or its
   * promise resolves), aborted when it throws; resolves with what it returned. While it is
   * open, requests outside it reject with BUSY. */
  run(fn, storeNames, mode = 'readonly') {
    return request(async () => {
      const stores = JSON.stringify(typeof storeNames === 'string' ? [storeNames] : storeNames);
      const id = await this._db.begin(waker, stores, mode);
      let result;
      try {
        result = await fn(new Transaction(this, id));
      } catch (error) {
        await this._db.abort(waker, id).catch(() => {});
        throw error;
      }
      await this._db.commit(waker, id);
      return result;
    });
  }

  /** The schema as the database has it. */
  getSchema() {
    return request(() => this._db.schema(waker));
  }

  // ----- events -----------------------------------------------------------------------------

  /** `listener(event)` for each event of `kind` ('created', 'updated', 'deleted', 'ready',
   * 'error', 'fetched', 'conflict', 'offline', 'flushed'). A listener that throws reports to
   * the 'error' listeners (or as a process warning); it never stops the process. */
  addEventListener(kind, listener) {
    const kinds = Array.isArray(kind) ? kind : [kind];
    for (const k of kinds) {
      if (!EVENT_KINDS.includes(k)) throw codedError('INVALID_ARGUMENT', `event kind ${JSON.stringify(k)} is not known (known: ${EVENT_KINDS.join(', ')})`);
    }
    for (const k of kinds) {
      const entry = { listener, subscription: null };
      const list = this._listeners.get(k) || [];
      list.push(entry);
      this._listeners.set(k, list);
      if (k === 'ready' || k === 'error') continue; // raised here, from the open's outcome and listener failures
      const subscription = nextSubscription++;
      listeners.set(subscription, (event) => this._call(listener, event));
      entry.subscription = this._db.subscribe(waker, subscription, JSON.stringify({ kinds: [k] })).then(
        (id) => ({ id, subscription }),
        () => null,
      );
    }
    return this;
  }

  removeEventListener(kind, listener) {
    for (const k of Array.isArray(kind) ? kind : [kind]) {
      const list = this._listeners.get(k) || [];
      const at = list.findIndex((e) => e.listener === listener);
      if (at < 0) continue;
      const [entry] = list.splice(at, 1);
      if (entry.subscription) {
        entry.subscription.then((sub) => {
          if (!sub) return;
          listeners.delete(sub.subscription);
          if (!this._db.closed) this._db.unsubscribe(waker, sub.id).catch(() => {});
        });
      }
    }
    return this;
  }

  on(kind, listener) {
    return this.addEventListener(kind, listener);
  }

  off(kind, listener) {
    return this.removeEventListener(kind, listener);
  }

  _call(listener, event) {
    try {
      listener(event);
    } catch (error) {
      this._emit('error', { kind: 'error', message: `an event listener threw: ${error && error.message}`, error });
    }
  }

  _emit(kind, event) {
    const list = this._listeners.get(kind) || [];
    if (list.length === 0) {
      if (kind === 'error' && event.error) process.emitWarning(`objstore-db: ${event.message}`);
      return;
    }
    for (const { listener } of list) {
      try {
        listener(event);
      } catch (error) {
        if (kind !== 'error') this._emit('error', { kind: 'error', message: `an event listener threw: ${error && error.message}`, error });
        else process.emitWarning(`objstore-db: an error listener threw: ${error && error.message}`);
      }
    }
  }

  // ----- sync -------------------------------------------------------------------------------

  /** Sends waiting writes now; resolves with `{sent, pending, ...}`. */
  flush() {
    return request(() => this._db.flush(waker));
  }

  /** Brings the local copy of a synced store in line with its bucket. */
  prefetch(store) {
    return request(() => this._db.prefetch(waker, store));
  }

  /** Offline, no request goes to a bucket: reads serve the cache and writes wait. */
  setOffline(offline = true) {
    try {
      this._db.setOffline(!!offline);
    } catch (error) {
      throw fromNative(error);
    }
  }

  /** Requests made to buckets, bytes and cost so far (`reset` starts again from zero). */
  syncStats(reset = false) {
    return JSON.parse(this._db.syncStats(!!reset));
  }

  /** Writes the bucket refused, kept until resolved. */
  refusedWrites() {
    return request(() => this._db.refusedWrites(waker));
  }

  /** Resolves a refused write and every other refused write of its object: 'discard' (the
   * bucket's version wins) or 'overwrite' (the local copy is sent over the bucket's). */
  resolveRefused(sequence, resolution) {
    return request(() => this._db.resolve(waker, sequence, resolution));
  }

  /** 'synced', 'pending', 'refused', 'unusable', 'unknown' or 'local' for the record under `key`. */
  syncStatus(store, key) {
    return request(() => this._db.syncStatus(waker, store, keyText(key)));
  }

  /** Takes back the writes to `key` still waiting for the bucket, and the local record with
   * them (no delete is queued); resolves with how many. */
  withdrawPending(store, key) {
    return request(() => this._db.withdrawPending(waker, store, keyText(key)));
  }

  // ----- lifetime ---------------------------------------------------------------------------

  /** Closes; resolves after every other request of this database has settled. */
  close() {
    return requestThen(() => this._db.close(waker), () => {
      for (const list of this._listeners.values()) {
        for (const entry of list) if (entry.subscription) entry.subscription.then((sub) => sub && listeners.delete(sub.subscription));
      }
      this._listeners.clear();
    });
  }

  get closed() {
    return this._db.closed;
  }
}

module.exports = { Storage, KeyRange, Query, Transaction, Cursor, version: native.version() };
