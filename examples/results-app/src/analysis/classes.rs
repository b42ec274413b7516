//! What a test's outcome means beside its other runs: regressed, flaky, broken, divergent.
//! Each class has its rule, shown beside it on the page, and names the runs that show it.
//!
//! Other runs are weighed by their digests (`digest.rs`), which a listing brings: a test is
//! known there by its digest id, and counts as passed in a run that ran its suite without it
//! failing or being skipped.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use serde::{Serialize, Serializer};

use crate::analysis::rules::{self, is_outcome, Outcome};
use crate::model::digest::Digest;
use crate::model::Status;

/// The most runs a class names as its evidence (the first, in pair order).
pub const EVIDENCE: usize = 20;

/// How many of a pair's newest runs "broken" looks at.
pub const BROKEN_RUNS: usize = 2;

/// What a test's outcome means beside its other runs: each verdict decided here only, and
/// serialized as the page's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    #[serde(rename = "regressed")]
    Regressed,
    #[serde(rename = "flaky")]
    Flaky,
    #[serde(rename = "broken")]
    Broken,
    #[serde(rename = "divergent")]
    Divergent,
}

impl Verdict {
    /// The verdict as the page and the summaries say it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Flaky => "flaky",
            Verdict::Broken => "broken",
            Verdict::Divergent => "divergent",
        }
    }
}

/// The classes and their rules, as the page shows them.
pub const RULES: [(Verdict, &str); 4] = [
    (Verdict::Regressed, "failed here and passed in the pair's previous run"),
    (
        Verdict::Flaky,
        "passed on a retry, or passed and failed at one commit (one version where runs name no commit) on this pair, \
         in the run or the 25 before it (its branch's and its base's): the same in every view",
    ),
    (Verdict::Broken, "failed in each of the last 2 runs of every pair that ran it"),
    (Verdict::Divergent, "at one commit, passed on some pairs and failed on others"),
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

    /// The tests here that failed or passed on a retry (suite, id): the only ones that can be
    /// flaky.
    pub fn marked(&self) -> impl Iterator<Item = (&str, u32)> {
        self.suites
            .iter()
            .flat_map(|(suite, ran)| ran.failed.iter().chain(&ran.retried).map(move |id| (suite.as_str(), *id)))
    }

    /// Test `id` of `suite` here, with whether it passed on a retry; `None`, not run.
    pub fn outcome(&self, suite: &str, id: u32) -> Option<Outcome> {
        let status = self.status(suite, id)?;
        Some(Outcome { status, retried: self.suites[suite].retried.contains(&id) })
    }
}

/// Every pair's newest runs ([`BROKEN_RUNS`] of them, newest first), weighed once per view:
/// what "broken" and "divergent" ask of them is worked out once per test and kept, so a matrix
/// of P pairs costs P times a pair's own tests, not P times every pair's.
pub struct Pairs<'a> {
    runs: Vec<Vec<&'a Seen>>,
    memo: RefCell<Memo>,
}

/// Runs by place: (pair, run) in [`Pairs::runs`].
type At = (usize, usize);

/// A test's outcome in each pair's newest run at one commit, where it passed or failed.
type Outcomes = Rc<Vec<(At, Status)>>;

#[derive(Default)]
struct Memo {
    /// (suite, test) → the runs that make it broken, if it is.
    broken: HashMap<(String, u32), Option<Rc<Vec<At>>>>,
    /// (commit, suite, test) → each pair's newest run at that commit, where the test passed or
    /// failed there, with how.
    at_commit: HashMap<(String, String, u32), Outcomes>,
    /// (commit, suite) → the tests that failed in some pair's newest run at that commit.
    failing_at: HashMap<(String, String), Rc<BTreeSet<u32>>>,
}

