// Types of objstore-db for Node (checked against the module by test/types.test.mjs, and by
// tsc --strict over the tests and the example).

/** A key: numbers, strings, Dates, binary (Buffer/Uint8Array) and arrays of keys, in IndexedDB order. */
export type Key = number | string | Date | Uint8Array | Key[];

/** A plain JSON value: what a record is made of. */
export type Json = null | boolean | number | string | Json[] | { [field: string]: Json | undefined };

/** An Error with a stable code per status. */
export interface ObjstoreError extends Error {
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
  done(fn: (value: T) => unknown): Request<T>;
  fail(fn: (error: ObjstoreError) => unknown): Request<T>;
  always(fn: (valueOrError: T | ObjstoreError) => unknown): Request<T>;
}

export class KeyRange {
  private constructor(spec: object);
  readonly spec: object;
  static only(key: Key): KeyRange;
  static lowerBound(key: Key, open?: boolean): KeyRange;
  static upperBound(key: Key, open?: boolean): KeyRange;
  static bound(lower: Key, upper: Key, lowerOpen?: boolean, upperOpen?: boolean): KeyRange;
  /** Every string key beginning with `prefix`, or every array key whose leading elements are
   * the array prefix's. */
  static starts(prefix: string | Key[]): KeyRange;
}

/** A plain range object, as YDN-DB takes one. */
export interface RangeObject {
  lower?: Key;
  upper?: Key;
  lowerOpen?: boolean;
  upperOpen?: boolean;
}

export type Range = KeyRange | RangeObject;

/** A key in a named store (YDN-DB's `ydn.db.Key`). */
export class DbKey {
  constructor(store: string, id: Key, parent?: DbKey | { store: string; id: Key } | null);
  constructor(key: { store: string; id: Key; parent?: DbKey | { store: string; id: Key } | null });
  readonly store: string;
  readonly id: Key;
  readonly parent: DbKey | null;
  getStoreName(): string;
  getId(): Key;
  getParent(): DbKey | null;
  toJSON(): { store: string; id: Key; parent?: object };
}

export type EventKind = 'created' | 'updated' | 'deleted' | 'ready' | 'error' | 'fetched' | 'conflict' | 'offline' | 'flushed';

/** A change or sync event (YDN-DB's RecordEvent). */
export class RecordEvent {
  private constructor();
  readonly kind: EventKind;
  readonly type: EventKind;
  readonly name: 'RecordEvent';
  readonly store?: string | null;
  readonly key?: Key | null;
  readonly value?: any;
  readonly message?: string | null;
  getKey(): Key | null | undefined;
  getValue(): any;
  getStoreName(): string | null | undefined;
}

export type StorageEvent = RecordEvent;

/** The open's outcome (YDN-DB's ReadyEvent). */
export class ReadyEvent {
  private constructor();
  readonly kind: 'ready';
  readonly type: 'ready';
  readonly name: 'ReadyEvent';
  readonly value: { version: number; previousVersion: number | null };
  getVersion(): number;
  /** NaN for a new database. */
  getOldVersion(): number;
}

/** A failed open or a listener that threw (YDN-DB's ErrorEvent). */
export class ErrorEvent {
  private constructor();
  readonly kind: 'error';
  readonly type: 'error';
  readonly name: 'ErrorEvent';
  readonly message: string;
  readonly error: Error;
  getError(): Error;
}

/** One record under a cursor. */
export class Cursor<T = any> {
  private constructor();
  getValue(): T;
  getKey(): Key;
  getPrimaryKey(): Key;
  /** Replaces the record (its key must stay the same). */
  update(value: T): Request<unknown>;
  /** Removes the record. */
  clear(): Request<unknown>;
}

export type Op = '=' | '==' | '>' | '>=' | '<' | '<=' | 'starts' | '^';

