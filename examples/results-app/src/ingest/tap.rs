//! TAP (the Test Anything Protocol, versions 12 to 14) as results: `node --test
//! --test-reporter=tap` and Perl's Test::More, as prove reads them.
//!
//! - `ok` passes, `not ok` fails, `# SKIP` is skipped and `# TODO` pending whatever its outcome.
//! - Subtests (TAP 14, indented by four) are named by their parents (`put > works`); a parent
//!   that holds subtests, as node's describe blocks do, is a suite, not a test, and the
//!   outermost one is the test's suite.
//! - A YAML block after a test gives its duration (`duration_ms`), its message (`error` or
//!   `message`, else its other fields: tape's `operator`, `expected`, `actual`) and its trace
//!   (`stack`, `at`, `location`, and the other fields when there is a message); comment lines
//!   after a failing test (Test::More's diagnostics) are its trace.
//! - A comment `# name` just before a test line is the header of the test points that follow
//!   (tape's test, whose assertions they are: `balance > balance is right`), not a diagnostic
//!   of the failing test before it. Test::More's diagnostics are indented (`#   Failed test`).
//! - `Bail out!` and a plan that promised more tests than ran are failures, so that a stream that
//!   stopped early never reads green.

use std::time::Instant;

use crate::error::{AppError, AppResult};
use crate::model::{cap_name, CappedText, Detail, Results, Status, Summary, Test, Tool};

use super::naming;

/// Whether `text` is a TAP stream: a version line, a plan or a numbered test line first.
pub fn recognises(text: &str) -> bool {
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else {
        return false;
    };
    first.starts_with("TAP version") || plan(first).is_some() || test_line(first).is_some_and(|t| t.number.is_some())
}

/// One `ok`/`not ok` line.
struct Line<'a> {
    ok: bool,
    number: Option<u64>,
    description: String,
    directive: Option<(Status, &'a str)>,
}

/// `ok 3 - name # SKIP reason`.
fn test_line(line: &str) -> Option<Line<'_>> {
    let (ok, rest) = match line.strip_prefix("not ok") {
        Some(rest) => (false, rest),
        None => (true, line.strip_prefix("ok")?),
    };
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number = rest[..digits].parse().ok();
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    // A `#` preceded by a space starts the directive; `\#` is a literal one.
    let hash = rest.char_indices().find(|(i, c)| *c == '#' && !rest[..*i].ends_with('\\')).map(|(i, _)| i);
    let (description, directive) = match hash {
        None => (rest.trim_end(), None),
        Some(i) => {
            let text = rest[i + 1..].trim();
            let word = text.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
            let reason = text[text.find(char::is_whitespace).unwrap_or(text.len())..].trim();
            let status = if word.starts_with("skip") {
                Some(Status::Skipped)
            } else if word.starts_with("todo") {
                Some(Status::Pending)
            } else {
                None
            };
            (rest[..i].trim_end(), status.map(|s| (s, reason)))
        }
    };
    Some(Line { ok, number, description: description.replace("\\#", "#"), directive })
}

