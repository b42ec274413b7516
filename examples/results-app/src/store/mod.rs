//! The bucket, through the library: the only room that imports objstore-db (beside
//! `conformance.rs`, the library's own suites). Where results live (a target, from the
//! environment), the stores' schemas, the writer, the viewer's cache with what its requests
//! cost, the readers of runs and digests, and the team's documents (the quarantine, CODEOWNERS). It stores and reads; it
//! decides nothing.

pub mod cache;
pub mod documents;
mod group;
pub mod reader;
pub mod schema;
mod writer;

pub use writer::{Encoded, Writer};

use std::sync::mpsc;

use objstore_db::rsapi::{Db, OpenOptions};
use objstore_db_core::{MechanismKind, Result as CoreResult, Schema};
use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::short_hash;

/// Where results go.
#[derive(Debug, Clone)]
pub struct Target {
    /// `file://<dir>` or `http(s)://host[:port]`.
    pub endpoint: String,
    pub bucket: String,
    pub prefix: String,
    /// How long one request to the bucket may take, in ms (`OBJSTORE_RESULTS_TIMEOUT_MS`; the
    /// library's 10,000 when unset).
    pub timeout_ms: Option<u64>,
}

impl Target {
    /// `OBJSTORE_RESULTS` (else `file://./results`), `OBJSTORE_RESULTS_BUCKET` (else `results`)
    /// and `OBJSTORE_RESULTS_PREFIX`, as the language reporters read them, and
    /// `OBJSTORE_RESULTS_TIMEOUT_MS`.
    pub fn from_env() -> AppResult<Target> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let endpoint = var("OBJSTORE_RESULTS").unwrap_or_else(|| {
            let here = std::env::current_dir().unwrap_or_default();
            format!("file://{}", here.join("results").display())
        });
        let timeout_ms = var("OBJSTORE_RESULTS_TIMEOUT_MS")
            .map(|ms| {
                ms.parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                    AppError::bad(format!("OBJSTORE_RESULTS_TIMEOUT_MS is {ms:?}: give a whole number of milliseconds"))
                })
            })
            .transpose()?;
        Ok(Target {
            endpoint,
            bucket: var("OBJSTORE_RESULTS_BUCKET").unwrap_or_else(|| "results".into()),
            prefix: var("OBJSTORE_RESULTS_PREFIX").unwrap_or_default(),
            timeout_ms,
        })
    }

    /// What a command says it opened: `bucket "results" at file:///... (prefix "p/")`.
    pub fn describe(&self) -> String {
        match self.prefix.as_str() {
            "" => format!("bucket {:?} at {}", self.bucket, self.endpoint),
            prefix => format!("bucket {:?} at {} (prefix {prefix:?})", self.bucket, self.endpoint),
        }
    }

    /// A `file://` target (its objects live in `<dir>/<bucket>/`) whose directory does not
    /// exist holds no runs: a read says so rather
    /// than creating it.
    pub fn missing_directory(&self) -> Option<std::path::PathBuf> {
        let dir = std::path::PathBuf::from(self.endpoint.strip_prefix("file://")?).join(&self.bucket);
        (!dir.exists()).then_some(dir)
    }

    /// Where a viewer of this target keeps its cache unless told: one SQLite file per target
    /// under `$XDG_CACHE_HOME/objstore-results` (else `~/.cache/objstore-results`).
    pub fn default_cache(&self) -> std::path::PathBuf {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(std::path::PathBuf::from);
        let base =
            var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache"))).unwrap_or_else(std::env::temp_dir);
        let id = format!("{} {} {}", self.endpoint, self.bucket, self.prefix);
        let readable: String = id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .skip(id.len().saturating_sub(80))
            .collect();
        base.join("objstore-results").join(format!("{readable}-{:016x}.sqlite3", short_hash(id.as_bytes())))
    }
}

/// What the library answers with fails the view or the write: the bucket or the library said no.
impl From<objstore_db_core::Error> for AppError {
    fn from(e: objstore_db_core::Error) -> AppError {
        AppError::refused(e.to_string())
    }
}

/// Opens the database `name` (a file path for SQLite) with `schema` and waits until it is open.
pub(crate) fn open_and_wait(name: &str, schema: &Value, mechanism: MechanismKind) -> AppResult<Db> {
    let options = OpenOptions { mechanism, ..OpenOptions::default() };
    let (tx, rx) = mpsc::channel();
    let schema = Schema::from_json(&schema.to_string()).map_err(|e| AppError::internal(e.to_string()))?;
    let db = Db::open(name, Some(schema), &options, move |r| {
        let _ = tx.send(r.map(drop));
    })
    .map_err(|e| AppError::internal(e.to_string()))?;
    rx.recv()
        .map_err(|_| AppError::internal("the database went away"))?
        .map_err(|e| AppError::internal(e.to_string()))?;
    Ok(db)
}

/// Makes a request of the library and waits for its answer (a refusal is the library's or
/// the bucket's: [`crate::error::Kind::Refused`]).
pub(crate) fn call<T: Send + 'static>(
    request: impl FnOnce(Box<dyn FnOnce(CoreResult<T>) + Send>) -> CoreResult<u64>,
) -> AppResult<T> {
    let (tx, rx) = mpsc::channel();
    request(Box::new(move |answer| {
        let _ = tx.send(answer);
    }))?;
    Ok(rx.recv().map_err(|_| AppError::refused("the database closed before it answered"))??)
}
