//! The local side of sync: what the engine does for its synced stores without any I/O but
//! SQLite. A write to a synced store queues an outbox entry in the writing transaction; the
//! sync agent (`crate::sync::agent`, on its own threads) reads that outbox, the validators and
//! the pending set through the methods here, and hands back what it learnt from the bucket as a
//! batch of [`Change`]s applied in one bounded transaction. Remote outcomes become validators,
//! refused-write records, per-write statuses and events, never a commit's result.

pub mod hook;
pub mod policy;
pub(crate) mod state;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::database::{Database, Mode, Tx};
use crate::error::{clip, Error, Result};
use crate::events::{Event, EventKind};
use crate::key::Key;
use crate::range::KeyRange;
use crate::record::{Record, RecordText};
use policy::StorePolicy;

pub use state::{ObjectState, OutboxEntry, RefusedWrite, WriteOp};

/// The most changes one `apply_sync` transaction takes: the agent splits larger batches, so a
/// 100k-object prefetch never holds one huge transaction at once. Large because each commit
/// rewrites every index page it touched: a cold listing of 100,000 names applied 500 to a
/// transaction wrote its run index's pages 200 times over (3.9 s; 1.5 s at 20,000).
pub const MAX_BATCH: usize = 20_000;

/// The most objects a prefetch fetches before it stores them (one transaction): bounds the
/// bodies held at once.
pub const FETCH_CHUNK: usize = 250;

/// A write waiting in the outbox, as the agent needs it to send it.
#[derive(Debug, Clone)]
pub struct OutboxItem {
    pub sequence: u64,
    /// Shared: a flush copies items (to send some ahead), never the records they carry.
    pub entry: Arc<OutboxEntry>,
    /// The etag of the version this write was made on, when one is known.
    pub known_etag: Option<String>,
    /// An earlier write to the same object was refused and is not resolved: this one was made
    /// on top of it and must not be sent blind.
    pub stacked: bool,
}

/// What a read found locally for one object.
#[derive(Debug, Clone)]
pub struct LocalCopy {
    pub id: String,
    pub present: bool,
    pub state: Option<ObjectState>,
    /// A write waits in the outbox or was refused: the local copy is the authority.
    pub held: bool,
}

/// Everything known locally about a synced store, for a prefetch to compare with a listing.
#[derive(Debug, Clone, Default)]
pub struct StoreState {
    pub known: HashMap<String, ObjectState>,
    /// Objects whose local copy is the authority (pending or refused writes).
    pub held: BTreeSet<String>,
    /// Whether a prefetch ever completed for this store in this database.
    pub prefetched: bool,
    /// When the last full listing completed (ms since the epoch).
    pub listed_at_ms: Option<u64>,
    /// When the first name of each pair was last listed (not every object), in ms since the
    /// epoch.
    pub pairs_listed_at_ms: Option<u64>,
    /// When the store's change log was last read (or the full listing began), in ms since the
    /// epoch.
    pub changes_since_ms: Option<u64>,
}

/// One thing the agent learnt from the bucket.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A fetched object: the record, and the validators of the copy now held.
    Store { store: String, id: String, value: Value, state: ObjectState },
    /// The object is not in the bucket (or the copy is stale): the local copy goes.
    Drop { store: String, id: String },
    /// An object's description in an objstore-meta store; metadata learnt before is kept.
    Describe { store: String, id: String, etag: String, updated: String, size: u64, fields: Map<String, Value> },
    /// Outbox write `sequence`, to object `id` of `store`, reached the bucket; `etag` is the new
    /// version's. An entry that is no longer that write (withdrawn) is left alone.
    Sent { sequence: u64, store: String, id: String, etag: Option<String> },
    /// Outbox write `sequence`'s body reached the bucket as version `etag`, its change-log
    /// marker did not: the write stays queued for the marker alone.
    Landed { sequence: u64, store: String, id: String, etag: Option<String> },
    /// The bucket refused outbox write `sequence` to object `id` of `store`: kept as a refused
    /// write, local data kept.
    Refused { sequence: u64, store: String, id: String, code: String, message: String, conflict: bool },
    /// A full listing of the store completed at this time (ms since the epoch).
    Prefetched { store: String, at_ms: u64 },
    /// The store's change log was read (or a full listing began) at this time (ms since the
    /// epoch): the next read starts a window before it.
    ChangesRead { store: String, since_ms: u64 },
    /// The first name of each pair of the store's key layout was listed at this time (ms since
    /// the epoch), not every object: the change log goes on from there.
    PairsListed { store: String, at_ms: u64 },
    /// The bucket's version of an object cannot be used: a local copy is kept (no cache is lost
    /// to a bad object), and the version is remembered so that it is not fetched again until it
    /// changes.
    Unusable { store: String, id: String, etag: Option<String>, reason: String },
    /// Whether the bucket `store` syncs to honours conditional writes, as a probe found.
    ConditionalWrites { store: String, bucket: String, honoured: bool },
}

