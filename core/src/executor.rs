//! The executor: one worker thread owns each open database and runs submitted requests; every
//! request completes exactly once through its completion callback.
//!
//! Ordering guarantee: requests run one at a time, in the order they were submitted (the order
//! in which their `submit` calls returned, across all threads). Each completion fires on the
//! worker thread as soon as its request finishes, so completions arrive in that order too.
//! While an explicit transaction is open, requests that are not part of it wait, keeping their
//! order, and run after it commits, aborts or is aborted for being idle.
//!
//! Exactly once: a request completes with its result, with an error, with `Cancelled` when the
//! database closes before it ran, or with `Closed` when it was submitted after close. A panic in
//! a request becomes an `Internal` error; a panic in a completion is contained.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crate::database::{Database, Mode, OpenOptions, Tx, TxId};
use crate::error::{Error, Result};
use crate::events::{EventFilter, Listener, SubscriptionId};
use crate::schema::Schema;

/// How long an explicit transaction may sit without a request before it is aborted.
pub const DEFAULT_IDLE_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(30);

/// A request as the worker sees it: run it, or cancel it with an error; either consumes it.
trait Request: Send {
    fn transaction(&self) -> Option<TxId>;
    fn run(self: Box<Self>, db: &mut Database);
    fn cancel(self: Box<Self>, error: Error);
}

struct Task<T, W, C>
where
    C: FnOnce(Result<T>),
{
    transaction: Option<TxId>,
    work: Option<W>,
    done: Option<C>,
    database: Arc<str>,
    _result: std::marker::PhantomData<fn() -> T>,
}

impl<T, W, C: FnOnce(Result<T>)> Task<T, W, C> {
    fn complete(&mut self, result: Result<T>) {
        if let Some(done) = self.done.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| done(result)));
        }
    }
}

impl<T, W, C: FnOnce(Result<T>)> Drop for Task<T, W, C> {
    /// The guard behind "exactly once": a request dropped unrun (say, left in the queue when the
    /// worker stopped) still completes, as cancelled.
    fn drop(&mut self) {
        let database = self.database.to_string();
        self.complete(Err(Error::Cancelled(database)));
    }
}

impl<T, W, C> Request for Task<T, W, C>
where
    T: Send + 'static,
    W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
    C: FnOnce(Result<T>) + Send + 'static,
{
    fn transaction(&self) -> Option<TxId> {
        self.transaction
    }

    fn run(mut self: Box<Self>, db: &mut Database) {
        let work = self.work.take().expect("a request runs once");
        let result = catch_unwind(AssertUnwindSafe(|| work(db))).unwrap_or_else(|panic| {
            db.abort_active("a request in it panicked");
            Err(Error::Internal(format!("request panicked: {}", panic_message(&panic))))
        });
        self.complete(result);
    }

    fn cancel(mut self: Box<Self>, error: Error) {
        self.complete(Err(error));
    }
}

enum Message {
    Request(Box<dyn Request>),
    Close(Box<dyn FnOnce(Result<()>) + Send>),
}

#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub open: OpenOptions,
    pub idle_transaction_timeout: Duration,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions { open: OpenOptions::default(), idle_transaction_timeout: DEFAULT_IDLE_TRANSACTION_TIMEOUT }
    }
}

/// A database on its own worker thread. Share it between threads with an `Arc`; dropping the
/// last handle closes the database and waits for the worker to finish.
pub struct AsyncDatabase {
    name: Arc<str>,
    closed: Arc<AtomicBool>,
    sender: Sender<Message>,
    worker: Mutex<Option<JoinHandle<()>>>,
    worker_id: ThreadId,
}

