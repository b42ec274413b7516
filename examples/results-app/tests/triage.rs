//! Triage on a corpus of real failure texts: the same GoogleTest assert failing on Linux/gcc and
//! Windows/MSVC (one group by fingerprint), a C assert as glibc and MSVC's CRT print it (two
//! fingerprints, one failure rule), an AddressSanitizer report on two machines (one group), and a
//! Python traceback (new). Failure rules edited from the command line and the page regroup every
//! view at once; known failures are known, not new, and the summaries link their issue; impact
//! counts runs, commits blocked and minutes lost.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use support::{app, Page};

const GTEST_LINUX: &str = "/home/runner/work/db/db/tests/crud_test.cpp:42\nExpected equality of these values:\n  store.count()\n    Which is: 3\n  2";
const GTEST_WINDOWS: &str =
    "D:\\a\\db\\db\\tests\\crud_test.cpp:42\nExpected equality of these values:\n  store.count()\n    Which is: 3\n  2";
const ASSERT_GLIBC: &str = "crud_c: /home/ci/db/tests/crud.c:88: test_delete: Assertion `removed == 1' failed.";
const ASSERT_MSVC: &str = "Assertion failed: removed == 1, file C:\\a\\db\\tests\\crud.c, line 88";
const ASAN: &str = "==12345==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x55d5a1b2c3d4 bp 0x7ffc1234 sp 0x7ffc1228\nREAD of size 4 at 0x602000000010 thread T0\n    #0 0x55d5a1b2c3d4 in cursor_next /home/ci/db/src/cursor.c:120";
const ASAN_AGAIN: &str = "==877==ERROR: AddressSanitizer: heap-use-after-free on address 0x6030000000a0 at pc 0x401a2b bp 0x7ffd9876 sp 0x7ffd9868\nREAD of size 4 at 0x6030000000a0 thread T0\n    #0 0x401a2b in cursor_next C:\\a\\db\\src\\cursor.c:120";
const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/home/runner/work/app/tests/test_cart.py\", line 12, in test_total\n    assert total == 3\nAssertionError: assert 2 == 3";

fn succeeded(output: Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Posts a CTRF report of `tests` (name, suite, message or none) for `platform`/`runtime` at
/// `commit` on main, started `ago` ms before now and lasting ten minutes; answers its run key.
fn post(dir: &Path, platform: &str, runtime: &str, commit: &str, ago: u64, tests: &[(&str, &str, Option<&str>)]) {
    let start = support::now_ms() - ago;
    let tests: Vec<Value> = tests
        .iter()
        .map(|(name, suite, message)| match message {
            Some(m) => json!({"name": name, "suite": suite, "status": "failed", "duration": 60_000, "message": m}),
            None => json!({"name": name, "suite": suite, "status": "passed", "duration": 1000}),
        })
        .collect();
    let report = json!({"results": {"tool": {"name": "ctest"}, "summary": {"tests": tests.len(), "passed": 0,
        "failed": 0, "pending": 0, "skipped": 0, "other": 0, "start": start, "stop": start + 600_000}, "tests": tests}});
    let file = dir.join(format!("{platform}-{runtime}-{commit}.json"));
    std::fs::write(&file, report.to_string()).unwrap();
    let run = format!("{commit}-{platform}");
    let args = ["post", "--platform", platform, "--runtime", runtime, "--commit", commit, "--branch", "main"];
    let args: Vec<&str> = args.into_iter().chain(["--run", &run, file.to_str().unwrap()]).collect();
    succeeded(app(dir, &args).output().unwrap());
}

/// The groups of `/api/failures` as (key's kind, pairs, tests' names).
fn groups(page: &Page) -> Vec<Value> {
    page.get("/api/failures")["groups"].as_array().unwrap().clone()
}

fn group_of<'g>(groups: &'g [Value], test: &str) -> &'g Value {
    groups.iter().find(|g| g["tests"].as_array().unwrap().iter().any(|t| t["name"] == test)).unwrap()
}

