//! The sync layer: stores with a `Sync` block mirrored in a bucket with as few requests as
//! possible. `config` reads the block, `bucket` says what a bucket does, `http` and `local` are
//! the two kinds (an S3-compatible server, a directory), `agent` moves data between a database
//! and its buckets through ordinary requests, and `runner` gives the agent threads of its own.
//! The database's side (outbox, validators, refused writes) is `crate::replica`.

pub mod accounting;
pub mod agent;
pub mod bucket;
pub mod changelog;
pub mod config;
mod dirwalk;
mod http;
mod listing;
mod local;
mod mime_words;
mod profile;
pub mod runner;
mod sign;
pub(crate) mod time;
mod token;

use std::path::Path;
use std::sync::Arc;

pub use accounting::{Accounting, Stats};
pub use agent::{Agent, FlushReport, Freshness, Port, Token};
pub use bucket::{
    etag_of, list_all, Bucket, Fetched, ListPage, ListRequest, ListVersion, Metadata, ObjectInfo, Precondition,
    Validators,
};
pub use config::{ChangeLogConfig, Format, Prefetch, SyncConfig};
pub use runner::Runner;

use crate::error::Result;

/// A bucket for a sync configuration: a directory for `file://` endpoints, HTTP otherwise.
pub fn open_bucket(config: &SyncConfig, accounting: Arc<Accounting>) -> Result<Arc<dyn Bucket>> {
    match config.location.endpoint.strip_prefix("file://") {
        Some(dir) => Ok(Arc::new(local::LocalBucket::open(
            Path::new(dir),
            config.location.bucket.as_deref().unwrap_or("default"),
            config.max_object_bytes,
            accounting,
        )?)),
        None => Ok(Arc::new(http::HttpBucket::new(config.clone(), accounting)?)),
    }
}

/// Runs `work` on `items` with at most `concurrency` threads at once, results in input order.
pub fn parallel<T: Sync, R: Send>(items: &[T], concurrency: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 || concurrency <= 1 {
        return items.iter().map(&work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|scope| {
        for _ in 0..concurrency.min(items.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = work(item);
                slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(result);
            });
        }
    });
    results.into_iter().map(|r| r.expect("every item was worked on")).collect()
}
