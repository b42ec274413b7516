//! The native half of the Node package: a thin layer over `objstore_db::rsapi`. Arguments arrive
//! as JSON text (the JS half encodes them with `JSON.stringify`); every request returns a
//! Promise made from a napi deferred, settled on the JS thread with the result decoded once by
//! the engine's own `JSON.parse`.
//!
//! Completions arrive on the library's threads. They queue in a `Waker` (one per JS thread:
//! the main thread and each worker have their own), and a delivery into an empty queue calls
//! the waker's threadsafe function once: one turn of the event loop settles a whole batch. The
//! threadsafe function is referenced (keeps the process alive) only while requests are pending;
//! an idle database, a listener or a synced store never hold the loop.

mod napi_raw;

use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::{Env, JsValue, Unknown};
use napi::sys;
use napi_derive::napi;
use objstore_db::json::{self, IntoJson};
use objstore_db::rsapi::{AsText, Cursor, Db, Freshness, Opened, QueryHandle, ReadKind, RequestId};
use objstore_db_core::{Error, ErrorCode, Key, Mode, Resolution};
use serde_json::Value;

use napi_raw::{Deferred, Tsfn};

type CoreResult<T> = objstore_db_core::Result<T>;

/// The stable `code` of a status, as JS code matches on it: its name in core's table of codes.
fn code_of(code: ErrorCode) -> &'static str {
    code.name()
}

/// An error's stable code, which napi-rs sets as the thrown JS error's `code`: a library
/// error's from the table, or napi-rs's own status name.
pub struct Code(String);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A library error as a thrown JS error: its message, and its code as `error.code`.
fn js_err(error: &Error) -> napi::Error<Code> {
    napi::Error::new(Code(code_of(error.code()).to_string()), error.to_string())
}

/// A napi-rs error thrown as it would be, its status as `error.code`.
fn napi_err(error: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code(error.status.as_ref().to_string()), error.reason.clone())
}

/// Every error code's name, in status order (from core's table).
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|code| code.name()).collect()
}

fn parse(what: &str, text: &str) -> CoreResult<Value> {
    json::parse(what, text)
}

/// A key given as JSON text, or none.
fn optional_key(text: Option<&str>) -> CoreResult<Option<Key>> {
    json::optional_key(parse_opt("key", text)?.as_ref())
}

fn parse_opt(what: &str, text: Option<&str>) -> CoreResult<Option<Value>> {
    text.map(|t| parse(what, t)).transpose()
}

fn mode(name: &str) -> CoreResult<Mode> {
    match name {
        "readonly" => Ok(Mode::ReadOnly),
        "readwrite" => Ok(Mode::ReadWrite),
        other => Err(Error::InvalidArgument(format!(
            "mode {other:?} is not understood (known: \"readonly\", \"readwrite\")"
        ))),
    }
}

fn read(fresh: Option<bool>) -> Freshness {
    if fresh.unwrap_or(false) {
        Freshness::Fresh
    } else {
        Freshness::Cached
    }
}

/// A transaction id from JS (a number), as the library's.
fn tx_id(tx: Option<f64>) -> Option<u64> {
    tx.map(|t| t as u64)
}

// ----- the waker: completions back to a JS thread ------------------------------------------------

/// What a completion carries to the JS thread.
enum Delivery {
    /// A request's promise, and its result as JSON text or its error.
    Settle(Deferred, CoreResult<String>),
    /// An event for the listener registered as `subscription`, as JSON text.
    Event(f64, String),
}

struct Queue {
    pending: Vec<Delivery>,
    /// None once Node has finalized the threadsafe function (its thread is going away).
    tsfn: Option<Tsfn>,
}

/// What the library's threads share with one JS thread.
struct Shared {
    queue: Mutex<Queue>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a delivery; the first into an empty queue asks the JS thread to settle the lot.
    fn deliver(&self, delivery: Delivery) {
        let mut queue = self.lock();
        let Some(tsfn) = queue.tsfn else {
            // The JS thread has gone: its promises will never be awaited.
            std::mem::forget(delivery);
            return;
        };
        queue.pending.push(delivery);
        if queue.pending.len() == 1 {
            // Under the lock: Node finalizes the function only after taking it (see finalized).
            tsfn.call();
        }
    }

