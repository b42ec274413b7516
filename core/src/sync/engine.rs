//! The sync engine behind the database's operations on synced stores:
//! - reads: a cached copy of an immutable store, or one whose etag the last listing (within the
//!   refractory period) confirmed, is served with no request; otherwise a conditional GET, where
//!   304 serves the cache and 404 removes it. `values_of` fetches what it lacks in parallel.
//! - prefetch (before local reads of a store that asks for it, at most once per refractory
//!   period): one listing, then only what is new or changed is fetched, and what vanished goes.
//! - writes: queued in the outbox inside the writing transaction, sent in order after it
//!   commits; what cannot reach the bucket waits for the next flush or successful contact.
//!
//! Anything that fails leaves the local copy as it was: fetched data is checked in full before
//! one local transaction applies it.

use std::collections::{HashMap, HashSet};
use std::time::{Instant, SystemTime};

use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

use super::bucket::{list_all, Fetched, ListRequest, Metadata, Object, Precondition, Validators};
use super::config::{Format, Prefetch, SyncConfig};
use super::state::{self, ObjectState, OutboxEntry, WriteOp};
use super::{parallel, time, SyncedStore};
use crate::database::{Database, Mode, Tx};
use crate::error::{Error, Result};
use crate::events::{Event, EventKind};
use crate::key::Key;
use crate::keypath::lookup;
use crate::range::KeyRange;

/// What a flush did.
#[derive(Debug, Default)]
pub struct FlushReport {
    /// Writes that reached the bucket.
    pub sent: u64,
    /// Writes still waiting (the bucket could not be reached).
    pub pending: u64,
    /// Writes the bucket refused (a conflict, or another 4xx), by outbox sequence number; their
    /// local copies were dropped so that the next read fetches the bucket's version.
    pub rejected: Vec<(u64, Error)>,
    /// Why sending stopped, when the bucket could not be reached.
    pub offline: Option<Error>,
    /// Why sending stopped, when the bucket refused every request (credentials, a missing
    /// bucket, a redirect): the writes keep waiting for the cause to be mended.
    pub blocked: Option<Error>,
}

pub(crate) fn is_synced(db: &Database, store: &str) -> bool {
    db.sync.stores.contains_key(store)
}

fn synced<'d>(db: &'d Database, store: &str) -> &'d SyncedStore {
    &db.sync.stores[store]
}

/// The object name a key stands for: synced stores are keyed by non-empty strings.
fn object_id(store: &str, key: &Key) -> Result<String> {
    match key {
        Key::String(s) if !s.is_empty() => Ok(s.clone()),
        other => Err(Error::InvalidKey {
            store: Some(store.to_string()),
            key_path: None,
            reason: format!("a synced store is keyed by object names (non-empty strings), not {other}"),
        }),
    }
}

/// Runs `work` as the sync layer itself: its writes are not queued for the bucket and its
/// reads do not prefetch.
fn applying<T>(db: &mut Database, work: impl FnOnce(&mut Database) -> Result<T>) -> Result<T> {
    let was = std::mem::replace(&mut db.sync.applying, true);
    let outcome = work(db);
    db.sync.applying = was;
    outcome
}

/// Before a transaction reads `stores`: prefetch those that ask for it.
pub(crate) fn before_read(db: &mut Database, stores: &[&str]) -> Result<()> {
    if db.sync.applying || db.sync.offline {
        return Ok(());
    }
    for store in stores {
        if db.sync.stores.get(*store).is_some_and(|s| s.config.prefetch.is_some()) {
            prefetch(db, store, false)?;
        }
    }
    Ok(())
}

fn offline_event(db: &mut Database, store: &str, error: &Error) {
    if error.is_offline() {
        db.emit(Event::sync(EventKind::Offline, store, None, None, error.to_string()));
    }
}

/// After a request reached the bucket: send what waits in the outbox.
fn after_contact(db: &mut Database) {
    if state::outbox_len(&mut *db.mech).unwrap_or(0) > 0 {
        let _ = flush(db);
    }
}

