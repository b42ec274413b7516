// Types of objstore-db for Node (checked against the module by test/types.test.mjs, and by
// tsc --strict over the tests and the example).

/** A key: numbers, strings, Dates, binary (Buffer/Uint8Array) and arrays of keys, in IndexedDB order. */
export type Key = number | string | Date | Uint8Array | Key[];

/** A plain JSON value: what a record is made of. */
export type Json = null | boolean | number | string | Json[] | { [field: string]: Json | undefined };

/** An Error with a stable code per status. */
export interface ObjstoreError extends Error {
  /** What went wrong, one code per status of the library (the C API's `OBJSTORE_STATUS_*`). */
  code:
    | 'NOT_FOUND'
    | 'INVALID_KEY'
    | 'INVALID_ARGUMENT'
    | 'CONSTRAINT'
    | 'READ_ONLY'
    | 'TRANSACTION_INACTIVE'
    | 'SCHEMA'
    | 'CLOSED'
    | 'CANCELLED'
    | 'STORAGE'
    | 'CONFLICT'
    | 'NETWORK'
    | 'REMOTE'
    | 'REMOTE_DATA'
    | 'INTERNAL';
}

/** A request: a Promise with YDN-DB's deferred methods. */
export interface Request<T> extends Promise<T> {
  /** Calls `fn` with the value when the request succeeds. */
  done(fn: (value: T) => unknown): Request<T>;
  /** Calls `fn` with the error when the request fails. */
  fail(fn: (error: ObjstoreError) => unknown): Request<T>;
  /** Calls `fn` with the value or the error, whichever comes. */
  always(fn: (valueOrError: T | ObjstoreError) => unknown): Request<T>;
}

/** A range of keys, as IndexedDB's IDBKeyRange (YDN-DB's `ydn.db.KeyRange`). */
export class KeyRange {
  private constructor(spec: object);
  /** The range as the library takes it: `{lower, upper, lowerOpen, upperOpen}` or `{prefix}`. */
  readonly spec: object;
  /** Exactly `key`. */
  static only(key: Key): KeyRange;
  /** Every key from `key` on (after it when `open`). */
  static lowerBound(key: Key, open?: boolean): KeyRange;
  /** Every key up to `key` (before it when `open`). */
  static upperBound(key: Key, open?: boolean): KeyRange;
  /** Every key from `lower` to `upper`; an open end leaves its bound out. */
  static bound(lower: Key, upper: Key, lowerOpen?: boolean, upperOpen?: boolean): KeyRange;
  /** Every string key beginning with `prefix`, or every array key whose leading elements are
   * the array prefix's. */
  static starts(prefix: string | Key[]): KeyRange;
}

/** A plain range object, as YDN-DB takes one. */
export interface RangeObject {
  /** The lowest key in the range (none: unbounded below). */
  lower?: Key;
  /** The highest key in the range (none: unbounded above). */
  upper?: Key;
  /** Leaves `lower` itself out. */
  lowerOpen?: boolean;
  /** Leaves `upper` itself out. */
  upperOpen?: boolean;
}

/** A range of keys, either form. */
export type Range = KeyRange | RangeObject;

/** A key in a named store (YDN-DB's `ydn.db.Key`). */
export class DbKey {
  /** The key `id` in `store`, under `parent` (YDN-DB's hierarchical keys). */
  constructor(store: string, id: Key, parent?: DbKey | { store: string; id: Key } | null);
  /** The same from an object, as `toJSON` gives it. */
  constructor(key: { store: string; id: Key; parent?: DbKey | { store: string; id: Key } | null });
  /** The store's name. */
  readonly store: string;
  /** The primary key in the store. */
  readonly id: Key;
  /** The key above this one, if any. */
  readonly parent: DbKey | null;
  /** The store's name. */
  getStoreName(): string;
  /** The primary key in the store. */
  getId(): Key;
  /** The key above this one, if any. */
  getParent(): DbKey | null;
  /** `{store, id, parent?}`, which the constructor takes back. */
  toJSON(): {
    /** The store's name. */
    store: string;
    /** The primary key in the store. */
    id: Key;
    /** The key above this one, as its toJSON gives it. */
    parent?: object;
  };
}

