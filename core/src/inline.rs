//! Reads on the caller's thread. A read made while the database has no request queued or
//! running and no explicit transaction open runs at once, on the caller's thread, on a reader
//! of its own (a read-only SQLite connection in WAL mode, or the memory mechanism under its
//! read lock). It sees what the worker would: every write submitted before it has committed.
//! That saves the two thread hops of a request, most of an awaited point get's cost.
//!
//! The executor counts requests in (`submitted`) and out (`finished`, `dropped`); a read finds
//! the database idle when the count is zero and no transaction is open. A write submitted
//! while a read runs here is concurrent with it: the read sees it or not, never half of it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crate::database::Database;
use crate::error::{Error, Result};
use crate::mechanism::OpenReader;

/// How many readers a database keeps at most: threads reading at once beyond it go through
/// the worker.
const MOST_READERS: usize = 4;

#[derive(Default)]
struct Pool {
    idle: Vec<Database>,
    /// Readers taken out by reads running now.
    out: usize,
    closed: bool,
    /// A reader could not be opened: reads go through the worker from then on.
    broken: bool,
}

pub(crate) struct Inline {
    name: Arc<str>,
    /// Requests submitted and not yet run or cancelled, those waiting for a transaction among
    /// them.
    in_flight: AtomicUsize,
    transaction_open: AtomicBool,
    /// Set by the worker once the database is open.
    opener: OnceLock<OpenReader>,
    pool: Mutex<Pool>,
    returned: Condvar,
}

impl Inline {
    pub(crate) fn new(name: Arc<str>) -> Inline {
        Inline {
            name,
            in_flight: AtomicUsize::new(0),
            transaction_open: AtomicBool::new(false),
            opener: OnceLock::new(),
            pool: Mutex::default(),
            returned: Condvar::new(),
        }
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request is about to be queued.
    pub(crate) fn submitted(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    /// A request ran (its writes are committed, or it left a transaction open).
    pub(crate) fn finished(&self, db: &Database) {
        self.transaction_open.store(db.active_transaction().is_some(), Ordering::SeqCst);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// A request was cancelled or refused without running.
    pub(crate) fn dropped(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// The worker aborted the open transaction on its own (idle too long).
    pub(crate) fn transaction_ended(&self) {
        self.transaction_open.store(false, Ordering::SeqCst);
    }

    /// The database is open: readers of it may be made.
    pub(crate) fn enable(&self, opener: OpenReader) {
        let _ = self.opener.set(opener);
    }

    /// The database is closing: no more reads here, and the readers are closed before this
    /// returns (it waits for reads running now, which never wait for anything).
    pub(crate) fn close(&self) {
        let mut pool = self.pool();
        pool.closed = true;
        let idle = std::mem::take(&mut pool.idle);
        while pool.out > 0 {
            pool = self.returned.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
        drop(pool);
        drop(idle);
    }

    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0 && !self.transaction_open.load(Ordering::SeqCst)
    }

    /// Runs `work` now, on this thread, when the database is idle and a reader that knows
    /// every one of `stores` can be had; otherwise gives `work` back, unrun, for the worker.
    pub(crate) fn read<T, W>(&self, stores: &[&str], work: W) -> std::result::Result<Result<T>, W>
    where
        W: FnOnce(&mut Database) -> Result<T>,
    {
        if !self.idle() {
            return Err(work);
        }
        let Some(mut reader) = self.take(stores) else {
            return Err(work);
        };
        if reader.mech.hold_view().is_err() {
            self.give_back(Some(reader));
            return Err(work);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| work(&mut reader)));
        reader.mech.release_view();
        match outcome {
            Ok(result) => {
                self.give_back(Some(reader));
                Ok(result)
            }
            Err(_) => {
                // Closed before it is counted back: close must not go on while it is open.
                drop(reader);
                self.give_back(None);
                Ok(Err(Error::Internal("a read panicked".into())))
            }
        }
    }

    /// A reader that knows `stores`: an idle one, or a new one (whose catalog is read now, so
    /// that it knows a store created since the others were made).
    fn take(&self, stores: &[&str]) -> Option<Database> {
        let knows = |db: &Database| stores.iter().all(|s| db.has_store(s));
        let mut pool = self.pool();
        if pool.closed || pool.broken {
            return None;
        }
        if let Some(at) = pool.idle.iter().rposition(knows) {
            pool.out += 1;
            return Some(pool.idle.swap_remove(at));
        }
        if pool.idle.len() + pool.out >= MOST_READERS {
            // Make room for a reader with a newer catalog.
            pool.idle.pop()?;
        }
        let opener = self.opener.get()?.clone();
        pool.out += 1;
        drop(pool);
        let made = catch_unwind(AssertUnwindSafe(|| opener().map(|mech| Database::reader(&self.name, mech))));
        match made {
            Ok(Ok(Ok(reader))) if knows(&reader) => Some(reader),
            Ok(Ok(Ok(reader))) => {
                self.give_back(Some(reader));
                None
            }
            // Its catalog could not be read now (a write transaction holds the memory maps):
            // the next read tries again.
            Ok(Ok(Err(_))) => {
                self.give_back(None);
                None
            }
            // No reader can be opened (or opening one panicked): reads stay on the worker.
            Ok(Err(_)) | Err(_) => {
                self.pool().broken = true;
                self.give_back(None);
                None
            }
        }
    }

    fn give_back(&self, reader: Option<Database>) {
        let mut pool = self.pool();
        pool.out -= 1;
        let closed = pool.closed;
        if let (Some(reader), false) = (reader, closed) {
            pool.idle.push(reader);
        }
        // Only close waits for readers to come back (a wake-up is a system call: not per read).
        if pool.out == 0 && closed {
            self.returned.notify_all();
        }
    }
}
