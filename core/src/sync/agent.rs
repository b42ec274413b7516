//! The sync agent: everything that talks to buckets, on the caller's thread or on the agent's
//! own threads (`sync::runner`), never on the database's worker. It reaches the database only
//! through a [`Port`]: ordinary requests that read the outbox and local state and apply what
//! was learnt as bounded batches of [`Change`]s.
//!
//! - reads: [`Agent::fetch`] brings objects a read needs (misses, or everything not known to be
//!   current when a fresh read is asked for); a cached copy of an immutable store, or one whose
//!   etag a listing within the refractory period confirmed, costs no request.
//! - prefetch: one listing, then only what is new or changed is fetched (or described: an
//!   objstore-meta store's records are written while the listing's later pages arrive), and
//!   what vanished goes, in batches of at most [`MAX_BATCH`] changes.
//! - flush: the outbox in order; refused writes are recorded (with their local data kept),
//!   unreachable buckets leave the writes waiting.
//! - a circuit breaker: after a failure to reach a bucket, requests to it fail at once until a
//!   backoff (1 s doubling to 60 s) has passed, so a dead bucket costs one timeout, not one
//!   per read.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::changelog;
use super::config::SyncConfig;
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
mod conditions;

use breaker::Breaker;
use conditions::{again, check_by_reading, delete_is_safe, holds_body, ignores_conditions, probe_conditional_writes};

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

/// How often a writer prunes a directory bucket's change log.
const LOG_PRUNE_EVERY: Duration = Duration::from_secs(60);

/// How long a bucket whose conditional-write probe failed is left before it is probed again.
const PROBE_RETRY: Duration = Duration::from_secs(30);

