//! The flaky tests of a pair's window of runs, with how often they flaked: the one rule
//! (`rules::is_flaky`) at each commit (version) the window holds, and the runs that show it —
//! those where the test passed on a retry, or failed at a commit where it also passed.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::classes::Seen;
use crate::analysis::rules::{self, Outcome};
use crate::model::Status;

/// A test flaky in a window: its suite and digest id, the runs that ran it, the runs (by
/// place in the window, newest first) where it flaked, and the newest run whose page marks it
/// flaky.
#[derive(Debug, PartialEq)]
pub struct Flaked {
    pub suite: String,
    pub id: u32,
    pub ran: usize,
    pub runs: Vec<usize>,
    pub marked: usize,
}

/// The tests flaky among `window` (one pair's runs, newest first), by their digests.
pub fn flaked(window: &[Seen]) -> Vec<Flaked> {
    let candidates: BTreeSet<(&str, u32)> = window.iter().flat_map(Seen::marked).collect();
    let mut found = Vec::new();
    for (suite, id) in candidates {
        let outcomes: Vec<Option<Outcome>> =
            window.iter().map(|r| r.outcome(suite, id).filter(|o| o.is_outcome())).collect();
        let runs = flaky_runs(window, &outcomes);
        let Some(marked) = newest_marked(window, &outcomes) else { continue };
        if runs.is_empty() {
            continue;
        }
        let ran = outcomes.iter().flatten().count();
        found.push(Flaked { suite: suite.to_string(), id, ran, runs, marked });
    }
    found
}

/// The runs of `window` (by place, oldest last) that show a test flaky, given its outcome in
/// each (`None` where it did not run): at each commit (version) where the one rule finds it
/// flaky, the runs where it passed on a retry or failed.
pub fn flaky_runs(window: &[Seen], outcomes: &[Option<Outcome>]) -> Vec<usize> {
    let mut by_basis: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (at, run) in window.iter().enumerate() {
        if let (Some(basis), Some(_)) = (run.basis.as_deref(), outcomes[at]) {
            by_basis.entry(basis).or_default().push(at);
        }
    }
    let mut runs: Vec<usize> = by_basis
        .values()
        .filter(|at| rules::is_flaky(at.iter().filter_map(|i| outcomes[*i])))
        .flatten()
        .copied()
        .filter(|i| outcomes[*i].is_some_and(|o| o.retried || o.status == Status::Failed))
        .collect();
    runs.sort_unstable();
    runs
}

/// The newest run of `window` whose page marks the test flaky: as `classes::classify` weighs a
/// run, its outcome with the older runs' at its commit (version), by the one rule.
pub fn newest_marked(window: &[Seen], outcomes: &[Option<Outcome>]) -> Option<usize> {
    (0..window.len()).find(|&i| {
        let Some(here) = outcomes[i] else { return false };
        let basis = window[i].basis.as_deref();
        let older = (i + 1..window.len())
            .filter(|j| basis.is_some() && window[*j].basis.as_deref() == basis)
            .filter_map(|j| outcomes[j]);
        rules::is_flaky(std::iter::once(here).chain(older))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::digest::{Digest, SuiteDigest};

    /// A run at `commit` of suite `s` where test 7 `failed` or passed (on a retry).
    fn run(key: &str, commit: &str, failed: bool, retried: bool) -> Seen {
        let suite = SuiteDigest {
            name: "s".into(),
            failed_ids: if failed { vec![7] } else { vec![] },
            retried_ids: if retried { vec![7] } else { vec![] },
            ..SuiteDigest::default()
        };
        let digest = Digest::at_commit(commit, vec![suite]);
        Seen::of(key, "linux/c", &[digest])
    }

    #[test]
    fn a_failure_at_a_commit_that_also_passed_is_a_flaky_run() {
        let window = [run("r3", "c2", false, false), run("r2", "c1", false, false), run("r1", "c1", true, false)];
        // It flaked in r1; r2's page marks it flaky (r1 before it at c1 failed); r1's does not.
        assert_eq!(flaked(&window), vec![Flaked { suite: "s".into(), id: 7, ran: 3, runs: vec![2], marked: 1 }]);
        // Broken at one commit, fixed at the next: not flaky.
        let fixed = [run("r2", "c2", false, false), run("r1", "c1", true, false)];
        assert_eq!(flaked(&fixed), vec![]);
        // A pass on a retry is flaky by itself.
        let retried = [run("r1", "c1", false, true)];
        assert_eq!(flaked(&retried), vec![Flaked { suite: "s".into(), id: 7, ran: 1, runs: vec![0], marked: 0 }]);
    }
}