    /// Node finalized the threadsafe function: no call may reach it any more.
    fn finalized(&self) {
        let mut queue = self.lock();
        queue.tsfn = None;
        std::mem::forget(std::mem::take(&mut queue.pending));
    }
}

/// One per JS thread. Holds the threadsafe function that brings completions to it and the
/// JS function that hands events to listeners.
#[napi]
pub struct Waker {
    shared: Arc<Shared>,
    tsfn: Tsfn,
    /// Requests made and not yet settled: the function keeps the loop alive while there are any.
    outstanding: Cell<u64>,
    dispatch: napi_raw::Ref,
}

#[napi]
impl Waker {
    /// `wake()` is called on this thread when completions are queued (it calls `settle`);
    /// `dispatch(subscription, event)` is called for each event, and must not throw.
    #[napi(constructor)]
    pub fn new(env: Env, wake: Unknown, dispatch: Unknown) -> napi::Result<Self> {
        let shared = Arc::new(Shared { queue: Mutex::new(Queue { pending: Vec::new(), tsfn: None }) });
        let tsfn = Tsfn::new(env.raw(), wake.raw(), shared.clone())?;
        shared.lock().tsfn = Some(tsfn);
        let dispatch = napi_raw::Ref::new(env.raw(), dispatch.raw())?;
        Ok(Waker { shared, tsfn, outstanding: Cell::new(0), dispatch })
    }

    /// Settles everything queued (called by the threadsafe function; also callable directly).
    #[napi]
    pub fn settle(&self, env: Env) -> napi::Result<()> {
        let batch = std::mem::take(&mut self.shared.lock().pending);
        let raw = env.raw();
        let parse = napi_raw::JsonParse::new(raw)?;
        let mut settled = 0;
        for delivery in batch {
            match delivery {
                Delivery::Settle(deferred, result) => {
                    settled += 1;
                    match result {
                        Ok(text) => deferred.resolve_json(raw, &parse, &text)?,
                        Err(e) => deferred.reject(raw, code_of(e.code()), &e.to_string())?,
                    }
                }
                Delivery::Event(subscription, text) => {
                    napi_raw::call_with_json(raw, &parse, &self.dispatch, subscription, &text)?;
                }
            }
        }
        self.finished(raw, settled)
    }

    /// The number of requests not yet settled.
    #[napi(getter)]
    pub fn outstanding(&self) -> f64 {
        self.outstanding.get() as f64
    }
}

impl Waker {
    fn started(&self, env: sys::napi_env) -> napi::Result<()> {
        let before = self.outstanding.get();
        self.outstanding.set(before + 1);
        if before == 0 {
            self.tsfn.refer(env)?;
        }
        Ok(())
    }

    fn finished(&self, env: sys::napi_env, settled: u64) -> napi::Result<()> {
        if settled == 0 {
            return Ok(());
        }
        let left = self.outstanding.get().saturating_sub(settled);
        self.outstanding.set(left);
        if left == 0 {
            self.tsfn.unref(env)?;
        }
        Ok(())
    }

