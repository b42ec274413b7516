//! Key ranges, turned into byte ranges over encoded keys: `[low, high)`.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::key::{encode_prefix, prefix_successor, Key, ABOVE_ALL_KEYS};

#[derive(Debug, Clone, PartialEq)]
pub enum KeyRange {
    /// Exactly this key.
    Only(Key),
    /// Keys above `key` (`open`: excluding it).
    Lower { key: Key, open: bool },
    /// Keys below `key` (`open`: excluding it).
    Upper { key: Key, open: bool },
    /// Keys between two bounds.
    Bound { lower: Key, upper: Key, lower_open: bool, upper_open: bool },
    /// Strings (or binaries) starting with a prefix; for an array, arrays starting with these
    /// elements (a compound index queried by its leading fields).
    Starts(Key),
}

/// A byte range over encoded keys: `low` inclusive, `high` exclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteRange {
    pub low: Vec<u8>,
    pub high: Vec<u8>,
}

impl ByteRange {
    pub fn all() -> ByteRange {
        ByteRange { low: Vec::new(), high: ABOVE_ALL_KEYS.to_vec() }
    }

    pub fn is_empty(&self) -> bool {
        self.low >= self.high
    }
}

impl KeyRange {
    pub fn only(key: impl Into<Key>) -> KeyRange {
        KeyRange::Only(key.into())
    }

    pub fn lower(key: impl Into<Key>, open: bool) -> KeyRange {
        KeyRange::Lower { key: key.into(), open }
    }

    pub fn upper(key: impl Into<Key>, open: bool) -> KeyRange {
        KeyRange::Upper { key: key.into(), open }
    }

    pub fn bound(lower: impl Into<Key>, upper: impl Into<Key>, lower_open: bool, upper_open: bool) -> KeyRange {
        KeyRange::Bound { lower: lower.into(), upper: upper.into(), lower_open, upper_open }
    }

    pub fn starts(prefix: impl Into<Key>) -> KeyRange {
        KeyRange::Starts(prefix.into())
    }

    /// The byte range this key range covers. A lower bound above the upper one is an error, as
    /// in IndexedDB; equal bounds with an open end give an empty range.
    pub fn to_bytes(&self) -> Result<ByteRange> {
        let range = match self {
            KeyRange::Only(key) => {
                let low = key.encode()?;
                ByteRange { high: just_above(&low), low }
            }
            KeyRange::Lower { key, open } => ByteRange { low: lower_bound(key, *open)?, high: ABOVE_ALL_KEYS.to_vec() },
            KeyRange::Upper { key, open } => ByteRange { low: Vec::new(), high: upper_bound(key, *open)? },
            KeyRange::Bound { lower, upper, lower_open, upper_open } => {
                if lower > upper {
                    return Err(Error::InvalidArgument(format!(
                        "key range lower bound {lower} is above its upper bound {upper}"
                    )));
                }
                ByteRange { low: lower_bound(lower, *lower_open)?, high: upper_bound(upper, *upper_open)? }
            }
            KeyRange::Starts(prefix) => {
                let low = encode_prefix(prefix)?;
                ByteRange { high: prefix_successor(&low), low }
            }
        };
        Ok(range)
    }

    /// Reads `{"only": k}`, `{"lower": k, "lowerOpen"?: b, "upper": k, "upperOpen"?: b}` (either
    /// bound may be left out) or `{"starts": prefix}`.
    pub fn from_json(value: &Value) -> Result<KeyRange> {
        let bad = |why: &str| {
            Error::InvalidArgument(format!("key range {}: {why}", crate::key::truncate(&value.to_string(), 80)))
        };
        const SHAPES: &str = "{\"only\": key}, {\"lower\": key, \"lowerOpen\"?: bool, \"upper\": key, \"upperOpen\"?: bool} (either bound may be left out) or {\"starts\": prefix}";
        const FIELDS: [&str; 6] = ["only", "lower", "upper", "lowerOpen", "upperOpen", "starts"];
        let map = value.as_object().ok_or_else(|| bad(&format!("must be an object: {SHAPES}")))?;
        for field in map.keys() {
            if !FIELDS.contains(&field.as_str()) {
                let known = FIELDS.join(", ");
                return Err(bad(&format!("unknown field {} (known: {known})", crate::error::clip(field))));
            }
        }
        let key = |name: &str| map.get(name).map(Key::from_json).transpose();
        let flag = |name: &str| match map.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(&format!("{name} must be true or false"))),
        };
        if let Some(k) = key("only")? {
            return Ok(KeyRange::Only(k));
        }
        if let Some(p) = key("starts")? {
            return Ok(KeyRange::Starts(p));
        }
        match (key("lower")?, key("upper")?) {
            (Some(lower), Some(upper)) => {
                Ok(KeyRange::Bound { lower, upper, lower_open: flag("lowerOpen")?, upper_open: flag("upperOpen")? })
            }
            (Some(key), None) => Ok(KeyRange::Lower { key, open: flag("lowerOpen")? }),
            (None, Some(key)) => Ok(KeyRange::Upper { key, open: flag("upperOpen")? }),
            (None, None) => Err(bad(&format!("needs only, lower, upper or starts: {SHAPES}"))),
        }
    }
}

/// The smallest byte string above `bytes`.
pub(crate) fn just_above(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out.push(0);
    out
}

fn lower_bound(key: &Key, open: bool) -> Result<Vec<u8>> {
    let bytes = key.encode()?;
    Ok(if open { just_above(&bytes) } else { bytes })
}

fn upper_bound(key: &Key, open: bool) -> Result<Vec<u8>> {
    let bytes = key.encode()?;
    Ok(if open { bytes } else { just_above(&bytes) })
}
