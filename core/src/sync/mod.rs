//! The sync layer, the only part that joins the engine's worker (`crate::executor`), the
//! database's side of sync (`crate::replica`: outbox, validators, refused writes) and the
//! buckets (`crate::bucket`). Its front door is [`SyncedDatabase`]: a database on its worker
//! with the sync agent and the agent's threads, reading by the one read policy (`reads`).
//! `config` reads a store's `Sync` block, `agent` moves data between a database and its
//! buckets through ordinary requests, and `runner` gives the agent threads of its own.

pub mod agent;
pub mod changelog;
pub mod checkpoint;
pub mod config;
mod pool;
pub mod reads;
pub mod runner;
mod synced;

pub use crate::bucket::{Accounting, Stats};
pub use crate::replica::policy::{ChangeLogConfig, Format, Prefetch, StorePolicy};
pub use crate::token::Token;
pub use agent::{Agent, CheckpointReport, FlushReport, Freshness, Port};
pub use config::SyncConfig;
pub use reads::ReadScope;
pub use runner::Runner;
pub use synced::SyncedDatabase;

/// Runs `work` on `items` with at most `concurrency` threads at once (kept threads: `pool`),
/// results in input order. A panic in `work` is raised again here.
pub fn parallel<T: Sync, R: Send>(items: &[T], concurrency: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    parallel_each(items, concurrency, work, |i, result| results[i] = Some(result));
    results.into_iter().map(|r| r.expect("every item was worked on")).collect()
}

/// Runs `work` on `items` as [`parallel`] does, handing each result (with its item's index) to
/// `each` on the calling thread as soon as it is ready: what the caller does with one (writing
/// a listing's page into the cache) overlaps the work on the others.
pub fn parallel_each<T: Sync, R: Send>(
    items: &[T],
    concurrency: usize,
    work: impl Fn(&T) -> R + Sync,
    mut each: impl FnMut(usize, R),
) {
    if items.len() <= 1 || concurrency <= 1 {
        for (i, item) in items.iter().enumerate() {
            each(i, work(item));
        }
        return;
    }
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    let task = |done: &std::sync::mpsc::Sender<(usize, R)>| loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i).filter(|_| !stop.load(Ordering::Relaxed)) else { break };
        if done.send((i, work(item))).is_err() {
            break;
        }
    };
    pool::run_scoped(concurrency.min(items.len()), &task, |results| {
        // A panic in `each` leaves the items not yet started undone (they may be requests).
        let _stop = StopOnUnwind(&stop);
        for (i, result) in results.iter() {
            each(i, result);
        }
    });
}

/// Sets its flag when dropped while unwinding.
struct StopOnUnwind<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parallel, parallel_each};

    #[test]
    fn each_result_reaches_the_calling_thread_once_with_its_index() {
        let items: Vec<usize> = (0..100).collect();
        let caller = std::thread::current().id();
        let mut seen = vec![0; items.len()];
        parallel_each(
            &items,
            8,
            |i| i * 2,
            |index, doubled| {
                assert_eq!(std::thread::current().id(), caller);
                assert_eq!(doubled, items[index] * 2);
                seen[index] += 1;
            },
        );
        assert!(seen.iter().all(|n| *n == 1), "{seen:?}");
        assert_eq!(parallel(&items, 8, |i| i + 1), (1..=100).collect::<Vec<_>>());
    }

    #[test]
    fn the_threads_are_kept_for_the_next_call_and_calls_may_nest() {
        let items: Vec<usize> = (0..16).collect();
        let threads = |_: &usize| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            std::thread::current().id()
        };
        let mut seen = std::collections::HashSet::new();
        for _ in 0..5 {
            seen.extend(parallel(&items, 4, threads));
            // A call returns as its jobs end, a moment before their threads wait for more.
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        // Threads started for each call would be 20 (other tests may take some kept ones).
        assert!(seen.len() < 20, "the calls ran on kept threads: {} threads", seen.len());
        assert!(!seen.contains(&std::thread::current().id()));
        // Work that itself runs work side by side: no job waits for a thread another holds.
        let sums = parallel(&items, 8, |&i| parallel(&items, 8, |&j| i * j).into_iter().sum::<usize>());
        assert_eq!(sums, items.iter().map(|i| i * 120).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_in_the_callers_hands_stops_the_items_not_yet_started() {
        // A second of work on two threads; the panic comes with the first result (its hook may
        // take a moment to print a backtrace, while the threads go on).
        let items: Vec<usize> = (0..1000).collect();
        let started = std::sync::atomic::AtomicUsize::new(0);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            parallel_each(
                &items,
                2,
                |_| {
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                },
                |_, ()| panic!("the caller gives up"),
            )
        }));
        assert!(outcome.is_err());
        let n = started.load(std::sync::atomic::Ordering::SeqCst);
        assert!(n < items.len() / 2, "the rest were not started: {n} were");
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller_once_every_item_is_done() {
        let items: Vec<usize> = (0..20).collect();
        let done = std::sync::atomic::AtomicUsize::new(0);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            parallel(&items, 4, |&i| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                assert_ne!(i, 3, "item three fails");
            })
        }));
        let message = outcome.unwrap_err().downcast::<String>().map(|m| *m).unwrap_or_default();
        assert!(message.contains("item three fails"), "{message}");
        // The thread whose item panicked stopped; the others went on to the end.
        assert!(done.load(std::sync::atomic::Ordering::SeqCst) >= 17);
        assert_eq!(parallel(&items, 4, |i| i + 1)[19], 20, "the kept threads still work");
    }
}
