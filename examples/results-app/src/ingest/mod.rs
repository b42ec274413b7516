//! A report file as a run: JUnit XML, CTRF JSON or a plain test log (told apart by content), with the platform,
//! runtime and version from the command line, the report, or this machine.

pub mod ci;
mod ctestlog;
mod escapes;
mod junit;
pub mod naming;
mod tap;
mod textlog;

use std::time::Instant;

use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::{
    cap_name, check_label, check_text, Attempt, Ci, Detail, Results, Run, Status, Summary, Test, Tool, TEXT_PER_TEST,
};

/// The largest report file taken (a run of ten thousand tests is far less).
pub const MAX_REPORT_BYTES: usize = 16 * 1024 * 1024;

/// Labels given on the command line; each wins over what the report says.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    pub platform: Option<String>,
    pub runtime: Option<String>,
    pub version: Option<String>,
    /// The suite of every test (`--suite`), whatever the report says.
    pub suite: Option<String>,
    /// The suite of a test whose report names none: the file's name, for `post`.
    pub default_suite: Option<String>,
    /// The CI run, commit, branch, page and job (`--run`, ..., else the CI's environment); the
    /// report's own (CTRF's `environment.commit`, `branchName`, `buildUrl`) fill what is missing.
    pub ci: Ci,
    /// Build-variant labels (`--label key=value`), added to the report's environment.
    pub extra: Vec<(String, String)>,
}

impl Labels {
    /// These labels for the report file `file`: its name is the suite of tests that name none
    /// (`crud.test.mjs` → `crud`).
    pub fn for_file(&self, file: &str) -> Labels {
        let name = std::path::Path::new(file).file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        // Up to its first dot: `crud.test.mjs`, `crud.xml` and `crud.junit.xml` are `crud`.
        let stem = name.split('.').next().unwrap_or_default().to_string();
        // A name that tells nothing (`tests.xml`) is still the file's.
        let suite = Some(naming::suite_name(Some(&stem), "")).filter(|s| !s.is_empty()).unwrap_or(stem.to_lowercase());
        let ci = Ci { file: Some(name).filter(|n| !n.is_empty()), ..self.ci.clone() };
        Labels { default_suite: Some(suite).filter(|s| !s.is_empty()), ci, ..self.clone() }
    }
}

/// A `--label key=value`: the key a label, the value a line of text.
pub fn parse_label(given: &str) -> AppResult<(String, String)> {
    let (key, value) =
        given.split_once('=').ok_or_else(|| AppError::bad(format!("--label {given:?} is not key=value")))?;
    check_label("--label key", key)?;
    check_text("--label value", value, 256)?;
    Ok((key.to_string(), value.to_string()))
}