/** What an event is about: a record created, updated or deleted; the database ready; an error;
 * objects fetched from a bucket; a write the bucket refused (conflict); the bucket out of reach
 * (offline); writes that reached it (flushed). */
export type EventKind = 'created' | 'updated' | 'deleted' | 'ready' | 'error' | 'fetched' | 'conflict' | 'offline' | 'flushed';

/** A change or sync event (YDN-DB's RecordEvent). */
export class RecordEvent {
  private constructor();
  /** What happened. */
  readonly kind: EventKind;
  /** The same as `kind` (YDN-DB's name). */
  readonly type: EventKind;
  /** The event's class, as YDN-DB names it. */
  readonly name: 'RecordEvent';
  /** The store it happened in, if one. */
  readonly store?: string | null;
  /** The record's key, if one (none: a whole store, say a clear). */
  readonly key?: Key | null;
  /** The record as written, for a created or updated record. */
  readonly value?: any;
  /** What happened, in words: sync events say how many objects or why. */
  readonly message?: string | null;
  /** The record's key. */
  getKey(): Key | null | undefined;
  /** The record as written. */
  getValue(): any;
  /** The store it happened in. */
  getStoreName(): string | null | undefined;
}

/** An event a listener gets (YDN-DB's name for it). */
export type StorageEvent = RecordEvent;

/** The open's outcome (YDN-DB's ReadyEvent). */
export class ReadyEvent {
  private constructor();
  /** Always `'ready'`. */
  readonly kind: 'ready';
  /** Always `'ready'` (YDN-DB's name). */
  readonly type: 'ready';
  /** The event's class, as YDN-DB names it. */
  readonly name: 'ReadyEvent';
  /** The schema's version now, and before this open (null for a new database). */
  readonly value: {
    /** The schema's version now. */
    version: number;
    /** The schema's version before this open; null for a new database. */
    previousVersion: number | null;
  };
  /** The schema's version now. */
  getVersion(): number;
  /** NaN for a new database. */
  getOldVersion(): number;
}

/** A failed open or a listener that threw (YDN-DB's ErrorEvent). */
export class ErrorEvent {
  private constructor();
  /** Always `'error'`. */
  readonly kind: 'error';
  /** Always `'error'` (YDN-DB's name). */
  readonly type: 'error';
  /** The event's class, as YDN-DB names it. */
  readonly name: 'ErrorEvent';
  /** What went wrong. */
  readonly message: string;
  /** The error itself (an ObjstoreError from the library, or what a listener threw). */
  readonly error: Error;
  /** The error itself. */
  getError(): Error;
}

/** One record under a cursor. */
export class Cursor<T = any> {
  private constructor();
  /** The record. */
  getValue(): T;
  /** The key the query is ordered by (the index's key, or the primary key). */
  getKey(): Key;
  /** The record's primary key. */
  getPrimaryKey(): Key;
  /** Replaces the record (its key must stay the same). */
  update(value: T): Request<unknown>;
  /** Removes the record. */
  clear(): Request<unknown>;
}

/** A comparison in a condition: `starts` (or `^`) is a string or array prefix. */
export type Op = '=' | '==' | '>' | '>=' | '<' | '<=' | 'starts' | '^';

/** A query over one store, built a call at a time (each returns the query), then read with
 * `list`, `count`, `open` or `for await`: conditions (an index serves the first where it can),
 * order, paging that goes on where the last page ended. */