impl Agent {
    /// An agent for the synced stores of `db`.
    pub fn new(db: &mut Database) -> Result<Agent> {
        let accounting = Arc::new(Accounting::default());
        for (bucket, honoured) in db.conditional_writes()? {
            accounting.note_conditional_writes(&bucket, honoured);
        }
        let schema = db.schema();
        let mut stores = HashMap::new();
        for (name, config) in db.sync_configs().clone() {
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

    // ----- reads ------------------------------------------------------------------------------

    /// Before a read of `keys`: fetches what the read needs. `Cached` fetches only objects not
    /// held locally; `Fresh` also validates held copies not known to be current (a 304 costs no
    /// body). Nothing is applied when any request fails.
    pub fn fetch(
        &self,
        port: &mut impl Port,
        store: &str,
        keys: &[Key],
        freshness: Freshness,
        token: &Token,
    ) -> Result<()> {
        let s = self.store(store)?;
        if s.config.policy.format == Format::ObjstoreMeta {
            // Descriptions come from listings, never from GETs of the objects.
            return Ok(());
        }
        keys.iter().try_for_each(|k| object_id(&s.config, store, k).map(drop))?;
        let (name, wanted) = (store.to_string(), keys.to_vec());
        let locals = port.exec(move |db| db.local_copies(&name, &wanted))?;
        let asks = self.asks(store, &locals, freshness);
        // An immutable store's object that could not be used stays so: its name is never reused.
        let mut unusable: Vec<String> = match s.config.policy.immutable {
            true => locals.iter().filter(|l| !l.present).filter_map(|l| l.state.as_ref()?.unusable.clone()).collect(),
            false => Vec::new(),
        };
        if asks.is_empty() {
            return Self::unusable_error(store, keys, unusable);
        }
        let what = format!("reading store {store:?}");
        self.may_contact(s, &what)?;
        token.check(&what)?;
        let names: Vec<(String, Validators)> = asks.iter().map(|(id, v, _)| (s.object_key(id), v.clone())).collect();
        let answers = parallel(&names, s.config.connection.concurrency, |(name, validators)| {
            token.check(&what)?;
            s.bucket.get(name, validators, token)
        });
        let mut changes = Vec::new();
        for ((id, _, never_synced), answer) in asks.into_iter().zip(answers) {
            self.note(s, &answer);
            match answer {
                // A record written before the store was synced is not the bucket's to remove.
                Ok(Fetched::Missing) if never_synced => {}
                // Still the version that could not be used.
                Ok(Fetched::NotModified) => unusable.extend(marked_unusable(&locals, &id)),
                Ok(answer) => changes.extend(self.changes_for(store, &id, answer)?),
                Err(e) => {
                    self.report_offline(port, store, &e);
                    return Err(e);
                }
            }
        }
        token.check(&what)?;
        unusable.extend(changes.iter().filter_map(|c| match c {
            Change::Unusable { reason, .. } => Some(reason.clone()),
            _ => None,
        }));
        self.apply(port, changes)?;
        Self::unusable_error(store, keys, unusable)
    }

    /// The others are served; a read of one key that cannot be used is that key's error.
    fn unusable_error(store: &str, keys: &[Key], mut unusable: Vec<String>) -> Result<()> {
        match unusable.pop() {
            Some(reason) if keys.len() == 1 => {
                Err(Error::RemoteData { what: format!("reading store {store:?}"), reason })
            }
            _ => Ok(()),
        }
    }

    /// The objects to ask the bucket about, with the validators to send and whether the local
    /// copy was never synced.
    fn asks(&self, store: &str, locals: &[LocalCopy], freshness: Freshness) -> Vec<(String, Validators, bool)> {
        let s = &self.stores[store];
        let listed_fresh = self.refractory_fresh(store);
        let seen = self.seen();
        let listed = seen.get(store).map(|s| &s.listed);
        let mut asked = HashSet::new();
        let mut asks = Vec::new();
        for local in locals {
            if local.held || !asked.insert(local.id.clone()) {
                continue;
            }
            let etag = local.state.as_ref().and_then(|st| st.etag.as_ref());
            let current = local.present
                && (s.config.policy.immutable
                    || freshness == Freshness::Cached
                    || (listed_fresh && etag.is_some() && listed.and_then(|l| l.get(&local.id)) == etag));
            let kept_unusable = !local.present
                && s.config.policy.immutable
                && local.state.as_ref().is_some_and(|st| st.unusable.is_some());
            if current || kept_unusable {
                continue;
            }
            let validators = match (&local.state, local.present) {
                (Some(st), true) => Validators { etag: st.etag.clone(), last_modified: st.modified.clone() },
                (Some(st), false) if st.unusable.is_some() => Validators { etag: st.etag.clone(), last_modified: None },
                _ => Validators::default(),
            };
            asks.push((local.id.clone(), validators, local.present && local.state.is_none()));
        }
        asks
    }

    /// What an answer for object `id` changes, in the store and its meta siblings.
    fn changes_for(&self, store: &str, id: &str, answer: Fetched) -> Result<Vec<Change>> {
        let s = &self.stores[store];
        let mut changes = Vec::new();
        match answer {
            Fetched::NotModified => {}
            Fetched::Missing => {
                changes.push(Change::Drop { store: store.to_string(), id: id.to_string() });
                for meta in &s.meta_siblings {
                    changes.push(Change::Drop { store: meta.clone(), id: id.to_string() });
                }
            }
            Fetched::TooLarge { etag, limit } => {
                let reason = format!("the body is larger than the {limit}-byte limit (Options.maxObjectBytes)");
                changes.push(self.unusable(store, id, etag, reason));
            }
            Fetched::Found(object) => {
                let value = match self.decode(store, id, &object) {
                    Ok(value) => value,
                    Err(Error::RemoteData { reason, .. }) => {
                        changes.push(self.unusable(store, id, object.etag, reason));
                        return Ok(changes);
                    }
                    Err(other) => return Err(other),
                };
                let updated = object.last_modified.as_deref().map(time::http_date_to_iso).unwrap_or_default();
                let etag = object.etag.clone().unwrap_or_default();
                for meta in &s.meta_siblings {
                    let fields = self.describe_fields(meta, id, &object.metadata);
                    let size = object.body.len() as u64;
                    changes.push(Change::Describe {
                        store: meta.clone(),
                        id: id.to_string(),
                        etag: etag.clone(),
                        updated: updated.clone(),
                        size,
                        fields,
                    });
                }
                let state = ObjectState { etag: object.etag, modified: object.last_modified, unusable: None };
                changes.insert(0, Change::Store { store: store.to_string(), id: id.to_string(), value, state });
            }
        }
        Ok(changes)
    }

    /// An object that cannot be used at version `etag`: its description for the error event, the
    /// per-key error and the marker that keeps it from being fetched again until it changes.
    fn unusable(&self, store: &str, id: &str, etag: Option<String>, reason: String) -> Change {
        let version = etag.as_deref().map(|e| format!(" at version {e}")).unwrap_or_default();
        let reason = format!(
            "object {:?} of store {store:?}{version} cannot be used: {reason}; it is left out until it changes",
            self.stores[store].object_key(id)
        );
        Change::Unusable { store: store.to_string(), id: id.to_string(), etag, reason }
    }

    /// The metadata fields of a description: the key layout's, then the object's own.
    fn describe_fields(&self, meta: &str, id: &str, metadata: &Metadata) -> Map<String, Value> {
        let mut fields = Map::new();
        if let Some(m) = self.stores.get(meta) {
            for (name, value) in m.config.policy.layout_fields(id) {
                fields.insert(name, Value::String(value));
            }
        }
        for (name, value) in metadata {
            fields.insert(name.clone(), Value::String(value.clone()));
        }
        fields
    }

    /// A fetched body as a record, checked: JSON, and carrying its own name at the key path.
    fn decode(&self, store: &str, id: &str, object: &Object) -> Result<Value> {
        let s = &self.stores[store];
        let what = || format!("object {:?} of store {store:?}", s.object_key(id));
        let value: Value = serde_json::from_slice(&object.body)
            .map_err(|e| Error::RemoteData { what: what(), reason: format!("the body is not JSON ({e})") })?;
        if let Some(path) = &s.key_path {
            match path.extract(&value) {
                Ok(Some(Key::String(k))) if k == id => {}
                _ => {
                    return Err(Error::RemoteData {
                        what: what(),
                        reason: format!("the record's {path} field should be {id:?}, the object's name"),
                    })
                }
            }
        }
        Ok(value)
    }

    /// Applies changes in transactions of at most [`MAX_BATCH`].
    fn apply(&self, port: &mut impl Port, mut changes: Vec<Change>) -> Result<()> {
        while !changes.is_empty() {
            let rest = changes.split_off(changes.len().min(MAX_BATCH));
            port.exec(move |db| db.apply_sync(changes))?;
            changes = rest;
        }
        Ok(())
    }

    // ----- prefetch ---------------------------------------------------------------------------

    /// Prefetches `store` as its setting says, unless within the refractory period.
    pub fn refresh(&self, port: &mut impl Port, store: &str, token: &Token) -> Result<()> {
        match self.stores.get(store).and_then(|s| s.config.policy.prefetch) {
            Some(mode) if !self.refractory_fresh(store) => {
                self.prefetch_as(port, store, mode, Listing::AsHeld, Instant::now(), token)
            }
            _ => Ok(()),
        }
    }

    /// Prefetches `store` as its setting says, now (a read found it cold, or asked for fresh).
    /// A read of the first name of each pair (see [`Agent::reads_first_per_pair`]) of a store
    /// not listed yet lists only those.
    /// `asked`: when the read found it needed the listing; one that completed since serves it
    /// (reads that find a store cold together share one listing).
    pub fn prefetch_for_read(
        &self,
        port: &mut impl Port,
        store: &str,
        first_per_pair: bool,
        asked: Instant,
        token: &Token,
    ) -> Result<()> {
        let mode = self.stores.get(store).and_then(|s| s.config.policy.prefetch).unwrap_or(Prefetch::Meta);
        let listing = if first_per_pair { Listing::FirstPerPair } else { Listing::Everything };
        if self.listed_after(store, asked, listing == Listing::Everything) {
            return Ok(());
        }
        self.prefetch_as(port, store, mode, listing, asked, token)
    }

    /// Whether `scan` of `store` reads only the first name of each pair of the key layout's
    /// first two fields (the newest run per platform/runtime pair, in the results layout): a
    /// unique, forward scan of an index over those fields, with no range.
    pub fn reads_first_per_pair(&self, store: &str, scan: &crate::ScanOptions) -> bool {
        self.stores.get(store).is_some_and(|s| {
            scan.unique
                && !scan.reverse
                && scan.range.is_none()
                && scan.index.as_ref().is_some_and(|index| s.pair_indexes.contains(index))
        })
    }

    /// Whether a listing of `store` (of every object, when `complete`) completed after `asked`.
    fn listed_after(&self, store: &str, asked: Instant, complete: bool) -> bool {
        self.seen().get(store).is_some_and(|s| s.at.is_some_and(|at| at >= asked) && (s.complete || !complete))
    }

    /// Whether this process listed `store` far enough for a read: in full, or first per pair
    /// for a read of only that.
    pub fn listed_for(&self, store: &str, first_per_pair: bool) -> bool {
        self.seen().get(store).is_some_and(|s| s.at.is_some() && (first_per_pair || s.complete))
    }

    /// Before `scan` of a prefetching store: lists it when this process has not (only the
    /// first name of each pair, when that is all the scan reads), else refreshes it as
    /// [`Agent::refresh`] does.
    pub fn refresh_for(
        &self,
        port: &mut impl Port,
        store: &str,
        scan: &crate::ScanOptions,
        token: &Token,
    ) -> Result<()> {
        let first_per_pair = self.reads_first_per_pair(store, scan);
        if !self.listed_for(store, first_per_pair) {
            return self.prefetch_for_read(port, store, first_per_pair, Instant::now(), token);
        }
        self.refresh(port, store, token)
    }

    /// Lists the store's objects now and brings the local copy in line, whatever the
    /// refractory period and the change log: new and changed objects are fetched (or, for an
    /// objstore-meta store, described) and vanished ones removed. Explicit prefetches always
    /// fetch bodies; a store's `prefetch: meta` setting only governs the automatic ones.
    pub fn prefetch(&self, port: &mut impl Port, store: &str, token: &Token) -> Result<()> {
        self.prefetch_as(port, store, Prefetch::Full, Listing::Full, Instant::now(), token)
    }

    fn prefetch_as(
        &self,
        port: &mut impl Port,
        store: &str,
        mode: Prefetch,
        listing: Listing,
        asked: Instant,
        token: &Token,
    ) -> Result<()> {
        let s = self.store(store)?;
        if s.config.policy.format == Format::Rest {
            return Err(Error::InvalidArgument(format!("store {store:?} uses the rest format, which has no listing")));
        }
        let what = format!("prefetching store {store:?}");
        self.may_contact(s, &what)?;
        let _one_listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        // Single flight: a read that waited here while another listing ran takes that one's
        // answer when it completed after the read asked, and went as far as the read needs (an
        // explicit prefetch always lists anew).
        if listing != Listing::Full && self.listed_after(store, asked, listing == Listing::Everything) {
            return Ok(());
        }
        let name = store.to_string();
        let summary = port.exec(move |db| db.store_state_of(&name, Some(&[])))?;
        let began = Instant::now();
        let clock_known = s.bucket.clock_offset_ms().is_some();
        let started_ms = self.bucket_now_ms(s);
        // Whether the last listing was a full one, and when the log can go on from.
        let (full_at, pairs_at) = (summary.listed_at_ms, summary.pairs_listed_at_ms);
        let last_was_full = full_at.is_some() && full_at >= pairs_at;
        let log_from = match listing {
            Listing::Full => None,
            // A first-per-pair listing since the full one missed the other objects' changes.
            Listing::Everything => full_at.filter(|_| last_was_full),
            Listing::AsHeld | Listing::FirstPerPair => full_at.max(pairs_at),
        };
        let pairs_only =
            listing == Listing::FirstPerPair || (listing == Listing::AsHeld && pairs_at.is_some() && !last_was_full);
        let learnt = match (&s.config.policy.change_log, summary.changes_since_ms, log_from) {
            (Some(log), Some(since), Some(listed_at))
                if u128::from(started_ms.saturating_sub(listed_at)) < log.relist_every.as_millis() =>
            {
                self.read_change_log(port, store, log, since, started_ms, summary, token).and_then(|(learnt, local)| {
                    let learnt = Learnt { complete_before: last_was_full, ..learnt };
                    // Held only first per pair: a pair whose first name went has a new one.
                    match last_was_full || s.pair_indexes.is_empty() {
                        true => Ok((learnt, local, HashSet::new())),
                        false => self.refill_pairs(store, learnt, token).map(|learnt| (learnt, local, HashSet::new())),
                    }
                })
            }
            _ => {
                let name = store.to_string();
                let local = port.exec(move |db| db.store_state(&name))?;
                self.list_describing(port, store, local, pairs_only, started_ms, token)
            }
        };
        let (mut learnt, local, written) = learnt.inspect_err(|e| self.report_offline(port, store, e))?;
        // Begun before the bucket had told its clock: when that was on the bucket's clock.
        let started_ms = match clock_known {
            true => started_ms,
            false => self.bucket_now_ms(s).saturating_sub(began.elapsed().as_millis() as u64),
        };
        learnt.changes_since_ms = learnt.changes_since_ms.map(|since| since.min(started_ms));
        let immutable = s.config.policy.immutable;
        let vanished: Vec<&String> =
            learnt.vanished.iter().filter(|id| !immutable && !local.held.contains(*id)).collect();
        let changed: Vec<&(String, ObjectInfo)> = learnt
            .described
            .iter()
            .filter(|(id, o)| is_new_or_changed(&local, immutable, id, &o.etag) && !written.contains(id))
            .collect();

        let mut changes: Vec<Change> = Vec::new();
        for id in vanished {
            changes.extend(self.changes_for(store, id, Fetched::Missing)?);
        }
        match (s.config.policy.format, mode) {
            (Format::ObjstoreMeta, _) => changes.extend(changed.iter().map(|(id, o)| self.describe(store, id, o))),
            (_, Prefetch::Meta) => {
                // Changed objects lose their cached copy; the next read fetches them.
                for (id, _) in changed.iter().filter(|(id, _)| local.known.contains_key(id)) {
                    changes.extend(self.changes_for(store, id, Fetched::Missing)?);
                }
            }
            (_, Prefetch::Full) => {
                // Fetched and applied a batch at a time: a cold 100k-object store never holds
                // every body at once.
                self.apply(port, std::mem::take(&mut changes))?;
                for chunk in changed.chunks(FETCH_CHUNK) {
                    token.check(&what)?;
                    self.fetch_chunk(port, store, chunk, token)?;
                }
            }
        }
        token.check(&what)?;
        if learnt.complete {
            changes.push(Change::Prefetched { store: store.to_string(), at_ms: self.bucket_now_ms(s) });
        }
        if let Some(since_ms) = learnt.changes_since_ms {
            changes.push(Change::ChangesRead { store: store.to_string(), since_ms });
        }
        if learnt.first_per_pair && !learnt.complete {
            changes.push(Change::PairsListed { store: store.to_string(), at_ms: started_ms });
        }
        self.apply(port, changes)?;
        let mut seen = self.seen();
        let entry = seen.entry(store.to_string()).or_default();
        entry.at = Some(Instant::now());
        entry.complete = learnt.complete || learnt.complete_before;
        if learnt.complete {
            entry.listed.clear();
        }
        for id in &learnt.vanished {
            entry.listed.remove(id);
        }
        entry.listed.extend(learnt.described.into_iter().map(|(id, o)| (id, o.etag)));
        Ok(())
    }

    /// Lists `store` (only the first name of each pair when `pairs_only`). For an objstore-meta
    /// store, whose records come from the listing alone, what the listing describes is written
    /// into the cache as its pages arrive, [`MAX_BATCH`] at a time, so that the listing's later
    /// pages and the cache's writes overlap (a cold listing of 100,000 names from Garage 20 ms
    /// away: 5.0 s to a drawn matrix before, 4.2 s now; and 220 MB at most, not 350 MB). Returns
    /// what the listing learnt, the local state it was compared with, and the objects written
    /// already. A listing that fails part-way keeps what it wrote (objects the bucket holds) and
    /// writes no marker: the next one lists again.
    fn list_describing(
        &self,
        port: &mut impl Port,
        store: &str,
        local: StoreState,
        pairs_only: bool,
        started_ms: u64,
        token: &Token,
    ) -> Result<(Learnt, StoreState, HashSet<String>)> {
        let s = &self.stores[store];
        let early = s.config.policy.format == Format::ObjstoreMeta;
        let mut written = HashSet::new();
        let mut pending: Vec<Change> = Vec::new();
        let mut listed = |objects: &[ObjectInfo]| -> Result<()> {
            if !early {
                return Ok(());
            }
            for (id, o) in records(s, store, objects.to_vec()) {
                if is_new_or_changed(&local, s.config.policy.immutable, &id, &o.etag) && written.insert(id.clone()) {
                    pending.push(self.describe(store, &id, &o));
                }
            }
            match pending.len() >= MAX_BATCH {
                true => self.apply(port, std::mem::take(&mut pending)),
                false => Ok(()),
            }
        };
        let learnt = match pairs_only {
            true => self.list_first_per_pair(store, &local, started_ms, token, &mut listed)?,
            false => self.list_everything(store, &local, started_ms, token, &mut listed)?,
        };
        // A prefetch cancelled while it listed writes no more than it had.
        token.check("a prefetch")?;
        self.apply(port, pending)?;
        Ok((learnt, local, written))
    }

    /// The change that describes object `id` of an objstore-meta store as a listing has it.
    fn describe(&self, store: &str, id: &str, o: &ObjectInfo) -> Change {
        Change::Describe {
            store: store.to_string(),
            id: id.to_string(),
            etag: o.etag.clone(),
            updated: o.last_modified.clone(),
            size: o.size,
            fields: self.describe_fields(store, id, &o.metadata.clone().unwrap_or_default()),
        }
    }

    /// Every object under the store's prefix, in one listing or, where the key layout starts
    /// with a field, one per name of that field, side by side (bounded by `concurrency`): the
    /// wall time of a cold listing follows the largest of them, not the bucket. Each value's
    /// objects go to `listed` as they arrive.
    fn list_everything(
        &self,
        store: &str,
        local: &StoreState,
        started_ms: u64,
        token: &Token,
        listed: &mut dyn FnMut(&[ObjectInfo]) -> Result<()>,
    ) -> Result<Learnt> {
        let s = &self.stores[store];
        let prefix = &s.config.connection.location.prefix;
        let request =
            ListRequest { prefix: prefix.clone(), version: s.config.connection.list_version, ..Default::default() };
        let fans_out = s
            .config
            .policy
            .key_layout
            .as_ref()
            .is_some_and(|layout| layout.len() > 1 && matches!(layout.first(), Some(LayoutSegment::Field(_))));
        let objects = if let Some(objects) = self.one_page_if_small(s, fans_out, &request, token)? {
            objects
        } else if fans_out {
            let (mut objects, folders) = self.first_field_values(s, &request, token)?;
            let mut failed = Ok(());
            let list = |folder: &String| {
                let request = ListRequest { prefix: folder.to_string(), ..request.clone() };
                self.recorded(s, list_all(&*s.bucket, &request, token))
            };
            parallel_each(&folders, s.config.connection.concurrency, list, |_, listing| {
                if failed.is_ok() {
                    failed = listing.and_then(|l| listed(&l.objects).map(|()| objects.extend(l.objects)));
                }
            });
            failed?;
            objects
        } else {
            self.recorded(s, self.list_around_the_log(s, &request, token))?
        };
        Ok(learnt_in_full(s, store, local, objects, started_ms, false))
    }

    /// The first name of each pair of the key layout's first two fields, whichever way costs
    /// fewer requests: the first field's values (a delimiter listing), then each value's first
    /// page side by side. A value whose first page ends inside its first pair has pairs of more
    /// than a page: its later pairs are listed (a delimiter listing from the page's last name)
    /// and each one's first name read (a one-key page), a request per pair. Any other value's
    /// pairs are smaller than a page, so its listing goes on page by page (fewer requests than
    /// one per pair), and the store is then listed in full. Pages go to `listed` as they arrive.
    fn list_first_per_pair(
        &self,
        store: &str,
        local: &StoreState,
        started_ms: u64,
        token: &Token,
        listed: &mut dyn FnMut(&[ObjectInfo]) -> Result<()>,
    ) -> Result<Learnt> {
        let s = &self.stores[store];
        let prefix = &s.config.connection.location.prefix;
        let base =
            ListRequest { prefix: prefix.clone(), version: s.config.connection.list_version, ..Default::default() };
        if let Some(objects) = self.one_page_if_small(s, true, &base, token)? {
            return Ok(learnt_in_full(s, store, local, objects, started_ms, true));
        }
        let (mut objects, folders) = self.first_field_values(s, &base, token)?;
        let folders: Vec<&String> = folders.iter().collect();
        let mut longer: Vec<(String, String)> = Vec::new();
        let mut going_on: Vec<(String, String)> = Vec::new();
        let mut failed = Ok(());
        let first_page = |folder: &&String| {
            self.recorded(s, s.bucket.list_page(&ListRequest { prefix: folder.to_string(), ..base.clone() }, token))
        };
        parallel_each(&folders, s.config.connection.concurrency, first_page, |i, page| {
            if failed.is_err() {
                return;
            }
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    failed = Err(e);
                    return;
                }
            };
            let folder = folders[i];
            if let Some(next) = &page.next {
                let pair_of = |o: &ObjectInfo| pair_prefix(folder, &o.key);
                match (page.objects.first(), page.objects.last()) {
                    (Some(first), Some(last)) if pair_of(first).is_some() && pair_of(first) == pair_of(last) => {
                        longer.push((folder.to_string(), last.key.clone()))
                    }
                    _ => going_on.push((folder.to_string(), next.clone())),
                }
            }
            failed = listed(&page.objects);
            objects.extend(page.objects);
        });
        failed?;
        // In folder order, whichever page arrived first.
        longer.sort();
        going_on.sort();
        let mut failed = Ok(());
        let rest = |(folder, next): &(String, String)| {
            let request = ListRequest { prefix: folder.clone(), continuation: Some(next.clone()), ..base.clone() };
            self.recorded(s, list_all(&*s.bucket, &request, token))
        };
        parallel_each(&going_on, s.config.connection.concurrency, rest, |_, listing| {
            if failed.is_ok() {
                failed = listing.and_then(|l| listed(&l.objects).map(|()| objects.extend(l.objects)));
            }
        });
        failed?;
        let later = parallel(&longer, s.config.connection.concurrency, |(folder, last)| {
            let request = ListRequest {
                prefix: folder.clone(),
                delimiter: Some("/".into()),
                start_after: Some(last.clone()),
                ..base.clone()
            };
            self.recorded(s, list_all(&*s.bucket, &request, token))
        });
        let mut pairs = Vec::new();
        for ((_, last), listing) in longer.iter().zip(later) {
            let listing = listing?;
            // The pair the first page ended in has its first name on that page.
            pairs.extend(listing.common_prefixes.into_iter().filter(|pair| !last.starts_with(pair.as_str())));
            objects.extend(listing.objects);
        }
        let firsts = parallel(&pairs, s.config.connection.concurrency, |pair| self.first_of_pair(store, pair, token));
        for first in firsts {
            objects.extend(first?);
        }
        let described = records(s, store, objects);
        let complete = longer.is_empty();
        let vanished = match complete {
            true => vanished(local, &described),
            false => {
                let enumerated: HashSet<&str> = longer.iter().map(|(folder, _)| folder.as_str()).collect();
                vanished_in_part(prefix, local, &described, &folders, &enumerated)
            }
        };
        let learnt = Learnt {
            vanished,
            described,
            complete,
            changes_since_ms: s.config.policy.change_log.as_ref().map(|_| started_ms),
            first_per_pair: true,
            complete_before: false,
        };
        Ok(learnt)
    }

