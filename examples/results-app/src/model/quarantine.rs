//! The quarantine's body, as the bucket's `.quarantine` object holds it: tests known to fail
//! that should not fail a job until they are fixed, each with the pairs it holds for, why and
//! until when, and the history of its changes. What the quarantine decides is
//! `analysis/quarantine.rs`; reading and writing it is `store/quarantine.rs`.

use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::model::{check_pair_pattern, clip, MAX_LABEL};

/// The quarantine's name in the bucket (outside the runs' layout, as `.runs/` is).
pub const KEY: &str = ".quarantine";

/// Changes kept in the history (the newest).
const HISTORY: usize = 500;

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
    /// Who added it (`quarantine add --by`, else the CI's actor or the shell's user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
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
        if let Some(by) = &self.by {
            if by.trim().is_empty() || by.len() > MAX_LABEL || by.chars().any(char::is_control) {
                return Err(AppError::bad(format!("--by must be 1 to {MAX_LABEL} characters, no control character")));
            }
        }
        check_pair_pattern(&self.pairs).map_err(|why| AppError::bad(format!("--pairs: {why}")))?;
        if let Some(until) = &self.until {
            day_end_ms(until)
                .ok_or_else(|| AppError::bad(format!("--until {:?} is not a day (YYYY-MM-DD)", clip(until))))?;
        }
        Ok(())
    }
}

impl Quarantine {
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

/// The first millisecond after day `day` (`YYYY-MM-DD`, UTC).
pub fn day_end_ms(day: &str) -> Option<u64> {
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
            by: None,
        }
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
