//! The JUnit reader's tests: producers' shapes, counts, names and caps.

use super::*;
use crate::ingest::naming::MAX_SUITE;
use crate::model::CAPPED;

fn counts(r: &Results) -> (u64, u64, u64, u64, u64) {
    let s = &r.summary;
    (s.tests, s.passed, s.failed, s.skipped, s.pending)
}

#[test]
fn pytest_9_counts_tests_not_subtests_and_merges_a_teardown_error() {
    let r = parse(include_bytes!("../../../tests/fixtures/pytest-9.xml")).unwrap();
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
    let r = parse(include_bytes!("../../../tests/fixtures/node-20.xml")).unwrap();
    assert_eq!(counts(&r), (6, 3, 1, 1, 1), "the comments' totals, counted from the tests");
    let deep = r.tests.iter().find(|t| t.name.ends_with("deep")).unwrap();
    assert_eq!(deep.suite, "crud", "the outermost describe is the suite");
    let top = r.tests.iter().find(|t| t.name.contains("top level & <escaped>")).unwrap();
    assert_eq!(top.suite, "", "a top-level test tells no suite");
    assert!((r.tests[0].duration - 0.653).abs() < 1e-9, "{}", r.tests[0].duration);
}

#[test]
fn ctest_disabled_tests_are_skipped_and_a_zoneless_timestamp_is_utc() {
    let r = parse(include_bytes!("../../../tests/fixtures/ctest.xml")).unwrap();
    assert_eq!(counts(&r), (3, 1, 1, 1, 0));
    assert_eq!(r.summary.start, timestamp_ms("2026-11-25T07:51:37Z").unwrap());
    assert!((r.tests[0].duration - 1.52652).abs() < 1e-6, "eight decimals: {}", r.tests[0].duration);
}