impl AsyncDatabase {
    /// Starts the worker and opens the database on it; `done` fires with the outcome. Requests
    /// may be submitted at once: they run after the open, or fail with its error.
    pub fn open(
        name: &str,
        schema: Option<Schema>,
        options: ExecutorOptions,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<AsyncDatabase> {
        let name: Arc<str> = Arc::from(name);
        let closed = Arc::new(AtomicBool::new(false));
        let (sender, receiver) = mpsc::channel();
        let worker =
            Worker { name: name.clone(), closed: closed.clone(), receiver, options, deferred: VecDeque::new() };
        let handle = thread::Builder::new()
            .name(format!("objstore-db {}", crate::key::truncate(&name, 40)))
            .spawn(move || worker.run(schema, done))
            .map_err(|e| Error::Internal(format!("cannot start the worker thread: {e}")))?;
        let worker_id = handle.thread().id();
        Ok(AsyncDatabase { name, closed, sender, worker: Mutex::new(Some(handle)), worker_id })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `work` to run on the worker; `done` gets its result.
    pub fn submit<T, W, C>(&self, work: W, done: C)
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.send(None, work, done);
    }

    /// Queues `work` as part of the explicit transaction `tx`.
    pub fn submit_in<T, W, C>(&self, tx: TxId, work: W, done: C)
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.send(Some(tx), move |db: &mut Database| work(&mut db.transaction(tx)?), done);
    }

    /// Starts an explicit transaction. Until it ends, other requests wait.
    pub fn begin(&self, stores: Vec<String>, mode: Mode, done: impl FnOnce(Result<TxId>) + Send + 'static) {
        self.submit(move |db| db.begin(&stores.iter().map(String::as_str).collect::<Vec<_>>(), mode), done);
    }

    pub fn commit(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.send(Some(tx), move |db: &mut Database| db.commit(tx), done);
    }

    pub fn abort(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) {
        self.send(Some(tx), move |db: &mut Database| db.abort(tx), done);
    }

    /// Adds an event listener; it runs on the worker thread. See [`Database::subscribe`].
    pub fn subscribe(
        &self,
        filter: EventFilter,
        listener: Listener,
        done: impl FnOnce(Result<SubscriptionId>) + Send + 'static,
    ) {
        self.submit(move |db| Ok(db.subscribe(filter, listener)), done);
    }

    pub fn unsubscribe(&self, id: SubscriptionId, done: impl FnOnce(Result<bool>) + Send + 'static) {
        self.submit(move |db| Ok(db.unsubscribe(id)), done);
    }

    /// Closes the database: requests still queued are cancelled, an open transaction is rolled
    /// back, and `done` fires once the file is closed. A second close fails with `Closed`.
    pub fn close(&self, done: impl FnOnce(Result<()>) + Send + 'static) {
        if self.closed.swap(true, Ordering::AcqRel) {
            let name = self.name.to_string();
            deliver_later(move || done(Err(Error::Closed(name))));
            return;
        }
        if let Err(mpsc::SendError(Message::Close(done))) = self.sender.send(Message::Close(Box::new(done))) {
            deliver_later(move || done(Ok(())));
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn send<T, W, C>(&self, transaction: Option<TxId>, work: W, done: C)
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        let task: Box<dyn Request> = Box::new(Task {
            transaction,
            work: Some(work),
            done: Some(done),
            database: self.name.clone(),
            _result: std::marker::PhantomData,
        });
        let closed = Error::Closed(self.name.to_string());
        if self.is_closed() {
            deliver_later(move || task.cancel(closed));
        } else if let Err(mpsc::SendError(Message::Request(task))) = self.sender.send(Message::Request(task)) {
            deliver_later(move || task.cancel(closed));
        }
    }
}

impl Drop for AsyncDatabase {
    fn drop(&mut self) {
        if !self.is_closed() {
            self.close(|_| {});
        }
        // Joining from the worker itself (a listener dropping the last handle) would deadlock.
        if thread::current().id() != self.worker_id {
            if let Some(handle) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = handle.join();
            }
        }
    }
}

/// Completes a request that never reached the worker, on a thread of its own, so that no
/// completion ever runs inside the call that submitted it.
fn deliver_later(f: impl FnOnce() + Send + 'static) {
    // Should no thread be had, the closure is dropped: a request inside it still completes
    // (as cancelled) through Task's drop guard.
    let _ = thread::Builder::new().name("objstore-db late completion".into()).spawn(f);
}

