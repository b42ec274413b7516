//! The sync layer, the only part that joins the engine's worker (`crate::executor`), the
//! database's side of sync (`crate::replica`: outbox, validators, refused writes) and the
//! buckets (`crate::bucket`). Its front door is [`SyncedDatabase`]: a database on its worker
//! with the sync agent and the agent's threads, reading by the one read policy (`reads`).
//! `config` reads a store's `Sync` block, `agent` moves data between a database and its
//! buckets through ordinary requests, and `runner` gives the agent threads of its own.

pub mod agent;
pub mod changelog;
pub mod config;
pub mod reads;
pub mod runner;
mod synced;

pub use crate::bucket::{Accounting, Stats};
pub use crate::replica::policy::{ChangeLogConfig, Format, Prefetch, StorePolicy};
pub use crate::token::Token;
pub use agent::{Agent, FlushReport, Freshness, Port};
pub use config::SyncConfig;
pub use reads::ReadScope;
pub use runner::Runner;
pub use synced::SyncedDatabase;

/// Runs `work` on `items` with at most `concurrency` threads at once, results in input order.
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
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (done, results) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..concurrency.min(items.len()) {
            let done = done.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if done.send((i, work(item))).is_err() {
                    break;
                }
            });
        }
        drop(done);
        for (i, result) in results {
            each(i, result);
        }
    });
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
}
