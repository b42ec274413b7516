//! What the database keeps about its synced stores, in the meta table beside the catalog, so
//! that it commits and rolls back with the records it describes:
//! - per cached object, the validators of the copy held (`sync/s/<store><id>`);
//! - the outbox: writes not yet in the bucket, in order (`sync/h/<sequence>`: what the write
//!   is, and `sync/v/<sequence>`: its record's JSON text, apart, so that the head of a write is
//!   read without its record), and an index of them by store and object
//!   (`sync/p/<store><id><sequence>`), so that "is this object pending?" is one lookup, never a
//!   walk of the outbox. A file from before the split has its writes whole under
//!   `sync/o/<sequence>`, read as they were; a build from before reads only those, so it never
//!   takes a head without its record for a write without one (a delete);
//! - writes the bucket refused, kept until the application resolves them (`sync/r/<sequence>`),
//!   and an index of them by store and object (`sync/q/<store><id><sequence>`);
//! - the last sequence number given (`sync/n`), so that no number is ever given twice;
//! - when each store last completed a prefetch (`sync/l/<store>`), so a cold store is known;
//! - when each store's change log was last read (`sync/g/<store>`, see `sync::changelog`),
//!   and when only the first name of each pair was listed (`sync/f/<store>`);
//! - whether a bucket honours conditional writes (`If-None-Match` and `If-Match`), once learnt
//!   (`sync/c/<bucket address>`).
//!
//! Store names and object ids are length-prefixed, so no store's keys are a prefix of another's.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::mechanism::{Mechanism, META_TABLE};
use crate::range::{just_above, ByteRange};
use crate::record::RecordText;

const STATE: &[u8] = b"sync/s/";
/// Writes from before the split: head and record in one row.
const OUTBOX_WHOLE: &[u8] = b"sync/o/";
const OUTBOX_HEAD: &[u8] = b"sync/h/";
const OUTBOX_RECORD: &[u8] = b"sync/v/";
const PENDING: &[u8] = b"sync/p/";
const REFUSED: &[u8] = b"sync/r/";
const REFUSED_INDEX: &[u8] = b"sync/q/";
const PREFETCHED: &[u8] = b"sync/l/";
const CONDITIONS: &[u8] = b"sync/c/";
const CHANGES_READ: &[u8] = b"sync/g/";
const PAIRS_LISTED: &[u8] = b"sync/f/";
const LAST_SEQUENCE: &[u8] = b"sync/n";

/// The validators of the copy of an object that the local store holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The object's Last-Modified, as an HTTP date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// Why the bucket's version at `etag` cannot be used (over the size cap, not JSON): it is
    /// not fetched again until it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteOp {
    /// Create or replace (conditional on the version held, when one is known).
    Put,
    /// Create only: the object must not exist.
    Create,
    Delete,
    /// Replace whatever the bucket holds (remove it, without a value): a refused write the
    /// application chose to retry.
    Overwrite,
}

/// A write waiting to reach the bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub store: String,
    /// The object's name under the store's prefix (the record's key).
    pub id: String,
    pub op: WriteOp,
    /// The record as it is stored and sent: its text, never read into a tree here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<RecordText>,
    /// The etag of this write's body, which reached the bucket while its change-log marker did
    /// not: only the marker is still owed, and the write cannot be taken back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
}

impl OutboxEntry {
    /// The record as a tree (`None` for a delete).
    pub fn record(&self) -> Option<Value> {
        self.value.as_ref()?.to_value()
    }
}

/// A write the bucket refused, kept with why until the application resolves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredRefusal", into = "StoredRefusal")]
pub struct RefusedWrite {
    /// The outbox sequence number the write had: its id for `resolve`.
    pub sequence: u64,
    pub entry: OutboxEntry,
    /// The error code's name (`Conflict`, `Remote`, ...).
    pub code: String,
    pub message: String,
}

/// A refused write as it is stored: the entry's fields beside the refusal's, in one object
/// (serde's `flatten` would buffer the record, which a record kept as text cannot be).
#[derive(Serialize, Deserialize)]
struct StoredRefusal {
    sequence: u64,
    store: String,
    id: String,
    op: WriteOp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<RecordText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    landed: Option<String>,
    code: String,
    message: String,
}

