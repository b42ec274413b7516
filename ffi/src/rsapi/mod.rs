//! The safe Rust API under the C ABI, and the one the Python and Node wrappers call. It is
//! request-oriented:
//! - it takes and gives the engine's types (keys, key ranges, scan options, schemas, filters,
//!   flush reports, refused writes, sync statuses, counts; records as `serde_json::Value`s):
//!   JSON is the skins' business (`crate::json`, which turns results into JSON too);
//! - every request gets a [`RequestId`] and completes exactly once through its callback; reads
//!   answer in the [`Encoding`] asked for (values, or the records' stored JSON text, which a
//!   skin passes on without a decode and an encode), other requests with the engine's type;
//!   [`Db::cancel`] stops a queued request before it runs, and a long one (a fetch, a prefetch,
//!   a flush) between batches and between HTTP requests;
//! - arguments are checked at once: a bad one is an `Err` from the call, with no callback;
//! - reads have `*_now` twins (`get_now`, `values_of_now`, `read_scan_now`, a query's
//!   `list_now` / `count_now`) that answer on the caller's thread when the database is idle and
//!   the store is not synced, `None` otherwise (then make the request): no callback, no hop;
//! - cursors are pulled ([`Cursor::next`] gives a batch), each step an ordinary request, so a
//!   caller may await anything between two steps;
//! - a request outside an open explicit transaction waits for it to end (a `begin` too);
//! - [`Db::close`]'s callback is the last callback the database makes; a request after close
//!   is refused by the call (`Closed`); dropping the last handle closes without waiting.
//!
//! Synced stores: the database is core's [`SyncedDatabase`], which holds the sync policy.
//! Writes return the local outcome and are sent by the sync agent on threads of its own; a
//! read serves the local copy by the read policy ([`Freshness::Fresh`] asks the bucket before
//! answering).

mod cursor;
mod encoding;
mod options;
mod txops;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use objstore_db_core::{
    sql, Database, Error, Event, EventFilter, ExecutorOptions, FlushReport, Key, KeyRange, Mode,
    OpenOptions as CoreOpen, Query, ReadScope, RefusedWrite, Resolution, Result, ScanOptions, Schema, Stats,
    SyncStatus, SyncedDatabase, Token, Tx, TxId,
};
use serde_json::Value;

pub use cursor::{Cursor, QueryHandle};
pub use encoding::{AsText, AsValue, Encoding};
pub use objstore_db_core::{CheckpointReport, Freshness, Record};
pub use options::OpenOptions;
pub use txops::{ReadKind, TxOps};

/// Names one request, for [`Db::cancel`].
pub type RequestId = u64;

/// Run a request on its own (`None`) or inside an explicit transaction.
pub type Within = Option<TxId>;

type Canceller = Box<dyn FnOnce(Error) + Send>;

/// Requests not yet completed, so that close can complete them (as cancelled) before its own
/// callback, and `cancel` can reach them.
#[derive(Default)]
struct Requests {
    pending: Mutex<HashMap<RequestId, (Token, Canceller)>>,
    next: AtomicU64,
}

/// One request's way back to its caller: completes at most once, whoever gets there first
/// (the request itself, or close cancelling it).
type Slot<T> = Arc<Mutex<Option<Box<dyn FnOnce(Result<T>) + Send>>>>;

struct Reply<T> {
    id: RequestId,
    slot: Slot<T>,
    token: Token,
    inner: Arc<Inner>,
}

impl<T: Send + 'static> Reply<T> {
    fn deliver(self, result: Result<T>) {
        // Callbacks run under the read side of the gate; close takes the write side, so no
        // callback is running (or can start) when close's own callback fires.
        let _gate = self.inner.gate.read().unwrap_or_else(|p| p.into_inner());
        self.inner.requests.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
        let done = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(done) = done {
            done(result);
        }
    }
}

struct Inner {
    db: SyncedDatabase,
    name: String,
    requests: Requests,
    gate: RwLock<()>,
}

/// What an open completes with.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The schema as stored (after this open's migration, if any).
    pub schema: Schema,
    /// The schema version before this open: `None` for a new database.
    pub previous_version: Option<u64>,
    /// Why a bucket is known to ignore conditional writes, one text each (the bindings raise
    /// them as their language's warnings); empty when none is.
    pub warnings: Vec<String>,
}

