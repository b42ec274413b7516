//! ctest's own console output as results: its JUnit file keeps only a repeated test's last
//! attempt, while the console (`ctest --repeat until-pass:N --output-on-failure`) shows each
//! attempt with its output.
//!
//! ```text
//! 4/4 Test #4: flaky ............................***Failed    0.00 sec
//! first attempt fails
//!     Test #4: flaky ............................   Passed    0.00 sec
//! ```
//!
//! A GoogleTest test's output opens with GoogleTest's banner: its message is its own failure
//! block (`file:line: Failure` up to `[  FAILED  ]`), in the words of GoogleTest's XML, and the
//! whole output is its trace. ctest's console names no labels, so a GoogleTest name
//! (`Vector.Length`) gives the suite (`vector`) and the name GoogleTest's XML gives (`Vector::Length`).

use std::collections::HashMap;
use std::time::Instant;

use super::googletest;
use crate::error::{AppError, AppResult};
use crate::model::{Attempt, Detail, Results, Status, Summary, Test, Tool};

/// Whether `text` is ctest's console output.
pub fn recognises(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("Test project ")) && text.lines().any(|l| test_line(l).is_some())
}

/// One result line: its test number, name, status, the outcome's words and seconds.
struct Line<'a> {
    number: u64,
    name: &'a str,
    status: Status,
    outcome: &'a str,
    seconds: f64,
}

/// `[N/M ]Test #K: NAME ....***Failed    0.00 sec`.
fn test_line(line: &str) -> Option<Line<'_>> {
    let rest = line.trim_start();
    let rest = match rest.split_once(' ') {
        Some((count, after)) if count.contains('/') && count.bytes().all(|b| b.is_ascii_digit() || b == b'/') => {
            after.trim_start()
        }
        _ => rest,
    };
    let rest = rest.strip_prefix("Test")?.trim_start().strip_prefix('#')?;
    let (number, rest) = rest.split_once(": ")?;
    let number = number.trim().parse().ok()?;
    let (name, rest) = rest.split_once(" .")?;
    let rest = rest.trim_start_matches('.').trim().strip_suffix("sec")?.trim_end();
    let (outcome, seconds) = rest.rsplit_once(char::is_whitespace)?;
    let outcome = outcome.trim().trim_start_matches('*').trim();
    let status = match outcome {
        "Passed" => Status::Passed,
        // A test ctest did not run because it is disabled or skipped; `Not Run` alone (a missing
        // executable) is a failure, as ctest counts it.
        o if o.starts_with("Not Run (Disabled)") || o.starts_with("Skipped") || o.starts_with("Disabled") => {
            Status::Skipped
        }
        _ => Status::Failed,
    };
    Some(Line { number, name: name.trim(), status, outcome, seconds: seconds.parse().unwrap_or(0.0) })
}

