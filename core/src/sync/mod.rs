//! The sync layer: stores with a `Sync` block mirrored in a bucket with as few requests as
//! possible. `config` reads the block, `bucket` says what a bucket does, `http` and `local` are
//! the two kinds (an S3-compatible server, a directory), `state` keeps validators and the outbox
//! in the local database, and `engine` puts them together behind the database's operations.

pub mod accounting;
pub mod bucket;
pub mod config;
mod engine;
mod http;
mod listing;
mod local;
mod sign;
mod state;
mod time;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub use accounting::{Accounting, Stats};
pub use bucket::{
    list_all, Bucket, Fetched, ListPage, ListRequest, ListVersion, Metadata, ObjectInfo, Precondition, Validators,
};
pub use config::{Format, Prefetch, SyncConfig};
pub use engine::FlushReport;
pub(crate) use engine::{before_read, enqueue, flush_after_commit, get, is_synced, values_of};
pub(crate) use engine::{flush, prefetch};
pub(crate) use state::WriteOp;
pub(crate) use state::{forget_store, outbox_len as state_outbox_len};

use crate::error::{Error, Result};
use crate::keypath::KeyPath;
use crate::schema::Schema;

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

pub(crate) struct SyncedStore {
    pub config: SyncConfig,
    pub bucket: Arc<dyn Bucket>,
    pub key_path: Option<KeyPath>,
    /// Objstore-meta stores that describe the same objects, kept in step when this store
    /// fetches or writes one.
    pub meta_siblings: Vec<String>,
    pub last_prefetch: Option<Instant>,
    /// Etags seen by the last listing, by id: within the refractory period a cached copy with
    /// the same etag is current without asking.
    pub listed: HashMap<String, String>,
}

impl SyncedStore {
    pub fn object_key(&self, id: &str) -> String {
        format!("{}{id}", self.config.location.prefix)
    }

    pub fn prefetch_is_fresh(&self) -> bool {
        self.last_prefetch.is_some_and(|t| t.elapsed() < self.config.refractory)
    }
}

/// The synced stores of one database and what they share.
#[derive(Default)]
pub(crate) struct SyncSet {
    pub stores: HashMap<String, SyncedStore>,
    pub accounting: Arc<Accounting>,
    /// Set while the sync layer writes what came from the bucket: no outbox entries, no
    /// prefetch before its own reads.
    pub applying: bool,
    /// Set by the application: no requests at all; reads serve the cache, writes wait.
    pub offline: bool,
}

impl SyncSet {
    /// Reads every store's `Sync` block; the error names the store and the field.
    pub fn build(schema: &Schema, accounting: Arc<Accounting>) -> Result<SyncSet> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut stores = HashMap::new();
        for store in &schema.stores {
            let Some(block) = &store.sync else { continue };
            let config = SyncConfig::from_json(&store.name, block, &env)?;
            if config.format == Format::ObjstoreMeta
                && store.key_path.as_ref().is_some_and(|p| *p != KeyPath::Single("name".into()))
            {
                return Err(Error::InvalidSchema(format!(
                    "store {:?}: an objstore-meta store is keyed by object name: give it keyPath \"name\" or none",
                    store.name
                )));
            }
            let bucket = open_bucket(&config, accounting.clone())?;
            let synced = SyncedStore {
                config,
                bucket,
                key_path: store.key_path.clone(),
                meta_siblings: Vec::new(),
                last_prefetch: None,
                listed: HashMap::new(),
            };
            stores.insert(store.name.clone(), synced);
        }
        let locations: Vec<(String, config::Location, Format)> =
            stores.iter().map(|(name, s)| (name.clone(), s.config.location.clone(), s.config.format)).collect();
        for (name, synced) in stores.iter_mut() {
            synced.meta_siblings = locations
                .iter()
                .filter(|(other, location, format)| {
                    other != name && *format == Format::ObjstoreMeta && *location == synced.config.location
                })
                .map(|(other, _, _)| other.clone())
                .collect();
            synced.meta_siblings.sort();
        }
        Ok(SyncSet { stores, accounting, applying: false, offline: false })
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
