//! The safe Rust API under the C ABI, and the one the Python and Node wrappers call: a
//! database on its worker thread, operations whose arguments and results are JSON text, and
//! a completion per request. `JsonTx` holds the operations themselves, so that a request run
//! on its own and one run inside a transaction share one implementation.

use std::sync::{Arc, Mutex};

use objstore_db_core::{
    sql, AsyncDatabase, Database, Error, EventFilter, EventKind, ExecutorOptions, Key, KeyRange, MechanismKind, Mode,
    OpenOptions, Query, Result, ScanOptions, Schema, Step, SubscriptionId, Tx, TxId,
};
use serde_json::{json, Value};

/// Run a request on its own (`None`) or inside an explicit transaction.
pub type Within = Option<TxId>;

fn parse(what: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::BadJson { what: what.to_string(), reason: e.to_string() })
}

fn key_from(text: &str) -> Result<Key> {
    Key::from_json(&parse("key", text)?)
}

/// A key (`5`, `"a"`, `[1, 2]`) or a key range object (`{"lower": 1, "upper": 9}`).
fn target_from(text: &str) -> Result<KeyRange> {
    let value = parse("key or key range", text)?;
    let is_range =
        value.as_object().is_some_and(|m| ["only", "lower", "upper", "starts"].iter().any(|f| m.contains_key(*f)));
    if is_range {
        KeyRange::from_json(&value)
    } else {
        Key::from_json(&value).map(KeyRange::Only)
    }
}

fn scan_from(text: Option<&str>) -> Result<ScanOptions> {
    match text {
        None => Ok(ScanOptions::new()),
        Some(text) => ScanOptions::from_json(&parse("scan options", text)?),
    }
}

/// Store names given as a JSON array of strings, or one string.
fn keys_from(text: &str) -> Result<Vec<Key>> {
    match parse("key list", text)? {
        Value::Array(items) => items.iter().map(Key::from_json).collect(),
        other => Err(Error::InvalidArgument(format!("key list: expected an array, got {other}"))),
    }
}

pub fn stores_from(text: &str) -> Result<Vec<String>> {
    match parse("store list", text)? {
        Value::String(s) => Ok(vec![s]),
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => Err(Error::InvalidArgument(format!("store list: {other} is not a store name"))),
            })
            .collect(),
        other => Err(Error::InvalidArgument(format!("store list: expected an array of names, got {other}"))),
    }
}

/// The operations of a transaction with JSON in and out.
pub struct JsonTx<'t, 'db> {
    pub tx: &'t mut Tx<'db>,
}

impl JsonTx<'_, '_> {
    pub fn put(&mut self, store: &str, value: &str, key: Option<&str>) -> Result<String> {
        let key = key.map(key_from).transpose()?;
        Ok(self.tx.put(store, parse("record", value)?, key)?.to_json().to_string())
    }

    pub fn add(&mut self, store: &str, value: &str, key: Option<&str>) -> Result<String> {
        let key = key.map(key_from).transpose()?;
        Ok(self.tx.add(store, parse("record", value)?, key)?.to_json().to_string())
    }

    /// The record, or `null`.
    pub fn get(&mut self, store: &str, key: &str) -> Result<String> {
        Ok(self.tx.get(store, &key_from(key)?)?.unwrap_or(Value::Null).to_string())
    }

    /// Removes by key or key range; the number removed.
    pub fn remove(&mut self, store: &str, target: &str) -> Result<String> {
        Ok(self.tx.remove(store, &target_from(target)?)?.to_string())
    }

    pub fn clear(&mut self, store: &str) -> Result<String> {
        self.tx.clear(store)?;
        Ok("null".into())
    }

    pub fn count(&mut self, store: &str, scan: Option<&str>) -> Result<String> {
        Ok(self.tx.count(store, &scan_from(scan)?)?.to_string())
    }

    /// Primary keys as a JSON array.
    pub fn keys(&mut self, store: &str, scan: Option<&str>) -> Result<String> {
        let keys = self.tx.keys(store, &scan_from(scan)?)?;
        Ok(Value::Array(keys.iter().map(Key::to_json).collect()).to_string())
    }

