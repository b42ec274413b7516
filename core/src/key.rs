//! Keys and their order-preserving byte encoding.
//!
//! The order is IndexedDB's: Number < Date < String < Binary < Array; arrays compare element by
//! element, strings by UTF-8 bytes (the order S3 lists keys in). Comparing two encodings with
//! memcmp gives the same answer as comparing the keys, so every range scan is a byte-range scan.
//! Encodings are prefix-free, which lets an index entry be `encode(index key) ++ encode(primary
//! key)` and still split back into its two halves.

use std::cmp::Ordering;

use serde_json::Value;

use crate::error::{Error, Result};

const TAG_END: u8 = 0x00;
const TAG_NUMBER: u8 = 0x10;
const TAG_DATE: u8 = 0x20;
const TAG_STRING: u8 = 0x30;
const TAG_BINARY: u8 = 0x40;
const TAG_ARRAY: u8 = 0x50;
/// Greater than the first byte of every encoded key: an exclusive upper bound for "everything".
pub(crate) const ABOVE_ALL_KEYS: &[u8] = &[0xFF];

/// A key: a primary key or an index key. Dates are milliseconds since the Unix epoch.
///
/// In JSON a key is a number, a string, an array of keys, `{"$date": <ms>}` or
/// `{"$binary": "<hex>"}`. NaN, null, booleans and other objects are not keys.
#[derive(Debug, Clone)]
pub enum Key {
    Number(f64),
    Date(f64),
    String(String),
    Binary(Vec<u8>),
    Array(Vec<Key>),
}

/// A JSON number as the double a key holds, refusing an integer the double cannot hold exactly:
/// rounded, two neighbouring ids (past 2^53) would become one key and one record overwrite the
/// other.
fn exact_number(n: &serde_json::Number) -> Result<f64> {
    let exact = match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => {
            let f = i as f64;
            (f >= -(2f64.powi(63)) && f < 2f64.powi(63) && f as i64 == i).then_some(f)
        }
        (None, Some(u)) => {
            let f = u as f64;
            (f < 2f64.powi(64) && f as u64 == u).then_some(f)
        }
        (None, None) => n.as_f64(),
    };
    exact.ok_or_else(|| {
        Error::invalid_key(format!(
            "integer {n} cannot be held exactly by a number key (a double: exact only up to 2^53); \
             store it as a string key, e.g. \"{n}\""
        ))
    })
}

impl Key {
    /// Reads a key from JSON, rejecting what IndexedDB rejects with a message that says why.
    pub fn from_json(value: &Value) -> Result<Key> {
        match value {
            Value::Number(n) => exact_number(n).map(Key::Number),
            Value::String(s) => Ok(Key::String(s.clone())),
            Value::Array(items) => items.iter().map(Key::from_json).collect::<Result<_>>().map(Key::Array),
            Value::Null => Err(Error::invalid_key("null is not a valid key")),
            Value::Bool(b) => Err(Error::invalid_key(format!("boolean {b} is not a valid key"))),
            Value::Object(map) => {
                if map.len() == 1 {
                    if let Some(ms) = map.get("$date") {
                        return match ms.as_f64() {
                            Some(ms) => Ok(Key::Date(ms)),
                            None => Err(Error::invalid_key("$date must be a number of milliseconds")),
                        };
                    }
                    if let Some(hex) = map.get("$binary") {
                        return match hex.as_str().and_then(decode_hex) {
                            Some(bytes) => Ok(Key::Binary(bytes)),
                            None => Err(Error::invalid_key("$binary must be a string of hex digit pairs")),
                        };
                    }
                }
                Err(Error::invalid_key(format!(
                    "an object is not a valid key (only {{\"$date\": ms}} and {{\"$binary\": hex}} are): {}",
                    truncate(&value.to_string(), 80)
                )))
            }
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Key::Number(f) => number_json(*f),
            Key::Date(ms) => serde_json::json!({ "$date": number_json(*ms) }),
            Key::String(s) => Value::String(s.clone()),
            Key::Binary(b) => serde_json::json!({ "$binary": encode_hex(b) }),
            Key::Array(items) => Value::Array(items.iter().map(Key::to_json).collect()),
        }
    }