impl From<StoredRefusal> for RefusedWrite {
    fn from(s: StoredRefusal) -> RefusedWrite {
        let entry = OutboxEntry { store: s.store, id: s.id, op: s.op, value: s.value, landed: s.landed };
        RefusedWrite { sequence: s.sequence, entry, code: s.code, message: s.message }
    }
}

impl From<RefusedWrite> for StoredRefusal {
    fn from(w: RefusedWrite) -> StoredRefusal {
        let OutboxEntry { store, id, op, value, landed } = w.entry;
        StoredRefusal { sequence: w.sequence, store, id, op, value, landed, code: w.code, message: w.message }
    }
}

fn with_len(key: &mut Vec<u8>, part: &str) {
    key.extend_from_slice(&(part.len() as u32).to_be_bytes());
    key.extend_from_slice(part.as_bytes());
}

fn keyed(table: &[u8], store: &str) -> Vec<u8> {
    let mut key = table.to_vec();
    with_len(&mut key, store);
    key
}

fn state_key(store: &str, id: &str) -> Vec<u8> {
    let mut key = keyed(STATE, store);
    key.extend_from_slice(id.as_bytes());
    key
}

fn pending_prefix(store: &str, id: &str) -> Vec<u8> {
    object_prefix(PENDING, store, id)
}

fn object_prefix(table: &[u8], store: &str, id: &str) -> Vec<u8> {
    let mut key = keyed(table, store);
    with_len(&mut key, id);
    key
}

fn refused_index_key(entry: &OutboxEntry, sequence: u64) -> Vec<u8> {
    let mut key = object_prefix(REFUSED_INDEX, &entry.store, &entry.id);
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

fn sequence_key(table: &[u8], sequence: u64) -> Vec<u8> {
    let mut key = table.to_vec();
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

/// The sequence number a key ends with.
fn sequence_of(key: &[u8]) -> u64 {
    u64::from_be_bytes(key[key.len().saturating_sub(8)..].try_into().unwrap_or_default())
}

/// Every key that starts with `prefix` (whose last byte is below 0xFF).
fn prefix_range(prefix: &[u8]) -> ByteRange {
    let mut high = prefix.to_vec();
    *high.last_mut().expect("prefixes are not empty") += 1;
    ByteRange { low: prefix.to_vec(), high }
}

fn unreadable(what: &str, e: serde_json::Error) -> Error {
    Error::Internal(format!("stored {what} is unreadable: {e}"))
}

fn utf8(bytes: &[u8]) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Error::Internal("stored sync state has a non-UTF-8 id".into()))
}

// ----- validators ---------------------------------------------------------------------------

pub fn load(mech: &mut dyn Mechanism, store: &str, id: &str) -> Result<Option<ObjectState>> {
    match mech.get(META_TABLE, &state_key(store, id))? {
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| unreadable("sync state", e)),
        None => Ok(None),
    }
}

pub fn save(mech: &mut dyn Mechanism, store: &str, id: &str, state: &ObjectState) -> Result<()> {
    mech.put(META_TABLE, &state_key(store, id), &serde_json::to_vec(state).expect("state serialises"))
}

pub fn forget(mech: &mut dyn Mechanism, store: &str, id: &str) -> Result<()> {
    mech.delete(META_TABLE, &state_key(store, id))
}

/// The state of every object of `store` held locally, by id.
pub fn all(mech: &mut dyn Mechanism, store: &str) -> Result<HashMap<String, ObjectState>> {
    let prefix = keyed(STATE, store);
    let mut found = Vec::new();
    mech.scan(META_TABLE, &prefix_range(&prefix), false, true, &mut |k, v| {
        found.push((k[prefix.len()..].to_vec(), v.to_vec()));
        Ok(true)
    })?;
    found
        .into_iter()
        .map(|(id, bytes)| Ok((utf8(&id)?, serde_json::from_slice(&bytes).map_err(|e| unreadable("sync state", e))?)))
        .collect()
}

