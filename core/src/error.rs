//! The one error type of the engine. Every variant names what was wrong (store, index, key, key
//! path, transaction) so that a message read in a C, Python or Node log points at the cause.

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Declares the error codes once: each code's C status number, its stable name (the C
/// `OBJSTORE_STATUS_<name>` and the JS `error.code`), its Python exception class and what it
/// means. The C layer, the Python module and the Node module derive theirs from this table.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])+ $code:ident = $status:literal, $name:literal, $python:literal;)+) => {
        /// A stable classification of [`Error`], for mapping onto C status codes and binding
        /// exceptions.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])+ $code,)+
        }

        impl ErrorCode {
            /// Every code, in status order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$code,)+];

            /// The C status number (`objstore_status`).
            pub fn status(self) -> i32 {
                match self {
                    $(ErrorCode::$code => $status,)+
                }
            }

            /// The stable name: `OBJSTORE_STATUS_<name>` in C, `error.code` in JS.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => $name,)+
                }
            }

            /// The Python exception class (a subclass of `ObjstoreError`).
            pub fn python_class(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => $python,)+
                }
            }

            /// What the code means, in one line.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => concat!($($doc),+).trim_ascii(),)+
                }
            }
        }
    };
}

error_codes! {
    /// A store, index or record that does not exist.
    NotFound = 1, "NOT_FOUND", "NotFoundError";
    /// A value that is not a valid key, or a record without its key.
    InvalidKey = 2, "INVALID_KEY", "InvalidKeyError";
    /// An argument the call cannot use: NULL, invalid UTF-8 or JSON, an unknown option or value.
    InvalidArgument = 3, "INVALID_ARGUMENT", "InvalidArgumentError";
    /// A duplicate key or a unique-index clash; nothing was written.
    Constraint = 4, "CONSTRAINT", "ConstraintError";
    /// A write in a read-only transaction or cursor.
    ReadOnly = 5, "READ_ONLY", "ReadOnlyError";
    /// A request in a transaction that has ended (committed, aborted, timed out).
    TransactionInactive = 6, "TRANSACTION_INACTIVE", "TransactionInactiveError";
    /// A schema or migration that cannot be applied.
    Schema = 7, "SCHEMA", "SchemaError";
    /// A request to a closed database.
    Closed = 8, "CLOSED", "ClosedError";
    /// A request cancelled before it completed, or whose database closed first.
    Cancelled = 9, "CANCELLED", "RequestCancelledError";
    /// The local file could not be read or written (SQLite failed).
    Storage = 10, "STORAGE", "StorageError";
    /// A bug in objstore-db (a caught panic): please report it.
    Internal = 11, "INTERNAL", "InternalError";
    /// The bucket holds another version than the write assumed (HTTP 412); nothing was overwritten.
    Conflict = 12, "CONFLICT", "ConflictError";
    /// The bucket could not be reached: refused, reset, timed out, 5xx after retries.
    Network = 13, "NETWORK", "NetworkError";
    /// The bucket refused a request (4xx other than 412).
    Remote = 14, "REMOTE", "RemoteError";
    /// The bucket answered with something unusable: malformed XML, not JSON, oversized.
    RemoteData = 15, "REMOTE_DATA", "RemoteDataError";
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown store {}{}", clip(.store), known_list(.known))]
    UnknownStore { store: String, known: Vec<String> },

    #[error("unknown index {} on store {}{}", clip(.index), clip(.store), known_list(.known))]
    UnknownIndex { store: String, index: String, known: Vec<String> },

    #[error("invalid key{}: {reason}", key_context(.store, .key_path))]
    InvalidKey { store: Option<String>, key_path: Option<String>, reason: String },

    #[error("record for store {} has no usable key at key path {} and the store does not generate keys (add the field, or give the store autoIncrement)", clip(.store), clip(.key_path))]
    MissingKeyPath { store: String, key_path: String },

    #[error("store {} has {what}: {reason}", clip(.store))]
    KeyConflict { store: String, what: &'static str, reason: String },

    #[error("bad JSON in {what}: {reason}")]
    BadJson { what: String, reason: String },

    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    #[error("constraint error in store {}: {detail}", clip(.store))]
    Constraint { store: String, detail: String },

    #[error("cannot write to store {} in a readonly transaction", clip(.store))]
    ReadOnly { store: String },

    #[error("store {} is not in the scope of this transaction (scope: {})", clip(.store), clip_list(.scope))]
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

    /// A transaction body that gave up with an outcome of its own: `status`, the number a C
    /// body returned (its code's status elsewhere), which may be no status at all.
    #[error("{message}")]
    Aborted { code: ErrorCode, status: i32, message: String },

    #[error("database {0:?} is closed")]
    Closed(String),

    #[error("request cancelled: {0}")]
    Cancelled(String),

    #[error("storage error in {context}: {source}")]
    Storage { context: String, source: rusqlite::Error },

    #[error("database file {path:?} is open in another process (or open twice in this one): a database file has one process at a time, since each keeps caches of its catalog and key generators; close it there first")]
    InUse { path: String },

    #[error("cannot open database file {path:?}: the disk holding it is full ({available} bytes free); free some space and open it again")]
    DiskFull { path: String, available: u64 },

    #[error("cannot lock database file {path:?}: {reason}")]
    Lock { path: String, reason: String },

    #[error("conflict in store {} on {}: {detail}; nothing was overwritten", clip(.store), clip(.key))]
    Conflict { store: String, key: String, detail: String },

    #[error("cannot reach the bucket for {what}: {reason}")]
    Unreachable { what: String, reason: String },

    #[error("the bucket refused {what}: HTTP {status}{}", detail_suffix(.detail))]
    Remote { what: String, status: u16, detail: String },

    #[error("bad data from the bucket for {what}: {reason}")]
    RemoteData { what: String, reason: String },

    #[error("internal error: {0}")]
    Internal(String),

    /// A batch's write failed: which record of the batch (from 0), under which key if it had
    /// one, and why.
    #[error("record {position} of the batch of {count}{}: {source}", batch_key(.key))]
    InBatch { position: usize, count: usize, key: Option<String>, source: Box<Error> },
}

fn batch_key(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!(" (key {k})")).unwrap_or_default()
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
            Error::InBatch { source, .. } => source.code(),
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

/// An input echoed in a message: quoted as JSON quotes a string (a control character is
/// `\u0001` in every language's message, not Rust's `\u{1}`), and cut to its first 60
/// characters with its length when long, so that a huge input does not come back whole.
pub fn clip(text: &str) -> String {
    cut(text, 60, |text| serde_json::to_string(text).expect("a string serialises"))
}

/// A JSON value echoed in a message: its text, cut as [`clip`] cuts.
pub fn clip_json(value: &serde_json::Value) -> String {
    cut(&value.to_string(), 60, str::to_string)
}

/// Another library's error text, which may quote the input (a SQL parser's): cut past 200
/// characters, with its length.
pub fn clip_message(text: &str) -> String {
    cut(text, 200, str::to_string)
}

/// `text` as `show` writes it, or past `chars` characters its start so written, with its length.
fn cut(text: &str, chars: usize, show: impl Fn(&str) -> String) -> String {
    match text.char_indices().nth(chars) {
        None => show(text),
        Some((end, _)) => format!("{}… ({} bytes)", show(&text[..end]), text.len()),
    }
}

/// A list of names, each cut as [`clip`] does, and at most ten of them.
fn clip_list(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(10).map(|n| clip(n)).collect();
    match names.len() {
        n if n > 10 => format!("[{}, … ({n} in all)]", shown.join(", ")),
        _ => format!("[{}]", shown.join(", ")),
    }
}

fn key_context(store: &Option<String>, key_path: &Option<String>) -> String {
    match (store, key_path) {
        (Some(s), Some(p)) => format!(" in store {} at key path {}", clip(s), clip(p)),
        (Some(s), None) => format!(" in store {}", clip(s)),
        (None, Some(p)) => format!(" at key path {}", clip(p)),
        (None, None) => String::new(),
    }
}

/// A JSON reader's complaint about `what`, in the words of the schema rather than of the
/// library that read it: "expected u64" becomes "a whole number is expected", `struct
/// StoreSchema` "a store (an object)", "unknown variant" "unknown value", and so on.
pub(crate) fn in_schema_words(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let (said, place) = match message.rsplit_once(" at line ") {
        Some((said, place)) => (said, format!(" (at line {place})")),
        None => (message.as_str(), String::new()),
    };
    let quoted = |name: &str| format!("\"{}\"", name.trim_matches('`'));
    let known = |list: &str| list.trim_start_matches("one of ").replace('`', "\"");
    let words = if let Some(rest) = said.strip_prefix("invalid type: ").or_else(|| said.strip_prefix("invalid value: "))
    {
        match rest.split_once(", expected ") {
            Some((found, expected)) => {
                format!("{} where {} is expected", found_in_words(found), expected_in_words(expected))
            }
            None => rest.to_string(),
        }
    } else if let Some(rest) = said.strip_prefix("unknown variant ") {
        let (value, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        format!("unknown value {} (known: {})", quoted(value), known(expected))
    } else if let Some(rest) = said.strip_prefix("unknown field ") {
        let (field, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        match expected {
            "" | "nothing" => format!("unknown field {}", quoted(field)),
            expected => format!("unknown field {} (known: {})", quoted(field), known(expected)),
        }
    } else if let Some(field) = said.strip_prefix("missing field ") {
        format!("the field {} is missing", quoted(field))
    } else if let Some(field) = said.strip_prefix("duplicate field ") {
        format!("the field {} is given twice", quoted(field))
    } else {
        said.to_string()
    };
    format!("{words}{place}")
}

/// What serde found, as the schema's reader says it.
fn found_in_words(found: &str) -> String {
    let strip = |prefix: &str| found.strip_prefix(prefix).map(|v| v.trim_matches('`').to_string());
    match found {
        "map" => "an object".into(),
        "sequence" => "a list".into(),
        "null" | "unit value" => "null".into(),
        _ => strip("integer ")
            .or_else(|| strip("floating point "))
            .or_else(|| strip("boolean "))
            .or_else(|| found.strip_prefix("string ").map(|s| format!("the text {s}")))
            .unwrap_or_else(|| found.to_string()),
    }
}

/// What serde expected, as the schema's reader says it.
fn expected_in_words(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => "a whole number".into(),
        "f64" | "f32" => "a number".into(),
        "a sequence" => "a list".into(),
        "a map" => "an object".into(),
        "struct Schema" => "a schema (an object with \"stores\")".into(),
        "struct StoreSchema" => "a store (an object with \"name\")".into(),
        "struct IndexSchema" => "an index (an object with \"keyPath\")".into(),
        "struct SyncBlock" => "a Sync block (an object with \"format\" and \"Options\")".into(),
        "struct OptionsBlock" => "Sync options (an object)".into(),
        other => {
            other.strip_prefix("struct ").map_or_else(|| other.replace('`', "\""), |name| format!("an object ({name})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name in a message is quoted as JSON quotes it, in every language, and cut when long.
    #[test]
    fn an_echoed_input_is_quoted_as_json_and_cut() {
        assert_eq!(clip("discard\u{1}"), r#""discard\u0001""#);
        assert_eq!(clip("say \"hi\""), r#""say \"hi\"""#);
        let long = clip(&"é".repeat(100));
        assert!(long.starts_with(&format!("\"{}\"…", "é".repeat(60))) && long.ends_with("(200 bytes)"), "{long}");
        assert_eq!(clip_message(&"m".repeat(250)), format!("{}… (250 bytes)", "m".repeat(200)));
    }

    /// A SQL text that cannot be parsed is named in a short message, though the parser's own
    /// error quotes what it met (a 5 MB string literal).
    #[test]
    fn an_unparsable_sql_text_is_named_in_a_short_message() {
        let sql = format!("SELECT * FROM t WHERE a = 1 '{}'", "x".repeat(5_000_000));
        let e = crate::sql::target(&sql, &[]).expect_err("not SQL");
        assert!(e.to_string().len() < 600, "{}", &e.to_string()[..600]);
    }

    fn said(json: &str) -> String {
        let e = serde_json::from_str::<crate::Schema>(json).unwrap_err();
        in_schema_words(&e)
    }

    #[test]
    fn schema_errors_are_in_the_schemas_words() {
        let cases = [
            (
                r#"{"stores": [{"name": "a", "indexes": [{"keyPath": "x", "unique": "yes"}]}]}"#,
                r#"the text "yes" where a boolean is expected"#,
            ),
            (r#""just text""#, r#"the text "just text" where a schema (an object with "stores") is expected"#),
            (r#"{"stores": [{"name": "a", "autoIncrement": 3}]}"#, "3 where a boolean is expected"),
            (r#"{"stores": [1]}"#, r#"1 where a store (an object with "name") is expected"#),
            (r#"{"stores": [{"name": "a", "bogus": 1}]}"#, r#"unknown field "bogus" (known: "#),
            (r#"{"stores": [{"keyPath": "id"}]}"#, r#"the field "name" is missing"#),
        ];
        for (json, words) in cases {
            let message = said(json);
            assert!(message.contains(words), "{json}: {message}");
            for serde in ["u64", "expected struct", "invalid type", "sequence", "`"] {
                assert!(!message.contains(serde), "{json}: {message}");
            }
        }
    }
}
