//! What the quarantine decides: whether an entry holds for a test on a pair now, which entry
//! covers a failure, whether a quarantined test may be released, and the gate's verdict on a
//! job's failures.

use crate::model::pair_matches;
use crate::model::quarantine::{day_end_ms, Entry, Quarantine};
use crate::model::{Run, Status};

/// How many of its last runs a quarantined test must have passed on every pair it covers
/// before the page suggests releasing it.
pub const RELEASE_AFTER: usize = 20;

impl Entry {
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
}

/// Whether a quarantined test may be released: on every pair it covers, it passed in each of
/// the last [`RELEASE_AFTER`] runs (`outcomes`, a pair's newest first; `None` where it did not
/// run).
pub fn releasable<'a>(mut covered: impl Iterator<Item = &'a [Option<Status>]>) -> bool {
    let mut any = false;
    let all = covered.all(|outcomes| {
        any = true;
        outcomes.len() == RELEASE_AFTER && outcomes.iter().all(|o| *o == Some(Status::Passed))
    });
    any && all
}

/// The gate's verdict on a job's failures: each failed test of `runs` is held (quarantined for
/// its pair at `now_ms`, with the entry's reason) or failing.
#[derive(Debug, Default, PartialEq)]
pub struct GateVerdict {
    /// `(suite, name, reason)` of each quarantined failure.
    pub held: Vec<(String, String, String)>,
    /// `(suite, name)` of each failure no entry covers.
    pub failing: Vec<(String, String)>,
}

/// Weighs every failure of `runs` against the quarantine `q` at `now_ms`.
pub fn weigh(q: &Quarantine, runs: &[Run], now_ms: u64) -> GateVerdict {
    let mut weighed = GateVerdict::default();
    for run in runs {
        for t in run.results.tests.iter().filter(|t| t.status == Status::Failed) {
            match q.covering(&t.suite, &t.name, &run.platform, &run.browser, now_ms) {
                Some(entry) => weighed.held.push((t.suite.clone(), t.name.clone(), entry.reason.clone())),
                None => weighed.failing.push((t.suite.clone(), t.name.clone())),
            }
        }
    }
    weighed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry holds for its test, on the pairs its pattern names, until the end of its day.
    #[test]
    fn an_entry_covers_its_test_on_its_pairs_until_its_day() {
        assert_eq!(day_end_ms("1970-01-01"), Some(86_400_000));
        assert_eq!(day_end_ms("2026-11-27"), Some(1_795_824_000_000));
        assert_eq!(day_end_ms("2026-13-01"), None);
        assert_eq!((day_end_ms("2026-02-29"), day_end_ms("2026-02-31")), (None, None), "no such day");
        assert!(day_end_ms("2028-02-29").is_some(), "a leap day");
        assert_eq!(day_end_ms("26-11-27"), None);
        let entry = |pairs: &str, until: Option<&str>| Entry {
            suite: "crud".into(),
            name: "put".into(),
            pairs: pairs.into(),
            reason: "flaky".into(),
            until: until.map(str::to_string),
            added: 0,
            by: None,
        };
        let e = entry("windows-*/c-msvc-*", Some("2026-11-27"));
        assert!(e.covers("crud", "put", "windows-x86_64", "c-msvc-19", 1_795_823_999_999));
        assert!(!e.covers("crud", "put", "windows-x86_64", "c-msvc-19", 1_795_824_000_000), "expired");
        assert!(!e.covers("crud", "put", "linux-x86_64", "c-gcc-13", 0), "another pair");
        assert!(!e.covers("crud", "get", "windows-x86_64", "c-msvc-19", 0), "another test");
        assert!(entry("*/*", None).covers("crud", "put", "any", "thing", u64::MAX));
        assert!(entry("linux", None).check().unwrap_err().message.contains("--pairs"));
        assert!(entry("*/*", Some("soon")).check().unwrap_err().message.contains("--until"));
    }
}