/// `1..N` (with an optional `# skip` reason): N.
fn plan(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("1..")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// A test line read with what follows it, at one depth.
struct Read {
    name: String,
    status: Status,
    reason: Option<String>,
    yaml: Vec<(String, String)>,
    /// Its comment lines, capped as they are read (a stream may hold any number).
    diagnostics: CappedText,
    /// The subtests it holds (node's describe blocks hold their tests).
    children: Vec<Read>,
}

/// The tests of a TAP stream; an error when it holds none, or once `deadline` has passed.
pub fn parse(text: &str, deadline: Option<Instant>) -> AppResult<Results> {
    // Per depth: the subtests read since that depth's last test line, and its plan.
    let mut pending: Vec<Vec<Read>> = vec![Vec::new()];
    let mut plans: Vec<Option<u64>> = vec![None];
    let mut bailed: Option<String> = None;
    // Per depth: the header comment over the test points that follow (tape's test name).
    let mut headers: Vec<Option<String>> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        i += 1;
        super::in_time(i, deadline, "the TAP stream")?;
        let indent = raw.len() - raw.trim_start().len();
        let line = raw.trim();
        let depth = indent / 4;
        if let Some(reason) = line.strip_prefix("Bail out!") {
            bailed = Some(reason.trim().to_string());
            break;
        }
        if let Some(n) = plan(line) {
            grow(&mut pending, &mut plans, depth);
            plans[depth] = Some(n);
            continue;
        }
        if line.starts_with('#') {
            // Diagnostics of the failing test just before, at its depth (not node's closing
            // counts, `# tests 5`).
            let counts = line.split_whitespace().nth(1).is_some_and(|w| {
                ["tests", "suites", "pass", "fail", "cancelled", "skipped", "todo", "duration_ms"].contains(&w)
            }) && line.split_whitespace().count() == 3;
            if counts {
                continue;
            }
            if let Some(name) = header(line, lines[i..].iter().find(|l| !l.trim().is_empty()), indent) {
                headers.resize(depth, None);
                headers.push(Some(name.to_string()));
                continue;
            }
            let last = pending.get_mut(depth).and_then(|p| p.last_mut());
            if let Some(test) = last.filter(|t| t.status == Status::Failed && !line.starts_with("# Subtest")) {
                if !test.diagnostics.is_empty() {
                    test.diagnostics.push("\n");
                }
                test.diagnostics.push(line.trim_start_matches('#').trim());
            }
            continue;
        }
        let Some(t) = test_line(line) else { continue };
        grow(&mut pending, &mut plans, depth);
        // The subtests one level in, read since this depth's last test line, are its children.
        let children = if pending.len() > depth + 1 { std::mem::take(&mut pending[depth + 1]) } else { Vec::new() };
        if plans.len() > depth + 1 {
            plans[depth + 1] = None;
        }
        let status = match t.directive {
            Some((status, _)) => status,
            None if t.ok => Status::Passed,
            None => Status::Failed,
        };
        let mut read = Read {
            name: t.description,
            status,
            reason: t.directive.map(|(_, r)| r.to_string()).filter(|r| !r.is_empty()),
            yaml: Vec::new(),
            diagnostics: CappedText::default(),
            children,
        };
        if read.name.is_empty() {
            read.name = format!("test {}", t.number.unwrap_or(pending[depth].len() as u64 + 1));
        }
        if let Some(Some(header)) = headers.get(depth) {
            read.name = format!("{header} > {}", read.name);
        }
        // Its YAML block, indented beneath it.
        if lines.get(i).is_some_and(|l| l.trim() == "---") {
            let mut block = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != "..." {
                block.push(lines[i]);
                i += 1;
            }
            i += 1;
            read.yaml = yaml_fields(&block);
        }
        pending[depth].push(read);
    }
    let mut tests = Vec::new();
    let top = std::mem::take(&mut pending[0]);
    let ran = top.len() as u64;
    for read in top {
        flatten(read, &[], &mut tests);
    }
    if let Some(planned) = plans[0].filter(|n| *n > ran) {
        tests.push(failure("planned tests", format!("the plan promised {planned} tests and {ran} ran")));
    }
    if let Some(reason) = bailed {
        tests.push(failure("bail out", format!("Bail out! {reason}")));
    }
    if tests.is_empty() && plans[0] != Some(0) {
        return Err(AppError::bad("the TAP stream holds no test lines"));
    }
    Ok(Results {
        tool: Tool { name: "tap".into(), version: None },
        summary: Summary::of(&tests, 0, 0),
        tests,
        environment: Default::default(),
    })
}

/// The test name a comment line gives as a header: `# name`, one space after the `#` and the
/// next line a test line at its depth (tape's); `None` for a diagnostic.
fn header<'a>(comment: &'a str, next: Option<&&str>, indent: usize) -> Option<&'a str> {
    let name = comment.strip_prefix("# ")?;
    let next = next?;
    let at_depth = next.len() - next.trim_start().len() == indent;
    let is_header = !name.starts_with(char::is_whitespace) && !name.starts_with("Subtest:") && !name.is_empty();
    (is_header && at_depth && test_line(next.trim()).is_some()).then_some(name.trim_end())
}

