//! The one error type of the engine. Every variant names what was wrong (store, index, key, key
//! path, transaction) so that a message read in a C, Python or Node log points at the cause.

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A stable classification of [`Error`], for mapping onto C status codes and binding exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    NotFound,
    InvalidKey,
    InvalidArgument,
    Constraint,
    ReadOnly,
    TransactionInactive,
    Schema,
    Closed,
    Cancelled,
    Storage,
    /// The bucket holds a different version than the write assumed (HTTP 412).
    Conflict,
    /// The bucket could not be reached: connection refused or reset, timeouts, 5xx after retries.
    Network,
    /// The bucket refused a request (4xx other than 412).
    Remote,
    /// The bucket answered with something unusable: malformed XML, non-JSON, oversized.
    RemoteData,
    Internal,
    /// An explicit transaction is open and the request is not part of it.
    Busy,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown store {}{}", clip(.store), known_list(.known))]
    UnknownStore { store: String, known: Vec<String> },

    #[error("unknown index {} on store {}{}", clip(.index), clip(.store), known_list(.known))]
    UnknownIndex { store: String, index: String, known: Vec<String> },

    #[error("invalid key{}: {reason}", key_context(.store, .key_path))]
    InvalidKey { store: Option<String>, key_path: Option<String>, reason: String },

    #[error("record for store {store:?} has no usable key at key path {key_path:?} and the store does not generate keys (add the field, or give the store autoIncrement)")]
    MissingKeyPath { store: String, key_path: String },

    #[error("store {store:?} has {what}: {reason}")]
    KeyConflict { store: String, what: &'static str, reason: String },

    #[error("bad JSON in {what}: {reason}")]
    BadJson { what: String, reason: String },

    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    #[error("constraint error in store {store:?}: {detail}")]
    Constraint { store: String, detail: String },

    #[error("cannot write to store {store:?} in a readonly transaction")]
    ReadOnly { store: String },

    #[error("store {store:?} is not in the scope of this transaction (scope: {scope:?})")]
    NotInScope { store: String, scope: Vec<String> },

    #[error("transaction {id} is not active: {reason}")]
    TransactionInactive { id: u64, reason: String },

    #[error("invalid schema: {0}")]
    InvalidSchema(String),

    #[error("schema of database {database:?} changed without a higher version (stored version {stored}, given {given}): {change}; raise the version to migrate")]
    SchemaChanged { database: String, stored: u64, given: u64, change: String },

    #[error("database {database:?} is at version {stored}, newer than the schema's version {given}; give version {stored} or higher, or no version")]
    VersionTooLow { database: String, stored: u64, given: u64 },

    #[error("database {database:?} did not open: {reason}")]
    NotOpen { database: String, code: ErrorCode, reason: String },

    /// A transaction body that gave up with an outcome of its own (a C body's status).
    #[error("{message}")]
    Aborted { code: ErrorCode, message: String },

    #[error("database {0:?} is closed")]
    Closed(String),

    #[error("request cancelled: {0}")]
    Cancelled(String),

    #[error("database {database:?} is busy: transaction {transaction} over {stores:?} is open, and a request outside it cannot run until it commits or aborts (make the request through the transaction, or after it)")]
    Busy { database: String, transaction: u64, stores: Vec<String> },

    #[error("storage error in {context}: {source}")]
    Storage { context: String, source: rusqlite::Error },

    #[error("database file {path:?} is open in another process (or open twice in this one): a database file has one process at a time, since each keeps caches of its catalog and key generators; close it there first")]
    InUse { path: String },

    #[error("cannot open database file {path:?}: the disk holding it is full ({available} bytes free); free some space and open it again")]
    DiskFull { path: String, available: u64 },

    #[error("cannot lock database file {path:?}: {reason}")]
    Lock { path: String, reason: String },

    #[error("conflict in store {store:?} on {key:?}: {detail}; nothing was overwritten")]
    Conflict { store: String, key: String, detail: String },

    #[error("cannot reach the bucket for {what}: {reason}")]
    Unreachable { what: String, reason: String },

    #[error("the bucket refused {what}: HTTP {status}{}", detail_suffix(.detail))]
    Remote { what: String, status: u16, detail: String },

    #[error("bad data from the bucket for {what}: {reason}")]
    RemoteData { what: String, reason: String },

    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::UnknownStore { .. } | Error::UnknownIndex { .. } => ErrorCode::NotFound,
            Error::InvalidKey { .. } | Error::MissingKeyPath { .. } | Error::KeyConflict { .. } => {
                ErrorCode::InvalidKey
            }
            Error::BadJson { .. } | Error::InvalidArgument(_) | Error::NotInScope { .. } => ErrorCode::InvalidArgument,
            Error::Constraint { .. } => ErrorCode::Constraint,
            Error::ReadOnly { .. } => ErrorCode::ReadOnly,
            Error::TransactionInactive { .. } => ErrorCode::TransactionInactive,
            Error::InvalidSchema(_) | Error::SchemaChanged { .. } | Error::VersionTooLow { .. } => ErrorCode::Schema,
            Error::NotOpen { code, .. } | Error::Aborted { code, .. } => *code,
            Error::Closed(_) => ErrorCode::Closed,
            Error::Cancelled(_) => ErrorCode::Cancelled,
            Error::Busy { .. } => ErrorCode::Busy,
            Error::Storage { .. } | Error::InUse { .. } | Error::DiskFull { .. } | Error::Lock { .. } => {
                ErrorCode::Storage
            }
            Error::Conflict { .. } => ErrorCode::Conflict,
            Error::Unreachable { .. } => ErrorCode::Network,
            Error::Remote { status: 412, .. } => ErrorCode::Conflict,
            Error::Remote { status, .. } if *status == 429 || *status >= 500 => ErrorCode::Network,
            Error::Remote { .. } => ErrorCode::Remote,
            Error::RemoteData { .. } => ErrorCode::RemoteData,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// Whether the bucket could not be reached or was unavailable (as opposed to answering
    /// no): writes that fail this way wait in the outbox.
    pub fn is_offline(&self) -> bool {
        match self {
            Error::Unreachable { .. } => true,
            Error::Remote { status, .. } => *status == 429 || (*status >= 500 && *status != 501),
            _ => false,
        }
    }

    /// Whether the bucket refused this one write for what it is (a failed condition, a bad
    /// body), rather than refusing every request (credentials, a missing bucket, a redirect).
    /// A 400 is one of those unless its S3 code says it is about every request (the region,
    /// the signature, the token): such a write waits, like one refused with a wrong secret's 403.
    pub fn refuses_the_write(&self) -> bool {
        match self {
            Error::Remote { status: 400, detail, .. } => {
                let code = detail.split(':').next().unwrap_or_default();
                !BUCKET_WIDE_400.contains(&code)
            }
            Error::Remote { status, .. } => matches!(status, 411..=415),
            _ => false,
        }
    }

    pub(crate) fn invalid_key(reason: impl Into<String>) -> Self {
        Error::InvalidKey { store: None, key_path: None, reason: reason.into() }
    }

    /// Adds the store (and key path) to an invalid-key error raised where they were not known.
    pub(crate) fn in_store(self, store_name: &str, path: Option<&str>) -> Self {
        match self {
            Error::InvalidKey { store: None, key_path, reason } => Error::InvalidKey {
                store: Some(store_name.to_string()),
                key_path: key_path.or_else(|| path.map(str::to_string)),
                reason,
            },
            other => other,
        }
    }
}

/// S3 codes of a 400 that every request to the bucket would get, whatever it carries.
const BUCKET_WIDE_400: &[&str] = &[
    "AuthorizationHeaderMalformed",
    "AuthorizationQueryParametersError",
    "ExpiredToken",
    "IllegalLocationConstraintException",
    "IncompleteSignature",
    "InvalidBucketName",
    "InvalidRegion",
    "InvalidRequest",
    "InvalidToken",
    "MissingSecurityHeader",
    "TokenRefreshRequired",
];

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        // Quoted, so that a name holding a comma reads as one name.
        let names: Vec<String> = known.iter().map(|k| format!("{k:?}")).collect();
        format!(" (known: {})", names.join(", "))
    }
}

/// An input echoed in a message: quoted, and cut to its first 60 characters with its length
/// when long, so that a huge input does not come back whole.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(60) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes)", &text[..end], text.len()),
    }
}

fn key_context(store: &Option<String>, key_path: &Option<String>) -> String {
    match (store, key_path) {
        (Some(s), Some(p)) => format!(" in store {s:?} at key path {p:?}"),
        (Some(s), None) => format!(" in store {s:?}"),
        (None, Some(p)) => format!(" at key path {p:?}"),
        (None, None) => String::new(),
    }
}
