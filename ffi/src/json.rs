//! The JSON edge the skins share (the C API, the Python and Node modules): arguments as they
//! hand them over (serde_json values, converted once from the caller's own objects) turned
//! into the engine's types, with errors that name the argument; results ([`IntoJson`]) and
//! events turned into the JSON the skins send. `rsapi` itself takes and gives the engine's
//! types.

use std::time::Duration;

use crate::rsapi::{OpenOptions, Opened};

use objstore_db_core::{
    clip_json, CheckpointReport, Durability, Error, Event, EventFilter, EventKind, FlushReport, Key, KeyRange,
    MechanismKind, Plan, Record, RefusedWrite, Result, ScanOptions, Schema, Stats, SyncStatus,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

pub fn parse(what: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        // A bare word where JSON wants a value is, nearly always, a string key without quotes.
        let bare_word = e.is_syntax() && text.trim().chars().next().is_some_and(char::is_alphabetic);
        let reason = match bare_word {
            true => {
                let quoted = Value::String(text.trim().chars().take(40).collect()).to_string();
                let in_c = format!("\"{}\"", quoted.replace('\\', "\\\\").replace('"', "\\\""));
                format!("{e}; a string is JSON with quotes: {quoted} (in C source {in_c})")
            }
            false => e.to_string(),
        };
        Error::BadJson { what: what.to_string(), reason }
    })
}

/// A record given as JSON text: kept as text (see [`Record`]), with the same errors as
/// [`parse`] when it is not JSON.
pub fn record(what: &str, text: &str) -> Result<Record> {
    Record::from_json(what, text.to_string()).or_else(|e| parse(what, text).and(Err(e)))
}

/// A JSON array of records, each kept as its own text.
pub fn records(what: &str, text: &str) -> Result<Vec<Record>> {
    match serde_json::from_str::<Vec<Box<RawValue>>>(text) {
        Ok(items) => items.into_iter().map(|item| Record::from_raw(what, item)).collect(),
        Err(_) => {
            let other = parse(what, text)?;
            Err(Error::InvalidArgument(format!(
                "{what}: expected an array of records, got {}",
                objstore_db_core::clip(&other.to_string())
            )))
        }
    }
}

/// A key (`5`, `"a"`, `[1, 2]`, `{"$date": ...}`).
pub fn key(value: &Value) -> Result<Key> {
    Key::from_json(value)
}

/// A key, or none (absent or null: the store makes or reads the key itself).
pub fn optional_key(value: Option<&Value>) -> Result<Option<Key>> {
    value.filter(|k| !k.is_null()).map(Key::from_json).transpose()
}

/// A key (`5`, `"a"`, `[1, 2]`) or a key range object (`{"lower": 1, "upper": 9}`).
pub fn target(value: &Value) -> Result<KeyRange> {
    let is_range =
        value.as_object().is_some_and(|m| ["only", "lower", "upper", "starts"].iter().any(|f| m.contains_key(*f)));
    if is_range {
        KeyRange::from_json(value)
    } else {
        Key::from_json(value).map(KeyRange::Only)
    }
}

pub fn scan(value: Option<&Value>) -> Result<ScanOptions> {
    match value {
        None | Some(Value::Null) => Ok(ScanOptions::new()),
        Some(value) => ScanOptions::from_json(value),
    }
}

pub fn keys(value: &Value) -> Result<Vec<Key>> {
    match value {
        Value::Array(items) => items.iter().map(Key::from_json).collect(),
        other => Err(Error::InvalidArgument(format!("key list: expected an array, got {}", clip_json(other)))),
    }
}

/// Store names given as an array of strings, or one string.
pub fn stores(value: &Value) -> Result<Vec<String>> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(Error::InvalidArgument(format!("store list: {} is not a store name", clip_json(other)))),
            })
            .collect(),
        other => Err(Error::InvalidArgument(format!(
            "store list: expected a name or an array of names, got {}",
            clip_json(other)
        ))),
    }
}

pub fn schema(value: Option<&Value>) -> Result<Option<Schema>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => Schema::from_json(&value.to_string()).map(Some),
    }
}

pub fn sql_params(value: Option<&Value>) -> Result<Vec<Value>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(other) => {
            Err(Error::InvalidArgument(format!("SQL parameters: expected an array, got {}", clip_json(other))))
        }
    }
}

const OPEN_OPTIONS: &str = "mechanism, durability, idleTransactionTimeoutMs, queueCapacity, syncThreads";