/// This machine as a platform label: `linux-x86_64`.
pub fn this_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
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
        Some(b'{') => from_ctrf(file, bytes, labels, deadline)?,
        Some(b'<') => {
            let results = junit::parse_until(bytes, deadline)
                .map_err(|e| AppError::bad(format!("{file}:{}: {}", e.line, e.reason)))?;
            (blank(results), Default::default())
        }
        _ => match std::str::from_utf8(bytes) {
            Ok(text) if ctestlog::recognises(text) => {
                (blank(ctestlog::parse(text).map_err(|e| e.context(file))?), Default::default())
            }
            Ok(text) if tap::recognises(text) => {
                (blank(tap::parse(text, deadline).map_err(|e| e.context(file))?), Default::default())
            }
            Ok(text) if textlog::recognises(text) => {
                (blank(textlog::parse(text).map_err(|e| e.context(file))?), Default::default())
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
    run.version = pick(&labels.version, from_report.version).unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
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

/// A CTRF test's trace, output and attempts (`stdout`/`stderr` as CTRF's lists of lines, or
/// as one text).
fn ctrf_detail(t: &Value) -> AppResult<Detail> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let lines = |name: &str| -> AppResult<Vec<String>> {
        match t.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => {
                Ok(vec![items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")])
            }
            Some(_) => Err(AppError::bad(format!("{name} must be text or a list of lines"))),
        }
    };
    let mut attempts = Vec::new();
    for (i, a) in t.get("retryAttempts").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let status = match a.get("status").and_then(Value::as_str) {
            Some("passed") => Status::Passed,
            Some("skipped") => Status::Skipped,
            Some("pending") => Status::Pending,
            Some("other") => Status::Other,
            _ => Status::Failed,
        };
        let attempt = a.get("attempt").and_then(Value::as_u64).unwrap_or(i as u64 + 1);
        attempts.push(Attempt { attempt, status, message: text(a.get("message")), trace: text(a.get("trace")) });
    }
    let retries = t.get("retries").and_then(Value::as_u64).unwrap_or(attempts.len() as u64);
    Ok(Detail {
        trace: text(t.get("trace")),
        stdout: lines("stdout")?.into_iter().filter(|s| !s.is_empty()).collect(),
        stderr: lines("stderr")?.into_iter().filter(|s| !s.is_empty()).collect(),
        retries,
        flaky: t.get("flaky").and_then(Value::as_bool).unwrap_or(false),
        // Only a failure can be held by the quarantine.
        quarantined: t.get("status").and_then(Value::as_str) == Some("failed")
            && t.get("quarantined").and_then(Value::as_bool).unwrap_or(false),
        retry_attempts: attempts,
    })
}

#[derive(Default)]
struct Reported {
    platform: Option<String>,
    runtime: Option<String>,
    version: Option<String>,
}

fn blank(results: Results) -> Run {
    Run { platform: String::new(), browser: String::new(), version: String::new(), results, ci: Ci::default() }
}

/// CTRF as ctrf.io writes it (`{"results": ...}`), or a stored run (`{platform, browser,
/// version, results}`). Counts are taken from the tests, whatever the summary said.
fn from_ctrf(file: &str, bytes: &[u8], labels: &Labels, deadline: Option<Instant>) -> AppResult<(Run, Reported)> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| AppError::bad(format!("{file}:{}: not JSON: {e}", e.line())))?;
    let results =
        value.get("results").ok_or_else(|| AppError::bad(format!("{file}: a CTRF report has a \"results\" object")))?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let environment = results.get("environment").and_then(Value::as_object).cloned().unwrap_or_default();
    let reported = Reported {
        platform: text(value.get("platform")).or_else(|| text(environment.get("osPlatform"))),
        runtime: text(value.get("browser")).or_else(|| text(environment.get("runtime"))),
        version: text(value.get("version")).or_else(|| text(environment.get("appVersion"))),
    };
    let tests = results
        .get("tests")
        .and_then(Value::as_array)
        .ok_or_else(|| AppError::bad(format!("{file}: results.tests must be a list")))?;
    let mut parsed = Vec::with_capacity(tests.len());
    for (i, t) in tests.iter().enumerate() {
        if i % 4096 == 4095 && deadline.is_some_and(|d| Instant::now() > d) {
            return Err(AppError::bad(format!("{file}: the report was not read in the time a post has")));
        }
        let field = |name: &str| format!("{file}: results.tests[{i}].{name}");
        let name = text(t.get("name")).ok_or_else(|| AppError::bad(format!("{} must be text", field("name"))))?;
        let status = match t.get("status").and_then(Value::as_str) {
            Some("passed") => Status::Passed,
            Some("failed") => Status::Failed,
            Some("skipped") => Status::Skipped,
            Some("pending") => Status::Pending,
            Some("other") => Status::Other,
            other => {
                return Err(AppError::bad(format!(
                    "{} is {other:?}; use passed, failed, skipped, pending or other",
                    field("status")
                )))
            }
        };
        let duration = match t.get("duration") {
            None => 0.0,
            Some(d) => d
                .as_f64()
                .filter(|d| d.is_finite() && *d >= 0.0)
                .ok_or_else(|| AppError::bad(format!("{} must be milliseconds", field("duration"))))?,
        };
        let path: Vec<&str> = match t.get("suite") {
            None => Vec::new(),
            // jest's and Playwright's reporters join the path with " > ".
            Some(Value::String(s)) => s.split(" > ").collect(),
            Some(Value::Array(path)) => path.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(AppError::bad(format!("{} must be text", field("suite")))),
        };
        let (suite, name) = ctrf_suite_and_name(&path, name);
        let suite = if path.is_empty() { labels.suite.clone().unwrap_or_default() } else { suite };
        let message = text(t.get("message"));
        let mut detail = ctrf_detail(t).map_err(|why| AppError::bad(format!("{}{why}", field(""))))?;
        // Failed, then passed: flaky, whether or not the report says so.
        detail.flaky |= status == Status::Passed && detail.retry_attempts.iter().any(|a| a.status == Status::Failed);
        parsed.push(Test { name, status, duration, suite, message, detail });
    }
    let summary = results.get("summary");
    let stamp = |k: &str| summary.and_then(|s| s.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let tool = results.get("tool");
    let results = Results {
        tool: Tool {
            name: text(tool.and_then(|t| t.get("name"))).unwrap_or_else(|| "ctrf".into()),
            version: text(tool.and_then(|t| t.get("version"))),
        },
        summary: Summary::of(&parsed, stamp("start"), stamp("stop")),
        tests: parsed,
        environment,
    };
    let mut run = blank(results);
    // A stored run's own origin (checked with the rest of the run).
    run.ci = value.get("ci").cloned().and_then(|ci| serde_json::from_value(ci).ok()).unwrap_or_default();
    Ok((run, reported))
}

