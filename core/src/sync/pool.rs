//! Threads kept for the requests [`super::parallel`] sends side by side. Starting a thread per
//! request slot and wave (up to `Options.concurrency` of them, dozens of waves a second in a
//! busy collector) cost the process more CPU than the requests themselves. A kept thread waits
//! for work, and ends after a minute without any; a job finding no thread free starts one, so
//! jobs never wait for each other (a job may itself run work side by side).

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a kept thread waits for work before it ends.
const IDLE: Duration = Duration::from_secs(60);

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Pool {
    state: Mutex<State>,
    work: Condvar,
}

struct State {
    queue: VecDeque<Job>,
    /// Threads waiting for a job.
    waiting: usize,
    /// The process these threads belong to.
    pid: u32,
}

static POOL: Pool =
    Pool { state: Mutex::new(State { queue: VecDeque::new(), waiting: 0, pid: 0 }), work: Condvar::new() };

fn lock() -> MutexGuard<'static, State> {
    let mut state = POOL.state.lock().unwrap_or_else(|p| p.into_inner());
    if state.pid != std::process::id() {
        // A forked child has none of its parent's threads: none waits, and the jobs queued
        // belong to callers that are not in this process (never run, never dropped).
        std::mem::forget(std::mem::take(&mut state.queue));
        state.waiting = 0;
        state.pid = std::process::id();
    }
    state
}

/// Queues `job`, starting a thread when none is waiting for it.
fn submit(job: Job) {
    let mut state = lock();
    state.queue.push_back(job);
    if state.queue.len() <= state.waiting {
        POOL.work.notify_one();
        return;
    }
    drop(state);
    let started = std::thread::Builder::new().name("objstore-db requests".into()).spawn(keep_working);
    if started.is_err() {
        // No thread to be had: the caller does a queued job itself.
        let job = lock().queue.pop_back();
        if let Some(job) = job {
            job();
        }
    }
}

fn keep_working() {
    let mut state = lock();
    loop {
        if let Some(job) = state.queue.pop_front() {
            drop(state);
            job(); // it catches its own panics
            state = lock();
            continue;
        }
        state.waiting += 1;
        let (woken, waited) = POOL.work.wait_timeout(state, IDLE).unwrap_or_else(|p| p.into_inner());
        state = woken;
        state.waiting -= 1;
        if waited.timed_out() && state.queue.is_empty() {
            return;
        }
    }
}

/// Runs `task` on `threads` kept threads at once, each call handed its own sender of a channel
/// whose receiver `collect` reads on the calling thread until every call has ended (a caller
/// that stops reading early, or unwinds, should tell its calls to stop). A panic in `task` is
/// raised again on the calling thread, once every call has ended.
pub(crate) fn run_scoped<M: Send>(
    threads: usize,
    task: &(dyn Fn(&Sender<M>) + Sync),
    collect: impl FnOnce(&Receiver<M>),
) {
    let (sender, receiver) = channel();
    let panicked: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);
    {
        // Every exit from here, an unwinding `collect` included, first waits for every call to
        // end: they borrow `task` and `panicked` from this frame. (`sender` is dropped before
        // that wait, on every path.)
        let _wait = Drained(&receiver);
        let sender = sender;
        for _ in 0..threads {
            let sender = sender.clone();
            let panicked = &panicked;
            let job = move || {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| task(&sender))) {
                    *panicked.lock().unwrap_or_else(|p| p.into_inner()) = Some(payload);
                }
                drop(sender); // the last use of this frame's borrows: the caller may go on now
            };
            let job: Box<dyn FnOnce() + Send + '_> = Box::new(job);
            // SAFETY: the job borrows `task` and `panicked`, which outlive it: this frame does
            // not end (not even by unwinding, see `Drained`) until the job's sender is dropped,
            // its last act.
            let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
            submit(job);
        }
        drop(sender);
        collect(&receiver);
    }
    if let Some(payload) = panicked.into_inner().unwrap_or_else(|p| p.into_inner()) {
        resume_unwind(payload);
    }
}

/// Receives (and drops) what is left until every sender is gone.
struct Drained<'a, M>(&'a Receiver<M>);

impl<M> Drop for Drained<'_, M> {
    fn drop(&mut self) {
        while self.0.recv().is_ok() {}
    }
}