impl Change {
    fn store(&self) -> Option<&str> {
        match self {
            Change::Store { store, .. }
            | Change::Drop { store, .. }
            | Change::Unusable { store, .. }
            | Change::Describe { store, .. }
            | Change::Prefetched { store, .. }
            | Change::ChangesRead { store, .. }
            | Change::PairsListed { store, .. }
            | Change::ConditionalWrites { store, .. } => Some(store),
            Change::Sent { .. } | Change::Landed { .. } | Change::Refused { .. } => None,
        }
    }
}

/// The sync state of one record, as an application asks about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncStatus {
    /// The store is not synced.
    Local,
    /// A write waits in the outbox.
    Pending,
    /// The bucket refused a write; see [`Database::refused_writes`].
    Refused,
    /// The local copy matches a version the bucket had.
    Synced,
    /// Nothing is known locally about this object.
    Unknown,
    /// The bucket's version cannot be used (over the size cap, not JSON); an error event said
    /// why, and a read of the key says it again.
    Unusable,
}

impl SyncStatus {
    pub fn name(self) -> &'static str {
        match self {
            SyncStatus::Local => "local",
            SyncStatus::Pending => "pending",
            SyncStatus::Refused => "refused",
            SyncStatus::Synced => "synced",
            SyncStatus::Unknown => "unknown",
            SyncStatus::Unusable => "unusable",
        }
    }
}

/// What to do with a refused write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Give it up: the local copy is dropped, and the next read takes the bucket's version.
    Discard,
    /// Send it again, replacing whatever the bucket holds.
    Overwrite,
}

impl Resolution {
    pub fn from_name(name: &str) -> Result<Resolution> {
        match name {
            "discard" => Ok(Resolution::Discard),
            "overwrite" => Ok(Resolution::Overwrite),
            other => {
                Err(Error::InvalidArgument(format!("unknown resolution {} (known: discard, overwrite)", clip(other))))
            }
        }
    }
}

/// The object name a key stands for, on a bucket of `policy`'s kind. Any name S3 takes is
/// taken — 1 to 1,024 bytes, empty segments (`a//b`), tabs, carriage returns and other control
/// characters included — but:
/// - NUL, which C strings and many tools cannot carry;
/// - a `.` or `..` segment, which a proxy or server may normalise into another prefix;
/// - a trailing `/`, which S3 tools take for a folder (and listings leave out);
/// - on a directory bucket (`file://`), an empty segment (a leading or doubled `/`), which a
///   file system cannot hold.
pub fn object_id(policy: &StorePolicy, store: &str, key: &Key) -> Result<String> {
    let bad = |reason: String| Error::InvalidKey { store: Some(store.to_string()), key_path: None, reason };
    let Key::String(id) = key else {
        return Err(bad(format!("a synced store is keyed by object names (non-empty strings), not {key}")));
    };
    let directory = policy.in_directory;
    let why = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > 1024 {
        Some("it is longer than the 1,024 bytes a bucket takes")
    } else if id.contains('\0') {
        Some("it holds a NUL character")
    } else if id.split('/').any(|segment| segment == "." || segment == "..") {
        Some("it has a '.' or '..' segment, which URLs normalise away")
    } else if id.ends_with('/') {
        Some("it ends with '/', which bucket tools take for a folder")
    } else if directory && id.split('/').any(str::is_empty) {
        return Err(bad(format!(
            "object name {} cannot be used in a directory bucket (file://): it has an empty segment (a leading or doubled '/'), which a file system cannot hold (an S3 bucket can)",
            crate::error::clip(id)
        )));
    } else {
        None
    };
    match why {
        Some(why) => Err(bad(format!("object name {} cannot be used in a bucket: {why}", crate::error::clip(id)))),
        None => Ok(id.clone()),
    }
}