/// Forgets the validators of a whole store (dropped, or syncing elsewhere). Its writes still
/// waiting are left alone: they are the caller's to re-target or refuse.
pub fn forget_store(mech: &mut dyn Mechanism, store: &str) -> Result<()> {
    let ids: Vec<String> = all(mech, store)?.into_keys().collect();
    ids.iter().try_for_each(|id| forget(mech, store, id))?;
    mech.delete(META_TABLE, &keyed(CHANGES_READ, store))?;
    mech.delete(META_TABLE, &keyed(PAIRS_LISTED, store))?;
    mech.delete(META_TABLE, &keyed(PREFETCHED, store))
}

// ----- the outbox ---------------------------------------------------------------------------

pub fn push(mech: &mut dyn Mechanism, sequence: u64, entry: &OutboxEntry) -> Result<()> {
    let OutboxEntry { store, id, op, value, landed } = entry;
    let entry =
        NewEntry { store, id, op: *op, value: value.as_ref().map(RecordText::as_str), landed: landed.as_deref() };
    push_new(mech, sequence, &entry)
}

/// An outbox entry as written, borrowing the record rather than holding a copy of it (a
/// record may be large: a results run of 200,000 tests).
pub struct NewEntry<'a> {
    pub store: &'a str,
    pub id: &'a str,
    pub op: WriteOp,
    /// The record's JSON text.
    pub value: Option<&'a str>,
    pub landed: Option<&'a str>,
}

/// An outbox entry's head as stored: what the write is, without its record.
#[derive(Serialize)]
struct StoredHead<'a> {
    store: &'a str,
    id: &'a str,
    op: WriteOp,
    #[serde(skip_serializing_if = "Option::is_none")]
    landed: Option<&'a str>,
}

pub fn push_new(mech: &mut dyn Mechanism, sequence: u64, entry: &NewEntry<'_>) -> Result<()> {
    let head = StoredHead { store: entry.store, id: entry.id, op: entry.op, landed: entry.landed };
    mech.put(META_TABLE, &sequence_key(OUTBOX_HEAD, sequence), &serde_json::to_vec(&head).expect("heads serialise"))?;
    // A write from before the split, written again (its landed etag), is now in the new rows.
    mech.delete(META_TABLE, &sequence_key(OUTBOX_WHOLE, sequence))?;
    let record = sequence_key(OUTBOX_RECORD, sequence);
    match entry.value {
        // The record's own text, as it is: no copy of it is serialised into the head.
        Some(value) => mech.put(META_TABLE, &record, value.as_bytes())?,
        None => mech.delete(META_TABLE, &record)?,
    }
    let mut index = pending_prefix(entry.store, entry.id);
    index.extend_from_slice(&sequence.to_be_bytes());
    mech.put(META_TABLE, &index, &[])
}

/// Outbox entry `sequence`, if it still waits.
pub fn peek(mech: &mut dyn Mechanism, sequence: u64) -> Result<Option<OutboxEntry>> {
    let Some(head) = read_head::<OutboxEntry>(mech, sequence)? else {
        return Ok(None);
    };
    with_record(mech, sequence, head).map(Some)
}

/// The head of write `sequence` as `T`: from its head row, else from its row from before the
/// split (which holds its record too).
fn read_head<T: serde::de::DeserializeOwned>(mech: &mut dyn Mechanism, sequence: u64) -> Result<Option<T>> {
    match read_in_place(mech, &sequence_key(OUTBOX_HEAD, sequence), "outbox entry")? {
        Some(head) => Ok(Some(head)),
        None => read_in_place(mech, &sequence_key(OUTBOX_WHOLE, sequence), "outbox entry"),
    }
}

/// `head` with its record, read from where it is kept (a head from before the split holds it).
/// The text was checked when the record was written: it is not scanned again.
fn with_record(mech: &mut dyn Mechanism, sequence: u64, mut head: OutboxEntry) -> Result<OutboxEntry> {
    if head.value.is_none() {
        if let Some(bytes) = mech.get(META_TABLE, &sequence_key(OUTBOX_RECORD, sequence))? {
            let text = String::from_utf8(bytes)
                .map_err(|e| Error::Internal(format!("a stored outbox record is not UTF-8: {e}")))?;
            head.value = Some(RecordText::stored(text));
        }
    }
    Ok(head)
}

