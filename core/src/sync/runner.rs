//! The sync agent's own threads: jobs (a flush after writes, a background revalidation, a read
//! that waits for a fetch) run here, reaching the database through ordinary requests on its
//! executor. The database's worker never waits for a bucket.
//!
//! The runner holds the database weakly: dropping the last handle still closes it. Writes that
//! cannot be sent are retried on a timer, which the agent's circuit breaker keeps cheap.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::Duration;

use super::agent::{Agent, Port};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::executor::AsyncDatabase;
use crate::token::Token;

/// The agent's port to a database on its worker: each call is one request, waited for on the
/// agent's thread.
pub struct Remote {
    db: Weak<AsyncDatabase>,
    token: Token,
}

impl Remote {
    pub fn new(db: &Arc<AsyncDatabase>, token: Token) -> Remote {
        Remote { db: Arc::downgrade(db), token }
    }
}

impl Port for Remote {
    fn exec<T: Send + 'static>(&mut self, work: impl FnOnce(&mut Database) -> Result<T> + Send + 'static) -> Result<T> {
        let db = self.db.upgrade().ok_or_else(|| Error::Closed("(dropped)".into()))?;
        let (tx, rx) = mpsc::sync_channel(1);
        db.submit_as(None, self.token.clone(), work, move |r| {
            let _ = tx.send(r);
        })?;
        drop(db);
        rx.recv().unwrap_or_else(|_| Err(Error::Cancelled("the database closed".into())))
    }
}

/// A job for the agent's threads.
pub type Job = Box<dyn FnOnce(&Agent, &Weak<AsyncDatabase>) + Send>;

/// How often writes that could not be sent are tried again.
const RETRY_EVERY: Duration = Duration::from_secs(2);

/// The agent's threads for one database.
pub struct Runner {
    agent: Arc<Agent>,
    jobs: Mutex<Option<Sender<Job>>>,
    flush_queued: Arc<AtomicBool>,
    /// Writes may wait that the last flush could not send: the timer tries again.
    outbox_waiting: Arc<AtomicBool>,
    threads: Mutex<Vec<thread::JoinHandle<()>>>,
    /// Background revalidations queued and not started, by what they revalidate.
    revalidating: Arc<Mutex<HashSet<String>>>,
}

/// Background revalidations queued at most: past it a new one is dropped (a later read asks
/// again), so a loop of cached reads never stacks thousands of requests in front of a flush.
const REVALIDATIONS_QUEUED: usize = 64;

impl Runner {
    /// Starts `threads` threads for `agent` beside `db`.
    pub fn start(agent: Arc<Agent>, db: &Arc<AsyncDatabase>, threads: usize) -> Result<Runner> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let flush_queued = Arc::new(AtomicBool::new(false));
        let outbox_waiting = Arc::new(AtomicBool::new(true));
        let mut handles = Vec::new();
        for n in 0..threads.max(1) {
            let (agent, receiver, db) = (agent.clone(), receiver.clone(), Arc::downgrade(db));
            let (flush_queued, outbox_waiting) = (flush_queued.clone(), outbox_waiting.clone());
            let handle = thread::Builder::new()
                .name(format!("objstore-db sync {n}"))
                .spawn(move || serve(&agent, &receiver, &db, n == 0, &flush_queued, &outbox_waiting))
                .map_err(|e| Error::Internal(format!("cannot start a sync thread: {e}")))?;
            handles.push(handle);
        }
        let threads = Mutex::new(handles);
        Ok(Runner {
            agent,
            jobs: Mutex::new(Some(sender)),
            flush_queued,
            outbox_waiting,
            threads,
            revalidating: Arc::default(),
        })
    }

    pub fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    /// Queues a job; `Closed` once the runner stopped (the job is dropped unrun).
    pub fn run(&self, job: Job) -> Result<()> {
        match &*self.jobs.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(jobs) => jobs.send(job).map_err(|_| Error::Closed("the sync agent stopped".into())),
            None => Err(Error::Closed("the sync agent stopped".into())),
        }
    }

    /// Asks for the outbox to be sent soon; requests made while one is queued share it.
    pub fn flush_soon(&self) {
        if self.flush_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let (queued, waiting) = (self.flush_queued.clone(), self.outbox_waiting.clone());
        let _ = self.run(Box::new(move |agent, db| {
            queued.store(false, Ordering::Release);
            flush_noting(agent, db, &waiting);
        }));
    }

    /// Queues a background revalidation of `what` (a store, and the keys read), unless one of
    /// the same is queued already or `REVALIDATIONS_QUEUED` (64) are; whether it was queued.
    pub fn revalidate_soon(&self, what: String, job: Job) -> bool {
        {
            let mut queued = self.revalidating.lock().unwrap_or_else(|p| p.into_inner());
            if queued.len() >= REVALIDATIONS_QUEUED || !queued.insert(what.clone()) {
                return false;
            }
        }
        let queued = self.revalidating.clone();
        let started = self.run(Box::new(move |agent, db| {
            queued.lock().unwrap_or_else(|p| p.into_inner()).remove(&what);
            job(agent, db)
        }));
        started.is_ok()
    }

    /// Stops taking jobs; the threads end after the job they are in (never joined).
    pub fn stop(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

impl Runner {
    /// Waits for the threads to end (after `stop`), unless called on one of them.
    pub fn join(&self) {
        let me = thread::current().id();
        let handles: Vec<_> = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in handles {
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    agent: &Agent,
    receiver: &Mutex<Receiver<Job>>,
    db: &Weak<AsyncDatabase>,
    retries_writes: bool,
    flush_queued: &AtomicBool,
    outbox_waiting: &AtomicBool,
) {
    loop {
        let next = receiver.lock().unwrap_or_else(|p| p.into_inner()).recv_timeout(RETRY_EVERY);
        match next {
            // A panic in a job leaves no state behind: the agent's state sits behind locks
            // that recover, and the database's side is transactional.
            Ok(job) => {
                let _ = catch_unwind(AssertUnwindSafe(|| job(agent, db)));
            }
            Err(RecvTimeoutError::Timeout) if retries_writes && !flush_queued.load(Ordering::Acquire) => {
                if db.strong_count() == 0 {
                    return;
                }
                if outbox_waiting.load(Ordering::Acquire) && !agent.is_offline() {
                    let _ = catch_unwind(AssertUnwindSafe(|| flush_noting(agent, db, outbox_waiting)));
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Flushes, noting whether writes are left waiting for the timer.
fn flush_noting(agent: &Agent, db: &Weak<AsyncDatabase>, outbox_waiting: &AtomicBool) {
    outbox_waiting.store(true, Ordering::Release);
    let report = agent.flush(&mut Remote { db: db.clone(), token: Token::default() }, &Token::default());
    outbox_waiting.store(!matches!(report, Ok(ref r) if r.pending == 0), Ordering::Release);
}
