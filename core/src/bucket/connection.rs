//! Where a bucket is and how to talk to it: endpoint, addressing, region, credentials,
//! timeouts, retries, TLS. Nothing here says what a store keeps in it (`replica::StorePolicy`).

use std::time::Duration;

use serde::Deserialize;

use super::ListVersion;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addressing {
    /// `{endpoint}/{bucket}/{key}`.
    Path,
    /// `{scheme}://{bucket}.{host}/{key}`.
    Virtual,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

/// Where a store's objects live.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    /// `http(s)://host[:port]` or `file://<directory>`.
    pub endpoint: String,
    pub bucket: Option<String>,
    pub prefix: String,
}

/// How to reach a store's bucket, checked and with defaults filled in.
#[derive(Debug, Clone)]
pub struct Connection {
    pub location: Location,
    /// A plain HTTP server (the rest format): one resource per record, POST for new records,
    /// no virtual-host addressing.
    pub rest: bool,
    pub addressing: Addressing,
    pub region: String,
    pub metadata_prefix: String,
    pub credentials: Option<Credentials>,
    /// Sending unsigned because no credentials were found, not because `anonymous` asked: a
    /// 401 or 403 then says so, and where they were looked for.
    pub credentials_not_found: bool,
    pub timeout: Duration,
    pub retries: u32,
    pub retry_base: Duration,
    pub concurrency: usize,
    pub list_version: ListVersion,
    pub list_metadata: bool,
    /// Whether the server honours If-Match / If-None-Match on PUT, when the block says so;
    /// otherwise the first conditional write probes it.
    pub conditional_writes: Option<bool>,
    pub max_object_bytes: u64,
    /// Accept any certificate (a test server's, say). Off unless asked for.
    pub insecure_tls: bool,
    /// Trust the certificate authorities in this PEM file instead of the built-in roots.
    pub ca_file: Option<String>,
}