export class Query<T = any> implements AsyncIterable<Cursor<T>> {
  private constructor();
  /** A condition; `op2, value2` bound the other side: where('age', '>', 1, '<=', 20). */
  where(field: string, op: Op, value: Json | Key, op2?: Op, value2?: Json | Key): Query<T>;
  and(field: string, op: Op, value: Json | Key, op2?: Op, value2?: Json | Key): Query<T>;
  order(...fields: (string | string[])[]): Query<T>;
  reverse(): Query<T>;
  /** unique() or unique(true): one record per order key; unique(false) turns it off. */
  unique(on?: boolean): Query<T>;
  /** select(field): list gives the field's values; select([fields]): objects; select('*'): records. */
  select(field: string): Query<any>;
  select(fields: string[]): Query<any>;
  select(...fields: string[]): Query<any>;
  /** The next `limit` (default 100) records; each call continues where the last ended. */
  list(limit?: number): Request<T[]>;
  count(): Request<number>;
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
  [Symbol.asyncIterator](): AsyncIterator<Cursor<T>>;
}

/** The record operations, outside a transaction (Storage) or inside one (Transaction), in
 * YDN-DB's forms. */
export class Operations {
  protected constructor();
  /** An array is many records (all or none), with a key each when `keys` is given. */
  put(store: string, values: (object | Json)[], keys?: Key[]): Request<Key[]>;
  put(store: string, value: object | Json, key?: Key): Request<Key>;
  add(store: string, values: (object | Json)[], keys?: Key[]): Request<Key[]>;
  add(store: string, value: object | Json, key?: Key): Request<Key>;
  /** `fresh`: ask the bucket before answering (a synced store otherwise answers from its cache). */
  get<T = any>(store: string, key: Key, options?: { fresh?: boolean }): Request<T | undefined>;
  remove(store: string, keyOrRange: Key | Range): Request<number>;
  remove(store: string, index: string, range: Range | Key): Request<number>;
  /** clear(store): 1; clear([stores]) and clear(): how many stores; clear(store, range): how many records. */
  clear(store?: string | string[] | null): Request<number>;
  clear(store: string, range: Range): Request<number>;
  count(stores: string[]): Request<number[]>;
  count(store: string, range?: Range | null): Request<number>;
  /** A null index before a range is the index form without an index. */
  count(store: string, index: string | null, range?: Range | Key | null, unique?: boolean): Request<number>;
  /** At most `limit` (default 100) primary keys. */
  keys(store: string, range?: Range | null, limit?: number, offset?: number, reverse?: boolean): Request<Key[]>;
  keys(
    store: string,
    index: string | null,
    range?: Range | Key | null,
    limit?: number,
    offset?: number,
    reverse?: boolean,
    unique?: boolean,
  ): Request<Key[]>;
  values<T = any>(keys: DbKey[]): Request<(T | undefined)[]>;
  values<T = any>(store: string, keys: Key[]): Request<(T | undefined)[]>;
  /** At most `limit` (default 100) records. */
  values<T = any>(store: string, range?: Range | null, limit?: number, offset?: number, reverse?: boolean): Request<T[]>;
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

export class Transaction extends Operations {
  private constructor();
  /** Rolls the transaction back; the run rejects. */
  abort(): void;
}

/** What run() returns: its request, which abort() rolls back. */
export interface RunRequest<R> extends Request<R> {
  abort(): void;
}

export interface SyncOptions {
  format: 'rest' | 'objstore' | 'objstore-meta';
  immutable?: boolean;
  prefetch?: 'meta' | 'full';
  prefetchRefractoryPeriod?: number;
  Options: { bucket: string; prefix?: string; endpoint?: string; [option: string]: unknown };
}

export interface StoreSchema {
  name: string;
  keyPath?: string | string[];
  autoIncrement?: boolean;
  indexes?: { name?: string; keyPath: string | string[]; unique?: boolean; multiEntry?: boolean }[];
  Sync?: SyncOptions;
}

export interface Schema {
  version?: number;
  stores: StoreSchema[];
}

export interface StorageOptions {
  mechanism?: 'sqlite' | 'memory';
  /** Sync blocks by store name, merged into the schema. */
  sync?: { [store: string]: SyncOptions };
  /** 'normal' (default): a commit survives the process crashing; 'full': an fsync per commit,
   * so it survives a machine crash too. */
  durability?: 'normal' | 'full';
  idleTransactionTimeoutMs?: number;
  queueCapacity?: number;
  syncThreads?: number;
}

/** Requests made to the buckets since the last reset, what they cost, and what is known of each
 * bucket's conditional writes (false: writes are checked with a GET first). */
export interface SyncStats {
  requests: { [method: string]: { [status: string]: number } };
  total: number;
  bytesSent: number;
  bytesReceived: number;
  /** At S3 Standard's request prices. */
  costUsd: number;
  /** The same requests at S3 Standard's, Cloudflare R2's and S3 Express One Zone's prices. */
  costsUsd: { s3Standard: number; r2: number; s3ExpressOneZone: number };
  conditionalWrites: { [bucket: string]: boolean };
}

/** A write the bucket refused (kept in refusedWrites) or the server failed on (held, still queued). */
export interface FlushedWrite {
  sequence: number;
  code: string;
  message: string;
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

export class Storage extends Operations {
  constructor(name: string, schema?: Schema | string | null, options?: StorageOptions);
  readonly name: string;
  /** Resolves once open with the schema as stored, and `warnings` (also given to
   * process.emitWarning as 'ObjstoreDbSyncWarning') when a bucket ignores conditional writes. */
  readonly ready: Request<{ version: number; previousVersion: number | null; stores: StoreSchema[]; warnings?: string[] }>;
  readonly closed: boolean;
  onReady(callback: (error?: ObjstoreError) => void): void;
  /** Runs `fn(tx)` in one transaction over `storeNames` (null: every store), after the one
   * open now: committed when it returns, aborted when it throws or on abort(). */
  run<R>(
    fn: (tx: Transaction) => R | Promise<R>,
    storeNames?: string | string[] | null,
    mode?: 'readonly' | 'readwrite',
  ): RunRequest<R>;
  getSchema(): Request<Schema>;
  /** The name it was opened with. */
  getName(): string;
  /** 'sqlite' or 'memory'. */
  getType(): 'sqlite' | 'memory';
  addEventListener(kind: 'ready', listener: (event: ReadyEvent) => void): this;
  addEventListener(kind: 'error', listener: (event: ErrorEvent) => void): this;
  addEventListener(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  removeEventListener(kind: EventKind | EventKind[], listener: (event: any) => void): this;
  on(kind: 'ready', listener: (event: ReadyEvent) => void): this;
  on(kind: 'error', listener: (event: ErrorEvent) => void): this;
  on(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  off(kind: EventKind | EventKind[], listener: (event: any) => void): this;
  flush(): Request<FlushReport>;
  prefetch(store: string): Request<void>;
  setOffline(offline?: boolean): void;
  syncStats(reset?: boolean): SyncStats;
  refusedWrites(): Request<{ sequence: number; store: string; key: Key; op: string; value: any; code: string; message: string }[]>;
  resolveRefused(sequence: number, resolution: 'discard' | 'overwrite'): Request<void>;
  syncStatus(store: string, key: Key): Request<'synced' | 'pending' | 'refused' | 'unusable' | 'unknown' | 'local'>;
  /** Takes back the writes to `key` still waiting for the bucket, and the local record with them
   * (no delete is queued): for a caller that told its own client the write failed. Resolves with
   * how many were taken back. */
  withdrawPending(store: string, key: Key): Request<number>;
  /** Resolves after every other request of this database has settled. */
  close(): Request<void>;
}

/** YDN-DB's names: `new ydn.db.Storage(...)`, `ydn.db.KeyRange`, `new ydn.db.Key(store, id)`. */
export const ydn: { db: { Storage: typeof Storage; KeyRange: typeof KeyRange; Key: typeof DbKey } };

export const version: string;
