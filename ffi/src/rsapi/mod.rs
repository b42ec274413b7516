//! The safe Rust API under the C ABI, and the one the Python and Node wrappers call. It is
//! request-oriented:
//! - every request gets a [`RequestId`] and completes exactly once through its callback, with
//!   its result as a `serde_json::Value` (a binding converts once, to its own objects);
//!   [`Db::cancel`] stops a queued request before it runs, and a long one (a fetch, a prefetch,
//!   a flush) between batches and between HTTP requests;
//! - arguments are checked at once: a bad one is an `Err` from the call, with no callback;
//! - cursors are pulled ([`Cursor::next`] gives a batch), each step an ordinary request, so a
//!   caller may await anything between two steps;
//! - a request outside an open explicit transaction waits for it to end (a `begin` too);
//! - [`Db::close`]'s callback is the last callback the database makes; a request after close
//!   is refused by the call (`Closed`); dropping the last handle closes without waiting.
//!
//! Synced stores: writes return the local outcome and are sent by the sync agent on threads of
//! its own. A read serves the local copy: a record not held at all is fetched first, a store
//! that prefetches and never did in this process is listed first, and anything else is
//! revalidated in the background (stale-while-revalidate); [`Read::fresh`] asks the bucket
//! before answering. With a cached copy, a bucket that is down never fails a plain read.

mod args;
mod cursor;
mod txops;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use objstore_db_core::sync::runner::Remote;
use objstore_db_core::sync::{Agent, Freshness, Runner, Token};
use objstore_db_core::{
    sql, AsyncDatabase, Database, Error, ExecutorOptions, Key, Mode, OpenOptions as CoreOpen, Resolution, Result,
    ScanOptions, Tx, TxId,
};
use serde_json::{json, Value};

pub use args::{parse, stores, OpenOptions};
pub use cursor::{Cursor, QueryHandle};
pub use txops::{ReadKind, TxOps};

/// Names one request, for [`Db::cancel`].
pub type RequestId = u64;

/// Run a request on its own (`None`) or inside an explicit transaction.
pub type Within = Option<TxId>;

/// How fresh a read of a synced store must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Read {
    /// Ask the bucket before answering (a conditional GET or a listing); an unreachable
    /// bucket is then the read's error.
    pub fresh: bool,
}

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
    exec: Arc<AsyncDatabase>,
    name: String,
    /// The sync agent, set on the worker right after open when the schema has synced stores.
    agent: Arc<OnceLock<Arc<Agent>>>,
    runner: OnceLock<Runner>,
    sync_threads: usize,
    requests: Requests,
    gate: RwLock<()>,
}

impl Inner {
    fn runner(&self) -> Option<&Runner> {
        let agent = self.agent.get()?;
        if let Some(runner) = self.runner.get() {
            return Some(runner);
        }
        let started = Runner::start(agent.clone(), &self.exec, self.sync_threads).ok()?;
        Some(self.runner.get_or_init(|| started))
    }
}

/// An open database. Cheap to clone; closed by `close`, or when the last clone goes.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

/// What a read of a synced store needs from the agent before it can answer.
enum Need {
    Fetch {
        store: String,
        keys: Vec<Key>,
        freshness: Freshness,
    },
    /// `first_per_pair`: the read takes only the first name of each pair (see
    /// `Agent::reads_first_per_pair`), so a cold store lists only those.
    /// `asked`: when the read found it needed a listing (one that completes after that serves
    /// it too).
    Prefetch {
        store: String,
        cached: bool,
        first_per_pair: bool,
        asked: std::time::Instant,
    },
}

/// A first step's outcome: the answer, or the work to run again after the agent's step.
enum Outcome<T, W> {
    Done(T),
    Later(W, Need),
}

