//! Key paths: where a record keeps its primary key or an index key. A path is a dotted field
//! path (`metadata.platform`), or an array of them for a compound key. The empty path means
//! the record itself.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::key::Key;

/// A key path as written in a schema: `"a.b"` or `["a", "b.c"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum KeyPath {
    Single(String),
    Compound(Vec<String>),
}

/// Read by hand, so that a wrong one is named in the schema's words (serde's untagged enums
/// say only that no variant matched, naming the Rust type).
impl<'de> Deserialize<'de> for KeyPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<KeyPath, D::Error> {
        let wrong = |found: &Value| {
            serde::de::Error::custom(format!(
                "a key path is a field path (\"a.b\") or an array of them ([\"a\", \"b\"]), not {}",
                crate::error::clip(&found.to_string())
            ))
        };
        match Value::deserialize(deserializer)? {
            Value::String(path) => Ok(KeyPath::Single(path)),
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => {
                Ok(KeyPath::Compound(items.into_iter().map(|i| i.as_str().unwrap_or_default().to_string()).collect()))
            }
            other => Err(wrong(&other)),
        }
    }
}

impl KeyPath {
    /// The default index name: the path itself, or the paths joined by `", "`.
    pub fn display_name(&self) -> String {
        match self {
            KeyPath::Single(p) => p.clone(),
            KeyPath::Compound(ps) => ps.join(", "),
        }
    }

    pub fn is_compound(&self) -> bool {
        matches!(self, KeyPath::Compound(_))
    }

    pub(crate) fn validate(&self, owner: &str) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidSchema(format!("{owner}: {why}")));
        match self {
            KeyPath::Single(p) => validate_path(p).or_else(bad),
            KeyPath::Compound(ps) if ps.is_empty() => bad("a compound key path needs at least one field".into()),
            KeyPath::Compound(ps) => {
                for p in ps {
                    if p.is_empty() {
                        return bad("a compound key path cannot contain the empty path".into());
                    }
                    validate_path(p).or_else(bad)?;
                }
                Ok(())
            }
        }
    }

    /// The key at this path, `None` where a field is missing. A present field that is not a
    /// valid key is an error naming the path.
    pub fn extract(&self, record: &Value) -> Result<Option<Key>> {
        match self {
            KeyPath::Single(p) => match lookup(record, p) {
                None => Ok(None),
                Some(v) => Key::from_json(v).map(Some).map_err(|e| at_path(e, p)),
            },
            KeyPath::Compound(ps) => {
                let mut parts = Vec::with_capacity(ps.len());
                for p in ps {
                    match lookup(record, p) {
                        None => return Ok(None),
                        Some(v) => parts.push(Key::from_json(v).map_err(|e| at_path(e, p))?),
                    }
                }
                Ok(Some(Key::Array(parts)))
            }
        }
    }

    /// Index keys of a record. A record whose field is missing or not a valid key is simply not
    /// in the index (IndexedDB's rule). With `multi_entry`, an array field gives one entry per
    /// distinct valid element.
    pub fn index_keys(&self, record: &Value, multi_entry: bool) -> Vec<Key> {
        if let (true, KeyPath::Single(p)) = (multi_entry, self) {
            if let Some(Value::Array(items)) = lookup(record, p) {
                let mut keys: Vec<Key> = items.iter().filter_map(|v| Key::from_json(v).ok()).collect();
                keys.sort();
                keys.dedup();
                return keys;
            }
        }
        self.extract(record).ok().flatten().into_iter().collect()
    }

    /// Writes a generated key into the record at this (single) path, creating objects on the way.
    pub(crate) fn inject(&self, record: &mut Value, key: &Key) -> Result<()> {
        let KeyPath::Single(path) = self else {
            return Err(Error::InvalidSchema("autoIncrement cannot fill a compound key path".into()));
        };
        let fail = |why: &str| Err(Error::invalid_key(format!("cannot store the generated key at {path:?}: {why}")));
        if path.is_empty() {
            return fail("the record is the key");
        }
        let mut node = record;
        let mut segments = path.split('.').peekable();
        while let Some(segment) = segments.next() {
            let Value::Object(map) = node else {
                return fail("a parent of the field is not an object");
            };
            if segments.peek().is_none() {
                map.insert(segment.to_string(), key.to_json());
                return Ok(());
            }
            node = map.entry(segment.to_string()).or_insert_with(|| Value::Object(Map::new()));
        }
        Ok(())
    }
}

impl std::fmt::Display for KeyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyPath::Single(p) => write!(f, "{p}"),
            KeyPath::Compound(ps) => write!(f, "{ps:?}"),
        }
    }
}

fn validate_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Ok(());
    }
    if path.split('.').any(str::is_empty) {
        return Err(format!("key path {path:?} has an empty segment"));
    }
    Ok(())
}

/// The value at a dotted path; `None` when a segment is missing or a parent is not an object.
pub fn lookup<'v>(record: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(record);
    }
    path.split('.').try_fold(record, |node, segment| node.as_object()?.get(segment))
}

fn at_path(error: Error, path: &str) -> Error {
    match error {
        Error::InvalidKey { store, key_path: None, reason } => {
            Error::InvalidKey { store, key_path: Some(path.to_string()), reason }
        }
        other => other,
    }
}

/// Puts `value` at the dotted `path` of `record`, replacing what is there (nulls included) and
/// making the objects on the way (a non-object on the way is replaced by one).
pub(crate) fn set(record: &mut Value, path: &str, value: Value) {
    let mut node = record;
    let mut segments = path.split('.').peekable();
    while let Some(segment) = segments.next() {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let map = node.as_object_mut().expect("made an object above");
        if segments.peek().is_none() {
            map.insert(segment.to_string(), value);
            return;
        }
        node = map.entry(segment.to_string()).or_insert(Value::Null);
    }
}