fn pending_ids(db: &mut Database, store: &str) -> Result<HashSet<String>> {
    Ok(state::outbox(&mut *db.mech)?.into_iter().filter(|(_, e)| e.store == store).map(|(_, e)| e.id).collect())
}

// ----- reads ------------------------------------------------------------------------------

/// What a read found locally for one key.
struct Local {
    id: String,
    value: Option<Value>,
    state: Option<ObjectState>,
}

fn read_local(db: &mut Database, store: &str, keys: &[Key]) -> Result<Vec<Local>> {
    let ids = keys.iter().map(|k| object_id(store, k)).collect::<Result<Vec<_>>>()?;
    applying(db, |db| {
        db.run(&[store], Mode::ReadOnly, |tx| {
            keys.iter()
                .zip(ids)
                .map(|(key, id)| {
                    let value = tx.get(store, key)?;
                    let state = state::load(&mut *tx.db.mech, store, &id)?;
                    Ok(Local { id, value, state })
                })
                .collect()
        })
    })
}

/// Whether the local copy can be served without asking the bucket.
fn is_current(s: &SyncedStore, local: &Local, pending: &HashSet<String>) -> bool {
    if s.config.format == Format::ObjstoreMeta || pending.contains(&local.id) {
        return true;
    }
    if local.value.is_none() {
        return false;
    }
    let listed = s.prefetch_is_fresh()
        && local
            .state
            .as_ref()
            .and_then(|st| st.etag.as_ref())
            .is_some_and(|etag| s.listed.get(&local.id) == Some(etag));
    s.config.immutable || listed
}

pub(crate) fn get(db: &mut Database, store: &str, key: &Key) -> Result<Option<Value>> {
    Ok(values_of(db, store, std::slice::from_ref(key))?.pop().flatten())
}

/// The records under `keys`, fetching in parallel what the cache cannot serve. When any fetch
/// fails, nothing is applied and the error is returned.
pub(crate) fn values_of(db: &mut Database, store: &str, keys: &[Key]) -> Result<Vec<Option<Value>>> {
    before_read(db, &[store])?;
    let locals = read_local(db, store, keys)?;
    let pending = pending_ids(db, store)?;
    let s = synced(db, store);
    let mut asks: Vec<(String, Validators)> = Vec::new();
    let mut asked = HashSet::new();
    let offline = db.sync.offline;
    for local in locals.iter().filter(|l| !offline && !is_current(s, l, &pending)) {
        if !asked.insert(local.id.as_str()) {
            continue;
        }
        let validators = match (&local.value, &local.state) {
            (Some(_), Some(st)) => Validators { etag: st.etag.clone(), last_modified: st.modified.clone() },
            _ => Validators::default(),
        };
        asks.push((local.id.clone(), validators));
    }
    if asks.is_empty() {
        return Ok(locals.into_iter().map(|l| l.value).collect());
    }
    let bucket = s.bucket.clone();
    let names: Vec<(String, Validators)> = asks.iter().map(|(id, v)| (s.object_key(id), v.clone())).collect();
    let answers = parallel(&names, s.config.concurrency, |(name, validators)| bucket.get(name, validators));
    let never_synced: HashSet<&str> =
        locals.iter().filter(|l| l.value.is_some() && l.state.is_none()).map(|l| l.id.as_str()).collect();
    let mut fetched = Vec::new();
    for ((id, _), answer) in asks.into_iter().zip(answers) {
        match answer {
            // A record written before the store was synced is not the bucket's to remove.
            Ok(Fetched::Missing) if never_synced.contains(id.as_str()) => {}
            Ok(answer) => fetched.push((id, answer)),
            Err(e) => {
                offline_event(db, store, &e);
                return Err(e);
            }
        }
    }
    let applied = apply_fetched(db, store, fetched)?;
    after_contact(db);
    Ok(locals.into_iter().map(|l| if let Some(v) = applied.get(&l.id) { v.clone() } else { l.value }).collect())
}

/// What an answer does to the local copy.
enum Change {
    Keep,
    Drop,
    Store { value: Value, state: ObjectState, size: u64, updated: String, metadata: Metadata },
}