impl Db {
    /// Opens on a worker thread. Argument errors are returned at once; the open itself
    /// completes through `done` with `{"version", "stores"}` of the schema as stored,
    /// `"previousVersion"` (the version before this open, `null` for a new database), and
    /// `"warnings"` when a bucket is known to ignore conditional writes (the bindings raise
    /// them as their language's warnings).
    pub fn open(
        name: &str,
        schema: Option<&Value>,
        options: &OpenOptions,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<Db> {
        let schema = args::schema(schema)?;
        let executor = ExecutorOptions {
            open: CoreOpen { mechanism: options.mechanism, durability: options.durability },
            idle_transaction_timeout: options.idle_transaction_timeout,
            queue_capacity: options.queue_capacity,
        };
        let agent: Arc<OnceLock<Arc<Agent>>> = Arc::default();
        let slot = agent.clone();
        let opened: Arc<Mutex<Option<Value>>> = Arc::default();
        let seen = opened.clone();
        let exec = AsyncDatabase::open_with(
            name,
            schema,
            executor,
            move |db| {
                let mut opened = parse("schema", &db.schema().to_json())?;
                opened["previousVersion"] = json!(db.previous_version());
                if Agent::is_needed(db.schema()) {
                    let agent = Agent::new(db)?;
                    let warnings = agent.warnings();
                    if !warnings.is_empty() {
                        opened["warnings"] = json!(warnings);
                    }
                    let _ = slot.set(Arc::new(agent));
                }
                *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(opened);
                Ok(())
            },
            move |r| done(r.map(|()| opened.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or(Value::Null))),
        )?;
        let inner = Inner {
            exec: Arc::new(exec),
            name: name.to_string(),
            agent,
            runner: OnceLock::new(),
            sync_threads: options.sync_threads,
            requests: Requests::default(),
            gate: RwLock::new(()),
        };
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
        let submitted = self.inner.exec.submit_as(within, token, work, move |r| reply.deliver(r));
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
        let inner = self.inner.clone();
        let done = move |r: Result<T>| {
            if r.is_ok() && within.is_none() {
                if let Some(runner) = inner.runner() {
                    runner.flush_soon();
                }
            }
            done(r)
        };
        let reply = self.reply(done);
        self.submit(within, reply, move |db| match within {
            Some(tx) => work(&mut db.transaction(tx)?),
            None => db.run(&stores.iter().map(String::as_str).collect::<Vec<_>>(), Mode::ReadWrite, work),
        })
    }

    /// A read. Inside a transaction it reads the local copy; on its own, `need` says (on the
    /// worker, from the local state) whether the agent must act first. Then the agent acts on
    /// its threads, and the read runs again.
    fn read<T, W>(
        &self,
        within: Within,
        stores: Vec<String>,
        read: Read,
        keys: Option<Vec<Key>>,
        work: W,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<RequestId>
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx) -> Result<T> + Send + 'static,
    {
        self.read_scanning(within, stores, read, keys, None, work, done)
    }

    /// As [`Db::read`], for a scan whose shape may spare the agent a full listing.
    #[allow(clippy::too_many_arguments)]
    fn read_scanning<T, W>(
        &self,
        within: Within,
        stores: Vec<String>,
        read: Read,
        keys: Option<Vec<Key>>,
        scan: Option<ScanOptions>,
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
        let inner = self.inner.clone();
        let first = move |db: &mut Database| -> Result<Outcome<T, W>> {
            if let Some(agent) = inner.agent.get() {
                if let Some(need) = need(agent, db, &stores, keys.as_deref(), scan.as_ref(), read)? {
                    return Ok(Outcome::Later(work, need));
                }
                revalidate_later(&inner, agent, &stores, keys.as_deref());
            }
            let names: Vec<&str> = stores.iter().map(String::as_str).collect();
            db.run(&names, Mode::ReadOnly, work).map(Outcome::Done)
        };
        let (id, token, slot) = (reply.id, reply.token.clone(), reply.slot.clone());
        let db = self.clone();
        let later = token.clone();
        let deliver = move |outcome: Result<Outcome<T, W>>| match outcome {
            Ok(Outcome::Done(value)) => reply.deliver(Ok(value)),
            Err(e) => reply.deliver(Err(e)),
            Ok(Outcome::Later(work, need)) => db.after_agent(reply, later, work, need),
        };
        match self.inner.exec.submit_as(None, token, first, deliver) {
            Ok(()) => Ok(id),
            Err(e) => self.withdraw(id, &slot, e),
        }
    }

    /// Runs the agent's step for a read on its threads, then the read itself on the worker.
    fn after_agent<T, W>(&self, reply: Reply<T>, token: Token, work: W, need: Need)
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx) -> Result<T> + Send + 'static,
    {
        let Some(runner) = self.inner.runner() else {
            return reply.deliver(Err(Error::Internal("a synced read without a sync agent".into())));
        };
        let exec = self.inner.exec.clone();
        let job_token = token.clone();
        let queued = runner.run(Box::new(move |agent, _| {
            let mut port = Remote::new(&exec, job_token.clone());
            let store = match &need {
                Need::Fetch { store, .. } | Need::Prefetch { store, .. } => store.clone(),
            };
            let step = match &need {
                Need::Fetch { store, keys, freshness } => agent.fetch(&mut port, store, keys, *freshness, &job_token),
                Need::Prefetch { store, cached, first_per_pair, asked } => {
                    match agent.prefetch_for_read(&mut port, store, *first_per_pair, *asked, &job_token) {
                        // A store read before keeps serving its copy while the bucket is away.
                        Err(e) if *cached && e.is_offline() => Ok(()),
                        other => other,
                    }
                }
            };
            if let Err(e) = step {
                return reply.deliver(Err(e));
            }
            // If the database closed meanwhile the request is refused, and close has
            // completed (or will complete) the reply as cancelled.
            let _ = exec.submit_as(
                None,
                job_token,
                move |db| db.run(&[store.as_str()], Mode::ReadOnly, work),
                move |r| reply.deliver(r),
            );
        }));
        // A stopped runner means the database is closing: close completes the reply.
        let _ = queued;
    }