    /// A store that fits one listing page costs that page alone: before fanning out (`fans_out`)
    /// by the key layout's first field, the first plain page is read, and when it is the last
    /// one, it is the whole listing. `None` when more pages follow (the fan-out goes on).
    fn one_page_if_small(
        &self,
        s: &SyncedStore,
        fans_out: bool,
        request: &ListRequest,
        token: &Token,
    ) -> Result<Option<Vec<ObjectInfo>>> {
        if !fans_out {
            return Ok(None);
        }
        let page = self.recorded(s, s.bucket.list_page(request, token))?;
        Ok(page.next.is_none().then_some(page.objects))
    }

    /// The names directly under the store's prefix and the first field's values (folders, the
    /// change log's left out): one delimiter listing.
    fn first_field_values(
        &self,
        s: &SyncedStore,
        request: &ListRequest,
        token: &Token,
    ) -> Result<(Vec<ObjectInfo>, Vec<String>)> {
        let top = ListRequest { delimiter: Some("/".into()), ..request.clone() };
        let top = self.recorded(s, list_all(&*s.bucket, &top, token))?;
        let log = format!("{}{}", s.config.connection.location.prefix, changelog::DIR);
        Ok((top.objects, top.common_prefixes.into_iter().filter(|p| *p != log).collect()))
    }

