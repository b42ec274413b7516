//! A test's own history on one pair: its outcomes run after run (identical stretches
//! collapsed), since when it fails, its durations (p50, p95) and whether its newest run was
//! slower than its last ten.

use serde::Serialize;

use crate::model::{Status, Test};

/// How many of a pair's runs a test's history reads.
pub const HISTORY_RUNS: usize = 50;
/// A newest duration this much over the median of the ten before is marked slower.
const SLOWER_BY: f64 = 0.2;

/// The test in one run: its key, when it ran, its commit, and its status and duration there
/// (`None` when the run did not hold it).
pub struct TestInRun {
    pub run: String,
    pub time: Option<u64>,
    pub commit: Option<String>,
    pub found: Option<(Status, f64, bool)>,
}

/// The test in a run holding it `tests` (its occurrences): failed if any failed, else passed if
/// any passed; durations added; flaky if one passed on a retry.
pub fn outcome_of(tests: &[&Test]) -> Option<(Status, f64, bool)> {
    let status = if tests.iter().any(|t| t.status == Status::Failed) {
        Status::Failed
    } else if tests.iter().any(|t| t.status == Status::Passed) {
        Status::Passed
    } else {
        tests.first()?.status
    };
    Some((status, tests.iter().map(|t| t.duration).sum(), tests.iter().any(|t| t.passed_on_retry())))
}

/// The history of `outcomes` (newest first): its stretches, since when it fails, its durations
/// and whether its newest pass was slower.
pub fn history(outcomes: &[TestInRun]) -> History {
    let label = |o: &TestInRun| match o.found {
        None => "not run",
        Some((Status::Passed, _, true)) => "flaky",
        Some((Status::Passed, ..)) => "passed",
        Some((Status::Failed, ..)) => "failed",
        Some(_) => "skipped",
    };
    let mut strip: Vec<Stretch> = Vec::new();
    for o in outcomes {
        match strip.last_mut() {
            Some(last) if last.status == label(o) => {
                last.runs += 1;
                last.oldest = o.run.clone();
            }
            _ => strip.push(Stretch { status: label(o), runs: 1, newest: o.run.clone(), oldest: o.run.clone() }),
        }
    }
    // Since when it fails: the oldest run of the failing stretch the newest run is in.
    let ran: Vec<&TestInRun> = outcomes.iter().filter(|o| o.found.is_some()).collect();
    let failing = ran.iter().take_while(|o| matches!(o.found, Some((Status::Failed, ..)))).count();
    let failing_since = (failing > 0).then(|| {
        let since = ran[failing - 1];
        FailingSince {
            run: since.run.clone(),
            time: since.time,
            commit: since.commit.clone(),
            runs: failing,
            all: failing == ran.len(),
        }
    });
    let mut passed: Vec<f64> = ran
        .iter()
        .filter_map(|o| match o.found {
            Some((Status::Passed, d, _)) => Some(d),
            _ => None,
        })
        .collect();
    let (mut durations, mut slower) = (None, None);
    if !passed.is_empty() {
        // The newest pass against the median of the ten before it.
        let (newest, before) = (passed[0], median(&mut passed[1..passed.len().min(11)].to_vec()));
        passed.sort_by(f64::total_cmp);
        durations = Some(Durations { p50: percentile(&passed, 0.5), p95: percentile(&passed, 0.95), of: passed.len() });
        slower = before
            .filter(|b| *b > 0.0 && newest > b * (1.0 + SLOWER_BY))
            .map(|before| ((newest / before - 1.0) * 100.0).round());
    }
    History { strip, failing_since, durations, slower }
}

/// The nearest-rank percentile of sorted `values`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    (!values.is_empty()).then(|| percentile(values, 0.5))
}

/// A test's outcomes run after run, since when it fails, its durations and whether it slowed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub strip: Vec<Stretch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<FailingSince>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durations: Option<Durations>,
    /// How much slower (percent) its newest pass was than the ten before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slower: Option<f64>,
}

/// Runs in a row where the test had one outcome, newest first.
#[derive(Serialize)]
pub struct Stretch {
    pub status: &'static str,
    pub runs: u64,
    pub newest: String,
    pub oldest: String,
}

/// The oldest run of the failing stretch the newest run is in.
#[derive(Serialize)]
pub struct FailingSince {
    pub run: String,
    pub time: Option<u64>,
    pub commit: Option<String>,
    pub runs: usize,
    /// Whether it failed in every run that ran it.
    pub all: bool,
}

/// A test's durations when it passed (ms).
#[derive(Serialize)]
pub struct Durations {
    pub p50: f64,
    pub p95: f64,
    pub of: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(run: &str, found: Option<(Status, f64, bool)>) -> TestInRun {
        TestInRun { run: run.into(), time: None, commit: Some(format!("c-{run}")), found }
    }

    /// Stretches collapse; the failing stretch names its first run; durations come from passes;
    /// a newest pass far over the ten before is slower.
    #[test]
    fn a_tests_history() {
        let f = Some((Status::Failed, 1.0, false));
        let p = |d: f64| Some((Status::Passed, d, false));
        let outcomes =
            vec![o("r9", f), o("r8", None), o("r7", f), o("r6", p(10.0)), o("r5", p(10.0)), o("r4", p(12.0))];
        let h = serde_json::to_value(history(&outcomes)).unwrap();
        let strip: Vec<(&str, u64)> = h["strip"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["status"].as_str().unwrap(), s["runs"].as_u64().unwrap()))
            .collect();
        assert_eq!(strip, [("failed", 1), ("not run", 1), ("failed", 1), ("passed", 3)]);
        assert_eq!((h["failingSince"]["run"].as_str(), h["failingSince"]["runs"].as_u64()), (Some("r7"), Some(2)));
        assert_eq!(h["failingSince"]["commit"], "c-r7");
        assert_eq!((h["durations"]["p50"].as_f64(), h["durations"]["p95"].as_f64()), (Some(10.0), Some(12.0)));
        assert!(h.get("slower").is_none(), "the newest pass is 10 against a median of 10");
        let slower = serde_json::to_value(history(&[o("b", p(30.0)), o("a", p(10.0)), o("z", p(10.0))])).unwrap();
        assert_eq!(slower["slower"], 200.0);
    }
}
