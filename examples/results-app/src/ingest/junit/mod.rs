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

mod dialects;
mod suites;

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::Instant;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::naming::is_test_file;
use crate::model::{
    cap_name, check_label, check_text, Attempt, CappedText, Detail, Results, Status, Summary, Test, Tool,
};
use suites::Suite;

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

/// Whether two cases sit in suites of the same names.
fn same_path(a: &Option<Rc<Suite>>, b: &Option<Rc<Suite>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Rc::ptr_eq(a, b) || (a.name == b.name && same_path(&a.parent, &b.parent)),
        _ => false,
    }
}

/// Whether two cases are one test's: its name, class and suites.
fn same_test(a: &Case, b: &Case) -> bool {
    a.name == b.name && a.classname == b.classname && same_path(&a.path, &b.path)
}

/// An earlier attempt while it is read.
struct CaseAttempt {
    status: Status,
    message: Option<String>,
    trace: CappedText,
}

struct Case {
    name: String,
    classname: String,
    /// The `<testsuite>` it is in: tests of one name in two suites are two tests.
    path: Option<Rc<Suite>>,
    seconds: f64,
    status: Status,
    /// node's todo: it stays pending whether its body passes or fails.
    todo: bool,
    /// ctest's first label (the test's `cmake_labels` property): its suite.
    label: Option<String>,
    message: Option<CappedText>,
    trace: CappedText,
    stdout: CappedText,
    stderr: CappedText,
    attempts: Vec<CaseAttempt>,
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
    fn sink(&mut self, sink: Sink) -> &mut CappedText {
        match sink {
            Sink::Trace => &mut self.trace,
            Sink::Stdout => &mut self.stdout,
            Sink::Stderr => &mut self.stderr,
            Sink::Attempt => self.attempts.last_mut().map_or(&mut self.trace, |a| &mut a.trace),
        }
    }
}

/// How many events are read between two looks at the clock.
const EVENTS_PER_CLOCK_READING: usize = 4096;

/// Converts JUnit XML to CTRF results.
#[cfg(test)]
pub fn parse(xml: &[u8]) -> Result<Results, JunitError> {
    parse_until(xml, None)
}

/// Converts JUnit XML to CTRF results, or stops with an error once `deadline` has passed.
pub fn parse_until(xml: &[u8], deadline: Option<Instant>) -> Result<Results, JunitError> {
    let text = std::str::from_utf8(xml)
        .map_err(|e| JunitError { line: line_at(xml, e.valid_up_to()), reason: "the file is not UTF-8".into() })?;
    let mut reader = Reader::from_str(text);
    // Text is kept as written (an entity splits it into parts whose spaces matter).
    reader.config_mut().trim_text(false);
    let mut capture: Option<(Sink, usize)> = None;
    let mut suites = Suites { innermost: None, depth: 0 };
    // The last cases read, which a later one may still join (a rerun, a teardown error); older
    // ones are tests already, so that a case's parts are held once.
    let mut cases = Cases { recent: VecDeque::new(), tests: Vec::new(), failed: HashMap::new() };
    let mut events = 0usize;
    let mut count = 0usize;
    let mut current: Option<Box<Case>> = None;
    let mut start_ms: Option<u64> = None;
    let mut total_seconds = 0.0;
    let mut open = 0usize;
    let mut saw_root = false;
    let mut properties = dialects::Properties::default();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| JunitError { line: line_at(xml, reader.error_position() as usize), reason: e.to_string() })?;
        // An error about an event is reported at its end.
        let at = reader.buffer_position() as usize;
        let fail = |reason: String| JunitError { line: line_at(xml, at), reason };
        events += 1;
        if events.is_multiple_of(EVENTS_PER_CLOCK_READING) && deadline.is_some_and(|d| Instant::now() > d) {
            return Err(fail("the report was not read in the time a post has".into()));
        }
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
                        into.push("\n");
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
                    case.sink(sink).push(&t.decode().map_err(|e| fail(e.to_string()))?);
                }
            }
            Event::CData(t) => {
                if let (Some((sink, _)), Some(case)) = (capture, current.as_mut()) {
                    case.sink(sink).push(&t.decode().map_err(|e| fail(e.to_string()))?);
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
                    case.sink(sink).push(c.encode_utf8(&mut [0; 4]));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err(JunitError { line: 1, reason: "the file holds no <testsuites> or <testsuite>".into() });
    }
    let tests = cases.into_tests();
    let start = start_ms.unwrap_or(0);
    let stop = start.saturating_add((total_seconds * 1000.0).round() as u64);
    Ok(Results {
        tool: Tool { name: "junit".into(), version: None },
        summary: Summary::of(&tests, start, stop),
        tests,
        environment: properties.labels(),
    })
}