    /// An outcome, after `s`'s bucket's breaker took note of it.
    fn recorded<T>(&self, s: &SyncedStore, outcome: Result<T>) -> Result<T> {
        self.note(s, &outcome);
        outcome
    }

    /// For a store held first per pair: the new first name of each pair whose first name the
    /// change log removed.
    fn refill_pairs(&self, store: &str, mut learnt: Learnt, token: &Token) -> Result<Learnt> {
        let s = &self.stores[store];
        let prefix = &s.config.connection.location.prefix;
        let mut pairs: Vec<String> = learnt
            .vanished
            .iter()
            .filter_map(|id| {
                let (folder, _) = id.split_once('/')?;
                pair_prefix(&format!("{prefix}{folder}/"), &format!("{prefix}{id}"))
            })
            .collect();
        pairs.sort();
        pairs.dedup();
        for first in parallel(&pairs, s.config.connection.concurrency, |pair| self.first_of_pair(store, pair, token)) {
            for (id, object) in records(s, store, first?) {
                if !learnt.described.iter().any(|(known, _)| *known == id) {
                    learnt.described.push((id, object));
                }
            }
        }
        Ok(learnt)
    }

    /// The first record of a pair (`{prefix}{a}/{b}/`): a one-key page, and the next ones
    /// while what they hold is not a record (a console's folder marker).
    fn first_of_pair(&self, store: &str, pair: &str, token: &Token) -> Result<Vec<ObjectInfo>> {
        let s = &self.stores[store];
        let mut request = ListRequest {
            prefix: pair.to_string(),
            max_keys: Some(1),
            version: s.config.connection.list_version,
            ..Default::default()
        };
        loop {
            let page = self.recorded(s, s.bucket.list_page(&request, token))?;
            let found = !records(s, store, page.objects.clone()).is_empty();
            match page.next {
                Some(next) if !found && request.continuation.as_ref() != Some(&next) => {
                    request.continuation = Some(next)
                }
                _ => return Ok(page.objects),
            }
        }
    }

