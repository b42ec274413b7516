//! JUnit XML to CTRF, counting what is there rather than what the attributes declare, since
//! producers differ: pytest adds subtests to `tests=` and may write a second `<testcase>` for a
//! teardown error after a failure; node nests suites under an attribute-less `<testsuites>` and
//! keeps totals in comments; ctest marks disabled tests with `status=` and no `<skipped>`;
//! times carry 3 to 9 decimals and timestamps may lack a zone. A DTD or an entity other than
//! XML's own is refused (no expansion), and every error names the line. The failure's text is
//! kept (the bodies of `<failure>` and `<error>`, `<system-out>`, `<system-err>`), and so is every
//! earlier attempt (surefire's and nextest's `flakyFailure`, `flakyError`, `rerunFailure`,
//! `rerunError`): a test that failed and then passed is flaky, never a plain pass. A suite's
//! `<properties>` are the report's environment (build-variant labels).

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde_json::{Map, Value};

use crate::format::{check_label, check_text, Attempt, Detail, Results, Status, Summary, Test, Tool};

/// A parse failure, at a line of the input.
#[derive(Debug, PartialEq)]
pub struct JunitError {
    pub line: usize,
    pub reason: String,
}

/// Deeper `<testsuite>` nesting than any producer writes is refused, and so are more tests
/// than a run holds: a small file must not cost a large memory.
const MAX_DEPTH: usize = 64;
const MAX_TESTS: usize = 200_000;
/// The most `<property>` labels kept of a report.
const MAX_PROPERTIES: usize = 32;

struct Case {
    name: String,
    classname: String,
    /// Every `<testsuite>` name from the root: tests of one name in two suites are two tests.
    path: Vec<String>,
    seconds: f64,
    status: Status,
    /// node's todo: it stays pending whether its body passes or fails.
    todo: bool,
    /// ctest's first label (the test's `cmake_labels` property): its suite.
    label: Option<String>,
    message: Option<String>,
    trace: String,
    stdout: String,
    stderr: String,
    attempts: Vec<Attempt>,
}

/// Where the text being read goes: the element that holds it, and its depth.
#[derive(Clone, Copy, PartialEq)]
enum Sink {
    Trace,
    Stdout,
    Stderr,
    Attempt,
}

impl Case {
    fn sink(&mut self, sink: Sink) -> &mut String {
        match sink {
            Sink::Trace => &mut self.trace,
            Sink::Stdout => &mut self.stdout,
            Sink::Stderr => &mut self.stderr,
            Sink::Attempt => {
                self.attempts.last_mut().map_or(&mut self.trace, |a| a.trace.get_or_insert_with(String::new))
            }
        }
    }
}

