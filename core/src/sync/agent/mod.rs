//! The sync agent: everything that talks to buckets, on the caller's thread or on the agent's
//! own threads (`sync::runner`), never on the database's worker. It reaches the database only
//! through a [`Port`]: ordinary requests that read the outbox and local state and apply what
//! was learnt as bounded batches of [`Change`]s.
//!
//! One room per job, each an `impl Agent` block sharing only what this file holds (the agent,
//! its stores, what listings said, and their helpers):
//! - `fetch.rs`: the objects a read needs, by conditional GET;
//! - `listing.rs`: prefetch, from a listing or the change log;
//! - `pairs.rs`: a cold view that lists only the first name of each pair;
//! - `flush.rs`: the outbox, in waves, with change-log markers;
//! - `conditions.rs`: whether a bucket honours conditional writes, and checks by reading where
//!   it does not;
//! - `breaker.rs`: after a failure to reach a bucket, requests to it fail at once until a
//!   backoff (1 s doubling to 60 s) has passed, so a dead bucket costs one timeout, not one
//!   per read.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::config::SyncConfig;
use super::{changelog, checkpoint};
use super::{parallel, parallel_each};
use crate::bucket::{
    etag_of, list_all, open_bucket, Accounting, Bucket, Fetched, ListRequest, Metadata, Object, ObjectInfo, PutMode,
    PutOptions, Stats, Validators,
};
use crate::database::Database;
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::key::Key;
use crate::keypath::KeyPath;
use crate::replica::policy::{ChangeLogConfig, Format, LayoutSegment, Prefetch};
use crate::replica::{
    object_id, Change, LocalCopy, ObjectState, OutboxItem, StoreState, WriteOp, FETCH_CHUNK, MAX_BATCH,
};
use crate::schema::Schema;
use crate::time;
use crate::token::Token;

mod breaker;
mod checkpoints;
pub use checkpoints::CheckpointReport;
mod conditions;
mod fetch;
mod flush;
mod listing;
mod pairs;

use breaker::Breaker;
use conditions::{again, check_by_reading, delete_is_safe, holds_body, ignores_conditions};

/// How the agent reaches the database: each call is one ordinary request.
pub trait Port {
    fn exec<T: Send + 'static>(&mut self, work: impl FnOnce(&mut Database) -> Result<T> + Send + 'static) -> Result<T>;
}

/// A database on the caller's thread is its own port (tests, tools, single-threaded use).
impl Port for Database {
    fn exec<T: Send + 'static>(&mut self, work: impl FnOnce(&mut Database) -> Result<T> + Send + 'static) -> Result<T> {
        work(self)
    }
}

/// What a flush did, and where the writes stand after it. The background sender sends writes
/// too: `sent` and `rejected` count what this flush itself sent, `pending` and `refused` every
/// write, whoever sent it.
#[derive(Debug, Default)]
pub struct FlushReport {
    /// Writes this flush brought to the bucket.
    pub sent: u64,
    /// Writes still waiting (0: every write made before the flush reached the bucket or was
    /// refused).
    pub pending: u64,
    /// Writes the bucket refused during this flush, by outbox sequence number: kept as refused
    /// writes (see `Database::refused_writes`), their local data untouched.
    pub rejected: Vec<(u64, Error)>,
    /// Refused writes waiting for a resolution, those the background sender met included.
    pub refused: u64,
    /// Why sending stopped, when the bucket could not be reached.
    pub offline: Option<Error>,
    /// Why sending stopped, when the bucket refused every request (credentials, a wrong region,
    /// a missing bucket, a redirect): the writes keep waiting for the cause to be mended.
    pub blocked: Option<Error>,
    /// Writes the server failed on (a 5xx after the retries) while it took others: they stay
    /// queued, with the writes after them to the same object, and are tried again next flush.
    pub held: Vec<(u64, Error)>,
}

/// How fresh a read must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Freshness {
    /// Serve what is cached; fetch only what is not held at all (a miss).
    #[default]
    Cached,
    /// Ask the bucket about everything not known to be current.
    Fresh,
}

struct SyncedStore {
    config: SyncConfig,
    bucket: Arc<dyn Bucket>,
    /// The bucket's address (`bucket.describe()`, made once): what breakers, flush stops and
    /// probes are kept by.
    address: String,
    key_path: Option<KeyPath>,
    /// Objstore-meta stores that describe the same objects, kept in step with this one.
    meta_siblings: Vec<String>,
    /// Indexes over the key layout's first two fields (`metadata.a, metadata.b` for a layout
    /// `{a}/{b}/…`): a unique scan of one reads the first name of each pair.
    pair_indexes: Vec<String>,
}