    pub fn values(&mut self, store: &str, scan: Option<&str>) -> Result<String> {
        Ok(Value::Array(self.tx.values(store, &scan_from(scan)?)?).to_string())
    }

    /// Records for a JSON array of keys, `null` where missing.
    pub fn values_of(&mut self, store: &str, keys: &str) -> Result<String> {
        let values = self.tx.values_of(store, &keys_from(keys)?)?;
        Ok(Value::Array(values.into_iter().map(|v| v.unwrap_or(Value::Null)).collect()).to_string())
    }

    /// `{"rows": [...]}` for a SELECT, `{"changed": n}` otherwise.
    pub fn sql(&mut self, text: &str, params: Option<&str>) -> Result<String> {
        let params = match params.map(|p| parse("SQL parameters", p)).transpose()? {
            None => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(Error::InvalidArgument(format!("SQL parameters: expected an array, got {other}")))
            }
        };
        Ok(match sql::execute_in(self.tx, text, &params)? {
            sql::SqlOutput::Rows(rows) => json!({ "rows": rows }),
            sql::SqlOutput::Changed(n) => json!({ "changed": n }),
        }
        .to_string())
    }
}

/// What a cursor visitor answers for each record.
pub enum CursorReply {
    Continue,
    Stop,
    Update(String),
    Delete,
    /// Stop, and fail the cursor (rolling back its writes) with this message.
    Fail(String),
}

/// An open database. Cheap to clone; closes when `close` is called or the last clone goes.
#[derive(Clone)]
pub struct Db {
    inner: Arc<AsyncDatabase>,
}

impl Db {
    /// Opens on a worker thread. `options`: `{"mechanism": "sqlite" | "memory",
    /// "idleTransactionTimeoutMs": n}`. Argument errors are returned at once; the open itself
    /// completes through `done`.
    pub fn open(
        name: &str,
        schema: Option<&str>,
        options: Option<&str>,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<Db> {
        let schema = schema.map(Schema::from_json).transpose()?;
        let mut executor = ExecutorOptions::default();
        if let Some(options) = options {
            let value = parse("open options", options)?;
            let map = value
                .as_object()
                .ok_or_else(|| Error::InvalidArgument(format!("open options: expected an object, got {value}")))?;
            for (field, v) in map {
                match (field.as_str(), v) {
                    ("mechanism", Value::String(m)) => {
                        executor.open = OpenOptions { mechanism: MechanismKind::from_name(m)? }
                    }
                    ("idleTransactionTimeoutMs", v) if v.as_u64().is_some() => {
                        executor.idle_transaction_timeout = std::time::Duration::from_millis(v.as_u64().unwrap())
                    }
                    (other, v) => {
                        return Err(Error::InvalidArgument(format!(
                        "open options: {other:?} = {v} is not understood (known: mechanism, idleTransactionTimeoutMs)"
                    )))
                    }
                }
            }
        }
        Ok(Db { inner: Arc::new(AsyncDatabase::open(name, schema, executor, done)?) })
    }

    /// Runs `work` on the worker: inside transaction `within`, or in a transaction of its own
    /// over `stores` in `mode`.
    pub fn run<T: Send + 'static>(
        &self,
        within: Within,
        stores: Vec<String>,
        mode: Mode,
        work: impl FnOnce(&mut JsonTx) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) {
        match within {
            Some(id) => self.inner.submit_in(id, move |tx| work(&mut JsonTx { tx }), done),
            None => self.inner.submit(
                move |db: &mut Database| {
                    let stores: Vec<&str> = stores.iter().map(String::as_str).collect();
                    db.run(&stores, mode, |tx| work(&mut JsonTx { tx }))
                },
                done,
            ),
        }
    }

    /// A point read outside any transaction: one storage statement, no BEGIN/COMMIT.
    pub fn get(&self, within: Within, store: String, key: String, done: impl FnOnce(Result<String>) + Send + 'static) {
        if within.is_some() {
            return self.run(within, vec![store.clone()], Mode::ReadOnly, move |t| t.get(&store, &key), done);
        }
        self.inner.submit(
            move |db: &mut Database| Ok(db.get(&store, &key_from(&key)?)?.unwrap_or(Value::Null).to_string()),
            done,
        );
    }