/// The element whose text a test keeps, and where.
fn sink_of(element: &[u8]) -> Option<Sink> {
    match element {
        b"failure" | b"error" => Some(Sink::Trace),
        b"system-out" => Some(Sink::Stdout),
        b"system-err" => Some(Sink::Stderr),
        attempt if dialects::is_attempt_element(attempt) => Some(Sink::Attempt),
        _ => None,
    }
}

/// A case as a test: its suite and name (see [`dialects::suite_and_name`]), its text and attempts.
fn into_test(c: Box<Case>) -> Test {
    let c = *c;
    let (suite, name) = dialects::suite_and_name(&c);
    let flaky = c.status == Status::Passed && !c.attempts.is_empty();
    let stdout = c.stdout.finish().and_then(|out| dialects::without_platform_ids(&c.path, out));
    let message = c.message.and_then(CappedText::finish);
    let message = message.or_else(|| dialects::ctest_googletest_message(c.status, &c.classname, &c.name, &stdout));
    let attempts = c.attempts.into_iter().enumerate();
    Test {
        suite,
        name,
        status: c.status,
        duration: (c.seconds * 1e9).round() / 1e6, // milliseconds, to the nanosecond
        message,
        detail: Detail {
            trace: c.trace.finish(),
            stdout: stdout.into_iter().collect(),
            stderr: c.stderr.finish().into_iter().collect(),
            retries: attempts.len() as u64,
            flaky,
            quarantined: false,
            retry_attempts: attempts
                .map(|(n, a)| Attempt {
                    attempt: n as u64 + 1,
                    status: a.status,
                    message: a.message,
                    trace: a.trace.finish(),
                })
                .collect(),
        },
    }
}

/// The `<testsuite>`s open where the reader is.
struct Suites {
    innermost: Option<Rc<Suite>>,
    depth: usize,
}

/// The cases read so far: the last few as cases, which a later one may still join, and the rest
/// as tests, with where the failed ones are (a rerun may come at the end of the report).
struct Cases {
    recent: VecDeque<Box<Case>>,
    tests: Vec<Test>,
    failed: HashMap<(String, String), usize>,
}

/// How far back a case may be joined by a later one (xdist interleaves other tests' cases).
const JOINED_WITHIN: usize = 64;

impl Cases {
    fn push(&mut self, case: Box<Case>) {
        self.recent.push_back(case);
        if self.recent.len() > JOINED_WITHIN {
            let oldest = self.recent.pop_front().expect("a case");
            let rerun_may_follow = oldest.status == Status::Failed && dialects::may_be_rerun(&oldest);
            let test = into_test(oldest);
            if rerun_may_follow {
                self.failed.insert((test.suite.clone(), test.name.clone()), self.tests.len());
            }
            self.tests.push(test);
        }
    }

