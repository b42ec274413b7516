//! The result format (the app README's "The result format"), the one definition the reporters, `post` and the collector
//! share: one object per report file at `<platform>/<browser>/<run>/<file id>`, where `<run>` is
//! `<reverse timestamp>-<run id>` and every file of one run shares it; its body a record
//! `{platform, browser, version, results, ci?}` whose `results` is a CTRF report with a suite
//! named on every test, sent with the metadata headers platform, browser and version.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::names::{check_label, clip, sort_suites};
use crate::error::{AppError, AppResult};

/// The longest platform, browser or version label.
pub const MAX_LABEL: usize = 64;

/// A stored report file of a run: the labels the layout and the metadata carry, the report, and
/// where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub platform: String,
    pub browser: String,
    pub version: String,
    pub results: Results,
    #[serde(default, skip_serializing_if = "Ci::is_empty")]
    pub ci: Ci,
}

/// Where a report came from: the CI run it is part of, the commit, branch and job, and the
/// report file's name. Build-variant labels are the report's `environment`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    /// The run's identity (`github-9876543210-1`): every file posted for one CI run and attempt
    /// carries the same, and is stored under the same `<run>` name segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The CI job's or run's page (http or https).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The report file's name, as it was posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The file reruns tests its run already has (`post --rerun`): its tests are their later
    /// attempts (see `rerun.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rerun: bool,
}

impl Ci {
    pub fn is_empty(&self) -> bool {
        *self == Ci::default()
    }

    /// Without the fields [`Ci::check`] refuses: what a report says of itself is dropped when
    /// it is wrong, rather than refusing the report.
    pub fn without_invalid(self) -> Ci {
        let fits = |ci: Ci| ci.check().is_ok();
        Ci {
            run: self.run.filter(|v| fits(Ci { run: Some(v.clone()), ..Ci::default() })),
            commit: self.commit.filter(|v| fits(Ci { commit: Some(v.clone()), ..Ci::default() })),
            branch: self.branch.filter(|v| fits(Ci { branch: Some(v.clone()), ..Ci::default() })),
            url: self.url.filter(|v| fits(Ci { url: Some(v.clone()), ..Ci::default() })),
            job: self.job.filter(|v| fits(Ci { job: Some(v.clone()), ..Ci::default() })),
            file: self.file.filter(|v| fits(Ci { file: Some(v.clone()), ..Ci::default() })),
            rerun: self.rerun,
        }
    }

    /// Checks what a page shows of it: a run id and commit as labels, an http(s) URL, short
    /// texts without control characters.
    pub fn check(&self) -> AppResult<()> {
        if let Some(run) = &self.run {
            check_label("ci.run", run)?;
        }
        if let Some(commit) = &self.commit {
            check_label("ci.commit", commit)?;
        }
        for (field, text) in [("ci.branch", &self.branch), ("ci.job", &self.job), ("ci.file", &self.file)] {
            if let Some(text) = text {
                check_text(field, text, MAX_TEXT)?;
            }
        }
        if let Some(url) = &self.url {
            check_text("ci.url", url, MAX_URL)?;
            if !super::is_web_address(url) {
                return Err(AppError::bad(format!(
                    "ci.url {:?} must be an http or https URL without spaces",
                    clip(url)
                ))
                .at("ci.url"));
            }
        }
        Ok(())
    }
}

/// The longest branch, job or file name kept.
const MAX_TEXT: usize = 256;
const MAX_URL: usize = 2048;
/// The most build-variant labels (a report's `environment`), as JSON bytes.
pub const MAX_ENVIRONMENT_BYTES: usize = 16 * 1024;

/// A text a page shows on one line: 1 to `max` bytes, no control characters.
pub fn check_text(field: &str, text: &str, max: usize) -> AppResult<()> {
    if text.is_empty() || text.len() > max {
        return Err(AppError::bad(format!("{field} must be 1 to {max} bytes, not {}", text.len())).at(field));
    }
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(AppError::bad(format!("{field} {:?} holds the control character {c:?}", clip(text))).at(field)),
        None => Ok(()),
    }
}

/// CTRF's `results` (ctrf.io), with the fields the app reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub tool: Tool,
    pub summary: Summary,
    pub tests: Vec<Test>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub environment: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub tests: u64,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub pending: u64,
    pub other: u64,
    /// Milliseconds since the epoch.
    pub start: u64,
    pub stop: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    Skipped,
    Pending,
    Other,
}

