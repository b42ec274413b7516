//! What failures cost, in units people feel (LUCI Analysis's impact, Datadog's and BuildPulse's
//! time lost): per failure group or flaky test, over a window of runs, the CI runs it failed,
//! the commits it blocked, the pairs it hit, when it was first and last seen, and the CI minutes
//! it cost. Each figure's rule is [`IMPACT_RULES`], shown beside it.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use serde::Serialize;

use crate::analysis::fingerprint;
use crate::model::failure_rules::{self, FailureRules};
use crate::model::Run;

/// Each impact figure and its rule, as the page shows them.
pub const IMPACT_RULES: [(&str, &str); 5] = [
    (
        "runs",
        "CI runs it failed: runs of a pair where one of its tests failed (a pass on a retry, or a failure the \
         quarantine held, is no failure)",
    ),
    ("blocked", "commits blocked: commits with a run whose only failures are its own"),
    ("pairs", "pairs hit: the platform/runtime pairs of the runs it failed or flaked in"),
    ("seen", "first and last seen: when the oldest and the newest of those runs started"),
    (
        "minutes",
        "CI minutes lost: a run it blocked costs its whole duration (it must run again); elsewhere, its failed and \
         retried tests' durations, as the reports give them",
    ),
];

/// The longest a run or a test counts for (a day): a report's times are its own word, and one
/// report must not claim years of CI time.
const MAX_DURATION_MS: f64 = 86_400_000.0;

/// A test that failed, or passed on a retry, in a run: what grouping and impact need of it.
#[derive(Debug, Clone)]
pub struct FailedTest {
    pub suite: String,
    pub name: String,
    /// Its id in digests.
    pub id: u32,
    /// Failed in the end (else it passed on a retry).
    pub failed: bool,
    /// Failed, but held by the quarantine when it ran: it did not fail its job.
    pub quarantined: bool,
    pub duration_ms: f64,
    pub fingerprint: String,
    /// The text rules match ([`failure_rules::matched_text`]).
    pub text: String,
}

/// What triage needs of one run, read once from its body and kept (runs never change).
#[derive(Debug)]
pub struct RunFacts {
    pub key: String,
    pub pair: String,
    pub commit: Option<String>,
    /// When its reports say it started (ms), else when it was stored.
    pub started: Option<u64>,
    /// From its reports' first start to their last stop, else its tests' durations added (ms).
    pub duration_ms: f64,
    pub failures: Vec<FailedTest>,
}

impl FailedTest {
    /// Its group: `rule <id>` of the first rule that matches it, else its fingerprint.
    pub fn group(&self, rules: &FailureRules) -> String {
        fingerprint::group_key(rules.matching(&self.suite, &self.name, &self.text), &self.fingerprint)
    }

    /// Whether it failed its job: failed in the end, and no quarantine held it.
    pub fn fails_job(&self) -> bool {
        self.failed && !self.quarantined
    }
}

impl RunFacts {
    /// The facts of run `key` of `pair` from its reports and its tests with their digest ids.
    pub fn of<'r>(
        key: &str,
        pair: &str,
        stored: Option<u64>,
        reports: impl Iterator<Item = &'r Run> + Clone,
        tests: impl Iterator<Item = (&'r crate::model::Test, u32)>,
    ) -> RunFacts {
        let starts = reports.clone().map(|r| r.results.summary.start).filter(|s| *s > 0);
        let start = starts.clone().min();
        let stop = reports.clone().map(|r| r.results.summary.stop).max().unwrap_or(0);
        let mut tested = 0.0;
        let mut failures = Vec::new();
        for (test, id) in tests {
            tested += test.duration.clamp(0.0, MAX_DURATION_MS);
            let failed = test.status == crate::model::Status::Failed;
            if failed || test.passed_on_retry() {
                failures.push(FailedTest {
                    suite: test.suite.clone(),
                    name: test.name.clone(),
                    id,
                    failed,
                    quarantined: failed && test.detail.quarantined,
                    duration_ms: test.duration.clamp(0.0, MAX_DURATION_MS),
                    fingerprint: fingerprint::fingerprint(test),
                    text: failure_rules::matched_text(test).to_string(),
                });
            }
        }
        let duration_ms = match start {
            Some(start) if stop > start => (stop - start) as f64,
            _ => tested,
        }
        .min(MAX_DURATION_MS);
        let commit = reports.clone().find_map(|r| r.ci.commit.clone());
        RunFacts { key: key.into(), pair: pair.into(), commit, started: start.or(stored), duration_ms, failures }
    }

    /// The bytes it holds, roughly (what a memo of facts counts against its bound).
    pub fn weight(&self) -> usize {
        self.key.len() + self.failures.iter().map(|f| f.suite.len() + f.name.len() + f.text.len() + 64).sum::<usize>()
    }
}