    /// `case` joined to a test that failed earlier in the report as its next attempt, when it
    /// may be a rerun ([`dialects::may_be_rerun`]); else `case`.
    fn join_rerun(&mut self, case: Box<Case>) -> Option<Box<Case>> {
        if !dialects::may_be_rerun(&case) {
            return Some(case);
        }
        if let Some(at) = self.recent.iter().rposition(|c| c.status == Status::Failed && same_test(c, &case)) {
            let earlier = self.recent.remove(at).expect("a recent case");
            self.recent.insert(at, dialects::with_attempt(earlier, case));
            return None;
        }
        let at = match self.failed.is_empty() {
            true => None,
            false => self.failed.get(&dialects::suite_and_name(&case)).copied(),
        };
        match at {
            Some(at) => {
                self.tests[at].join_rerun(into_test(case));
                None
            }
            None => Some(case),
        }
    }

    fn into_tests(mut self) -> Vec<Test> {
        self.tests.extend(self.recent.into_iter().map(into_test));
        self.tests
    }
}

fn on_open(
    e: &BytesStart<'_>,
    count: &mut usize,
    suites: &mut Suites,
    current: &mut Option<Box<Case>>,
    start_ms: &mut Option<u64>,
    total_seconds: &mut f64,
    properties: &mut dialects::Properties,
) -> Result<(), String> {
    let element = e.name();
    let looked_at =
        matches!(element.as_ref(), b"testsuite" | b"testcase" | b"property" | b"failure" | b"error" | b"skipped")
            || dialects::is_attempt_element(element.as_ref());
    if !looked_at {
        return Ok(());
    }
    let attributes = Attributes::of(e)?;
    let attr = |name: &str| attributes.get(name);
    let owned = |name: &str| attributes.owned(name);
    match element.as_ref() {
        b"testsuite" => {
            if suites.depth >= MAX_DEPTH {
                return Err(format!("<testsuite> nested more than {MAX_DEPTH} deep"));
            }
            let name = cap_name(owned("name")?.unwrap_or_default());
            let file = owned("file")?.filter(|f| is_test_file(f)).map(cap_name);
            suites.innermost = Some(Rc::new(Suite::new(name, file, suites.innermost.take())));
            suites.depth += 1;
            if let (None, Some(stamp)) = (*start_ms, attr("timestamp")?) {
                *start_ms = Some(timestamp_ms(&stamp).ok_or_else(|| format!("timestamp {stamp:?} is not ISO 8601"))?);
            }
            if suites.depth == 1 {
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
            let name = cap_name(owned("name")?.ok_or("a <testcase> has no name")?);
            let skipped = dialects::is_skipped_by_attribute(attr("status")?.as_deref(), attr("result")?.as_deref());
            *current = Some(Box::new(Case {
                name,
                classname: cap_name(owned("classname")?.unwrap_or_default()),
                path: suites.innermost.clone(),
                seconds: seconds(attr("time")?.as_deref(), "testcase")?,
                status: if skipped { Status::Skipped } else { Status::Passed },
                todo: false,
                label: None,
                message: None,
                trace: CappedText::default(),
                stdout: CappedText::default(),
                stderr: CappedText::default(),
                attempts: Vec::new(),
            }));
        }
        b"property" if current.is_some() => {
            if let (Some(case), Some(label)) =
                (current.as_mut(), dialects::ctest_label(attr("name")?.as_deref(), attr("value")?.as_deref()))
            {
                case.label = label;
            }
        }
        // A suite's properties are the run's build-variant labels (a test's own are not); the
        // first few that are short labels, since some tools write every system property.
        b"property" if properties.len() < MAX_PROPERTIES => {
            if let (Some(name), Some(value)) = (owned("name")?, owned("value")?) {
                if check_label("property", &name).is_ok() && check_text("property", &value, 256).is_ok() {
                    properties.add(name, value);
                }
            }
        }
        kind if dialects::is_attempt_element(kind) => {
            // An earlier attempt; the test's own status is its last one's.
            let Some(case) = current.as_mut() else { return Ok(()) };
            let message = owned("message")?.filter(|m| !m.is_empty());
            let message = match kind.ends_with(b"Error") {
                true => message.map(|m| format!("error: {m}")),
                false => message,
            };
            let message = message.map(|m| {
                let mut capped = CappedText::default();
                capped.push(&m);
                capped.finish().unwrap_or_default()
            });
            case.attempts.push(CaseAttempt { status: Status::Failed, message, trace: CappedText::default() });
        }
        kind @ (b"failure" | b"error" | b"skipped") => {
            let Some(case) = current.as_mut() else { return Ok(()) };
            let (status, label) = match kind {
                b"skipped" if dialects::is_node_todo(kind, attr("type")?.as_deref()) => {
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
            let message = owned("message")?.unwrap_or_default();
            let message = match label {
                Some(label) if !message.is_empty() => format!("{label}: {message}"),
                _ => message,
            };
            // Appended in place: a case with many failures costs their length, not its square.
            if !message.is_empty() {
                let into = case.message.get_or_insert_with(CappedText::default);
                if !into.is_empty() {
                    into.push("\n");
                }
                into.push(&message);
            }
        }
        _ => {}
    }
    Ok(())
}

/// An element's attributes, split once: a `<testcase>` is asked for five of them. A value is
/// unescaped only when asked for.
struct Attributes<'e>(Vec<quick_xml::events::attributes::Attribute<'e>>);

impl<'e> Attributes<'e> {
    fn of(e: &'e BytesStart<'_>) -> Result<Attributes<'e>, String> {
        e.attributes().map(|a| a.map_err(|e| e.to_string())).collect::<Result<_, _>>().map(Attributes)
    }

    /// The value of the first attribute called `name`, borrowed from the report where it has
    /// no entity in it.
    fn get(&self, name: &str) -> Result<Option<Cow<'e, str>>, String> {
        let Some(a) = self.0.iter().find(|a| a.key.as_ref() == name.as_bytes()) else { return Ok(None) };
        a.unescape_value().map(Some).map_err(|e| format!("attribute {name}: {e}"))
    }

    /// [`Attributes::get`], as a text of its own.
    fn owned(&self, name: &str) -> Result<Option<String>, String> {
        Ok(self.get(name)?.map(Cow::into_owned))
    }
}

