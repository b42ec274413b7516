//! The operations of one transaction, synchronous, with values in and out: what a C
//! transaction body calls on the worker thread while its transaction is open.

use objstore_db_core::{sql, Key, Result, Tx};
use serde_json::{json, Value};

use super::args;

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
    pub fn put(&mut self, store: &str, value: Value, key: Option<&Value>) -> Result<Value> {
        let key = key.filter(|k| !k.is_null()).map(Key::from_json).transpose()?;
        Ok(self.tx.put(store, value, key)?.to_json())
    }

    pub fn add(&mut self, store: &str, value: Value, key: Option<&Value>) -> Result<Value> {
        let key = key.filter(|k| !k.is_null()).map(Key::from_json).transpose()?;
        Ok(self.tx.add(store, value, key)?.to_json())
    }

    pub fn get(&mut self, store: &str, key: &Value) -> Result<Value> {
        Ok(self.tx.get(store, &Key::from_json(key)?)?.unwrap_or(Value::Null))
    }

    pub fn values_of(&mut self, store: &str, keys: &Value) -> Result<Value> {
        Ok(args::nulls(self.tx.values_of(store, &args::keys(keys)?)?))
    }

    pub fn remove(&mut self, store: &str, target: &Value) -> Result<Value> {
        Ok(json!(self.tx.remove(store, &args::target(target)?)?))
    }

    pub fn clear(&mut self, store: &str) -> Result<Value> {
        self.tx.clear(store).map(|()| Value::Null)
    }

    pub fn read(&mut self, store: &str, kind: ReadKind, scan: Option<&Value>) -> Result<Value> {
        read(self.tx, store, kind, scan)
    }

    pub fn sql(&mut self, text: &str, params: Option<&Value>) -> Result<Value> {
        run_sql(self.tx, text, &args::sql_params(params)?)
    }
}

pub(super) fn read(tx: &mut Tx, store: &str, kind: ReadKind, scan: Option<&Value>) -> Result<Value> {
    let scan = args::scan(scan)?;
    Ok(match kind {
        ReadKind::Count => json!(tx.count(store, &scan)?),
        ReadKind::Keys => Value::Array(tx.keys(store, &scan)?.iter().map(Key::to_json).collect()),
        ReadKind::Values => Value::Array(tx.values(store, &scan)?),
    })
}

/// As `read`, as JSON text: records as their stored texts, without a decode and an encode.
pub(super) fn read_text(tx: &mut Tx, store: &str, kind: ReadKind, scan: Option<&Value>) -> Result<String> {
    match kind {
        ReadKind::Values => tx.values_text(store, &args::scan(scan)?),
        _ => Ok(read(tx, store, kind, scan)?.to_string()),
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