/// `{"mechanism": "sqlite" | "memory", "durability": "normal" | "full", "idleTransactionTimeoutMs": n,
/// "queueCapacity": n, "syncThreads": n}`; every field optional.
pub fn open_options(value: Option<&Value>) -> Result<OpenOptions> {
    let mut options = OpenOptions::default();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(options);
    };
    let map = value
        .as_object()
        .ok_or_else(|| Error::InvalidArgument(format!("open options: expected an object, got {}", clip_json(value))))?;
    let count = |field: &str, v: &Value| {
        v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            Error::InvalidArgument(format!("open options: {field} = {} is not a positive whole number", clip_json(v)))
        })
    };
    for (field, v) in map {
        match (field.as_str(), v) {
            ("mechanism", Value::String(m)) => options.mechanism = MechanismKind::from_name(m)?,
            ("durability", Value::String(d)) => options.durability = Durability::from_name(d)?,
            ("idleTransactionTimeoutMs", v) => {
                options.idle_transaction_timeout = Duration::from_millis(count(field, v)?)
            }
            ("queueCapacity", v) => options.queue_capacity = count(field, v)? as usize,
            ("syncThreads", v) => options.sync_threads = count(field, v)?.min(64) as usize,
            (other, v) => {
                return Err(Error::InvalidArgument(format!(
                    "open options: {other:?} = {v} is not understood (known: {OPEN_OPTIONS})"
                )))
            }
        }
    }
    Ok(options)
}

/// `{"kinds"?: [names], "store"?: name}`.
pub fn event_filter(value: Option<&Value>) -> Result<EventFilter> {
    let mut filter = EventFilter::all();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(filter);
    };
    let map = value.as_object().ok_or_else(|| Error::InvalidArgument("event filter: expected an object".into()))?;
    for (field, v) in map {
        match (field.as_str(), v) {
            ("store", Value::String(s)) => filter.store = Some(s.clone()),
            ("kinds", Value::Array(kinds)) => {
                for k in kinds {
                    let kind = k.as_str().and_then(EventKind::from_name).ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "event filter: unknown kind {k} (known: {})",
                            EventKind::ALL.map(EventKind::name).join(", ")
                        ))
                    })?;
                    filter.kinds.push(kind);
                }
            }
            (other, _) => {
                return Err(Error::InvalidArgument(format!(
                    "event filter: {other:?} is not understood (known: kinds, store)"
                )))
            }
        }
    }
    Ok(filter)
}

pub fn event_json(e: &Event) -> Value {
    json!({
        "kind": e.kind.name(),
        "store": e.store,
        "key": e.key.as_ref().map(Key::to_json),
        "value": e.value,
        "message": e.message,
    })
}

// ----- results ----------------------------------------------------------------------------------

/// A result of `rsapi` as the skins send it. The C API, the Python and the Node modules all
/// turn results into JSON through this, so the three send the same JSON.
pub trait IntoJson {
    fn into_json(self) -> Value;
}

/// A result as JSON text.
pub fn text(result: impl IntoJson) -> String {
    result.into_json().to_string()
}

/// Records, and results that are JSON already (SQL output, cursor batches).
impl IntoJson for Value {
    fn into_json(self) -> Value {
        self
    }
}

/// Nothing to say: `null`.
impl IntoJson for () {
    fn into_json(self) -> Value {
        Value::Null
    }
}

impl IntoJson for bool {
    fn into_json(self) -> Value {
        Value::Bool(self)
    }
}

/// A count, an id (a transaction's, a subscription's).
impl IntoJson for u64 {
    fn into_json(self) -> Value {
        json!(self)
    }
}

/// A query's plan, as the line `explain` shows.
impl IntoJson for Plan {
    fn into_json(self) -> Value {
        Value::String(self.to_string())
    }
}

/// A key (`5`, `"a"`, `[1, 2]`, `{"$date": ...}`).
impl IntoJson for Key {
    fn into_json(self) -> Value {
        self.to_json()
    }
}

/// Keys, as an array.
impl IntoJson for Vec<Key> {
    fn into_json(self) -> Value {
        Value::Array(self.iter().map(Key::to_json).collect())
    }
}

/// A schema, `{"version", "stores"}`.
impl IntoJson for Schema {
    fn into_json(self) -> Value {
        serde_json::to_value(&self).expect("a schema always serialises")
    }
}

/// An open's report: the schema as stored, `{"version", "stores"}`, with `"previousVersion"`
/// (`null` for a new database) and `"warnings"` when there are any.
impl IntoJson for Opened {
    fn into_json(self) -> Value {
        let mut opened = self.schema.into_json();
        opened["previousVersion"] = json!(self.previous_version);
        if !self.warnings.is_empty() {
            opened["warnings"] = json!(self.warnings);
        }
        opened
    }
}

/// `{"manifest", "positionMs", "objects", "shards", "bytes"}`.
impl IntoJson for CheckpointReport {
    fn into_json(self) -> Value {
        json!({"manifest": self.manifest, "positionMs": self.position_ms, "objects": self.objects,
            "shards": self.shards, "bytes": self.bytes})
    }
}