/// What an outbox entry is about, read without its record (a record may be large: a results
/// run of 200,000 tests).
#[derive(Deserialize)]
pub struct EntryHead {
    pub store: String,
    pub id: String,
    pub op: WriteOp,
    /// Whether it carries a record (a delete does not). Read from a head from before the
    /// split, which holds its record, or from the record's own row.
    #[serde(default, rename = "value", deserialize_with = "present")]
    pub has_value: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// The head of outbox entry `sequence`, if it still waits.
pub fn peek_head(mech: &mut dyn Mechanism, sequence: u64) -> Result<Option<EntryHead>> {
    let Some(mut head) = read_head::<EntryHead>(mech, sequence)? else {
        return Ok(None);
    };
    if !head.has_value {
        let key = sequence_key(OUTBOX_RECORD, sequence);
        head.has_value = mech.count(META_TABLE, &ByteRange { high: just_above(&key), low: key })? > 0;
    }
    Ok(Some(head))
}

/// Takes entry `sequence` out of the outbox (and its index), returning it.
pub fn pop(mech: &mut dyn Mechanism, sequence: u64) -> Result<Option<OutboxEntry>> {
    let Some(entry) = peek(mech, sequence)? else {
        return Ok(None);
    };
    remove(mech, sequence, &entry.store, &entry.id)?;
    Ok(Some(entry))
}

/// Takes entry `sequence` (of object `id` of `store`) out of the outbox and its index.
pub fn remove(mech: &mut dyn Mechanism, sequence: u64, store: &str, id: &str) -> Result<()> {
    for table in [OUTBOX_HEAD, OUTBOX_RECORD, OUTBOX_WHOLE] {
        mech.delete(META_TABLE, &sequence_key(table, sequence))?;
    }
    let mut index = pending_prefix(store, id);
    index.extend_from_slice(&sequence.to_be_bytes());
    mech.delete(META_TABLE, &index)
}

/// The meta row under `key`, read where it is stored rather than copied out first.
fn read_in_place<T: serde::de::DeserializeOwned>(
    mech: &mut dyn Mechanism,
    key: &[u8],
    what: &str,
) -> Result<Option<T>> {
    let mut found = None;
    let range = ByteRange { low: key.to_vec(), high: just_above(key) };
    mech.scan(META_TABLE, &range, false, true, &mut |k, v| {
        if k == key {
            found = Some(serde_json::from_slice(v).map_err(|e| unreadable(what, e))?);
        }
        Ok(false)
    })?;
    Ok(found)
}

/// The sequence numbers of the writes to one object still waiting, in order.
pub fn pending_sequences(mech: &mut dyn Mechanism, store: &str, id: &str) -> Result<Vec<u64>> {
    let prefix = pending_prefix(store, id);
    let mut sequences = Vec::new();
    mech.scan(META_TABLE, &prefix_range(&prefix), false, false, &mut |k, _| {
        sequences.push(sequence_of(k));
        Ok(true)
    })?;
    Ok(sequences)
}

/// Up to `limit` entries of the outbox in order after sequence number `after`, with their
/// sequence numbers.
pub fn outbox(mech: &mut dyn Mechanism, after: u64, limit: usize) -> Result<Vec<(u64, OutboxEntry)>> {
    // Writes from before the split and after it, in one order (a write from before that was
    // written again keeps its number).
    let mut heads = Vec::new();
    for table in [OUTBOX_WHOLE, OUTBOX_HEAD] {
        let range = ByteRange { low: sequence_key(table, after.saturating_add(1)), high: prefix_range(table).high };
        let mut taken = 0;
        mech.scan(META_TABLE, &range, false, true, &mut |k, v| {
            heads.push((sequence_of(k), serde_json::from_slice(v).map_err(|e| unreadable("outbox entry", e))?));
            taken += 1;
            Ok(taken < limit)
        })?;
    }
    heads.sort_by_key(|(sequence, _)| *sequence);
    heads.truncate(limit);
    heads.into_iter().map(|(sequence, head)| Ok((sequence, with_record(mech, sequence, head)?))).collect()
}

pub fn outbox_len(mech: &mut dyn Mechanism) -> Result<u64> {
    Ok(mech.count(META_TABLE, &prefix_range(OUTBOX_HEAD))? + mech.count(META_TABLE, &prefix_range(OUTBOX_WHOLE))?)
}

/// How many refused writes wait for a resolution.
pub fn refused_len(mech: &mut dyn Mechanism) -> Result<u64> {
    mech.count(META_TABLE, &prefix_range(REFUSED))
}

/// Whether a write to object `id` of `store` waits in the outbox: one index lookup.
pub fn is_pending(mech: &mut dyn Mechanism, store: &str, id: &str) -> Result<bool> {
    any_under(mech, &pending_prefix(store, id))
}

fn any_under(mech: &mut dyn Mechanism, prefix: &[u8]) -> Result<bool> {
    let mut found = false;
    mech.scan(META_TABLE, &prefix_range(prefix), false, false, &mut |_, _| {
        found = true;
        Ok(false)
    })?;
    Ok(found)
}

/// The objects of `store` with writes waiting (proportional to those, not to the outbox).
pub fn pending_ids(mech: &mut dyn Mechanism, store: &str) -> Result<HashSet<String>> {
    ids_under(mech, PENDING, store)
}

/// The objects of `store` with refused writes.
pub fn refused_ids(mech: &mut dyn Mechanism, store: &str) -> Result<HashSet<String>> {
    ids_under(mech, REFUSED_INDEX, store)
}

/// The objects of `store` that an index by store and object (`table`) names.
fn ids_under(mech: &mut dyn Mechanism, table: &[u8], store: &str) -> Result<HashSet<String>> {
    let prefix = keyed(table, store);
    let mut ids = HashSet::new();
    let mut failure = None;
    mech.scan(META_TABLE, &prefix_range(&prefix), false, false, &mut |k, _| {
        let rest = &k[prefix.len()..];
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap_or_default()) as usize;
        match rest.get(4..4 + len).map(utf8) {
            Some(Ok(id)) => {
                ids.insert(id);
            }
            _ => failure = Some(Error::Internal("the outbox index holds a malformed entry".into())),
        }
        Ok(true)
    })?;
    failure.map_or(Ok(ids), Err)
}

