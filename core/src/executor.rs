//! The executor: one worker thread owns each open database and runs submitted requests; every
//! request completes exactly once through its completion callback.
//!
//! Ordering guarantee: requests run one at a time, in the order they were submitted (the order
//! in which their `submit` calls returned, across all threads), except that while an explicit
//! transaction is open its own requests run ahead of those waiting for it (below). Each
//! completion fires on the worker thread as soon as its request finishes. A read made through
//! `read` / `read_now` while nothing is queued or running runs on the caller's thread instead
//! (`crate::inline`), seeing every write submitted before it.
//!
//! Transactions wait their turn, as IndexedDB queues overlapping ones: while an explicit
//! transaction is open, a request that is not part of it (a `begin` among them) waits, and
//! those that waited run in their order once it ends; the transaction's own requests keep
//! running meanwhile. A transaction left without a request for the idle timeout is aborted
//! (its later requests fail naming the timeout and how many requests waited for it), so a
//! forgotten one holds nobody for long. A waiting request that is cancelled completes at once.
//!
//! Exactly once: a request completes with its result, with an error, or with `Cancelled` when
//! its token was cancelled before it ran or the database closed first. A request made after
//! close is refused by `submit` itself (no callback). A panic in a request becomes an
//! `Internal` error; a panic in a completion is contained.
//!
//! Close: `close(done)` cancels what is queued, rolls back an open transaction, closes the
//! file, and only then calls `done` — the last callback the database makes. Dropping a handle
//! closes without waiting: no thread is ever joined, so a finalizer cannot deadlock.
//!
//! Backpressure: at most `queue_capacity` requests wait (those waiting for a transaction
//! included); a thread other than the worker that submits beyond it waits for room. The worker
//! itself never waits (a completion may submit), nor does a request that is part of a
//! transaction (the transaction must be able to end).

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::database::{Database, Mode, OpenOptions, Tx, TxId};
use crate::error::{Error, Result};
use crate::events::{EventFilter, Listener, SubscriptionId};
use crate::inline::Inline;
use crate::schema::Schema;
use crate::token::Token;

/// How long an explicit transaction may sit without a request before it is aborted.
pub const DEFAULT_IDLE_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an idle worker keeps looking for the next request before it parks.
const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(100);

/// How many requests may wait for the worker before submitters wait for room.
pub const DEFAULT_QUEUE_CAPACITY: usize = 4096;

/// A request as the worker sees it: run it, or cancel it with an error; either consumes it.
trait Request: Send {
    fn transaction(&self) -> Option<TxId>;
    fn is_cancelled(&self) -> bool;
    /// Runs the work, tells `inline` it finished, then completes.
    fn run(self: Box<Self>, db: &mut Database, inline: &Inline);
    fn cancel(self: Box<Self>, error: Error);
}

struct Task<T, W, C>
where
    C: FnOnce(Result<T>),
{
    transaction: Option<TxId>,
    token: Option<Token>,
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
    /// The guard behind "exactly once": a request dropped unrun still completes, as cancelled.
    fn drop(&mut self) {
        // Only a request that never completed says why (formatting it for every request cost
        // each of them an allocation on the worker).
        if self.done.is_some() {
            let reason = format!("database {:?} closed before it ran", self.database);
            self.complete(Err(Error::Cancelled(reason)));
        }
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

    fn is_cancelled(&self) -> bool {
        self.token.as_ref().is_some_and(Token::is_cancelled)
    }

    fn run(mut self: Box<Self>, db: &mut Database, inline: &Inline) {
        let work = self.work.take().expect("a request runs once");
        let result = catch_unwind(AssertUnwindSafe(|| work(db))).unwrap_or_else(|panic| {
            db.abort_active("a request in it panicked");
            Err(Error::Internal(format!("request panicked: {}", panic_message(&panic))))
        });
        // Before the completion: a read its caller makes next may then run on the caller's thread.
        inline.finished(db);
        self.complete(result);
    }

    fn cancel(mut self: Box<Self>, error: Error) {
        self.complete(Err(error));
    }
}

type CloseDone = Box<dyn FnOnce(Result<()>) + Send>;

enum Message {
    Request(Box<dyn Request>),
    /// A request was cancelled: those waiting for a transaction are looked at again.
    Wake,
    Close(CloseDone),
}

#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub open: OpenOptions,
    pub idle_transaction_timeout: Duration,
    pub queue_capacity: usize,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            open: OpenOptions::default(),
            idle_transaction_timeout: DEFAULT_IDLE_TRANSACTION_TIMEOUT,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
        }
    }
}

