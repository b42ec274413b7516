//! What the sync layer keeps in the local database, in the meta table beside the catalog, so
//! that it commits and rolls back with the records it describes:
//! - per cached object, the validators of the copy held (`sync/s/…`);
//! - the outbox: writes not yet in the bucket, in order (`sync/o/<sequence>`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::mechanism::{Mechanism, META_TABLE};
use crate::range::ByteRange;

const STATE: &[u8] = b"sync/s/";
const OUTBOX: &[u8] = b"sync/o/";

/// The validators of the copy of an object that the local store holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The object's Last-Modified, as an HTTP date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteOp {
    /// Create or replace.
    Put,
    /// Create only: the object must not exist.
    Create,
    Delete,
}

/// A write waiting to reach the bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub store: String,
    /// The object's name under the store's prefix (the record's key).
    pub id: String,
    pub op: WriteOp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

fn store_prefix(store: &str) -> Vec<u8> {
    let mut key = STATE.to_vec();
    key.extend_from_slice(&(store.len() as u32).to_be_bytes());
    key.extend_from_slice(store.as_bytes());
    key
}

fn state_key(store: &str, id: &str) -> Vec<u8> {
    let mut key = store_prefix(store);
    key.extend_from_slice(id.as_bytes());
    key
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
    let prefix = store_prefix(store);
    let mut found = Vec::new();
    mech.scan(META_TABLE, &prefix_range(&prefix), false, true, &mut |k, v| {
        found.push((k[prefix.len()..].to_vec(), v.to_vec()));
        Ok(true)
    })?;
    found
        .into_iter()
        .map(|(id, bytes)| {
            let id =
                String::from_utf8(id).map_err(|_| Error::Internal("stored sync state has a non-UTF-8 id".into()))?;
            Ok((id, serde_json::from_slice(&bytes).map_err(|e| unreadable("sync state", e))?))
        })
        .collect()
}

/// Forgets a whole store (dropped, or syncing elsewhere): its validators, and its writes still
/// waiting, which were meant for where it synced before.
pub fn forget_store(mech: &mut dyn Mechanism, store: &str) -> Result<()> {
    let ids: Vec<String> = all(mech, store)?.into_keys().collect();
    ids.iter().try_for_each(|id| forget(mech, store, id))?;
    let waiting: Vec<u64> = outbox(mech)?.into_iter().filter(|(_, e)| e.store == store).map(|(s, _)| s).collect();
    waiting.into_iter().try_for_each(|sequence| pop(mech, sequence))
}

fn outbox_key(sequence: u64) -> Vec<u8> {
    let mut key = OUTBOX.to_vec();
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

pub fn push(mech: &mut dyn Mechanism, sequence: u64, entry: &OutboxEntry) -> Result<()> {
    mech.put(META_TABLE, &outbox_key(sequence), &serde_json::to_vec(entry).expect("entries serialise"))
}

pub fn pop(mech: &mut dyn Mechanism, sequence: u64) -> Result<()> {
    mech.delete(META_TABLE, &outbox_key(sequence))
}

/// The outbox in order, with each entry's sequence number.
pub fn outbox(mech: &mut dyn Mechanism) -> Result<Vec<(u64, OutboxEntry)>> {
    let mut entries = Vec::new();
    mech.scan(META_TABLE, &prefix_range(OUTBOX), false, true, &mut |k, v| {
        let sequence = u64::from_be_bytes(k[OUTBOX.len()..].try_into().unwrap_or_default());
        entries.push((sequence, serde_json::from_slice(v).map_err(|e| unreadable("outbox entry", e))?));
        Ok(true)
    })?;
    Ok(entries)
}

pub fn outbox_len(mech: &mut dyn Mechanism) -> Result<u64> {
    mech.count(META_TABLE, &prefix_range(OUTBOX))
}

/// The sequence number after the last one in the outbox.
pub fn next_sequence(mech: &mut dyn Mechanism) -> Result<u64> {
    let mut next = 1;
    mech.scan(META_TABLE, &prefix_range(OUTBOX), true, false, &mut |k, _| {
        next = u64::from_be_bytes(k[OUTBOX.len()..].try_into().unwrap_or_default()) + 1;
        Ok(false)
    })?;
    Ok(next)
}