impl<'a> Pairs<'a> {
    pub fn new(runs: &'a [Vec<Seen>]) -> Pairs<'a> {
        Pairs::of(runs.iter().map(|runs| runs.iter().collect()).collect())
    }

    pub fn of(runs: Vec<Vec<&'a Seen>>) -> Pairs<'a> {
        Pairs { runs, memo: RefCell::default() }
    }

    fn run(&self, (pair, run): At) -> &'a Seen {
        self.runs[pair][run]
    }

    /// Each pair's newest run at `commit`.
    fn newest_at(&self, commit: &'a str) -> impl Iterator<Item = At> + '_ {
        self.runs
            .iter()
            .enumerate()
            .filter_map(move |(p, runs)| runs.iter().position(|r| r.commit.as_deref() == Some(commit)).map(|r| (p, r)))
    }

    /// The runs that show test `id` broken: it failed in each of the newest runs of every pair
    /// that ran it, and some pair ran it in all of its [`BROKEN_RUNS`].
    fn broken(&self, suite: &str, id: u32) -> Option<Rc<Vec<At>>> {
        let key = (suite.to_string(), id);
        if let Some(found) = self.memo.borrow().broken.get(&key) {
            return found.clone();
        }
        let status = |at: At| self.run(at).status(suite, id);
        let places = || self.runs.iter().enumerate().flat_map(|(p, runs)| (0..runs.len()).map(move |r| (p, r)));
        let ran: Vec<At> = places().filter(|at| status(*at).is_some()).collect();
        let enough = self
            .runs
            .iter()
            .any(|runs| runs.len() >= BROKEN_RUNS && runs.iter().all(|r| r.status(suite, id).is_some()));
        let found = (enough && ran.iter().all(|at| status(*at) == Some(Status::Failed))).then(|| Rc::new(ran));
        self.memo.borrow_mut().broken.insert(key, found.clone());
        found
    }

    /// Test `id`'s outcome in each pair's newest run at `commit`, where it passed or failed.
    fn at_commit(&self, commit: &'a str, suite: &str, id: u32) -> Outcomes {
        let key = (commit.to_string(), suite.to_string(), id);
        if let Some(found) = self.memo.borrow().at_commit.get(&key) {
            return found.clone();
        }
        let found: Outcomes = Rc::new(
            self.newest_at(commit)
                .filter_map(|at| self.run(at).status(suite, id).filter(|s| is_outcome(*s)).map(|s| (at, s)))
                .collect(),
        );
        self.memo.borrow_mut().at_commit.insert(key, found.clone());
        found
    }

    /// The tests of `suite` that failed in some pair's newest run at `commit`.
    fn failing_at(&self, commit: &'a str, suite: &str) -> Rc<BTreeSet<u32>> {
        let key = (commit.to_string(), suite.to_string());
        if let Some(found) = self.memo.borrow().failing_at.get(&key) {
            return found.clone();
        }
        let found: Rc<BTreeSet<u32>> = Rc::new(
            self.newest_at(commit)
                .filter_map(|at| self.run(at).suites.get(suite))
                .flat_map(|ran| ran.failed.iter().copied())
                .collect(),
        );
        self.memo.borrow_mut().failing_at.insert(key, found.clone());
        found
    }
}

/// What a run's tests are weighed against.
pub struct Evidence<'e, 'a> {
    /// The pair's runs before this one, newest first.
    pub earlier: Vec<&'a Seen>,
    /// Every pair's newest runs, this pair's included.
    pub pairs: &'e Pairs<'a>,
}

/// A test as the classes weigh it: its suite, digest id and outcome in the run.
pub struct Weighed<'a> {
    pub suite: &'a str,
    pub id: u32,
    pub outcome: Outcome,
}

/// The classes of test `t` (of run `this`), each with the runs that show it.
pub fn classify(t: &Weighed, this: &Seen, e: &Evidence) -> Vec<Class> {
    let mut classes = Vec::new();
    let here = t.outcome;
    let previous = e.earlier.first();
    if rules::is_regressed(previous.and_then(|p| p.status(t.suite, t.id)), here.status) {
        let previous = previous.map(|p| p.key.clone()).into_iter().collect();
        classes.push(Class { class: Verdict::Regressed, evidence: previous });
    }
    // Flaky: this run and the pair's earlier ones at its commit (version), by the one rule;
    // the evidence is the runs that differ from this one or passed on a retry.
    let same_basis: Vec<(&Seen, Outcome)> = e
        .earlier
        .iter()
        .filter(|r| r.basis.is_some() && r.basis == this.basis)
        .filter_map(|r| r.outcome(t.suite, t.id).map(|o| (*r, o)))
        .collect();
    if here.is_outcome() && rules::is_flaky(std::iter::once(here).chain(same_basis.iter().map(|(_, o)| *o))) {
        let evidence = same_basis
            .iter()
            .filter(|(_, o)| o.is_outcome() && (o.status != here.status || o.retried))
            .map(|(r, _)| r.key.clone())
            .collect();
        classes.push(Class { class: Verdict::Flaky, evidence });
    }
    // Broken: failed in each of the newest runs of every pair that ran it.
    if here.status == Status::Failed {
        if let Some(ran) = e.pairs.broken(t.suite, t.id) {
            let keys: Vec<String> = ran.iter().take(EVIDENCE).map(|at| e.pairs.run(*at).key.clone()).collect();
            classes.push(Class { class: Verdict::Broken, evidence: keys });
        }
    }
    // Divergent: at this commit, this run beside the other pairs' newest runs, by the one rule.
    if let (Some(commit), true) = (&this.commit, here.is_outcome()) {
        let outcomes = e.pairs.at_commit(commit, t.suite, t.id);
        let others = outcomes.iter().map(|(at, s)| (e.pairs.run(*at), *s)).filter(|(r, _)| r.pair != this.pair);
        if let Some((passed, failed)) = rules::divergence(std::iter::once((this, here.status)).chain(others)) {
            let other_side = if here.status == Status::Passed { failed } else { passed };
            let evidence = other_side.iter().take(EVIDENCE).map(|r| r.key.clone()).collect();
            classes.push(Class { class: Verdict::Divergent, evidence });
        }
    }
    classes
}

/// Per suite of run `this`, how many of its tests fall in each class (only classes some test
/// does). The tests weighed are those a class can hold: the ones that failed or passed on a
/// retry here, those that failed or passed on a retry in an earlier run at this run's commit
/// (version), and those
/// that failed on some pair at this run's commit.
pub fn counts(this: &Seen, e: &Evidence) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for (suite, ran) in &this.suites {
        let mut ids: BTreeSet<u32> = ran.failed.iter().chain(&ran.retried).copied().collect();
        for earlier in e.earlier.iter().filter(|r| r.basis.is_some() && r.basis == this.basis) {
            if let Some(r) = earlier.suites.get(suite) {
                ids.extend(r.failed.iter().chain(&r.retried));
            }
        }
        if let Some(commit) = &this.commit {
            ids.extend(e.pairs.failing_at(commit, suite).iter());
        }
        let mut classes: BTreeMap<String, u64> = BTreeMap::new();
        for id in ids {
            let Some(outcome) = this.outcome(suite, id) else { continue };
            let t = Weighed { suite, id, outcome };
            for class in classify(&t, this, e) {
                *classes.entry(class.class.name().to_string()).or_default() += 1;
            }
        }
        counts.insert(suite.clone(), classes);
    }
    counts
}

