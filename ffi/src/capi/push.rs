//! The C push cursor, a convenience on top of the pull cursor: batches are pulled and shown to
//! the visitor one record at a time on a library thread; its updates and deletes are queued
//! before the next batch (requests run in order, so the next batch sees them). Without a
//! transaction of the caller's, a read-write cursor runs in one of its own, committed at the
//! end and rolled back when anything fails, as a single request would be.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use objstore_db_core::{Error, Key, Mode, Result, TxId};
use serde_json::Value;

use super::args::{c_string, completion, json, mode, request, within};
use super::query::query_ref;
use super::{
    ObjstoreCallback, ObjstoreCursorFn, ObjstoreQuery, ObjstoreStatus, OBJSTORE_CURSOR_CONTINUE,
    OBJSTORE_CURSOR_DELETE, OBJSTORE_CURSOR_STOP, OBJSTORE_CURSOR_UPDATE,
};
use crate::rsapi::{Cursor, Db, Freshness, QueryHandle, RequestId, Within};

/// Records pulled per batch.
const BATCH: usize = 256;

/// Shows every match of the query to `visit`, one record at a time in batches of 256, applying
/// what it returns (OBJSTORE_CURSOR_*) before the next batch; `done` gets the number of
/// records shown. Memory stays flat when an index or the primary key gives the order. `mode_`:
/// OBJSTORE_MODE_READONLY, or OBJSTORE_MODE_READWRITE to let the visitor update and delete.
/// `tx`: 0, or an id from objstore_db_begin; read-write with 0 runs in a transaction of its
/// own over the query's store (other requests wait), committed at the end and rolled back when
/// anything fails.
/// The visitor's `item` and the callback's `result` are owned by the library and valid only
/// during that call. To update, the visitor points `*update` and `*update_len` at the new
/// record's JSON, read after it returns: keep it valid until the visitor or `done` is next
/// called. The query may be freed once this returns.
/// If this returns OBJSTORE_STATUS_OK, `visit` runs zero or more times, then `done` exactly
/// once; never otherwise. Both run on a library thread (the database's worker or its sync
/// agent's), never inside this call. The visitor must not wait for another request of this
/// database.
/// A NULL `query`, `visit` or `done`, or another `mode_`, is OBJSTORE_STATUS_INVALID_ARGUMENT;
/// so is a visitor's unknown return value or an update that is not JSON, which ends the walk.
/// `request_out` (gets the id of the walk's first step only, for objstore_db_cancel, which
/// stops the walk while that step is pending; 0 on failure) and `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_open(
    query: *const ObjstoreQuery,
    tx: u64,
    mode_: u32,
    visit: ObjstoreCursorFn,
    visit_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (q, mode) = (query_ref(query)?, mode(mode_)?);
        let visit = visit.ok_or_else(|| Error::InvalidArgument("the cursor visitor is NULL".into()))?;
        let done = completion(done, user_data)?;
        let visitor = Visitor { visit, data: visit_data };
        start(q.db().clone(), q.clone(), within(tx), mode, visitor, move |r| done.deliver(r))
    })
}

pub(crate) struct Visitor {
    pub visit: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut *const c_char, *mut usize) -> i32,
    pub data: *mut c_void,
}

// The caller passed visit_data to an asynchronous call: it may be used from library threads.
unsafe impl Send for Visitor {}

/// What the visitor said to do with one record.
enum Step {
    Go,
    Stop,
    Update(Value),
    Delete,
}

impl Visitor {
    fn show(&self, item: &Value) -> Result<Step> {
        let text = c_string(item.to_string());
        let (mut update, mut update_len): (*const c_char, usize) = (std::ptr::null(), 0);
        let answer =
            unsafe { (self.visit)(self.data, text.as_ptr(), text.as_bytes().len(), &mut update, &mut update_len) };
        match answer {
            OBJSTORE_CURSOR_CONTINUE => Ok(Step::Go),
            OBJSTORE_CURSOR_STOP => Ok(Step::Stop),
            OBJSTORE_CURSOR_DELETE => Ok(Step::Delete),
            OBJSTORE_CURSOR_UPDATE => unsafe { json(update, update_len, "cursor update") }.map(Step::Update),
            other => Err(Error::InvalidArgument(format!(
                "the cursor visitor returned {other}, not an OBJSTORE_CURSOR_* value"
            ))),
        }
    }
}

/// A walk's completion.
type Done = Box<dyn FnOnce(Result<Value>) + Send>;

/// A walk parked until a request of its completes.
type Parked = Arc<Mutex<Option<Walk>>>;

struct Walk {
    db: Db,
    cursor: Cursor,
    visitor: Visitor,
    /// The transaction the walk opened itself, to commit or roll back at the end.
    own: Option<TxId>,
    visited: u64,
    /// The first failure of a queued update or delete.
    failed: Arc<Mutex<Option<Error>>>,
    done: Option<Done>,
}

/// Starts the walk; the returned id is its first request's.
pub(crate) fn start(
    db: Db,
    query: QueryHandle,
    within: Within,
    mode: Mode,
    visitor: Visitor,
    done: impl FnOnce(Result<Value>) + Send + 'static,
) -> Result<RequestId> {
    let done: Box<dyn FnOnce(Result<Value>) + Send> = Box::new(done);
    if within.is_none() && mode == Mode::ReadWrite {
        let (q, db2) = (query.clone(), db.clone());
        let stores = vec![query.store().to_string()];
        return db.begin(stores, mode, move |begun| match begun {
            Ok(tx) => {
                let walk = Walk::new(db2, q.cursor(Some(tx), mode), visitor, Some(tx), done);
                walk.pull();
            }
            Err(e) => done(Err(e)),
        });
    }
    let walk = Walk::new(db, query.cursor(within, mode), visitor, None, done);
    walk.pull_first()
}