/// Checks every answer, then applies them in one local transaction (with the store's meta
/// siblings). Returns the new local value by id for what changed.
fn apply_fetched(
    db: &mut Database,
    store: &str,
    answers: Vec<(String, Fetched)>,
) -> Result<HashMap<String, Option<Value>>> {
    let s = synced(db, store);
    let mut changes = Vec::new();
    for (id, answer) in answers {
        let change = match answer {
            Fetched::NotModified => Change::Keep,
            Fetched::Missing => Change::Drop,
            Fetched::Found(object) => {
                let value = decode(s, store, &id, &object)?;
                let updated = object.last_modified.as_deref().map(time::http_date_to_iso).unwrap_or_default();
                Change::Store {
                    value,
                    state: ObjectState { etag: object.etag.clone(), modified: object.last_modified.clone() },
                    size: object.body.len() as u64,
                    updated,
                    metadata: object.metadata,
                }
            }
        };
        changes.push((id, change));
    }
    let siblings = meta_targets(db, &s.meta_siblings.clone());
    let by_path = s.key_path.is_some();
    let scope: Vec<String> =
        std::iter::once(store.to_string()).chain(siblings.iter().map(|m| m.store.clone())).collect();
    let mut applied = HashMap::new();
    let fetched = changes.iter().filter(|(_, c)| matches!(c, Change::Store { .. })).count();
    applying(db, |db| {
        let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
        db.run(&scope, Mode::ReadWrite, |tx| {
            for (id, change) in changes {
                match change {
                    Change::Keep => {}
                    Change::Drop => {
                        drop_local(tx, store, &id)?;
                        for meta in &siblings {
                            drop_local(tx, &meta.store, &id)?;
                        }
                        applied.insert(id, None);
                    }
                    Change::Store { value, state, size, updated, metadata } => {
                        let key = if by_path { None } else { Some(Key::String(id.clone())) };
                        tx.put(store, value.clone(), key)?;
                        state::save(&mut *tx.db.mech, store, &id, &state)?;
                        let etag = state.etag.clone().unwrap_or_default();
                        for meta in &siblings {
                            // Metadata is a convenience: a sibling that refuses it (a unique
                            // index, say) must not keep the object out.
                            let _ = upsert_meta(tx, meta, &id, &etag, &updated, size, &metadata);
                        }
                        applied.insert(id, Some(value));
                    }
                }
            }
            Ok(())
        })
    })?;
    if fetched > 0 {
        db.emit(Event::sync(EventKind::Fetched, store, None, None, format!("{fetched} object(s) fetched")));
    }
    Ok(applied)
}

/// A fetched body as a record, checked: JSON, and carrying its own name at the key path.
fn decode(s: &SyncedStore, store: &str, id: &str, object: &Object) -> Result<Value> {
    let what = || format!("object {:?} of store {store:?}", s.object_key(id));
    let value: Value = serde_json::from_slice(&object.body)
        .map_err(|e| Error::RemoteData { what: what(), reason: format!("the body is not JSON ({e})") })?;
    if let Some(path) = &s.key_path {
        match path.extract(&value) {
            Ok(Some(Key::String(k))) if k == id => {}
            _ => {
                return Err(Error::RemoteData {
                    what: what(),
                    reason: format!("the record's {path:?} field should be {id:?}, the object's name"),
                })
            }
        }
    }
    Ok(value)
}

fn drop_local(tx: &mut Tx<'_>, store: &str, id: &str) -> Result<()> {
    tx.remove(store, &KeyRange::only(id))?;
    state::forget(&mut *tx.db.mech, store, id)
}

// ----- objstore-meta records ----------------------------------------------------------------

/// An objstore-meta store to keep in step, with what its records need.
struct MetaTarget {
    store: String,
    config: SyncConfig,
    by_path: bool,
}

fn meta_targets(db: &Database, stores: &[String]) -> Vec<MetaTarget> {
    stores
        .iter()
        .map(|name| {
            let s = synced(db, name);
            MetaTarget { store: name.clone(), config: s.config.clone(), by_path: s.key_path.is_some() }
        })
        .collect()
}