impl Database {
    fn synced_or_error(&self, store: &str) -> Result<&StorePolicy> {
        self.sync_policy(store).ok_or_else(|| {
            Error::InvalidArgument(format!("store {} is not synced (it has no Sync block)", crate::error::clip(store)))
        })
    }

    /// Up to `limit` outbox writes in order after sequence number `after` (0 for the first),
    /// each with the version it was made on.
    pub fn outbox_batch(&mut self, after: u64, limit: usize) -> Result<Vec<OutboxItem>> {
        let mech = self.mech_mut();
        let entries = state::outbox(mech, after, limit)?;
        entries
            .into_iter()
            .map(|(sequence, entry)| {
                let known_etag = state::load(mech, &entry.store, &entry.id)?.and_then(|s| s.etag);
                let stacked = state::is_refused(mech, &entry.store, &entry.id)?;
                Ok(OutboxItem { sequence, entry: Arc::new(entry), known_etag, stacked })
            })
            .collect()
    }

    /// The buckets whose conditional writes were probed, and whether each honours them.
    pub fn conditional_writes(&mut self) -> Result<HashMap<String, bool>> {
        state::conditional_writes(self.mech_mut())
    }

    /// Writes waiting for the bucket.
    pub fn outbox_len(&mut self) -> Result<u64> {
        state::outbox_len(self.mech_mut())
    }

    /// Refused writes waiting for a resolution.
    pub fn refused_len(&mut self) -> Result<u64> {
        state::refused_len(self.mech_mut())
    }

    /// What the local store holds for `keys` of a synced store: point lookups only.
    pub fn local_copies(&mut self, store: &str, keys: &[Key]) -> Result<Vec<LocalCopy>> {
        let config = self.synced_or_error(store)?;
        let ids = keys.iter().map(|k| object_id(config, store, k)).collect::<Result<Vec<_>>>()?;
        self.run_single_read(store, |tx| {
            keys.iter()
                .zip(ids)
                .map(|(key, id)| {
                    let present = tx.get(store, key)?.is_some();
                    let mech = tx.db.mech_mut();
                    let state = state::load(mech, store, &id)?;
                    let held = state::is_pending(mech, store, &id)? || state::is_refused(mech, store, &id)?;
                    Ok(LocalCopy { id, present, state, held })
                })
                .collect()
        })
    }

    /// Whether `store` was ever listed into this database (its local copy is a prefetched
    /// one): one row read, where [`Database::store_state`] reads every object's.
    pub fn was_prefetched(&mut self, store: &str) -> Result<bool> {
        self.synced_or_error(store)?;
        Ok(state::prefetched_at(self.mech_mut(), store)?.is_some())
    }

    /// Validators and held objects of a synced store, for a prefetch.
    pub fn store_state(&mut self, store: &str) -> Result<StoreState> {
        self.store_state_of(store, None)
    }

    /// The same with the validators of only `ids` (a change log's few objects, not a
    /// 100k-object store's every one); `None` for all.
    pub fn store_state_of(&mut self, store: &str, ids: Option<&[String]>) -> Result<StoreState> {
        self.synced_or_error(store)?;
        let mech = self.mech_mut();
        let mut held: BTreeSet<String> = state::pending_ids(mech, store)?.into_iter().collect();
        held.extend(state::refused_ids(mech, store)?);
        let listed_at_ms = state::prefetched_at(mech, store)?;
        let known = match ids {
            None => state::all(mech, store)?,
            Some(ids) => {
                let mut known = HashMap::new();
                for id in ids {
                    if let Some(found) = state::load(mech, store, id)? {
                        known.insert(id.clone(), found);
                    }
                }
                known
            }
        };
        Ok(StoreState {
            known,
            held,
            prefetched: listed_at_ms.is_some(),
            listed_at_ms,
            changes_since_ms: state::changes_read(mech, store)?,
            pairs_listed_at_ms: state::pairs_listed_at(mech, store)?,
        })
    }