export class Query<T = any> implements AsyncIterable<Cursor<T>> {
  private constructor();
  /** A condition; `op2, value2` bound the other side: where('age', '>', 1, '<=', 20). */
  where(field: string, op: Op, value: Json | Key, op2?: Op, value2?: Json | Key): Query<T>;
  /** One more condition, as `where`. */
  and(field: string, op: Op, value: Json | Key, op2?: Op, value2?: Json | Key): Query<T>;
  /** Orders by these fields (an array: a compound order), then by primary key. */
  order(...fields: (string | string[])[]): Query<T>;
  /** Reverses the order. */
  reverse(): Query<T>;
  /** unique() or unique(true): one record per order key; unique(false) turns it off. */
  unique(on?: boolean): Query<T>;
  /** select(field): list gives the field's values; select([fields]): objects; select('*'): records. */
  select(field: string): Query<any>;
  select(fields: string[]): Query<any>;
  select(...fields: string[]): Query<any>;
  /** The next `limit` (default 100) records; each call continues where the last ended. */
  list(limit?: number): Request<T[]>;
  /** How many records match. */
  count(): Request<number>;
  /** How the query would run: the index it reads and the conditions it checks, in words. */
  explain(): Request<string>;
  /** patch({field: value}) (a JSON merge patch), patch(field, value) or patch([fields],
   * [values]); resolves with how many changed. */
  patch(patch: object): Request<number>;
  patch(field: string, value: Json): Request<number>;
  patch(fields: string[], values: Json[]): Request<number>;
  /** Removes every match; resolves with how many went. */
  delete(): Request<number>;
  /** Streams every match to `callback`; return false (or a promise of it) to stop. */
  open(callback: (cursor: Cursor<T>) => unknown, mode?: 'readonly' | 'readwrite', batch?: number): Request<number>;
  /** `for await (const cursor of query)`: every match, read a batch at a time. */
  [Symbol.asyncIterator](): AsyncIterator<Cursor<T>>;
}

/** The record operations, outside a transaction (Storage) or inside one (Transaction), in
 * YDN-DB's forms. */
export class Operations {
  protected constructor();
  /** An array is many records (all or none), with a key each when `keys` is given. */
  put(store: string, values: (object | Json)[], keys?: Key[]): Request<Key[]>;
  /** Writes `value` (under `key`, for a store without a key path); resolves with its key. */
  put(store: string, value: object | Json, key?: Key): Request<Key>;
  /** As `put`, refused (`CONSTRAINT`) where a key is taken: all or none. */
  add(store: string, values: (object | Json)[], keys?: Key[]): Request<Key[]>;
  /** As `put`, refused (`CONSTRAINT`) where the key is taken. */
  add(store: string, value: object | Json, key?: Key): Request<Key>;
  /** `fresh`: ask the bucket before answering (a synced store otherwise answers from its cache). */
  get<T = any>(store: string, key: Key, options?: { fresh?: boolean }): Request<T | undefined>;
  /** Removes the record under a key, or every record in a range; resolves with how many went. */
  remove(store: string, keyOrRange: Key | Range): Request<number>;
  /** Removes every record whose `index` key is in `range`; resolves with how many went. */
  remove(store: string, index: string, range: Range | Key): Request<number>;
  /** clear(store): 1; clear([stores]) and clear(): how many stores; clear(store, range): how many records. */
  clear(store?: string | string[] | null): Request<number>;
  /** Removes the records in `range`; resolves with how many went. */
  clear(store: string, range: Range): Request<number>;
  /** Each store's record count, read in one transaction. */
  count(stores: string[]): Request<number[]>;
  /** How many records (in `range`) the store holds. */
  count(store: string, range?: Range | null): Request<number>;
  /** A null index before a range is the index form without an index. */
  count(store: string, index: string | null, range?: Range | Key | null, unique?: boolean): Request<number>;
  /** At most `limit` (default 100) primary keys. */
  keys(store: string, range?: Range | null, limit?: number, offset?: number, reverse?: boolean): Request<Key[]>;
  /** The primary keys of records whose `index` key is in `range`, in index order (`unique`:
   * one per index key). */
  keys(
    store: string,
    index: string | null,
    range?: Range | Key | null,
    limit?: number,
    offset?: number,
    reverse?: boolean,
    unique?: boolean,
  ): Request<Key[]>;
  /** The records under keys across stores, undefined where there is none. */
  values<T = any>(keys: DbKey[]): Request<(T | undefined)[]>;
  /** The records under `keys`, undefined where there is none. */
  values<T = any>(store: string, keys: Key[]): Request<(T | undefined)[]>;
  /** At most `limit` (default 100) records. */
  values<T = any>(store: string, range?: Range | null, limit?: number, offset?: number, reverse?: boolean): Request<T[]>;
  /** The records whose `index` key is in `range`, in index order (`unique`: one per index key). */
  values<T = any>(
    store: string,
    index: string | null,
    range?: Range | Key | null,
    limit?: number,
    offset?: number,
    reverse?: boolean,
    unique?: boolean,
  ): Request<T[]>;
  /** A query; with `op, value` (and `op2, value2`) over a range of primary keys. */
  from<T = any>(store: string, op?: Op, value?: Key, op2?: Op, value2?: Key): Query<T>;
  /** Rows of a SELECT (one column: its values; one aggregate: a number), or how many records
   * another statement changed. */
  executeSql(sql: string, params?: (Json | Key)[]): Request<any>;
}

