//! The quarantine in the bucket: one object (`.quarantine`, beside the runs) read and edited
//! through the library. An edit reads it, changes it and writes it back conditionally (the library sends
//! `If-Match` with the version it read): when another editor wrote in between, the write is
//! refused, discarded, and the edit made again on what the other wrote, so no edit is lost.

use serde_json::{json, Value};

use objstore_db::json::IntoJson;
use objstore_db::rsapi::{AsValue, Db, Freshness};
use objstore_db_core::{Key, MechanismKind, Resolution, SyncStatus};

use super::schema::{quarantine_schema, QUARANTINE_STORE as STORE};
use super::{call, open_and_wait, Target};
use crate::error::{AppError, AppResult};
use crate::model::quarantine::{Quarantine, KEY};

/// Edits tried before giving up when other editors keep writing first.
const ATTEMPTS: usize = 8;

/// The quarantine's database on `target`: one mutable object, written conditionally.
fn open(target: &Target) -> AppResult<Db> {
    open_and_wait("quarantine", &quarantine_schema(target), MechanismKind::Memory)
}

/// The quarantine as the bucket holds it now (empty when it holds none), and the bucket
/// requests that took (one GET).
pub fn load(target: &Target) -> AppResult<(Quarantine, u64)> {
    let db = open(target)?;
    let found = read(&db);
    let requests = db.sync_stats(false).total();
    db.close_and_join();
    Ok((found?, requests))
}

fn read(db: &Db) -> AppResult<Quarantine> {
    let found = call(|done| db.get(None, STORE, Key::from(KEY), Freshness::Fresh, AsValue, done))
        .map_err(|e| e.context("reading the quarantine"))?;
    match found {
        Value::Null => Ok(Quarantine::default()),
        found => serde_json::from_value(found)
            .map_err(|e| AppError::refused(format!("the bucket's {KEY} is not a quarantine: {e}"))),
    }
}

/// Changes the quarantine with `change` and writes it back, conditionally: when another editor
/// wrote first, their version is read and `change` made again on it. Answers the quarantine
/// written and what `change` said.
pub fn edit(target: &Target, change: impl Fn(&mut Quarantine) -> AppResult<String>) -> AppResult<(Quarantine, String)> {
    let db = open(target)?;
    let outcome = edit_in(&db, change);
    db.close_and_join();
    outcome
}

fn edit_in(db: &Db, change: impl Fn(&mut Quarantine) -> AppResult<String>) -> AppResult<(Quarantine, String)> {
    for _ in 0..ATTEMPTS {
        let mut quarantine = read(db)?;
        let said = change(&mut quarantine)?;
        let value = serde_json::to_value(&quarantine).map_err(|e| AppError::internal(e.to_string()))?;
        call(|done| db.put(None, STORE, value, Some(Key::from(KEY)), done))?;
        let flushed = call(|done| db.flush(done))?;
        let status = call(|done| db.sync_status(STORE, Key::from(KEY), done))?;
        if status == SyncStatus::Synced {
            return Ok((quarantine, said));
        }
        // Refused: another editor wrote since the read. Theirs stands; the edit is made again.
        let refused = call(|done| db.refused_writes(done))?;
        let Some(sequence) = refused.iter().find(|w| w.entry.id == KEY).map(|w| w.sequence) else {
            // Why, as JSON: the reason the bucket could not be reached, else the whole report.
            let why = match flushed.offline.as_ref().or(flushed.blocked.as_ref()) {
                Some(e) => json!(e.to_string()),
                None => flushed.into_json(),
            };
            return Err(AppError::refused(format!("the bucket did not take the quarantine: {why}")));
        };
        call(|done| db.resolve(sequence, Resolution::Discard, done))?;
    }
    Err(AppError::refused(format!(
        "other editors kept changing the quarantine; nothing was changed after {ATTEMPTS} tries"
    )))
}