/// The classes' rules, `{class: rule}` in [`RULES`]' order (the page's legend).
#[derive(Default)]
pub struct Rules;

impl Serialize for Rules {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.collect_map(RULES.iter().map(|(verdict, rule)| (verdict.name(), *rule)))
    }
}

/// A class a test falls in, with the runs that show it.
#[derive(Serialize)]
pub struct Class {
    pub class: Verdict,
    pub evidence: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::digest::SuiteDigest;
    use serde_json::json;

    const ID: u32 = 7;

    fn seen(key: &str, pair: &str, commit: &str, status: Status) -> Seen {
        let mut suite = SuiteDigest { name: "crud".into(), ..SuiteDigest::default() };
        match status {
            Status::Passed => suite.passed = 1,
            Status::Failed => suite.failed_ids = vec![ID],
            _ => suite.skipped_ids = vec![ID],
        }
        let digest = Digest::at_commit(commit, vec![suite]);
        Seen::of(key, pair, &[digest])
    }

    fn test(status: Status) -> Weighed<'static> {
        Weighed { suite: "crud", id: ID, outcome: Outcome { status, retried: false } }
    }

    fn names(classes: &[Class]) -> Vec<&str> {
        classes.iter().map(|c| c.class.name()).collect()
    }

    /// Each class by its rule, with the runs that show it.
    #[test]
    fn each_class_by_its_rule() {
        let now = seen("a/1", "linux", "c2", Status::Failed);
        let before = seen("a/0", "linux", "c1", Status::Passed);
        let mac = seen("m/1", "mac", "c2", Status::Passed);
        let mac_before = seen("m/0", "mac", "c1", Status::Passed);
        let e_pairs = Pairs::of(vec![vec![&now, &before], vec![&mac, &mac_before]]);
        let e = Evidence { earlier: vec![&before], pairs: &e_pairs };
        let classes = classify(&test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["regressed", "divergent"]);
        assert_eq!(json!(classes[0].evidence), json!(["a/0"]));
        assert_eq!(json!(classes[1].evidence), json!(["m/1"]));
        // The matrix counts the same, and the passing side of the divergence on the mac.
        assert_eq!(counts(&now, &e)["crud"], BTreeMap::from([("divergent".into(), 1), ("regressed".into(), 1)]));
        let e_mac_pairs = Pairs::of(vec![vec![&now, &before], vec![&mac, &mac_before]]);
        let e_mac = Evidence { earlier: vec![&mac_before], pairs: &e_mac_pairs };
        assert_eq!(counts(&mac, &e_mac)["crud"], BTreeMap::from([("divergent".into(), 1)]));

        // Failed twice on every pair that ran it: broken, and neither new nor divergent.
        let old = seen("a/0", "linux", "c1", Status::Failed);
        let mac = seen("m/1", "mac", "c2", Status::Failed);
        let mac_before = seen("m/0", "mac", "c1", Status::Failed);
        let e_pairs = Pairs::of(vec![vec![&now, &old], vec![&mac, &mac_before]]);
        let e = Evidence { earlier: vec![&old], pairs: &e_pairs };
        assert_eq!(names(&classify(&test(Status::Failed), &now, &e)), ["broken"]);

        // Passed and failed at one commit: flaky (and here new too), naming the run that
        // differed; a pass on a retry is flaky by itself.
        let same_commit = seen("a/0", "linux", "c2", Status::Passed);
        let e_pairs = Pairs::of(vec![]);
        let e = Evidence { earlier: vec![&same_commit], pairs: &e_pairs };
        let classes = classify(&test(Status::Failed), &now, &e);
        assert_eq!(names(&classes), ["regressed", "flaky"]);
        assert_eq!(json!(classes[1].evidence), json!(["a/0"]));
        let retried = Weighed { outcome: Outcome { status: Status::Passed, retried: true }, ..test(Status::Passed) };
        let e_pairs = Pairs::of(vec![]);
        let e = Evidence { earlier: vec![], pairs: &e_pairs };
        assert_eq!(names(&classify(&retried, &seen("a/1", "linux", "c2", Status::Passed), &e)), ["flaky"]);
    }

    /// A pass on a retry in the pair's earlier run at this commit makes this run's pass flaky
    /// too, naming that run; and the matrix's cell counts it.
    #[test]
    fn an_earlier_retry_at_the_commit_is_flaky_here() {
        let suite = SuiteDigest { name: "crud".into(), passed: 1, retried_ids: vec![ID], ..SuiteDigest::default() };
        let digest = Digest {
            version: "1".into(),
            commit: Some("c2".into()),
            branch: None,
            start: 0,
            labels: Default::default(),
            suites: vec![suite],
        };
        let earlier = Seen::of("a/0", "linux", &[digest]);
        assert_eq!(earlier.outcome("crud", ID), Some(Outcome { status: Status::Passed, retried: true }));
        let now = seen("a/1", "linux", "c2", Status::Passed);
        let e_pairs = Pairs::of(vec![]);
        let e = Evidence { earlier: vec![&earlier], pairs: &e_pairs };
        let classes = classify(&test(Status::Passed), &now, &e);
        assert_eq!(names(&classes), ["flaky"]);
        assert_eq!(json!(classes[0].evidence), json!(["a/0"]));
        assert_eq!(counts(&now, &e)["crud"], BTreeMap::from([("flaky".into(), 1)]));
        // At another commit, the earlier retry says nothing of this run.
        let elsewhere = seen("a/1", "linux", "c3", Status::Passed);
        assert!(classify(&test(Status::Passed), &elsewhere, &e).is_empty());
    }

    /// A skipped test, or one of a suite the run did not run, is no outcome there: not a pass.
    #[test]
    fn a_test_not_run_is_no_outcome() {
        let skipped = seen("a/0", "linux", "c1", Status::Skipped);
        assert_eq!(skipped.status("crud", ID), None);
        assert_eq!(skipped.status("sql", ID), None);
        assert_eq!(skipped.status("crud", ID + 1), Some(Status::Passed));
        let now = seen("a/1", "linux", "c2", Status::Failed);
        let e_pairs = Pairs::of(vec![]);
        let e = Evidence { earlier: vec![&skipped], pairs: &e_pairs };
        assert!(classify(&test(Status::Failed), &now, &e).is_empty());
    }
}
