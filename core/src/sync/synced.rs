//! The front door of a database with synced stores: an [`AsyncDatabase`] with its sync agent
//! and the agent's threads. It makes the agent at open (when the schema has synced stores),
//! starts the threads when there is first work for them, reads by the read policy
//! (`sync::reads`), sends the outbox after writes, and stops the threads at close. A database
//! without synced stores is an `AsyncDatabase` and nothing more.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::agent::Freshness;
use super::agent::{Agent, FlushReport};
use super::reads::{need, Need, ReadScope, Revalidation};
use super::runner::{Remote, Runner};
use crate::bucket::Stats;
use crate::database::{Database, Mode, Tx};
use crate::error::{Error, Result};
use crate::executor::{AsyncDatabase, ExecutorOptions};
use crate::schema::Schema;
use crate::token::Token;

/// A database with synced stores, the agent's threads beside it. Cheap to clone; dropping the
/// last clone leaves the threads to end on their own once the database has gone.
#[derive(Clone)]
pub struct SyncedDatabase {
    shared: Arc<Shared>,
}

struct Shared {
    exec: Arc<AsyncDatabase>,
    /// Set on the worker right after open when the schema has synced stores.
    agent: Arc<OnceLock<Arc<Agent>>>,
    /// Whether the open has completed: until then an agent job waits for it on the worker.
    opened: Arc<AtomicBool>,
    /// Whether the database may have synced stores: false when the schema given has none, so
    /// an agent job is refused at once even while opening.
    may_sync: bool,
    /// Offline as last asked, for an agent made after the asking (during the open).
    offline_asked: Arc<Mutex<Option<bool>>>,
    runner: OnceLock<Runner>,
    sync_threads: usize,
}

/// A callback two paths may reach (the work, or a refusal to queue it): the first one calls it.
type Once<T> = Arc<Mutex<Option<Box<dyn FnOnce(Result<T>) + Send>>>>;

fn once<T>(done: impl FnOnce(Result<T>) + Send + 'static) -> Once<T> {
    Arc::new(Mutex::new(Some(Box::new(done))))
}

/// A request the closing database stopped on its way completes as cancelled, as close completes
/// every request still pending; other errors stay what they are.
fn closed_first(error: Error, name: &str) -> Error {
    match error {
        Error::Closed(_) => Error::Cancelled(format!("database {name:?} closed first")),
        other => other,
    }
}

fn call<T>(done: &Once<T>, result: Result<T>) {
    let done = done.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(done) = done {
        done(result);
    }
}

/// A read's first step: the answer, or the read to run again after the agent's step.
/// How many times a read takes its agent's step again when the step left it short.
const AGAIN: usize = 2;

enum Outcome<T, W> {
    Done(T),
    Later(W, Need),
}