impl SyncedStore {
    fn object_key(&self, id: &str) -> String {
        format!("{}{id}", self.config.connection.location.prefix)
    }
}

/// What the last listing of a store said, within this process.
#[derive(Default)]
struct Seen {
    at: Option<Instant>,
    /// Etags by id: within the refractory period a copy with the same etag is current.
    listed: HashMap<String, String>,
    /// The local copy holds every object the bucket held (a full listing, and what the change
    /// log said since), not only the first of each pair.
    complete: bool,
    /// The checkpoint the local copy was taken from, and how much of it.
    checkpoint: Option<checkpoints::Taken>,
}

/// How a prefetch learns what changed in the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// Every object, from the change log when the store keeps one and its last listing was a
    /// full one within `relistEveryMs`, else a full listing.
    Everything,
    /// What the store holds brought up to date (a background refresh): from the change log
    /// when its last listing, full or first-per-pair, is recent enough, else listed again the
    /// same way.
    AsHeld,
    /// A full listing, whatever the change log.
    Full,
    /// The first name of each pair of the key layout's first two fields, unless the change log
    /// can say what changed (a cold view of the newest run per pair).
    FirstPerPair,
}

/// What a listing or the change log says of a store's objects.
#[derive(Default)]
struct Learnt {
    /// Objects as a listing describes them (a full listing: every one).
    described: Vec<(String, ObjectInfo)>,
    /// Objects held locally that the bucket no longer has.
    vanished: Vec<String>,
    /// A full listing: the store's every object is in `described`.
    complete: bool,
    /// How far the change log is read after this.
    changes_since_ms: Option<u64>,
    /// Only the first name of each pair was listed (all of them, when `complete`).
    first_per_pair: bool,
    /// Read from the change log on top of a full listing: the store holds every object.
    complete_before: bool,
    /// When the names were listed, when not now (a checkpoint's position).
    listed_at_ms: Option<u64>,
    /// What of a checkpoint they came from.
    checkpoint: Option<checkpoints::Step>,
    /// The objects the change log named (a read of the log), whatever it said of them.
    named_by_log: Vec<String>,
}

/// Where a prefetch learns what the bucket holds.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// The change log, else the newest checkpoint (where the store keeps them), else a listing.
    Bucket,
    /// The change log, else a listing.
    LogOrListing,
    /// The range shards of the checkpoint taken over names `lower` to `upper` (inclusive).
    Ranges { lower: String, upper: String },
    /// The tail shard of the checkpoint taken over one pair (the pairs beside it too).
    Held { pair: String },
}

/// The sync agent of one database: its buckets, what listings said, and the breaker.
pub struct Agent {
    stores: HashMap<String, SyncedStore>,
    seen: Mutex<HashMap<String, Seen>>,
    accounting: Arc<Accounting>,
    offline: AtomicBool,
    breaker: Breaker,
    /// One flush at a time: two would read the same outbox entries and send each twice (a
    /// background flush after a commit and an explicit one meet often).
    flushing: Mutex<()>,
    /// Change-log markers refused since the last report, by store.
    marker_failures: Mutex<Vec<(String, String)>>,
    /// Writes whose body landed while their marker did not, since the flush last noted them.
    landed: Mutex<Vec<Change>>,
    /// When each store's change log was last pruned (directory buckets only).
    log_pruned: Mutex<HashMap<String, Instant>>,
    /// The writes of the wave markers read, by bucket and marker name, while they are in a
    /// log's window: a marker never changes, so each is read once.
    waves_read: Mutex<HashMap<String, Vec<changelog::Marker>>>,
    /// How far this machine's clock is taken to be off, in ms: 0 but in tests that play a
    /// writer whose clock is wrong.
    clock_skew_ms: AtomicI64,
    /// One listing at a time: two (a read's and a background refresh's) would each record
    /// how far the store was listed, and the later record could claim what neither saw.
    listing: Mutex<()>,
    /// Conditional-write probes that failed, by bucket: when, and why. Not asked again for
    /// [`PROBE_RETRY`], so a failing probe costs its requests once, not once per write.
    probe_failed: Mutex<HashMap<String, (Instant, Error)>>,
}

