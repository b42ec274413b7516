//! Plain-text test logs as results, for runners with no machine-readable report on stable
//! toolchains: `cargo test`'s own output (libtest's `test NAME ... ok` lines, the suite being
//! the test file's name up to its first `_`, a unit test's first module, or `doc`), and the
//! project's C harness (`ok   SUITE: NAME` / `FAIL SUITE: NAME`, its failure lines before).

use std::time::Instant;

use crate::error::{AppError, AppResult};
use crate::model::{Detail, Results, Status, Summary, Test, Tool};

/// Whether `text` is one of the logs this module reads.
pub fn recognises(text: &str) -> bool {
    text.lines().any(|l| libtest_line(l).is_some() || harness_line(l).is_some())
}

/// The tests of a log; an error when it holds none, or once `deadline` has passed.
pub fn parse(text: &str, deadline: Option<Instant>) -> AppResult<Results> {
    let libtest = text.lines().any(|l| libtest_line(l).is_some());
    let (tool, tests) =
        if libtest { ("cargo test", cargo_test(text, deadline)?) } else { ("c harness", harness(text, deadline)?) };
    if tests.is_empty() {
        return Err(AppError::bad("the log holds no test results"));
    }
    Ok(Results {
        tool: Tool { name: tool.into(), version: None },
        summary: Summary::of(&tests, 0, 0),
        tests,
        environment: Default::default(),
    })
}

/// `test NAME ... ok|FAILED|ignored[, reason]` → (name, status).
fn libtest_line(line: &str) -> Option<(&str, Status)> {
    let rest = line.strip_prefix("test ")?;
    let (name, outcome) = rest.rsplit_once(" ... ")?;
    let status = match outcome.trim() {
        "ok" => Status::Passed,
        "FAILED" => Status::Failed,
        o if o == "ignored" || o.starts_with("ignored, ") => Status::Skipped,
        _ => return None,
    };
    Some((name.trim(), status))
}

fn cargo_test(text: &str, deadline: Option<Instant>) -> AppResult<Vec<Test>> {
    let mut tests = Vec::new();
    let mut binary = String::from("unit");
    let mut messages: Vec<(String, String, String)> = Vec::new(); // (binary, test, output)
    let mut lines = text.lines().enumerate().map(|(i, line)| (i + 1, line)).peekable();
    while let Some((i, line)) = lines.next() {
        super::in_time(i, deadline, "the log")?;
        let trimmed = line.trim_start();
        if let Some(what) = trimmed.strip_prefix("Running ") {
            binary = binary_suite(what);
        } else if let Some(krate) = trimmed.strip_prefix("Doc-tests ") {
            binary = format!("doc:{krate}");
        } else if let Some((name, status)) = libtest_line(line) {
            let suite = match binary.as_str() {
                "unit" => name.split("::").next().unwrap_or("unit").to_string(),
                b if b.starts_with("doc:") => "doc".to_string(),
                b => b.to_string(),
            };
            tests.push((
                binary.clone(),
                Test { name: name.to_string(), status, duration: 0.0, suite, message: None, detail: Detail::default() },
            ));
        } else if let Some(name) = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----")) {
            let mut output = Vec::new();
            while let Some(&(j, next)) = lines.peek() {
                if next.starts_with("---- ") || next == "failures:" {
                    break;
                }
                super::in_time(j, deadline, "the log")?;
                output.push(next);
                lines.next();
            }
            messages.push((binary.clone(), name.to_string(), output.join("\n").trim().to_string()));
        }
    }
    // Each failure's output goes to its test through an index: a log of many tests and many
    // failures costs their number, not its product.
    let mut by_name: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for (i, (binary, test)) in tests.iter().enumerate() {
        by_name.entry((binary.as_str(), test.name.as_str())).or_insert(i);
    }
    let found: Vec<(usize, String)> = messages
        .into_iter()
        .filter_map(|(binary, name, output)| Some((*by_name.get(&(binary.as_str(), name.as_str()))?, output)))
        .collect();
    for (i, output) in found {
        tests[i].1.message = Some(output);
    }
    Ok(tests.into_iter().map(|(_, t)| t).collect())
}

/// `unittests src/lib.rs (target/...)` → unit; `tests/sync_local.rs (target/...)` → sync.
fn binary_suite(what: &str) -> String {
    if what.starts_with("unittests ") {
        return "unit".into();
    }
    let path = what.split(" (").next().unwrap_or(what);
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".rs");
    stem.split('_').next().filter(|s| !s.is_empty()).unwrap_or("tests").to_string()
}