/// Requests waiting for the worker, counted for backpressure. The count is an atomic, so a
/// request costs no lock while there is room; a submitter that finds the queue full sleeps
/// until the worker has taken a quarter of it out (waking it for every single free slot would
/// switch threads once per request). Concurrent submitters may overshoot the capacity by at
/// most one request each.
struct Queue {
    waiting: AtomicUsize,
    capacity: usize,
    /// Submitters asleep for room; the worker wakes them only when there are any.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    room: Condvar,
}

impl Queue {
    fn new(capacity: usize) -> Queue {
        Queue {
            waiting: AtomicUsize::new(0),
            capacity: capacity.max(1),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            room: Condvar::new(),
        }
    }

    /// Counts a request in, first waiting for room when `may_wait`; a close (`closing`) ends
    /// the wait, and the caller then finds the database closed.
    fn enter(&self, may_wait: bool, closing: &AtomicBool) {
        if may_wait && self.waiting.load(Ordering::SeqCst) >= self.capacity {
            let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            while self.waiting.load(Ordering::SeqCst) >= self.capacity && !closing.load(Ordering::SeqCst) {
                guard = self.room.wait(guard).unwrap_or_else(|p| p.into_inner());
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts in again a request taken off the channel that waits for a transaction: it still
    /// takes room.
    fn recount(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
    }

    /// Wakes every submitter waiting for room (the database is closing).
    fn wake_all(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.room.notify_all();
    }

    fn leave(&self) {
        let left = self.waiting.fetch_sub(1, Ordering::SeqCst) - 1;
        // SeqCst on both sides: a sleeper either sees the lower count or is seen here.
        if left <= self.capacity - self.capacity.div_ceil(4) && self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.room.notify_all();
        }
    }
}

/// A database on its own worker thread. Share it between threads with an `Arc`; dropping the
/// last handle closes the database without waiting for it.
pub struct AsyncDatabase {
    name: Arc<str>,
    /// Whether close was called. Submitters hold the read lock while they send, close takes
    /// the write lock: no request can slip into the queue behind close's message. Nobody waits
    /// for room in the queue while holding it: close may be called from a callback on the
    /// worker, which alone makes room.
    closed: RwLock<bool>,
    /// The same, read by the worker without the lock: requests still queued when close was
    /// called are cancelled, not run.
    closing: Arc<AtomicBool>,
    sender: Sender<Message>,
    queue: Arc<Queue>,
    inline: Arc<Inline>,
    worker_id: ThreadId,
    worker: Mutex<Option<thread::JoinHandle<()>>>,
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
        Self::open_with(name, schema, options, |_| Ok(()), done)
    }

    /// `open`, running `prepare` on the worker right after the database opened and before any
    /// request (an error from it fails the open).
    pub fn open_with(
        name: &str,
        schema: Option<Schema>,
        options: ExecutorOptions,
        prepare: impl FnOnce(&mut Database) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<AsyncDatabase> {
        let name: Arc<str> = Arc::from(name);
        let (sender, receiver) = mpsc::channel();
        let queue = Arc::new(Queue::new(options.queue_capacity));
        let closing = Arc::new(AtomicBool::new(false));
        let inline = Arc::new(Inline::new(name.clone()));
        let worker = Worker {
            name: name.clone(),
            receiver,
            options,
            queue: queue.clone(),
            closing: closing.clone(),
            inline: inline.clone(),
        };
        let handle = thread::Builder::new()
            .name(format!("objstore-db {}", crate::key::truncate(&name, 40)))
            .spawn(move || worker.run(schema, prepare, done))
            .map_err(|e| Error::Internal(format!("cannot start the worker thread: {e}")))?;
        let worker_id = handle.thread().id();
        let worker = Mutex::new(Some(handle));
        Ok(AsyncDatabase { name, closed: RwLock::new(false), closing, sender, queue, inline, worker_id, worker })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `work` to run on the worker; `done` gets its result. After close this returns
    /// `Closed` and `done` is never called.
    pub fn submit<T, W, C>(&self, work: W, done: C) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.send(None, None, work, done)
    }

    /// Queues `work` as part of the explicit transaction `tx`.
    pub fn submit_in<T, W, C>(&self, tx: TxId, work: W, done: C) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.send(Some(tx), None, move |db: &mut Database| work(&mut db.transaction(tx)?), done)
    }

    /// The general form: `work` is part of explicit transaction `part_of` (when given: it may
    /// run while that transaction is open), skipped when `token` is cancelled before it runs.
    pub fn submit_as<T, W, C>(&self, part_of: Option<TxId>, token: Token, work: W, done: C) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        self.send(part_of, Some(token), work, done)
    }