impl Status {
    /// The status as the stored format writes it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Pending => "pending",
            Status::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Test {
    pub name: String,
    pub status: Status,
    /// Milliseconds (written as an integer when whole, as the reporters write them).
    #[serde(serialize_with = "whole_or_fraction")]
    pub duration: f64,
    /// The matrix column: crud, cursor, event, transaction, query, sql, or any other.
    pub suite: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What else the report says of the test (CTRF's names).
    #[serde(flatten)]
    pub detail: Detail,
}

/// A test's text beyond its message, and its earlier attempts, as CTRF names them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// The failure's or error's body: a stack trace, an assertion's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    #[serde(default, deserialize_with = "lines", skip_serializing_if = "Vec::is_empty")]
    pub stdout: Vec<String>,
    #[serde(default, deserialize_with = "lines", skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
    /// Attempts before the last one.
    #[serde(default, deserialize_with = "count", skip_serializing_if = "is_zero")]
    pub retries: u64,
    /// Failed, then passed on a retry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
    /// Failed, and held by the bucket's quarantine when it ran: it did not fail its job.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    #[serde(default, rename = "retryAttempts", skip_serializing_if = "Vec::is_empty")]
    pub retry_attempts: Vec<Attempt>,
}

/// One earlier attempt of a test (the last one is the test's own status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    #[serde(default)]
    pub attempt: u64,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most text kept of one test (message, trace, output and attempts together), by default.
pub const TEXT_PER_TEST: usize = 8 * 1024;

/// A text read in parts (an XML element's, a TAP test's comment lines) that keeps at most `cap`
/// bytes as it goes and counts the rest: what a report holds past the cap never reaches memory.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CappedText {
    kept: String,
    cut: usize,
}

impl CappedText {
    pub fn push(&mut self, text: &str) {
        let room = TEXT_PER_TEST.saturating_sub(self.kept.len());
        let mut end = room.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.kept.push_str(&text[..end]);
        self.cut += text.len() - end;
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.cut == 0
    }

    /// `more` after this text, on a line of its own (nothing when it holds only spaces).
    pub fn append(&mut self, more: CappedText) {
        if more.kept.trim().is_empty() && more.cut == 0 {
            return;
        }
        if !self.is_empty() {
            self.push("\n");
        }
        self.push(&more.kept);
        self.cut += more.cut;
    }

    pub fn as_str(&self) -> &str {
        &self.kept
    }

    /// The text kept, trimmed, saying how much was cut (as [`Test::cap_text`] does, which counts
    /// it in when it cuts again); `None` when there is none.
    pub fn finish(self) -> Option<String> {
        let kept = self.kept.trim();
        match (kept.is_empty(), self.cut) {
            (true, 0) => None,
            (_, 0) => Some(kept.to_string()),
            (_, cut) => Some(format!("{kept}{}", cut_note(cut))),
        }
    }
}

fn cut_note(cut: usize) -> String {
    format!("… [cut: {cut} more bytes]")
}

/// How many bytes an earlier cut took from `text` (its closing note), and where that note starts.
fn earlier_cut(text: &str) -> Option<(usize, usize)> {
    let rest = text.strip_suffix(" more bytes]")?;
    let at = rest.rfind("… [cut: ")?;
    let cut = rest[at + "… [cut: ".len()..].parse().ok()?;
    Some((at, cut))
}

impl Test {
    /// Failed first, then passed on a retry: the report marks it flaky and its last attempt
    /// passed.
    pub fn passed_on_retry(&self) -> bool {
        self.detail.flaky && self.status == Status::Passed
    }

    /// Keeps at most `limit` bytes of the test's text (message, trace, output and the
    /// attempts', of which the first and last ten are kept): over it, short texts stay whole and
    /// the long ones share the rest, each cut saying how much was. Capping twice changes nothing.
    pub fn cap_text(&mut self, limit: usize) {
        let d = &mut self.detail;
        if d.retry_attempts.len() > 2 * ATTEMPTS_KEPT {
            d.retry_attempts.drain(ATTEMPTS_KEPT..d.retry_attempts.len() - ATTEMPTS_KEPT);
        }
        let mut texts: Vec<&mut String> = self
            .message
            .iter_mut()
            .chain(d.trace.iter_mut())
            .chain(d.stderr.iter_mut())
            .chain(d.stdout.iter_mut())
            .collect();
        for a in &mut d.retry_attempts {
            texts.extend(a.message.iter_mut().chain(a.trace.iter_mut()));
        }
        if texts.iter().map(|t| t.len()).sum::<usize>() <= limit {
            return;
        }
        // The level that shares `limit`: texts shorter than it stay whole, the rest are cut to it.
        let mut lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        lengths.sort_unstable();
        let (mut left, mut share) = (limit, 0);
        for (i, len) in lengths.iter().enumerate() {
            let fair = left / (lengths.len() - i);
            if *len > fair {
                share = fair;
                break;
            }
            left -= len;
        }
        for text in texts {
            if text.len() > share {
                // A text cut while it was read says so already: its note goes, its count stays.
                let before = match earlier_cut(text) {
                    Some((at, cut)) => {
                        text.truncate(at);
                        cut
                    }
                    None => 0,
                };
                // The note counts in the share, so that the whole stays within `limit`.
                let room = share.saturating_sub(cut_note(text.len() + before).len());
                let mut end = room.min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let cut = text.len() - end + before;
                text.truncate(end);
                text.push_str(&cut_note(cut));
            }
        }
    }
}