    /// Makes a request whose result is JSON text; the promise settles with it decoded. An
    /// argument the library refuses at once rejects the promise at once.
    fn request_text(
        &self,
        env: &Env,
        start: impl FnOnce(Box<dyn FnOnce(CoreResult<String>) + Send>) -> CoreResult<RequestId>,
    ) -> napi::Result<sys::napi_value> {
        let raw = env.raw();
        let (deferred, promise) = Deferred::new(raw)?;
        let shared = self.shared.clone();
        // The deferred travels with the completion; only the JS thread ever touches it.
        let slot = Arc::new(Mutex::new(Some(deferred)));
        let completion_slot = slot.clone();
        let done = Box::new(move |result: CoreResult<String>| {
            if let Some(deferred) = completion_slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                shared.deliver(Delivery::Settle(deferred, result));
            }
        });
        match start(done) {
            Ok(_) => self.started(raw)?,
            Err(e) => {
                if let Some(deferred) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    deferred.reject(raw, code_of(e.code()), &e.to_string())?;
                }
            }
        }
        Ok(promise)
    }

    /// A read: outside a transaction it is first offered to `now`, which answers on this thread
    /// when the database is idle and the store is not synced; the promise is then settled
    /// already (no thread hop, no wake-up of the loop). Otherwise it is made as `request_text`.
    fn read_text(
        &self,
        env: &Env,
        tx: Option<f64>,
        now: impl FnOnce() -> Option<CoreResult<String>>,
        start: impl FnOnce(Box<dyn FnOnce(CoreResult<String>) + Send>) -> CoreResult<RequestId>,
    ) -> napi::Result<sys::napi_value> {
        let answer = if tx_id(tx).is_none() { now() } else { None };
        let Some(result) = answer else {
            return self.request_text(env, start);
        };
        let raw = env.raw();
        let (deferred, promise) = Deferred::new(raw)?;
        match result {
            Ok(text) => deferred.resolve_json(raw, &napi_raw::JsonParse::new(raw)?, &text)?,
            Err(e) => deferred.reject(raw, code_of(e.code()), &e.to_string())?,
        }
        Ok(promise)
    }

    /// As `request_text`, for a request whose result is in the engine's type: sent as its JSON
    /// (the JSON edge's, as the C API and Python send it).
    fn request<T: IntoJson + Send + 'static>(
        &self,
        env: &Env,
        start: impl FnOnce(Box<dyn FnOnce(CoreResult<T>) + Send>) -> CoreResult<RequestId>,
    ) -> napi::Result<sys::napi_value> {
        self.request_text(env, |done| start(Box::new(move |result: CoreResult<T>| done(result.map(json::text)))))
    }

    /// A promise rejected at once with `error` (bad arguments found before any request).
    fn rejected(&self, env: &Env, error: &Error) -> napi::Result<sys::napi_value> {
        let (deferred, promise) = Deferred::new(env.raw())?;
        deferred.reject(env.raw(), code_of(error.code()), &error.to_string())?;
        Ok(promise)
    }
}

/// Runs `build` (argument checks), rejecting the promise when it fails.
macro_rules! checked {
    ($waker:expr, $env:expr, $build:expr) => {
        match $build {
            Ok(args) => args,
            Err(e) => return $waker.rejected(&$env, &e),
        }
    };
}

// ----- the database ---------------------------------------------------------------------------

#[napi]
pub struct Database {
    db: Db,
}

/// Opens a database: `[database, promise]`, the promise resolving with `{version, stores}`
/// once it is open (or rejecting with why it could not be).
#[napi]
pub fn open(
    env: Env,
    waker: &Waker,
    name: String,
    schema: Option<String>,
    options: Option<String>,
) -> napi::Result<sys::napi_value, Code> {
    let args = (|| {
        let schema = json::schema(parse_opt("schema", schema.as_deref())?.as_ref())?;
        let options = json::open_options(parse_opt("open options", options.as_deref())?.as_ref())?;
        Ok::<_, Error>((schema, options))
    })();
    let (schema, options) = args.map_err(|e| js_err(&e))?;
    let mut opened = None;
    let promise = waker
        .request::<Opened>(&env, |done| {
            let db = Db::open(&name, schema, &options, done)?;
            opened = Some(db);
            Ok(0)
        })
        .map_err(napi_err)?;
    let db = opened.ok_or_else(|| js_err(&Error::Internal("the database could not be opened".into())))?;
    napi_raw::pair(env.raw(), Database { db }, promise).map_err(napi_err)
}

