//! Each verdict's rule, decided here once: the classes of a run's tests, a pair's history and
//! the commit view all ask these, so a test is flaky (new, divergent) on every page or on none.

use crate::model::{Status, Test};

/// A test's outcome in one run, as the rules weigh it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    /// It failed first and passed on a retry.
    pub retried: bool,
}

impl Outcome {
    pub fn of(test: &Test) -> Outcome {
        Outcome { status: test.status, retried: test.passed_on_retry() }
    }

    /// Passed or failed: what the rules weigh (a skip says nothing either way).
    pub fn is_outcome(self) -> bool {
        is_outcome(self.status)
    }
}

/// Passed or failed: what the rules weigh (a skip says nothing either way).
pub fn is_outcome(status: Status) -> bool {
    matches!(status, Status::Passed | Status::Failed)
}

/// Flaky, the one definition every view shares: among one pair's runs at one basis (a commit,
/// else a version), the test passed on a retry in one of them, or passed in one and failed in
/// another.
pub fn is_flaky(outcomes: impl IntoIterator<Item = Outcome>) -> bool {
    let (mut passed, mut failed) = (false, false);
    for outcome in outcomes {
        if outcome.retried && outcome.status == Status::Passed {
            return true;
        }
        passed |= outcome.status == Status::Passed;
        failed |= outcome.status == Status::Failed;
    }
    passed && failed
}

/// Divergent: at one commit, the test passed on some pairs and failed on others. Given each
/// pair's outcome there, the pairs on each side (passed, failed), if it is.
pub fn divergence<P>(by_pair: impl IntoIterator<Item = (P, Status)>) -> Option<(Vec<P>, Vec<P>)> {
    let (mut passed, mut failed) = (Vec::new(), Vec::new());
    for (pair, status) in by_pair {
        match status {
            Status::Passed => passed.push(pair),
            Status::Failed => failed.push(pair),
            _ => {}
        }
    }
    (!passed.is_empty() && !failed.is_empty()).then_some((passed, failed))
}

/// Regressed: failed now, and passed in the run it is weighed against.
pub fn is_regressed(before: Option<Status>, now: Status) -> bool {
    before == Some(Status::Passed) && now == Status::Failed
}

/// Fixed: passed now, and failed in the run it is weighed against.
pub fn is_fixed(before: Option<Status>, now: Status) -> bool {
    before == Some(Status::Failed) && now == Status::Passed
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSED: Outcome = Outcome { status: Status::Passed, retried: false };
    const FAILED: Outcome = Outcome { status: Status::Failed, retried: false };
    const SKIPPED: Outcome = Outcome { status: Status::Skipped, retried: false };
    const RETRIED: Outcome = Outcome { status: Status::Passed, retried: true };

    /// A pass on a retry is flaky by itself; otherwise both outcomes must be seen, and a skip
    /// is neither.
    #[test]
    fn flaky_is_a_retry_pass_or_both_outcomes() {
        assert!(is_flaky([RETRIED]));
        assert!(is_flaky([PASSED, RETRIED]));
        assert!(is_flaky([FAILED, PASSED]));
        assert!(!is_flaky([PASSED, PASSED]));
        assert!(!is_flaky([FAILED, SKIPPED]));
        assert!(!is_flaky([]));
        // "retried" means passed on a retry: a failed test marked so is no retry pass.
        assert!(!is_flaky([Outcome { status: Status::Failed, retried: true }]));
    }

    #[test]
    fn divergence_names_each_side() {
        let by_pair = [("linux", Status::Failed), ("mac", Status::Passed), ("win", Status::Skipped)];
        assert_eq!(divergence(by_pair), Some((vec!["mac"], vec!["linux"])));
        assert_eq!(divergence([("linux", Status::Failed), ("mac", Status::Skipped)]), None);
    }

    #[test]
    fn new_and_fixed_weigh_the_run_before() {
        assert!(is_regressed(Some(Status::Passed), Status::Failed));
        assert!(!is_regressed(Some(Status::Skipped), Status::Failed));
        assert!(!is_regressed(None, Status::Failed));
        assert!(is_fixed(Some(Status::Failed), Status::Passed));
        assert!(!is_fixed(Some(Status::Passed), Status::Passed));
    }
}