/// Of a test's many earlier attempts, how many of the first and of the last are kept.
const ATTEMPTS_KEPT: usize = 10;

/// A list of lines as CTRF writes it, or one text, or nothing (a stored run is read leniently).
fn lines<'de, D: serde::Deserializer<'de>>(input: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Lines {
        Many(Vec<String>),
        One(String),
        None(()),
    }
    Ok(match Lines::deserialize(input)? {
        Lines::Many(lines) => lines,
        Lines::One(line) => vec![line],
        Lines::None(()) => Vec::new(),
    })
}

/// A count, or nothing (null) as none.
fn count<'de, D: serde::Deserializer<'de>>(input: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(input)?.unwrap_or(0))
}

fn whole_or_fraction<S: serde::Serializer>(ms: &f64, out: S) -> Result<S::Ok, S::Error> {
    if ms.fract() == 0.0 && (0.0..9.0e15).contains(ms) {
        out.serialize_u64(*ms as u64)
    } else {
        out.serialize_f64(*ms)
    }
}

impl Summary {
    /// Counts what the tests say, whatever a producer declared.
    pub fn of(tests: &[Test], start: u64, stop: u64) -> Summary {
        let mut summary = Summary { tests: tests.len() as u64, start, stop, ..Summary::default() };
        for test in tests {
            *match test.status {
                Status::Passed => &mut summary.passed,
                Status::Failed => &mut summary.failed,
                Status::Skipped => &mut summary.skipped,
                Status::Pending => &mut summary.pending,
                Status::Other => &mut summary.other,
            } += 1;
        }
        summary
    }
}

impl Run {
    /// Checks what a run must be before it is stored: its labels, a suite on every test, and
    /// a summary that counts its tests.
    pub fn check(&self) -> AppResult<()> {
        check_label("platform", &self.platform)?;
        check_label("browser", &self.browser)?;
        check_label("version", &self.version)?;
        if let Some(i) = self.results.tests.iter().position(|t| t.suite.trim().is_empty()) {
            return Err(AppError::bad(format!("results.tests[{i}].suite is empty: every test names its suite")));
        }
        self.ci.check()?;
        let environment = serde_json::to_vec(&self.results.environment).map_or(0, |e| e.len());
        if environment > MAX_ENVIRONMENT_BYTES {
            return Err(AppError::bad(format!(
                "results.environment is {environment} bytes; at most {MAX_ENVIRONMENT_BYTES}"
            )));
        }
        if let Some(i) = self.results.tests.iter().position(|t| !t.duration.is_finite() || t.duration < 0.0) {
            return Err(AppError::bad(format!(
                "results.tests[{i}].duration must be a number of milliseconds, 0 or more"
            )));
        }
        let counted = Summary::of(&self.results.tests, self.results.summary.start, self.results.summary.stop);
        if counted != self.results.summary {
            return Err(AppError::bad(format!(
                "results.summary does not count results.tests ({} tests: {} passed, {} failed, {} skipped)",
                counted.tests, counted.passed, counted.failed, counted.skipped
            )));
        }
        Ok(())
    }

    /// The suites present, in the matrix's order: the six known ones first, then the others.
    pub fn suites(&self) -> Vec<String> {
        // A suite's tests come together: each name is taken once per run of them, not per test.
        let mut names = BTreeSet::new();
        let mut last = None;
        for suite in self.results.tests.iter().map(|t| t.suite.as_str()) {
            if last != Some(suite) {
                names.insert(suite);
                last = Some(suite);
            }
        }
        let mut suites = names.into_iter().map(str::to_string).collect();
        sort_suites(&mut suites);
        suites
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tests: Vec<Test>) -> Run {
        let summary = Summary::of(&tests, 1, 2);
        Run {
            platform: "linux-x86_64".into(),
            browser: "python-3.11".into(),
            version: "0.1.0".into(),
            results: Results {
                tool: Tool { name: "pytest".into(), version: None },
                summary,
                tests,
                environment: Map::new(),
            },
            ci: Ci::default(),
        }
    }

