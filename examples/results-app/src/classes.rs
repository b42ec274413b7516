//! What a test's outcome means beside its other runs: new failure, flaky, broken, divergent.
//! Each class has its rule, shown beside it on the page, and names the runs that show it.
//!
//! Other runs are weighed by their digests (`digest.rs`), which a listing brings: a test is
//! known there by its digest id, and counts as passed in a run that ran its suite without it
//! failing or being skipped.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{json, Value};

use crate::digest::Digest;
use crate::format::Status;

/// A test across runs: its suite, its name and which occurrence of that name it is.
pub type TestId = (String, String, usize);

/// How many of a pair's newest runs "broken" looks at.
pub const BROKEN_RUNS: usize = 2;

/// The classes and their rules, as the page shows them.
pub const RULES: [(&str, &str); 4] = [
    ("new failure", "failed here and passed in the pair's previous run"),
    (
        "flaky",
        "passed on a retry, or passed and failed at one commit (one version where runs name no commit) on this pair: \
         in the matrix against the run before, on a run's page against the 25 before",
    ),
    ("broken", "failed in each of the last 2 runs of every pair that ran it"),
    ("divergent", "at one commit, passed on some pairs and failed on others"),
];

/// One run's outcomes, as evidence: its key, its pair, what flaky is keyed on, and per suite it
/// ran, its tests that failed, did not run, or passed on a retry.
pub struct Seen {
    pub key: String,
    pub pair: String,
    /// `commit <sha>`, else `version <v>`.
    pub basis: Option<String>,
    /// The run's commit, if it names one (divergence needs one).
    pub commit: Option<String>,
    suites: HashMap<String, Ran>,
}

#[derive(Default)]
struct Ran {
    failed: HashSet<u32>,
    not_run: HashSet<u32>,
    retried: HashSet<u32>,
}

impl Seen {
    /// A run as its files' digests show it.
    pub fn of(key: &str, pair: &str, digests: &[Digest]) -> Seen {
        let mut suites: HashMap<String, Ran> = HashMap::new();
        for suite in digests.iter().flat_map(|d| &d.suites) {
            let ran = suites.entry(suite.name.clone()).or_default();
            ran.failed.extend(&suite.failed_ids);
            ran.not_run.extend(&suite.skipped_ids);
            ran.retried.extend(&suite.retried_ids);
        }
        let commit = digests.iter().find_map(|d| d.commit.clone());
        let basis = match &commit {
            Some(commit) => Some(format!("commit {commit}")),
            None => digests.iter().map(|d| &d.version).min().map(|v| format!("version {v}")),
        };
        Seen { key: key.to_string(), pair: pair.to_string(), basis, commit, suites }
    }

    /// Test `id` of `suite` here: failed; passed (its suite ran, and it neither failed nor was
    /// skipped); or `None`, not run.
    pub fn status(&self, suite: &str, id: u32) -> Option<Status> {
        let ran = self.suites.get(suite)?;
        if ran.failed.contains(&id) {
            Some(Status::Failed)
        } else if ran.not_run.contains(&id) {
            None
        } else {
            Some(Status::Passed)
        }
    }
}

/// What a run's tests are weighed against.
pub struct Evidence<'a> {
    /// The pair's runs before this one, newest first.
    pub earlier: Vec<&'a Seen>,
    /// Every pair's newest runs, newest first ([`BROKEN_RUNS`] of them), this pair's included.
    pub pairs: Vec<Vec<&'a Seen>>,
}

/// A test as the classes weigh it: its suite, digest id, status, and whether it passed on a
/// retry.
pub struct Weighed<'a> {
    pub suite: &'a str,
    pub id: u32,
    pub status: Status,
    pub retried: bool,
}

/// The classes of test `t` (of run `this`), each `{"class", "evidence": [run keys]}`.
pub fn classify(t: &Weighed, this: &Seen, e: &Evidence) -> Vec<Value> {
    let mut classes = Vec::new();
    let status_in = |run: &Seen| run.status(t.suite, t.id);
    if t.status == Status::Failed {
        if let Some(previous) = e.earlier.first().filter(|p| status_in(p) == Some(Status::Passed)) {
            classes.push(json!({"class": "new failure", "evidence": [previous.key]}));
        }
    }
    // Flaky: passed on a retry, or both outcomes at this run's commit (version) on this pair.
    let same_basis: Vec<&Seen> =
        e.earlier.iter().copied().filter(|r| r.basis.is_some() && r.basis == this.basis).collect();
    let mixed: Vec<&str> = same_basis
        .iter()
        .filter(|r| matches!(status_in(r), Some(s) if s != t.status && is_outcome(s)))
        .map(|r| r.key.as_str())
        .collect();
    if t.retried || (is_outcome(t.status) && !mixed.is_empty()) {
        classes.push(json!({"class": "flaky", "evidence": mixed}));
    }
    // Broken: failed in each of the newest runs of every pair that ran it.
    if t.status == Status::Failed {
        let ran: Vec<&Seen> = e.pairs.iter().flatten().copied().filter(|r| status_in(r).is_some()).collect();
        let enough =
            e.pairs.iter().any(|runs| runs.len() >= BROKEN_RUNS && runs.iter().all(|r| status_in(r).is_some()));
        if enough && ran.iter().all(|r| status_in(r) == Some(Status::Failed)) {
            classes.push(json!({"class": "broken", "evidence": ran.iter().map(|r| &r.key).collect::<Vec<_>>()}));
        }
    }
    // Divergent: at this commit, the other pairs' newest runs disagree with this one.
    if let (Some(commit), true) = (&this.commit, is_outcome(t.status)) {
        let other: Vec<&str> = e
            .pairs
            .iter()
            .filter_map(|runs| runs.iter().find(|r| r.pair != this.pair && r.commit.as_ref() == Some(commit)))
            .filter(|r| matches!(status_in(r), Some(s) if s != t.status && is_outcome(s)))
            .map(|r| r.key.as_str())
            .collect();
        if !other.is_empty() {
            classes.push(json!({"class": "divergent", "evidence": other}));
        }
    }
    classes
}