#[napi]
impl Database {
    #[napi]
    pub fn put(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        value: String,
        key: Option<String>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let (value, key) = checked!(
            waker,
            env,
            (|| Ok::<_, Error>((json::record("value", &value)?, optional_key(key.as_deref())?)))()
        );
        waker.request(&env, |done| self.db.put(tx_id(tx), &store, value, key, done))
    }

    #[napi]
    pub fn add(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        value: String,
        key: Option<String>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let (value, key) = checked!(
            waker,
            env,
            (|| Ok::<_, Error>((json::record("value", &value)?, optional_key(key.as_deref())?)))()
        );
        waker.request(&env, |done| self.db.add(tx_id(tx), &store, value, key, done))
    }

    /// Many records in one transaction, with a key each when `keys` is given; `create`: as add.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn write_many(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        values: String,
        keys: Option<String>,
        create: bool,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let (records, keys) = checked!(
            waker,
            env,
            (|| Ok::<_, Error>((
                json::records("values", &values)?,
                keys.as_deref().map(|k| json::keys(&parse("keys", k)?)).transpose()?
            )))()
        );
        waker.request(&env, |done| self.db.write_many(tx_id(tx), &store, records, keys, create, done))
    }

    /// The record as stored (`null` when there is none).
    #[napi]
    pub fn get(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        key: String,
        fresh: Option<bool>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let key = checked!(waker, env, parse("key", &key).and_then(|k| json::key(&k)));
        waker.request_text(&env, |done| self.db.get(tx_id(tx), &store, key, read(fresh), AsText, done))
    }

    /// `get` answered inside the call, as `read_text` answers, for the JS half to settle its
    /// own promise with: the record's JSON text (`"null"` when there is none), or `null` when
    /// it must be requested (the database is busy, or the store synced). An awaited get
    /// settles without a Node-API promise or a call into `JSON.parse` from here.
    #[napi]
    pub fn get_now(&self, store: String, key: String, fresh: Option<bool>) -> napi::Result<Option<String>, Code> {
        let key = parse("key", &key).and_then(|k| json::key(&k)).map_err(|e| js_err(&e))?;
        self.db.get_now(&store, &key, read(fresh), AsText).transpose().map_err(|e| js_err(&e))
    }

    #[napi]
    pub fn values_of(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        keys: String,
        fresh: Option<bool>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let keys = checked!(waker, env, parse("keys", &keys).and_then(|k| json::keys(&k)));
        let now = || self.db.values_of_now(&store, &keys, read(fresh), AsText);
        waker.read_text(&env, tx, now, |done| {
            self.db.values_of(tx_id(tx), &store, keys.clone(), read(fresh), AsText, done)
        })
    }

    #[napi]
    pub fn remove(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        target: String,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let target = checked!(waker, env, parse("key or range", &target).and_then(|t| json::target(&t)));
        waker.request(&env, |done| self.db.remove(tx_id(tx), &store, target, done))
    }

    #[napi]
    pub fn clear(&self, env: Env, waker: &Waker, store: String, tx: Option<f64>) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.clear(tx_id(tx), &store, done))
    }

    /// `kind`: "count", "keys" or "values"; `scan`: `{index, range, limit, offset, reverse, unique}`.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        kind: String,
        scan: Option<String>,
        fresh: Option<bool>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let (kind, scan) = checked!(
            waker,
            env,
            (|| {
                let kind = match kind.as_str() {
                    "count" => ReadKind::Count,
                    "keys" => ReadKind::Keys,
                    "values" => ReadKind::Values,
                    other => return Err(Error::InvalidArgument(format!("scan kind {other:?} is not understood"))),
                };
                Ok((kind, json::scan(parse_opt("scan options", scan.as_deref())?.as_ref())?))
            })()
        );
        let now = || self.db.read_scan_now(&store, kind, &scan, read(fresh), AsText);
        waker.read_text(&env, tx, now, |done| {
            self.db.read_scan(tx_id(tx), &store, kind, scan.clone(), read(fresh), AsText, done)
        })
    }

    #[napi]
    pub fn sql(
        &self,
        env: Env,
        waker: &Waker,
        text: String,
        params: Option<String>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let params = checked!(
            waker,
            env,
            parse_opt("SQL parameters", params.as_deref()).and_then(|p| json::sql_params(p.as_ref()))
        );
        waker.request(&env, |done| self.db.sql(tx_id(tx), &text, params, done))
    }

    #[napi]
    pub fn begin(&self, env: Env, waker: &Waker, stores: String, mode_name: String) -> napi::Result<sys::napi_value> {
        let (stores, mode) =
            checked!(waker, env, (|| Ok::<_, Error>((json::stores(&parse("stores", &stores)?)?, mode(&mode_name)?)))());
        waker.request(&env, |done| self.db.begin(stores, mode, done))
    }

    #[napi]
    pub fn commit(&self, env: Env, waker: &Waker, tx: f64) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.commit(tx as u64, done))
    }

    #[napi]
    pub fn abort(&self, env: Env, waker: &Waker, tx: f64) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.abort(tx as u64, done))
    }

    /// Registers for events matching `filter`; each is handed to the waker's dispatch with
    /// `subscription` (chosen by the caller). The promise resolves with the library's id.
    #[napi]
    pub fn subscribe(
        &self,
        env: Env,
        waker: &Waker,
        subscription: f64,
        filter: Option<String>,
    ) -> napi::Result<sys::napi_value> {
        let filter = checked!(
            waker,
            env,
            parse_opt("event filter", filter.as_deref()).and_then(|f| json::event_filter(f.as_ref()))
        );
        let shared = waker.shared.clone();
        let forward = move |event: &objstore_db_core::Event| {
            shared.deliver(Delivery::Event(subscription, json::event_json(event).to_string()))
        };
        waker.request(&env, |done| self.db.subscribe(filter, forward, done))
    }

    #[napi]
    pub fn unsubscribe(&self, env: Env, waker: &Waker, id: f64) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.unsubscribe(id as u64, done))
    }

    #[napi]
    pub fn schema(&self, env: Env, waker: &Waker) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.schema(done))
    }

    #[napi]
    pub fn query(&self, spec: String) -> napi::Result<Query, Code> {
        let spec =
            parse("query", &spec).and_then(|s| objstore_db_core::Query::from_json(&s)).map_err(|e| js_err(&e))?;
        Ok(Query { query: self.db.query(spec).map_err(|e| js_err(&e))? })
    }

    // ----- sync -------------------------------------------------------------------------------

    #[napi]
    pub fn flush(&self, env: Env, waker: &Waker) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.flush(done))
    }

    #[napi]
    pub fn prefetch(&self, env: Env, waker: &Waker, store: String) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.prefetch(&store, done))
    }

    #[napi]
    pub fn checkpoint(&self, env: Env, waker: &Waker, store: String) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.checkpoint(&store, done))
    }

    #[napi]
    pub fn set_offline(&self, offline: bool) -> napi::Result<(), Code> {
        self.db.set_offline(offline).map_err(|e| js_err(&e))
    }

    /// The sync counters as JSON text.
    #[napi]
    pub fn sync_stats(&self, reset: bool) -> String {
        json::text(self.db.sync_stats(reset))
    }

    #[napi]
    pub fn refused_writes(&self, env: Env, waker: &Waker) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.db.refused_writes(done))
    }

    #[napi]
    pub fn resolve(&self, env: Env, waker: &Waker, sequence: f64, resolution: String) -> napi::Result<sys::napi_value> {
        let resolution = checked!(waker, env, Resolution::from_name(&resolution));
        waker.request(&env, |done| self.db.resolve(sequence as u64, resolution, done))
    }

    #[napi]
    pub fn sync_status(&self, env: Env, waker: &Waker, store: String, key: String) -> napi::Result<sys::napi_value> {
        let key = checked!(waker, env, parse("key", &key).and_then(|k| json::key(&k)));
        waker.request(&env, |done| self.db.sync_status(&store, key, done))
    }

    #[napi]
    pub fn withdraw_pending(
        &self,
        env: Env,
        waker: &Waker,
        store: String,
        key: String,
    ) -> napi::Result<sys::napi_value> {
        let key = checked!(waker, env, parse("key", &key).and_then(|k| json::key(&k)));
        waker.request(&env, |done| self.db.withdraw_pending(&store, key, done))
    }

    // ----- lifetime ---------------------------------------------------------------------------

    /// Closes; the promise settles last of all this database's completions.
    #[napi]
    pub fn close(&self, env: Env, waker: &Waker) -> napi::Result<sys::napi_value> {
        waker.request::<()>(&env, |done| self.db.close(done).map(|()| 0))
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.db.is_closed()
    }
}