impl Walk {
    fn new(
        db: Db,
        cursor: Cursor,
        visitor: Visitor,
        own: Option<TxId>,
        done: Box<dyn FnOnce(Result<Value>) + Send>,
    ) -> Walk {
        Walk { db, cursor, visitor, own, visited: 0, failed: Arc::default(), done: Some(done) }
    }

    /// The first batch: its id is the walk's, and a refusal is the caller's error.
    fn pull_first(self) -> Result<RequestId> {
        let cursor = self.cursor.clone();
        let (slot, back) = Walk::park(self);
        cursor
            .next(BATCH, Freshness::Cached, move |batch| {
                if let Some(walk) = Walk::take(&back) {
                    walk.on_batch(batch)
                }
            })
            // Refused: no completion comes, and the walk goes with the caller's error.
            .inspect_err(|_| drop(Walk::take(&slot)))
    }

    fn pull(self) {
        let cursor = self.cursor.clone();
        let (slot, back) = Walk::park(self);
        let submitted = cursor.next(BATCH, Freshness::Cached, move |batch| {
            if let Some(walk) = Walk::take(&back) {
                walk.on_batch(batch)
            }
        });
        if let Err(e) = submitted {
            if let Some(walk) = Walk::take(&slot) {
                walk.finish(Err(e));
            }
        }
    }

    /// Parks the walk where its next request's completion finds it, before that request is
    /// submitted (the completion may come before the submitting call returns). Returns the
    /// slot twice: one for the completion, one to take the walk back if the submit is refused.
    fn park(walk: Walk) -> (Parked, Parked) {
        let slot = Arc::new(Mutex::new(Some(walk)));
        (slot.clone(), slot)
    }

    fn take(slot: &Mutex<Option<Walk>>) -> Option<Walk> {
        slot.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn on_batch(mut self, batch: Result<Value>) {
        let items = match batch {
            Ok(Value::Array(items)) => items,
            Ok(other) => return self.finish(Err(Error::Internal(format!("a cursor batch was {other}")))),
            Err(e) => return self.finish(Err(e)),
        };
        if items.is_empty() {
            return self.finish(Ok(()));
        }
        let (mut actions, mut stop) = (Vec::new(), false);
        for mut item in items {
            self.visited += 1;
            match self.visitor.show(&item) {
                Ok(Step::Go) => {}
                Ok(Step::Stop) => {
                    stop = true;
                    break;
                }
                Ok(step) => match Key::from_json(&item["primaryKey"].take()) {
                    Ok(key) => actions.push((key, step)),
                    Err(e) => return self.finish(Err(e)),
                },
                Err(e) => return self.finish(Err(e)),
            }
        }
        self.apply(actions, stop);
    }

    /// Queues the batch's updates and deletes; the last one's completion (they complete in
    /// order) carries the walk on.
    fn apply(self, actions: Vec<(Key, Step)>, stop: bool) {
        let Some(last) = actions.len().checked_sub(1) else {
            return self.carry_on(stop);
        };
        let (cursor, failed) = (self.cursor.clone(), self.failed.clone());
        let (slot, _) = Walk::park(self);
        for (i, (key, step)) in actions.into_iter().enumerate() {
            let (failed, back) = (failed.clone(), slot.clone());
            let note = move |r: Result<()>| {
                if let Err(e) = r {
                    failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
                if i == last {
                    if let Some(walk) = Walk::take(&back) {
                        walk.carry_on(stop);
                    }
                }
            };
            let queued = match step {
                Step::Update(value) => cursor.update(key, value, note),
                _ => cursor.delete(key, move |r| note(r.map(drop))),
            };
            if let Err(e) = queued {
                // The last action's completion will not come: the walk ends here.
                if let Some(walk) = Walk::take(&slot) {
                    walk.finish(Err(e));
                }
                return;
            }
        }
    }

    fn carry_on(self, stop: bool) {
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner()).take();
        match (failed, stop) {
            (Some(e), _) => self.finish(Err(e)),
            (None, true) => self.finish(Ok(())),
            (None, false) => self.pull(),
        }
    }

    /// Ends the walk: its own transaction commits (or, on a failure, rolls back), then `done`
    /// gets the number visited.
    fn finish(mut self, outcome: Result<()>) {
        let done = self.done.take().expect("a walk finishes once");
        let visited = self.visited;
        let Some(tx) = self.own else {
            return done(outcome.map(|()| Value::from(visited)));
        };
        // `done` is called once: by the commit or abort, or here when that was refused (the
        // database closed, which rolled the transaction back).
        let once = Arc::new(Mutex::new(Some(done)));
        let call = |once: &Mutex<Option<Done>>, r: Result<Value>| {
            if let Some(done) = once.lock().unwrap_or_else(|p| p.into_inner()).take() {
                done(r)
            }
        };
        let back = once.clone();
        let submitted = match outcome {
            Ok(()) => self.db.commit(tx, move |r| call(&back, r.map(|()| Value::from(visited)))),
            Err(e) => self.db.abort(tx, move |_| call(&back, Err(e))),
        };
        if let Err(refused) = submitted {
            call(&once, Err(refused));
        }
    }
}