struct Worker {
    name: Arc<str>,
    closed: Arc<AtomicBool>,
    receiver: Receiver<Message>,
    options: ExecutorOptions,
    /// Requests held back while an explicit transaction is open.
    deferred: VecDeque<Box<dyn Request>>,
}

impl Worker {
    fn run(mut self, schema: Option<Schema>, done: impl FnOnce(Result<()>)) {
        let opened = catch_unwind(AssertUnwindSafe(|| Database::open(&self.name, schema, &self.options.open)))
            .unwrap_or_else(|panic| Err(Error::Internal(format!("open panicked: {}", panic_message(&panic)))));
        match opened {
            Ok(mut db) => {
                let _ = catch_unwind(AssertUnwindSafe(|| done(Ok(()))));
                let close_done = self.serve(&mut db);
                drop(db); // the file is closed before close's completion fires
                if let Some(close_done) = close_done {
                    let _ = catch_unwind(AssertUnwindSafe(|| close_done(Ok(()))));
                }
            }
            Err(error) => {
                let (code, reason) = (error.code(), error.to_string());
                let _ = catch_unwind(AssertUnwindSafe(|| done(Err(error))));
                let database = self.name.to_string();
                self.refuse(|| Error::NotOpen { database: database.clone(), code, reason: reason.clone() });
            }
        }
    }

    /// Runs requests until close (returning its completion) or until every handle is gone.
    fn serve(&mut self, db: &mut Database) -> Option<Box<dyn FnOnce(Result<()>) + Send>> {
        let idle_limit = self.options.idle_transaction_timeout;
        let mut last_in_transaction = Instant::now();
        loop {
            let active = db.active_transaction();
            let next = match (active, self.deferred.pop_front()) {
                (None, Some(request)) => Ok(Message::Request(request)),
                (None, None) => self.receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
                (Some(_), held) => {
                    if let Some(request) = held {
                        self.deferred.push_front(request);
                    }
                    self.receiver.recv_timeout(idle_limit.saturating_sub(last_in_transaction.elapsed()))
                }
            };
            let message = match next {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    db.abort_active(&format!("aborted after {} ms without a request", idle_limit.as_millis()));
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.shut_down(db);
                    return None;
                }
            };
            match message {
                Message::Close(done) => {
                    self.shut_down(db);
                    return Some(done);
                }
                Message::Request(request) if self.closed.load(Ordering::Acquire) => {
                    request.cancel(Error::Cancelled(self.name.to_string()));
                }
                Message::Request(request) if active.is_some() && request.transaction().is_none() => {
                    self.deferred.push_back(request);
                }
                Message::Request(request) => {
                    request.run(db);
                    last_in_transaction = Instant::now();
                }
            }
        }
    }

    /// Cancels everything not yet run and rolls back an open transaction.
    fn shut_down(&mut self, db: &mut Database) {
        db.abort_active("the database closed");
        let name = self.name.to_string();
        for request in self.deferred.drain(..) {
            request.cancel(Error::Cancelled(name.clone()));
        }
        while let Ok(message) = self.receiver.try_recv() {
            match message {
                Message::Request(request) => request.cancel(Error::Cancelled(name.clone())),
                Message::Close(done) => {
                    let _ = catch_unwind(AssertUnwindSafe(|| done(Err(Error::Closed(name.clone())))));
                }
            }
        }
    }

    /// After a failed open: every request fails with the open's error until close.
    fn refuse(&mut self, error: impl Fn() -> Error) {
        while let Ok(message) = self.receiver.recv() {
            match message {
                Message::Request(request) => request.cancel(error()),
                Message::Close(done) => {
                    let _ = catch_unwind(AssertUnwindSafe(|| done(Ok(()))));
                    break;
                }
            }
        }
        let name = self.name.to_string();
        while let Ok(message) = self.receiver.try_recv() {
            if let Message::Request(request) = message {
                request.cancel(Error::Cancelled(name.clone()));
            }
        }
    }
}

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}