fn grow(pending: &mut Vec<Vec<Read>>, plans: &mut Vec<Option<u64>>, depth: usize) {
    while pending.len() <= depth {
        pending.push(Vec::new());
        plans.push(None);
    }
}

/// A read test as tests: itself, or, when it holds subtests, those, named by their path.
fn flatten(mut read: Read, path: &[String], out: &mut Vec<Test>) {
    if !read.children.is_empty() {
        let inner: Vec<String> = path.iter().cloned().chain(std::iter::once(read.name)).collect();
        for child in read.children {
            flatten(child, &inner, out);
        }
        return;
    }
    let field = |names: &[&str]| read.yaml.iter().find(|(k, _)| names.contains(&k.as_str())).map(|(_, v)| v.clone());
    let duration = field(&["duration_ms"]).and_then(|d| d.parse::<f64>().ok()).filter(|d| d.is_finite() && *d >= 0.0);
    // The fields that are neither the message, the place, the stack nor the time: tape's
    // `operator`, `expected` and `actual`, node's `failureType`.
    let known = ["error", "message", "details", "location", "at", "stack", "duration_ms"];
    let others: Vec<String> =
        read.yaml.iter().filter(|(k, _)| !known.contains(&k.as_str())).map(|(k, v)| format!("{k}: {v}")).collect();
    let others = Some(others.join("\n")).filter(|o| !o.is_empty() && read.status == Status::Failed);
    let (message, others) = match read.status {
        Status::Skipped | Status::Pending => (read.reason.clone(), None),
        // ava's message says only that something was thrown ("Error thrown in test"); its
        // `details` say what, and are part of it.
        _ => match field(&["error", "message"]) {
            Some(message) => match field(&["details"]).filter(|d| !d.is_empty()) {
                Some(details) => (Some(format!("{message}\n{details}")), others),
                None => (Some(message), others),
            },
            None => (others, None),
        },
    };
    let trace: Vec<String> = [field(&["location", "at"]), others, field(&["stack"])]
        .into_iter()
        .flatten()
        .chain(std::mem::take(&mut read.diagnostics).finish())
        .collect();
    let (suite, within) = match path.split_first() {
        Some((suite, inner)) => (suite.clone(), inner.iter().map(|s| format!("{s} > ")).collect::<String>()),
        None => (String::new(), String::new()),
    };
    out.push(Test {
        name: cap_name(format!("{within}{}", read.name)),
        status: read.status,
        duration: duration.unwrap_or(0.0),
        // The outermost suite is the column; tests outside any take the file's name.
        suite: naming::cap_suite(naming::suite_name(Some(&suite), "")),
        message,
        detail: Detail { trace: Some(trace.join("\n")).filter(|t| !t.is_empty()), ..Detail::default() },
    });
}

fn failure(name: &str, message: String) -> Test {
    Test {
        name: name.into(),
        status: Status::Failed,
        duration: 0.0,
        suite: String::new(),
        message: Some(message),
        detail: Detail::default(),
    }
}