/// `ok   SUITE: NAME` or `FAIL SUITE: NAME` → (suite, name, status).
fn harness_line(line: &str) -> Option<(&str, &str, Status)> {
    let (status, rest) = if let Some(rest) = line.strip_prefix("ok   ") {
        (Status::Passed, rest)
    } else {
        (Status::Failed, line.strip_prefix("FAIL ")?)
    };
    let (suite, name) = rest.split_once(": ")?;
    (!suite.is_empty() && !suite.contains(' ') && !name.is_empty()).then_some((suite, name.trim(), status))
}

fn harness(text: &str, deadline: Option<Instant>) -> AppResult<Vec<Test>> {
    let mut tests = Vec::new();
    // The harness prints what failed (indented) before the test's own line.
    let mut said: Vec<&str> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        super::in_time(i + 1, deadline, "the log")?;
        match harness_line(line) {
            Some((suite, name, status)) => {
                let message = (status == Status::Failed && !said.is_empty()).then(|| said.join("\n"));
                tests.push(Test {
                    name: name.into(),
                    status,
                    duration: 0.0,
                    suite: suite.into(),
                    message,
                    detail: Detail::default(),
                });
                said.clear();
            }
            None if line.starts_with("  ") => said.push(line.trim()),
            None => {}
        }
    }
    Ok(tests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_tests_output_with_a_failure_and_an_ignored_test() {
        let log = "   Compiling x v0.1.0
     Running unittests src/lib.rs (target/debug/deps/x-0123)

running 2 tests
test sql::parser::tests::select ... ok
test key::tests::order ... ignored, slow

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/sync_local.rs (target/debug/deps/sync_local-4567)

running 2 tests
test a_put_becomes_an_object ... FAILED
test offline_reads ... ok

failures:

---- a_put_becomes_an_object stdout ----

thread 'a_put_becomes_an_object' panicked at core/tests/sync_local.rs:60:5:
assertion `left == right` failed

failures:
    a_put_becomes_an_object

   Doc-tests x

running 1 test
test core/src/lib.rs - (line 5) ... ok
";
        assert!(recognises(log));
        let results = parse(log, None).unwrap();
        let got: Vec<(&str, &str, Status)> =
            results.tests.iter().map(|t| (t.suite.as_str(), t.name.as_str(), t.status)).collect();
        assert_eq!(
            got,
            vec![
                ("sql", "sql::parser::tests::select", Status::Passed),
                ("key", "key::tests::order", Status::Skipped),
                ("sync", "a_put_becomes_an_object", Status::Failed),
                ("sync", "offline_reads", Status::Passed),
                ("doc", "core/src/lib.rs - (line 5)", Status::Passed),
            ]
        );
        let message = results.tests[2].message.as_deref().unwrap();
        assert!(message.starts_with("thread 'a_put_becomes_an_object' panicked") && message.ends_with("failed"));
        assert_eq!((results.summary.tests, results.summary.failed, results.summary.skipped), (5, 1, 1));
    }

    #[test]
    fn the_c_harness_output() {
        let log =
            "ok   crud: put_and_get\n  suites.c:88: check failed: n == 2\nFAIL cursor: walk_all\nok   sql: select\n";
        let results = parse(log, None).unwrap();
        assert_eq!(results.tests.len(), 3);
        assert_eq!(results.tests[1].suite, "cursor");
        assert_eq!(results.tests[1].message.as_deref(), Some("suites.c:88: check failed: n == 2"));
        assert_eq!(results.tests[0].message, None);
        assert!(parse("nothing here\n", None).is_err());
        assert!(!recognises("plain words\n"));
    }

    /// A long log stops once the post's deadline has passed, whichever log it is.
    #[test]
    fn a_long_log_stops_at_the_deadline() {
        let past = Instant::now().checked_sub(std::time::Duration::from_secs(1));
        let harness: String = (0..5_000).map(|n| format!("ok   crud: t{n}\n")).collect();
        let libtest: String = (0..5_000).map(|n| format!("test t{n} ... ok\n")).collect();
        for log in [harness, libtest] {
            assert_eq!(parse(&log, None).unwrap().tests.len(), 5_000);
            let late = parse(&log, past).unwrap_err();
            assert!(late.message.contains("not read in the time a post has"), "{}", late.message);
        }
    }
}