/// Converts JUnit XML to CTRF results.
pub fn parse(xml: &[u8]) -> Result<Results, JunitError> {
    let text = std::str::from_utf8(xml)
        .map_err(|e| JunitError { line: line_at(xml, e.valid_up_to()), reason: "the file is not UTF-8".into() })?;
    let mut reader = Reader::from_str(text);
    // Text is kept as written (an entity splits it into parts whose spaces matter).
    reader.config_mut().trim_text(false);
    let mut capture: Option<(Sink, usize)> = None;
    let mut suites: Vec<String> = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut count = 0usize;
    let mut current: Option<Case> = None;
    let mut start_ms: Option<u64> = None;
    let mut total_seconds = 0.0;
    let mut open = 0usize;
    let mut saw_root = false;
    let mut properties = Map::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| JunitError { line: line_at(xml, reader.error_position() as usize), reason: e.to_string() })?;
        // An error about an event is reported at its end.
        let at = reader.buffer_position() as usize;
        let fail = |reason: String| JunitError { line: line_at(xml, at), reason };
        match event {
            Event::DocType(_) => return Err(fail("a DTD is not accepted in a JUnit report".into())),
            Event::Start(e) | Event::Empty(e)
                if open == 0 && !matches!(e.name().as_ref(), b"testsuites" | b"testsuite") =>
            {
                return Err(fail(format!(
                    "this is not JUnit XML: the root is <{}>",
                    String::from_utf8_lossy(e.name().as_ref())
                )));
            }
            Event::Start(e) => {
                open += 1;
                saw_root = true;
                on_open(&e, &mut count, &mut suites, &mut current, &mut start_ms, &mut total_seconds, &mut properties)
                    .map_err(fail)?;
                if let (None, Some(case), Some(sink)) = (capture, current.as_mut(), sink_of(e.name().as_ref())) {
                    // Texts of one kind (GoogleTest writes a <failure> per assertion) stay apart.
                    let into = case.sink(sink);
                    if !into.is_empty() {
                        into.push('\n');
                    }
                    capture = Some((sink, open));
                }
            }
            Event::Empty(e) => {
                saw_root = true;
                on_open(&e, &mut count, &mut suites, &mut current, &mut start_ms, &mut total_seconds, &mut properties)
                    .map_err(fail)?;
                on_close(e.name().as_ref(), &mut suites, &mut cases, &mut current);
            }
            Event::End(e) => {
                if capture.is_some_and(|(_, depth)| depth == open) {
                    capture = None;
                }
                open = open.saturating_sub(1);
                on_close(e.name().as_ref(), &mut suites, &mut cases, &mut current);
            }
            Event::Text(t) => {
                if let (Some((sink, _)), Some(case)) = (capture, current.as_mut()) {
                    case.sink(sink).push_str(&t.decode().map_err(|e| fail(e.to_string()))?);
                }
            }
            Event::CData(t) => {
                if let (Some((sink, _)), Some(case)) = (capture, current.as_mut()) {
                    case.sink(sink).push_str(&t.decode().map_err(|e| fail(e.to_string()))?);
                }
            }
            Event::GeneralRef(r) => {
                let name = String::from_utf8_lossy(r.as_ref()).to_string();
                let known = match name.as_str() {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    _ if name.starts_with('#') => r.resolve_char_ref().map_err(|e| fail(e.to_string()))?,
                    _ => {
                        return Err(fail(format!(
                            "the entity &{name}; is not XML's own (no DTD entities are expanded)"
                        )))
                    }
                };
                if let (Some((sink, _)), Some(case), Some(c)) = (capture, current.as_mut(), known) {
                    case.sink(sink).push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err(JunitError { line: 1, reason: "the file holds no <testsuites> or <testsuite>".into() });
    }
    let tests: Vec<Test> = cases.into_iter().map(into_test).collect();
    let start = start_ms.unwrap_or(0);
    let stop = start.saturating_add((total_seconds * 1000.0).round() as u64);
    Ok(Results {
        tool: Tool { name: "junit".into(), version: None },
        summary: Summary::of(&tests, start, stop),
        tests,
        environment: properties,
    })
}

/// The element whose text a test keeps, and where.
fn sink_of(element: &[u8]) -> Option<Sink> {
    match element {
        b"failure" | b"error" => Some(Sink::Trace),
        b"system-out" => Some(Sink::Stdout),
        b"system-err" => Some(Sink::Stderr),
        b"flakyFailure" | b"flakyError" | b"rerunFailure" | b"rerunError" => Some(Sink::Attempt),
        _ => None,
    }
}

/// A case as a test: its suite (the outermost telling `<testsuite>`, else the classname), its
/// name with the suites inside that one (`nested > deep`), its text and attempts.
fn into_test(c: Case) -> Test {
    let telling = c.path.iter().position(|s| !is_generic(s));
    // ctest names each test's class after the test: that is no suite (its first label is,
    // else the file's name).
    let ctest = c.classname == c.name;
    let classname = if ctest { c.label.as_deref().unwrap_or_default() } else { c.classname.as_str() };
    let suite = suite_name(telling.map(|i| c.path[i].as_str()), classname);
    let inner: Vec<&str> = match telling {
        Some(i) => c.path[i + 1..].iter().map(String::as_str).filter(|s| !is_generic(s)).collect(),
        None => Vec::new(),
    };
    let within = inner.iter().map(|s| format!("{s} > ")).collect::<String>() + &c.name;
    let text = |t: String| Some(t.trim().to_string()).filter(|t| !t.is_empty());
    let lines = |t: String| text(t).into_iter().collect::<Vec<_>>();
    let flaky = c.status == Status::Passed && !c.attempts.is_empty();
    Test {
        suite,
        // A classname that is a source file's path (doctest's) is named by the file.
        name: match c.classname.as_str() {
            "" => within,
            path if is_path(path) => format!("{}::{within}", file_name(path)),
            // Catch2's `global` class says nothing.
            generic if is_generic(generic) => within,
            class => format!("{class}::{within}"),
        },
        status: c.status,
        duration: (c.seconds * 1e9).round() / 1e6, // milliseconds, to the nanosecond
        message: c.message,
        detail: Detail {
            trace: text(c.trace),
            stdout: lines(c.stdout),
            stderr: lines(c.stderr),
            retries: c.attempts.len() as u64,
            flaky,
            quarantined: false,
            retry_attempts: c.attempts.into_iter().map(|a| Attempt { trace: a.trace.and_then(&text), ..a }).collect(),
        },
    }
}

fn on_open(
    e: &BytesStart<'_>,
    count: &mut usize,
    suites: &mut Vec<String>,
    current: &mut Option<Case>,
    start_ms: &mut Option<u64>,
    total_seconds: &mut f64,
    properties: &mut Map<String, Value>,
) -> Result<(), String> {
    let attr = |name: &str| -> Result<Option<String>, String> {
        for a in e.attributes() {
            let a = a.map_err(|e| e.to_string())?;
            if a.key.as_ref() == name.as_bytes() {
                let value = a.unescape_value().map_err(|e| format!("attribute {name}: {e}"))?;
                return Ok(Some(value.into_owned()));
            }
        }
        Ok(None)
    };
    match e.name().as_ref() {
        b"testsuite" => {
            if suites.len() >= MAX_DEPTH {
                return Err(format!("<testsuite> nested more than {MAX_DEPTH} deep"));
            }
            suites.push(attr("name")?.unwrap_or_default());
            if let (None, Some(stamp)) = (*start_ms, attr("timestamp")?) {
                *start_ms = Some(timestamp_ms(&stamp).ok_or_else(|| format!("timestamp {stamp:?} is not ISO 8601"))?);
            }
            if suites.len() == 1 {
                *total_seconds += seconds(attr("time")?.as_deref(), "testsuite")?;
            }
        }
        b"testcase" => {
            if current.is_some() {
                return Err("a <testcase> inside a <testcase>".into());
            }
            if *count >= MAX_TESTS {
                return Err(format!("more than {MAX_TESTS} tests"));
            }
            *count += 1;
            let name = attr("name")?.ok_or("a <testcase> has no name")?;
            // ctest: disabled and not-run tests carry only `status`; GoogleTest says a skipped
            // or disabled test with `result` (or, before 1.10, `status="notrun"`).
            let skipped = matches!(attr("status")?.as_deref(), Some("disabled" | "notrun" | "skipped"))
                || matches!(attr("result")?.as_deref(), Some("skipped" | "suppressed"));
            *current = Some(Case {
                name,
                classname: attr("classname")?.unwrap_or_default(),
                path: suites.clone(),
                seconds: seconds(attr("time")?.as_deref(), "testcase")?,
                status: if skipped { Status::Skipped } else { Status::Passed },
                todo: false,
                label: None,
                message: None,
                trace: String::new(),
                stdout: String::new(),
                stderr: String::new(),
                attempts: Vec::new(),
            });
        }
        // ctest writes a test's labels as its `cmake_labels` property: the first is its suite.
        b"property" if current.is_some() => {
            if let (Some(case), Some("cmake_labels"), Some(labels)) =
                (current.as_mut(), attr("name")?.as_deref(), attr("value")?)
            {
                case.label = labels.split(';').map(str::trim).find(|l| !l.is_empty()).map(str::to_string);
            }
        }
        // A suite's properties are the run's build-variant labels (a test's own are not); the
        // first few that are short labels, since some tools write every system property.
        b"property" if properties.len() < MAX_PROPERTIES => {
            if let (Some(name), Some(value)) = (attr("name")?, attr("value")?) {
                if check_label("property", &name).is_ok() && check_text("property", &value, 256).is_ok() {
                    properties.entry(name).or_insert(Value::String(value));
                }
            }
        }
        kind @ (b"flakyFailure" | b"flakyError" | b"rerunFailure" | b"rerunError") => {
            // An earlier attempt; the test's own status is its last one's.
            let Some(case) = current.as_mut() else { return Ok(()) };
            let message = attr("message")?.filter(|m| !m.is_empty());
            let message = match kind.ends_with(b"Error") {
                true => message.map(|m| format!("error: {m}")),
                false => message,
            };
            let attempt = case.attempts.len() as u64 + 1;
            case.attempts.push(Attempt { attempt, status: Status::Failed, message, trace: None });
        }
        kind @ (b"failure" | b"error" | b"skipped") => {
            let Some(case) = current.as_mut() else { return Ok(()) };
            let (status, label) = match kind {
                // node's todo tests are CTRF's pending ones, whatever their body did.
                b"skipped" if attr("type")?.as_deref() == Some("todo") => {
                    case.todo = true;
                    (Status::Pending, None)
                }
                b"skipped" => (Status::Skipped, None),
                b"error" => (Status::Failed, Some("error")),
                _ => (Status::Failed, None),
            };
            if case.todo {
                case.status = Status::Pending;
            } else if case.status != Status::Failed {
                case.status = status;
            }
            let message = attr("message")?.unwrap_or_default();
            let message = match label {
                Some(label) if !message.is_empty() => format!("{label}: {message}"),
                _ => message,
            };
            // Appended in place: a case with many failures costs their length, not its square.
            match (&mut case.message, message.is_empty()) {
                (_, true) => {}
                (Some(before), false) => {
                    before.push('\n');
                    before.push_str(&message);
                }
                (none, false) => *none = Some(message),
            }
        }
        _ => {}
    }
    Ok(())
}

fn on_close(name: &[u8], suites: &mut Vec<String>, cases: &mut Vec<Case>, current: &mut Option<Case>) {
    match name {
        b"testsuite" => {
            suites.pop();
        }
        b"testcase" => {
            let Some(case) = current.take() else { return };
            // pytest writes a second <testcase> for an error in teardown after a failure: one
            // test, both messages. It follows the first at once and says so; any other case of
            // the same name is a test of its own.
            let teardown = case.message.as_deref().is_some_and(|m| m.contains("failed on teardown"));
            // pytest-rerunfailures writes each failed attempt as a <testcase> of the same name,
            // with no failure in it, just before the next: those are the test's attempts. Only in
            // pytest's reports: elsewhere two such cases are two tests (two files' top-level
            // tests of one name, in node's).
            let pytest = case.path.iter().any(|s| s == "pytest");
            let case = match cases.last() {
                Some(last)
                    if pytest
                        && !teardown
                        && last.name == case.name
                        && last.classname == case.classname
                        && last.path == case.path
                        && last.status != Status::Skipped =>
                {
                    let earlier = cases.pop().expect("the last case");
                    let mut attempts = earlier.attempts;
                    let trace = Some(earlier.trace).filter(|t| !t.trim().is_empty());
                    attempts.push(Attempt { attempt: 0, status: Status::Failed, message: earlier.message, trace });
                    attempts.extend(case.attempts);
                    for (n, a) in attempts.iter_mut().enumerate() {
                        a.attempt = n as u64 + 1;
                    }
                    Case { attempts, ..case }
                }
                _ => case,
            };
            // Under xdist another test's case may come between: look a little further back.
            let same = cases
                .iter_mut()
                .rev()
                .take(64)
                .filter(|_| teardown)
                .find(|c| c.name == case.name && c.classname == case.classname && c.path == case.path);
            match same {
                Some(earlier) => {
                    earlier.status = Status::Failed;
                    earlier.message = match (earlier.message.take(), case.message) {
                        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
                        (a, b) => a.or(b),
                    };
                    for (into, more) in [
                        (&mut earlier.trace, case.trace),
                        (&mut earlier.stdout, case.stdout),
                        (&mut earlier.stderr, case.stderr),
                    ] {
                        if !more.trim().is_empty() {
                            into.push('\n');
                            into.push_str(&more);
                        }
                    }
                }
                None => cases.push(case),
            }
        }
        _ => {}
    }
}

/// The suite a test belongs to, in the matrix's words: the outermost testsuite with a telling
/// name (node's describe block, nextest's test binary, GoogleTest's test suite), else the
/// classname (pytest's module, doctest's source file, ctest's label). Empty when neither tells
/// (node's top-level tests, ctest without labels): the caller names it.
///
/// - Rust's `crate::file` is the file: `objstore-db-core::crud` → `crud`.
/// - File extensions, GoogleTest's parameter numbers (`TypedTest/0`) and pytest's test class
///   (`tests.test_api.TestUser`) name no suite.
/// - Below the last `tests` folder, a module keeps its path, as `/`-separated words
///   (`tests.unit.test_crud` → `unit/crud`): the page groups many columns by the first word.
pub fn suite_name(testsuite: Option<&str>, classname: &str) -> String {
    // A testsuite named by its binary's path (doctest's) is that binary.
    let from_suite = testsuite.filter(|s| !is_generic(s)).map(|s| if is_path(s) { file_name(s) } else { s });
    let Some(source) = from_suite.or(Some(classname).filter(|c| !is_generic(c))) else {
        return String::new();
    };
    if let Some((_, file)) = source.rsplit_once("::") {
        return word(file);
    }
    let ignored = |s: &&str| {
        s.is_empty() || EXTENSIONS.contains(&s.to_ascii_lowercase().as_str()) || s.bytes().all(|b| b.is_ascii_digit())
    };
    let mut segments: Vec<&str> = source.split(['.', '/', '\\']).filter(|s| !ignored(s)).collect();
    if from_suite.is_none() {
        while segments.len() > 1 && segments.last().is_some_and(|s| s.starts_with(|c: char| c.is_ascii_uppercase())) {
            segments.pop();
        }
    }
    if let Some(last_folder) = segments.iter().rposition(|s| TEST_FOLDERS.contains(&s.to_ascii_lowercase().as_str())) {
        if last_folder + 1 < segments.len() {
            segments.drain(..=last_folder);
        }
    }
    segments.iter().map(|s| word(s)).filter(|w| !w.is_empty()).collect::<Vec<_>>().join("/")
}

/// Whether `name` is a file's path (`/tmp/build/unit_tests`, `./tests`, `C:\\ci\\a.exe`) rather than
/// a suite path (`Inst/ParamTest`).
fn is_path(name: &str) -> bool {
    name.starts_with(['/', '.']) || name.contains('\\') || name.as_bytes().get(1) == Some(&b':')
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Whether `suite` is a test file's path (`tests/unit/test_crud.py`), as some CTRF writers
/// give it: its module is the suite.
pub fn is_test_file(suite: &str) -> bool {
    suite.rsplit_once('.').is_some_and(|(_, ext)| EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// Extensions that name no suite (`test_math.cpp`, `unit_tests.exe`, `a.out`).
const EXTENSIONS: [&str; 14] =
    ["py", "mjs", "js", "cjs", "ts", "rs", "c", "cc", "cpp", "cxx", "h", "hpp", "exe", "out"];
/// Folders that hold tests: what is below them is the suite.
const TEST_FOLDERS: [&str; 4] = ["test", "tests", "spec", "specs"];

/// `test_crud`, `crud_test`, `Crud_Tests` → `crud`.
fn word(segment: &str) -> String {
    let lower = segment.to_ascii_lowercase();
    let word = lower.strip_prefix("test_").unwrap_or(&lower);
    let word = word.strip_suffix("_tests").or_else(|| word.strip_suffix("_test")).unwrap_or(word);
    word.to_string()
}

/// A suite name that tells nothing (a tool's own, Catch2's `global`, or none).
fn is_generic(name: &str) -> bool {
    name.is_empty()
        || matches!(name, "pytest" | "test" | "tests" | "node" | "nextest-run" | "(empty)" | "global" | "AllTests")
        || name.ends_with(".global")
}

fn seconds(value: Option<&str>, element: &str) -> Result<f64, String> {
    match value {
        None | Some("") => Ok(0.0),
        Some(v) => match v.trim().parse::<f64>() {
            // A run of more than a year is not a time any producer writes.
            Ok(s) if s.is_finite() && (0.0..=31_536_000.0).contains(&s) => Ok(s),
            _ => Err(format!("<{element} time={v:?}> is not a number of seconds")),
        },
    }
}

/// Milliseconds since the epoch of an ISO 8601 time; without a zone it is taken as UTC.
pub fn timestamp_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let (date, time) = text.split_once(['T', ' '])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (clock, offset_s) = match time.find(['Z', 'z', '+']).or_else(|| time.rfind('-').filter(|&i| i > 5)) {
        Some(i) => {
            let zone = &time[i..];
            let offset = if zone.eq_ignore_ascii_case("z") {
                0
            } else {
                let sign = if zone.starts_with('-') { -1 } else { 1 };
                let digits: String = zone[1..].chars().filter(char::is_ascii_digit).collect();
                let (h, mi) =
                    (digits.get(..2)?.parse::<i64>().ok()?, digits.get(2..4).unwrap_or("0").parse::<i64>().ok()?);
                sign * (h * 3600 + mi * 60)
            };
            (&time[..i], offset)
        }
        None => (time, 0),
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, mi, s) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0));
    if !(0..=23).contains(&h) || !(0..=59).contains(&mi) || !(0..=60).contains(&s) {
        return None;
    }
    let millis: i64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_s;
    u64::try_from(secs * 1000 + millis).ok()
}

fn line_at(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset.min(bytes.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(r: &Results) -> (u64, u64, u64, u64, u64) {
        let s = &r.summary;
        (s.tests, s.passed, s.failed, s.skipped, s.pending)
    }

    #[test]
    fn pytest_9_counts_tests_not_subtests_and_merges_a_teardown_error() {
        let r = parse(include_bytes!("../tests/fixtures/pytest-9.xml")).unwrap();
        // tests="8" is declared; there are four tests.
        assert_eq!(counts(&r), (4, 1, 2, 1, 0));
        let merged = r.tests.iter().find(|t| t.name.ends_with("test_fails_then_teardown_fails")).unwrap();
        let message = merged.message.as_deref().unwrap();
        assert!(message.contains("values differ") && message.contains("error: failed on teardown"), "{message}");
        assert!(r.tests.iter().all(|t| t.suite == "crud"));
        assert_eq!(r.summary.start, timestamp_ms("2026-11-25T07:51:08.335+00:00").unwrap());
    }

    #[test]
    fn node_suites_nest_and_top_level_tests_name_no_suite() {
        let r = parse(include_bytes!("../tests/fixtures/node-20.xml")).unwrap();
        assert_eq!(counts(&r), (6, 3, 1, 1, 1), "the comments' totals, counted from the tests");
        let deep = r.tests.iter().find(|t| t.name.ends_with("deep")).unwrap();
        assert_eq!(deep.suite, "crud", "the outermost describe is the suite");
        let top = r.tests.iter().find(|t| t.name.contains("top level & <escaped>")).unwrap();
        assert_eq!(top.suite, "", "a top-level test tells no suite");
        assert!((r.tests[0].duration - 0.653).abs() < 1e-9, "{}", r.tests[0].duration);
    }

    #[test]
    fn ctest_disabled_tests_are_skipped_and_a_zoneless_timestamp_is_utc() {
        let r = parse(include_bytes!("../tests/fixtures/ctest.xml")).unwrap();
        assert_eq!(counts(&r), (3, 1, 1, 1, 0));
        assert_eq!(r.summary.start, timestamp_ms("2026-11-25T07:51:37Z").unwrap());
        assert!((r.tests[0].duration - 1.52652).abs() < 1e-6, "eight decimals: {}", r.tests[0].duration);
    }

    #[test]
    fn nextest_runs_are_read() {
        let r = parse(include_bytes!("../tests/fixtures/nextest.xml")).unwrap();
        assert_eq!(counts(&r), (2, 1, 1, 0, 0));
        assert!(r.tests.iter().all(|t| t.suite == "ntfix"));
        assert!(r.tests[1].message.as_deref().unwrap().contains("panicked"));
    }

    #[test]
    fn dtds_entities_and_malformed_input_are_refused_with_the_line() {
        let dtd = b"<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\">]>\n<testsuite><testcase name=\"a\">&lol;</testcase></testsuite>";
        let err = parse(dtd).unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
        assert!(err.reason.contains("DTD"), "{err:?}");
        let entity = b"<testsuite>\n<testcase name=\"a\">&lol;</testcase></testsuite>";
        let err = parse(entity).unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
        let unclosed = b"<testsuite>\n<testcase name=\"a\">\n</testsuite>";
        assert!(parse(unclosed).is_err());
        assert!(parse(b"<html><body/></html>").unwrap_err().reason.contains("not JUnit"));
        let bad_time = b"<testsuite>\n\n<testcase name=\"a\" time=\"soon\"/></testsuite>";
        let err = parse(bad_time).unwrap_err();
        assert_eq!((err.line, err.reason.contains("soon")), (3, true), "{err:?}");
    }

    #[test]
    fn small_files_cannot_cost_large_memory_or_overflow() {
        let deep = format!("{}{}", "<testsuite name=\"s\">".repeat(65), "</testsuite>".repeat(65));
        assert!(parse(deep.as_bytes()).unwrap_err().reason.contains("nested"));
        let long = b"<testsuite time=\"1e300\"><testcase name=\"a\"/></testsuite>";
        assert!(parse(long).unwrap_err().reason.contains("1e300"));
        let comma = b"<testsuite><testcase name=\"a\" time=\"1,5\"/></testsuite>";
        assert!(parse(comma).is_err(), "1,5 is not read as 15");
        let far = b"<testsuite timestamp=\"99999999999999999-01-01T00:00:00Z\"><testcase name=\"a\"/></testsuite>";
        assert!(parse(far).unwrap_err().reason.contains("ISO 8601"));
    }

    /// The failure's text is kept as written (entities and CDATA resolved), with the output;
    /// a ctest failure's reason is in its output.
    #[test]
    fn failure_bodies_and_output_are_kept() {
        let xml = br#"<testsuite name="crud"><testcase name="a" classname="m">
  <failure message="boom">at m.py:12 &amp; <![CDATA[x < y]]></failure>
  <system-out>printed</system-out><system-err>warned</system-err>
</testcase></testsuite>"#;
        let r = parse(xml).unwrap();
        let t = &r.tests[0];
        assert_eq!(t.message.as_deref(), Some("boom"));
        assert_eq!(t.detail.trace.as_deref(), Some("at m.py:12 & x < y"));
        assert_eq!(
            (t.detail.stdout.clone(), t.detail.stderr.clone()),
            (vec!["printed".to_string()], vec!["warned".to_string()])
        );
        let ctest = parse(include_bytes!("../tests/fixtures/ctest.xml")).unwrap();
        let disabled = ctest.tests.iter().find(|t| t.name.contains("disabled")).unwrap();
        assert_eq!(disabled.detail.stdout, vec!["Disabled".to_string()]);
        let node = parse(include_bytes!("../tests/fixtures/node-20.xml")).unwrap();
        let failed = node.tests.iter().find(|t| t.name.ends_with("fails")).unwrap();
        assert!(failed.detail.trace.as_deref().unwrap().contains("crud.test.mjs:5:30"), "{failed:?}");
    }

    /// Every earlier attempt is kept: failed then passed is flaky (a pass, never a plain one);
    /// failed every time is a failure with its retries.
    #[test]
    fn attempts_are_kept_and_a_pass_on_retry_is_flaky() {
        let xml = br#"<testsuites><testsuite name="core">
<testcase name="flaky" classname="c"><flakyFailure message="first"><stackTrace>trace 1</stackTrace></flakyFailure><flakyError message="second"/></testcase>
<testcase name="broken" classname="c"><rerunFailure message="again"/><failure message="last">trace 2</failure></testcase>
<testcase name="steady" classname="c"/>
</testsuite></testsuites>"#;
        let r = parse(xml).unwrap();
        let by = |n: &str| r.tests.iter().find(|t| t.name.ends_with(n)).unwrap();
        let flaky = by("flaky");
        assert_eq!((flaky.status, flaky.detail.flaky, flaky.detail.retries), (Status::Passed, true, 2));
        assert_eq!(flaky.detail.retry_attempts[0].message.as_deref(), Some("first"));
        assert_eq!(flaky.detail.retry_attempts[0].trace.as_deref(), Some("trace 1"));
        assert_eq!(flaky.detail.retry_attempts[1].message.as_deref(), Some("error: second"));
        let broken = by("broken");
        assert_eq!((broken.status, broken.detail.flaky, broken.detail.retries), (Status::Failed, false, 1));
        assert_eq!(broken.detail.trace.as_deref(), Some("trace 2"));
        assert_eq!((by("steady").detail.retries, by("steady").detail.flaky), (0, false));
    }

    /// Two tests of one name in two describe blocks stay two tests, each named by its block; a
    /// todo whose body fails stays todo; GoogleTest's skipped and disabled tests are skipped.
    #[test]
    fn tests_keep_their_names_and_their_kind() {
        let xml = br#"<testsuites><testsuite name="crud">
<testsuite name="A"><testcase name="works" classname="test"><failure message="no"/></testcase></testsuite>
<testsuite name="B"><testcase name="works" classname="test"/></testsuite>
<testcase name="later" classname="test"><skipped type="todo" message="true"/><failure message="body failed"/></testcase>
<testcase name="gskip" status="run" result="skipped" classname="G"/>
<testcase name="DISABLED_g" status="notrun" result="suppressed" classname="G"/>
</testsuite></testsuites>"#;
        let r = parse(xml).unwrap();
        let names: Vec<&str> = r.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["A > works", "B > works", "later", "G::gskip", "G::DISABLED_g"],
            "node's class \"test\" says nothing"
        );
        assert_eq!(r.tests[0].status, Status::Failed);
        assert_eq!(r.tests[1].status, Status::Passed);
        assert_eq!(r.tests[2].status, Status::Pending, "todo stays todo");
        assert!(r.tests[2].message.as_deref().unwrap().contains("body failed"));
        assert_eq!((r.tests[3].status, r.tests[4].status), (Status::Skipped, Status::Skipped));
        assert!(r.tests.iter().all(|t| t.suite == "crud"));
    }

    /// ctest's test is in its first label's suite; without labels, the file's (none here).
    #[test]
    fn a_ctest_label_is_its_suite() {
        let xml = br#"<testsuite name="(empty)">
<testcase name="put" classname="put" status="run"><properties><property name="cmake_labels" value="storage;fast"/></properties></testcase>
<testcase name="plain" classname="plain" status="run"><properties/></testcase></testsuite>"#;
        let r = parse(xml).unwrap();
        assert_eq!((r.tests[0].suite.as_str(), r.tests[1].suite.as_str()), ("storage", ""));
        assert!(r.environment.is_empty(), "a test's own properties are no labels of the run");
    }

    #[test]
    fn suite_names_are_shortened_to_the_matrix_words() {
        assert_eq!(suite_name(None, "tests.test_crud"), "crud");
        assert_eq!(suite_name(Some("objstore-db-core::transaction"), "x"), "transaction");
        assert_eq!(suite_name(Some("pytest"), "bindings.python.tests.test_sql"), "sql");
        assert_eq!(suite_name(Some("(empty)"), "test"), "");
        assert_eq!(suite_name(Some("TypedTest/0"), ""), "typedtest", "GoogleTest's parameter is no column");
        assert_eq!(suite_name(Some("Inst/ParamTest"), "Inst/ParamTest"), "inst/paramtest");
        assert_eq!(suite_name(None, "tests.test_api.TestUser"), "api", "pytest's class is no column");
        assert_eq!(suite_name(None, "tests.unit.test_crud"), "unit/crud", "a module below tests keeps its path");
        assert_eq!(suite_name(Some("tests"), "test_math.cpp"), "math", "doctest: the source file");
        assert_eq!(suite_name(Some("unit_tests.exe"), "global"), "unit", "Catch2: the binary, not global");
        assert_eq!(suite_name(Some("tests"), "tests.global"), "");
        let ctest = parse(include_bytes!("../tests/fixtures/ctest.xml")).unwrap();
        assert!(
            ctest.tests.iter().all(|t| t.suite.is_empty()),
            "a ctest test's class is its own name: the file names the suite"
        );
    }
}