/// What a failure group or a flaky test cost over a window (see [`IMPACT_RULES`]).
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    pub runs: usize,
    pub blocked: usize,
    pub pairs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<u64>,
    /// CI minutes lost, to a tenth.
    pub minutes: f64,
}

/// The impact over `runs` of each group failures fall in, `group_of` naming a failure's.
pub fn impacts<'a, K: Hash + Eq + Clone>(
    runs: impl IntoIterator<Item = &'a RunFacts>,
    group_of: impl Fn(&FailedTest) -> K,
) -> HashMap<K, Impact> {
    #[derive(Default)]
    struct Sum<'r> {
        found: Impact,
        pairs: BTreeSet<&'r str>,
        blocked: BTreeSet<&'r str>,
        lost_ms: f64,
    }
    let mut sums: HashMap<K, Sum> = HashMap::new();
    for run in runs {
        // This run's failures by group, in the order met; and the groups that failed its job.
        let mut own: Vec<(K, Vec<&FailedTest>)> = Vec::new();
        let mut at: HashMap<K, usize> = HashMap::new();
        for f in &run.failures {
            let key = group_of(f);
            let i = *at.entry(key.clone()).or_insert_with(|| {
                own.push((key, Vec::new()));
                own.len() - 1
            });
            own[i].1.push(f);
        }
        let failing_groups = own.iter().filter(|(_, fs)| fs.iter().any(|f| f.fails_job())).count();
        for (key, tests) in own {
            let sum = sums.entry(key).or_default();
            sum.pairs.insert(&run.pair);
            if let Some(at) = run.started {
                sum.found.first_seen = Some(sum.found.first_seen.map_or(at, |f| f.min(at)));
                sum.found.last_seen = Some(sum.found.last_seen.map_or(at, |l| l.max(at)));
            }
            let failed_it = tests.iter().any(|f| f.fails_job());
            if failed_it {
                sum.found.runs += 1;
            }
            if failed_it && failing_groups == 1 {
                sum.blocked.insert(run.commit.as_deref().unwrap_or(&run.key));
                sum.lost_ms += run.duration_ms;
            } else {
                sum.lost_ms += tests.iter().map(|f| f.duration_ms).sum::<f64>();
            }
        }
    }
    sums.into_iter()
        .map(|(key, sum)| {
            let found = Impact {
                pairs: sum.pairs.len(),
                blocked: sum.blocked.len(),
                minutes: (sum.lost_ms / 6_000.0).round() / 10.0,
                ..sum.found
            };
            (key, found)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(name: &str, failed: bool, ms: f64) -> FailedTest {
        FailedTest {
            suite: "s".into(),
            name: name.into(),
            id: 0,
            failed,
            quarantined: false,
            duration_ms: ms,
            fingerprint: "f".into(),
            text: String::new(),
        }
    }

    fn run(key: &str, pair: &str, commit: &str, at: u64, failures: Vec<FailedTest>) -> RunFacts {
        RunFacts {
            key: key.into(),
            pair: pair.into(),
            commit: Some(commit.into()),
            started: Some(at),
            duration_ms: 600_000.0,
            failures,
        }
    }

    /// A run failed by `a` alone is blocked by it and costs its whole ten minutes; a run failed
    /// by `a` and `b` costs `a`'s own time; a pass on a retry costs its time, fails no run.
    #[test]
    fn minutes_lost_and_commits_blocked() {
        let runs = [
            run("r1", "linux/c", "c1", 10, vec![failed("a", true, 30_000.0)]),
            run("r2", "mac/c", "c2", 20, vec![failed("a", true, 60_000.0), failed("b", true, 1.0)]),
            run("r3", "mac/c", "c3", 30, vec![failed("a", false, 6_000.0)]),
            run("r4", "win/c", "c4", 40, vec![failed("b", true, 1.0)]),
        ];
        let found = impacts(&runs, |f| f.name.clone());
        assert_eq!(
            found["a"],
            Impact { runs: 2, blocked: 1, pairs: 2, first_seen: Some(10), last_seen: Some(30), minutes: 11.1 },
            "10 minutes for r1, 1 for r2, 0.1 for r3"
        );
        let b = &found["b"];
        assert_eq!((b.runs, b.blocked, b.pairs, b.minutes), (2, 1, 2, 10.0));
        // A failure the quarantine held failed no job: beside it, the other failure blocked the
        // run alone; itself, it failed no run and costs its own time.
        let mut held = failed("q", true, 6_000.0);
        held.quarantined = true;
        let runs = [run("r5", "linux/c", "c5", 50, vec![held, failed("a", true, 1.0)])];
        let found = impacts(&runs, |f| f.name.clone());
        assert_eq!((found["a"].runs, found["a"].blocked, found["a"].minutes), (1, 1, 10.0));
        assert_eq!((found["q"].runs, found["q"].blocked, found["q"].minutes), (0, 0, 0.1));
    }
}