/// A CTRF test's suite and name from its suite path: the first step that tells is the column
/// (a test file's path names its module, as pytest's JUnit does: `basket.test.js` → `basket`),
/// and the steps after it are the test's path (`checkout > tax`), unless its name holds them
/// already (jest's full names: `basket totals sums`).
fn ctrf_suite_and_name(path: &[&str], name: String) -> (String, String) {
    let Some(first) = path.iter().position(|s| !s.is_empty()) else { return (String::new(), cap_name(name)) };
    let suite =
        if naming::is_test_file(path[first]) { naming::suite_name(None, path[first]) } else { path[first].to_string() };
    let rest: Vec<&str> = path[first + 1..].iter().copied().filter(|s| !s.is_empty()).collect();
    let name = match rest.is_empty() || name.starts_with(&rest.join(" ")) {
        true => name,
        false => format!("{} > {name}", rest.join(" > ")),
    };
    (junit::cap_suite(suite), cap_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CTRF's trace, output and attempts are kept; a long text is cut to the cap, saying so.
    #[test]
    fn ctrf_text_and_attempts_are_kept_and_capped() {
        let report = serde_json::json!({"results": {"tool": {"name": "pytest"}, "tests": [
            {"name": "a", "status": "passed", "duration": 1, "suite": "crud", "retries": 2, "flaky": true,
             "retryAttempts": [{"attempt": 1, "status": "failed", "message": "first"}, {"status": "failed", "trace": "t2"}]},
            {"name": "b", "status": "failed", "duration": 1, "suite": "crud", "message": "boom",
             "trace": "x".repeat(20_000), "stdout": ["one", "two"], "stderr": "err"}]}});
        let labels = Labels { runtime: Some("python-3.11".into()), ..Labels::default() };
        let run = ingest("r.json", report.to_string().as_bytes(), &labels, None).unwrap();
        let (a, b) = (&run.results.tests[0], &run.results.tests[1]);
        assert_eq!((a.detail.retries, a.detail.flaky, a.detail.retry_attempts.len()), (2, true, 2));
        assert_eq!(a.detail.retry_attempts[1].attempt, 2);
        assert_eq!(
            (b.detail.stdout.clone(), b.detail.stderr.clone()),
            (vec!["one\ntwo".to_string()], vec!["err".to_string()])
        );
        let trace = b.detail.trace.as_deref().unwrap();
        assert!(trace.len() < TEXT_PER_TEST + 64 && trace.ends_with("more bytes]"), "{}", trace.len());
    }

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
