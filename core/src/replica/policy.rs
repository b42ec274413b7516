//! The store's side of a `Sync` block: what is kept and how, whatever bucket holds it (where
//! the bucket is and how to reach it is the bucket's `Connection`). The replica's queueing of
//! writes and the read policy follow it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
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
}

#[derive(Debug, Clone, PartialEq)]
pub enum LayoutSegment {
    Field(String),
    Literal(String),
}

impl StorePolicy {
    /// The record's fields named in `Options.metadata`, as metadata headers.
    pub fn metadata_of(&self, value: &Value) -> BTreeMap<String, String> {
        self.metadata_fields
            .iter()
            .filter_map(|path| {
                let text = match crate::keypath::lookup(value, path)? {
                    Value::String(s) => s.clone(),
                    v @ (Value::Number(_) | Value::Bool(_)) => v.to_string(),
                    _ => return None,
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