/// How many writes wait for `store`.
pub fn pending_count(mech: &mut dyn Mechanism, store: &str) -> Result<u64> {
    mech.count(META_TABLE, &prefix_range(&keyed(PENDING, store)))
}

/// A sequence number never given before on this file, and remembered as given. Numbers only
/// grow: a write acknowledged, withdrawn or resolved leaves its number behind, so that an answer
/// still on its way for it can never be taken for a later write's. (A file from before the
/// counter starts above its outbox and refused writes.)
pub fn next_sequence(mech: &mut dyn Mechanism) -> Result<u64> {
    let next = match read_number(mech, LAST_SEQUENCE)? {
        Some(last) => last + 1,
        None => {
            let mut next = 1;
            for table in [OUTBOX_WHOLE, OUTBOX_HEAD, REFUSED] {
                mech.scan(META_TABLE, &prefix_range(table), true, false, &mut |k, _| {
                    next = next.max(sequence_of(k) + 1);
                    Ok(false)
                })?;
            }
            next
        }
    };
    mech.put(META_TABLE, LAST_SEQUENCE, &next.to_be_bytes())?;
    Ok(next)
}

// ----- refused writes -----------------------------------------------------------------------

pub fn refuse(mech: &mut dyn Mechanism, write: &RefusedWrite) -> Result<()> {
    let bytes = serde_json::to_vec(write).expect("refused writes serialise");
    mech.put(META_TABLE, &sequence_key(REFUSED, write.sequence), &bytes)?;
    mech.put(META_TABLE, &refused_index_key(&write.entry, write.sequence), &[])
}