impl Agent {
    /// An agent for the synced stores of `db`.
    pub fn new(db: &mut Database) -> Result<Agent> {
        let accounting = Arc::new(Accounting::default());
        for (bucket, honoured) in db.conditional_writes()? {
            accounting.note_conditional_writes(&bucket, honoured);
        }
        let schema = db.schema();
        let mut stores = HashMap::new();
        let configs = super::config::configs(schema, db.secrets())?;
        for (name, config) in configs.into_iter().filter(|(name, _)| db.sync_policy(name).is_some()) {
            let bucket = open_bucket(&config.connection, accounting.clone())?;
            let key_path = schema.store(&name).and_then(|s| s.key_path.clone());
            let pair_indexes = pair_indexes(&config, schema.store(&name).map_or(&[][..], |s| &s.indexes[..]));
            let address = bucket.describe();
            let synced = SyncedStore { config, bucket, address, key_path, meta_siblings: Vec::new(), pair_indexes };
            stores.insert(name, synced);
        }
        let locations: Vec<(String, SyncConfig)> = stores.iter().map(|(n, s)| (n.clone(), s.config.clone())).collect();
        for (name, synced) in stores.iter_mut() {
            synced.meta_siblings = locations
                .iter()
                .filter(|(other, config)| {
                    other != name
                        && config.policy.format == Format::ObjstoreMeta
                        && config.connection.location == synced.config.connection.location
                })
                .map(|(other, _)| other.clone())
                .collect();
            synced.meta_siblings.sort();
        }
        Ok(Agent {
            stores,
            seen: Mutex::default(),
            accounting,
            offline: AtomicBool::new(false),
            breaker: Breaker::default(),
            flushing: Mutex::default(),
            marker_failures: Mutex::default(),
            landed: Mutex::default(),
            log_pruned: Mutex::default(),
            waves_read: Mutex::default(),
            clock_skew_ms: AtomicI64::new(0),
            listing: Mutex::default(),
            probe_failed: Mutex::default(),
        })
    }

    /// What the application should know at open: buckets known to ignore conditional writes.
    pub fn warnings(&self) -> Vec<String> {
        let mut buckets: Vec<String> = self
            .stores
            .values()
            .map(|s| s.address.clone())
            .filter(|b| self.accounting.conditional_writes(b) == Some(false))
            .collect();
        buckets.sort();
        buckets.dedup();
        buckets.iter().map(|b| ignores_conditions(b)).collect()
    }

    /// Whether the schema has any synced store (no agent is needed otherwise).
    pub fn is_needed(schema: &Schema) -> bool {
        schema.stores.iter().any(|s| s.sync.is_some())
    }

    pub fn is_synced(&self, store: &str) -> bool {
        self.stores.contains_key(store)
    }

    /// Whether reads of `store` prefetch on their own (its `prefetch` setting).
    pub fn prefetches(&self, store: &str) -> bool {
        self.stores
            .get(store)
            .is_some_and(|s| s.config.policy.prefetch.is_some() && s.config.policy.format != Format::Rest)
    }

    /// Whether a cached record of `store` is worth revalidating in the background (not for
    /// immutable stores, nor for descriptions, which only listings refresh).
    pub fn revalidates(&self, store: &str) -> bool {
        self.stores
            .get(store)
            .is_some_and(|s| !s.config.policy.immutable && s.config.policy.format != Format::ObjstoreMeta)
    }