/// An open database. Cheap to clone; closed by `close`, or when the last clone goes.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

impl Db {
    /// Opens on a worker thread. Argument errors are returned at once; the open itself
    /// completes through `done` with [`Opened`]: the schema as stored, the version before this
    /// open, and warnings when a bucket is known to ignore conditional writes.
    pub fn open(
        name: &str,
        schema: Option<Schema>,
        options: &OpenOptions,
        done: impl FnOnce(Result<Opened>) + Send + 'static,
    ) -> Result<Db> {
        let executor = ExecutorOptions {
            open: CoreOpen { mechanism: options.mechanism, durability: options.durability, ..CoreOpen::default() },
            idle_transaction_timeout: options.idle_transaction_timeout,
            queue_capacity: options.queue_capacity,
        };
        let opened: Arc<Mutex<Option<Opened>>> = Arc::default();
        let seen = opened.clone();
        let db = SyncedDatabase::open(
            name,
            schema,
            executor,
            options.sync_threads,
            move |db, warnings| {
                let opened = Opened { schema: db.schema().clone(), previous_version: db.previous_version(), warnings };
                *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(opened);
                Ok(())
            },
            // An open that succeeded ran `prepare` above, which left what it opened.
            move |r| {
                done(r.and_then(|()| {
                    let opened = opened.lock().unwrap_or_else(|p| p.into_inner()).take();
                    opened.ok_or_else(|| Error::Internal("an open succeeded without its report".into()))
                }))
            },
        )?;
        let inner = Inner { db, name: name.to_string(), requests: Requests::default(), gate: RwLock::new(()) };
        Ok(Db { inner: Arc::new(inner) })
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn reply<T: Send + 'static>(&self, done: impl FnOnce(Result<T>) + Send + 'static) -> Reply<T> {
        let id = self.inner.requests.next.fetch_add(1, Ordering::Relaxed) + 1;
        let slot: Slot<T> = Arc::new(Mutex::new(Some(Box::new(done))));
        let token = Token::default();
        let cancel_slot = slot.clone();
        let canceller: Canceller = Box::new(move |error| {
            if let Some(done) = cancel_slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                done(Err(error));
            }
        });
        self.inner.requests.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (token.clone(), canceller));
        Reply { id, slot, token, inner: self.inner.clone() }
    }

    /// The call's answer for a request whose submission failed with `error`: the error, and no
    /// callback — unless a close running meanwhile already called back (its sweep of pending
    /// requests came first); then the request counts as made, so the caller hears once.
    fn withdraw<T>(&self, id: RequestId, slot: &Slot<T>, error: Error) -> Result<RequestId> {
        self.inner.requests.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        match slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(_) => Err(error),
            None => Ok(id),
        }
    }

    /// Submits `work` on the worker as part of transaction `within` (or alone), delivering to
    /// `reply`; `work` gets the database and reaches the transaction through it.
    fn submit<T: Send + 'static>(
        &self,
        within: Within,
        reply: Reply<T>,
        work: impl FnOnce(&mut Database) -> Result<T> + Send + 'static,
    ) -> Result<RequestId> {
        let (id, token, slot) = (reply.id, reply.token.clone(), reply.slot.clone());
        let submitted = self.inner.db.database().submit_as(within, token, work, move |r| reply.deliver(r));
        match submitted {
            Ok(()) => Ok(id),
            Err(e) => self.withdraw(id, &slot, e),
        }
    }

    /// A write: on its own it commits in a transaction over `stores`; afterwards the agent is
    /// asked to send what it queued.
    fn write<T: Send + 'static>(
        &self,
        within: Within,
        stores: Vec<String>,
        work: impl FnOnce(&mut Tx) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<RequestId> {
        let db = self.inner.db.clone();
        let done = move |r: Result<T>| {
            if r.is_ok() && within.is_none() {
                db.wrote();
            }
            done(r)
        };
        let reply = self.reply(done);
        self.submit(within, reply, move |db| match within {
            Some(tx) => work(&mut db.transaction(tx)?),
            None => db.run(&stores.iter().map(String::as_str).collect::<Vec<_>>(), Mode::ReadWrite, work),
        })
    }

    /// A read. Inside a transaction it reads the local copy; on its own it reads by the sync
    /// read policy (see [`SyncedDatabase::read`]).
    fn read<T, W>(
        &self,
        within: Within,
        scope: ReadScope,
        work: W,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<RequestId>
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx) -> Result<T> + Send + 'static,
    {
        let reply = self.reply(done);
        if let Some(tx) = within {
            return self.submit(within, reply, move |db| work(&mut db.transaction(tx)?));
        }
        let (id, token, slot) = (reply.id, reply.token.clone(), reply.slot.clone());
        match self.inner.db.read(scope, token, work, move |r| reply.deliver(r)) {
            Ok(()) => Ok(id),
            Err(e) => self.withdraw(id, &slot, e),
        }
    }

    /// A read answered now, on the caller's thread, when the database is idle and the read
    /// touches no synced store (see [`SyncedDatabase::read_now`]); `None` when it must be made
    /// as a request instead. It holds the close gate: close's callback waits for it.
    fn read_now<T>(&self, scope: &ReadScope, work: impl FnOnce(&mut Tx) -> Result<T>) -> Option<Result<T>> {
        self.holding_gate(|| self.inner.db.read_now(scope, work).ok()).flatten()
    }

    /// Runs `f` holding the read side of the close gate, so that close's callback waits for it
    /// (a C callback delivered inside a call runs there). Never waits for the gate: `None` when
    /// close is taking it (a caller that already holds it, inside a callback, must not block).
    pub(crate) fn holding_gate<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _gate = match self.inner.gate.try_read() {
            Ok(gate) => gate,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(f())
    }

    // ----- records ------------------------------------------------------------------------------

    /// Writes a record (a [`Value`], or JSON text as a [`Record`]: a large record given as
    /// text is stored and sent as it is, never read into a tree unless its store needs one),
    /// replacing any under its key; the result is the key it was written under (the one
    /// given, the record's own, or a generated one).
    pub fn put(
        &self,
        within: Within,
        store: &str,
        record: impl Into<Record>,
        key: Option<Key>,
        done: impl FnOnce(Result<Key>) + Send + 'static,
    ) -> Result<RequestId> {
        let (name, record) = (store.to_string(), record.into());
        self.write(within, vec![name.clone()], move |tx| tx.put(&name, record, key), done)
    }

    /// Like `put`, but an existing key or a unique-index clash is a constraint error; the
    /// result is the key written.
    pub fn add(
        &self,
        within: Within,
        store: &str,
        record: impl Into<Record>,
        key: Option<Key>,
        done: impl FnOnce(Result<Key>) + Send + 'static,
    ) -> Result<RequestId> {
        let (name, record) = (store.to_string(), record.into());
        self.write(within, vec![name.clone()], move |tx| tx.add(&name, record, key), done)
    }

    /// Writes many records in one transaction (all or none); the result is their keys, in the
    /// order of the records.
    pub fn put_many(
        &self,
        within: Within,
        store: &str,
        records: impl IntoIterator<Item = impl Into<Record>>,
        done: impl FnOnce(Result<Vec<Key>>) + Send + 'static,
    ) -> Result<RequestId> {
        self.write_many(within, store, records, None, false, done)
    }

    /// [`Db::put_many`] with a key per record (`keys`, for a store whose keys are not in its
    /// records) and, with `create`, as `add`: a record whose key exists fails the batch,
    /// naming it. The result is the keys written, in the order of the records.
    pub fn write_many(
        &self,
        within: Within,
        store: &str,
        records: impl IntoIterator<Item = impl Into<Record>>,
        keys: Option<Vec<Key>>,
        create: bool,
        done: impl FnOnce(Result<Vec<Key>>) + Send + 'static,
    ) -> Result<RequestId> {
        let records: Vec<Record> = records.into_iter().map(Into::into).collect();
        if let Some(keys) = keys.as_ref().filter(|k| k.len() != records.len()) {
            return Err(Error::InvalidArgument(format!(
                "a batch of {} records was given {} keys (one per record)",
                records.len(),
                keys.len()
            )));
        }
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| tx.write_many(&name, records, keys, create), done)
    }

    /// The record under `key`, or null, in `encoding`.
    pub fn get<E: Encoding>(
        &self,
        within: Within,
        store: &str,
        key: Key,
        read: Freshness,
        encoding: E,
        done: impl FnOnce(Result<E::Out>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        let scope = ReadScope::keys(store, vec![key.clone()], read);
        self.read(within, scope, move |tx| encoding.record(tx, &name, &key), done)
    }

    /// [`Db::get`] answered now on the caller's thread, when it can be: with nothing queued
    /// or running, no transaction open and `store` not synced. `None`: make the request.
    pub fn get_now<E: Encoding>(&self, store: &str, key: &Key, read: Freshness, encoding: E) -> Option<Result<E::Out>> {
        let scope = ReadScope::keys(store, vec![key.clone()], read);
        self.read_now(&scope, |tx| encoding.record(tx, store, key))
    }

    /// The records under `keys` as an array, null where there is none, in `encoding`.
    pub fn values_of<E: Encoding>(
        &self,
        within: Within,
        store: &str,
        keys: Vec<Key>,
        read: Freshness,
        encoding: E,
        done: impl FnOnce(Result<E::Out>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        let scope = ReadScope::keys(store, keys.clone(), read);
        self.read(within, scope, move |tx| encoding.records(tx, &name, &keys), done)
    }

    /// [`Db::values_of`] answered now, when it can be (see [`Db::get_now`]).
    pub fn values_of_now<E: Encoding>(
        &self,
        store: &str,
        keys: &[Key],
        read: Freshness,
        encoding: E,
    ) -> Option<Result<E::Out>> {
        let scope = ReadScope::store(store, read);
        self.read_now(&scope, |tx| encoding.records(tx, store, keys))
    }

    /// Removes by key or key range; the result is how many records went.
    pub fn remove(
        &self,
        within: Within,
        store: &str,
        range: KeyRange,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| tx.remove(&name, &range), done)
    }

    /// Removes every record of `store`; the result is nothing (no count).
    pub fn clear(
        &self,
        within: Within,
        store: &str,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| tx.clear(&name), done)
    }

    /// Counts, lists the keys of, or reads the records of a store (or an index of it), in
    /// `encoding`.
    #[allow(clippy::too_many_arguments)]
    pub fn read_scan<E: Encoding>(
        &self,
        within: Within,
        store: &str,
        kind: ReadKind,
        scan: ScanOptions,
        read: Freshness,
        encoding: E,
        done: impl FnOnce(Result<E::Out>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        let scope = ReadScope::scan(store, scan.clone(), read);
        self.read(within, scope, move |tx| encoding.scan(tx, &name, kind, &scan), done)
    }

    /// [`Db::read_scan`] answered now, when it can be (see [`Db::get_now`]).
    pub fn read_scan_now<E: Encoding>(
        &self,
        store: &str,
        kind: ReadKind,
        scan: &ScanOptions,
        read: Freshness,
        encoding: E,
    ) -> Option<Result<E::Out>> {
        let scope = ReadScope::store(store, read);
        self.read_now(&scope, |tx| encoding.scan(tx, store, kind, scan))
    }

    /// Runs SQL with bound parameters: `{"rows": [...]}` for a SELECT, `{"changed": n}`
    /// otherwise. The store and the mode come from the statement.
    pub fn sql(
        &self,
        within: Within,
        text: &str,
        params: Vec<Value>,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let (store, mode) = sql::target(text, &params)?;
        let text = text.to_string();
        let run = move |tx: &mut Tx| txops::run_sql(tx, &text, &params);
        if mode == Mode::ReadWrite {
            self.write(within, vec![store], run, done)
        } else {
            self.read(within, ReadScope::store(&store, Freshness::Cached), run, done)
        }
    }

    /// A query whose `list` pages continue call to call.
    pub fn query(&self, query: Query) -> Result<QueryHandle> {
        QueryHandle::new(self.clone(), query)
    }

    // ----- transactions -------------------------------------------------------------------------

    /// Starts an explicit transaction over `stores` (a name or an array of names); the result
    /// is its id. It starts once the transaction open now (if any) ends; until it ends,
    /// requests outside it wait.
    pub fn begin(
        &self,
        stores: Vec<String>,
        mode: Mode,
        done: impl FnOnce(Result<TxId>) + Send + 'static,
    ) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, move |db| db.begin(&stores.iter().map(String::as_str).collect::<Vec<_>>(), mode))
    }

    pub fn commit(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        let db = self.inner.db.clone();
        let reply = self.reply(move |r: Result<()>| {
            if r.is_ok() {
                db.wrote();
            }
            done(r)
        });
        self.submit(Some(tx), reply, move |db| db.commit(tx))
    }

    /// Runs `body` on the worker inside one transaction over `stores`: committed when it
    /// returns Ok, rolled back otherwise. For callers whose body is synchronous (C); async
    /// callers hold an explicit transaction (`begin`) across their awaits instead.
    pub fn run_body(
        &self,
        stores: Vec<String>,
        mode: Mode,
        body: impl FnOnce(&mut TxOps) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<RequestId> {
        let work = move |tx: &mut Tx| body(&mut TxOps { tx });
        match mode {
            Mode::ReadWrite => self.write(None, stores, work, done),
            Mode::ReadOnly => {
                let reply = self.reply(done);
                self.submit(None, reply, move |db| {
                    db.run(&stores.iter().map(String::as_str).collect::<Vec<_>>(), Mode::ReadOnly, work)
                })
            }
        }
    }

    pub fn abort(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(Some(tx), reply, move |db| db.abort(tx))
    }

    // ----- events -------------------------------------------------------------------------------

    /// Events that pass `filter`, delivered to `listener` on the worker thread. The result is
    /// the subscription's id.
    pub fn subscribe(
        &self,
        filter: EventFilter,
        listener: impl Fn(&Event) + Send + 'static,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let reply = self.reply(done);
        let forward = Box::new(move |e: &Event| listener(e));
        self.submit(None, reply, move |db| Ok(db.subscribe(filter, forward)))
    }

    pub fn unsubscribe(&self, id: u64, done: impl FnOnce(Result<bool>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, move |db| Ok(db.unsubscribe(id)))
    }

    /// The schema as stored, with default index names filled in.
    pub fn schema(&self, done: impl FnOnce(Result<Schema>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, |db| Ok(db.schema().clone()))
    }

    // ----- sync ---------------------------------------------------------------------------------

    /// Runs `job` on the sync agent's threads (see [`SyncedDatabase::agent_job`]).
    fn agent_job<T: Send + 'static>(
        &self,
        done: impl FnOnce(Result<T>) + Send + 'static,
        job: impl FnOnce(&SyncedDatabase, Token, Box<dyn FnOnce(Result<T>) + Send>) -> Result<()>,
    ) -> Result<RequestId> {
        let reply = self.reply(done);
        let (id, token, slot) = (reply.id, reply.token.clone(), reply.slot.clone());
        match job(&self.inner.db, token, Box::new(move |r| reply.deliver(r))) {
            Ok(()) => Ok(id),
            Err(e) => self.withdraw(id, &slot, e),
        }
    }

    /// Sends the outbox now; the result is core's [`FlushReport`]. The background sender sends
    /// writes too: its `sent`, `rejected` and `held` (writes by sequence number, each with its
    /// error) are what this flush did; `pending` (writes still waiting) and `refused` (refused
    /// writes awaiting `resolve`, whoever met the refusal) count every write; `offline` and
    /// `blocked` say why sending stopped. Refused writes are kept (see `refused_writes`); held
    /// ones stay queued; an unreachable bucket is reported, not an error.
    pub fn flush(&self, done: impl FnOnce(Result<FlushReport>) + Send + 'static) -> Result<RequestId> {
        self.agent_job(done, |db, token, done| db.flush(token, done))
    }

    /// Lists a synced store now and brings its local copy in line: new and changed objects are
    /// fetched, vanished ones removed, whatever its `prefetch` setting or refractory period.
    pub fn prefetch(&self, store: &str, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        self.agent_job(done, |db, token, done| db.prefetch(store, token, done))
    }

    /// Writes a checkpoint of a synced store that keeps them (`Options.checkpoints`): its
    /// every name as of now, so that a cold reader starts there instead of listing them all.
    /// The result is core's [`CheckpointReport`]: the manifest's name, the position (the
    /// bucket's clock when the listing began), the names, the shards and their bytes.
    pub fn checkpoint(
        &self,
        store: &str,
        done: impl FnOnce(Result<CheckpointReport>) + Send + 'static,
    ) -> Result<RequestId> {
        self.agent_job(done, |db, token, done| db.checkpoint(store, token, done))
    }

    /// Offline, the agent makes no requests: reads serve the cache, writes wait in the outbox.
    pub fn set_offline(&self, offline: bool) -> Result<()> {
        self.inner.db.set_offline(offline);
        Ok(())
    }

    /// The requests made to buckets so far, as core's [`Stats`]: counts by kind and status,
    /// bytes each way (and so the cost), and what is known of each bucket's conditional writes.
    /// `reset` starts the counts again from zero after this report.
    pub fn sync_stats(&self, reset: bool) -> Stats {
        self.inner.db.stats(reset)
    }

    /// The writes the bucket refused, kept until resolved, oldest first: each a
    /// [`RefusedWrite`] with its sequence number (for `resolve`), the write (store, object key,
    /// operation, value) and the error's code name and message.
    pub fn refused_writes(&self, done: impl FnOnce(Result<Vec<RefusedWrite>>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, |db| db.refused_writes())
    }

    /// Resolves refused write `sequence`: `"discard"` (the bucket's version wins) or
    /// `"overwrite"` (sent again over whatever the bucket holds).
    pub fn resolve(
        &self,
        sequence: u64,
        resolution: Resolution,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<RequestId> {
        let db = self.inner.db.clone();
        let reply = self.reply(move |r: Result<()>| {
            db.wrote();
            done(r)
        });
        self.submit(None, reply, move |db| db.resolve_refused(sequence, resolution))
    }

    /// The sync state of one record, a [`SyncStatus`]: `Local` (the store is not synced),
    /// `Pending`, `Refused`, `Synced`, `Unusable` or `Unknown`.
    pub fn sync_status(
        &self,
        store: &str,
        key: Key,
        done: impl FnOnce(Result<SyncStatus>) + Send + 'static,
    ) -> Result<RequestId> {
        let store = store.to_string();
        let reply = self.reply(done);
        self.submit(None, reply, move |db| db.sync_status(&store, &key))
    }

    /// Takes back the writes to `key` still waiting in the outbox, and the local record with
    /// them (no delete is queued): for a caller that reported to its own client that the write
    /// failed, so that it does not land later. The result is how many writes were taken back. A
    /// send already under way may still land.
    pub fn withdraw_pending(
        &self,
        store: &str,
        key: Key,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let store = store.to_string();
        let reply = self.reply(done);
        self.submit(None, reply, move |db| db.withdraw_pending(&store, &key))
    }

    // ----- lifetime -----------------------------------------------------------------------------

    /// Cancels request `id`: a queued one completes with `Cancelled` without running, a running
    /// fetch, prefetch or flush stops at its next batch or HTTP request. Returns whether the
    /// request was still pending.
    pub fn cancel(&self, id: RequestId) -> bool {
        match self.inner.requests.pending.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
            Some((token, _)) => {
                token.cancel();
                // A request waiting for an open transaction completes now, not when it ends.
                self.inner.db.database().wake();
                true
            }
            None => false,
        }
    }

    /// Closes: queued requests and the agent's work complete with `Cancelled`, an open
    /// transaction rolls back, the file closes, and then `done` fires — the last callback of
    /// this database. A second close is `Closed` (and its `done` is never called).
    pub fn close(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        let inner = self.inner.clone();
        self.inner.db.close(move |r| {
            let _gate = inner.gate.write().unwrap_or_else(|p| p.into_inner());
            let pending: Vec<(RequestId, (Token, Canceller))> =
                inner.requests.pending.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
            for (_, (token, cancel)) in pending {
                token.cancel();
                cancel(Error::Cancelled(format!("database {:?} closed first", inner.name)));
            }
            done(r)
        })
    }

    pub fn is_closed(&self) -> bool {
        self.inner.db.database().is_closed()
    }

    /// Closes if needed and waits until the worker and the agent's threads have ended, for
    /// callers that must leave no thread behind (a C program about to exit). Never call it
    /// from a callback; bindings with finalizers use `close` and drop instead.
    pub fn close_and_join(&self) {
        let _ = self.close(|_| {});
        self.inner.db.close_and_join();
    }
}