/// The tests of a ctest console log, each repeat an attempt; an error when it holds none, or
/// once `deadline` has passed.
pub fn parse(text: &str, deadline: Option<Instant>) -> AppResult<Results> {
    let mut tests: Vec<Test> = Vec::new();
    let mut by_number: HashMap<u64, usize> = HashMap::new();
    let mut lines = text.lines().enumerate().map(|(i, line)| (i + 1, line)).peekable();
    while let Some((i, line)) = lines.next() {
        super::in_time(i, deadline, "the ctest output")?;
        let Some(t) = test_line(line) else { continue };
        // A failure's output follows it, up to the next test's start or the summary.
        let mut output = Vec::new();
        while let Some(&(j, next)) = lines.peek() {
            let trimmed = next.trim_start();
            if trimmed.starts_with("Start ") || test_line(next).is_some() || trimmed.contains("% tests passed") {
                break;
            }
            super::in_time(j, deadline, "the ctest output")?;
            output.push(next);
            lines.next();
        }
        let output = output.join("\n").trim().to_string();
        let (message, trace) = match (t.status, googletest::failures(&output)) {
            (Status::Passed, _) => (None, None),
            (_, Some(failures)) => (Some(failures), Some(output)),
            (_, None) if output.is_empty() => (Some(t.outcome.to_string()), None),
            (_, None) => (Some(format!("{}\n{output}", t.outcome)), None),
        };
        let (suite, name) = googletest::names_in_ctest(t.name).unwrap_or_else(|| (String::new(), t.name.to_string()));
        let test = Test {
            name,
            status: t.status,
            duration: t.seconds * 1000.0,
            suite,
            message,
            detail: Detail { trace, ..Detail::default() },
        };
        match by_number.get(&t.number) {
            // A repeat: what came before is an attempt, this is the test's status now.
            Some(&i) => {
                let earlier = std::mem::replace(&mut tests[i], test);
                let mut attempts = earlier.detail.retry_attempts;
                let n = attempts.len() as u64 + 1;
                let trace = earlier.detail.trace;
                attempts.push(Attempt { attempt: n, status: earlier.status, message: earlier.message, trace });
                let flaky = tests[i].status == Status::Passed && attempts.iter().any(|a| a.status == Status::Failed);
                let detail = std::mem::take(&mut tests[i].detail);
                tests[i].detail = Detail { retries: attempts.len() as u64, flaky, retry_attempts: attempts, ..detail };
            }
            None => {
                by_number.insert(t.number, tests.len());
                tests.push(test);
            }
        }
    }
    if tests.is_empty() {
        return Err(AppError::bad("the ctest output holds no test results"));
    }
    Ok(Results {
        tool: Tool { name: "ctest".into(), version: None },
        summary: Summary::of(&tests, 0, 0),
        tests,
        environment: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each repeat is an attempt; a pass after a failure is flaky; a failure keeps its output;
    /// a disabled test is skipped, one that could not run (no executable) failed.
    #[test]
    fn repeats_are_attempts() {
        let log =
            "Test project /tmp/b\n    Start 1: put\n1/3 Test #1: put ....   Passed    0.01 sec\n    Start 2: flaky\n\
                   2/3 Test #2: flaky ....***Failed    0.00 sec\nfirst attempt fails\n\n    Start 2: flaky\n\
                   \x20   Test #2: flaky ....   Passed    0.02 sec\n    Start 3: later\n\
                   3/4 Test #3: later ....***Not Run (Disabled)   0.00 sec\n\
                   4/4 Test #4: gone ....***Not Run   0.00 sec\n\n67% tests passed, 1 tests failed out of 3\n";
        assert!(recognises(log));
        let r = parse(log, None).unwrap();
        let seen: Vec<(&str, Status, u64, bool)> =
            r.tests.iter().map(|t| (t.name.as_str(), t.status, t.detail.retries, t.detail.flaky)).collect();
        assert_eq!(
            seen,
            [
                ("put", Status::Passed, 0, false),
                ("flaky", Status::Passed, 1, true),
                ("later", Status::Skipped, 0, false),
                ("gone", Status::Failed, 0, false)
            ]
        );
        assert_eq!(r.tests[1].detail.retry_attempts[0].message.as_deref(), Some("Failed\nfirst attempt fails"));
        assert_eq!(r.tests[1].duration, 20.0);
    }

    /// A long log stops once the post's deadline has passed (the collector answered 408 already).
    #[test]
    fn a_long_log_stops_at_the_deadline() {
        let log: String = std::iter::once("Test project /tmp/b\n".to_string())
            .chain((1..=5_000).map(|n| format!("{n}/5000 Test #{n}: t{n} ....   Passed    0.00 sec\n")))
            .collect();
        assert_eq!(parse(&log, None).unwrap().tests.len(), 5_000);
        let past = Instant::now().checked_sub(std::time::Duration::from_secs(1));
        let late = parse(&log, past).unwrap_err();
        assert!(late.message.contains("not read in the time a post has"), "{}", late.message);
    }
}
