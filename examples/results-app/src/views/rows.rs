//! A run as the views send it: its row (its name, time, where it came from and its counts),
//! the matrix's cells and labels from its files' digests, and the tests flaky among a pair's
//! runs.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::analysis::classes::{self, Evidence, Pairs, Seen};
use crate::analysis::rules::{self, Outcome};
use crate::model::digest::Digest;
use crate::model::{identified, stored_at, Run, TestId};
use crate::store::reader::{Digested, Loaded, MISSING};
use crate::views::shapes::{Cell, Counts, RowCi, RunFiles, RunRow};

/// A row of a run: its key, its pair, when it was stored (its time until its reports say when
/// it ran) and how many files it has; nothing else yet.
fn bare(key: &str, platform: &str, browser: &str, files: usize) -> RunRow {
    let stored = stored_at(key);
    RunRow {
        key: key.to_string(),
        platform: platform.to_string(),
        browser: browser.to_string(),
        time: stored,
        stored,
        files: RunFiles::Count(files),
        error: None,
        version: None,
        ci: None,
        summary: None,
        unreadable: None,
        labels: None,
        cells: None,
    }
}

/// A run's digests as the classes weigh them.
pub(crate) fn seen(d: &Digested) -> Seen {
    Seen::of(&d.key, &format!("{}/{}", d.platform, d.browser), &d.digests)
}

/// A run in a list: its name, labels, time, where it came from and its counts over every
/// file, or why it cannot be shown. Its time is when its reports say it started, else when it
/// was first stored (`stored`).
pub(crate) fn brief(l: &Loaded) -> RunRow {
    let mut row = bare(&l.key, &l.platform, &l.browser, l.files.len());
    let reports: Vec<&Run> = l.reports().collect();
    let Some(first) = reports.first() else {
        let why = l.files.iter().find_map(|f| f.run.as_ref().err()).cloned();
        row.error = Some(why.unwrap_or_else(|| MISSING.into()));
        return row;
    };
    if let Some(start) = reports.iter().map(|r| r.results.summary.start).filter(|s| *s > 0).min() {
        row.time = Some(start);
    }
    let mut versions: Vec<&str> = reports.iter().map(|r| r.version.as_str()).collect();
    versions.dedup();
    row.version = Some(versions.join(", "));
    let ci = reports.iter().find(|r| r.ci.run.is_some() || r.ci.commit.is_some()).map_or(&first.ci, |r| &r.ci);
    row.ci = RowCi::of(ci);
    let sum = |f: fn(&crate::model::Summary) -> u64| reports.iter().map(|r| f(&r.results.summary)).sum::<u64>();
    row.summary = Some(Counts {
        tests: sum(|s| s.tests),
        passed: sum(|s| s.passed),
        failed: sum(|s| s.failed),
        skipped: sum(|s| s.skipped + s.pending + s.other),
    });
    let unreadable = l.files.iter().filter(|f| f.run.is_err()).count();
    row.unreadable = (unreadable > 0).then_some(unreadable);
    row
}

/// A run in the matrix, from its digests: as [`brief`] has it, but for the CI run's page,
/// which only the bodies hold, and its branch, of which digests hold the first 32 bytes.
pub(crate) fn digest_brief(d: &Digested) -> RunRow {
    let mut row = bare(&d.key, &d.platform, &d.browser, d.files);
    if d.digests.is_empty() {
        row.error = Some(d.error.clone().unwrap_or_else(|| MISSING.into()));
        return row;
    }
    if let Some(start) = started(d) {
        row.time = Some(start);
    }
    let mut versions: Vec<&str> = d.digests.iter().map(|x| x.version.as_str()).collect();
    versions.sort_unstable();
    versions.dedup();
    row.version = Some(versions.join(", "));
    let commit = d.digests.iter().find_map(|x| x.commit.clone());
    let branch = d.branch().map(str::to_string);
    if commit.is_some() || branch.is_some() {
        row.ci = Some(RowCi { commit, branch, ..RowCi::default() });
    }
    let suites = || d.digests.iter().flat_map(|x| &x.suites);
    // Counts from names, which anyone may write: summed without overflowing.
    let sum =
        |count: fn(&crate::model::digest::SuiteDigest) -> u64| suites().map(count).fold(0u64, u64::saturating_add);
    let (passed, failed, skipped) = (sum(|s| s.passed), sum(|s| s.failed), sum(|s| s.skipped));
    let tests = passed.saturating_add(failed).saturating_add(skipped);
    row.summary = Some(Counts { tests, passed, failed, skipped });
    row.unreadable = (d.unreadable > 0).then_some(d.unreadable);
    row
}