    /// Every object of a listing but the change log's markers, which would otherwise fill a
    /// page per thousand writes: names sorting before the log (a character below `.` first,
    /// so rarely any) are read until the log begins, the rest from just after it.
    fn list_around_the_log(&self, s: &SyncedStore, request: &ListRequest, token: &Token) -> Result<Vec<ObjectInfo>> {
        let Some(log) = &s.config.policy.change_log else {
            return Ok(list_all(&*s.bucket, request, token)?.objects);
        };
        let mut objects = Vec::new();
        let mut before = ListRequest { max_keys: Some(1), ..request.clone() };
        loop {
            let page = s.bucket.list_page(&before, token)?;
            let reached_the_log = page.objects.iter().any(|o| o.key >= log.prefix);
            objects.extend(page.objects.into_iter().take_while(|o| o.key < log.prefix));
            match page.next {
                Some(next) if !reached_the_log && before.continuation.as_ref() != Some(&next) => {
                    before = ListRequest { max_keys: None, continuation: Some(next), ..before };
                }
                _ => break,
            }
        }
        // Markers start with a digit: `~` sorts after every one of them, and before any name
        // outside the log's folder that sorts after it.
        let after_the_log = format!("{}~", log.prefix);
        let after = ListRequest { start_after: Some(after_the_log), ..request.clone() };
        objects.extend(list_all(&*s.bucket, &after, token)?.objects);
        Ok(objects)
    }

    /// What the change log says happened since the read at `since_ms` (and the window before
    /// it): one listing, usually one page.
    /// An object with markers from several writers, or a put marker without its version, is
    /// asked about (a HEAD): writers' clocks may order their markers wrongly.
    #[allow(clippy::too_many_arguments)]
    fn read_change_log(
        &self,
        port: &mut impl Port,
        store: &str,
        log: &ChangeLogConfig,
        since_ms: u64,
        started_ms: u64,
        summary: StoreState,
        token: &Token,
    ) -> Result<(Learnt, StoreState)> {
        let s = &self.stores[store];
        let window = log.window.as_millis() as u64;
        let log = log.prefix.as_str();
        let request = ListRequest {
            prefix: log.to_string(),
            start_after: Some(changelog::start_after(log, since_ms, window)),
            version: s.config.connection.list_version,
            ..Default::default()
        };
        let listing = list_all(&*s.bucket, &request, token);
        self.note(s, &listing);
        let markers: Vec<changelog::Marker> =
            listing?.objects.iter().filter_map(|o| changelog::parse(log, o)).collect();
        // The validators of the objects the markers name, not of the whole store.
        let mut ids: Vec<String> = markers.iter().map(|m| m.id.clone()).collect();
        ids.sort();
        ids.dedup();
        let name = store.to_string();
        let known = port.exec(move |db| db.store_state_of(&name, Some(&ids)))?.known;
        let local = StoreState { known, ..summary };
        // The last marker of each object, and whether other writers left markers for it too
        // (their clocks may order them wrongly).
        let mut latest: HashMap<&str, (&changelog::Marker, bool)> = HashMap::new();
        for marker in &markers {
            if object_id(&s.config, store, &Key::String(marker.id.clone())).is_err() {
                continue;
            }
            let entry = latest.entry(marker.id.as_str()).or_insert((marker, false));
            *entry = (marker, entry.1 || entry.0.writer != marker.writer);
        }
        let mut unsure = Vec::new();
        // The next read starts a window before this one: markers land within it.
        let mut learnt = Learnt { changes_since_ms: Some(started_ms), ..Learnt::default() };
        for (id, (marker, several_writers)) in latest {
            let held = local.known.get(id).and_then(|k| k.etag.as_ref());
            match &marker.op {
                // Markers carry no metadata headers: a store that keeps them from listings asks.
                _ if several_writers || s.config.connection.list_metadata => unsure.push(id.to_string()),
                // Markers already acted on name the version held: they cost nothing.
                changelog::Op::Put { etag: Some(etag), .. } if held == Some(etag) => {}
                changelog::Op::Put { size, etag: Some(etag) } => learnt.described.push((
                    id.to_string(),
                    ObjectInfo {
                        key: s.object_key(id),
                        etag: etag.clone(),
                        last_modified: marker.last_modified.clone(),
                        size: *size,
                        metadata: None,
                    },
                )),
                changelog::Op::Put { etag: None, .. } => unsure.push(id.to_string()),
                changelog::Op::Remove if local.known.contains_key(id) => learnt.vanished.push(id.to_string()),
                changelog::Op::Remove => {}
            }
        }
        let answers = parallel(&unsure, s.config.connection.concurrency, |id| s.bucket.head(&s.object_key(id), token));
        for (id, answer) in unsure.into_iter().zip(answers) {
            self.note(s, &answer);
            match answer? {
                Some((info, metadata)) => learnt.described.push((id, ObjectInfo { metadata: Some(metadata), ..info })),
                None if local.known.contains_key(&id) => learnt.vanished.push(id),
                None => {}
            }
        }
        Ok((learnt, local))
    }