    // ----- records ------------------------------------------------------------------------------

    /// Writes a record, replacing any under its key; the result is the key.
    pub fn put(
        &self,
        within: Within,
        store: &str,
        value: Value,
        key: Option<&Value>,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = key.filter(|k| !k.is_null()).map(Key::from_json).transpose()?;
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| Ok(tx.put(&name, value, key)?.to_json()), done)
    }

    /// Like `put`, but an existing key or a unique-index clash is a constraint error.
    pub fn add(
        &self,
        within: Within,
        store: &str,
        value: Value,
        key: Option<&Value>,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = key.filter(|k| !k.is_null()).map(Key::from_json).transpose()?;
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| Ok(tx.add(&name, value, key)?.to_json()), done)
    }

    /// Writes many records in one transaction (all or none); the result is their keys.
    pub fn put_many(
        &self,
        within: Within,
        store: &str,
        values: Vec<Value>,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        self.write_many(within, store, values, None, false, done)
    }

    /// [`Db::put_many`] with a key per record (`keys`, for a store whose keys are not in its
    /// records) and, with `create`, as `add`: a record whose key exists fails the batch,
    /// naming it.
    pub fn write_many(
        &self,
        within: Within,
        store: &str,
        values: Vec<Value>,
        keys: Option<Vec<Value>>,
        create: bool,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        if let Some(keys) = keys.as_ref().filter(|k| k.len() != values.len()) {
            return Err(Error::InvalidArgument(format!(
                "a batch of {} records was given {} keys (one per record)",
                values.len(),
                keys.len()
            )));
        }
        let keys = keys.map(|keys| keys.iter().map(Key::from_json).collect::<Result<Vec<_>>>()).transpose()?;
        let name = store.to_string();
        self.write(
            within,
            vec![name.clone()],
            move |tx| Ok(Value::Array(tx.write_many(&name, values, keys, create)?.iter().map(Key::to_json).collect())),
            done,
        )
    }

    /// As [`Db::get`], with the record as the JSON text it is stored as (`null` when there is
    /// none): a caller that hands text on (the C API) skips a decode and an encode.
    pub fn get_text(
        &self,
        within: Within,
        store: &str,
        key: &Value,
        read: Read,
        done: impl FnOnce(Result<String>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = Key::from_json(key)?;
        let name = store.to_string();
        let wanted = vec![key.clone()];
        self.read(
            within,
            vec![name.clone()],
            read,
            Some(wanted),
            move |tx| Ok(tx.get_text(&name, &key)?.unwrap_or_else(|| "null".to_string())),
            done,
        )
    }

    /// The record under `key`, or `null`.
    pub fn get(
        &self,
        within: Within,
        store: &str,
        key: &Value,
        read: Read,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = Key::from_json(key)?;
        let name = store.to_string();
        let wanted = vec![key.clone()];
        self.read(
            within,
            vec![name.clone()],
            read,
            Some(wanted),
            move |tx| Ok(tx.get(&name, &key)?.unwrap_or(Value::Null)),
            done,
        )
    }

    /// The records under `keys` (an array), `null` where there is none.
    pub fn values_of(
        &self,
        within: Within,
        store: &str,
        keys: &Value,
        read: Read,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let keys = args::keys(keys)?;
        let name = store.to_string();
        let wanted = keys.clone();
        self.read(
            within,
            vec![name.clone()],
            read,
            Some(wanted),
            move |tx| Ok(args::nulls(tx.values_of(&name, &keys)?)),
            done,
        )
    }

    /// As [`Db::values_of`], the records as one JSON array of their stored texts.
    pub fn values_of_text(
        &self,
        within: Within,
        store: &str,
        keys: &Value,
        read: Read,
        done: impl FnOnce(Result<String>) + Send + 'static,
    ) -> Result<RequestId> {
        let keys = args::keys(keys)?;
        let name = store.to_string();
        let wanted = keys.clone();
        self.read(within, vec![name.clone()], read, Some(wanted), move |tx| tx.values_of_text(&name, &keys), done)
    }

    /// Removes by key or key range; the result is how many went.
    pub fn remove(
        &self,
        within: Within,
        store: &str,
        target: &Value,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let range = args::target(target)?;
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| Ok(json!(tx.remove(&name, &range)?)), done)
    }

    pub fn clear(
        &self,
        within: Within,
        store: &str,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let name = store.to_string();
        self.write(within, vec![name.clone()], move |tx| tx.clear(&name).map(|()| Value::Null), done)
    }

    /// Counts, lists keys of, or reads the records of a store (or an index of it). `scan`:
    /// `{"index"?, "range"?, "limit"?, "offset"?, "reverse"?, "unique"?}`.
    pub fn read_scan(
        &self,
        within: Within,
        store: &str,
        kind: ReadKind,
        scan: Option<&Value>,
        read: Read,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let options = args::scan(scan)?;
        let (name, scan) = (store.to_string(), scan.cloned());
        let work = move |tx: &mut Tx| txops::read(tx, &name, kind, scan.as_ref());
        self.read_scanning(within, vec![store.to_string()], read, None, Some(options), work, done)
    }

    /// As [`Db::read_scan`], the result as JSON text: records as their stored texts.
    pub fn read_scan_text(
        &self,
        within: Within,
        store: &str,
        kind: ReadKind,
        scan: Option<&Value>,
        read: Read,
        done: impl FnOnce(Result<String>) + Send + 'static,
    ) -> Result<RequestId> {
        let options = args::scan(scan)?;
        let (name, scan) = (store.to_string(), scan.cloned());
        let work = move |tx: &mut Tx| txops::read_text(tx, &name, kind, scan.as_ref());
        self.read_scanning(within, vec![store.to_string()], read, None, Some(options), work, done)
    }

    /// Runs SQL with bound parameters: `{"rows": [...]}` for a SELECT, `{"changed": n}`
    /// otherwise. The store and the mode come from the statement.
    pub fn sql(
        &self,
        within: Within,
        text: &str,
        params: Option<&Value>,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let params = args::sql_params(params)?;
        let (store, mode) = sql::target(text, &params)?;
        let text = text.to_string();
        let run = move |tx: &mut Tx| txops::run_sql(tx, &text, &params);
        if mode == Mode::ReadWrite {
            self.write(within, vec![store], run, done)
        } else {
            self.read(within, vec![store], Read::default(), None, run, done)
        }
    }

    /// A query (the JSON form of `Query::from_json`) whose `list` pages continue call to call.
    pub fn query(&self, spec: &Value) -> Result<QueryHandle> {
        QueryHandle::new(self.clone(), spec)
    }

    // ----- transactions -------------------------------------------------------------------------

    /// Starts an explicit transaction over `stores` (a name or an array of names); the result
    /// is its id. It starts once the transaction open now (if any) ends; until it ends,
    /// requests outside it wait.
    pub fn begin(
        &self,
        stores: &Value,
        mode: Mode,
        done: impl FnOnce(Result<TxId>) + Send + 'static,
    ) -> Result<RequestId> {
        let stores = args::stores(stores)?;
        let reply = self.reply(done);
        self.submit(None, reply, move |db| db.begin(&stores.iter().map(String::as_str).collect::<Vec<_>>(), mode))
    }

    pub fn commit(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        let inner = self.inner.clone();
        let reply = self.reply(move |r: Result<()>| {
            if r.is_ok() {
                if let Some(runner) = inner.runner() {
                    runner.flush_soon();
                }
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
        stores: &Value,
        mode: Mode,
        body: impl FnOnce(&mut TxOps) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<RequestId> {
        let stores = args::stores(stores)?;
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

    /// Events as values `{"kind", "store", "key", "value", "message"}`, delivered on the
    /// worker thread. `filter`: `{"kinds"?: [names], "store"?: name}`. The result is the
    /// subscription's id.
    pub fn subscribe(
        &self,
        filter: Option<&Value>,
        listener: impl Fn(Value) + Send + 'static,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let filter = args::event_filter(filter)?;
        let reply = self.reply(done);
        let forward = Box::new(move |e: &objstore_db_core::Event| listener(args::event_json(e)));
        self.submit(None, reply, move |db| Ok(db.subscribe(filter, forward)))
    }

    pub fn unsubscribe(&self, id: u64, done: impl FnOnce(Result<bool>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, move |db| Ok(db.unsubscribe(id)))
    }

    /// The schema as stored, `{"version", "stores"}`.
    pub fn schema(&self, done: impl FnOnce(Result<Value>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, |db| parse("schema", &db.schema().to_json()))
    }

    // ----- sync ---------------------------------------------------------------------------------

    fn agent_job<T: Send + 'static>(
        &self,
        done: impl FnOnce(Result<T>) + Send + 'static,
        job: impl FnOnce(&Agent, &mut Remote, &Token) -> Result<T> + Send + 'static,
    ) -> Result<RequestId> {
        let Some(runner) = self.inner.runner() else {
            return Err(Error::InvalidArgument(format!("database {:?} has no synced store", self.inner.name)));
        };
        let reply = self.reply(done);
        let (id, slot) = (reply.id, reply.slot.clone());
        let exec = self.inner.exec.clone();
        let queued = runner.run(Box::new(move |agent, _| {
            let token = reply.token.clone();
            let mut port = Remote::new(&exec, token.clone());
            let result = job(agent, &mut port, &token);
            reply.deliver(result);
        }));
        match queued {
            Ok(()) => Ok(id),
            Err(e) => self.withdraw(id, &slot, e),
        }
    }

    /// Sends the outbox now: `{"sent", "pending", "refused", "rejected": [{"sequence", "code",
    /// "message"}], "held": [...the same], "offline"?, "blocked"?}`. The background sender sends
    /// writes too: `sent`, `rejected` and `held` are what this flush did; `pending` (writes still
    /// waiting) and `refused` (refused writes awaiting `resolve`, whoever met the refusal) count
    /// every write. Refused writes are kept (see `refused_writes`); held ones stay queued; an
    /// unreachable bucket is reported, not an error.
    pub fn flush(&self, done: impl FnOnce(Result<Value>) + Send + 'static) -> Result<RequestId> {
        self.agent_job(done, |agent, port, token| {
            let report = agent.flush(port, token)?;
            let writes = |list: &[(u64, objstore_db_core::Error)]| -> Vec<Value> {
                list.iter()
                    .map(|(sequence, e)| json!({"sequence": sequence, "code": format!("{:?}", e.code()), "message": e.to_string()}))
                    .collect()
            };
            let mut out = json!({"sent": report.sent, "pending": report.pending, "refused": report.refused,
                "rejected": writes(&report.rejected), "held": writes(&report.held)});
            if let Some(e) = report.offline {
                out["offline"] = json!(e.to_string());
            }
            if let Some(e) = report.blocked {
                out["blocked"] = json!(e.to_string());
            }
            Ok(out)
        })
    }

    /// Lists a synced store now and brings its local copy in line: new and changed objects are
    /// fetched, vanished ones removed, whatever its `prefetch` setting or refractory period.
    pub fn prefetch(&self, store: &str, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        let store = store.to_string();
        self.agent_job(done, move |agent, port, token| agent.prefetch(port, &store, token))
    }

    /// Offline, the agent makes no requests: reads serve the cache, writes wait in the outbox.
    pub fn set_offline(&self, offline: bool) -> Result<()> {
        match self.inner.agent.get() {
            Some(agent) => {
                agent.set_offline(offline);
                if !offline {
                    if let Some(runner) = self.inner.runner() {
                        runner.flush_soon();
                    }
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Requests made to buckets so far, bytes and cost (`reset` starts again from zero).
    pub fn sync_stats(&self, reset: bool) -> Value {
        match self.inner.agent.get() {
            Some(agent) => if reset { agent.take_stats() } else { agent.stats() }.to_json(),
            None => objstore_db_core::sync::Stats::default().to_json(),
        }
    }

    /// Writes the bucket refused, kept until resolved: `[{"sequence", "store", "key", "op",
    /// "value", "code", "message"}]`.
    pub fn refused_writes(&self, done: impl FnOnce(Result<Value>) + Send + 'static) -> Result<RequestId> {
        let reply = self.reply(done);
        self.submit(None, reply, |db| Ok(Value::Array(db.refused_writes()?.iter().map(args::refused_json).collect())))
    }

    /// Resolves refused write `sequence`: `"discard"` (the bucket's version wins) or
    /// `"overwrite"` (sent again over whatever the bucket holds).
    pub fn resolve(
        &self,
        sequence: u64,
        resolution: &str,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<RequestId> {
        let resolution = Resolution::from_name(resolution)?;
        let inner = self.inner.clone();
        let reply = self.reply(move |r: Result<()>| {
            if let Some(runner) = inner.runner() {
                runner.flush_soon();
            }
            done(r)
        });
        self.submit(None, reply, move |db| db.resolve_refused(sequence, resolution))
    }

    /// The sync state of one record: "local", "pending", "refused", "synced" or "unknown".
    pub fn sync_status(
        &self,
        store: &str,
        key: &Value,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = Key::from_json(key)?;
        let store = store.to_string();
        let reply = self.reply(done);
        self.submit(None, reply, move |db| Ok(json!(db.sync_status(&store, &key)?.name())))
    }

    /// Takes back the writes to `key` still waiting in the outbox, and the local record with
    /// them (no delete is queued): for a caller that reported to its own client that the write
    /// failed, so that it does not land later. Answers how many were taken back. A send already
    /// under way may still land.
    pub fn withdraw_pending(
        &self,
        store: &str,
        key: &Value,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        let key = Key::from_json(key)?;
        let store = store.to_string();
        let reply = self.reply(done);
        self.submit(None, reply, move |db| Ok(json!(db.withdraw_pending(&store, &key)?)))
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
                self.inner.exec.wake();
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
        self.inner.exec.close(move |r| {
            if let Some(runner) = inner.runner.get() {
                runner.stop();
            }
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
        self.inner.exec.is_closed()
    }

    /// Closes if needed and waits until the worker and the agent's threads have ended, for
    /// callers that must leave no thread behind (a C program about to exit). Never call it
    /// from a callback; bindings with finalizers use `close` and drop instead.
    pub fn close_and_join(&self) {
        let _ = self.close(|_| {});
        if let Some(runner) = self.inner.runner.get() {
            runner.stop();
            runner.join();
        }
        self.inner.exec.join();
    }
}

/// On the worker, before a read of a synced store: what the agent must do first, if anything.
fn need(
    agent: &Agent,
    db: &mut Database,
    stores: &[String],
    keys: Option<&[Key]>,
    scan: Option<&ScanOptions>,
    read: Read,
) -> Result<Option<Need>> {
    let freshness = if read.fresh { Freshness::Fresh } else { Freshness::Cached };
    let Some(store) = stores.iter().find(|s| agent.is_synced(s)) else {
        return Ok(None);
    };
    if agent.is_offline() {
        return Ok(None);
    }
    if let Some(keys) = keys {
        if db.sync_config(store).is_some_and(|c| c.policy.format == objstore_db_core::sync::Format::ObjstoreMeta) {
            return Ok(None);
        }
        let missing = db.local_copies(store, keys)?.iter().any(|c| !c.present && !c.held);
        return Ok((read.fresh || missing).then(|| Need::Fetch {
            store: store.clone(),
            keys: keys.to_vec(),
            freshness,
        }));
    }
    // A fresh read lists, unless a listing within the refractory period (the least interval
    // between two, the seed's `prefetchRefractoryPeriod`) already answered for the bucket.
    // A read of the first name of each pair is served by a store listed only that far; any
    // other read wants it listed in full.
    let fresh = read.fresh && !agent.refractory_fresh(store);
    let first_per_pair = scan.is_some_and(|scan| agent.reads_first_per_pair(store, scan));
    if agent.prefetches(store) && (fresh || !agent.listed_for(store, first_per_pair)) {
        let cached = !fresh && db.store_state(store)?.prefetched;
        return Ok(Some(Need::Prefetch {
            store: store.clone(),
            cached,
            first_per_pair,
            asked: std::time::Instant::now(),
        }));
    }
    Ok(None)
}

/// After a plain read served the cache: the agent revalidates in the background.
fn revalidate_later(inner: &Arc<Inner>, agent: &Agent, stores: &[String], keys: Option<&[Key]>) {
    let Some(store) = stores.iter().find(|s| agent.is_synced(s)).cloned() else {
        return;
    };
    if agent.is_offline() {
        return;
    }
    let keys = keys.map(<[Key]>::to_vec);
    let wants = match &keys {
        Some(_) => agent.revalidates(&store),
        None => agent.prefetches(&store),
    };
    if !wants {
        return;
    }
    let Some(runner) = inner.runner() else { return };
    let exec = inner.exec.clone();
    // Reads of the same keys share one revalidation; at most a few are queued at a time.
    let what = match &keys {
        Some(keys) => format!(
            "{store}\u{0}{}",
            serde_json::to_string(&keys.iter().map(Key::to_string).collect::<Vec<_>>()).unwrap_or_default()
        ),
        None => store.clone(),
    };
    runner.revalidate_soon(
        what,
        Box::new(move |agent, _| {
            let token = Token::default();
            let mut port = Remote::new(&exec, token.clone());
            let _ = match keys {
                Some(keys) => agent.fetch(&mut port, &store, &keys, Freshness::Fresh, &token),
                None => agent.refresh(&mut port, &store, &token),
            };
        }),
    );
}