/// The build-variant labels of a run's files (the first file's where two differ).
pub(crate) fn run_labels(digests: &[Digest]) -> Map<String, Value> {
    let mut labels = Map::new();
    for (key, value) in digests.iter().flat_map(|d| &d.labels) {
        labels.entry(key.clone()).or_insert_with(|| value.clone().into());
    }
    labels
}

/// Passed, failed and skipped (pending and other with them) per suite, over every file, and
/// how many of the suite's tests fall in each class (only those some test does).
pub(crate) fn cells(digests: &[Digest], this: &Seen, e: &Evidence) -> BTreeMap<String, Cell> {
    let mut counts: BTreeMap<&str, [u64; 3]> = BTreeMap::new();
    for suite in digests.iter().flat_map(|d| &d.suites) {
        let cell = counts.entry(&suite.name).or_default();
        for (total, n) in cell.iter_mut().zip([suite.passed, suite.failed, suite.skipped]) {
            *total = total.saturating_add(n);
        }
    }
    let mut classes = classes::counts(this, e);
    counts
        .into_iter()
        .map(|(suite, [passed, failed, skipped])| {
            let classes = classes.remove(suite).unwrap_or_default();
            (suite.to_string(), Cell { passed, failed, skipped, classes })
        })
        .collect()
}

/// The evidence for a run: the pair's runs before it, and every pair's newest runs.
pub(crate) fn evidence<'e, 'a>(earlier: &'a [Seen], pairs: &'e Pairs<'a>) -> Evidence<'e, 'a> {
    Evidence { earlier: earlier.iter().collect(), pairs }
}

/// When a run started, as its reports say (none say: `None`).
pub(crate) fn started(run: &Digested) -> Option<u64> {
    run.digests.iter().map(|d| d.start).filter(|s| *s > 0).min()
}

/// A failure's first line that says something, clipped to `most` characters. A line that
/// ends in `:` says what follows (node's "Expected values to be strictly equal:", then
/// "1 !== 2"): the next line that says something is joined to it.
pub fn first_line(message: &str, most: usize) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let line = match lines.next().filter(|_| first.ends_with(':')) {
        Some(next) => format!("{first} {next}"),
        None => first.to_string(),
    };
    match line.char_indices().nth(most) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// Tests flaky among `runs` at one commit (or version), by the one rule: (basis, test).