    /// Fetches and applies one chunk of a full prefetch. One unusable object must not keep
    /// every read of the store failing: it is left out and reported.
    fn fetch_chunk(
        &self,
        port: &mut impl Port,
        store: &str,
        chunk: &[&(String, ObjectInfo)],
        token: &Token,
    ) -> Result<()> {
        let s = &self.stores[store];
        let names: Vec<String> = chunk.iter().map(|(id, _)| s.object_key(id)).collect();
        let answers = parallel(&names, s.config.connection.concurrency, |name| {
            token.check("a prefetch")?;
            s.bucket.get(name, &Validators::default(), token)
        });
        let mut changes = Vec::new();
        for ((id, _), answer) in chunk.iter().zip(answers) {
            self.note(s, &answer);
            let answer = answer.inspect_err(|e| self.report_offline(port, store, e))?;
            changes.extend(self.changes_for(store, id, answer)?);
        }
        self.apply(port, changes)
    }

    // ----- writes -----------------------------------------------------------------------------

    /// Sends the outbox in order until it is empty. A bucket that cannot be reached, or that
    /// refuses every request, is left for this flush: its writes wait, other buckets' go on.
    /// Each batch of writes is acknowledged in one transaction.
    pub fn flush(&self, port: &mut impl Port, token: &Token) -> Result<FlushReport> {
        let _one_at_a_time = self.flushing.lock().unwrap_or_else(|p| p.into_inner());
        let mut report = FlushReport::default();
        // Objects whose write was refused in this flush: later writes to them were made on
        // top of a version the bucket does not hold, so they are refused too.
        let mut refused_objects: HashSet<(String, String)> = HashSet::new();
        // Versions this flush wrote: a later write to the same object in the same batch is
        // conditional on them, not on what the batch read before.
        let mut written: HashMap<(String, String), Option<String>> = HashMap::new();
        // Objects whose write the server failed on in this flush: their later writes wait too.
        let mut held: HashSet<(String, String)> = HashSet::new();
        // Buckets whose last write in this flush was held: a second server error stops them.
        let mut held_last: HashSet<String> = HashSet::new();
        // Buckets this flush stopped sending to.
        let mut stopped: HashSet<String> = HashSet::new();
        // The outbox is read in pages after the last write met, so that writes left waiting
        // at its head (held, or for a stopped bucket) never hide the ones behind them.
        let mut after = 0;
        loop {
            let batch = port.exec(move |db| db.outbox_batch(after, FLUSH_BATCH))?;
            if batch.is_empty() {
                break;
            }
            // The first write of every object goes out together, then every second one, and
            // so on: an object's writes stay in order, different objects' go side by side.
            for wave in waves(batch) {
                let skipped = Skipped { held: &held, refused: &refused_objects, stopped: &stopped };
                let mut present = self.send_ahead(port, &wave, &written, &skipped, token);
                let mut changes = Vec::new();
                for mut item in wave {
                    after = after.max(item.sequence);
                    if let Err(e) = token.check("the flush") {
                        self.apply_wave(port, changes)?;
                        return Err(e);
                    }
                    let object = (item.entry.store.clone(), item.entry.id.clone());
                    let bucket = self.stores.get(&item.entry.store).map(|s| s.address.clone());
                    if held.contains(&object) || bucket.as_ref().is_some_and(|b| stopped.contains(b)) {
                        continue;
                    }
                    if let Some(etag) = written.get(&object) {
                        item.known_etag = etag.clone();
                    }
                    let last_held = bucket.as_ref().is_some_and(|b| held_last.contains(b));
                    let mut one_write_failed = false;
                    let outcome = if item.stacked || refused_objects.contains(&object) {
                        Err(Error::Conflict {
                            store: item.entry.store.clone(),
                            key: item.entry.id.clone(),
                            detail: "an earlier write to this object was refused, and this one was made on top of it"
                                .into(),
                        })
                    } else {
                        self.may_send(&item).and_then(|()| {
                            let sent = match present.remove(&item.sequence) {
                                Some(sent) => sent,
                                None => {
                                    self.learn_conditions(port, &item, token).and_then(|()| self.send(&item, token))
                                }
                            };
                            // A server error on one write, right after a write that went well, may
                            // be about that write alone: it is held aside rather than taken for a
                            // failing server. Two in a row stop the bucket.
                            one_write_failed =
                                !last_held && matches!(&sent, Err(Error::Remote { status: 500 | 501, .. }));
                            if let (false, Ok(s)) = (one_write_failed, self.store(&item.entry.store)) {
                                self.note(s, &sent);
                            }
                            sent
                        })
                    };
                    if let Some(bucket) = &bucket {
                        match one_write_failed {
                            true => held_last.insert(bucket.clone()),
                            false => held_last.remove(bucket),
                        };
                    }
                    match outcome {
                        Err(e) if one_write_failed => {
                            held.insert(object);
                            let (store, message) = (item.entry.store.clone(), e.to_string());
                            port.exec(move |db| {
                                db.emit_sync_event(EventKind::Error, &store, message);
                                Ok(())
                            })?;
                            report.held.push((item.sequence, e));
                        }
                        Ok(etag) => {
                            written.insert(object, etag.clone());
                            changes.push(Change::Sent {
                                sequence: item.sequence,
                                store: item.entry.store.clone(),
                                id: item.entry.id.clone(),
                                etag: etag.clone(),
                            });
                            changes.extend(self.sent_meta(&item, etag));
                            report.sent += 1;
                        }
                        Err(e) if e.is_offline() => {
                            self.report_offline(port, &item.entry.store, &e);
                            stopped.extend(bucket);
                            report.offline.get_or_insert(e);
                        }
                        Err(e)
                            if e.refuses_the_write()
                                || matches!(e, Error::Conflict { .. } | Error::InvalidArgument(_)) =>
                        {
                            refused_objects.insert(object);
                            let error = as_conflict(&item, e);
                            let conflict = matches!(error, Error::Conflict { .. });
                            changes.push(Change::Refused {
                                sequence: item.sequence,
                                store: item.entry.store.clone(),
                                id: item.entry.id.clone(),
                                code: format!("{:?}", error.code()),
                                message: error.to_string(),
                                conflict,
                            });
                            report.rejected.push((item.sequence, error));
                        }
                        Err(e) => {
                            let (store, message) = (item.entry.store.clone(), e.to_string());
                            port.exec(move |db| {
                                db.emit_sync_event(EventKind::Error, &store, message);
                                Ok(())
                            })?;
                            stopped.extend(bucket);
                            report.blocked.get_or_insert(e);
                        }
                    }
                }
                self.apply_wave(port, changes)?;
            }
        }
        self.report_marker_failures(port)?;
        report.pending = port.exec(|db| db.outbox_len())?;
        report.refused = port.exec(|db| db.refused_len())?;
        Ok(report)
    }

    /// Applies a wave's acknowledgements, with what it learnt of bodies that landed without
    /// their markers.
    fn apply_wave(&self, port: &mut impl Port, mut changes: Vec<Change>) -> Result<()> {
        changes.append(&mut self.landed.lock().unwrap_or_else(|p| p.into_inner()));
        self.apply(port, changes)
    }

    /// Fails at once when `item`'s bucket may not be contacted now (a store that no longer
    /// syncs fails when it is sent, with the reason).
    fn may_send(&self, item: &OutboxItem) -> Result<()> {
        match self.store(&item.entry.store) {
            Ok(s) => self.may_contact(s, "the outbox"),
            Err(_) => Ok(()),
        }
    }