/// `{"sent", "pending", "refused", "rejected": [{"sequence", "code", "message"}], "held": [...the
/// same], "offline"?, "blocked"?}`.
impl IntoJson for FlushReport {
    fn into_json(self) -> Value {
        let writes = |list: &[(u64, Error)]| -> Vec<Value> {
            list.iter()
                .map(|(sequence, e)| {
                    json!({"sequence": sequence, "code": format!("{:?}", e.code()), "message": e.to_string()})
                })
                .collect()
        };
        let mut out = json!({"sent": self.sent, "pending": self.pending, "refused": self.refused,
            "rejected": writes(&self.rejected), "held": writes(&self.held)});
        if let Some(e) = self.offline {
            out["offline"] = json!(e.to_string());
        }
        if let Some(e) = self.blocked {
            out["blocked"] = json!(e.to_string());
        }
        out
    }
}

/// `{"requests": {kind: {status: n}}, "total", "bytesSent", "bytesReceived", "busyMs", "costUsd",
/// "costsUsd": {list: usd}, "conditionalWrites": {bucket: bool}}` (see [`Stats::to_json`]).
impl IntoJson for Stats {
    fn into_json(self) -> Value {
        self.to_json()
    }
}

/// Refused writes, `[{"sequence", "store", "key", "op", "value", "code", "message"}]`.
impl IntoJson for Vec<RefusedWrite> {
    fn into_json(self) -> Value {
        Value::Array(
            self.into_iter()
                .map(|w| {
                    json!({
                        "sequence": w.sequence,
                        "store": w.entry.store,
                        "key": w.entry.id,
                        "op": w.entry.op,
                        "value": w.entry.record(),
                        "code": w.code,
                        "message": w.message,
                    })
                })
                .collect(),
        )
    }
}

/// A record's sync status by name: `"local"`, `"pending"`, `"refused"`, `"synced"`,
/// `"unusable"` or `"unknown"`.
impl IntoJson for SyncStatus {
    fn into_json(self) -> Value {
        json!(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrong argument of any size is named in a message of a few lines, never echoed whole
    /// (a fuzzer's 50 MB store list came back in its error).
    #[test]
    fn a_huge_wrong_argument_is_named_in_a_short_message() {
        let huge = Value::Array(vec![json!(1); 5_000_000]);
        let object = json!({"a": "x".repeat(5_000_000)});
        let said = [
            stores(&json!([huge.clone()])).unwrap_err(),
            stores(&object).unwrap_err(),
            keys(&object).unwrap_err(),
            sql_params(Some(&object)).unwrap_err(),
            open_options(Some(&huge)).unwrap_err(),
        ];
        for e in said {
            let message = e.to_string();
            assert!(message.len() < 300, "{} bytes: {}", message.len(), &message[..300]);
            assert!(message.contains("bytes)"), "it says how long the input was: {message}");
        }
    }

    #[test]
    fn a_schema_is_sent_as_it_is_stored() {
        let text = r#"{"version": 3, "stores": [
            {"name": "a", "keyPath": ["x", "y.z"], "indexes": [{"keyPath": "x", "unique": true}]},
            {"name": "s", "autoIncrement": true, "dispatchEvents": false,
             "Sync": {"format": "objstore", "Options": {"bucket": "b", "n": 1.5, "list": [1, "two"]}}}]}"#;
        let schema = Schema::from_json(text).unwrap();
        let stored: Value = serde_json::from_str(&schema.to_json()).unwrap();
        assert_eq!(text_of(schema), stored.to_string(), "the same fields, in the same order");
    }

    #[test]
    fn a_flush_report_names_each_write_and_only_the_stops_it_has() {
        let error = || Error::InvalidArgument("no".into());
        let report = FlushReport {
            sent: 1,
            pending: 2,
            refused: 3,
            rejected: vec![(7, error())],
            offline: Some(error()),
            ..FlushReport::default()
        };
        let message = error().to_string();
        assert_eq!(
            report.into_json(),
            json!({"sent": 1, "pending": 2, "refused": 3,
                "rejected": [{"sequence": 7, "code": "InvalidArgument", "message": message}], "held": [],
                "offline": message})
        );
        assert_eq!(text_of(FlushReport::default()), r#"{"sent":0,"pending":0,"refused":0,"rejected":[],"held":[]}"#);
    }

    #[test]
    fn plain_results_are_the_json_they_always_were() {
        assert_eq!(text_of(()), "null");
        assert_eq!(text_of(5u64), "5");
        assert_eq!(text_of(Key::from("a")), r#""a""#);
        assert_eq!(text_of(vec![Key::from("a"), Key::from(2.0)]), r#"["a",2]"#);
        assert_eq!(text_of(SyncStatus::Unusable), r#""unusable""#);
        assert_eq!(text_of(Vec::<RefusedWrite>::new()), "[]");
    }

    fn text_of(result: impl IntoJson) -> String {
        text(result)
    }
}