#[test]
fn nextest_runs_are_read() {
    let r = parse(include_bytes!("../../../tests/fixtures/nextest.xml")).unwrap();
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
    let ctest = parse(include_bytes!("../../../tests/fixtures/ctest.xml")).unwrap();
    let disabled = ctest.tests.iter().find(|t| t.name.contains("disabled")).unwrap();
    assert_eq!(disabled.detail.stdout, vec!["Disabled".to_string()]);
    let node = parse(include_bytes!("../../../tests/fixtures/node-20.xml")).unwrap();
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
fn a_ctest_tests_class_names_no_suite() {
    let ctest = parse(include_bytes!("../../../tests/fixtures/ctest.xml")).unwrap();
    assert!(
        ctest.tests.iter().all(|t| t.suite.is_empty()),
        "a ctest test's class is its own name: the file names the suite"
    );
}

/// What a case takes from the suites around it is capped once per suite, to the same short
/// form whatever the depth: 60 suites of 1 KB add 64 bytes to each case's name, not 256 or 60 KB.
#[test]
fn a_deep_suites_start_of_its_cases_names_is_capped() {
    let open: String = (0..60).map(|d| format!("<testsuite name=\"d{d}{}\">", "n".repeat(1000))).collect();
    let xml = format!(
        "<testsuites>{open}<testcase name=\"t1\" classname=\"c\"/><testcase name=\"t2\" classname=\"c\"/>{}</testsuites>",
        "</testsuite>".repeat(60)
    );
    let results = parse(xml.as_bytes()).unwrap();
    let [one, two] = &results.tests[..] else { panic!("two tests: {:?}", results.tests) };
    assert!(one.suite.starts_with("d0n") && one.suite.len() <= MAX_SUITE, "{}", one.suite);
    assert!(one.name.starts_with("c::d1n") && one.name.ends_with(" > t1"), "{}", one.name);
    assert!(one.name.len() == "c::".len() + CAPPED + " > t1".len(), "{} bytes: {}", one.name.len(), one.name);
    assert_eq!(one.name.strip_suffix("t1"), two.name.strip_suffix("t2"), "one start for the suite's cases");
}

/// Names and texts are capped as they are read: a long suite name is held once (not per
/// case), long names keep their start and a hash (two that start alike stay two), and
/// output past the cap is counted, not kept.
#[test]
fn long_names_and_texts_are_capped_while_read() {
    let long = "s".repeat(200_000);
    let mut xml = format!("<testsuite name=\"{long}\">");
    for tail in ["a", "b"] {
        xml.push_str(&format!("<testcase name=\"{long}{tail}\" classname=\"c\"/>"));
    }
    xml.push_str(&format!(
        "<testcase name=\"loud\"><failure message=\"boom\"/><system-out>{}</system-out></testcase>",
        "x".repeat(100_000)
    ));
    xml.push_str("</testsuite>");
    let results = parse(xml.as_bytes()).unwrap();
    let [a, b, loud] = &results.tests[..] else { panic!("three tests: {:?}", results.tests.len()) };
    assert!(a.name.len() <= "c::".len() + CAPPED && a.name.starts_with("c::sss"), "{}", a.name.len());
    assert_ne!(a.name, b.name, "names that start alike stay apart");
    assert!(a.suite.len() <= CAPPED && a.suite.starts_with("sss"), "{}", a.suite);
    let out = &loud.detail.stdout[0];
    assert!(out.len() <= crate::model::TEXT_PER_TEST + 64, "{}", out.len());
    let cut = 100_000 - crate::model::TEXT_PER_TEST;
    assert!(out.ends_with(&format!("… [cut: {cut} more bytes]")), "{}", &out[out.len() - 40..]);
    // Capped again with the run's other texts, the count still says what the report held.
    let mut test = loud.clone();
    test.cap_text(1024);
    let out = &test.detail.stdout[0];
    let kept = out.split('…').next().unwrap().len();
    assert!(out.ends_with(&format!("… [cut: {} more bytes]", 100_000 - kept)), "{}", &out[out.len() - 40..]);
}

/// A parse looks at the clock as it goes and stops at its deadline.
#[test]
fn a_parse_stops_at_its_deadline() {
    let cases: String = (0..20_000).map(|i| format!("<testcase name=\"t{i}\"/>")).collect();
    let xml = format!("<testsuite name=\"s\">{cases}</testsuite>");
    let past = Instant::now() - std::time::Duration::from_secs(1);
    let err = parse_until(xml.as_bytes(), Some(past)).expect_err("stopped");
    assert!(err.reason.contains("not read in the time a post has"), "{}", err.reason);
    let later = Instant::now() + std::time::Duration::from_secs(600);
    assert_eq!(parse_until(xml.as_bytes(), Some(later)).unwrap().tests.len(), 20_000);
}

/// A rerun written as one more `<testcase>` of a failed test is its next attempt, however far
/// behind the first it comes (gotestsum appends its reruns after the whole package).
#[test]
fn a_rerun_written_as_a_repeated_case_is_an_attempt() {
    let case = |name: &str, failed: bool| match failed {
        true => format!(
            r#"<testcase classname="example.com/ledger" name="{name}"><failure message="Failed">run</failure></testcase>"#
        ),
        false => format!(r#"<testcase classname="example.com/ledger" name="{name}"/>"#),
    };
    let mut xml = String::from(r#"<testsuites><testsuite name="example.com/ledger">"#);
    xml += &case("TestFlaky", true);
    xml += &case("TestBroken", true);
    for n in 0..100 {
        xml += &case(&format!("TestMany{n}"), false);
    }
    xml += &case("TestBroken", true);
    xml += &case("TestFlaky", false);
    xml += &case("TestBroken", true);
    xml += "</testsuite></testsuites>";
    let r = parse(xml.as_bytes()).unwrap();
    assert_eq!(counts(&r), (102, 101, 1, 0, 0));
    let flaky = r.tests.iter().find(|t| t.name.ends_with("TestFlaky")).unwrap();
    assert_eq!((flaky.status, flaky.detail.flaky, flaky.detail.retries), (Status::Passed, true, 1));
    let broken = r.tests.iter().find(|t| t.name.ends_with("TestBroken")).unwrap();
    assert_eq!((broken.status, broken.detail.retries), (Status::Failed, 2));
    assert_eq!(broken.detail.retry_attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(r.tests[0].name, flaky.name, "a test keeps the place of its first attempt");
    assert_eq!(r.tests[0].suite, "ledger", "a Go package is named below its domain");

    // Without a class that tells tests apart (node's top-level tests of two files), two cases
    // of one name are two tests, and a passed test run twice is two passes.
    let node = r#"<testsuites><testcase name="works" classname="test"><failure message="no"/></testcase>
        <testcase name="works" classname="test"/></testsuites>"#;
    assert_eq!(counts(&parse(node.as_bytes()).unwrap()), (2, 1, 1, 0, 0));
    let twice =
        r#"<testsuite name="s"><testcase name="a" classname="c"/><testcase name="a" classname="c"/></testsuite>"#;
    assert_eq!(counts(&parse(twice.as_bytes()).unwrap()), (2, 2, 0, 0, 0));
}

/// jest-junit's test file that failed to load, written twice: one failure, under the file.
#[test]
fn one_failure_reported_twice_is_one_test() {
    let r = parse(include_bytes!("../../../tests/fixtures/jest-junit.xml")).unwrap();
    let broken: Vec<&Test> = r.tests.iter().filter(|t| t.name == "broken.test.js").collect();
    assert_eq!(broken.len(), 1, "{:?}", r.tests.iter().map(|t| &t.name).collect::<Vec<_>>());
    assert_eq!((broken[0].suite.as_str(), broken[0].status), ("broken", Status::Failed));
    let trace = broken[0].detail.trace.as_deref().unwrap();
    assert!(trace.contains("Cannot find module") && !trace.contains("\"code\":"), "the console's text: {trace}");
}
