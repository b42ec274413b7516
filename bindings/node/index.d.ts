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
    | 'BUSY'
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
  /** Every string key beginning with `prefix`. */
  static starts(prefix: string): KeyRange;
}

export type EventKind = 'created' | 'updated' | 'deleted' | 'ready' | 'error' | 'fetched' | 'conflict' | 'offline' | 'flushed';

export interface StorageEvent {
  kind: EventKind;
  store?: string | null;
  key?: Key | null;
  value?: any;
  message?: string | null;
  error?: Error;
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

export type Op = '=' | '==' | '>' | '>=' | '<' | '<=' | '!=' | 'starts' | '^';

export class Query<T = any> implements AsyncIterable<Cursor<T>> {
  private constructor();
  where(field: string, op: Op, value: Json | Key): Query<T>;
  and(field: string, op: Op, value: Json | Key): Query<T>;
  order(...fields: string[]): Query<T>;
  reverse(): Query<T>;
  unique(): Query<T>;
  select(...fields: string[]): Query<any>;
  /** The next `n` records; each call continues where the last ended. */
  list(n: number): Request<T[]>;
  count(): Request<number>;
  explain(): Request<string>;
  /** Merges a JSON merge patch into every match; resolves with how many changed. */
  patch(patch: object): Request<number>;
  /** Removes every match; resolves with how many went. */
  delete(): Request<number>;
  /** Streams every match to `callback`; return false (or a promise of it) to stop. */
  open(callback: (cursor: Cursor<T>) => unknown, mode?: 'readonly' | 'readwrite', batch?: number): Request<number>;
  [Symbol.asyncIterator](): AsyncIterator<Cursor<T>>;
}

/** The record operations, outside a transaction (Storage) or inside one (Transaction). */
export class Operations {
  protected constructor();
  put(store: string, value: object, key?: Key): Request<Key>;
  put(store: string, values: object[]): Request<Key[]>;
  add(store: string, value: object, key?: Key): Request<Key>;
  get<T = any>(store: string, key: Key): Request<T | undefined>;
  remove(store: string, keyOrRange: Key | KeyRange): Request<number>;
  clear(store: string): Request<void>;
  count(store: string, range?: KeyRange | null): Request<number>;
  count(store: string, index: string, range?: KeyRange | Key | null): Request<number>;
  keys(store: string, range?: KeyRange | null, limit?: number, offset?: number, reverse?: boolean): Request<Key[]>;
  keys(
    store: string,
    index: string | null,
    range?: KeyRange | Key | null,
    limit?: number,
    offset?: number,
    reverse?: boolean,
    unique?: boolean,
  ): Request<Key[]>;
  values<T = any>(store: string, keys: Key[]): Request<(T | undefined)[]>;
  values<T = any>(store: string, range?: KeyRange | null, limit?: number, offset?: number, reverse?: boolean): Request<T[]>;
  values<T = any>(
    store: string,
    index: string,
    range?: KeyRange | Key | null,
    limit?: number,
    offset?: number,
    reverse?: boolean,
    unique?: boolean,
  ): Request<T[]>;
  from<T = any>(store: string): Query<T>;
  /** Rows of a SELECT, or how many records another statement changed. */
  executeSql(sql: string, params?: (Json | Key)[]): Request<any[] | number>;
}

export class Transaction extends Operations {
  private constructor();
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
  costUsd: number;
  conditionalWrites: { [bucket: string]: boolean };
}

/** A write the bucket refused (kept in refusedWrites) or the server failed on (held, still queued). */
export interface FlushedWrite {
  sequence: number;
  code: string;
  message: string;
}

export interface FlushReport {
  sent: number;
  pending: number;
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
  /** Runs `fn(tx)` in one transaction: committed when it returns, aborted when it throws. */
  run<R>(fn: (tx: Transaction) => R | Promise<R>, storeNames: string | string[], mode?: 'readonly' | 'readwrite'): Request<R>;
  getSchema(): Request<Schema>;
  addEventListener(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  removeEventListener(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  on(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
  off(kind: EventKind | EventKind[], listener: (event: StorageEvent) => void): this;
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

export const version: string;