/// Writes `{name, etag, updated, size, metadata}` for an object, keeping metadata learnt before
/// (from a GET, say) that this source does not carry.
fn upsert_meta(
    tx: &mut Tx<'_>,
    meta: &MetaTarget,
    id: &str,
    etag: &str,
    updated: &str,
    size: u64,
    metadata: &Metadata,
) -> Result<()> {
    let key = Key::String(id.to_string());
    let previous = tx.get(&meta.store, &key)?;
    let mut fields: Map<String, Value> =
        previous.as_ref().and_then(|p| p.get("metadata")).and_then(Value::as_object).cloned().unwrap_or_default();
    for (name, value) in meta.config.layout_fields(id) {
        fields.insert(name, Value::String(value));
    }
    for (name, value) in metadata {
        fields.insert(name.clone(), Value::String(value.clone()));
    }
    let record = json!({"name": id, "etag": etag, "updated": updated, "size": size, "metadata": fields});
    if previous.as_ref() != Some(&record) {
        tx.put(&meta.store, record, if meta.by_path { None } else { Some(key) })?;
    }
    state::save(&mut *tx.db.mech, &meta.store, id, &ObjectState { etag: Some(etag.to_string()), modified: None })
}

// ----- prefetch -----------------------------------------------------------------------------

/// Lists the store's prefix and brings the local store in line: new objects (and, unless
/// immutable, changed ones) are described (`meta`) or fetched (`full`), vanished ones removed.
/// Without `force`, does nothing within the refractory period of the last one.
pub(crate) fn prefetch(db: &mut Database, store: &str, force: bool) -> Result<()> {
    if db.sync.offline {
        return Err(Error::Unreachable {
            what: format!("prefetching store {store:?}"),
            reason: "the database is set offline".into(),
        });
    }
    let Some(s) = db.sync.stores.get(store) else {
        return Err(Error::InvalidArgument(format!("store {store:?} is not synced (it has no Sync block)")));
    };
    if s.config.format == Format::Rest {
        return Err(Error::InvalidArgument(format!("store {store:?} uses the rest format, which has no listing")));
    }
    let Some(mode) = s.config.prefetch.or(force.then_some(Prefetch::Meta)) else {
        return Ok(());
    };
    if !force && s.prefetch_is_fresh() {
        return Ok(());
    }
    let (bucket, config) = (s.bucket.clone(), s.config.clone());
    let request =
        ListRequest { prefix: config.location.prefix.clone(), version: config.list_version, ..Default::default() };
    let listing = list_all(&*bucket, &request).inspect_err(|e| offline_event(db, store, e))?;
    let listed: Vec<(String, super::ObjectInfo)> = listing
        .objects
        .into_iter()
        .filter_map(|o| Some((o.key.strip_prefix(&config.location.prefix)?.to_string(), o)))
        // Empty names and "folder" markers (`prefix/`, made by consoles) are not records.
        .filter(|(id, _)| !id.is_empty() && !id.ends_with('/'))
        .collect();
    let known = state::all(&mut *db.mech, store)?;
    let pending = pending_ids(db, store)?;
    let listed_ids: HashSet<&str> = listed.iter().map(|(id, _)| id.as_str()).collect();
    let is_new_or_changed = |id: &str, etag: &str| match known.get(id) {
        None => true,
        Some(k) => !config.immutable && k.etag.as_deref() != Some(etag),
    };
    let mut vanished: Vec<String> = if config.immutable {
        Vec::new()
    } else {
        known.keys().filter(|id| !listed_ids.contains(id.as_str()) && !pending.contains(*id)).cloned().collect()
    };
    let changed: Vec<&(String, super::ObjectInfo)> =
        listed.iter().filter(|(id, o)| !pending.contains(id) && is_new_or_changed(id, &o.etag)).collect();

    match (config.format, mode) {
        (Format::ObjstoreMeta, _) => {
            let me = meta_targets(db, &[store.to_string()]).pop().expect("the store itself");
            applying(db, |db| {
                db.run(&[store], Mode::ReadWrite, |tx| {
                    for (id, o) in &changed {
                        let metadata = o.metadata.clone().unwrap_or_default();
                        upsert_meta(tx, &me, id, &o.etag, &o.last_modified, o.size, &metadata)?;
                    }
                    vanished.iter().try_for_each(|id| drop_local(tx, store, id))
                })
            })?;
        }
        (_, Prefetch::Full) => {
            let names: Vec<String> = changed.iter().map(|(id, _)| format!("{}{id}", config.location.prefix)).collect();
            let answers = parallel(&names, config.concurrency, |name| bucket.get(name, &Validators::default()));
            let answers: Vec<Fetched> = match answers.into_iter().collect::<Result<_>>() {
                Ok(answers) => answers,
                Err(e) => {
                    offline_event(db, store, &e);
                    return Err(e);
                }
            };
            let mut fetched: Vec<(String, Fetched)> = Vec::new();
            let s = synced(db, store);
            let mut unusable = Vec::new();
            for ((id, _), answer) in changed.iter().zip(answers) {
                // One unusable object must not keep every read of the store failing: it is
                // left out and reported; a direct read of it still fails.
                match &answer {
                    Fetched::Found(object) => match decode(s, store, id, object) {
                        Ok(_) => fetched.push((id.clone(), answer)),
                        Err(error) => unusable.push(error),
                    },
                    _ => fetched.push((id.clone(), answer)),
                }
            }
            for error in unusable {
                db.emit(Event::sync(EventKind::Error, store, None, None, error.to_string()));
            }
            fetched.extend(vanished.drain(..).map(|id| (id, Fetched::Missing)));
            apply_fetched(db, store, fetched)?;
        }
        (_, Prefetch::Meta) => {
            // Changed objects lose their cached copy; the next read fetches them.
            let stale =
                changed.iter().filter(|(id, _)| known.contains_key(id)).map(|(id, _)| (id.clone(), Fetched::Missing));
            let drops: Vec<(String, Fetched)> =
                stale.chain(vanished.drain(..).map(|id| (id, Fetched::Missing))).collect();
            if !drops.is_empty() {
                apply_fetched(db, store, drops)?;
            }
        }
    }
    let s = db.sync.stores.get_mut(store).expect("checked above");
    s.last_prefetch = Some(Instant::now());
    s.listed = listed.into_iter().map(|(id, o)| (id, o.etag)).collect();
    after_contact(db);
    Ok(())
}