#[test]
fn failures_group_by_fingerprint_and_rule_and_say_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let hour = 3_600_000;
    // Yesterday on main: Linux failed the GoogleTest assert, the C assert and ASan.
    post(
        dir,
        "linux",
        "gcc-13",
        "c1",
        2 * hour,
        &[
            ("CrudTest.Count", "crud_test", Some(GTEST_LINUX)),
            ("test_delete", "crud_c", Some(ASSERT_GLIBC)),
            ("CursorTest.Next", "cursor_test", Some(ASAN)),
        ],
    );
    // Now: Windows fails the same three; Python fails a test of its own, alone.
    post(
        dir,
        "windows",
        "msvc-19",
        "c2",
        hour,
        &[
            ("CrudTest.Count", "crud_test", Some(GTEST_WINDOWS)),
            ("test_delete", "crud_c", Some(ASSERT_MSVC)),
            ("CursorTest.Next", "cursor_test", Some(ASAN_AGAIN)),
        ],
    );
    post(
        dir,
        "linux",
        "python-3.11",
        "c2",
        hour,
        &[("test_total", "tests/test_cart.py", Some(TRACEBACK)), ("test_add", "tests/test_cart.py", None)],
    );
    // A minute later, the same commit on macOS fails alike: new there too (a run of the same
    // commit is no "before").
    post(dir, "macos", "python-3.11", "c2", hour - 60_000, &[("test_total", "tests/test_cart.py", Some(TRACEBACK))]);

    let page = Page::start_with(dir, &["--token", "a-token-of-every-pair"]);
    let found = groups(&page);
    // By fingerprint: the GoogleTest assert and ASan are one group each over both machines;
    // the C assert as glibc and MSVC print it is two.
    let pairs = |g: &Value| g["pairs"].as_array().unwrap().len();
    assert_eq!(pairs(group_of(&found, "CrudTest.Count")), 2, "{found:#?}");
    assert_eq!(pairs(group_of(&found, "CursorTest.Next")), 2, "{found:#?}");
    let asserts: Vec<&Value> = found.iter().filter(|g| g["tests"][0]["name"] == "test_delete").collect();
    assert_eq!(asserts.len(), 2, "{found:#?}");

    // New: the traceback (never failed before); the MSVC assert (its test failed, but with
    // another text); not the GoogleTest assert on Windows (failed alike on Linux before).
    let novelty = |test: &str, pair: &str| {
        let mut tests = found.iter().flat_map(|g| g["tests"].as_array().unwrap());
        let t = tests.find(|t| t["name"] == test && t["pair"] == pair);
        t.unwrap_or_else(|| panic!("{test} on {pair}: {found:#?}"))["novelty"].clone()
    };
    assert_eq!(novelty("test_total", "linux/python-3.11")["kind"], "new");
    assert_eq!(novelty("test_total", "macos/python-3.11")["kind"], "new");
    assert_eq!(novelty("test_total", "linux/python-3.11")["branch"], "main");
    assert_eq!(novelty("test_delete", "windows/msvc-19")["kind"], "new");
    assert_eq!(novelty("test_delete", "windows/msvc-19")["failed"], 1);
    assert_eq!(novelty("CrudTest.Count", "windows/msvc-19")["kind"], "seen");
    assert!(novelty("CrudTest.Count", "windows/msvc-19")["run"].as_str().unwrap().starts_with("linux/gcc-13/"));

    // Impact: the traceback alone failed both Python runs: one commit blocked, their twenty
    // minutes lost; the GoogleTest assert failed two runs and blocked none, a minute each.
    let traceback = &group_of(&found, "test_total")["impact"];
    assert_eq!((traceback["runs"].as_u64(), traceback["blocked"].as_u64()), (Some(2), Some(1)), "{traceback}");
    assert_eq!(traceback["minutes"], 20.0);
    let gtest = &group_of(&found, "CrudTest.Count")["impact"];
    assert_eq!(
        (gtest["runs"].as_u64(), gtest["blocked"].as_u64(), gtest["minutes"].as_f64()),
        (Some(2), Some(0), Some(2.0))
    );
    assert_eq!(found[0]["tests"][0]["name"], "test_total", "ranked by minutes lost");
    let rules = page.get("/api/failures")["triage"].clone();
    assert!(rules["impact"].as_array().unwrap().iter().any(|r| r[0] == "minutes"), "{rules}");

    // A rule binds the C assert's two texts to an issue: one group, known, at once.
    let issue = "https://github.com/team/db/issues/41";
    succeeded(
        app(dir, &["rules", "add", "--title", "delete removes twice", "--issue", issue, "--text", "removed == 1"])
            .output()
            .unwrap(),
    );
    let found = groups(&page);
    let known: Vec<&Value> = found.iter().filter(|g| g["tests"][0]["name"] == "test_delete").collect();
    assert_eq!(known.len(), 1, "{found:#?}");
    assert_eq!((known[0]["key"].as_str(), known[0]["rule"]["issue"].as_str()), (Some("rule r1"), Some(issue)));
    assert_eq!(known[0]["novelty"]["kind"], "known");
    assert_eq!(known[0]["pairs"].as_array().unwrap().len(), 2);

    // The summaries say known and link the issue; the traceback is new.
    let md = succeeded(
        app(dir, &["summary", "--run", "c2-windows", "--markdown", "--collector", &page.url]).output().unwrap(),
    );
    assert!(
        md.contains(&format!(
            "crud\\_c › test\\_delete · windows / msvc-19 · known: [delete removes twice]({issue}): "
        )),
        "{md}"
    );
    let python = succeeded(app(dir, &["summary", "--run", "c2-linux", "--collector", &page.url]).output().unwrap());
    assert!(python.contains("cart › test_total [new]  on linux / python-3.11"), "{python}");

    // From the page: without a token, refused; with it, the rule's text narrows to glibc's
    // wording and the groups split again; removed, it is gone.
    let edit = |token: Option<&str>, body: Value| {
        let mut request = ureq::post(&format!("{}/api/rules", page.url)).config().http_status_as_error(false).build();
        if let Some(token) = token {
            request = request.header("authorization", &format!("Bearer {token}"));
        }
        let mut answer = request.content_type("application/json").send(body.to_string()).unwrap();
        (answer.status().as_u16(), answer.body_mut().read_to_string().unwrap())
    };
    let (status, said) = edit(None, json!({"action": "edit", "id": "r1", "text": "Assertion `removed == 1'"}));
    assert_eq!(status, 401, "{said}");
    let (status, said) =
        edit(Some("a-token-of-every-pair"), json!({"action": "edit", "id": "r1", "issue": "javascript:x"}));
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("not an http(s) address"), "{said}");
    let (status, said) =
        edit(Some("a-token-of-every-pair"), json!({"action": "edit", "id": "r1", "text": "Assertion `removed == 1'"}));
    assert_eq!(status, 200, "{said}");
    let found = groups(&page);
    assert_eq!(found.iter().filter(|g| g["tests"][0]["name"] == "test_delete").count(), 2, "{found:#?}");
    let listed = page.get("/api/rules");
    assert_eq!(listed["rules"][0]["text"], "Assertion `removed == 1'", "{listed}");
    assert_eq!(listed["rules"][0]["impact"]["runs"], 1, "glibc's run only: {listed}");
    let (status, _) = edit(Some("a-token-of-every-pair"), json!({"action": "remove", "id": "r1"}));
    assert_eq!(status, 200);
    assert_eq!(page.get("/api/rules")["rules"], json!([]));
    drop(page);

    // With an editor token, the jobs' token no longer edits rules.
    let page = Page::start_with(dir, &["--token", "a-token-of-every-pair", "--editor-token", "the-editors-own-token"]);
    let add = json!({"action": "add", "title": "t", "issue": issue, "text": "x"});
    let post = |token: &str| {
        let request = ureq::post(&format!("{}/api/rules", page.url)).config().http_status_as_error(false).build();
        let request = request.header("authorization", &format!("Bearer {token}"));
        request.content_type("application/json").send(add.to_string()).unwrap().status().as_u16()
    };
    assert_eq!(post("a-token-of-every-pair"), 403);
    assert_eq!(post("the-editors-own-token"), 200);
}
