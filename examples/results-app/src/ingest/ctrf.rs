//! CTRF JSON as results: a report as ctrf.io writes it (`{"results": ...}`, from jest's,
//! Playwright's and other reporters) or a run as the app stores it (`{platform, browser,
//! version, results}`).

use std::time::Instant;

use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::{cap_name, Attempt, Detail, Results, Run, Status, Summary, Test, Tool};

use super::{blank, naming, Labels, Reported};

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

/// CTRF as ctrf.io writes it (`{"results": ...}`), or a stored run (`{platform, browser,
/// version, results}`). Counts are taken from the tests, whatever the summary said.
pub(super) fn from_ctrf(
    file: &str,
    bytes: &[u8],
    labels: &Labels,
    deadline: Option<Instant>,
) -> AppResult<(Run, Reported)> {
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
/// already (jest's full names: `basket totals sums`; pytest's node ids:
/// `tests/test_api.py::TestUser::test_create`).
fn ctrf_suite_and_name(path: &[&str], name: String) -> (String, String) {
    let Some(first) = path.iter().position(|s| !s.is_empty()) else { return (String::new(), cap_name(name)) };
    let suite =
        if naming::is_test_file(path[first]) { naming::suite_name(None, path[first]) } else { path[first].to_string() };
    let rest: Vec<&str> = path[first + 1..].iter().copied().filter(|s| !s.is_empty()).collect();
    let node_id = |rest: &[&str]| name.contains(&format!("::{}::", rest.join("::")));
    let name = match rest.is_empty() || name.starts_with(&rest.join(" ")) || node_id(&rest) {
        true => name,
        false => format!("{} > {name}", rest.join(" > ")),
    };
    (naming::cap_suite(suite), cap_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::ingest;
    use crate::model::TEXT_PER_TEST;

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
}