    /// Applies what the agent learnt in one transaction (at most [`MAX_BATCH`] changes).
    /// Changes to objects whose local copy is held (a write pending or refused) are skipped:
    /// a write made while the agent was fetching is never overwritten by the fetch.
    pub fn apply_sync(&mut self, changes: Vec<Change>) -> Result<()> {
        if changes.len() > MAX_BATCH {
            return Err(Error::InvalidArgument(format!(
                "a sync batch holds at most {MAX_BATCH} changes, not {}",
                changes.len()
            )));
        }
        let mut scope: Vec<String> = changes.iter().filter_map(Change::store).map(str::to_string).collect();
        let outbox_stores = self.outbox_stores(&changes)?;
        scope.extend(outbox_stores);
        scope.sort();
        scope.dedup();
        if scope.is_empty() {
            // Only acknowledgements of writes no longer in the outbox: nothing to do.
            return Ok(());
        }
        let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
        self.run_from_bucket(&scope, |tx| {
            let mut fetched: HashMap<String, usize> = HashMap::new();
            for change in changes {
                if let Change::Store { store, .. } = &change {
                    *fetched.entry(store.clone()).or_default() += 1;
                }
                apply_one(tx, change)?;
            }
            for (store, n) in fetched {
                tx.db.emit(Event::sync(EventKind::Fetched, &store, None, None, format!("{n} object(s) fetched")));
            }
            Ok(())
        })
    }

    /// The stores of the outbox entries a batch acknowledges (their transaction covers them).
    fn outbox_stores(&mut self, changes: &[Change]) -> Result<Vec<String>> {
        let mut stores = Vec::new();
        for change in changes {
            if let Change::Sent { sequence, .. } | Change::Landed { sequence, .. } | Change::Refused { sequence, .. } =
                change
            {
                if let Some(head) = state::peek_head(self.mech_mut(), *sequence)? {
                    stores.push(head.store);
                }
            }
        }
        Ok(stores)
    }

    /// Writes the bucket refused, oldest first, until resolved.
    pub fn refused_writes(&mut self) -> Result<Vec<RefusedWrite>> {
        state::refused(self.mech_mut())
    }

    /// Resolves refused write `sequence`, and with it every other refused write of the same
    /// object (each was made on top of the one before, so they stand or fall together):
    /// - discard: the bucket's version wins: the local copy is dropped (unless a write made
    ///   since waits to be sent), and the next read takes the bucket's version;
    /// - overwrite: the local copy wins: it is sent over whatever the bucket holds (the writes
    ///   to the object still waiting go unconditionally; with none, the local record is sent,
    ///   or the object removed when there is no local record).
    pub fn resolve_refused(&mut self, sequence: u64, resolution: Resolution) -> Result<()> {
        let Some(write) = state::refused(self.mech_mut())?.into_iter().find(|w| w.sequence == sequence) else {
            return Err(Error::InvalidArgument(format!("there is no refused write with sequence number {sequence}")));
        };
        let (store, id) = (write.entry.store.clone(), write.entry.id.clone());
        if self.sync_policy(&store).is_none() {
            // The store was dropped, or no longer syncs: nothing can be sent for it, and
            // nothing local stands on the refusal.
            if resolution == Resolution::Overwrite {
                return Err(Error::InvalidArgument(format!(
                    "refused write {sequence} is of store {store:?}, which no longer syncs: it can only be discarded"
                )));
            }
            if let Some(open) = self.active_transaction() {
                return Err(Error::InvalidArgument(format!(
                    "transaction {open} is still active; commit or abort it first"
                )));
            }
            let mech = self.mech_mut();
            mech.begin(true)?;
            let taken = state::refused(mech).and_then(|all| {
                all.into_iter()
                    .filter(|w| w.entry.store == store && w.entry.id == id)
                    .try_for_each(|w| state::take_refused(mech, w.sequence).map(drop))
            });
            return match taken {
                Ok(()) => mech.commit(),
                Err(e) => mech.rollback().and(Err(e)),
            };
        }
        self.run_from_bucket(&[store.as_str()], |tx| {
            let mech = tx.db.mech_mut();
            for sibling in state::refused(mech)?.into_iter().filter(|w| w.entry.store == store && w.entry.id == id) {
                state::take_refused(mech, sibling.sequence)?;
            }
            let waiting = state::pending_sequences(mech, &store, &id)?;
            match resolution {
                Resolution::Discard => {
                    if waiting.is_empty() {
                        tx.remove(&store, &KeyRange::only(id.as_str()))?;
                        state::forget(tx.db.mech_mut(), &store, &id)?;
                    }
                    Ok(())
                }
                Resolution::Overwrite if waiting.is_empty() => {
                    let value = tx.get_text(&store, &Key::String(id.clone()))?.map(RecordText::stored);
                    let mech = tx.db.mech_mut();
                    let next = state::next_sequence(mech)?;
                    let entry = OutboxEntry {
                        store: store.clone(),
                        id: id.clone(),
                        op: WriteOp::Overwrite,
                        value,
                        landed: None,
                    };
                    state::push(mech, next, &entry)
                }
                Resolution::Overwrite => {
                    // Renumbered in order: an answer on its way for an old number (a flush
                    // that read it before) then settles nothing.
                    let mech = tx.db.mech_mut();
                    for sequence in waiting {
                        if let Some(entry) = state::pop(mech, sequence)? {
                            let next = state::next_sequence(mech)?;
                            state::push(mech, next, &OutboxEntry { op: WriteOp::Overwrite, ..entry })?;
                        }
                    }
                    Ok(())
                }
            }
        })
    }