/// Indexes the refused writes of a file from before the index (a few: they are resolved by
/// hand). Run at open; costs nothing when there are none.
pub fn index_refused(mech: &mut dyn Mechanism) -> Result<()> {
    for write in refused(mech)? {
        mech.put(META_TABLE, &refused_index_key(&write.entry, write.sequence), &[])?;
    }
    Ok(())
}

pub fn refused(mech: &mut dyn Mechanism) -> Result<Vec<RefusedWrite>> {
    let mut writes = Vec::new();
    mech.scan(META_TABLE, &prefix_range(REFUSED), false, true, &mut |_, v| {
        writes.push(serde_json::from_slice(v).map_err(|e| unreadable("refused write", e))?);
        Ok(true)
    })?;
    Ok(writes)
}

pub fn take_refused(mech: &mut dyn Mechanism, sequence: u64) -> Result<Option<RefusedWrite>> {
    let key = sequence_key(REFUSED, sequence);
    let Some(bytes) = mech.get(META_TABLE, &key)? else {
        return Ok(None);
    };
    mech.delete(META_TABLE, &key)?;
    let write: RefusedWrite = serde_json::from_slice(&bytes).map_err(|e| unreadable("refused write", e))?;
    mech.delete(META_TABLE, &refused_index_key(&write.entry, sequence))?;
    Ok(Some(write))
}

/// Whether a refused write of object `id` waits for the application: one index lookup.
pub fn is_refused(mech: &mut dyn Mechanism, store: &str, id: &str) -> Result<bool> {
    any_under(mech, &object_prefix(REFUSED_INDEX, store, id))
}

// ----- prefetch markers ---------------------------------------------------------------------

pub fn mark_prefetched(mech: &mut dyn Mechanism, store: &str, at_ms: u64) -> Result<()> {
    mech.put(META_TABLE, &keyed(PREFETCHED, store), &at_ms.to_be_bytes())
}

/// When the last full prefetch of `store` completed (ms since the epoch).
pub fn prefetched_at(mech: &mut dyn Mechanism, store: &str) -> Result<Option<u64>> {
    read_number(mech, &keyed(PREFETCHED, store))
}

pub fn mark_changes_read(mech: &mut dyn Mechanism, store: &str, since_ms: u64) -> Result<()> {
    mech.put(META_TABLE, &keyed(CHANGES_READ, store), &since_ms.to_be_bytes())
}

/// When `store`'s change log was last read (or the full listing before it began).
pub fn changes_read(mech: &mut dyn Mechanism, store: &str) -> Result<Option<u64>> {
    read_number(mech, &keyed(CHANGES_READ, store))
}

pub fn mark_pairs_listed(mech: &mut dyn Mechanism, store: &str, at_ms: u64) -> Result<()> {
    mech.put(META_TABLE, &keyed(PAIRS_LISTED, store), &at_ms.to_be_bytes())
}

/// When only the first name of each pair of `store` was last listed.
pub fn pairs_listed_at(mech: &mut dyn Mechanism, store: &str) -> Result<Option<u64>> {
    read_number(mech, &keyed(PAIRS_LISTED, store))
}

fn read_number(mech: &mut dyn Mechanism, key: &[u8]) -> Result<Option<u64>> {
    Ok(mech.get(META_TABLE, key)?.map(|v| v.try_into().map_or(0, u64::from_be_bytes)))
}

// ----- what buckets can do ------------------------------------------------------------------

/// How a probe's finding is stored. A file from before `If-Match` was probed holds 1 (only
/// `If-None-Match` was seen honoured): read as not known, so the bucket is probed again.
const HONOURS_BOTH: u8 = 3;
const IGNORES: u8 = 0;

pub fn note_conditional_writes(mech: &mut dyn Mechanism, bucket: &str, honoured: bool) -> Result<()> {
    mech.put(META_TABLE, &keyed(CONDITIONS, bucket), &[if honoured { HONOURS_BOTH } else { IGNORES }])
}

