//! How a read hands records back: as values ([`AsValue`], for Rust callers), or as the JSON
//! text they are stored as ([`AsText`], for a caller that passes text on: the C API and the
//! bindings skip a decode and an encode). One read, either encoding, instead of a twin per
//! encoding.

use objstore_db_core::{Key, Query, Result, ScanOptions, Tx};
use serde_json::{json, Value};

use super::ReadKind;

/// A result encoding, passed to a read as a value (`AsValue` or `AsText`).
pub trait Encoding: Copy + Send + 'static {
    /// What a read completes with.
    type Out: Send + 'static;

    /// The record under `key`, or null.
    fn record(self, tx: &mut Tx, store: &str, key: &Key) -> Result<Self::Out>;

    /// The records under `keys` as an array, null where there is none.
    fn records(self, tx: &mut Tx, store: &str, keys: &[Key]) -> Result<Self::Out>;

    /// A scan's count, keys or records.
    fn scan(self, tx: &mut Tx, store: &str, kind: ReadKind, scan: &ScanOptions) -> Result<Self::Out>;

    /// A query's next page of records (empty at the end).
    fn page(self, query: &mut Query, tx: &mut Tx, n: usize) -> Result<Self::Out>;
}

/// Records as `serde_json::Value`s.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsValue;

/// Records as one JSON text, each record as it is stored.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsText;

impl Encoding for AsValue {
    type Out = Value;

    fn record(self, tx: &mut Tx, store: &str, key: &Key) -> Result<Value> {
        Ok(tx.get(store, key)?.unwrap_or(Value::Null))
    }

    fn records(self, tx: &mut Tx, store: &str, keys: &[Key]) -> Result<Value> {
        Ok(Value::Array(tx.values_of(store, keys)?.into_iter().map(|v| v.unwrap_or(Value::Null)).collect()))
    }

    fn scan(self, tx: &mut Tx, store: &str, kind: ReadKind, scan: &ScanOptions) -> Result<Value> {
        Ok(match kind {
            ReadKind::Count => json!(tx.count(store, scan)?),
            ReadKind::Keys => Value::Array(tx.keys(store, scan)?.iter().map(Key::to_json).collect()),
            ReadKind::Values => Value::Array(tx.values(store, scan)?),
        })
    }

    fn page(self, query: &mut Query, tx: &mut Tx, n: usize) -> Result<Value> {
        Ok(Value::Array(query.list_in(tx, n)?))
    }
}

impl Encoding for AsText {
    type Out = String;

    fn record(self, tx: &mut Tx, store: &str, key: &Key) -> Result<String> {
        Ok(tx.get_text(store, key)?.unwrap_or_else(|| "null".to_string()))
    }

    fn records(self, tx: &mut Tx, store: &str, keys: &[Key]) -> Result<String> {
        tx.values_of_text(store, keys)
    }

    fn scan(self, tx: &mut Tx, store: &str, kind: ReadKind, scan: &ScanOptions) -> Result<String> {
        match kind {
            ReadKind::Values => tx.values_text(store, scan),
            _ => Ok(AsValue.scan(tx, store, kind, scan)?.to_string()),
        }
    }

    fn page(self, query: &mut Query, tx: &mut Tx, n: usize) -> Result<String> {
        query.list_text_in(tx, n)
    }
}