/// Per suite of run `this`, how many of its tests fall in each class (only classes some test
/// does). The tests weighed are those a class can hold: the ones that failed or passed on a
/// retry here, and those that failed in a run this one is weighed against.
pub fn counts(this: &Seen, e: &Evidence) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for (suite, ran) in &this.suites {
        let mut ids: BTreeSet<u32> = ran.failed.iter().chain(&ran.retried).copied().collect();
        for other in e.earlier.iter().chain(e.pairs.iter().flatten()) {
            if let Some(r) = other.suites.get(suite) {
                ids.extend(&r.failed);
            }
        }
        let mut classes: BTreeMap<String, u64> = BTreeMap::new();
        for id in ids {
            let Some(status) = this.status(suite, id) else { continue };
            let t = Weighed { suite, id, status, retried: ran.retried.contains(&id) };
            for class in classify(&t, this, e) {
                *classes.entry(class["class"].as_str().unwrap_or_default().to_string()).or_default() += 1;
            }
        }
        counts.insert(suite.clone(), classes);
    }
    counts
}

/// Passed or failed: what the classes weigh (a skip says nothing either way).
fn is_outcome(status: Status) -> bool {
    matches!(status, Status::Passed | Status::Failed)
}

/// The rules as the views send them: `{class: rule}`.
pub fn rules() -> Value {
    RULES.iter().map(|(class, rule)| (class.to_string(), json!(rule))).collect::<serde_json::Map<_, _>>().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::SuiteDigest;

    const ID: u32 = 7;

    fn seen(key: &str, pair: &str, commit: &str, status: Status) -> Seen {
        let mut suite = SuiteDigest { name: "crud".into(), ..SuiteDigest::default() };
        match status {
            Status::Passed => suite.passed = 1,
            Status::Failed => suite.failed_ids = vec![ID],
            _ => suite.skipped_ids = vec![ID],
        }
        let digest = Digest { version: "1".into(), commit: Some(commit.into()), start: 0, labels: Default::default(),
            suites: vec![suite] };
        Seen::of(key, pair, &[digest])
    }

    fn test(status: Status) -> Weighed<'static> {
        Weighed { suite: "crud", id: ID, status, retried: false }
    }

    fn names(classes: &[Value]) -> Vec<&str> {
        classes.iter().map(|c| c["class"].as_str().unwrap()).collect()
    }

    /// Each class by its rule, with the runs that show it.
    #[test]
    fn each_class_by_its_rule() {
        let now = seen("a/1", "linux", "c2", Status::Failed);
        let before = seen("a/0", "linux", "c1", Status::Passed);
        let mac = seen("m/1", "mac", "c2", Status::Passed);
        let mac_before = seen("m/0", "mac", "c1", Status::Passed);
        let e = Evidence { earlier: vec![&before], pairs: vec![vec![&now, &before], vec![&mac, &mac_before]] };
        let classes = classify(&test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["new failure", "divergent"]);
        assert_eq!(classes[0]["evidence"], json!(["a/0"]));
        assert_eq!(classes[1]["evidence"], json!(["m/1"]));
        // The matrix counts the same, and the passing side of the divergence on the mac.
        assert_eq!(counts(&now, &e)["crud"], BTreeMap::from([("divergent".into(), 1), ("new failure".into(), 1)]));
        let e_mac = Evidence { earlier: vec![&mac_before], pairs: vec![vec![&now, &before], vec![&mac, &mac_before]] };
        assert_eq!(counts(&mac, &e_mac)["crud"], BTreeMap::from([("divergent".into(), 1)]));

        // Failed twice on every pair that ran it: broken, and neither new nor divergent.
        let old = seen("a/0", "linux", "c1", Status::Failed);
        let mac = seen("m/1", "mac", "c2", Status::Failed);
        let mac_before = seen("m/0", "mac", "c1", Status::Failed);
        let e = Evidence { earlier: vec![&old], pairs: vec![vec![&now, &old], vec![&mac, &mac_before]] };
        assert_eq!(names(&classify(&test(Status::Failed), &now, &e)), ["broken"]);

        // Passed and failed at one commit: flaky (and here new too), naming the run that
        // differed; a pass on a retry is flaky by itself.
        let same_commit = seen("a/0", "linux", "c2", Status::Passed);
        let e = Evidence { earlier: vec![&same_commit], pairs: vec![] };
        let classes = classify(&test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["new failure", "flaky"]);
        assert_eq!(classes[1]["evidence"], json!(["a/0"]));
        let retried = Weighed { retried: true, ..test(Status::Passed) };
        let e = Evidence { earlier: vec![], pairs: vec![] };
        assert_eq!(names(&classify(&retried, &seen("a/1", "linux", "c2", Status::Passed), &e)), ["flaky"]);
    }

    /// A skipped test, or one of a suite the run did not run, is no outcome there: not a pass.
    #[test]
    fn a_test_not_run_is_no_outcome() {
        let skipped = seen("a/0", "linux", "c1", Status::Skipped);
        assert_eq!(skipped.status("crud", ID), None);
        assert_eq!(skipped.status("sql", ID), None);
        assert_eq!(skipped.status("crud", ID + 1), Some(Status::Passed));
        let now = seen("a/1", "linux", "c2", Status::Failed);
        let e = Evidence { earlier: vec![&skipped], pairs: vec![] };
        assert!(classify(&test(Status::Failed), &now, &e).is_empty());
    }
}