/// Every bucket whose conditional writes were probed, and whether it honours both conditions.
pub fn conditional_writes(mech: &mut dyn Mechanism) -> Result<HashMap<String, bool>> {
    let mut found = Vec::new();
    mech.scan(META_TABLE, &prefix_range(CONDITIONS), false, true, &mut |k, v| {
        match v.first() {
            Some(&HONOURS_BOTH) => found.push((k[CONDITIONS.len() + 4..].to_vec(), true)),
            Some(&IGNORES) => found.push((k[CONDITIONS.len() + 4..].to_vec(), false)),
            _ => {}
        }
        Ok(true)
    })?;
    found.into_iter().map(|(bucket, honoured)| Ok((utf8(&bucket)?, honoured))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::MemoryMechanism;

    /// A write's head and its record are kept apart, read together, and go together.
    #[test]
    fn an_entry_keeps_its_record_apart_from_its_head() {
        let mut mech = MemoryMechanism::new();
        mech.begin(true).unwrap();
        let entry = NewEntry { store: "s", id: "x", op: WriteOp::Create, value: Some(r#"{"a":[1,2]}"#), landed: None };
        push_new(&mut mech, 7, &entry).unwrap();
        let head = mech.get(META_TABLE, &sequence_key(OUTBOX_HEAD, 7)).unwrap().unwrap();
        assert!(!String::from_utf8(head).unwrap().contains("[1,2]"), "the head holds no record");
        let peeked = peek_head(&mut mech, 7).unwrap().unwrap();
        assert_eq!(
            (peeked.store.as_str(), peeked.id.as_str(), peeked.op, peeked.has_value),
            ("s", "x", WriteOp::Create, true)
        );
        let whole = outbox(&mut mech, 0, 10).unwrap();
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].1.value.as_ref().map(RecordText::as_str), Some(r#"{"a":[1,2]}"#));
        assert_eq!(pop(&mut mech, 7).unwrap().unwrap().record(), Some(serde_json::json!({"a": [1, 2]})));
        assert!(mech.get(META_TABLE, &sequence_key(OUTBOX_RECORD, 7)).unwrap().is_none(), "the record went with it");
        assert_eq!(outbox_len(&mut mech).unwrap(), 0);
    }

    /// An outbox written before the split (the record inside the head) reads as it did.
    #[test]
    fn an_entry_from_before_the_split_reads_whole() {
        let mut mech = MemoryMechanism::new();
        mech.begin(true).unwrap();
        let old = br#"{"store":"s","id":"x","op":"put","value":{"b":1}}"#;
        mech.put(META_TABLE, &sequence_key(OUTBOX_WHOLE, 3), old).unwrap();
        assert!(peek_head(&mut mech, 3).unwrap().unwrap().has_value);
        assert_eq!(peek(&mut mech, 3).unwrap().unwrap().record(), Some(serde_json::json!({"b": 1})));
        // A later write, and the old one written again (its landed etag): one order, one row each.
        let later = NewEntry { store: "s", id: "y", op: WriteOp::Put, value: Some("{}"), landed: None };
        push_new(&mut mech, 5, &later).unwrap();
        let again = peek(&mut mech, 3).unwrap().unwrap();
        push(&mut mech, 3, &OutboxEntry { landed: Some("e".into()), ..again }).unwrap();
        assert!(mech.get(META_TABLE, &sequence_key(OUTBOX_WHOLE, 3)).unwrap().is_none());
        let order: Vec<u64> = outbox(&mut mech, 0, 10).unwrap().iter().map(|(n, _)| *n).collect();
        assert_eq!(order, [3, 5]);
        assert_eq!(outbox(&mut mech, 0, 1).unwrap()[0].1.record(), Some(serde_json::json!({"b": 1})));
        assert_eq!(outbox_len(&mut mech).unwrap(), 2);
        let delete = NewEntry { store: "s", id: "x", op: WriteOp::Delete, value: None, landed: None };
        push_new(&mut mech, 4, &delete).unwrap();
        assert!(!peek_head(&mut mech, 4).unwrap().unwrap().has_value, "a delete carries no record");
    }
}