pub(crate) fn flaky(runs: &[Loaded]) -> Vec<(String, TestId)> {
    let mut outcomes: BTreeMap<(String, TestId), Vec<Outcome>> = BTreeMap::new();
    for run in runs {
        let Some(basis) = run.basis() else { continue };
        for (id, (_, t)) in identified(run.tests()) {
            outcomes.entry((basis.clone(), id)).or_default().push(Outcome::of(t));
        }
    }
    outcomes.into_iter().filter(|(_, o)| rules::is_flaky(o.iter().copied())).map(|(id, _)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reader::File;
    use crate::views::tests::report;
    use serde_json::json;

    fn value(row: RunRow) -> Value {
        serde_json::to_value(row).unwrap()
    }

    fn loaded(at_ms: u64, files: Vec<Result<Run, String>>) -> Loaded {
        let key = format!("linux/c/{}", crate::model::run_segment(at_ms, "aa"));
        let files = files.into_iter().enumerate().map(|(i, run)| File { key: format!("{key}/f{i}"), run }).collect();
        Loaded { key, platform: "linux".into(), browser: "c".into(), files }
    }

    fn one(suite: &str, name: &str, status: &str) -> Value {
        json!({"name": name, "status": status, "duration": 1, "suite": suite})
    }

    /// A run's age counts from when its reports say it ran (the earliest), not from when it
    /// was posted.
    #[test]
    fn a_run_is_dated_by_its_report() {
        let dated = value(brief(&loaded(1_795_000_000_000, vec![Ok(report(1_577_836_800_000, None, json!([])))])));
        assert_eq!(
            (dated["time"].as_u64(), dated["stored"].as_u64()),
            (Some(1_577_836_800_000), Some(1_795_000_000_000))
        );
        let undated = value(brief(&loaded(1_795_000_000_000, vec![Ok(report(0, None, json!([])))])));
        assert_eq!(undated["time"].as_u64(), Some(1_795_000_000_000), "no timestamp in the report: when it was stored");
    }

    /// A run of several files counts every file's tests, per suite and in all; a file that
    /// cannot be read is counted as such and hides nothing else.
    #[test]
    fn a_run_of_many_files_counts_them_all() {
        let run = loaded(
            1_795_000_000_000,
            vec![
                Ok(report(5, Some("abc"), json!([one("crud", "a", "passed"), one("sql", "b", "failed")]))),
                Err("not a run: missing field".into()),
                Ok(report(3, None, json!([one("crud", "c", "passed"), one("event", "d", "skipped")]))),
            ],
        );
        let row = value(brief(&run));
        assert_eq!(row["summary"], json!({"tests": 4, "passed": 2, "failed": 1, "skipped": 1}));
        assert_eq!(
            (row["files"].as_u64(), row["unreadable"].as_u64(), row["time"].as_u64()),
            (Some(3), Some(1), Some(3))
        );
        assert_eq!(row["ci"]["commit"], "abc");
        // The matrix's row from the files' digests says the same.
        let digested = Digested::of(&run);
        let from_digests = value(digest_brief(&digested));
        for field in ["summary", "files", "unreadable", "time", "version", "key"] {
            assert_eq!(from_digests[field], row[field], "{field}");
        }
        assert_eq!(from_digests["ci"]["commit"], "abc");
        let cells =
            serde_json::to_value(cells(&digested.digests, &seen(&digested), &evidence(&[], &Pairs::of(vec![]))))
                .unwrap();
        assert_eq!(cells["crud"]["passed"], 2);
        assert_eq!(cells["sql"]["failed"], 1);
    }

    /// A failure's line for a list: the first that says something, with what its colon
    /// announces, clipped.
    #[test]
    fn a_failure_is_quoted_by_its_first_line() {
        assert_eq!(first_line("\n  expected 2\n  got 3", 100), "expected 2");
        assert_eq!(
            first_line("Expected values to be strictly equal:\n\n1 !== 2\n", 100),
            "Expected values to be strictly equal: 1 !== 2"
        );
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("", 3), "");
    }

    /// Flaky is keyed on the commit: a test broken at one commit and fixed at the next is not
    /// flaky; one that passed and failed at one commit is.
    #[test]
    fn flaky_is_keyed_on_the_commit() {
        let run = |commit: &str, status: &str| {
            loaded(1_795_000_000_000, vec![Ok(report(1, Some(commit), json!([one("crud", "a", status)])))])
        };
        assert!(flaky(&[run("c1", "failed"), run("c2", "passed")]).is_empty(), "fixed at the next commit");
        let flaky = flaky(&[run("c1", "failed"), run("c1", "passed")]);
        assert_eq!(flaky, vec![("commit c1".to_string(), ("crud".to_string(), "a".to_string(), 1))]);
    }
}
