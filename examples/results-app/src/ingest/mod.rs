//! A report file as a run: JUnit XML, CTRF JSON or a plain test log (told apart by content), with the platform,
//! runtime and version from the command line, the report, or this machine.

pub mod ci;
mod ctestlog;
mod ctrf;
mod escapes;
mod googletest;
mod junit;
mod labels;
pub mod naming;
mod tap;
mod textlog;

pub use labels::{parse_label, this_platform, Labels};

use std::time::Instant;

use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::{check_label, Ci, Results, Run, TEXT_PER_TEST};

/// The largest report file taken (a run of ten thousand tests is far less).
pub const MAX_REPORT_BYTES: usize = 16 * 1024 * 1024;

/// A line reader's check, every 4,096 lines: an error once a post's `deadline` has passed, so
/// that a parse stops when the collector has already answered 408.
fn in_time(line: usize, deadline: Option<Instant>, what: &str) -> AppResult<()> {
    match line.is_multiple_of(4096) && deadline.is_some_and(|d| Instant::now() > d) {
        true => Err(AppError::bad(format!("{what} was not read in the time a post has"))),
        false => Ok(()),
    }
}

/// The run in `bytes` (the contents of `file`, named in every error); reading stops with an
/// error once `deadline` has passed (a post's).
pub fn ingest(file: &str, bytes: &[u8], labels: &Labels, deadline: Option<Instant>) -> AppResult<Run> {
    if bytes.len() > MAX_REPORT_BYTES {
        return Err(AppError::bad(format!(
            "{file}: {} bytes is over the {MAX_REPORT_BYTES}-byte limit of a report",
            bytes.len()
        )));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace() && **b != 0xEF && **b != 0xBB && **b != 0xBF);
    let (mut run, from_report) = match first {
        Some(b'{') => ctrf::from_ctrf(file, bytes, labels, deadline)?,
        Some(b'<') => {
            let results = junit::parse_until(bytes, deadline)
                .map_err(|e| AppError::bad(format!("{file}:{}: {}", e.line, e.reason)))?;
            (blank(results), Default::default())
        }
        _ => match std::str::from_utf8(bytes) {
            Ok(text) if ctestlog::recognises(text) => {
                (blank(ctestlog::parse(text, deadline).map_err(|e| e.context(file))?), Default::default())
            }
            Ok(text) if tap::recognises(text) => {
                (blank(tap::parse(text, deadline).map_err(|e| e.context(file))?), Default::default())
            }
            Ok(text) if textlog::recognises(text) => {
                (blank(textlog::parse(text, deadline).map_err(|e| e.context(file))?), Default::default())
            }
            _ => {
                return Err(AppError::bad(format!(
                    "{file}: neither JUnit XML, CTRF JSON, TAP nor a ctest, cargo test or C harness log"
                )))
            }
        },
    };
    let pick = |given: &Option<String>, reported: Option<String>| given.clone().or(reported);
    run.platform = pick(&labels.platform, from_report.platform).unwrap_or_else(this_platform);
    run.browser = pick(&labels.runtime, from_report.runtime).ok_or_else(|| {
        AppError::bad(format!("{file}: the report does not say its runtime; give it (--runtime python-3.11, node-20, c-gcc-12, rust-1.95)"))
            .at("browser")
    })?;
    run.version = pick(&labels.version, from_report.version).unwrap_or_else(|| labels::UNVERSIONED.to_string());
    // The command line and the CI's environment, then the report's own (a stored run's `ci`,
    // CTRF's environment); the file's name is the one posted, where there is one.
    let reported = |field: &str| run.results.environment.get(field).and_then(Value::as_str).map(str::to_string);
    // What the report says of itself and is wrong (an empty buildUrl) is dropped, not refused.
    let own = std::mem::take(&mut run.ci);
    let own = Ci {
        commit: own.commit.or_else(|| reported("commit")),
        branch: own.branch.or_else(|| reported("branchName")),
        url: own.url.or_else(|| reported("buildUrl")),
        ..own
    }
    .without_invalid();
    let given = labels.ci.clone();
    run.ci = Ci {
        run: given.run.or(own.run),
        commit: given.commit.or(own.commit),
        branch: given.branch.or(own.branch),
        url: given.url.or(own.url),
        job: given.job.or(own.job),
        file: given.file.or(own.file),
        rerun: given.rerun || own.rerun,
    };
    for (key, value) in &labels.extra {
        run.results.environment.insert(key.clone(), Value::String(value.clone()));
    }
    // `--suite` names every test's suite; a test whose report names none takes the default
    // (the file's name, for `post`).
    if let Some(suite) = &labels.suite {
        check_label("suite", suite).map_err(|e| e.context(file))?;
    }
    for test in run.results.tests.iter_mut() {
        match (&labels.suite, &labels.default_suite) {
            (Some(suite), _) => test.suite = suite.clone(),
            (None, Some(default)) if test.suite.is_empty() => test.suite = default.clone(),
            _ => {}
        }
        test.strip_escapes();
        test.cap_text(TEXT_PER_TEST);
    }
    run.check().map_err(|e| e.context(file))?;
    Ok(run)
}

#[derive(Default)]
/// What a report says of its own platform, runtime and version (CTRF's environment).
struct Reported {
    platform: Option<String>,
    runtime: Option<String>,
    version: Option<String>,
}

fn blank(results: Results) -> Run {
    Run { platform: String::new(), browser: String::new(), version: String::new(), results, ci: Ci::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report's own commit, branch and page fill the run's; wrong ones are dropped, and the
    /// report is still taken.
    #[test]
    fn a_reports_own_origin_is_kept_when_right_and_dropped_when_wrong() {
        let report = |environment: serde_json::Value| {
            let report = serde_json::json!({"results": {"tool": {"name": "jest"}, "environment": environment,
                "tests": [{"name": "a", "status": "passed", "duration": 1, "suite": "crud"}]}});
            let labels = Labels { runtime: Some("node-22".into()), ..Labels::default() };
            ingest("r.json", report.to_string().as_bytes(), &labels, None).unwrap().ci
        };
        let right = report(serde_json::json!({"commit": "abc", "branchName": "main", "buildUrl": "https://ci/1"}));
        assert_eq!((right.commit.as_deref(), right.url.as_deref()), (Some("abc"), Some("https://ci/1")));
        let wrong = report(serde_json::json!({"commit": "HEAD~1", "branchName": "main", "buildUrl": ""}));
        assert_eq!((wrong.commit, wrong.branch.as_deref(), wrong.url), (None, Some("main"), None));
    }
}