    /// The sync state of the record under `key`.
    pub fn sync_status(&mut self, store: &str, key: &Key) -> Result<SyncStatus> {
        let Some(config) = self.sync_policy(store) else {
            if !self.has_store(store) {
                return Err(self.unknown_store(store));
            }
            return Ok(SyncStatus::Local);
        };
        let id = object_id(config, store, key)?;
        let mech = self.mech_mut();
        Ok(if state::is_refused(mech, store, &id)? {
            SyncStatus::Refused
        } else if state::is_pending(mech, store, &id)? {
            SyncStatus::Pending
        } else if let Some(state) = state::load(mech, store, &id)? {
            if state.unusable.is_some() {
                SyncStatus::Unusable
            } else {
                SyncStatus::Synced
            }
        } else {
            SyncStatus::Unknown
        })
    }

    /// Delivers an event the agent raised (offline, error, conflict...) to the listeners.
    pub fn emit_sync_event(&mut self, kind: EventKind, store: &str, message: String) {
        self.emit(Event::sync(kind, store, None, None, message));
    }
}

fn apply_one(tx: &mut Tx<'_>, change: Change) -> Result<()> {
    match change {
        Change::Store { store, id, value, state } => {
            if holds(tx, &store, &id)? {
                return Ok(());
            }
            let key = if tx.db.store_has_key_path(&store)? { None } else { Some(Key::String(id.clone())) };
            tx.put(&store, value, key)?;
            state::save(tx.db.mech_mut(), &store, &id, &state)
        }
        Change::Drop { store, id } => {
            if holds(tx, &store, &id)? {
                return Ok(());
            }
            tx.remove(&store, &KeyRange::only(id.as_str()))?;
            state::forget(tx.db.mech_mut(), &store, &id)
        }
        Change::Unusable { store, id, etag, reason } => {
            if holds(tx, &store, &id)? {
                return Ok(());
            }
            let key = Some(Key::String(id.clone()));
            tx.db.emit(Event::sync(EventKind::Error, &store, key, None, reason.clone()));
            state::save(tx.db.mech_mut(), &store, &id, &ObjectState { etag, modified: None, unusable: Some(reason) })
        }
        Change::Describe { store, id, etag, updated, size, fields } => {
            let key = Key::String(id.clone());
            let previous = tx.get(&store, &key)?;
            let mut merged: Map<String, Value> = previous
                .as_ref()
                .and_then(|p| p.get("metadata"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            merged.extend(fields);
            let record = json!({"name": id, "etag": etag, "updated": updated, "size": size, "metadata": merged});
            if previous.as_ref() != Some(&record) {
                let key = if tx.db.store_has_key_path(&store)? { None } else { Some(key) };
                // Metadata is a convenience: a store that refuses it (a unique index, say) must
                // not keep the object out.
                if tx.put_over(&store, record, key, previous).is_err() {
                    return Ok(());
                }
            }
            state::save(tx.db.mech_mut(), &store, &id, &ObjectState { etag: Some(etag), ..Default::default() })
        }
        Change::Sent { sequence, store, id, etag } => {
            let Some(head) = answered(tx, sequence, &store, &id)? else {
                return Ok(());
            };
            let mech = tx.db.mech_mut();
            state::remove(mech, sequence, &head.store, &head.id)?;
            if head.op == WriteOp::Delete || !head.has_value {
                state::forget(mech, &head.store, &head.id)?;
            } else {
                // Only the server's validators are kept: a local clock would make a wrong 304.
                state::save(mech, &head.store, &head.id, &ObjectState { etag, ..Default::default() })?;
            }
            let key = Some(Key::String(head.id.clone()));
            tx.db.emit(Event::sync(EventKind::Flushed, &head.store, key, None, "sent".into()));
            Ok(())
        }
        Change::Landed { sequence, store, id, etag } => {
            let mech = tx.db.mech_mut();
            match state::peek(mech, sequence)? {
                Some(entry) if entry.store == store && entry.id == id => {
                    state::push(mech, sequence, &OutboxEntry { landed: Some(etag.unwrap_or_default()), ..entry })
                }
                _ => Ok(()),
            }
        }
        Change::Refused { sequence, store, id, code, message, conflict } => {
            if answered(tx, sequence, &store, &id)?.is_none() {
                return Ok(());
            }
            let Some(entry) = state::pop(tx.db.mech_mut(), sequence)? else {
                return Ok(());
            };
            let refused = RefusedWrite { sequence, entry: entry.clone(), code, message: message.clone() };
            state::refuse(tx.db.mech_mut(), &refused)?;
            let kind = if conflict { EventKind::Conflict } else { EventKind::Error };
            let key = Some(Key::String(entry.id.clone()));
            tx.db.emit(Event::sync(kind, &entry.store, key, entry.record(), message));
            Ok(())
        }
        Change::Prefetched { store, at_ms } => state::mark_prefetched(tx.db.mech_mut(), &store, at_ms),
        Change::ChangesRead { store, since_ms } => state::mark_changes_read(tx.db.mech_mut(), &store, since_ms),
        Change::PairsListed { store, at_ms } => state::mark_pairs_listed(tx.db.mech_mut(), &store, at_ms),
        Change::ConditionalWrites { bucket, honoured, .. } => {
            state::note_conditional_writes(tx.db.mech_mut(), &bucket, honoured)
        }
    }
}

/// The head of outbox entry `sequence` when the bucket's answer about object `id` of `store`
/// is for it, that write still waiting: an answer never settles another write.
fn answered(tx: &mut Tx<'_>, sequence: u64, store: &str, id: &str) -> Result<Option<state::EntryHead>> {
    Ok(state::peek_head(tx.db.mech_mut(), sequence)?.filter(|head| head.store == store && head.id == id))
}

/// Whether the local copy of an object is the authority: a write to it is pending or refused.
fn holds(tx: &mut Tx<'_>, store: &str, id: &str) -> Result<bool> {
    let mech = tx.db.mech_mut();
    Ok(state::is_pending(mech, store, id)? || state::is_refused(mech, store, id)?)
}

impl Database {
    /// Takes back the writes to `key` that wait in the outbox: they leave it, and the local
    /// record goes with no delete queued, in one transaction. For a caller that told its own
    /// client the write failed (the results collector, when the bucket did not take a post):
    /// it must not land later. A send already under way when this runs may still land; no
    /// later one will. A write whose body is known to have landed (only its change-log marker
    /// is owed) is not taken back: it stays queued, the record stays, and the status stays
    /// `pending`. Returns how many writes were taken back.
    pub fn withdraw_pending(&mut self, store: &str, key: &Key) -> Result<u64> {
        let id = object_id(self.synced_or_error(store)?, store, key)?;
        self.run_from_bucket(&[store], |tx| {
            let (mut withdrawn, mut landed) = (0, None);
            for sequence in state::pending_sequences(tx.db.mech_mut(), store, &id)? {
                match state::peek(tx.db.mech_mut(), sequence)? {
                    Some(entry) if entry.landed.is_some() => landed = Some(entry),
                    _ => {
                        state::pop(tx.db.mech_mut(), sequence)?;
                        withdrawn += 1;
                    }
                }
            }
            match (withdrawn, landed) {
                (0, _) => {}
                (_, None) => {
                    tx.remove(store, &KeyRange::only(id.as_str()))?;
                    state::forget(tx.db.mech_mut(), store, &id)?;
                }
                // The local copy goes back to what the bucket holds: the last write that landed.
                (_, Some(entry)) => match entry.value {
                    Some(value) => {
                        let key = if tx.db.store_has_key_path(store)? { None } else { Some(Key::String(id.clone())) };
                        tx.put(store, Record::from_json("the record that landed", value.as_str().into())?, key)?;
                    }
                    None => drop(tx.remove(store, &KeyRange::only(id.as_str()))?),
                },
            }
            Ok(withdrawn)
        })
    }

    /// Runs `work` in a read-write transaction that applies bucket data: its writes are not
    /// queued for the bucket. The mark lives and dies with the transaction, so nothing is left
    /// behind by a failure or a panic.
    fn run_from_bucket<T>(&mut self, stores: &[&str], work: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.run_marked(stores, Mode::ReadWrite, true, work)
    }
}