    /// Runs a read of `stores` now, on the caller's thread, when the database has no request
    /// queued or running and no transaction open (see `crate::inline`); gives `work` back
    /// unrun when it cannot, for the caller to submit. The read sees every write submitted
    /// before it. A read that fails here sends its error event through the worker.
    pub fn read_now<T, W>(&self, stores: &[&str], work: W) -> std::result::Result<Result<T>, W>
    where
        W: FnOnce(&mut Database) -> Result<T>,
    {
        if self.closing.load(Ordering::SeqCst) {
            return Err(work);
        }
        let result = self.inline.read(stores, work)?;
        if let Err(error) = &result {
            let (store, message) = (stores.first().map(|s| s.to_string()), error.to_string());
            let report = move |db: &mut Database| {
                db.report_error(store, message);
                Ok(())
            };
            let _ = self.submit(report, |_| {});
        }
        Ok(result)
    }

    /// A read of `stores`: run at once on the caller's thread when it can be (`read_now`), and
    /// then `done` is called before this returns; queued like `submit` otherwise.
    pub fn read<T, W, C>(&self, stores: &[&str], work: W, done: C) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        match self.read_now(stores, work) {
            Ok(result) => {
                let _ = catch_unwind(AssertUnwindSafe(|| done(result)));
                Ok(())
            }
            Err(work) => self.submit(work, done),
        }
    }

    /// Starts an explicit transaction, after the one open now (if any) ends. Until it ends,
    /// other requests wait for it.
    pub fn begin(
        &self,
        stores: Vec<String>,
        mode: Mode,
        done: impl FnOnce(Result<TxId>) + Send + 'static,
    ) -> Result<()> {
        self.submit(move |db| db.begin(&stores.iter().map(String::as_str).collect::<Vec<_>>(), mode), done)
    }

    pub fn commit(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        self.send(Some(tx), None, move |db: &mut Database| db.commit(tx), done)
    }

    pub fn abort(&self, tx: TxId, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        self.send(Some(tx), None, move |db: &mut Database| db.abort(tx), done)
    }

    /// Adds an event listener; it runs on the worker thread. See [`Database::subscribe`].
    pub fn subscribe(
        &self,
        filter: EventFilter,
        listener: Listener,
        done: impl FnOnce(Result<SubscriptionId>) + Send + 'static,
    ) -> Result<()> {
        self.submit(move |db| Ok(db.subscribe(filter, listener)), done)
    }

    pub fn unsubscribe(&self, id: SubscriptionId, done: impl FnOnce(Result<bool>) + Send + 'static) -> Result<()> {
        self.submit(move |db| Ok(db.unsubscribe(id)), done)
    }

    /// Closes the database: requests still queued are cancelled, an open transaction is rolled
    /// back, the file is closed, and then `done` fires: the last callback of this database. A
    /// second close returns `Closed` (and never calls its `done`).
    pub fn close(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        let mut closed = self.closed.write().unwrap_or_else(|p| p.into_inner());
        if *closed {
            return Err(Error::Closed(self.name.to_string()));
        }
        *closed = true;
        self.closing.store(true, Ordering::SeqCst);
        self.queue.wake_all();
        if let Err(mpsc::SendError(Message::Close(done))) = self.sender.send(Message::Close(Box::new(done))) {
            // The worker is gone (it can only end after close): nothing else will call back.
            let _ = catch_unwind(AssertUnwindSafe(|| done(Ok(()))));
        }
        Ok(())
    }

    /// Tells the worker that a request's token was cancelled, so that a request waiting for an
    /// open transaction completes (Cancelled) now rather than when the transaction ends.
    pub fn wake(&self) {
        let _ = self.sender.send(Message::Wake);
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the worker thread to end (after `close`), for a program that must leave no
    /// thread behind. Does nothing on the worker itself. Drop never does this.
    pub fn join(&self) {
        if thread::current().id() == self.worker_id {
            return;
        }
        if let Some(handle) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = handle.join();
        }
    }

    fn send<T, W, C>(&self, transaction: Option<TxId>, token: Option<Token>, work: W, done: C) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
        C: FnOnce(Result<T>) + Send + 'static,
    {
        // Room first, without the lock (see `closed`), then the lock and the check. A
        // transaction's own request never waits for room: what fills the queue may be waiting
        // for that transaction to end.
        self.queue.enter(thread::current().id() != self.worker_id && transaction.is_none(), &self.closing);
        let closed = self.closed.read().unwrap_or_else(|p| p.into_inner());
        if *closed {
            self.queue.leave();
            return Err(Error::Closed(self.name.to_string()));
        }
        let task: Box<dyn Request> = Box::new(Task {
            transaction,
            token,
            work: Some(work),
            done: Some(done),
            database: self.name.clone(),
            _result: std::marker::PhantomData,
        });
        self.inline.submitted();
        if let Err(mpsc::SendError(Message::Request(task))) = self.sender.send(Message::Request(task)) {
            self.queue.leave();
            self.inline.dropped();
            // Only after close can the worker be gone; defuse the drop guard's callback.
            std::mem::forget(task);
            return Err(Error::Closed(self.name.to_string()));
        }
        Ok(())
    }
}