    fn test(suite: &str, status: Status) -> Test {
        Test {
            name: format!("{suite} test"),
            status,
            duration: 1.5,
            suite: suite.into(),
            message: None,
            detail: Detail::default(),
        }
    }

    /// Over the cap, short texts stay whole and long ones share the rest, within the cap, cut
    /// on a character and saying so; capping again changes nothing; of many attempts the first
    /// and last ten stay.
    #[test]
    fn a_tests_text_is_capped_once_and_fairly() {
        let mut t = test("crud", Status::Failed);
        t.message = Some("short".into());
        t.detail.trace = Some("é".repeat(6_000));
        t.detail.stdout = vec!["x".repeat(9_000)];
        t.detail.retry_attempts = (1..=50)
            .map(|n| Attempt { attempt: n, status: Status::Failed, message: Some(format!("try {n}")), trace: None })
            .collect();
        t.cap_text(TEXT_PER_TEST);
        let texts = |t: &Test| -> usize {
            t.message.iter().chain(t.detail.trace.iter()).chain(t.detail.stdout.iter()).map(String::len).sum::<usize>()
                + t.detail.retry_attempts.iter().filter_map(|a| a.message.as_ref()).map(String::len).sum::<usize>()
        };
        assert!(texts(&t) <= TEXT_PER_TEST, "{}", texts(&t));
        assert_eq!(t.message.as_deref(), Some("short"));
        let trace = t.detail.trace.clone().unwrap();
        assert!(trace.ends_with("more bytes]") && trace.starts_with('é'), "{}", &trace[..20]);
        let attempts: Vec<u64> = t.detail.retry_attempts.iter().map(|a| a.attempt).collect();
        assert_eq!(attempts, (1..=10).chain(41..=50).collect::<Vec<_>>());
        let once = t.clone();
        t.cap_text(TEXT_PER_TEST);
        assert_eq!(t, once, "capping twice changes nothing");
    }

    /// A stored run is read leniently: output as one text or null, a null count, an attempt
    /// without its number.
    #[test]
    fn odd_detail_fields_are_read_leniently() {
        let t: Test = serde_json::from_value(serde_json::json!({"name": "a", "status": "passed", "duration": 1,
            "suite": "crud", "stdout": "one text", "stderr": null, "retries": null,
            "retryAttempts": [{"status": "failed"}]}))
        .unwrap();
        assert_eq!((t.detail.stdout, t.detail.stderr.len(), t.detail.retries), (vec!["one text".to_string()], 0, 0));
        assert_eq!(t.detail.retry_attempts[0].attempt, 0);
    }

    #[test]
    fn a_run_names_every_suite_and_counts_its_tests() {
        let good = run(vec![test("sql", Status::Passed), test("crud", Status::Failed), test("zeta", Status::Skipped)]);
        good.check().unwrap();
        assert_eq!(good.suites(), vec!["crud", "sql", "zeta"]);
        let mut unnamed = good.clone();
        unnamed.results.tests[1].suite = " ".into();
        assert!(unnamed.check().unwrap_err().message.contains("tests[1].suite"));
        let mut miscounted = good.clone();
        miscounted.results.summary.passed = 3;
        assert!(miscounted.check().unwrap_err().message.contains("does not count"));
        let text = serde_json::to_string(&good).unwrap();
        assert_eq!(serde_json::from_str::<Run>(&text).unwrap(), good);
    }
}

/// What the language reporters write is what the app reads: their stored runs, as written by
/// the pytest plugin and the node:test reporter in this project's own test run.
#[cfg(test)]
mod reporters {
    use super::*;

    #[test]
    fn the_reporters_runs_are_runs() {
        for text in [
            include_str!("../../tests/fixtures/pytest-plugin-run.json"),
            include_str!("../../tests/fixtures/node-reporter-run.json"),
        ] {
            let run: Run = serde_json::from_str(text).unwrap();
            run.check().unwrap();
            assert!(
                run.suites().starts_with(&["crud".to_string(), "cursor".into(), "event".into()]),
                "{:?}",
                run.suites()
            );
            let back: Value = serde_json::to_value(&run).unwrap();
            assert_eq!(back, serde_json::from_str::<Value>(text).unwrap(), "nothing lost or added on the way");
        }
    }
}
