//! The operations of one transaction, synchronous: what a C transaction body calls on the
//! worker thread while its transaction is open.

use objstore_db_core::{sql, Key, KeyRange, Record, Result, ScanOptions, Tx};
use serde_json::{json, Value};

use super::encoding::{AsValue, Encoding};

/// What `read` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Count,
    Keys,
    Values,
}

pub struct TxOps<'t, 'db> {
    pub(super) tx: &'t mut Tx<'db>,
}

impl TxOps<'_, '_> {
    /// Writes a record, replacing any under its key; returns the key it was written under.
    pub fn put(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        self.tx.put(store, record, key)
    }

    /// Writes a new record (an existing key or a unique-index clash is a constraint error);
    /// returns the key it was written under.
    pub fn add(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        self.tx.add(store, record, key)
    }

    pub fn get(&mut self, store: &str, key: &Key) -> Result<Value> {
        AsValue.record(self.tx, store, key)
    }

    pub fn values_of(&mut self, store: &str, keys: &[Key]) -> Result<Value> {
        AsValue.records(self.tx, store, keys)
    }

    /// Removes by key or key range; returns how many records went.
    pub fn remove(&mut self, store: &str, target: &KeyRange) -> Result<u64> {
        self.tx.remove(store, target)
    }

    /// Removes every record of `store`.
    pub fn clear(&mut self, store: &str) -> Result<()> {
        self.tx.clear(store)
    }

    pub fn read(&mut self, store: &str, kind: ReadKind, scan: &ScanOptions) -> Result<Value> {
        AsValue.scan(self.tx, store, kind, scan)
    }

    pub fn sql(&mut self, text: &str, params: &[Value]) -> Result<Value> {
        run_sql(self.tx, text, params)
    }
}

/// `{"rows": [...]}` (with `"columns"` and `"aggregate"` when the SELECT names its columns)
/// or `{"changed": n}`.
pub(super) fn run_sql(tx: &mut Tx, text: &str, params: &[Value]) -> Result<Value> {
    Ok(match sql::execute_in(tx, text, params)? {
        sql::SqlOutput::Rows(rows) => match sql::columns(text, params)? {
            Some((columns, aggregate)) => json!({ "rows": rows, "columns": columns, "aggregate": aggregate }),
            None => json!({ "rows": rows }),
        },
        sql::SqlOutput::Changed(n) => json!({ "changed": n }),
    })
}
