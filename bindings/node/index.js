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
const {
  codedError,
  keyJson,
  keyJs,
  keysJs,
  valueJson,
  keyText,
  KeyRange,
  isPlainRange,
  rangeSpec,
  DbKey,
  rangeFirst,
  DEFAULT_LIMIT,
  scanText,
} = require('./convert');
const { RecordEvent, ReadyEvent, ErrorEvent } = require('./events');

const EVENT_KINDS = ['created', 'updated', 'deleted', 'ready', 'error', 'fetched', 'conflict', 'offline', 'flushed'];

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
    promise = Promise.reject(error);
  }
  return decorate(promise);
}

/** As `request`, with `convert` applied to the result. */
function requestThen(make, convert) {
  let promise;
  try {
    promise = make().then(convert);
  } catch (error) {
    promise = Promise.reject(error);
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

const OPS = { '=': '==', '==': '==', '>': '>', '>=': '>=', '<': '<', '<=': '<=', starts: 'starts', '^': 'starts' };

/** A query over one store, built step by step (YDN-DB's `from(store).where(...)`). */
class Query {
  /** `keyBounds`: YDN-DB's `from(store, op, value, op2?, value2?)`, a range of primary keys. */
  constructor(storage, store, tx, keyBounds) {
    this._storage = storage;
    this._tx = tx;
    this._spec = { from: store };
    this._native = null;
    this._keyBounds = keyBounds && keyBounds[0] !== undefined ? keyBounds : null;
    this._pick = null; // select(field): the field whose values list gives
  }

  /** The native query, built at its first run (primary-key bounds need the schema, known once open). */
  _run(make) {
    return request(() => {
      if (this._native !== null || this._keyBounds === null || this._knowsStore()) return make(this._built());
      return this._storage._freshSchema(this._tx).then(() => make(this._built()));
    });
  }

  /** Whether the schema at hand has this query's store (else it may be newer than the open). */
  _knowsStore() {
    const schema = this._storage._schema;
    return !!schema && (schema.stores || []).some((s) => s.name === this._spec.from);
  }

  _built() {
    if (this._native === null) {
      if (this._keyBounds !== null) this._boundKeys();
      this._native = this._storage._db.query(JSON.stringify(this._spec));
    }
    return this._native;
  }

  _boundKeys() {
    const store = (this._storage._schema.stores || []).find((s) => s.name === this._spec.from);
    const keyPath = store && store.keyPath;
    if (typeof keyPath !== 'string' || keyPath === '') {
      throw codedError(
        'INVALID_ARGUMENT',
        `from(${JSON.stringify(this._spec.from)}, op, value): the store needs a single keyPath to range its keys; use values(store, KeyRange) instead`,
      );
    }
    const [op, value, op2, value2] = this._keyBounds;
    this._keyBounds = null;
    this.where(keyPath, op, value, op2, value2);
  }

  _with(field, value) {
    if (this._native !== null) throw codedError('INVALID_ARGUMENT', 'a query cannot change after it has run; build a new one');
    this._spec[field] = value;
    return this;
  }

  /** `op`: '=' ('=='), '>', '>=', '<', '<=' or 'starts' ('^'); a second `op2, value2` bounds the
   * other side (YDN-DB's `where(field, '>', 1, '<=', 20)`). */
  where(field, op, value, op2, value2) {
    const conditions = (this._spec.where || []).concat([[field, OPS[op] || op, keyJsonOrValue(value)]]);
    if (op2 !== undefined) conditions.push([field, OPS[op2] || op2, keyJsonOrValue(value2)]);
    return this._with('where', conditions);
  }

  and(field, op, value, op2, value2) {
    return this.where(field, op, value, op2, value2);
  }

  /** order(field), order([fields]) or order(field, field2, ...). */
  order(...fields) {
    return this._with('order', fields.flat());
  }

  reverse() {
    return this._with('reverse', true);
  }

  /** unique() or unique(true): one record per order key; unique(false) turns it off again. */
  unique(on = true) {
    if (typeof on !== 'boolean') throw codedError('INVALID_ARGUMENT', `unique takes true or false, not ${JSON.stringify(on)}`);
    return this._with('unique', on);
  }

  /** select(field): list gives that field's values (of a multiEntry index read by it, the
   * entry's element); select([fields]) or select(f1, f2): objects of those fields;
   * select('*'): whole records. */
  select(...fields) {
    const one = fields.length === 1 && typeof fields[0] === 'string';
    if (one && fields[0] === '*') {
      this._pick = null;
      return this._with('select', undefined);
    }
    this._pick = one ? fields[0] : null;
    return this._with('select', fields.flat());
  }

  /** The next `limit` (YDN-DB's default: 100) records; each call continues where the last ended. */
  list(limit = DEFAULT_LIMIT) {
    const pick = this._pick;
    return this._run((native) => {
      const page = native.list(waker, limit, false, this._tx);
      return pick === null ? page : page.then((rows) => rows.map((row) => fieldOf(row, pick)));
    });
  }

  count() {
    return this._run((native) => native.count(waker, false, this._tx));
  }

  explain() {
    return this._run((native) => native.explain(waker, this._tx));
  }

  /** Changes every match: patch({field: value, ...}) (a JSON merge patch), patch(field, value)
   * or patch([fields], [values]) (fields may be dotted paths); resolves with how many changed. */
  patch(fieldsOrPatch, values) {
    return this._run((native) => native.patch(waker, valueJson('patch', mergePatch(fieldsOrPatch, values)), this._tx));
  }

  /** Removes every match; resolves with how many went. */
  delete() {
    return this._run((native) => native.delete(waker, this._tx));
  }

  /** Streams every match to `callback(cursor)`, `batch` records per request with flat memory.
   * The callback may update or clear the record, may return a promise (awaited before the next
   * record) and may return false to stop. What it throws rejects the promise and stops the
   * stream; changes it made before stay. Resolves with how many records it saw. */
  open(callback, mode = 'readonly', batch = 100) {
    return this._run(async (native) => {
      const cursor = native.cursor(mode, this._tx);
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
    if (this._native === null && this._keyBounds !== null && !this._knowsStore()) await this._storage._freshSchema(this._tx);
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

/** The value at a dotted path of a record (undefined where it is missing). */
function fieldOf(record, path) {
  let node = record;
  for (const segment of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[segment];
  }
  return node;
}

/** YDN-DB's patch forms as one JSON merge patch. */
function mergePatch(fieldsOrPatch, values) {
  if (values === undefined) {
    if (fieldsOrPatch === null || typeof fieldsOrPatch !== 'object' || Array.isArray(fieldsOrPatch)) {
      throw codedError('INVALID_ARGUMENT', 'patch takes an object, (field, value) or ([fields], [values])');
    }
    return fieldsOrPatch;
  }
  const fields = Array.isArray(fieldsOrPatch) ? fieldsOrPatch : [fieldsOrPatch];
  const given = Array.isArray(fieldsOrPatch) ? values : [values];
  if (!Array.isArray(given) || given.length !== fields.length) {
    throw codedError('INVALID_ARGUMENT', `patch([fields], [values]) needs one value per field: ${fields.length} fields`);
  }
  const patch = {};
  fields.forEach((field, i) => {
    if (typeof field !== 'string' || field === '') throw codedError('INVALID_ARGUMENT', `patch: a field is a name or a dotted path, not ${JSON.stringify(field)}`);
    const segments = field.split('.');
    let node = patch;
    for (const segment of segments.slice(0, -1)) node = node[segment] = node[segment] || {};
    node[segments[segments.length - 1]] = given[i];
  });
  return patch;
}

function keyJsonOrValue(value) {
  if (value instanceof Date || value instanceof Uint8Array || Array.isArray(value)) return keyJson(value);
  return value;
}

// ----- the record operations, outside a transaction or inside one --------------------------------

class Operations {
  /** put(store, value, key?) resolves with the key; put(store, [values], [keys]?) writes them
   * all in one transaction (all or none) and resolves with their keys. */
  put(store, value, key) {
    if (Array.isArray(value) && (key === undefined || Array.isArray(key))) return this._writeMany(store, value, key, false);
    return requestThen(
      () => this._db.put(waker, store, valueJson('value', value), key === undefined ? null : keyText(key), this._tx),
      keyJs,
    );
  }

  /** As put, but each record must be new: an existing key rejects with CONSTRAINT (for an
   * array, naming the record, and nothing of it is written). */
  add(store, value, key) {
    if (Array.isArray(value) && (key === undefined || Array.isArray(key))) return this._writeMany(store, value, key, true);
    return requestThen(
      () => this._db.add(waker, store, valueJson('value', value), key === undefined ? null : keyText(key), this._tx),
      keyJs,
    );
  }

  _writeMany(store, values, keys, create) {
    return requestThen(() => {
      const keysText = keys === undefined ? null : JSON.stringify(keys.map(keyJson));
      return this._db.writeMany(waker, store, valueJson('values', values), keysText, create, this._tx);
    }, keysJs);
  }

  /** The record under `key`, or undefined. A synced store answers from its cache (fetching
   * what it does not hold); `{fresh: true}` asks the bucket first, as Python's and C's do. */
  get(store, key, options) {
    const fresh = !!(options && options.fresh);
    return request(() => {
      const keyJsonText = keyText(key);
      if (this._tx === null) {
        // Outside a transaction an idle database answers inside the call: the promise is made
        // here, settled already (no Node-API promise, no thread hop).
        const text = this._db.getNow(store, keyJsonText, fresh);
        if (text !== null) return Promise.resolve(text === 'null' ? undefined : JSON.parse(text));
      }
      return this._db.get(waker, store, keyJsonText, fresh, this._tx);
    });
  }

  /** remove(store, key), remove(store, keyRange) or remove(store, index, keyRange) (the
   * records whose index key is in range); resolves with how many went. */
  remove(store, indexOrKey, range) {
    if (range === undefined) {
      return request(() => this._db.remove(waker, store, JSON.stringify(rangeSpec(indexOrKey)), this._tx));
    }
    return this._inStores([store], 'readwrite', async (tx) => {
      const keys = keysJs(await tx._db.scan(waker, store, 'keys', scanText(indexOrKey, range), false, tx._tx));
      let removed = 0;
      for (const key of keys) removed += await tx.remove(store, key);
      return removed;
    });
  }

  /** clear(store) (resolves with 1), clear([stores]) and clear() (every store; resolve with
   * how many stores were cleared), or clear(store, keyRange) (resolves with how many records
   * went), as YDN-DB counts them. */
  clear(stores, range) {
    if (typeof stores === 'string' && range !== undefined) return this.remove(stores, range);
    if (typeof stores === 'string') return requestThen(() => this._db.clear(waker, stores, this._tx), () => 1);
    return this._inStores(stores === undefined || stores === null ? null : stores, 'readwrite', async (tx, names) => {
      for (const name of names) await tx._db.clear(waker, name, tx._tx);
      return names.length;
    });
  }

  /** count(store), count(store, keyRange), count(store, index, keyRange?, unique?) or
   * count([stores]) (an array of counts, read in one transaction). */
  count(store, index, range, unique) {
    if (Array.isArray(store)) {
      if (index !== undefined) return request(() => Promise.reject(codedError('INVALID_ARGUMENT', 'count([stores]) takes no other argument')));
      return this._inStores(store, 'readonly', (tx, names) => Promise.all(names.map((name) => tx.count(name))));
    }
    if (rangeFirst(index, range)) [index, range, unique] = [undefined, index, undefined];
    return request(() => this._db.scan(waker, store, 'count', scanText(index, range, undefined, 0, false, unique), false, this._tx));
  }

  /** Primary keys, at most `limit` (YDN-DB's default: 100): keys(store, keyRange?, limit?,
   * offset?, reverse?) or keys(store, index, keyRange?, limit?, offset?, reverse?, unique?). */
  keys(store, index, range, limit, offset, reverse, unique) {
    if (rangeFirst(index, range)) [index, range, limit, offset, reverse, unique] = [undefined, index, range, limit, offset, false];
    const scan = () => scanText(index, range, limit === undefined || limit === null ? DEFAULT_LIMIT : limit, offset, reverse, unique);
    return requestThen(() => this._db.scan(waker, store, 'keys', scan(), false, this._tx), keysJs);
  }

  /** Records, at most `limit` (default 100): values(store, keyRange?, limit?, offset?,
   * reverse?), values(store, index, keyRange?, limit?, offset?, reverse?, unique?),
   * values(store, [keys]) or values([Key, ...]) (undefined where there is none). */
  values(store, index, range, limit, offset, reverse, unique) {
    if (Array.isArray(store)) return this._valuesOfKeys(store);
    if (Array.isArray(index)) {
      const keys = index;
      return requestThen(
        () => this._db.valuesOf(waker, store, JSON.stringify(keys.map(keyJson)), false, this._tx),
        (found) => found.map(nullToUndefined),
      );
    }
    if (rangeFirst(index, range)) [index, range, limit, offset, reverse, unique] = [undefined, index, range, limit, offset, false];
    const scan = () => scanText(index, range, limit === undefined || limit === null ? DEFAULT_LIMIT : limit, offset, reverse, unique);
    return request(() => this._db.scan(waker, store, 'values', scan(), false, this._tx));
  }

  _valuesOfKeys(keys) {
    const wrong = keys.find((key) => !(key instanceof DbKey));
    if (wrong !== undefined) {
      return request(() => Promise.reject(codedError('INVALID_ARGUMENT', `values([keys]) takes Keys (new Key(store, id)), not ${String(wrong)}`)));
    }
    const stores = [...new Set(keys.map((key) => key.store))];
    return this._inStores(stores, 'readonly', async (tx) => {
      const found = new Map();
      for (const store of stores) {
        const ids = keys.filter((key) => key.store === store).map((key) => key.id);
        const values = await tx.values(store, ids);
        ids.forEach((id, i) => found.set(`${store}\u0000${keyText(id)}`, values[i]));
      }
      return keys.map((key) => found.get(`${key.store}\u0000${keyText(key.id)}`));
    });
  }

  /** A query: from(store), or from(store, op, value, op2?, value2?) over a range of primary keys. */
  from(store, op, value, op2, value2) {
    return new Query(this._storage, store, this._tx, [op, value, op2, value2]);
  }

  /** One SQL statement of the subset, with `?` parameters, answered as YDN-DB does: a SELECT
   * of one column gives its values, of one aggregate (COUNT(*)) a number, otherwise rows;
   * another statement gives how many records it changed. */
  executeSql(sql, params) {
    return requestThen(
      () => this._db.sql(waker, sql, params === undefined ? null : valueJson('SQL parameters', params.map(keyJsonOrValue)), this._tx),
      sqlAnswer,
    );
  }

  /** Runs `work(tx, names)` over `stores` (null: every store; in a transaction, every store of
   * its scope, since a request outside it would wait for it): in this transaction when there is
   * one, else in one of its own. */
  _inStores(stores, mode, work) {
    if (this._tx !== null) return request(async () => work(this, stores === null ? this._scope : stores));
    return request(async () => {
      const names = stores === null ? await this._storage._storeNames() : stores;
      return this._storage.run((tx) => work(tx, names), names, mode);
    });
  }
}

function sqlAnswer(result) {
  if (!('rows' in result)) return result.changed;
  const { rows, columns, aggregate } = result;
  if (!columns || columns.length !== 1) return rows;
  if (aggregate) return rows.length === 0 ? undefined : rows[0][columns[0]];
  return rows.map((row) => row[columns[0]]);
}

function nullToUndefined(value) {
  return value === null ? undefined : value;
}

/** The operations of one transaction: what `run` hands its function. `abort()` rolls it back
 * (the run then rejects). */
class Transaction extends Operations {
  constructor(storage, tx, scope, abort) {
    super();
    this._storage = storage;
    this._db = storage._db;
    this._tx = tx;
    this._scope = scope;
    this._abort = abort;
  }

  abort() {
    this._abort();
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
    this._schema = null; // the schema as opened: known once ready
    this._listeners = new Map(); // kind -> [{listener, subscription}]
    const { mechanism = 'sqlite', sync, durability, idleTransactionTimeoutMs, queueCapacity, syncThreads } = options;
    this._mechanism = mechanism;
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
    const opened = native.open(waker, name, schemaText, JSON.stringify(openOptions));
    this._db = opened[0];
    /** Resolves with `{version, previousVersion, stores, warnings?}` once open (previousVersion:
     * the version before this open, null for a new database; warnings also go to
     * process.emitWarning); rejects with why it could not open. */
    this.ready = decorate(opened[1]);
    this.ready.then(
      (opened) => {
        this._schema = opened;
        for (const text of opened?.warnings ?? []) process.emitWarning(text, 'ObjstoreDbSyncWarning');
        this._emit('ready', new ReadyEvent(opened?.version, opened?.previousVersion ?? null));
      },
      (error) => this._emit('error', new ErrorEvent(error.message, error)),
    );
  }

  /** YDN-DB's onReady: `cb(error)` once open (error undefined when it opened). */
  onReady(callback) {
    this.ready.then(() => callback(), (error) => callback(error));
  }

  /** Runs `fn(tx)` in one transaction over `storeNames` (null: every store) in `mode`
   * ('readonly', the default, or 'readwrite'): committed when it returns (or its promise
   * resolves), aborted when it throws; resolves with what it returned. It starts when the
   * transaction open now (if any) ends; requests outside it wait for it. The request's
   * `abort()` (or `tx.abort()`) rolls it back, and the run then rejects. */
  run(fn, storeNames, mode = 'readonly') {
    let id = null;
    let aborted = null;
    let ended = false;
    const abort = () => {
      if (ended) throw codedError('TRANSACTION_INACTIVE', 'abort(): the transaction has already ended');
      if (aborted) return;
      aborted = codedError('TRANSACTION_INACTIVE', `transaction ${id === null ? '(not yet begun)' : id} was aborted by abort()`);
      if (id !== null) this._db.abort(waker, id).catch(() => {});
    };
    const run = request(async () => {
      try {
        const names = storeNames == null ? await this._storeNames() : typeof storeNames === 'string' ? [storeNames] : storeNames;
        id = await this._db.begin(waker, JSON.stringify(names), mode);
        if (aborted) {
          await this._db.abort(waker, id).catch(() => {});
          throw aborted;
        }
        let result;
        try {
          result = await fn(new Transaction(this, id, names, abort));
        } catch (error) {
          if (!aborted) await this._db.abort(waker, id).catch(() => {});
          throw aborted || error;
        }
        if (aborted) throw aborted;
        await this._db.commit(waker, id);
        return result;
      } finally {
        ended = true;
      }
    });
    run.abort = abort;
    return run;
  }

  /** The names of the stores, as the database has them now. */
  async _storeNames() {
    const schema = await this._freshSchema(null);
    return (schema.stores || []).map((store) => store.name);
  }

  /** The schema after the open, read again when not inside transaction `tx` (a request outside
   * a transaction would wait for it): a store may have been made since the open. */
  async _freshSchema(tx) {
    await this.ready;
    if (tx === null || tx === undefined) this._schema = await this._db.schema(waker);
    return this._schema;
  }

  /** The name the database was opened with (YDN-DB's getName). */
  getName() {
    return this.name;
  }

  /** The storage mechanism: 'sqlite' or 'memory' (YDN-DB's getType). */
  getType() {
    return this._mechanism;
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
      listeners.set(subscription, (event) => this._call(listener, new RecordEvent(event)));
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
      this._emit('error', new ErrorEvent(`an event listener threw: ${error && error.message}`, error));
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
        if (kind !== 'error') this._emit('error', new ErrorEvent(`an event listener threw: ${error && error.message}`, error));
        else process.emitWarning(`objstore-db: an error listener threw: ${error && error.message}`);
      }
    }
  }

  // ----- sync -------------------------------------------------------------------------------

  /** Sends waiting writes now; resolves with `{sent, pending, refused, rejected, held, ...}`
   * (sent, rejected, held: what this call did; pending, refused: every write). */
  flush() {
    return request(() => this._db.flush(waker));
  }

  /** Brings the local copy of a synced store in line with its bucket. */
  prefetch(store) {
    return request(() => this._db.prefetch(waker, store));
  }

  /** Writes a checkpoint of a synced store that keeps them (`Options.checkpoints`); resolves
   * with `{manifest, positionMs, objects, shards, bytes}`. */
  checkpoint(store) {
    return request(() => this._db.checkpoint(waker, store));
  }

  /** Offline, no request goes to a bucket: reads serve the cache and writes wait. */
  setOffline(offline = true) {
    this._db.setOffline(!!offline);
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

/** YDN-DB's names: `new ydn.db.Storage(...)`, `ydn.db.KeyRange`, `new ydn.db.Key(store, id)`. */
const ydn = { db: { Storage, KeyRange, Key: DbKey } };

module.exports = {
  Storage,
  KeyRange,
  DbKey,
  Query,
  Transaction,
  Cursor,
  RecordEvent,
  ReadyEvent,
  ErrorEvent,
  ydn,
  version: native.version(),
};
