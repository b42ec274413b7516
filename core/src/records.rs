//! A store's records as they are stored (JSON text) and their index entries: what the
//! operations of a transaction (`ops.rs`), the queries and a migration's index rebuild
//! (`database.rs`) share. Knows no database and no transaction, only the mechanism.

use serde_json::Value;

use crate::catalog::{IndexInfo, StoreInfo};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::mechanism::Mechanism;
use crate::range::{just_above, ByteRange};

/// Rows read per batch where a scan's rows are then written (remove, index rebuild).
const BATCH: usize = 512;

/// Encoded index keys of a record for one index (none when the record is not in the index).
pub(crate) fn index_entries(index: &IndexInfo, record: &Value) -> Vec<Vec<u8>> {
    index.key_path.index_keys(record, index.multi_entry).iter().filter_map(|k| k.encode().ok()).collect()
}

/// Refuses index key `ik` for the record `pk` when another record holds it in a unique index.
pub(crate) fn check_unique(
    mech: &mut dyn Mechanism,
    info: &StoreInfo,
    index: &IndexInfo,
    ik: &[u8],
    pk: &[u8],
) -> Result<()> {
    let range = ByteRange { low: ik.to_vec(), high: just_above(ik) };
    let mut clash = None;
    mech.index_scan(index.table, &range, None, false, &mut |_, other| {
        if other == pk {
            return Ok(true);
        }
        clash = Some(other.to_vec());
        Ok(false)
    })?;
    match clash {
        None => Ok(()),
        Some(other) => Err(Error::Constraint {
            store: info.schema.name.clone(),
            detail: format!(
                "unique index {:?} already holds {} for the record with key {}",
                index.name,
                Key::decode(ik)?,
                Key::decode(&other)?
            ),
        }),
    }
}

/// Up to [`BATCH`] rows (primary key, record bytes when `values`) of the store in `range`.
pub(crate) fn read_batch(
    mech: &mut dyn Mechanism,
    info: &StoreInfo,
    range: &ByteRange,
    values: bool,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut batch = Vec::new();
    mech.scan(info.data, range, false, values, &mut |k, v| {
        batch.push((k.to_vec(), v.to_vec()));
        Ok(batch.len() < BATCH)
    })?;
    Ok(batch)
}

/// Fills a new or changed index from the store's records (during a migration).
pub(crate) fn rebuild_index(mech: &mut dyn Mechanism, info: &StoreInfo, index: &IndexInfo) -> Result<()> {
    let mut range = ByteRange::all();
    loop {
        let batch = read_batch(mech, info, &range, true)?;
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        range.low = just_above(last);
        for (pk, bytes) in &batch {
            let record = decode_record(&info.schema.name, bytes)?;
            for ik in index_entries(index, &record) {
                if index.unique {
                    check_unique(mech, info, index, &ik, pk)?;
                }
                mech.index_insert(index.table, &ik, pk)?;
            }
        }
    }
}

/// A JSON array of stored record texts (`null` for `None`).
pub(crate) fn json_array<'a>(store: &str, records: impl Iterator<Item = Option<&'a [u8]>>) -> Result<String> {
    let mut out = String::from("[");
    for (i, record) in records.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match record {
            Some(bytes) => out.push_str(record_text(store, bytes)?),
            None => out.push_str("null"),
        }
    }
    out.push(']');
    Ok(out)
}

/// A stored record as the JSON text it is.
pub(crate) fn record_text<'a>(store: &str, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| not_utf8(store, e))
}

pub(crate) fn not_utf8(store: &str, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("a stored record of store {store:?} is not UTF-8: {e}"))
}

/// A stored record as JSON.
pub(crate) fn decode_record(store: &str, bytes: &[u8]) -> Result<Value> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::Internal(format!("a stored record of store {store:?} is unreadable: {e}")))
}
