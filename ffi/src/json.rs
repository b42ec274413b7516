//! The JSON edge the skins share (the C API, the Python and Node modules): arguments as they
//! hand them over (serde_json values, converted once from the caller's own objects) turned
//! into the engine's types, with errors that name the argument, and events as values.
//! `rsapi` itself takes and gives the engine's types.

use std::time::Duration;

use crate::rsapi::OpenOptions;

use objstore_db_core::{
    Durability, Error, Event, EventFilter, EventKind, Key, KeyRange, MechanismKind, Result, ScanOptions, Schema,
};
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
        other => Err(Error::InvalidArgument(format!("key list: expected an array, got {other}"))),
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
                other => Err(Error::InvalidArgument(format!("store list: {other} is not a store name"))),
            })
            .collect(),
        other => Err(Error::InvalidArgument(format!("store list: expected a name or an array of names, got {other}"))),
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
        Some(other) => Err(Error::InvalidArgument(format!("SQL parameters: expected an array, got {other}"))),
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
        .ok_or_else(|| Error::InvalidArgument(format!("open options: expected an object, got {value}")))?;
    let count = |field: &str, v: &Value| {
        v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            Error::InvalidArgument(format!("open options: {field} = {v} is not a positive whole number"))
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
