//! Queries bound to a database, and pull cursors over them. A query's `list` pages continue
//! from call to call; a cursor hands out batches (`next`), and its `update` / `delete` change
//! a record it returned. Each step is an ordinary request, so the caller may do anything
//! (other requests included) between two steps. The query state is locked on the worker, and
//! on the caller's thread only by `list_now` / `count_now`, which run when nothing is queued.

use std::sync::{Arc, Mutex, MutexGuard};

use objstore_db_core::{Error, Key, KeyRange, Mode, Plan, Query, Result, Tx};
use serde_json::{json, Value};

use super::{Db, Encoding, Freshness, RequestId, Within};
use objstore_db_core::ReadScope;

fn lock(query: &Mutex<Query>) -> MutexGuard<'_, Query> {
    query.lock().unwrap_or_else(|p| p.into_inner())
}

/// A query bound to a database; its paging position lives here.
#[derive(Clone)]
pub struct QueryHandle {
    db: Db,
    /// Kept outside the query's lock: the caller's thread never takes it.
    store: String,
    /// The query as built, at its start: cursors copy it without the lock.
    start: Arc<Query>,
    query: Arc<Mutex<Query>>,
}

impl QueryHandle {
    pub(super) fn new(db: Db, query: Query) -> Result<QueryHandle> {
        let store = query.store().to_string();
        Ok(QueryHandle { db, store, start: Arc::new(query.clone()), query: Arc::new(Mutex::new(query)) })
    }

    pub fn store(&self) -> &str {
        &self.store
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The next `n` records as an array (empty at the end), in `encoding`.
    pub fn list<E: Encoding>(
        &self,
        within: Within,
        n: usize,
        read: Freshness,
        encoding: E,
        done: impl FnOnce(Result<E::Out>) + Send + 'static,
    ) -> Result<RequestId> {
        let query = self.query.clone();
        let page = move |tx: &mut Tx| encoding.page(&mut lock(&query), tx, n);
        self.db.read(within, ReadScope::store(&self.store, read), page, done)
    }

    /// [`QueryHandle::list`] answered now, on the caller's thread, when it can be (see
    /// [`Db::get_now`]). `None`: make the request.
    pub fn list_now<E: Encoding>(&self, n: usize, read: Freshness, encoding: E) -> Option<Result<E::Out>> {
        let scope = ReadScope::store(&self.store, read);
        self.db.read_now(&scope, |tx| encoding.page(&mut lock(&self.query), tx, n))
    }

    /// [`QueryHandle::count`] answered now, when it can be.
    pub fn count_now(&self, read: Freshness) -> Option<Result<u64>> {
        let scope = ReadScope::store(&self.store, read);
        self.db.read_now(&scope, |tx| lock(&self.query).count_in(tx))
    }

    /// The result is how many records match (paging aside).
    pub fn count(
        &self,
        within: Within,
        read: Freshness,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let query = self.query.clone();
        self.db.read(within, ReadScope::store(&self.store, read), move |tx| lock(&query).count_in(tx), done)
    }

    /// The result is how the query runs, core's [`Plan`]: what it scans (the store or an
    /// index), the conditions the range serves and those checked on each record, and any sort
    /// in memory; its `Display` is the line `explain` shows.
    pub fn explain(&self, within: Within, done: impl FnOnce(Result<Plan>) + Send + 'static) -> Result<RequestId> {
        let query = self.query.clone();
        self.db.read(
            within,
            ReadScope::store(&self.store, Freshness::Cached),
            move |tx| lock(&query).explain_in(tx),
            done,
        )
    }

    /// Merges a JSON merge patch into every match; the result is how many records changed.
    pub fn patch(
        &self,
        within: Within,
        patch: Value,
        done: impl FnOnce(Result<u64>) + Send + 'static,
    ) -> Result<RequestId> {
        let query = self.query.clone();
        self.db.write(within, vec![self.store.clone()], move |tx| lock(&query).patch_in(tx, &patch), done)
    }

    /// Removes every match; the result is how many records went.
    pub fn delete(&self, within: Within, done: impl FnOnce(Result<u64>) + Send + 'static) -> Result<RequestId> {
        let query = self.query.clone();
        self.db.write(within, vec![self.store.clone()], move |tx| lock(&query).delete_in(tx), done)
    }

    /// A pull cursor over the matches from the start (this handle's paging is untouched).
    /// `mode` ReadWrite lets it update and delete what it returned.
    pub fn cursor(&self, within: Within, mode: Mode) -> Cursor {
        // From the query as built, never from the handle's locked state: a `list` running a
        // sort on the worker does not hold up the caller (Python holds its GIL here).
        let mut query = Query::clone(&self.start);
        query.reset();
        Cursor { db: self.db.clone(), store: self.store.clone(), within, mode, query: Arc::new(Mutex::new(query)) }
    }
}

/// A pull cursor. Outside a transaction each step reads a consistent batch of its own and the
/// next one resumes after the last record returned (keyset), so records written between steps
/// are seen or not by their key. Dropping it closes it; a clone shares its position.
#[derive(Clone)]
pub struct Cursor {
    db: Db,
    store: String,
    within: Within,
    mode: Mode,
    query: Arc<Mutex<Query>>,
}

impl Cursor {
    /// The next batch of at most `n` items `{"key", "primaryKey", "value"}`; an empty batch is
    /// the end.
    pub fn next(
        &self,
        n: usize,
        read: Freshness,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<RequestId> {
        if n == 0 {
            return Err(Error::InvalidArgument("a cursor batch must ask for at least one record".into()));
        }
        let query = self.query.clone();
        let step = move |tx: &mut Tx| {
            let items = lock(&query).next_in(tx, n)?;
            Ok(Value::Array(
                items
                    .into_iter()
                    .map(|i| json!({"key": i.key.to_json(), "primaryKey": i.primary_key.to_json(), "value": i.value}))
                    .collect(),
            ))
        };
        self.db.read(self.within, ReadScope::store(&self.store, read), step, done)
    }

    fn writable(&self) -> Result<()> {
        match self.mode {
            Mode::ReadWrite => Ok(()),
            Mode::ReadOnly => Err(Error::ReadOnly { store: self.store.clone() }),
        }
    }

    /// Replaces the record under `key` (a primary key this cursor returned) with `value`; the key
    /// must stay the same. The result is nothing.
    pub fn update(&self, key: Key, value: Value, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<RequestId> {
        self.writable()?;
        let query = self.query.clone();
        self.db.write(self.within, vec![self.store.clone()], move |tx| lock(&query).update_in(tx, &key, value), done)
    }

    /// Removes the record under `key` (a primary key this cursor returned); the result is how
    /// many records went (0 or 1).
    pub fn delete(&self, key: Key, done: impl FnOnce(Result<u64>) + Send + 'static) -> Result<RequestId> {
        self.writable()?;
        let store = self.store.clone();
        self.db.write(self.within, vec![store.clone()], move |tx| tx.remove(&store, &KeyRange::Only(key)), done)
    }
}