/** The operations inside `run()`'s transaction: each sees the ones before it. */
export class Transaction extends Operations {
  private constructor();
  /** Rolls the transaction back; the run rejects. */
  abort(): void;
}

/** What run() returns: its request, which abort() rolls back. */
export interface RunRequest<R> extends Request<R> {
  /** Rolls the transaction back; the request rejects. */
  abort(): void;
}

/** How a store is kept in sync with a bucket (the README's "Syncing stores with a bucket"). */
export interface SyncOptions {
  /** `objstore`: a record per object, its body JSON; `objstore-meta`: a record per object from
   * the listing alone (name, etag, size, metadata); `rest`: reads and writes by key, no listing. */
  format: 'rest' | 'objstore' | 'objstore-meta';
  /** Objects never change once written: a cached one is never asked for again. */
  immutable?: boolean;
  /** List the bucket before reads, and fetch what changed (`full`) or only describe it (`meta`). */
  prefetch?: 'meta' | 'full';
  /** How long (ms) a listing answers reads before the next one lists again. */
  prefetchRefractoryPeriod?: number;
  /** The bucket and how to reach it: `endpoint` (`http(s)://…` or `file://DIR`), `prefix`,
   * credentials, key layout, change log and the rest (the README lists them). */
  Options: BucketOptions;
}

/** Where a synced store's objects live. */
export interface BucketOptions {
  /** The bucket's name (for `file://DIR`, the folder under DIR). */
  bucket: string;
  /** Prepended to every object name (`results/`, say). */
  prefix?: string;
  /** `https://…` or `http://…` (an S3 endpoint; AWS's from `region` when none), or `file://DIR`. */
  endpoint?: string;
  /** The other options: credentials, region, addressing, key layout, change log, timeouts. */
  [option: string]: unknown;
}

/** A store: its name, key, indexes and sync. */
export interface StoreSchema {
  /** The store's name. */
  name: string;
  /** Where a record's key is (a field path, or several: a compound key); none: keys are given. */
  keyPath?: string | string[];
  /** Numbers records 1, 2, … where no key is given. */
  autoIncrement?: boolean;
  /** Secondary indexes: by field path(s); `unique` refuses a second record with the key;
   * `multiEntry` indexes each element of an array field. */
  indexes?: IndexSchema[];
  /** Keeps the store in sync with a bucket. */
  Sync?: SyncOptions;
}

/** A secondary index of a store. */
export interface IndexSchema {
  /** Its name (default: the key path, fields joined by ", "). */
  name?: string;
  /** The field path it indexes, or several (a compound key). */
  keyPath: string | string[];
  /** Refuses a second record with the same index key. */
  unique?: boolean;
  /** Indexes each element of an array field. */
  multiEntry?: boolean;
}

/** A database's stores. */
export interface Schema {
  /** The schema's version: a higher one upgrades the stored schema. */
  version?: number;
  /** The stores. */
  stores: StoreSchema[];
}

/** How a database is opened. */
export interface StorageOptions {
  /** A SQLite file (default) or memory, gone at close. */
  mechanism?: 'sqlite' | 'memory';
  /** Sync blocks by store name, merged into the schema. */
  sync?: { [store: string]: SyncOptions };
  /** 'normal' (default): a commit survives the process crashing; 'full': an fsync per commit,
   * so it survives a machine crash too. */
  durability?: 'normal' | 'full';
  /** A transaction that makes no request for this long (ms) is aborted. */
  idleTransactionTimeoutMs?: number;
  /** Requests that may wait for the database at once; more are refused. */
  queueCapacity?: number;
  /** Threads that talk to buckets. */
  syncThreads?: number;
}