fn on_close(name: &[u8], suites: &mut Suites, cases: &mut Cases, current: &mut Option<Box<Case>>) {
    match name {
        b"testsuite" => {
            suites.innermost = suites.innermost.take().and_then(|s| s.parent.clone());
            suites.depth = suites.depth.saturating_sub(1);
        }
        b"testcase" => {
            let Some(case) = current.take() else { return };
            let (pytest, teardown) = (dialects::is_pytest(&case), dialects::is_pytest_teardown(&case));
            let case = match cases.recent.back() {
                Some(last) if dialects::is_pytest_rerun(last, &case) => {
                    let earlier = cases.recent.pop_back().expect("the last case");
                    dialects::with_attempt(earlier, case)
                }
                _ => case,
            };
            // Written twice, as a teardown error or a load failure: the earlier case takes it.
            let twice = dialects::is_jest_load_failure(&case);
            // Under xdist another test's case may come between: look a little further back.
            let same = match teardown || twice {
                true => cases.recent.iter_mut().rev().find(|c| same_test(c, &case)),
                false => None,
            };
            match same {
                Some(earlier) => {
                    earlier.status = Status::Failed;
                    if let Some(more) = case.message {
                        earlier.message.get_or_insert_with(CappedText::default).append(more);
                    }
                    if !twice || earlier.trace.is_empty() {
                        earlier.trace.append(case.trace);
                    }
                    earlier.stdout.append(case.stdout);
                    earlier.stderr.append(case.stderr);
                }
                None if pytest || teardown => cases.push(case),
                None => {
                    if let Some(case) = cases.join_rerun(case) {
                        cases.push(case);
                    }
                }
            }
        }
        _ => {}
    }
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
mod tests;
