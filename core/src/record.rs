//! A record as a write hands it over: JSON text, a JSON tree, or both. A record is stored and
//! sent as compact text, and becomes a tree only where its store needs one (a key path, an
//! index, a change listener): a large record written as text (a results run of 200,000
//! tests) never becomes the tree that would take ten times its size.

use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;

use crate::error::{Error, Result};

/// A record to write. Built from a [`Value`], or from JSON text with [`Record::from_json`].
#[derive(Debug, Clone)]
pub struct Record {
    /// Compact JSON text; `None` until asked for, or after the tree changed.
    text: Option<Box<RawValue>>,
    /// The tree; `None` until a store needs one.
    tree: Option<Value>,
}

impl Record {
    /// A record from JSON text; `what` names the argument in the error when it is not JSON.
    pub fn from_json(what: &str, text: String) -> Result<Record> {
        let raw = RawValue::from_string(text).map_err(|e| bad_json(what, e))?;
        Record::from_raw(what, raw)
    }

    /// A record from JSON text already split out of a larger text (an element of a batch).
    /// It must read as a tree does (no deeper than 128 and no number out of range), so that
    /// nothing is stored that cannot be read back; whitespace between tokens is dropped, so a
    /// record written as text is stored as its tree would write it but for the spelling of
    /// its strings and numbers.
    pub fn from_raw(what: &str, raw: Box<RawValue>) -> Result<Record> {
        readable(raw.get()).map_err(|e| bad_json(what, e))?;
        let text = match compact(raw.get()) {
            None => raw,
            Some(compacted) => RawValue::from_string(compacted).expect("JSON without its spaces is JSON"),
        };
        Ok(Record { text: Some(text), tree: None })
    }

    /// A record written from any serde value straight to compact text: no tree is made (a
    /// results run of 200,000 tests goes from its own structs to the text it is stored as).
    pub fn of(value: &impl serde::Serialize) -> Result<Record> {
        let text = to_raw_value(value).map_err(|e| bad_json("a record", e))?;
        Ok(Record { text: Some(text), tree: None })
    }

    /// The record's tree, read from its text the first time.
    pub fn tree(&mut self) -> Result<&Value> {
        self.fill_tree()?;
        Ok(self.tree.as_ref().expect("filled"))
    }

    /// The tree, to change: the text, if any, is dropped (it would be stale).
    pub fn tree_mut(&mut self) -> Result<&mut Value> {
        self.fill_tree()?;
        self.text = None;
        Ok(self.tree.as_mut().expect("filled"))
    }

    /// The record as compact JSON text, written from its tree the first time.
    pub fn text(&mut self) -> &RawValue {
        if self.text.is_none() {
            let tree = self.tree.as_ref().expect("a record holds a text or a tree");
            // A tree's keys are strings and its numbers finite: it always writes.
            self.text = Some(to_raw_value(tree).expect("a JSON tree serialises"));
        }
        self.text.as_deref().expect("filled")
    }

    pub fn into_tree(mut self) -> Result<Value> {
        self.fill_tree()?;
        Ok(self.tree.expect("filled"))
    }

    fn fill_tree(&mut self) -> Result<()> {
        if self.tree.is_none() {
            let text = self.text.as_ref().expect("a record holds a text or a tree");
            self.tree = Some(serde_json::from_str(text.get()).map_err(|e| bad_json("a record", e))?);
        }
        Ok(())
    }
}

impl From<Value> for Record {
    fn from(tree: Value) -> Record {
        Record { text: None, tree: Some(tree) }
    }
}

/// A stored record's JSON text, checked when the record was written: the outbox hands it back
/// without checking it again (a results run of 200,000 tests is 12 MB to scan). It is
/// written into JSON as the JSON it is (which parses it: only refused writes are written so).
#[derive(Clone, PartialEq, Eq)]
pub struct RecordText(Box<str>);

impl RecordText {
    /// Text this database stored as a record (`Record::text`'s, read back).
    pub(crate) fn stored(text: String) -> RecordText {
        RecordText(text.into_boxed_str())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The record as a tree (`None` should the text not be JSON after all).
    pub fn to_value(&self) -> Option<Value> {
        serde_json::from_str(&self.0).ok()
    }
}

impl std::fmt::Debug for RecordText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordText({})", crate::error::clip(&self.0))
    }
}