/** Requests made to the buckets since the last reset, what they cost, and what is known of each
 * bucket's conditional writes (false: writes are checked by reading first). */
export interface SyncStats {
  /** Requests by kind (`GET`, `PUT`, `LIST`, …) and HTTP status. */
  requests: { [method: string]: { [status: string]: number } };
  /** Every request, each retry counted. */
  total: number;
  /** Bytes of request bodies sent. */
  bytesSent: number;
  /** Bytes of response bodies received. */
  bytesReceived: number;
  /** Milliseconds with at least one request in flight: the time spent waiting on buckets. */
  busyMs: number;
  /** At S3 Standard's request prices. */
  costUsd: number;
  /** The same requests at S3 Standard's, Cloudflare R2's and S3 Express One Zone's prices. */
  costsUsd: {
    /** Amazon S3 Standard. */
    s3Standard: number;
    /** Cloudflare R2 (LIST billed as its dearer class). */
    r2: number;
    /** Amazon S3 Express One Zone. */
    s3ExpressOneZone: number;
  };
  /** Per bucket, whether it honours conditional writes (as far as the library found out). */
  conditionalWrites: { [bucket: string]: boolean };
}

/** A write the bucket refused (kept in refusedWrites) or the server failed on (held, still queued). */
export interface FlushedWrite {
  /** The write's place in the outbox (what resolveRefused takes). */
  sequence: number;
  /** Why, as an ObjstoreError code. */
  code: string;
  /** Why, in words. */
  message: string;
}

/** What `checkpoint()` wrote. */
export interface CheckpointReport {
  /** The manifest's name in the bucket. */
  manifest: string;
  /** The bucket's clock when the listing began (ms since the epoch): readers read the change
   * log from there. */
  positionMs: number;
  /** The names it holds. */
  objects: number;
  /** The shards written (heads, ranges and the change log's waves). */
  shards: number;
  /** Bytes written, the manifest's with the shards'. */
  bytes: number;
}

/** The background sender sends writes too: `sent`, `rejected` and `held` are what this flush
 * did; `pending` and `refused` count every write, whoever sent it. */
export interface FlushReport {
  /** Writes this flush brought to the bucket. */
  sent: number;
  /** Writes still waiting (0: every write made before the flush reached the bucket or was refused). */
  pending: number;
  /** Refused writes awaiting resolveRefused, those the background sender met included. */
  refused: number;
  /** Writes the bucket refused during this flush (also kept in refusedWrites). */
  rejected: FlushedWrite[];
  /** Writes the server failed on (5xx) while it took others: queued, tried again next flush. */
  held: FlushedWrite[];
  /** Why the bucket could not be reached; the writes wait. */
  offline?: string;
  /** Why the bucket refused every request (credentials, a wrong region); the writes wait. */
  blocked?: string;
}

/** What `ready` resolves with. */
export interface Opened {
  /** The schema's version now. */
  version: number;
  /** The schema's version before this open; null for a new database. */
  previousVersion: number | null;
  /** The stores as stored. */
  stores: StoreSchema[];
  /** Said once per bucket that ignores conditional writes (writes are then checked by reading first). */
  warnings?: string[];
}

/** A write the bucket refused because it holds another version. */
export interface RefusedWrite {
  /** Its place in the outbox: what resolveRefused takes. */
  sequence: number;
  /** The store written to. */
  store: string;
  /** The record's key. */
  key: Key;
  /** `put`, `create` (an add), `delete` or `overwrite`. */
  op: string;
  /** What was not sent (none for a delete). */
  value: any;
  /** Why, as an ObjstoreError code (`CONFLICT`). */
  code: string;
  /** Why, in words. */
  message: string;
}

/** A database: a SQLite file (or memory) with its stores, some kept in sync with buckets. Every
 * request is queued at the call and resolves in order. */