// ----- queries and cursors ----------------------------------------------------------------------

#[napi]
pub struct Query {
    query: QueryHandle,
}

#[napi]
impl Query {
    #[napi]
    pub fn list(
        &self,
        env: Env,
        waker: &Waker,
        n: u32,
        fresh: Option<bool>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let now = || self.query.list_now(n as usize, read(fresh), AsText);
        waker.read_text(&env, tx, now, |done| self.query.list(tx_id(tx), n as usize, read(fresh), AsText, done))
    }

    #[napi]
    pub fn count(
        &self,
        env: Env,
        waker: &Waker,
        fresh: Option<bool>,
        tx: Option<f64>,
    ) -> napi::Result<sys::napi_value> {
        let now = || self.query.count_now(read(fresh)).map(|r| r.map(|n| n.to_string()));
        waker.read_text(&env, tx, now, |done| {
            self.query.count(tx_id(tx), read(fresh), Box::new(move |r: CoreResult<u64>| done(r.map(|n| n.to_string()))))
        })
    }

    #[napi]
    pub fn explain(&self, env: Env, waker: &Waker, tx: Option<f64>) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.query.explain(tx_id(tx), done))
    }

    #[napi]
    pub fn patch(&self, env: Env, waker: &Waker, patch: String, tx: Option<f64>) -> napi::Result<sys::napi_value> {
        let patch = checked!(waker, env, parse("patch", &patch));
        waker.request(&env, |done| self.query.patch(tx_id(tx), patch, done))
    }

    #[napi]
    pub fn delete(&self, env: Env, waker: &Waker, tx: Option<f64>) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.query.delete(tx_id(tx), done))
    }

    #[napi]
    pub fn cursor(&self, mode_name: String, tx: Option<f64>) -> napi::Result<QueryCursor, Code> {
        let mode = mode(&mode_name).map_err(|e| js_err(&e))?;
        Ok(QueryCursor { cursor: self.query.cursor(tx_id(tx), mode) })
    }
}

