//! The quarantine: tests known to fail that should not fail a job until they are fixed, kept
//! in the bucket as one object (`.quarantine`, beside the runs) with the history of its
//! changes. An edit reads it, changes it and writes it back conditionally (the library sends
//! `If-Match` with the version it read): when another editor wrote in between, the write is
//! refused, discarded, and the edit made again on what the other wrote, so no edit is lost.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use objstore_db::json::IntoJson;
use objstore_db::rsapi::{AsValue, Db, Freshness};
use objstore_db_core::{Key, MechanismKind, Resolution, SyncStatus};

use crate::error::{AppError, AppResult};
use crate::model::{check_pair_pattern, clip, pair_matches, MAX_LABEL};
use crate::store::{call, now_ms, Target};

/// The quarantine's name in the bucket (outside the runs' layout, as `.runs/` is).
pub const KEY: &str = ".quarantine";
const STORE: &str = "quarantine";
/// Changes kept in the history (the newest).
const HISTORY: usize = 500;
/// Edits tried before giving up when other editors keep writing first.
const ATTEMPTS: usize = 8;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quarantine {
    pub entries: Vec<Entry>,
    #[serde(default)]
    pub history: Vec<Change>,
}

/// A quarantined test: its suite and name, the pairs where it is quarantined
/// (`platform/runtime` patterns, `*` for any run of characters), why, and until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub suite: String,
    pub name: String,
    /// `*/*` where an entry written by hand names none.
    #[serde(default = "any_pair")]
    pub pairs: String,
    pub reason: String,
    /// The day (`YYYY-MM-DD`, UTC) after which the entry no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// When it was added (ms since the epoch).
    pub added: u64,
}

fn any_pair() -> String {
    "*/*".into()
}

/// One change to the quarantine: `add` or `remove`, when, of what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub action: String,
    pub at: u64,
    pub entry: Entry,
}

impl Entry {
    /// Checks what an entry must be: a suite and a name (of a report's lengths), a pair
    /// pattern, a reason, and a day.
    pub fn check(&self) -> AppResult<()> {
        for (field, value, most) in
            [("--suite", &self.suite, MAX_LABEL * 4), ("--name", &self.name, 1024), ("--reason", &self.reason, 500)]
        {
            if value.trim().is_empty() || value.len() > most {
                return Err(AppError::bad(format!("{field} must be 1 to {most} characters")));
            }
        }
        check_pair_pattern(&self.pairs).map_err(|why| AppError::bad(format!("--pairs: {why}")))?;
        if let Some(until) = &self.until {
            day_end_ms(until)
                .ok_or_else(|| AppError::bad(format!("--until {:?} is not a day (YYYY-MM-DD)", clip(until))))?;
        }
        Ok(())
    }

    /// Whether its last day is past at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.until.as_deref().and_then(day_end_ms).is_some_and(|end| now_ms >= end)
    }

    /// Whether the entry holds for test `suite`/`name` on `platform`/`browser` at `now_ms`.
    pub fn covers(&self, suite: &str, name: &str, platform: &str, browser: &str, now_ms: u64) -> bool {
        self.suite == suite
            && self.name == name
            && pair_matches(&self.pairs, platform, browser)
            && !self.expired(now_ms)
    }
}

impl Quarantine {
    /// The entry that quarantines test `suite`/`name` on `platform`/`browser` now, if any.
    pub fn covering(&self, suite: &str, name: &str, platform: &str, browser: &str, now_ms: u64) -> Option<&Entry> {
        self.entries.iter().find(|e| e.covers(suite, name, platform, browser, now_ms))
    }

    /// Adds `entry` (replacing one of the same test and pairs).
    pub fn add(&mut self, entry: Entry) {
        self.entries.retain(|e| !(e.suite == entry.suite && e.name == entry.name && e.pairs == entry.pairs));
        self.entries.push(entry.clone());
        self.note("add", entry);
    }

    /// Removes the entries of test `suite`/`name` (of `pairs` only, if given); how many.
    pub fn remove(&mut self, suite: &str, name: &str, pairs: Option<&str>) -> usize {
        let (gone, kept): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| e.suite == suite && e.name == name && pairs.is_none_or(|p| p == e.pairs));
        self.entries = kept;
        for entry in &gone {
            self.note("remove", entry.clone());
        }
        gone.len()
    }

    fn note(&mut self, action: &str, entry: Entry) {
        self.history.push(Change { action: action.to_string(), at: now_ms(), entry });
        let over = self.history.len().saturating_sub(HISTORY);
        self.history.drain(..over);
    }
}

/// The quarantine's store in `target`'s bucket: one mutable object, written conditionally.
fn open(target: &Target) -> AppResult<Db> {
    let schema = json!({"stores": [{"name": STORE, "Sync": {"format": "objstore", "Options": target.options()}}]});
    crate::store::open_and_wait("quarantine", &schema, MechanismKind::Memory)
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

/// The first millisecond after day `day` (`YYYY-MM-DD`, UTC).
fn day_end_ms(day: &str) -> Option<u64> {
    let parts: Vec<&str> = day.split('-').collect();
    let [y, m, d] = parts[..] else { return None };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month[(m - 1) as usize] {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from((days + 1) * 86_400_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &str, until: Option<&str>) -> Entry {
        Entry {
            suite: "crud".into(),
            name: "put".into(),
            pairs: pairs.into(),
            reason: "flaky".into(),
            until: until.map(str::to_string),
            added: 0,
        }
    }

    /// An entry holds for its test, on the pairs its pattern names, until the end of its day.
    #[test]
    fn an_entry_covers_its_test_on_its_pairs_until_its_day() {
        assert_eq!(day_end_ms("1970-01-01"), Some(86_400_000));
        assert_eq!(day_end_ms("2026-11-27"), Some(1_795_824_000_000));
        assert_eq!(day_end_ms("2026-13-01"), None);
        assert_eq!((day_end_ms("2026-02-29"), day_end_ms("2026-02-31")), (None, None), "no such day");
        assert!(day_end_ms("2028-02-29").is_some(), "a leap day");
        assert_eq!(day_end_ms("26-11-27"), None);
        let e = entry("windows-*/c-msvc-*", Some("2026-11-27"));
        assert!(e.covers("crud", "put", "windows-x86_64", "c-msvc-19", 1_795_823_999_999));
        assert!(!e.covers("crud", "put", "windows-x86_64", "c-msvc-19", 1_795_824_000_000), "expired");
        assert!(!e.covers("crud", "put", "linux-x86_64", "c-gcc-13", 0), "another pair");
        assert!(!e.covers("crud", "get", "windows-x86_64", "c-msvc-19", 0), "another test");
        assert!(entry("*/*", None).covers("crud", "put", "any", "thing", u64::MAX));
        assert!(entry("linux", None).check().unwrap_err().message.contains("--pairs"));
        assert!(entry("*/*", Some("soon")).check().unwrap_err().message.contains("--until"));
    }

    /// Adding the same test and pairs again replaces the entry; removing keeps the history.
    #[test]
    fn edits_keep_their_history() {
        let mut q = Quarantine::default();
        q.add(entry("*/*", None));
        q.add(entry("*/*", Some("2030-01-01")));
        q.add(entry("linux-*/*", None));
        assert_eq!(q.entries.len(), 2);
        assert_eq!(q.remove("crud", "put", Some("*/*")), 1);
        assert_eq!(q.remove("crud", "put", None), 1);
        assert!(q.entries.is_empty());
        let actions: Vec<&str> = q.history.iter().map(|c| c.action.as_str()).collect();
        assert_eq!(actions, ["add", "add", "add", "remove", "remove"]);
    }
}