    /// Records for a JSON array of keys; outside a transaction a synced store fetches what its
    /// cache lacks.
    pub fn values_of(
        &self,
        within: Within,
        store: String,
        keys: String,
        done: impl FnOnce(Result<String>) + Send + 'static,
    ) {
        if within.is_some() {
            return self.run(within, vec![store.clone()], Mode::ReadOnly, move |t| t.values_of(&store, &keys), done);
        }
        self.inner.submit(
            move |db: &mut Database| {
                let values = db.values_of(&store, &keys_from(&keys)?)?;
                Ok(Value::Array(values.into_iter().map(|v| v.unwrap_or(Value::Null)).collect()).to_string())
            },
            done,
        );
    }

    /// Sends the outbox: `{"sent", "pending", "rejected": [{"sequence", "status", "message"}]}`.
    pub fn flush(&self, done: impl FnOnce(Result<String>) + Send + 'static) {
        self.inner.submit(
            |db: &mut Database| {
                let report = db.flush()?;
                let rejected: Vec<Value> = report
                    .rejected
                    .iter()
                    .map(|(sequence, e)| json!({"sequence": sequence, "status": format!("{:?}", e.code()), "message": e.to_string()}))
                    .collect();
                Ok(json!({"sent": report.sent, "pending": report.pending, "rejected": rejected}).to_string())
            },
            done,
        );
    }

    /// Request counts, bytes and cost so far (see `Stats::to_json`); `reset` starts again.
    pub fn sync_stats(&self, reset: bool, done: impl FnOnce(Result<String>) + Send + 'static) {
        self.inner.submit(
            move |db: &mut Database| {
                Ok(if reset { db.take_sync_stats() } else { db.sync_stats() }.to_json().to_string())
            },
            done,
        );
    }

    pub fn prefetch(&self, store: String, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.inner.submit(move |db: &mut Database| db.prefetch(&store), done);
    }

    pub fn set_offline(&self, offline: bool, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.inner.submit(
            move |db: &mut Database| {
                db.set_offline(offline);
                Ok(())
            },
            done,
        );
    }

    pub fn begin(&self, stores: Vec<String>, mode: Mode, done: impl FnOnce(Result<TxId>) + Send + 'static) {
        self.inner.begin(stores, mode, done);
    }

    pub fn commit(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.inner.commit(tx, done);
    }

    pub fn abort(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.inner.abort(tx, done);
    }

    /// Events as JSON objects `{"kind", "store"?, "key"?, "value"?, "message"?}`, delivered
    /// on the worker thread. `filter`: `{"kinds"?: [names], "store"?: name}`.
    pub fn subscribe(
        &self,
        filter: Option<&str>,
        mut listener: impl FnMut(&str) + Send + 'static,
        done: impl FnOnce(Result<SubscriptionId>) + Send + 'static,
    ) -> Result<()> {
        let mut events = EventFilter::all();
        if let Some(text) = filter {
            let value = parse("event filter", text)?;
            for (field, v) in
                value.as_object().ok_or_else(|| Error::InvalidArgument("event filter: expected an object".into()))?
            {
                match (field.as_str(), v) {
                    ("store", Value::String(s)) => events.store = Some(s.clone()),
                    ("kinds", Value::Array(kinds)) => {
                        for k in kinds {
                            let kind = k.as_str().and_then(EventKind::from_name).ok_or_else(|| {
                                Error::InvalidArgument(format!(
                                    "event filter: unknown kind {k} (known: created, updated, deleted, ready, error)"
                                ))
                            })?;
                            events.kinds.push(kind);
                        }
                    }
                    (other, _) => {
                        return Err(Error::InvalidArgument(format!(
                            "event filter: {other:?} is not understood (known: kinds, store)"
                        )))
                    }
                }
            }
        }
        let forward = Box::new(move |e: &objstore_db_core::Event| {
            let text = json!({
                "kind": e.kind.name(),
                "store": e.store,
                "key": e.key.as_ref().map(Key::to_json),
                "value": e.value,
                "message": e.message,
            });
            listener(&text.to_string());
        });
        self.inner.subscribe(events, forward, done);
        Ok(())
    }