// ----- writes -------------------------------------------------------------------------------

/// Called by every write inside its transaction: checks that the store takes the write and
/// queues it for the bucket. Writes the sync layer applies itself are not queued.
pub(crate) fn enqueue(
    db: &mut Database,
    store: &str,
    key: &Key,
    op: WriteOp,
    value: Option<&Value>,
    replaced: bool,
) -> Result<()> {
    if db.sync.applying {
        return Ok(());
    }
    let Some(s) = db.sync.stores.get(store) else {
        return Ok(());
    };
    if s.config.format == Format::ObjstoreMeta {
        return Err(Error::InvalidArgument(format!(
            "store {store:?} mirrors object metadata (objstore-meta) and is read-only; write to the store that holds the objects"
        )));
    }
    let id = object_id(store, key)?;
    if s.config.immutable && replaced && op != WriteOp::Delete {
        return Err(Error::Constraint {
            store: store.to_string(),
            detail: format!("the store is immutable: object {id:?} exists and cannot be replaced"),
        });
    }
    if let Some(value) = value {
        check_metadata(&s.config, store, &id, value)?;
    }
    // Read in the writing transaction, so that two processes on one file cannot collide.
    let sequence = state::next_sequence(&mut *db.mech)?;
    if op == WriteOp::Delete {
        state::forget(&mut *db.mech, store, &id)?;
    }
    state::push(&mut *db.mech, sequence, &OutboxEntry { store: store.to_string(), id, op, value: value.cloned() })?;
    db.note_outbox(sequence);
    Ok(())
}

