//! The team's documents in the bucket, each one object beside the runs (`.quarantine`,
//! `.codeowners`, `.rules`,
//! `.lifecycle`) read and edited through the library. An edit reads it, changes it and writes
//! it back conditionally (the library sends `If-Match` with the version it read): when another
//! editor wrote in between, the write is refused, discarded, and the edit made again on what the
//! other wrote, so no edit is lost.

use serde_json::{json, Value};

use objstore_db::json::IntoJson;
use objstore_db::rsapi::{AsValue, Db, Freshness};
use objstore_db_core::{Key, MechanismKind, Resolution, SyncStatus};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::schema::{documents_schema, DOCUMENTS_STORE as STORE};
use super::{call, open_and_wait, Target};
use crate::error::{AppError, AppResult};

/// A document the bucket keeps beside the runs: its object's name, and what it is called.
pub trait Document: Default + Serialize + DeserializeOwned {
    const KEY: &'static str;
    const WHAT: &'static str;
}

impl Document for crate::model::quarantine::Quarantine {
    const KEY: &'static str = crate::model::quarantine::KEY;
    const WHAT: &'static str = "quarantine";
}

impl Document for crate::model::failure_rules::FailureRules {
    const KEY: &'static str = crate::model::failure_rules::KEY;
    const WHAT: &'static str = "failure rules";
}

impl Document for crate::model::lifecycle::Lifecycle {
    const KEY: &'static str = crate::model::lifecycle::KEY;
    const WHAT: &'static str = "triage lifecycle";
}

impl Document for crate::model::codeowners::Stored {
    const KEY: &'static str = crate::model::codeowners::KEY;
    const WHAT: &'static str = "CODEOWNERS";
}

/// Edits tried before giving up when other editors keep writing first.
const ATTEMPTS: usize = 8;

/// The documents' database on `target`: mutable objects, written conditionally.
fn open(target: &Target) -> AppResult<Db> {
    open_and_wait("documents", &documents_schema(target), MechanismKind::Memory)
}

/// Document `D` as the bucket holds it now (empty when it holds none), and the bucket
/// requests that took (one GET).
pub fn load<D: Document>(target: &Target) -> AppResult<(D, u64)> {
    let db = open(target)?;
    let found = read(&db);
    let requests = db.sync_stats(false).total();
    db.close_and_join();
    Ok((found?, requests))
}

fn read<D: Document>(db: &Db) -> AppResult<D> {
    let found = call(|done| db.get(None, STORE, Key::from(D::KEY), Freshness::Fresh, AsValue, done))
        .map_err(|e| e.context(format!("reading the {}", D::WHAT)))?;
    match found {
        Value::Null => Ok(D::default()),
        found => serde_json::from_value(found)
            .map_err(|e| AppError::refused(format!("the bucket's {} is not a {}: {e}", D::KEY, D::WHAT))),
    }
}

/// Keeps `wanted` as document `D` unless the bucket's already is (`same`): one GET when it is,
/// else a conditional write. Answers whether it wrote.
pub fn keep<D: Document + Clone>(target: &Target, wanted: D, same: impl Fn(&D, &D) -> bool) -> AppResult<bool> {
    let (stored, _) = load::<D>(target)?;
    if same(&stored, &wanted) {
        return Ok(false);
    }
    edit(target, |document: &mut D| {
        *document = wanted.clone();
        Ok(String::new())
    })?;
    Ok(true)
}

/// Changes document `D` with `change` and writes it back, conditionally: when another editor
/// wrote first, their version is read and `change` made again on it. Answers the document
/// written and what `change` said.
pub fn edit<D: Document>(target: &Target, change: impl Fn(&mut D) -> AppResult<String>) -> AppResult<(D, String)> {
    let db = open(target)?;
    let outcome = edit_in(&db, change);
    db.close_and_join();
    outcome
}

fn edit_in<D: Document>(db: &Db, change: impl Fn(&mut D) -> AppResult<String>) -> AppResult<(D, String)> {
    for _ in 0..ATTEMPTS {
        let mut document: D = read(db)?;
        let said = change(&mut document)?;
        let value = serde_json::to_value(&document).map_err(|e| AppError::internal(e.to_string()))?;
        call(|done| db.put(None, STORE, value, Some(Key::from(D::KEY)), done))?;
        let flushed = call(|done| db.flush(done))?;
        let status = call(|done| db.sync_status(STORE, Key::from(D::KEY), done))?;
        if status == SyncStatus::Synced {
            return Ok((document, said));
        }
        // Refused: another editor wrote since the read. Theirs stands; the edit is made again.
        let refused = call(|done| db.refused_writes(done))?;
        let Some(sequence) = refused.iter().find(|w| w.entry.id == D::KEY).map(|w| w.sequence) else {
            // Why, as JSON: the reason the bucket could not be reached, else the whole report.
            let why = match flushed.offline.as_ref().or(flushed.blocked.as_ref()) {
                Some(e) => json!(e.to_string()),
                None => flushed.into_json(),
            };
            return Err(AppError::refused(format!("the bucket did not take the {}: {why}", D::WHAT)));
        };
        call(|done| db.resolve(sequence, Resolution::Discard, done))?;
    }
    Err(AppError::refused(format!(
        "other editors kept changing the {}; nothing was changed after {ATTEMPTS} tries",
        D::WHAT
    )))
}
