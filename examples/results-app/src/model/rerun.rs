//! Reruns. A team whose runner has no retries reruns a failed file and posts both reports; the
//! second is posted as a rerun (`post --rerun`, `ci.rerun` in the format) and holds later
//! attempts of tests its run already has. When a run's files are read, each rerun (in the order
//! they started) is folded into the files before it: a test of the same suite, name and
//! occurrence takes the rerun's test as its last attempt (a pass after a failure is flaky); a
//! test that passed before and passes again is left as it was; a test the run did not have yet
//! stays the rerun file's own. So the same test in the same pair and run is one test, counted
//! once, in every view. A rerun's name carries no digest: a listing cannot fold it, so a run
//! with a rerun is read from its bodies.

use std::collections::HashMap;

use super::run::{Attempt, Run, Status, Summary, Test};

/// Folds the reruns among `files` (a run's readable files, in the run's order) into the files
/// before them, as the module says; every file's summary is counted again.
pub fn fold_reruns(files: &mut [&mut Run]) {
    let mut reruns: Vec<usize> = (0..files.len()).filter(|i| files[*i].ci.rerun).collect();
    if reruns.is_empty() {
        return;
    }
    reruns.sort_by_key(|i| files[*i].results.summary.start);
    let originals: Vec<usize> = (0..files.len()).filter(|i| !files[*i].ci.rerun).collect();
    for rerun in reruns {
        // Where each test of the files before it is: (suite, name, occurrence) → (file, test).
        let mut earlier: HashMap<(String, String, usize), (usize, usize)> = HashMap::new();
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        for &file in &originals {
            for (at, t) in files[file].results.tests.iter().enumerate() {
                let n = seen.entry((t.suite.clone(), t.name.clone())).or_default();
                *n += 1;
                earlier.insert((t.suite.clone(), t.name.clone(), *n), (file, at));
            }
        }
        let tests = std::mem::take(&mut files[rerun].results.tests);
        let mut own = Vec::new();
        let mut occurrences: HashMap<(String, String), usize> = HashMap::new();
        for test in tests {
            let n = occurrences.entry((test.suite.clone(), test.name.clone())).or_default();
            *n += 1;
            match earlier.get(&(test.suite.clone(), test.name.clone(), *n)) {
                Some(&(file, at)) => {
                    let before = &mut files[file].results.tests[at];
                    if !(before.status == Status::Passed && test.status == Status::Passed) {
                        before.join_rerun(test);
                    }
                }
                None => own.push(test),
            }
        }
        files[rerun].results.tests = own;
    }
    for run in files.iter_mut() {
        let (start, stop) = (run.results.summary.start, run.results.summary.stop);
        run.results.summary = Summary::of(&run.results.tests, start, stop);
    }
}

impl Test {
    /// Takes `later` as this test's last attempt: its status, time and text become the
    /// test's, this test's own (and `later`'s earlier attempts) its attempts before it. A pass
    /// after an attempt that did not pass is flaky.
    pub fn join_rerun(&mut self, later: Test) {
        let d = &mut self.detail;
        let first = Attempt {
            attempt: d.retry_attempts.len() as u64 + 1,
            status: self.status,
            message: self.message.take(),
            trace: d.trace.take(),
        };
        d.retry_attempts.push(first);
        for a in later.detail.retry_attempts {
            d.retry_attempts.push(Attempt { attempt: d.retry_attempts.len() as u64 + 1, ..a });
        }
        self.status = later.status;
        self.message = later.message;
        self.duration = later.duration;
        d.trace = later.detail.trace;
        d.stdout = later.detail.stdout;
        d.stderr = later.detail.stderr;
        d.retries = d.retry_attempts.len() as u64;
        d.flaky = self.status == Status::Passed && d.retry_attempts.iter().any(|a| a.status != Status::Passed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(rerun: bool, start: u64, tests: serde_json::Value) -> Run {
        let mut run: Run = serde_json::from_value(json!({"platform": "linux", "browser": "node-20", "version": "1",
            "results": {"tool": {"name": "node"}, "summary": {"tests": 0, "passed": 0, "failed": 0, "skipped": 0,
                "pending": 0, "other": 0, "start": start, "stop": start}, "tests": tests}}))
        .unwrap();
        run.ci.rerun = rerun;
        run
    }

    fn test(name: &str, status: &str) -> serde_json::Value {
        json!({"name": name, "suite": "basket", "status": status, "duration": 1, "message": format!("{name} {status}")})
    }

    /// A failed test that passes on the rerun is one flaky pass with its failure as an attempt;
    /// one that fails again is one failure with two attempts; a pass rerun and passing is left;
    /// a test only the rerun has is its own; two reruns fold in the order they started.
    #[test]
    fn a_rerun_folds_into_the_run_as_later_attempts() {
        let mut first = report(false, 1, json!([test("a", "failed"), test("b", "passed"), test("c", "failed")]));
        let mut later = report(true, 3, json!([test("c", "passed")]));
        let mut rerun = report(
            true,
            2,
            json!([test("a", "passed"), test("b", "passed"), test("c", "failed"), test("d", "passed")]),
        );
        fold_reruns(&mut [&mut first, &mut later, &mut rerun]);
        let status = |run: &Run| run.results.tests.iter().map(|t| (t.name.clone(), t.status)).collect::<Vec<_>>();
        assert_eq!(
            status(&first),
            [("a".into(), Status::Passed), ("b".into(), Status::Passed), ("c".into(), Status::Passed)]
        );
        let [a, b, c] = &first.results.tests[..] else { panic!() };
        assert!(a.passed_on_retry() && a.detail.retries == 1 && a.detail.retry_attempts[0].status == Status::Failed);
        assert_eq!(a.detail.retry_attempts[0].message.as_deref(), Some("a failed"));
        assert!(!b.detail.flaky && b.detail.retries == 0, "a pass rerun and passing is left as it was");
        assert_eq!(
            c.detail.retry_attempts.iter().map(|x| x.status).collect::<Vec<_>>(),
            [Status::Failed, Status::Failed]
        );
        assert!(c.passed_on_retry(), "failed, failed, then passed on the second rerun");
        assert_eq!(status(&rerun), [("d".into(), Status::Passed)]);
        assert!(later.results.tests.is_empty());
        let counts = |run: &Run| (run.results.summary.tests, run.results.summary.passed, run.results.summary.failed);
        assert_eq!((counts(&first), counts(&rerun), counts(&later)), ((3, 3, 0), (1, 1, 0), (0, 0, 0)));
    }
}