/// After a transaction that queued writes commits: send the outbox. A write of that
/// transaction that the bucket refused is its error; an unreachable or blocking bucket is not
/// (the writes wait, and an `offline` or `error` event says why).
pub(crate) fn flush_after_commit(db: &mut Database, first: u64) -> Result<()> {
    let report = flush(db)?;
    match report.rejected.into_iter().find(|(sequence, _)| *sequence >= first) {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

/// Sends the outbox in order until it is empty or the bucket cannot be reached.
pub(crate) fn flush(db: &mut Database) -> Result<FlushReport> {
    let mut report = FlushReport::default();
    if db.sync.offline {
        report.pending = state::outbox_len(&mut *db.mech)?;
        report.offline =
            Some(Error::Unreachable { what: "the outbox".into(), reason: "the database is set offline".into() });
        return Ok(report);
    }
    // Objects whose earlier write was refused: later writes to them were made on top of a
    // version the bucket does not hold, so they are refused too rather than sent blind.
    let mut refused_objects: HashSet<(String, String)> = HashSet::new();
    for (sequence, entry) in state::outbox(&mut *db.mech)? {
        if !is_synced(db, &entry.store) {
            // The store was dropped or stopped syncing.
            meta_write(db, |mech| state::pop(mech, sequence))?;
            continue;
        }
        let object = (entry.store.clone(), entry.id.clone());
        let outcome = if refused_objects.contains(&object) {
            Err(Error::Conflict {
                store: entry.store.clone(),
                key: entry.id.clone(),
                detail: "an earlier write to this object was refused, and this one was made on top of it".into(),
            })
        } else {
            send(db, &entry)
        };
        match outcome {
            Ok(etag) => {
                sent(db, sequence, &entry, etag)?;
                report.sent += 1;
            }
            Err(e) if e.is_offline() => {
                offline_event(db, &entry.store, &e);
                report.offline = Some(e);
                break;
            }
            Err(e) if e.refuses_the_write() || matches!(e, Error::Conflict { .. } | Error::InvalidArgument(_)) => {
                refused_objects.insert(object);
                report.rejected.push((sequence, refused(db, sequence, &entry, e)?));
            }
            Err(e) => {
                db.emit(Event::sync(EventKind::Error, &entry.store, None, None, e.to_string()));
                report.blocked = Some(e);
                break;
            }
        }
    }
    report.pending = state::outbox_len(&mut *db.mech)?;
    Ok(report)
}

fn send(db: &mut Database, entry: &OutboxEntry) -> Result<Option<String>> {
    let known = state::load(&mut *db.mech, &entry.store, &entry.id)?.and_then(|k| k.etag);
    let s = synced(db, &entry.store);
    let name = s.object_key(&entry.id);
    let Some(value) = entry.value.as_ref().filter(|_| entry.op != WriteOp::Delete) else {
        return s.bucket.delete(&name).map(|()| None);
    };
    let body = serde_json::to_vec(value).expect("records serialise");
    let condition = match (entry.op, known) {
        (WriteOp::Create, _) => Precondition::Absent,
        (_, Some(etag)) => Precondition::Matches(etag),
        (_, None) if s.config.immutable => Precondition::Absent,
        _ => Precondition::None,
    };
    let metadata = metadata_of(&s.config, value);
    match s.bucket.put(&name, &body, &metadata, &condition, entry.op == WriteOp::Create) {
        // A write sent before a crash, whose success was never recorded, meets its own copy.
        Err(Error::Remote { status: 412, .. }) if holds_body(s, &name, &body) => Ok(Some(etag_of(&body))),
        other => other,
    }
}

/// Whether the bucket's object is exactly `body` (S3 etags of single-part uploads are MD5s).
fn holds_body(s: &SyncedStore, name: &str, body: &[u8]) -> bool {
    matches!(s.bucket.head(name), Ok(Some((info, _))) if info.etag == etag_of(body))
}

fn etag_of(body: &[u8]) -> String {
    format!("\"{}\"", Md5::digest(body).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Metadata values go out as header values: control characters would break the request.
fn check_metadata(config: &SyncConfig, store: &str, id: &str, value: &Value) -> Result<()> {
    match metadata_of(config, value).into_iter().find(|(_, v)| v.chars().any(char::is_control)) {
        Some((name, v)) => Err(Error::InvalidArgument(format!(
            "record {id:?} of store {store:?}: metadata field {name:?} = {v:?} has control characters and cannot be sent as a header"
        ))),
        None => Ok(()),
    }
}

/// The record's fields named in `Options.metadata`, as metadata headers.
fn metadata_of(config: &SyncConfig, value: &Value) -> Metadata {
    config
        .metadata_fields
        .iter()
        .filter_map(|path| {
            let text = match lookup(value, path)? {
                Value::String(s) => s.clone(),
                v @ (Value::Number(_) | Value::Bool(_)) => v.to_string(),
                _ => return None,
            };
            Some((path.replace('.', "-").to_ascii_lowercase(), text))
        })
        .collect()
}

/// Records that a write reached the bucket: out of the outbox, its etag kept, siblings told.
fn sent(db: &mut Database, sequence: u64, entry: &OutboxEntry, etag: Option<String>) -> Result<()> {
    let s = synced(db, &entry.store);
    let metadata = entry.value.as_ref().map(|v| metadata_of(&s.config, v)).unwrap_or_default();
    let size = entry.value.as_ref().map_or(0, |v| serde_json::to_vec(v).map_or(0, |b| b.len() as u64));
    let siblings = meta_targets(db, &s.meta_siblings.clone());
    let now = SystemTime::now();
    let scope: Vec<String> =
        std::iter::once(entry.store.clone()).chain(siblings.iter().map(|m| m.store.clone())).collect();
    applying(db, |db| {
        let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
        db.run(&scope, Mode::ReadWrite, |tx| {
            state::pop(&mut *tx.db.mech, sequence)?;
            if entry.op == WriteOp::Delete {
                // An earlier write in this flush may have recorded a version: it is gone now.
                state::forget(&mut *tx.db.mech, &entry.store, &entry.id)?;
                return siblings.iter().try_for_each(|m| drop_local(tx, &m.store, &entry.id));
            }
            // Only the server's validators are kept: a local clock would make a wrong 304.
            let state = ObjectState { etag: etag.clone(), modified: None };
            state::save(&mut *tx.db.mech, &entry.store, &entry.id, &state)?;
            let etag = etag.clone().unwrap_or_default();
            for m in &siblings {
                // Best effort, as in apply_fetched: the write has reached the bucket already.
                let _ = upsert_meta(tx, m, &entry.id, &etag, &time::iso(now), size, &metadata);
            }
            Ok(())
        })
    })?;
    db.emit(Event::sync(EventKind::Flushed, &entry.store, Some(Key::String(entry.id.clone())), None, "sent".into()));
    Ok(())
}

/// A write the bucket refused: out of the outbox, the local copy dropped (the bucket's version
/// is fetched on the next read), a conflict or error event, and the error to report.
fn refused(db: &mut Database, sequence: u64, entry: &OutboxEntry, error: Error) -> Result<Error> {
    let error = match error {
        Error::Remote { status: 412, what, .. } => Error::Conflict {
            store: entry.store.clone(),
            key: entry.id.clone(),
            detail: format!("the bucket holds another version ({what} answered 412 Precondition Failed)"),
        },
        other => other,
    };
    applying(db, |db| {
        db.run(&[entry.store.as_str()], Mode::ReadWrite, |tx| {
            state::pop(&mut *tx.db.mech, sequence)?;
            drop_local(tx, &entry.store, &entry.id)
        })
    })?;
    let kind = if matches!(error, Error::Conflict { .. }) { EventKind::Conflict } else { EventKind::Error };
    let key = Some(Key::String(entry.id.clone()));
    db.emit(Event::sync(kind, &entry.store, key, entry.value.clone(), error.to_string()));
    Ok(error)
}

/// A write to the meta table alone, in a storage transaction of its own.
fn meta_write(db: &mut Database, work: impl FnOnce(&mut dyn crate::mechanism::Mechanism) -> Result<()>) -> Result<()> {
    db.mech.begin(true)?;
    match work(&mut *db.mech) {
        Ok(()) => db.mech.commit(),
        Err(e) => {
            let _ = db.mech.rollback();
            Err(e)
        }
    }
}
