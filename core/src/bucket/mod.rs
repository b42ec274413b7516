//! Everything that talks to a bucket, and knows no database: what the sync layer needs of a
//! bucket, whatever holds it — an S3-compatible server over HTTP (`http.rs`) or a local
//! directory (`local.rs`) — where it is (`connection.rs`) and what each request cost
//! (`accounting.rs`). Object keys here are full keys, prefix included.

pub mod accounting;
pub mod connection;
mod dirwalk;
mod http;
mod listing;
mod local;
mod mime_words;
pub(crate) mod profile;
mod record;
mod sign;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use md5::{Digest, Md5};

pub use accounting::{Accounting, Stats};
pub use connection::{Addressing, Connection, Credentials, Location};

use crate::error::{Error, Result};
use crate::token::Token;

/// A bucket for a connection: a directory for `file://` endpoints, HTTP otherwise.
pub fn open_bucket(connection: &Connection, accounting: Arc<Accounting>) -> Result<Arc<dyn Bucket>> {
    match connection.location.endpoint.strip_prefix("file://") {
        Some(dir) => Ok(Arc::new(local::LocalBucket::open(
            Path::new(dir),
            connection.location.bucket.as_deref().unwrap_or("default"),
            connection.max_object_bytes,
            accounting,
        )?)),
        None => Ok(Arc::new(http::HttpBucket::new(connection.clone(), accounting)?)),
    }
}

/// Custom metadata of an object, by lower-case name without the header prefix.
pub type Metadata = BTreeMap<String, String>;

/// An object as a listing (or a HEAD) describes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectInfo {
    pub key: String,
    pub etag: String,
    /// ISO 8601, as in S3 listings.
    pub last_modified: String,
    pub size: u64,
    /// Only where the server offers metadata in listings (MinIO's `metadata=true`).
    pub metadata: Option<Metadata>,
}

/// An object's body and what came with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub body: Vec<u8>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub metadata: Metadata,
}

/// The answer to a (conditional) GET.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    Found(Object),
    /// 304: the cached copy is current.
    NotModified,
    /// 404: there is no such object.
    Missing,
    /// The object is larger than `Options.maxObjectBytes` (its body was not read past it).
    TooLarge {
        etag: Option<String>,
        limit: u64,
    },
}

/// What the caller already holds, for a conditional GET.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validators {
    pub etag: Option<String>,
    /// An HTTP date, used when there is no etag.
    pub last_modified: Option<String>,
}

/// What a write must find in the bucket. A failed condition is `Error::Remote` with status 412.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PutMode {
    /// Whatever is there: no condition.
    #[default]
    Overwrite,
    /// No object (`If-None-Match: *`).
    Create,
    /// The object at this version, its etag (`If-Match`).
    Update(String),
}

/// How to write an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PutOptions {
    pub mode: PutMode,
    /// Sent as metadata headers.
    pub metadata: Metadata,
    /// A record the application added (not put): a plain HTTP server (the rest format) is sent
    /// it as POST.
    pub new_record: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListVersion {
    /// `marker` / `NextMarker`.
    V1,
    /// `start-after` / continuation tokens.
    #[default]
    V2,
}

/// One page's worth of a listing request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListRequest {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// At most this many keys and common prefixes (the server caps it at 1000).
    pub max_keys: Option<u32>,
    /// Keys after this one (V2 `start-after`; V1 `marker` on the first page).
    pub start_after: Option<String>,
    pub version: ListVersion,
    /// Where the previous page left off: a V2 continuation token or a V1 marker.
    pub continuation: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    pub common_prefixes: Vec<String>,
    /// Set when the listing goes on: pass it as the next request's `continuation`.
    pub next: Option<String>,
}

pub trait Bucket: Send + Sync {
    /// Where the bucket is, for messages.
    fn describe(&self) -> String;
    fn get(&self, key: &str, validators: &Validators, token: &Token) -> Result<Fetched>;
    /// The object's description and metadata, or `None` when there is none.
    fn head(&self, key: &str, token: &Token) -> Result<Option<(ObjectInfo, Metadata)>>;
    /// Writes an object; returns its new etag when the server tells it.
    fn put(&self, key: &str, body: &[u8], options: &PutOptions, token: &Token) -> Result<Option<String>>;
    /// Removes an object; removing one that is not there is not an error.
    fn delete(&self, key: &str, token: &Token) -> Result<()>;
    /// Removes the folders directly under `prefix` whose names (after it) sort before
    /// `before`, with everything in them; returns how many went. Only where nothing else
    /// expires objects (a directory): an S3 bucket keeps its change log small with a lifecycle
    /// rule, and does nothing here.
    fn expire_before(&self, _prefix: &str, _before: &str) -> Result<u64> {
        Ok(0)
    }
    /// The bucket's clock minus this machine's, in ms, as its answers last said (`None` until
    /// one said; a directory shares this machine's clock).
    fn clock_offset_ms(&self) -> Option<i64> {
        None
    }
    fn list_page(&self, request: &ListRequest, token: &Token) -> Result<ListPage>;
}

/// Every page of a listing, common prefixes deduplicated (some servers repeat one across
/// pages), objects in the server's order.
pub fn list_all(bucket: &dyn Bucket, request: &ListRequest, token: &Token) -> Result<ListPage> {
    let mut all = ListPage::default();
    let mut seen_prefixes = HashSet::new();
    let mut request = request.clone();
    loop {
        let page = bucket.list_page(&request, token)?;
        all.objects.extend(page.objects);
        for prefix in page.common_prefixes {
            if seen_prefixes.insert(prefix.clone()) {
                all.common_prefixes.push(prefix);
            }
        }
        match page.next {
            None => return Ok(all),
            Some(next) if request.continuation.as_ref() == Some(&next) => {
                return Err(Error::RemoteData {
                    what: format!("listing {} under {:?}", bucket.describe(), request.prefix),
                    reason: format!("the listing did not move past {next:?}"),
                })
            }
            Some(next) => request.continuation = Some(next),
        }
    }
}

/// The etag S3 gives a single-part upload of `body`: its MD5, quoted.
pub fn etag_of(body: &[u8]) -> String {
    format!("\"{}\"", Md5::digest(body).iter().map(|b| format!("{b:02x}")).collect::<String>())
}