/// The flat fields of a YAML block: `key: value`, quoted values unquoted, and block scalars
/// (`key: |-` and the lines beneath it) and nested mappings (ava's `details:`) as their text.
fn yaml_fields(block: &[&str]) -> Vec<(String, String)> {
    let base = block.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let mut fields = Vec::new();
    let mut i = 0;
    while i < block.len() {
        let line = block[i];
        i += 1;
        let indent = line.len() - line.trim_start().len();
        let Some((key, value)) = line.trim().split_once(':').filter(|_| indent == base) else { continue };
        let value = value.trim();
        let nested = value.is_empty() && block.get(i).is_some_and(|l| l.len() - l.trim_start().len() > base);
        let text = if value.starts_with('|') || value.starts_with('>') || nested {
            let mut text = Vec::new();
            while i < block.len() && (block[i].trim().is_empty() || block[i].len() - block[i].trim_start().len() > base)
            {
                text.push(block[i].get(base + 2..).unwrap_or("").trim_end());
                i += 1;
            }
            text.join("\n").trim_end().to_string()
        } else {
            value.trim_matches(['\'', '"']).to_string()
        };
        fields.push((key.trim().to_string(), text));
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subtests are named by their parents; a parent holding subtests is a suite; directives,
    /// YAML and diagnostics are read; a short plan and a bail-out fail.
    #[test]
    fn tap_streams_are_read() {
        let tap = "TAP version 14\n1..4\n# Subtest: put\n    ok 1 - works\n      ---\n      duration_ms: 2.5\n      ...\n    1..1\nok 1 - put\n\
                   not ok 2 - broken\n  ---\n  error: |-\n    expected 2\n    got 3\n  location: 'a.mjs:3:1'\n  ...\n\
                   ok 3 - offline # SKIP no network\nnot ok 4 - later # TODO not yet\n";
        let r = parse(tap, None).unwrap();
        let seen: Vec<(&str, &str, Status)> =
            r.tests.iter().map(|t| (t.suite.as_str(), t.name.as_str(), t.status)).collect();
        assert_eq!(
            seen,
            [
                ("put", "works", Status::Passed),
                ("", "broken", Status::Failed),
                ("", "offline", Status::Skipped),
                ("", "later", Status::Pending)
            ]
        );
        assert_eq!(r.tests[0].duration, 2.5);
        assert_eq!(r.tests[1].message.as_deref(), Some("expected 2\ngot 3"));
        assert_eq!(r.tests[1].detail.trace.as_deref(), Some("a.mjs:3:1"));
        assert_eq!(r.tests[2].message.as_deref(), Some("no network"));

        let perl = "1..3\nok 1 - a\nnot ok 2 - b\n#   Failed test 'b'\n#   at t/x.t line 8.\n";
        let r = parse(perl, None).unwrap();
        assert_eq!(r.tests[1].detail.trace.as_deref(), Some("Failed test 'b'\nat t/x.t line 8."));
        assert_eq!(r.tests.last().unwrap().message.as_deref(), Some("the plan promised 3 tests and 2 ran"));
        let bailed = parse("1..2\nok 1\nBail out! no database\n", None).unwrap();
        assert_eq!(bailed.tests.last().unwrap().message.as_deref(), Some("Bail out! no database"));
        assert!(recognises(perl) && recognises("TAP version 13\n") && !recognises("ok   crud: put\n"));
        // Any text before a `#`, and an escaped `\#`, which stays in the name as `#`.
        let odd = parse("1..2\nok 1 - 测试#1\nok 2 - é\\# x\n", None).unwrap();
        assert_eq!((odd.tests[0].name.as_str(), odd.tests[1].name.as_str()), ("测试", "é# x"));
    }

    /// tape: a header names the test points after it and is nobody's diagnostic; the YAML
    /// block's fields are the failure's text.
    #[test]
    fn headers_name_their_points_and_yaml_fields_are_the_failure() {
        let tap = "TAP version 13\n# post\nok 1 posts\n# balance\nnot ok 2 balance is right\n  ---\n    operator: equal\n    \
                   expected: 3\n    actual:   2\n    at: Test.<anonymous> (/w/ledger.test.js:12:5)\n  ...\n# diagnostic of 2\n\
                   #   indented, also 2's\n# close\nok 3 closes\n1..3\n# tests 3\n";
        let r = parse(tap, None).unwrap();
        let names: Vec<&str> = r.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["post > posts", "balance > balance is right", "close > closes"]);
        let failed = &r.tests[1];
        assert_eq!(failed.message.as_deref(), Some("operator: equal\nexpected: 3\nactual: 2"));
        let trace = failed.detail.trace.as_deref().unwrap();
        assert!(trace.starts_with("Test.<anonymous> (/w/ledger.test.js:12:5)"), "{trace}");
        assert!(trace.contains("diagnostic of 2") && trace.contains("indented, also 2's"), "{trace}");
        assert!(!trace.contains("close"), "the next test's header is not this one's: {trace}");
    }
}