    /// Sends the first write of each object in `batch` at once, several at a time, so that one
    /// slow PUT (an fsync, a round trip) does not wait for another; answers by sequence number,
    /// for the in-order pass to acknowledge. Writes to one object stay in order (only the first
    /// goes ahead, on the version this flush wrote before), and a write whose object was
    /// refused or held waits for that pass. A write sent here whose answer that pass never takes (it stopped first) is
    /// sent again next flush, where its own body already in place counts as sent.
    fn send_ahead(
        &self,
        port: &mut impl Port,
        batch: &[OutboxItem],
        written: &HashMap<(String, String), Option<String>>,
        skipped: &Skipped<'_>,
        token: &Token,
    ) -> HashMap<u64, Result<Option<String>>> {
        let mut seen = HashSet::new();
        let ahead: Vec<OutboxItem> = batch
            .iter()
            .filter(|item| {
                let object = (item.entry.store.clone(), item.entry.id.clone());
                let first = seen.insert(object.clone());
                first && !item.stacked && !skipped.object(&object) && !self.is_stopped(item, skipped.stopped)
            })
            .map(|item| {
                // Made on the version this flush wrote before, if it did.
                let mut item = item.clone();
                if let Some(etag) = written.get(&(item.entry.store.clone(), item.entry.id.clone())) {
                    item.known_etag = etag.clone();
                }
                item
            })
            .collect();
        let Some(first) = ahead.first() else { return HashMap::new() };
        let concurrency = self.stores.get(&first.entry.store).map_or(1, |s| s.config.connection.concurrency);
        if ahead.len() < 2 || ahead.iter().any(|item| self.may_send(item).is_err()) {
            return HashMap::new();
        }
        // A bucket's conditional writes are learnt before its writes go out together.
        for item in &ahead {
            if self.learn_conditions(port, item, token).is_err() {
                return HashMap::new();
            }
        }
        let answers = parallel(&ahead, concurrency, |item| self.send(item, token));
        ahead.iter().map(|item| item.sequence).zip(answers).collect()
    }

    /// Whether `item`'s bucket is one the flush stopped sending to.
    fn is_stopped(&self, item: &OutboxItem, stopped: &HashSet<String>) -> bool {
        self.stores.get(&item.entry.store).is_some_and(|s| stopped.contains(&s.address))
    }

    /// Before the first conditional write to an S3 bucket, probes whether it honours the
    /// condition; what it learns is kept in the database (so later opens warn at once) and said
    /// in an error event.
    fn learn_conditions(&self, port: &mut impl Port, item: &OutboxItem, token: &Token) -> Result<()> {
        let Ok(s) = self.store(&item.entry.store) else { return Ok(()) };
        let bucket = s.address.clone();
        let probed =
            s.config.policy.format == Format::Objstore && !s.config.connection.location.endpoint.starts_with("file://");
        if item.entry.op == WriteOp::Overwrite || !probed || self.accounting.conditional_writes(&bucket).is_some() {
            return Ok(());
        }
        if let Some(declared) = s.config.connection.conditional_writes {
            self.accounting.note_conditional_writes(&bucket, declared);
            return Ok(());
        }
        let mut failed = self.probe_failed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, why)) = failed.get(&bucket).filter(|(at, _)| at.elapsed() < PROBE_RETRY) {
            let left = PROBE_RETRY.saturating_sub(at.elapsed()).as_secs().max(1);
            return Err(again(why, &format!("; the bucket is probed again in {left} s")));
        }
        let honoured = probe_conditional_writes(s, token).inspect_err(|e| {
            // A cancelled flush says nothing of the bucket.
            if !matches!(e, Error::Cancelled(_)) {
                failed.insert(bucket.clone(), (Instant::now(), again(e, "")));
            }
        })?;
        failed.remove(&bucket);
        drop(failed);
        self.accounting.note_conditional_writes(&bucket, honoured);
        let store = item.entry.store.clone();
        port.exec(move |db| {
            if !honoured {
                db.emit_sync_event(EventKind::Error, &store, ignores_conditions(&bucket));
            }
            db.apply_sync(vec![Change::ConditionalWrites { store, bucket, honoured }])
        })
    }

    /// Sends one write and, for a store that keeps a change log, its marker after it. A marker
    /// that cannot be written fails the write, which is sent again later: its body already in
    /// place then counts as sent, and the marker follows.
    fn send(&self, item: &OutboxItem, token: &Token) -> Result<Option<String>> {
        let etag = match &item.entry.landed {
            // The body is in place from an earlier send: only the marker is owed.
            Some(etag) => Some(etag.clone()).filter(|e| !e.is_empty()),
            None => self.send_object(item, token)?,
        };
        let Some(log) = self.stores.get(&item.entry.store).and_then(|s| s.config.policy.change_log.as_ref()) else {
            return Ok(etag);
        };
        let op = match (&item.entry.value, item.entry.op) {
            (Some(value), op) if op != WriteOp::Delete => {
                let size = serde_json::to_vec(value).map_or(0, |b| b.len() as u64);
                changelog::Op::Put { size, etag: etag.clone() }
            }
            _ => changelog::Op::Remove,
        };
        let s = &self.stores[&item.entry.store];
        let marker = changelog::marker_name(&log.prefix, self.bucket_now_ms(s), &item.entry.id, &op);
        match s.bucket.put(&marker, b"", &PutOptions::default(), token) {
            Ok(_) => {
                self.prune_log(&item.entry.store, s, log);
                Ok(etag)
            }
            Err(e) if e.is_offline() || matches!(e, Error::Remote { status: 408 | 429 | 500.., .. }) => {
                if item.entry.landed.is_none() {
                    let landed = Change::Landed {
                        sequence: item.sequence,
                        store: item.entry.store.clone(),
                        id: item.entry.id.clone(),
                        etag,
                    };
                    self.landed.lock().unwrap_or_else(|p| p.into_inner()).push(landed);
                }
                Err(e)
            }
            // Refused for good: the write stands, and readers learn of it at their next full
            // listing. An error event says so.
            Err(e) => {
                let message = format!(
                    "the write of {:?} reached the bucket but its change-log marker was refused ({e}): readers see it at their next full listing",
                    item.entry.id
                );
                self.lock_marker_failures().push((item.entry.store.clone(), message));
                Ok(etag)
            }
        }
    }

    /// Removes the markers no reader reads any more, at most once a minute per store, where
    /// the bucket has nothing of its own to expire them. A failure only means a larger log.
    fn prune_log(&self, store: &str, s: &SyncedStore, log: &ChangeLogConfig) {
        let mut pruned = self.log_pruned.lock().unwrap_or_else(|p| p.into_inner());
        if pruned.get(store).is_some_and(|at| at.elapsed() < LOG_PRUNE_EVERY) {
            return;
        }
        pruned.insert(store.to_string(), Instant::now());
        drop(pruned);
        let window = log.window.as_millis() as u64;
        let expiry = changelog::expiry_ms(self.bucket_now_ms(s), log.relist_every.as_millis() as u64, window);
        let _ = s.bucket.expire_before(&log.prefix, &format!("{expiry:013}"));
    }

    fn lock_marker_failures(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.marker_failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Says what markers were refused, as error events.
    fn report_marker_failures(&self, port: &mut impl Port) -> Result<()> {
        let failures = std::mem::take(&mut *self.lock_marker_failures());
        if failures.is_empty() {
            return Ok(());
        }
        port.exec(move |db| {
            for (store, message) in failures {
                db.emit_sync_event(EventKind::Error, &store, message);
            }
            Ok(())
        })
    }

    fn send_object(&self, item: &OutboxItem, token: &Token) -> Result<Option<String>> {
        let entry = &item.entry;
        let s = self.store(&entry.store).map_err(|_| {
            Error::InvalidArgument(format!(
                "store {:?} no longer syncs: its write of {:?} cannot be sent",
                entry.store, entry.id
            ))
        })?;
        let name = s.object_key(&entry.id);
        let Some(value) = entry.value.as_ref().filter(|_| entry.op != WriteOp::Delete) else {
            if entry.op == WriteOp::Delete && !delete_is_safe(s, &name, item, token)? {
                return Ok(None); // gone already
            }
            return s.bucket.delete(&name, token).map(|()| None);
        };
        let body = serde_json::to_vec(value).expect("records serialise");
        // Only an overwrite the application chose replaces what the bucket holds unseen: a put
        // of an object this client never read must find no object there.
        let mut mode = match (entry.op, &item.known_etag) {
            (WriteOp::Overwrite, _) => PutMode::Overwrite,
            (WriteOp::Put, Some(etag)) => PutMode::Update(etag.clone()),
            _ => PutMode::Create,
        };
        if mode != PutMode::Overwrite && self.accounting.conditional_writes(&s.address) == Some(false) {
            if let Some(own) = check_by_reading(s, &name, item.known_etag.as_deref(), &mode, &body, token)? {
                return Ok(Some(own));
            }
            // Checked: a header the server ignores (or refuses outright) adds nothing.
            mode = PutMode::Overwrite;
        }
        let options =
            PutOptions { mode, metadata: s.config.policy.metadata_of(value), new_record: entry.op == WriteOp::Create };
        match s.bucket.put(&name, &body, &options, token) {
            // A write sent before a crash, whose success was never recorded, meets its own copy.
            Err(Error::Remote { status: 412, .. }) if holds_body(s, &name, &body, token) => Ok(Some(etag_of(&body))),
            other => other,
        }
    }

    /// The meta siblings' view of a write that reached the bucket.
    fn sent_meta(&self, item: &OutboxItem, etag: Option<String>) -> Vec<Change> {
        let Some(s) = self.stores.get(&item.entry.store) else {
            return Vec::new();
        };
        let id = &item.entry.id;
        s.meta_siblings
            .iter()
            .map(|meta| match &item.entry.value {
                Some(value) if item.entry.op != WriteOp::Delete => Change::Describe {
                    store: meta.clone(),
                    id: id.clone(),
                    etag: etag.clone().unwrap_or_default(),
                    updated: time::iso(SystemTime::now()),
                    size: serde_json::to_vec(value).map_or(0, |b| b.len() as u64),
                    fields: self.describe_fields(meta, id, &s.config.policy.metadata_of(value)),
                },
                _ => Change::Drop { store: meta.clone(), id: id.clone() },
            })
            .collect()
    }
}