    /// Offline, the agent makes no requests: reads serve the cache, writes wait.
    pub fn set_offline(&self, offline: bool) {
        self.offline.store(offline, Ordering::Release);
        if !offline {
            // Back online is a fresh start: no backoff left from before.
            self.breaker.reset();
            self.probe_failed.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    /// Requests made to buckets so far, with bytes and priced cost.
    pub fn stats(&self) -> Stats {
        self.accounting.snapshot()
    }

    /// The same, starting the count again from zero.
    pub fn take_stats(&self) -> Stats {
        self.accounting.take()
    }

    fn store(&self, store: &str) -> Result<&SyncedStore> {
        self.stores.get(store).ok_or_else(|| {
            Error::InvalidArgument(format!("store {} is not synced (it has no Sync block)", crate::error::clip(store)))
        })
    }

    /// The time on `s`'s bucket's clock, in ms since the epoch: change-log markers are named,
    /// and the log read, by it, so that writers' clocks that disagree lose no change (the
    /// window then covers only the second a `Date` header rounds to, and late landings). This
    /// machine's clock until the bucket's answers said otherwise.
    fn bucket_now_ms(&self, s: &SyncedStore) -> u64 {
        let skew = self.clock_skew_ms.load(Ordering::Relaxed);
        let local = now_ms() as i64 + skew;
        // The offset was measured against the true clock; this machine's reads `skew` off it.
        let offset = s.bucket.clock_offset_ms().map_or(0, |o| o - skew);
        (local + offset).max(0) as u64
    }

    /// Plays a machine whose clock is `ms` off (negative: behind), for tests of writers whose
    /// clocks disagree. Not for applications.
    #[doc(hidden)]
    pub fn skew_clock_for_tests(&self, ms: i64) {
        self.clock_skew_ms.store(ms, Ordering::Relaxed);
    }

    /// Fails at once when no request may be made to `s`'s bucket now.
    fn may_contact(&self, s: &SyncedStore, what: &str) -> Result<()> {
        if self.is_offline() {
            return Err(Error::Unreachable { what: what.to_string(), reason: "the database is set offline".into() });
        }
        self.breaker.check(&s.address, what)
    }

    /// Lets `s`'s bucket's breaker take note of an outcome.
    fn note<T>(&self, s: &SyncedStore, outcome: &Result<T>) {
        self.breaker.record(&s.address, outcome);
    }

    /// Whether a listing of `store` within its refractory period answered for the bucket.
    pub fn refractory_fresh(&self, store: &str) -> bool {
        let refractory = self.stores.get(store).map_or(Duration::ZERO, |s| s.config.policy.refractory);
        self.seen().get(store).and_then(|s| s.at).is_some_and(|at| at.elapsed() < refractory)
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn report_offline(&self, port: &mut impl Port, store: &str, error: &Error) {
        if error.is_offline() {
            let message = error.to_string();
            let store = store.to_string();
            let _ = port.exec(move |db| {
                db.emit_sync_event(EventKind::Offline, &store, message);
                Ok(())
            });
        }
    }

    /// Applies changes in transactions of at most [`MAX_BATCH`].
    fn apply(&self, port: &mut impl Port, mut changes: Vec<Change>) -> Result<()> {
        self.note_written(&changes);
        while !changes.is_empty() {
            let rest = changes.split_off(changes.len().min(MAX_BATCH));
            port.exec(move |db| db.apply_sync(changes))?;
            changes = rest;
        }
        Ok(())
    }

    /// An outcome, after `s`'s bucket's breaker took note of it.
    fn recorded<T>(&self, s: &SyncedStore, outcome: Result<T>) -> Result<T> {
        self.note(s, &outcome);
        outcome
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Whether a listed object (`id` at `etag`) is one the local copy lacks or holds at another
/// version, and is not the local copy's to decide (a write waiting or refused).
fn is_new_or_changed(local: &StoreState, immutable: bool, id: &str, etag: &str) -> bool {
    !local.held.contains(id)
        && match local.known.get(id) {
            None => true,
            Some(k) => !immutable && (etag.is_empty() || k.etag.as_deref() != Some(etag)),
        }
}

/// The records among listed objects: their names under the prefix. Empty names, "folder"
/// markers (`prefix/`, made by consoles), names no record can be written back under (see
/// [`object_id`]) and the library's own folders (the change log, the checkpoints) are not
/// records.
fn records(s: &SyncedStore, store: &str, objects: Vec<ObjectInfo>) -> Vec<(String, ObjectInfo)> {
    let prefix = &s.config.connection.location.prefix;
    objects
        .into_iter()
        .filter_map(|o| Some((o.key.strip_prefix(prefix.as_str())?.to_string(), o)))
        .filter(|(id, _)| {
            !id.starts_with(checkpoint::RESERVED)
                && object_id(&s.config.policy, store, &Key::String(id.clone())).is_ok()
        })
        .collect()
}

/// What a full listing no longer has of what is held locally.
fn vanished(local: &StoreState, listed: &[(String, ObjectInfo)]) -> Vec<String> {
    let listed: HashSet<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
    local.known.keys().filter(|id| !listed.contains(id.as_str())).cloned().collect()
}

/// The indexes of an objstore-meta store over its key layout's first two fields, by name.
fn pair_indexes(config: &SyncConfig, indexes: &[crate::schema::IndexSchema]) -> Vec<String> {
    use LayoutSegment::Field;
    let Some([Field(a), Field(b), _, ..]) = config.policy.key_layout.as_deref() else {
        return Vec::new();
    };
    if config.policy.format != Format::ObjstoreMeta {
        return Vec::new();
    }
    let pair = KeyPath::Compound(vec![format!("metadata.{a}"), format!("metadata.{b}")]);
    indexes
        .iter()
        .filter(|index| index.key_path == pair && !index.multi_entry)
        .map(|index| index.name.clone().unwrap_or_else(|| index.key_path.display_name()))
        .collect()
}

/// What a listing of every object of `store` (`objects`, begun at `started_ms`) says.
fn learnt_in_full(
    s: &SyncedStore,
    store: &str,
    local: &StoreState,
    objects: Vec<ObjectInfo>,
    started_ms: u64,
    first_per_pair: bool,
) -> Learnt {
    let described = records(s, store, objects);
    Learnt {
        vanished: vanished(local, &described),
        described,
        complete: true,
        changes_since_ms: s.config.policy.change_log.as_ref().map(|_| started_ms),
        first_per_pair,
        complete_before: false,
        listed_at_ms: None,
        checkpoint: None,
        named_by_log: Vec::new(),
    }
}