    /// The order-preserving encoding. Fails only for NaN, which has no place in the order.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(16);
        self.encode_into(&mut out)?;
        Ok(out)
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Key::Number(f) => encode_float(TAG_NUMBER, *f, out)?,
            Key::Date(ms) => encode_float(TAG_DATE, *ms, out)?,
            Key::String(s) => encode_bytes(TAG_STRING, s.as_bytes(), out),
            Key::Binary(b) => encode_bytes(TAG_BINARY, b, out),
            Key::Array(items) => {
                out.push(TAG_ARRAY);
                for item in items {
                    item.encode_into(out)?;
                }
                out.push(TAG_END);
            }
        }
        Ok(())
    }

    /// Decodes one key from the front of `bytes`, returning it and the rest.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Key, &[u8])> {
        let corrupt = || Error::Internal(format!("corrupt key encoding {}", encode_hex(bytes)));
        let (&tag, rest) = bytes.split_first().ok_or_else(corrupt)?;
        match tag {
            TAG_NUMBER | TAG_DATE => {
                let raw: [u8; 8] = rest.get(..8).ok_or_else(corrupt)?.try_into().unwrap();
                let f = decode_float(raw);
                let key = if tag == TAG_NUMBER { Key::Number(f) } else { Key::Date(f) };
                Ok((key, &rest[8..]))
            }
            TAG_STRING | TAG_BINARY => {
                let (raw, rest) = decode_bytes(rest).ok_or_else(corrupt)?;
                if tag == TAG_BINARY {
                    return Ok((Key::Binary(raw), rest));
                }
                let s = String::from_utf8(raw).map_err(|_| corrupt())?;
                Ok((Key::String(s), rest))
            }
            TAG_ARRAY => {
                let mut items = Vec::new();
                let mut rest = rest;
                loop {
                    match rest.first() {
                        Some(&TAG_END) => return Ok((Key::Array(items), &rest[1..])),
                        Some(_) => {
                            let (item, after) = Key::decode_prefix(rest)?;
                            items.push(item);
                            rest = after;
                        }
                        None => return Err(corrupt()),
                    }
                }
            }
            _ => Err(corrupt()),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Key> {
        match Key::decode_prefix(bytes)? {
            (key, []) => Ok(key),
            _ => Err(Error::Internal(format!("trailing bytes after key {}", encode_hex(bytes)))),
        }
    }

    pub(crate) fn type_rank(&self) -> u8 {
        match self {
            Key::Number(_) => 0,
            Key::Date(_) => 1,
            Key::String(_) => 2,
            Key::Binary(_) => 3,
            Key::Array(_) => 4,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    /// IndexedDB's order. NaN (which `encode` rejects) sorts as equal to itself here.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Key::Number(a), Key::Number(b)) | (Key::Date(a), Key::Date(b)) => {
                a.partial_cmp(b).unwrap_or(Ordering::Equal)
            }
            (Key::String(a), Key::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Key::Binary(a), Key::Binary(b)) => a.cmp(b),
            (Key::Array(a), Key::Array(b)) => a.cmp(b),
            _ => self.type_rank().cmp(&other.type_rank()),
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::String(s.to_string())
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key::String(s)
    }
}

impl From<f64> for Key {
    fn from(f: f64) -> Key {
        Key::Number(f)
    }
}

impl From<i64> for Key {
    fn from(i: i64) -> Key {
        Key::Number(i as f64)
    }
}

impl From<i32> for Key {
    fn from(i: i32) -> Key {
        Key::Number(i as f64)
    }
}

impl<K: Into<Key>> From<Vec<K>> for Key {
    fn from(items: Vec<K>) -> Key {
        Key::Array(items.into_iter().map(Into::into).collect())
    }
}

fn number_json(f: f64) -> Value {
    // Whole numbers print without a fraction so that `{"id": 1}` round-trips as `1`, and so
    // does every integer `exact_number` took (up to 2^64), not only those below 2^53.
    if f.fract() == 0.0 && f.abs() < 2f64.powi(63) {
        Value::from(f as i64)
    } else if f.fract() == 0.0 && f > 0.0 && f < 2f64.powi(64) {
        Value::from(f as u64)
    } else {
        serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
    }
}

