//! What `keys`, `values` and `count` read, as the engine takes it and as the bindings send it
//! (JSON).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::range::{ByteRange, KeyRange};

/// What `keys`, `values` and `count` read: a store or one of its indexes, a key range, and
/// a window. `unique` keeps one record per distinct index key (the one with the lowest primary
/// key, in either direction). `count` ignores the window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanOptions {
    pub index: Option<String>,
    pub range: Option<KeyRange>,
    pub limit: Option<usize>,
    pub offset: usize,
    pub reverse: bool,
    pub unique: bool,
}

impl ScanOptions {
    pub fn new() -> ScanOptions {
        ScanOptions::default()
    }

    pub fn index(mut self, name: &str) -> ScanOptions {
        self.index = Some(name.to_string());
        self
    }

    pub fn range(mut self, range: KeyRange) -> ScanOptions {
        self.range = Some(range);
        self
    }

    pub fn limit(mut self, limit: usize) -> ScanOptions {
        self.limit = Some(limit);
        self
    }

    pub fn offset(mut self, offset: usize) -> ScanOptions {
        self.offset = offset;
        self
    }

    pub fn reverse(mut self) -> ScanOptions {
        self.reverse = true;
        self
    }

    pub fn unique(mut self) -> ScanOptions {
        self.unique = true;
        self
    }

    /// Reads `{"index"?, "range"?, "limit"?, "offset"?, "reverse"?, "unique"?}` (see
    /// [`KeyRange::from_json`] for the range); unknown fields are errors.
    pub fn from_json(value: &Value) -> Result<ScanOptions> {
        let bad = |why: String| Error::InvalidArgument(format!("scan options: {why}"));
        let Some(map) = value.as_object() else {
            return if value.is_null() {
                Ok(ScanOptions::new())
            } else {
                Err(bad(format!("expected an object, got {value}")))
            };
        };
        let mut scan = ScanOptions::new();
        for (field, v) in map {
            match field.as_str() {
                "index" => {
                    scan.index = Some(v.as_str().ok_or_else(|| bad("index must be a string".into()))?.to_string())
                }
                "range" => scan.range = Some(KeyRange::from_json(v)?),
                "limit" => {
                    scan.limit = Some(v.as_u64().ok_or_else(|| bad("limit must be a whole number".into()))? as usize)
                }
                "offset" => {
                    scan.offset = v.as_u64().ok_or_else(|| bad("offset must be a whole number".into()))? as usize
                }
                "reverse" => scan.reverse = v.as_bool().ok_or_else(|| bad("reverse must be true or false".into()))?,
                "unique" => scan.unique = v.as_bool().ok_or_else(|| bad("unique must be true or false".into()))?,
                other => {
                    return Err(bad(format!(
                        "unknown field {other:?} (known: index, range, limit, offset, reverse, unique)"
                    )))
                }
            }
        }
        Ok(scan)
    }

    pub(crate) fn byte_range(&self, store: &str) -> Result<ByteRange> {
        match &self.range {
            None => Ok(ByteRange::all()),
            Some(range) => range.to_bytes().map_err(|e| e.in_store(store, None)),
        }
    }
}
