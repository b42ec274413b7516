//! The store's side of a `Sync` block: what is kept and how, whatever bucket holds it (where
//! the bucket is and how to reach it is the bucket's `Connection`). The replica's queueing of
//! writes and the read policy follow it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Format {
    /// A plain HTTP resource per record: GET/PUT/DELETE, POST to create; no listing.
    #[serde(rename = "rest")]
    Rest,
    /// One object per record, the record's JSON as the body.
    #[serde(rename = "objstore")]
    Objstore,
    /// One record per object describing it: `{name, etag, updated, size, metadata}`; read-only.
    #[serde(rename = "objstore-meta")]
    ObjstoreMeta,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prefetch {
    /// List the bucket: learn keys, etags and metadata.
    Meta,
    /// List, and fetch the bodies of objects not yet cached (or changed).
    Full,
}

/// How a synced store keeps its records.
#[derive(Debug, Clone)]
pub struct StorePolicy {
    pub format: Format,
    pub immutable: bool,
    pub prefetch: Option<Prefetch>,
    pub refractory: Duration,
    /// `{field}` segments of object names, split on `/`, that become metadata fields.
    pub key_layout: Option<Vec<LayoutSegment>>,
    /// Key paths of a record sent as metadata headers when it is written.
    pub metadata_fields: Vec<String>,
    /// Writes leave a marker in the change log, and refreshes read it (see `sync::changelog`).
    pub change_log: Option<ChangeLogConfig>,
    /// The bucket is a directory (`file://`): object names must be ones a file system holds.
    pub in_directory: bool,
    /// Where the objects live (format, endpoint, bucket, prefix), to tell when a migration
    /// moves them.
    pub objects_at: String,
}

/// A store's change log: where its markers are, and how often the whole prefix is listed
/// anyway (for writers that leave no markers).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeLogConfig {
    /// `{prefix}.objstore-changes/`.
    pub prefix: String,
    pub relist_every: Duration,
    /// How far back each read of the log starts: the clock skew between clients and the time
    /// a write takes to land, that the log tolerates.
    pub window: Duration,
    /// Where the store's checkpoints are, when it reads and writes them (see
    /// `sync::checkpoint`).
    pub checkpoints: Option<CheckpointConfig>,
}

/// A store's checkpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointConfig {
    /// `{prefix}.objstore-checkpoints/`.
    pub prefix: String,
    /// Each pair's first names its heads and tails hold (the heads a quarter of them, at most 8).
    pub heads_per_pair: usize,
    /// Names a range shard holds, about.
    pub range_objects: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LayoutSegment {
    Field(String),
    Literal(String),
}

impl StorePolicy {
    /// The record's fields named in `Options.metadata`, as metadata headers. Read from the
    /// record's JSON text: only the objects on each field's path are read, never the whole tree.
    pub fn metadata_of(&self, record: &str) -> BTreeMap<String, String> {
        if self.metadata_fields.is_empty() {
            return BTreeMap::new();
        }
        let tops: HashSet<&str> = self.metadata_fields.iter().filter_map(|path| path.split('.').next()).collect();
        let top = top_members(record, &tops);
        self.metadata_fields
            .iter()
            .filter_map(|path| {
                let mut segments = path.split('.');
                let mut node = *top.get(segments.next()?)?;
                for segment in segments {
                    node = *top_members(node.get(), &HashSet::from([segment])).get(segment)?;
                }
                // Only a scalar is a header: nothing larger is read into a tree.
                let text = match node.get().as_bytes().first()? {
                    b'{' | b'[' | b'n' => return None,
                    _ => match serde_json::from_str(node.get()).ok()? {
                        Value::String(s) => s,
                        scalar => scalar.to_string(),
                    },
                };
                Some((path.replace('.', "-").to_ascii_lowercase(), text))
            })
            .collect()
    }

    /// The fields an object's name carries under the key layout; empty when it does not fit.
    pub fn layout_fields(&self, id: &str) -> Vec<(String, String)> {
        let Some(layout) = &self.key_layout else {
            return Vec::new();
        };
        let parts: Vec<&str> = id.split('/').collect();
        if parts.len() != layout.len() {
            return Vec::new();
        }
        let mut fields = Vec::new();
        for (segment, part) in layout.iter().zip(parts) {
            match segment {
                LayoutSegment::Field(name) => fields.push((name.clone(), part.to_string())),
                LayoutSegment::Literal(text) if text == part => {}
                LayoutSegment::Literal(_) => return Vec::new(),
            }
        }
        fields
    }
}

/// `"{platform}/{browser}/{reverse_timestamp}"` → field, field, field.
pub(crate) fn parse_layout(layout: &str) -> std::result::Result<Vec<LayoutSegment>, String> {
    layout
        .split('/')
        .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some("") => Err(format!("Options.keyLayout {layout:?} has an empty {{}} field")),
            Some(name) => Ok(LayoutSegment::Field(name.to_string())),
            None if segment.contains(['{', '}']) => {
                Err(format!("Options.keyLayout {layout:?}: a field must fill a whole segment, not {segment:?}"))
            }
            None => Ok(LayoutSegment::Literal(segment.to_string())),
        })
        .collect()
}

/// The members `wanted` of a record (or a member) that is an object, as text; none when it is
/// no object. It is read only as far as the last of them: a results run names its labels first, then 200,000 tests that a read
/// to its end would scan for nothing.
fn top_members<'r>(record: &'r str, wanted: &HashSet<&str>) -> HashMap<String, &'r RawValue> {
    struct Wanted<'w, 'r> {
        wanted: &'w HashSet<&'w str>,
        found: &'w mut HashMap<String, &'r RawValue>,
    }
    impl<'de: 'r, 'r> serde::de::Visitor<'de> for Wanted<'_, 'r> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if !self.wanted.contains(key.as_ref()) {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
                self.found.insert(key.into_owned(), map.next_value::<&'de RawValue>()?);
                if self.found.len() == self.wanted.len() {
                    // All found: the rest is never read (the error only stops the reading).
                    return Err(serde::de::Error::custom("found"));
                }
            }
            Ok(())
        }
    }
    let mut found = HashMap::new();
    let mut reader = serde_json::Deserializer::from_str(record);
    let _ = serde::Deserializer::deserialize_map(&mut reader, Wanted { wanted, found: &mut found });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(fields: &[&str]) -> StorePolicy {
        StorePolicy {
            format: Format::Objstore,
            immutable: false,
            prefetch: None,
            refractory: Duration::ZERO,
            key_layout: None,
            metadata_fields: fields.iter().map(|f| f.to_string()).collect(),
            change_log: None,
            in_directory: false,
            objects_at: String::new(),
        }
    }

    /// Headers come from the record's text: scalars only, nested paths too, and a field after
    /// a large member is found as well as one before it.
    #[test]
    fn metadata_is_read_from_the_text() {
        let record = r#"{"platform":"linux","results":{"tests":[1,2,3],"n":7},"build":{"cores":2,"tags":["a"]},"ok":true,"none":null}"#;
        let got = policy(&["platform", "build.cores", "build.tags", "ok", "none", "missing", "results.n"])
            .metadata_of(record);
        let want: BTreeMap<String, String> =
            [("platform", "linux"), ("build-cores", "2"), ("ok", "true"), ("results-n", "7")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(got, want);
        assert!(policy(&["platform"]).metadata_of("[1,2]").is_empty(), "a record that is no object has none");
        assert!(policy(&[]).metadata_of(record).is_empty());
    }
}