impl serde::Serialize for RecordText {
    fn serialize<S: serde::Serializer>(&self, out: S) -> std::result::Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(out)
    }
}

impl<'de> serde::Deserialize<'de> for RecordText {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> std::result::Result<RecordText, D::Error> {
        let raw = Box::<RawValue>::deserialize(input)?;
        Ok(RecordText(raw.get().into()))
    }
}

/// Reads `text` as a tree would be read, building none: serde_json's depth limit and its range
/// of numbers hold for text records as for values.
fn readable(text: &str) -> serde_json::Result<()> {
    struct Walk;
    impl<'de> serde::de::Visitor<'de> for Walk {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
            while seq.next_element_seed(Walk)?.is_some() {}
            Ok(())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                map.next_value_seed(Walk)?;
            }
            Ok(())
        }
    }
    impl<'de> serde::de::DeserializeSeed<'de> for Walk {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, input: D) -> std::result::Result<(), D::Error> {
            input.deserialize_any(Walk)
        }
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    serde::de::DeserializeSeed::deserialize(Walk, &mut reader)?;
    reader.end()
}

fn bad_json(what: &str, e: serde_json::Error) -> Error {
    Error::BadJson { what: what.to_string(), reason: e.to_string() }
}

/// Checked JSON `text` without whitespace between its tokens (as serde_json writes it), or
/// `None` when it has none (the common case, which costs one scan). Valid JSON never puts two
/// scalars side by side, so dropping the spaces between tokens joins none.
fn compact(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut kept = |b: u8| match (in_string, escaped, b) {
        (true, true, _) => {
            escaped = false;
            true
        }
        (true, false, b'\\') => {
            escaped = true;
            true
        }
        (true, false, b'"') | (false, _, b'"') => {
            in_string = !in_string;
            true
        }
        (false, _, b' ' | b'\n' | b'\r' | b'\t') => false,
        _ => true,
    };
    let start = bytes.iter().position(|&b| !kept(b))?;
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..start]);
    out.extend(bytes[start + 1..].iter().copied().filter(|&b| kept(b)));
    // Only ASCII whitespace outside strings went: what is left is as UTF-8 as the input was.
    Some(String::from_utf8(out).expect("UTF-8 in, UTF-8 out"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_stored_compact_whichever_form_it_came_in() {
        let spaced = "{ \"a\" : [1, 2],\n\t\"b\": \"x y \\\" z\" }".to_string();
        let mut from_text = Record::from_json("value", spaced).unwrap();
        let mut from_tree = Record::from(json!({"a": [1, 2], "b": "x y \" z"}));
        assert_eq!(from_text.text().get(), r#"{"a":[1,2],"b":"x y \" z"}"#);
        assert_eq!(from_text.text().get(), from_tree.text().get());
        assert_eq!(from_text.tree().unwrap(), &json!({"a": [1, 2], "b": "x y \" z"}));
    }

    #[test]
    fn text_that_is_not_json_is_refused_by_its_name() {
        let e = Record::from_json("value_json", "{\"a\": }".into()).unwrap_err();
        assert!(e.to_string().contains("value_json"), "{e}");
        assert!(Record::from_json("v", "1 2".into()).is_err(), "two values are not one record");
        // What a tree could not hold is refused as text too: it could never be read back.
        assert!(Record::from_json("v", r#"{"x":1e400}"#.into()).is_err(), "a number out of range");
        assert!(Record::from_json("v", "[".repeat(200) + &"]".repeat(200)).is_err(), "deeper than 128");
        assert!(Record::from_json("v", "[".repeat(100) + &"]".repeat(100)).is_ok());
    }

    #[test]
    fn a_serde_value_becomes_text_without_a_tree() {
        #[derive(serde::Serialize)]
        struct Run {
            platform: &'static str,
            tests: Vec<u32>,
        }
        let mut record = Record::of(&Run { platform: "linux", tests: vec![1, 2] }).unwrap();
        assert!(record.tree.is_none());
        assert_eq!(record.text().get(), r#"{"platform":"linux","tests":[1,2]}"#);
    }

    #[test]
    fn a_changed_tree_writes_new_text() {
        let mut record = Record::from_json("v", "{\"a\":1}".into()).unwrap();
        record.tree_mut().unwrap()["id"] = json!(7);
        assert_eq!(record.text().get(), r#"{"a":1,"id":7}"#);
    }
}
