//! One definition of flaky, on every page: a test that failed and then passed on a retry (as
//! nextest writes it, a `<flakyFailure>` then a pass) is flaky on the run's page, in the matrix,
//! the pair's history, the test's history, the commit view, both summaries and the export.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::{app, Page};

const COMMIT: &str = "0123456789abcdef";
const SUITE: &str = "producers";
const FLAKY: &str = "producers::storage::flaky";

fn succeeded(output: Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The names of the tests listed in `tests`.
fn names<'v>(tests: impl IntoIterator<Item = &'v Value>) -> Vec<&'v str> {
    tests.into_iter().filter_map(|t| t["name"].as_str()).collect()
}

fn listed(view: &Value, field: &str) -> Vec<String> {
    names(view[field].as_array().into_iter().flatten()).into_iter().map(String::from).collect()
}

#[test]
fn a_pass_on_a_retry_is_flaky_on_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let report = fixture("nextest-retries.xml");
    let labels = ["--platform", "linux", "--runtime", "rust", "--commit", COMMIT, "--run", "r1"];
    let post: Vec<&str> = ["post"].into_iter().chain(labels).chain([report.to_str().unwrap()]).collect();
    succeeded(app(dir, &post).output().unwrap());

    // The summaries a CI job prints: of its run and of the commit.
    let flaky_section = format!("Flaky (1):\n  {SUITE} › {FLAKY}  on linux / rust\n");
    for args in [["summary", "--run", "r1"], ["summary", "--commit", &COMMIT[..7]]] {
        let text = succeeded(app(dir, &args).output().unwrap());
        assert!(text.contains(&flaky_section), "{args:?}: {text}");
    }

    // The HTML export lists the run's flaky tests with their class.
    let html = dir.join("results.html");
    succeeded(app(dir, &["export", "--out", html.to_str().unwrap()]).output().unwrap());
    let html = std::fs::read_to_string(html).unwrap();
    let row = html.split("<tr>").find(|row| row.contains(FLAKY)).unwrap_or_default();
    assert!(row.contains("<span class=\"badge\">flaky</span>"), "{html}");

    let page = Page::start(dir);
    let matrix = page.get("/api/matrix");
    let row = &matrix["rows"][0];
    assert_eq!(row["cells"][SUITE]["classes"]["flaky"], 1, "{row}");
    assert!(matrix["rules"]["flaky"].as_str().unwrap().starts_with("passed on a retry"), "{matrix}");

    let key = row["key"].as_str().unwrap();
    let run = page.get(&format!("/api/run?key={key}"));
    let tests = run["tests"].as_array().unwrap();
    let flaky: Vec<&Value> = tests.iter().filter(|t| t["flaky"] == true).collect();
    assert_eq!(names(flaky.iter().copied()), [FLAKY], "{run}");
    assert!(flaky[0]["classes"].as_array().unwrap().iter().any(|c| c["class"] == "flaky"), "{run}");

    let history = page.get("/api/history?platform=linux&browser=rust");
    assert_eq!(listed(&history, "flaky"), [FLAKY], "{history}");
    assert_eq!(history["flaky"][0]["basis"], format!("commit {COMMIT}"), "{history}");

    let commit = page.get(&format!("/api/commit?commit={}", &COMMIT[..7]));
    assert_eq!(listed(&commit, "flaky"), [FLAKY], "{commit}");
    assert_eq!(commit["flaky"][0]["pair"], "linux/rust", "{commit}");

    let test = page.get(&format!("/api/test?platform=linux&browser=rust&suite={SUITE}&name={FLAKY}"));
    assert_eq!(test["strip"][0]["status"], "flaky", "{test}");
}

/// Flaky has one window in every view: a test that failed three runs ago at this commit, and
/// passed in the runs since, is flaky in the matrix as on the run's page (the run and the 25
/// before it), in the commit view and in the run's summary.
#[test]
fn flaky_has_one_window_in_every_view() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for (i, outcome) in ["<failure message=\"boom\"/>", "", "", ""].iter().enumerate() {
        let report = dir.join(format!("run-{i}.xml"));
        let xml = format!(
            "<testsuites><testsuite name=\"window\" tests=\"2\"><testcase classname=\"window\" name=\"sometimes\">{outcome}</testcase><testcase classname=\"window\" name=\"steady\"/></testsuite></testsuites>"
        );
        std::fs::write(&report, xml).unwrap();
        let run = format!("w{i}");
        let args = ["post", "--platform", "linux", "--runtime", "rust", "--commit", COMMIT, "--run", &run];
        let post: Vec<&str> = args.into_iter().chain([report.to_str().unwrap()]).collect();
        succeeded(app(dir, &post).output().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The team's CODEOWNERS, kept in the bucket: a bad line is refused by its number.
    let codeowners = dir.join("CODEOWNERS");
    std::fs::write(&codeowners, "* @all\n[unclosed\n").unwrap();
    let refused = app(dir, &["codeowners", "set", codeowners.to_str().unwrap()]).output().unwrap();
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("line 2"), "{refused:?}");
    std::fs::write(&codeowners, "* @all\nwindow/ @window-team\nwindow @window-team\n").unwrap();
    succeeded(app(dir, &["codeowners", "set", codeowners.to_str().unwrap()]).output().unwrap());
    let owners = succeeded(app(dir, &["codeowners", "owners", "window", "src/x.rs"]).output().unwrap());
    assert_eq!(owners, "window: @window-team\nsrc/x.rs: @all\n");
    let text = succeeded(app(dir, &["summary", "--run", "w3"]).output().unwrap());
    assert!(
        text.contains("Flaky (1):\n  window › window::sometimes  on linux / rust (owners @window-team)\n"),
        "{text}"
    );
    let page = Page::start(dir);
    let matrix = page.get("/api/matrix");
    let row = &matrix["rows"][0];
    let flaky_cells: Vec<u64> =
        row["cells"].as_object().unwrap().values().filter_map(|c| c["classes"]["flaky"].as_u64()).collect();
    assert_eq!(flaky_cells, [1], "the matrix counts it: {row}");
    let run = page.get(&format!("/api/run?key={}", row["key"].as_str().unwrap()));
    let flaky: Vec<&Value> = run["tests"].as_array().unwrap().iter().filter(|t| t["flaky"] == true).collect();
    assert_eq!(names(flaky.iter().copied()), ["window::sometimes"], "{run}");
    let commit = page.get(&format!("/api/commit?commit={}", &COMMIT[..7]));
    assert_eq!(listed(&commit, "flaky"), ["window::sometimes"], "{commit}");
    // The flaky list: one of the four runs that ran it shows it flaky.
    let list = page.get("/api/flaky");
    assert_eq!(listed(&list, "tests"), ["window::sometimes"], "{list}");
    let test = &list["tests"][0];
    assert_eq!(
        (test["flaky"].as_u64(), test["ran"].as_u64(), test["rate"].as_f64()),
        (Some(1), Some(4), Some(0.25)),
        "{list}"
    );
    assert_eq!(test["pairs"][0]["pair"], "linux/rust", "{list}");
    assert_eq!(test["owners"], serde_json::json!(["@window-team"]), "{list}");
    let page_of_test = page.get("/api/test?suite=window&name=window::sometimes");
    assert_eq!(page_of_test["owners"], serde_json::json!(["@window-team"]), "{page_of_test}");
}