fn encode_float(tag: u8, f: f64, out: &mut Vec<u8>) -> Result<()> {
    if f.is_nan() {
        return Err(Error::invalid_key("NaN is not a valid key"));
    }
    let f = if f == 0.0 { 0.0 } else { f }; // -0 and +0 are the same key
    let bits = f.to_bits();
    let sortable = if bits >> 63 == 1 { !bits } else { bits ^ (1 << 63) };
    out.push(tag);
    out.extend_from_slice(&sortable.to_be_bytes());
    Ok(())
}

fn decode_float(raw: [u8; 8]) -> f64 {
    let sortable = u64::from_be_bytes(raw);
    let bits = if sortable >> 63 == 1 { sortable ^ (1 << 63) } else { !sortable };
    f64::from_bits(bits)
}

/// Bytes are written with 0x00 escaped as 0x00 0x01 and closed by 0x00 0x00, so that a shorter
/// string sorts before its extensions and the encoding stays prefix-free.
fn encode_bytes(tag: u8, bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 3);
    out.push(tag);
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0x01);
        }
    }
    out.extend_from_slice(&[0x00, 0x00]);
}

fn decode_bytes(bytes: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    loop {
        match *bytes.get(i)? {
            0 => match *bytes.get(i + 1)? {
                0 => return Some((out, &bytes[i + 2..])),
                1 => {
                    out.push(0);
                    i += 2;
                }
                _ => return None,
            },
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// The encoding of a string or binary prefix without its terminator: every key of that type
/// that starts with `prefix` has this as a byte prefix of its encoding. For an array prefix the
/// elements are encoded without the closing byte, so `[a]` is a prefix of `[a, b]`.
pub(crate) fn encode_prefix(prefix: &Key) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match prefix {
        Key::String(s) => encode_bytes(TAG_STRING, s.as_bytes(), &mut out),
        Key::Binary(b) => encode_bytes(TAG_BINARY, b, &mut out),
        Key::Array(items) => {
            out.push(TAG_ARRAY);
            for item in items {
                item.encode_into(&mut out)?;
            }
            out.push(TAG_END);
        }
        other => {
            return Err(Error::invalid_key(format!(
                "a starts range needs a string, binary or array prefix, not {other}"
            )))
        }
    }
    out.truncate(out.len() - if matches!(prefix, Key::Array(_)) { 1 } else { 2 });
    Ok(out)
}

/// The smallest byte string greater than every string that starts with `prefix`.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return out;
        }
    }
    ABOVE_ALL_KEYS.to_vec()
}

pub(crate) fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_order_is_number_date_string_binary_array() {
        let keys =
            [Key::Number(1e300), Key::Date(-5.0), Key::String(String::new()), Key::Binary(vec![]), Key::Array(vec![])];
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1]);
            assert!(pair[0].encode().unwrap() < pair[1].encode().unwrap());
        }
    }

    #[test]
    fn every_integer_taken_is_given_back_as_an_integer() {
        for text in ["3", "9007199254740992", "-9007199254740992", "1152921504606846976", "18446744073709549568"] {
            let given: Value = serde_json::from_str(text).unwrap();
            assert_eq!(Key::from_json(&given).unwrap().to_json(), given, "{text}");
        }
        assert_eq!(Key::Number(3.5).to_json(), serde_json::json!(3.5));
        assert_eq!(Key::Number(1e300).to_json(), serde_json::json!(1e300));
    }

    #[test]
    fn negative_zero_equals_zero() {
        assert_eq!(Key::Number(-0.0).encode().unwrap(), Key::Number(0.0).encode().unwrap());
    }

    #[test]
    fn string_prefix_is_byte_prefix_of_its_extensions() {
        let p = encode_prefix(&Key::from("ab")).unwrap();
        assert!(Key::from("ab").encode().unwrap().starts_with(&p));
        assert!(Key::from("ab\0c").encode().unwrap().starts_with(&p));
        assert!(!Key::from("a").encode().unwrap().starts_with(&p));
    }
}