    pub fn unsubscribe(&self, id: SubscriptionId, done: impl FnOnce(Result<bool>) + Send + 'static) {
        self.inner.unsubscribe(id, done);
    }

    pub fn close(&self, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.inner.close(done);
    }

    /// A query (JSON form of [`Query::from_json`]) whose `list` pages continue call to call.
    pub fn query(&self, spec: &str) -> Result<QueryHandle> {
        let query = Query::from_json(&parse("query", spec)?)?;
        Ok(QueryHandle { db: self.clone(), query: Arc::new(Mutex::new(query)) })
    }
}

/// A query bound to a database; its paging position lives here.
#[derive(Clone)]
pub struct QueryHandle {
    db: Db,
    query: Arc<Mutex<Query>>,
}

impl QueryHandle {
    fn store(&self) -> Vec<String> {
        vec![lock(&self.query).store().to_string()]
    }

    /// The next `n` records as a JSON array (empty at the end).
    pub fn list(&self, within: Within, n: usize, done: impl FnOnce(Result<String>) + Send + 'static) {
        let query = self.query.clone();
        self.db.run(
            within,
            self.store(),
            Mode::ReadOnly,
            move |t| {
                let mut q = lock(&query);
                Ok(Value::Array(q.list_in(t.tx, n)?).to_string())
            },
            done,
        );
    }

    pub fn count(&self, within: Within, done: impl FnOnce(Result<String>) + Send + 'static) {
        let query = self.query.clone();
        self.db.run(within, self.store(), Mode::ReadOnly, move |t| Ok(lock(&query).count_in(t.tx)?.to_string()), done);
    }

    /// The plan, as a JSON string.
    pub fn explain(&self, within: Within, done: impl FnOnce(Result<String>) + Send + 'static) {
        let query = self.query.clone();
        self.db.run(
            within,
            self.store(),
            Mode::ReadOnly,
            move |t| Ok(Value::String(lock(&query).explain_in(t.tx)?.to_string()).to_string()),
            done,
        );
    }

    /// Merges a JSON patch into every match; the number changed.
    pub fn patch(&self, within: Within, patch: String, done: impl FnOnce(Result<String>) + Send + 'static) {
        let query = self.query.clone();
        self.db.run(
            within,
            self.store(),
            Mode::ReadWrite,
            move |t| Ok(lock(&query).patch_in(t.tx, &parse("patch", &patch)?)?.to_string()),
            done,
        );
    }

    pub fn delete(&self, within: Within, done: impl FnOnce(Result<String>) + Send + 'static) {
        let query = self.query.clone();
        self.db.run(
            within,
            self.store(),
            Mode::ReadWrite,
            move |t| Ok(lock(&query).delete_in(t.tx)?.to_string()),
            done,
        );
    }

    /// Streams every match to `visit` as `{"key", "primaryKey", "value"}` JSON, on the worker
    /// thread; `done` gets the number visited.
    pub fn open_cursor(
        &self,
        within: Within,
        mode: Mode,
        mut visit: impl FnMut(&str) -> CursorReply + Send + 'static,
        done: impl FnOnce(Result<String>) + Send + 'static,
    ) {
        let query = self.query.clone();
        self.db.run(
            within,
            self.store(),
            mode,
            move |t| {
                let q = lock(&query).clone();
                let visited = q.open_in(t.tx, |item| {
                    let text = json!({"key": item.key.to_json(), "primaryKey": item.primary_key.to_json(), "value": item.value});
                    match visit(&text.to_string()) {
                        CursorReply::Continue => Ok(Step::Continue),
                        CursorReply::Stop => Ok(Step::Stop),
                        CursorReply::Delete => {
                            item.delete();
                            Ok(Step::Continue)
                        }
                        CursorReply::Update(value) => {
                            item.update(parse("cursor update", &value)?);
                            Ok(Step::Continue)
                        }
                        CursorReply::Fail(message) => Err(Error::InvalidArgument(format!("cursor stopped by its visitor: {message}"))),
                    }
                })?;
                Ok(visited.to_string())
            },
            done,
        );
    }
}

fn lock(query: &Mutex<Query>) -> std::sync::MutexGuard<'_, Query> {
    query.lock().unwrap_or_else(|p| p.into_inner())
}