export class Storage extends Operations {
  /** Opens (creating it when missing) the database `name` (a file path for SQLite) with
   * `schema` (or its JSON text; none: as stored). Requests made before it is open wait. */
  constructor(name: string, schema?: Schema | string | null, options?: StorageOptions);
  /** The name it was opened with. */
  readonly name: string;
  /** Resolves once open with the schema as stored, and `warnings` (also given to
   * process.emitWarning as 'ObjstoreDbSyncWarning') when a bucket ignores conditional writes. */
  readonly ready: Request<Opened>;
  /** Whether close() was called. */
  readonly closed: boolean;
  /** Calls `callback` once open, with the error if it could not open. */
  onReady(callback: (error?: ObjstoreError) => void): void;
  /** Runs `fn(tx)` in one transaction over `storeNames` (null: every store), after the one
   * open now: committed when it returns, aborted when it throws or on abort(). */
  run<R>(
    fn: (tx: Transaction) => R | Promise<R>,
    storeNames?: string | string[] | null,
    mode?: 'readonly' | 'readwrite',
  ): RunRequest<R>;
  /** The schema as stored. */
  getSchema(): Request<Schema>;
  /** The name it was opened with. */
  getName(): string;
  /** 'sqlite' or 'memory'. */
  getType(): 'sqlite' | 'memory';
  /** Calls `listener` once the database is open (at once if it is). */
  addEventListener(kind: 'ready', listener: (event: ReadyEvent) => void): this;
  /** Calls `listener` when the open fails or a listener throws. */
  addEventListener(kind: 'error', listener: (event: ErrorEvent) => void): this;
  /** Calls `listener` on each event of these kinds, on the loop's thread, after its commit. */
  addEventListener(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  /** Stops calling `listener` for these kinds. */
  removeEventListener(kind: EventKind | EventKind[], listener: (event: any) => void): this;
  /** As addEventListener('ready', …). */
  on(kind: 'ready', listener: (event: ReadyEvent) => void): this;
  /** As addEventListener('error', …). */
  on(kind: 'error', listener: (event: ErrorEvent) => void): this;
  /** As addEventListener. */
  on(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  /** As removeEventListener. */
  off(kind: EventKind | EventKind[], listener: (event: any) => void): this;
  /** Sends the writes waiting for their buckets now, and says what became of them. */
  flush(): Request<FlushReport>;
  /** Lists the store's bucket now and brings the local copy in line, whatever the refractory
   * period. */
  prefetch(store: string): Request<void>;
  /** Writes a checkpoint of a synced store that keeps them (`Options.checkpoints`): its every
   * name as of now, so that a cold reader starts there instead of listing them all. */
  checkpoint(store: string): Request<CheckpointReport>;
  /** Offline (default true): no request reaches a bucket; writes wait, reads answer from the cache. */
  setOffline(offline?: boolean): void;
  /** The requests made to buckets since the last reset (`reset`: start counting again). */
  syncStats(reset?: boolean): SyncStats;
  /** Writes the bucket refused (it holds another version), oldest first, until resolved. */
  refusedWrites(): Request<RefusedWrite[]>;
  /** Settles refused write `sequence` (and the others of its record): `discard` keeps the
   * bucket's version, `overwrite` sends the local one over it. */
  resolveRefused(sequence: number, resolution: 'discard' | 'overwrite'): Request<void>;
  /** Where the record under `key` stands with its bucket. */
  syncStatus(store: string, key: Key): Request<'synced' | 'pending' | 'refused' | 'unusable' | 'unknown' | 'local'>;
  /** Takes back the writes to `key` still waiting for the bucket, and the local record with them
   * (no delete is queued): for a caller that told its own client the write failed. Resolves with
   * how many were taken back. */
  withdrawPending(store: string, key: Key): Request<number>;
  /** Resolves after every other request of this database has settled. */
  close(): Request<void>;
}

/** YDN-DB's names: `new ydn.db.Storage(...)`, `ydn.db.KeyRange`, `new ydn.db.Key(store, id)`. */
export const ydn: {
  /** The `ydn.db` namespace. */
  db: {
    /** {@link Storage}. */
    Storage: typeof Storage;
    /** {@link KeyRange}. */
    KeyRange: typeof KeyRange;
    /** {@link DbKey}. */
    Key: typeof DbKey;
  };
};

/** The library's version. */
export const version: string;