impl Drop for AsyncDatabase {
    /// Closes without waiting: the worker finishes on its own. Never joins a thread.
    fn drop(&mut self) {
        let _ = self.close(|_| {});
    }
}

struct Worker {
    name: Arc<str>,
    receiver: Receiver<Message>,
    options: ExecutorOptions,
    queue: Arc<Queue>,
    closing: Arc<AtomicBool>,
    inline: Arc<Inline>,
}

impl Worker {
    fn run(
        self,
        schema: Option<Schema>,
        prepare: impl FnOnce(&mut Database) -> Result<()>,
        done: impl FnOnce(Result<()>),
    ) {
        let opened = catch_unwind(AssertUnwindSafe(|| {
            let mut db = Database::open(&self.name, schema, &self.options.open)?;
            prepare(&mut db)?;
            Ok(db)
        }))
        .unwrap_or_else(|panic| Err(Error::Internal(format!("open panicked: {}", panic_message(&panic)))));
        match opened {
            Ok(mut db) => {
                self.inline.enable(db.reader_opener());
                let _ = catch_unwind(AssertUnwindSafe(|| done(Ok(()))));
                let close_done = catch_unwind(AssertUnwindSafe(|| self.serve(&mut db)));
                self.cancel_queued();
                self.inline.close();
                drop(db); // the file is closed before close's completion fires
                if let Ok(Some(close_done)) = close_done {
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

    fn next(&self, timeout: Option<Duration>) -> std::result::Result<Message, RecvTimeoutError> {
        let message = match self.spin_for_next() {
            Some(message) => Ok(message),
            None => match timeout {
                Some(timeout) => self.receiver.recv_timeout(timeout),
                None => self.receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
            },
        };
        if let Ok(Message::Request(_)) = message {
            self.queue.leave();
        }
        message
    }

    /// Looks for the next message for a short while before the worker parks: a caller that
    /// awaits one request and then makes the next (the common loop) finds the worker awake,
    /// which saves a thread wake-up (tens of microseconds) per request.
    fn spin_for_next(&self) -> Option<Message> {
        let started = Instant::now();
        while started.elapsed() < SPIN_BEFORE_PARKING {
            match self.receiver.try_recv() {
                Ok(message) => return Some(message),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
        None
    }

    /// Runs requests until close (returning its completion) or until every handle is gone.
    fn serve(&self, db: &mut Database) -> Option<CloseDone> {
        let idle_limit = self.options.idle_transaction_timeout;
        let mut last_in_transaction = Instant::now();
        // Requests that came while a transaction was open and are not part of it, in order.
        // They still count in the queue (backpressure), until they run or are cancelled.
        let mut waiting: VecDeque<Box<dyn Request>> = VecDeque::new();
        loop {
            let active = db.active_transaction();
            let turn = if active.is_none() { waiting.pop_front() } else { None };
            let message = match turn {
                Some(request) => {
                    self.queue.leave();
                    Message::Request(request)
                }
                None => {
                    let timeout = active.map(|_| idle_limit.saturating_sub(last_in_transaction.elapsed()));
                    match self.next(timeout) {
                        Ok(message) => message,
                        Err(RecvTimeoutError::Timeout) => {
                            db.abort_active(&idle_reason(idle_limit, waiting.len()));
                            self.inline.transaction_ended();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            db.abort_active("the database closed");
                            self.cancel_all(waiting);
                            return None;
                        }
                    }
                }
            };
            match message {
                Message::Close(done) => {
                    db.abort_active("the database closed");
                    self.cancel_all(waiting);
                    return Some(done);
                }
                Message::Wake => {
                    let (cancelled, kept) = waiting.into_iter().partition(|r| r.is_cancelled());
                    waiting = kept;
                    for request in cancelled {
                        self.queue.leave();
                        self.drop_request(request, Error::Cancelled("the request was cancelled before it ran".into()));
                    }
                }
                Message::Request(request) if self.closing.load(Ordering::Acquire) => {
                    self.drop_request(
                        request,
                        Error::Cancelled(format!("database {:?} closed before it ran", self.name)),
                    );
                }
                Message::Request(request) if request.is_cancelled() => {
                    self.drop_request(request, Error::Cancelled("the request was cancelled before it ran".into()));
                }
                Message::Request(request) if active.is_some() && request.transaction().is_none() => {
                    self.queue.recount();
                    waiting.push_back(request);
                }
                Message::Request(request) => {
                    request.run(db, &self.inline);
                    last_in_transaction = Instant::now();
                }
            }
        }
    }

    /// Completes a request that will not run, with `error`.
    fn drop_request(&self, request: Box<dyn Request>, error: Error) {
        self.inline.dropped();
        request.cancel(error);
    }

    fn cancel_all(&self, waiting: VecDeque<Box<dyn Request>>) {
        for request in waiting {
            self.queue.leave();
            self.drop_request(request, Error::Cancelled(format!("database {:?} closed before it ran", self.name)));
        }
    }

    /// Cancels everything still queued (all of it submitted before close).
    fn cancel_queued(&self) {
        let reason = format!("database {:?} closed before it ran", self.name);
        while let Ok(message) = self.receiver.try_recv() {
            if let Message::Request(request) = message {
                self.queue.leave();
                self.drop_request(request, Error::Cancelled(reason.clone()));
            }
        }
    }

    /// After a failed open: every request fails with the open's error until close.
    fn refuse(&self, error: impl Fn() -> Error) {
        while let Ok(message) = self.next(None) {
            match message {
                Message::Request(request) => self.drop_request(request, error()),
                Message::Wake => {}
                Message::Close(done) => {
                    self.cancel_queued();
                    let _ = catch_unwind(AssertUnwindSafe(|| done(Ok(()))));
                    return;
                }
            }
        }
    }
}

/// Why an idle transaction was aborted: the timeout, and how many requests waited for it (a
/// request awaited inside a transaction but made outside it waits for it to end).
fn idle_reason(limit: Duration, waiting: usize) -> String {
    let reason = format!("aborted after {} ms without a request", limit.as_millis());
    match waiting {
        0 => reason,
        n => format!("{reason}, while {n} request(s) outside it waited for it to end (a request awaited inside a transaction must be made through it)"),
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