/// Outbox writes read and acknowledged per transaction.
const FLUSH_BATCH: usize = 100;

/// What a flush leaves out of the writes it sends ahead: objects held or refused in this
/// flush, and buckets it stopped sending to.
struct Skipped<'a> {
    held: &'a HashSet<(String, String)>,
    refused: &'a HashSet<(String, String)>,
    stopped: &'a HashSet<String>,
}

impl Skipped<'_> {
    fn object(&self, object: &(String, String)) -> bool {
        self.held.contains(object) || self.refused.contains(object)
    }
}

/// A 412 is a conflict naming the object.
fn as_conflict(item: &OutboxItem, error: Error) -> Error {
    match error {
        Error::Remote { status: 412, what, detail } => Error::Conflict {
            store: item.entry.store.clone(),
            key: item.entry.id.clone(),
            detail: match detail.as_str() {
                "" => format!("the bucket holds another version ({what} answered 412 Precondition Failed)"),
                detail => format!("{detail} ({what} answered 412 Precondition Failed)"),
            },
        },
        other => other,
    }
}

/// Why the local copy of `id` says the bucket's version cannot be used, if it does.
fn marked_unusable(locals: &[LocalCopy], id: &str) -> Option<String> {
    locals.iter().find(|l| l.id == id).and_then(|l| l.state.as_ref()).and_then(|s| s.unusable.clone())
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
/// [`object_id`]) and the change log are not records.
fn records(s: &SyncedStore, store: &str, objects: Vec<ObjectInfo>) -> Vec<(String, ObjectInfo)> {
    let prefix = &s.config.connection.location.prefix;
    objects
        .into_iter()
        .filter_map(|o| Some((o.key.strip_prefix(prefix.as_str())?.to_string(), o)))
        .filter(|(id, _)| {
            !id.starts_with(changelog::DIR) && object_id(&s.config, store, &Key::String(id.clone())).is_ok()
        })
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
    }
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

/// A batch of outbox writes as waves: the first write of each object, then each one's second,
/// and so on, each wave in outbox order.
fn waves(batch: Vec<OutboxItem>) -> Vec<Vec<OutboxItem>> {
    let mut count: HashMap<(String, String), usize> = HashMap::new();
    let mut waves: Vec<Vec<OutboxItem>> = Vec::new();
    for item in batch {
        let n = count.entry((item.entry.store.clone(), item.entry.id.clone())).or_default();
        if waves.len() <= *n {
            waves.push(Vec::new());
        }
        waves[*n].push(item);
        *n += 1;
    }
    waves
}

/// The pair a key belongs to under `folder` (`{prefix}{a}/`): `{prefix}{a}/{b}/`, when the key
/// has a name below it.
fn pair_prefix(folder: &str, key: &str) -> Option<String> {
    let (pair, rest) = key.strip_prefix(folder)?.split_once('/')?;
    (!rest.is_empty()).then(|| format!("{folder}{pair}/"))
}

/// What a first-per-pair listing says is gone of what is held: objects of a first field's
/// value no longer listed; in values listed in full, objects not listed; in values enumerated
/// by pair, objects of pairs no longer listed and objects before their pair's first name.
fn vanished_in_part(
    prefix: &str,
    local: &StoreState,
    listed: &[(String, ObjectInfo)],
    folders: &[&String],
    enumerated: &HashSet<&str>,
) -> Vec<String> {
    let listed_ids: HashSet<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
    let mut firsts: HashMap<String, &str> = HashMap::new();
    for (_, object) in listed {
        let folder = folders.iter().find(|f| enumerated.contains(f.as_str()) && object.key.starts_with(f.as_str()));
        if let Some(pair) = folder.and_then(|f| pair_prefix(f, &object.key)) {
            let first = firsts.entry(pair).or_insert(object.key.as_str());
            *first = (*first).min(object.key.as_str());
        }
    }
    local
        .known
        .keys()
        .filter(|id| {
            if listed_ids.contains(id.as_str()) {
                return false;
            }
            let key = format!("{prefix}{id}");
            let Some(folder) = folders.iter().find(|f| key.starts_with(f.as_str())) else {
                return true; // a root name (listed in full) or a first field's value gone
            };
            if !enumerated.contains(folder.as_str()) {
                return true; // listed in full
            }
            match pair_prefix(folder, &key).and_then(|pair| firsts.get(&pair).copied()) {
                Some(first) => key.as_str() < first,
                None => true,
            }
        })
        .cloned()
        .collect()
}
