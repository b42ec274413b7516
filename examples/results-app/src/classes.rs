//! What a test's outcome means beside its other runs: new failure, flaky, broken, divergent.
//! Each class has its rule, shown beside it on the page, and names the runs that show it.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::format::{Status, Test};

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

/// One run's outcomes, as evidence: its key, its pair, what flaky is keyed on, and each test's
/// status (a pass on a retry counted as flaky by itself).
pub struct Seen {
    pub key: String,
    pub pair: String,
    /// `commit <sha>`, else `version <v>`.
    pub basis: Option<String>,
    /// The run's commit, if it names one (divergence needs one).
    pub commit: Option<String>,
    pub outcomes: HashMap<TestId, Status>,
}

/// What a run's tests are weighed against.
pub struct Evidence<'a> {
    /// The pair's runs before this one, newest first.
    pub earlier: Vec<&'a Seen>,
    /// Every pair's newest runs, newest first ([`BROKEN_RUNS`] of them), this pair's included.
    pub pairs: Vec<Vec<&'a Seen>>,
}

/// The classes of test `id` (of run `this`), each `{"class", "evidence": [run keys]}`.
pub fn classify(id: &TestId, test: &Test, this: &Seen, e: &Evidence) -> Vec<Value> {
    let mut classes = Vec::new();
    let status_in = |run: &Seen| run.outcomes.get(id).copied();
    if test.status == Status::Failed {
        if let Some(previous) = e.earlier.first().filter(|p| status_in(p) == Some(Status::Passed)) {
            classes.push(json!({"class": "new failure", "evidence": [previous.key]}));
        }
    }
    // Flaky: passed on a retry, or both outcomes at this run's commit (version) on this pair.
    let same_basis: Vec<&Seen> =
        e.earlier.iter().copied().filter(|r| r.basis.is_some() && r.basis == this.basis).collect();
    let mixed: Vec<&str> = same_basis
        .iter()
        .filter(|r| matches!(status_in(r), Some(s) if s != test.status && is_outcome(s)))
        .map(|r| r.key.as_str())
        .collect();
    if test.detail.flaky || (is_outcome(test.status) && !mixed.is_empty()) {
        classes.push(json!({"class": "flaky", "evidence": mixed}));
    }
    // Broken: failed in each of the newest runs of every pair that ran it.
    if test.status == Status::Failed {
        let ran: Vec<&Seen> = e.pairs.iter().flatten().copied().filter(|r| status_in(r).is_some()).collect();
        let enough =
            e.pairs.iter().any(|runs| runs.len() >= BROKEN_RUNS && runs.iter().all(|r| status_in(r).is_some()));
        if enough && ran.iter().all(|r| status_in(r) == Some(Status::Failed)) {
            classes.push(json!({"class": "broken", "evidence": ran.iter().map(|r| &r.key).collect::<Vec<_>>()}));
        }
    }
    // Divergent: at this commit, the other pairs' newest runs disagree with this one.
    if let (Some(commit), true) = (&this.commit, is_outcome(test.status)) {
        let other: Vec<&str> = e
            .pairs
            .iter()
            .filter_map(|runs| runs.iter().find(|r| r.pair != this.pair && r.commit.as_ref() == Some(commit)))
            .filter(|r| matches!(status_in(r), Some(s) if s != test.status && is_outcome(s)))
            .map(|r| r.key.as_str())
            .collect();
        if !other.is_empty() {
            classes.push(json!({"class": "divergent", "evidence": other}));
        }
    }
    classes
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
    use crate::format::Detail;

    fn seen(key: &str, pair: &str, commit: &str, status: Status) -> Seen {
        let id = ("crud".to_string(), "add".to_string(), 1);
        Seen {
            key: key.into(),
            pair: pair.into(),
            basis: Some(format!("commit {commit}")),
            commit: Some(commit.into()),
            outcomes: HashMap::from([(id, status)]),
        }
    }

    fn test(status: Status) -> Test {
        Test {
            name: "add".into(),
            status,
            duration: 1.0,
            suite: "crud".into(),
            message: None,
            detail: Detail::default(),
        }
    }

    fn names(classes: &[Value]) -> Vec<&str> {
        classes.iter().map(|c| c["class"].as_str().unwrap()).collect()
    }

    /// Each class by its rule, with the runs that show it.
    #[test]
    fn each_class_by_its_rule() {
        let id = ("crud".to_string(), "add".to_string(), 1);
        let now = seen("a/1", "linux", "c2", Status::Failed);
        let before = seen("a/0", "linux", "c1", Status::Passed);
        let mac = seen("m/1", "mac", "c2", Status::Passed);
        let mac_before = seen("m/0", "mac", "c1", Status::Passed);
        let e = Evidence { earlier: vec![&before], pairs: vec![vec![&now, &before], vec![&mac, &mac_before]] };
        let classes = classify(&id, &test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["new failure", "divergent"]);
        assert_eq!(classes[0]["evidence"], json!(["a/0"]));
        assert_eq!(classes[1]["evidence"], json!(["m/1"]));

        // Failed twice on every pair that ran it: broken, and neither new nor divergent.
        let old = seen("a/0", "linux", "c1", Status::Failed);
        let mac = seen("m/1", "mac", "c2", Status::Failed);
        let mac_before = seen("m/0", "mac", "c1", Status::Failed);
        let e = Evidence { earlier: vec![&old], pairs: vec![vec![&now, &old], vec![&mac, &mac_before]] };
        assert_eq!(names(&classify(&id, &test(Status::Failed), &now, &e)), ["broken"]);

        // Passed and failed at one commit: flaky (and here new too), naming the run that
        // differed; a pass on a retry is flaky by itself.
        let same_commit = seen("a/0", "linux", "c2", Status::Passed);
        let e = Evidence { earlier: vec![&same_commit], pairs: vec![] };
        let classes = classify(&id, &test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["new failure", "flaky"]);
        assert_eq!(classes[1]["evidence"], json!(["a/0"]));
        let mut retried = test(Status::Passed);
        retried.detail.flaky = true;
        let e = Evidence { earlier: vec![], pairs: vec![] };
        assert_eq!(names(&classify(&id, &retried, &seen("a/1", "linux", "c2", Status::Passed), &e)), ["flaky"]);
    }
}