impl SyncedDatabase {
    /// Opens `name` on a worker thread, as [`AsyncDatabase::open_with`] does; when the schema
    /// has synced stores, the agent is made there too and `prepare` gets its warnings (a bucket
    /// known to ignore conditional writes). `sync_threads`: the agent's threads, started when
    /// first needed.
    pub fn open(
        name: &str,
        schema: Option<Schema>,
        options: ExecutorOptions,
        sync_threads: usize,
        prepare: impl FnOnce(&mut Database, Vec<String>) -> Result<()> + Send + 'static,
        done: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<SyncedDatabase> {
        let may_sync = schema.as_ref().is_none_or(Agent::is_needed);
        let agent: Arc<OnceLock<Arc<Agent>>> = Arc::default();
        let offline_asked: Arc<Mutex<Option<bool>>> = Arc::default();
        let opened = Arc::new(AtomicBool::new(false));
        let (slot, asked, settled) = (agent.clone(), offline_asked.clone(), opened.clone());
        let exec = AsyncDatabase::open_with(
            name,
            schema,
            options,
            move |db| {
                let mut warnings = Vec::new();
                if Agent::is_needed(db.schema()) {
                    let agent = Arc::new(Agent::new(db)?);
                    warnings = agent.warnings();
                    let _ = slot.set(agent.clone());
                    // Read after the agent is in place: set_offline either sees it or is seen.
                    if let Some(offline) = *asked.lock().unwrap_or_else(|p| p.into_inner()) {
                        agent.set_offline(offline);
                    }
                }
                prepare(db, warnings)
            },
            move |r| {
                settled.store(true, Ordering::Release);
                done(r)
            },
        )?;
        let shared = Shared {
            exec: Arc::new(exec),
            agent,
            opened,
            may_sync,
            offline_asked,
            runner: OnceLock::new(),
            sync_threads,
        };
        Ok(SyncedDatabase { shared: Arc::new(shared) })
    }

    /// The database on its worker.
    pub fn database(&self) -> &Arc<AsyncDatabase> {
        &self.shared.exec
    }

    /// After a write committed (alone, or a transaction's commit): what it queued for buckets
    /// is sent soon, on the agent's threads.
    pub fn wrote(&self) {
        if let Some(runner) = self.shared.runner() {
            runner.flush_soon();
        }
    }

    /// Reads by the read policy (`sync::reads`): on the worker, the local copy answers unless
    /// the agent must act first (a miss, a cold store, a fresh read); then the agent acts on its
    /// threads and the read runs again. A read that served the cache queues a background
    /// revalidation. `work` runs in a read-only transaction over `read.stores`; `done` gets its
    /// result, once. An `Err` from the call means the read was not queued, and `done` is never
    /// called.
    pub fn read<T, W>(
        &self,
        read: ReadScope,
        token: Token,
        work: W,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<()>
    where
        T: Send + 'static,
        W: FnOnce(&mut Tx) -> Result<T> + Send + 'static,
    {
        let (shared, scope) = (self.shared.clone(), read.clone());
        let first = move |db: &mut Database| -> Result<Outcome<T, W>> {
            if let Some(agent) = shared.agent.get() {
                if let Some(need) = need(agent, db, &read)? {
                    return Ok(Outcome::Later(work, need));
                }
                if let Some(revalidation) = Revalidation::after(agent, &read) {
                    shared.revalidate_soon(revalidation);
                }
            }
            run_read(db, &read, work).map(Outcome::Done)
        };
        let shared = self.shared.clone();
        let later = token.clone();
        let deliver = move |outcome: Result<Outcome<T, W>>| match outcome {
            Ok(Outcome::Done(value)) => done(Ok(value)),
            Err(e) => done(Err(e)),
            Ok(Outcome::Later(work, need)) => shared.after_agent(later, work, need, once(done), scope, AGAIN),
        };
        self.shared.exec.submit_as(None, token, first, deliver)
    }

    /// Runs a read now, on the caller's thread, when none of its stores is synced and the
    /// database is idle (see [`AsyncDatabase::read_now`]); gives `work` back unrun otherwise. A
    /// read of a synced store always goes through the read policy (`read`).
    pub fn read_now<T, W>(&self, read: &ReadScope, work: W) -> std::result::Result<Result<T>, W>
    where
        W: FnOnce(&mut Tx) -> Result<T>,
    {
        if !self.shared.opened.load(Ordering::Acquire) {
            return Err(work);
        }
        if let Some(agent) = self.shared.agent.get() {
            if read.stores.iter().any(|s| agent.is_synced(s)) {
                return Err(work);
            }
        }
        let names: Vec<&str> = read.stores.iter().map(String::as_str).collect();
        let mut unrun = Some(work);
        let ran = self.shared.exec.read_now(&names, |db| {
            let work = unrun.take().expect("a read runs once");
            run_read(db, read, work)
        });
        match ran {
            Ok(result) => Ok(result),
            Err(_) => Err(unrun.take().expect("a read not run is given back")),
        }
    }

    /// Runs `job` on the agent's threads, reaching the database through ordinary requests;
    /// `done` gets its result. `InvalidArgument` when the database has no synced store; an
    /// `Err` from the call means the job was not queued, and `done` is never called. A job asked
    /// for while the database is opening waits for the open (the agent is made there), and
    /// completes with its error if it fails.
    pub fn agent_job<T: Send + 'static>(
        &self,
        token: Token,
        job: impl FnOnce(&Agent, &mut Remote, &Token) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<()> {
        if self.shared.opened.load(Ordering::Acquire) || !self.shared.may_sync {
            return self.start_job(token, job, done);
        }
        let (front, done) = (self.clone(), once(done));
        let answer = done.clone();
        self.shared.exec.submit(
            |_| Ok(()),
            move |opened: Result<()>| {
                let started = opened.and_then(|()| front.start_job(token, job, move |r| call(&answer, r)));
                if let Err(e) = started {
                    call(&done, Err(closed_first(e, front.shared.exec.name())));
                }
            },
        )
    }

    /// Queues `job` on the agent's threads (see [`SyncedDatabase::agent_job`]).
    fn start_job<T: Send + 'static>(
        &self,
        token: Token,
        job: impl FnOnce(&Agent, &mut Remote, &Token) -> Result<T> + Send + 'static,
        done: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<()> {
        let Some(runner) = self.shared.runner() else {
            let name = self.shared.exec.name();
            return Err(Error::InvalidArgument(format!("database {name:?} has no synced store")));
        };
        let exec = self.shared.exec.clone();
        runner.run(Box::new(move |agent, _| {
            let mut port = Remote::new(&exec, token.clone());
            done(job(agent, &mut port, &token));
        }))
    }

    /// Sends the outbox now (see [`Agent::flush`]).
    pub fn flush(&self, token: Token, done: impl FnOnce(Result<FlushReport>) + Send + 'static) -> Result<()> {
        self.agent_job(token, |agent, port, token| agent.flush(port, token), done)
    }

    /// Lists `store` now and brings its local copy in line (see [`Agent::prefetch`]).
    pub fn prefetch(&self, store: &str, token: Token, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        let store = store.to_string();
        self.agent_job(token, move |agent, port, token| agent.prefetch(port, &store, token), done)
    }

    /// Writes a checkpoint of `store` (see [`Agent::checkpoint`]).
    pub fn checkpoint(
        &self,
        store: &str,
        token: Token,
        done: impl FnOnce(Result<super::CheckpointReport>) + Send + 'static,
    ) -> Result<()> {
        let store = store.to_string();
        self.agent_job(token, move |agent, port, token| agent.checkpoint(port, &store, token), done)
    }

    /// Offline, the agent makes no requests: reads serve the cache, writes wait in the outbox.
    /// Back online, the outbox is sent.
    pub fn set_offline(&self, offline: bool) {
        // Kept for an agent the open is still making (see `open`).
        *self.shared.offline_asked.lock().unwrap_or_else(|p| p.into_inner()) = Some(offline);
        if let Some(agent) = self.shared.agent.get() {
            agent.set_offline(offline);
            if !offline {
                self.wrote();
            }
        }
    }

    /// Requests made to buckets so far, bytes and cost; `reset` starts again from zero.
    pub fn stats(&self, reset: bool) -> Stats {
        match self.shared.agent.get() {
            Some(agent) if reset => agent.take_stats(),
            Some(agent) => agent.stats(),
            None => Stats::default(),
        }
    }

    /// Closes the database (see [`AsyncDatabase::close`]); the agent's threads stop taking
    /// jobs before `done` runs.
    pub fn close(&self, done: impl FnOnce(Result<()>) + Send + 'static) -> Result<()> {
        let shared = self.shared.clone();
        self.shared.exec.close(move |r| {
            if let Some(runner) = shared.runner.get() {
                runner.stop();
            }
            done(r)
        })
    }

    /// Closes if needed and waits until the worker and the agent's threads have ended. Never
    /// from a callback.
    pub fn close_and_join(&self) {
        let _ = self.close(|_| {});
        if let Some(runner) = self.shared.runner.get() {
            runner.stop();
            runner.join();
        }
        self.shared.exec.join();
    }
}

impl Shared {
    /// The agent's threads, started on first use; `None` without synced stores (or before the
    /// open completed).
    fn runner(&self) -> Option<&Runner> {
        let agent = self.agent.get()?;
        if let Some(runner) = self.runner.get() {
            return Some(runner);
        }
        let started = Runner::start(agent.clone(), &self.exec, self.sync_threads).ok()?;
        Some(self.runner.get_or_init(|| started))
    }

    /// Queues `revalidation` on the agent's threads (unless one of the same is queued).
    fn revalidate_soon(&self, revalidation: Revalidation) {
        let Some(runner) = self.runner() else { return };
        let exec = self.exec.clone();
        runner.revalidate_soon(
            revalidation.what(),
            Box::new(move |agent, _| {
                let token = Token::default();
                let _ = revalidation.run(agent, &mut Remote::new(&exec, token.clone()), &token);
            }),
        );
    }

    /// Runs the agent's step for a read on its threads, then the read itself on the worker.
    /// Whatever stops it on the way (the database closing) completes `done` with that error.
    /// A scan whose step left the local copy short of it after all (the change log, read by
    /// another step meanwhile, removed names a checkpoint's heads were counted on for it) takes
    /// its step again, `again` more times at most.
    fn after_agent<T, W>(
        self: &Arc<Self>,
        token: Token,
        work: W,
        need: Need,
        done: Once<T>,
        read: ReadScope,
        again: usize,
    ) where
        T: Send + 'static,
        W: FnOnce(&mut Tx) -> Result<T> + Send + 'static,
    {
        let Some(runner) = self.runner() else {
            return call(&done, Err(Error::Internal("a synced read without a sync agent".into())));
        };
        let exec = self.exec.clone();
        let name = self.exec.name().to_string();
        let refused = done.clone();
        let shared = self.clone();
        let queued = runner.run(Box::new(move |agent, _| {
            if let Err(e) = need.run(agent, &mut Remote::new(&exec, token.clone()), &token) {
                return call(&done, Err(e));
            }
            let store = need.store().to_string();
            let answered = done.clone();
            let (checking, scope) = (shared.clone(), read.clone());
            let first = move |db: &mut Database| -> Result<Outcome<T, W>> {
                let agent = checking.agent.get().filter(|_| again > 0 && scope.keys.is_none());
                let short = ReadScope { freshness: Freshness::Cached, ..scope };
                if let Some(need) = agent.map(|agent| super::reads::need(agent, db, &short)).transpose()?.flatten() {
                    return Ok(Outcome::Later(work, need));
                }
                db.run(&[store.as_str()], Mode::ReadOnly, work).map(Outcome::Done)
            };
            let later = token.clone();
            let deliver = move |outcome: Result<Outcome<T, W>>| match outcome {
                Ok(Outcome::Done(value)) => call(&answered, Ok(value)),
                Err(e) => call(&answered, Err(e)),
                Ok(Outcome::Later(work, need)) => shared.after_agent(later, work, need, answered, read, again - 1),
            };
            if let Err(e) = exec.submit_as(None, token, first, deliver) {
                call(&done, Err(closed_first(e, &name)));
            }
        }));
        if let Err(e) = queued {
            call(&refused, Err(closed_first(e, self.exec.name())));
        }
    }
}

/// Runs a read over `read.stores`: a read of one key in one statement, without a storage
/// transaction (SQLite's autocommit makes it atomic), anything else in a read-only one.
fn run_read<T>(db: &mut Database, read: &ReadScope, work: impl FnOnce(&mut Tx) -> Result<T>) -> Result<T> {
    match (read.stores.as_slice(), read.keys.as_deref()) {
        ([store], Some([_])) => db.run_single_read(store, work),
        _ => {
            let names: Vec<&str> = read.stores.iter().map(String::as_str).collect();
            db.run(&names, Mode::ReadOnly, work)
        }
    }
}