#[napi]
pub struct QueryCursor {
    cursor: Cursor,
}

#[napi]
impl QueryCursor {
    /// The next `n` items, `[{key, primaryKey, value}]` (empty at the end).
    #[napi]
    pub fn next(&self, env: Env, waker: &Waker, n: u32, fresh: Option<bool>) -> napi::Result<sys::napi_value> {
        waker.request(&env, |done| self.cursor.next(n as usize, read(fresh), done))
    }

    #[napi]
    pub fn update(&self, env: Env, waker: &Waker, primary_key: String, value: String) -> napi::Result<sys::napi_value> {
        let (key, value) = checked!(
            waker,
            env,
            (|| Ok::<_, Error>((json::key(&parse("primary key", &primary_key)?)?, parse("value", &value)?)))()
        );
        waker.request(&env, |done| self.cursor.update(key, value, done))
    }

    #[napi]
    pub fn delete(&self, env: Env, waker: &Waker, primary_key: String) -> napi::Result<sys::napi_value> {
        let key = checked!(waker, env, parse("primary key", &primary_key).and_then(|k| json::key(&k)));
        waker.request(&env, |done| self.cursor.delete(key, done))
    }
}

/// The library's version.
#[napi]
pub fn version() -> String {
    objstore_db_core::VERSION.to_string()
}
