//! Reports made by the real tools (`tests/producers/make-fixtures` ran each on the small
//! projects beside it), posted as a user posts them. The counts below are worked out from those
//! projects' sources, not from the app: each source file says what it holds.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What a fixture must give: tests, passed, failed, skipped, pending, passed on retry; its suites.
struct Expected {
    file: &'static str,
    counts: [u64; 6],
    suites: &'static [&'static str],
}

const EXPECTED: &[Expected] = &[
    // test_api.py: create passes; rename fails thrice (two reruns); skipped; flaky passes on its
    // second attempt; a failure then a teardown error (one test, two reruns). unit: two passes.
    Expected { file: "pytest-xunit2-reruns.xml", counts: [7, 4, 2, 1, 0, 1], suites: &["api", "unit/crud"] },
    // The same without reruns: flaky fails.
    Expected { file: "pytest-xunit1.xml", counts: [7, 3, 3, 1, 0, 0], suites: &["api", "unit/crud"] },
    Expected { file: "pytest-xdist.xml", counts: [7, 3, 3, 1, 0, 0], suites: &["api", "unit/crud"] },
    Expected { file: "pytest-ctrf.json", counts: [7, 3, 3, 1, 0, 0], suites: &["api", "unit/crud"] },
    // test_ledger.py with pytest-subtests, hypothesis and pytest-retry: balances (one of three
    // subtests fails: one test, tests= says 8), rounding holds, halving fails, flaky passes on a
    // retry its JUnit does not show, always fails.
    Expected { file: "pytest-plugins.xml", counts: [5, 2, 3, 0, 0, 0], suites: &["ledger"] },
    // crud.test.mjs: put > works passes, get > works fails, later is todo (its body fails),
    // offline is skipped, top level passes.
    Expected { file: "node-junit.xml", counts: [5, 2, 1, 1, 1, 0], suites: &["get", "node-junit", "put"] },
    Expected { file: "node.tap", counts: [5, 2, 1, 1, 1, 0], suites: &["get", "node", "put"] },
    // basic.t: a pass, a failure, a skip, a todo.
    Expected { file: "perl.tap", counts: [4, 1, 1, 1, 1, 0], suites: &["perl"] },
    // CMakeLists.txt: put passes, get fails, later is disabled, flaky fails (no repeat) ...
    Expected { file: "ctest-labels.xml", counts: [4, 1, 2, 1, 0, 0], suites: &["ctest-labels"] },
    // ... and passes with --repeat until-pass:3 (ctest's JUnit keeps only the last attempt).
    Expected { file: "ctest-repeat.xml", counts: [4, 2, 1, 1, 0, 0], suites: &["ctest-repeat"] },
    // ... while its console shows each attempt: get fails three times, flaky passes on its second.
    Expected { file: "ctest-repeat.log", counts: [4, 2, 1, 1, 0, 1], suites: &["ctest-repeat"] },
    // GoogleTest through ctest (ctest-gtest/): LengthOfPositive passes, LengthOfNegative fails
    // three times, Reconnects passes on its second attempt, which only the console shows.
    Expected { file: "ctest-gtest.log", counts: [3, 2, 1, 0, 0, 1], suites: &["store", "vector"] },
    Expected { file: "ctest-gtest.xml", counts: [3, 2, 1, 0, 0, 0], suites: &["store", "vector"] },
    // sample_test.cpp: Put passes, Get fails, Offline skips, DISABLED_Later is disabled, two typed
    // and two parameterised tests pass.
    Expected { file: "gtest.xml", counts: [8, 5, 1, 2, 0, 0], suites: &["inst/paramtest", "storage", "typedtest"] },
    // put passes, get fails, cursor's two sections pass.
    Expected { file: "catch2.xml", counts: [4, 3, 1, 0, 0, 0], suites: &["catch2"] },
    // put passes, get fails; doctest's JUnit reporter leaves the skipped test out.
    Expected { file: "doctest.xml", counts: [2, 1, 1, 0, 0, 0], suites: &["doctest"] },
    // ledger_test.cpp through Boost.Test's JUNIT log: post passes, balance fails, later is
    // disabled, totals/sums throws (an error: a failure).
    Expected { file: "boost-junit.xml", counts: [4, 1, 2, 1, 0, 0], suites: &["ledger"] },
    // ledger_test.c through cmocka's XML output, a file per group: post passes, balance fails,
    // later skips; the store group's setup fails, so reads is a failure (cmocka's "Test setup
    // failed", counted as an error).
    Expected { file: "cmocka-ledger.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["ledger"] },
    Expected { file: "cmocka-store.xml", counts: [1, 0, 1, 0, 0, 0], suites: &["store"] },
    // LedgerTest.php through PHPUnit's --log-junit: post passes, balance fails, later skips,
    // reads throws (an error: a failure), amounts' data sets one and three pass, two fails.
    Expected { file: "phpunit-junit.xml", counts: [7, 3, 3, 1, 0, 0], suites: &["ledger"] },
    // LedgerTest.java through JUnit 5's console launcher: post, Totals' sums and amounts 1 and 3
    // pass; balance fails, reads throws, amounts 2 fails; later is disabled.
    Expected { file: "junit5-jupiter.xml", counts: [8, 4, 3, 1, 0, 0], suites: &["ledger"] },
    // lib.rs: put passes, get fails three times (retries = 2), flaky passes on its second
    // attempt; nextest leaves the ignored test out.
    Expected { file: "nextest-retries.xml", counts: [3, 2, 1, 0, 0, 1], suites: &["producers"] },
    // ledger_test.go through gotestsum --rerun-fails=2: Post, Table and its two subtests pass,
    // Balance fails three times (two reruns, each one more <testcase>), Flaky passes on its rerun.
    Expected { file: "gotestsum-reruns.xml", counts: [7, 5, 1, 1, 0, 1], suites: &["ledger"] },
    // basket.test.js: adds, rounds and flaky (on its retry: jest-junit writes the last attempt
    // only) pass; sums and always fail; later is skipped; discount is todo, which jest-junit
    // writes as a case with nothing in it: a pass. broken.test.js fails to load: one failure,
    // which jest-junit writes twice.
    Expected { file: "jest-junit.xml", counts: [8, 4, 3, 1, 0, 0], suites: &["basket", "broken"] },
    // The same through jest-ctrf-json-reporter: its retries are attempts, todo is "other", and a
    // file that fails to load is not in the report.
    Expected { file: "jest-ctrf.json", counts: [7, 3, 2, 0, 1, 1], suites: &["basket"] },
    // cart.test.js: adds, known bug (test.fails) and flaky pass (vitest's junit keeps no
    // attempts); sums fails; later and discount (todo) are skipped; hooked's beforeAll fails:
    // one failure under the describe's name, its two tests skipped.
    Expected { file: "vitest-junit.xml", counts: [9, 3, 2, 4, 0, 0], suites: &["cart"] },
    // checkout.spec.js: totals passes, tax fails three times, flaky passes on its retry, later
    // skips. Without includeRetries Playwright's junit says nothing of the retries.
    Expected { file: "playwright-junit.xml", counts: [4, 2, 1, 1, 0, 0], suites: &["checkout"] },
    Expected { file: "playwright-junit-retries.xml", counts: [4, 2, 1, 1, 0, 1], suites: &["checkout"] },
    Expected { file: "playwright-ctrf.json", counts: [4, 2, 1, 1, 0, 1], suites: &["checkout"] },
    // backup.bats: writes passes, restores fails, later skips (in TAP 13, `not ok … # SKIP`).
    Expected { file: "bats-junit.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["backup"] },
    Expected { file: "bats.tap13", counts: [3, 1, 1, 1, 0, 0], suites: &["bats"] },
    // ledger.test.js through tape: five assertions, each a test point under its test's header;
    // balance's first fails.
    Expected { file: "tape.tap", counts: [5, 4, 1, 0, 0, 0], suites: &["tape"] },
    // cart.spec.js through mocha-junit-reporter: adds passes, totals > sums fails, store's
    // "before all" hook fails (one failure of its own; reads never runs). It writes no case for
    // the pending later, and each describe as a suite of its own: the file names the column.
    Expected { file: "mocha-junit.xml", counts: [3, 1, 2, 0, 0, 0], suites: &["cart"] },
    // ledger.test.mjs through ava --tap: the before hook throws, so post and balance never run
    // (the plan's 3 against the 2 lines is a failure); skipped is skipped.
    Expected { file: "ava.tap", counts: [3, 0, 2, 1, 0, 0], suites: &["ava"] },
    // ledger.feature through behave --junit (with --tags="not @skip"): Post passes, Balance
    // fails at its Then step, Later is skipped. Its suite is the file and the feature, both
    // "ledger".
    Expected { file: "behave-junit.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["ledger"] },
    // ledger.robot through Robot Framework's --xunit: Post passes, Balance fails, Later skips.
    Expected { file: "robot-xunit.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["ledger"] },
    // test_ledger.py through nose2's junitxml plugin, whose suite is its own name.
    Expected { file: "nose2-junit.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["ledger"] },
    // test_ledger.py through unittest-xml-reporting: a pass, a failure, a skip; its suite's
    // name carries the run's time, which is no part of the column.
    Expected { file: "unittest-xml.xml", counts: [3, 1, 1, 1, 0, 0], suites: &["ledger"] },
];

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).display().to_string()
}

/// Every fixture posted in one call; the stored files by the fixture's name.
fn posted() -> BTreeMap<String, Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    command.args(["post", "--runtime", "x-1"]).args(EXPECTED.iter().map(|e| fixture(e.file)));
    command.env("OBJSTORE_RESULTS", format!("file://{}", dir.path().display()));
    for name in support::CI_MARKERS.iter().chain(&["OBJSTORE_RESULTS_PREFIX", "OBJSTORE_RESULTS_BUCKET"]) {
        command.env_remove(name);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    support::stored(dir.path())
        .into_values()
        .map(|run| (run["ci"]["file"].as_str().unwrap().to_string(), run))
        .collect()
}

fn tests_of(run: &Value) -> &Vec<Value> {
    run["results"]["tests"].as_array().unwrap()
}

fn test<'r>(run: &'r Value, name_ends: &str) -> &'r Value {
    tests_of(run).iter().find(|t| t["name"].as_str().unwrap().ends_with(name_ends)).unwrap()
}

#[test]
fn every_producers_report_gives_its_counts_and_suites() {
    let runs = posted();
    for e in EXPECTED {
        let run = &runs[e.file];
        let s = &run["results"]["summary"];
        let flaky = tests_of(run).iter().filter(|t| t["flaky"] == true).count() as u64;
        let counts = ["tests", "passed", "failed", "skipped", "pending"].map(|k| s[k].as_u64().unwrap());
        assert_eq!(
            [counts[0], counts[1], counts[2], counts[3], counts[4], flaky],
            e.counts,
            "{}: tests, passed, failed, skipped, pending, flaky",
            e.file
        );
        let mut suites: Vec<&str> = tests_of(run).iter().map(|t| t["suite"].as_str().unwrap()).collect();
        suites.sort();
        suites.dedup();
        assert_eq!(suites, e.suites, "{}", e.file);
    }
}

/// The failure's text each producer gives is kept, with its file and line.
#[test]
fn each_failure_keeps_its_text_and_place() {
    let runs = posted();
    let text = |t: &Value| format!("{} {}", t["message"].as_str().unwrap_or(""), t["trace"].as_str().unwrap_or(""));
    let stdout = |t: &Value| t["stdout"].as_array().map(|l| format!("{l:?}")).unwrap_or_default();
    for (file, name, wanted) in [
        ("pytest-xunit2-reruns.xml", "test_rename", "tests/test_api.py:"),
        ("pytest-ctrf.json", "test_rename", "the name did not change"),
        ("pytest-plugins.xml", "test_balances", "two does not balance"),
        ("pytest-plugins.xml", "test_balances", "contains 1 failed subtest"),
        ("pytest-plugins.xml", "test_halving_is_exact", "n=1"),
        ("node-junit.xml", "works", "get returned the wrong record"),
        ("node.tap", "works", "crud.test.mjs:10:"),
        ("perl.tap", "get finds it", "basic.t line 8"),
        ("gtest.xml", "Storage::Get", "sample_test.cpp:"),
        ("ctest-gtest.log", "Vector::LengthOfNegative", "vector_test.cpp:11\nExpected equality"),
        ("ctest-gtest.xml", "Vector::LengthOfNegative", "vector_test.cpp:11\nExpected equality"),
        ("catch2.xml", "get finds it", "with expansion"),
        ("doctest.xml", "get finds it", "sample_test.cpp:6"),
        ("cmocka-ledger.xml", "balance", "ledger_test.c:10"),
        ("boost-junit.xml", "ledger::balance", "balance is off"),
        ("phpunit-junit.xml", "LedgerTest::testBalance", "balance is off"),
        ("junit5-jupiter.xml", "LedgerTest::balance()", "balance is off"),
        ("junit5-jupiter.xml", "LedgerTest::reads()", "no database"),
        ("junit5-jupiter.xml", "LedgerTest::amounts(int)[2]", "two does not balance"),
        ("phpunit-junit.xml", "LedgerTest::testReads", "no database"),
        ("phpunit-junit.xml", "LedgerTest::testAmounts with data set \"two\"", "two does not balance"),
        ("boost-junit.xml", "totals::sums", "no database"),
        ("cmocka-store.xml", "reads", "Test setup failed"),
        ("nextest-retries.xml", "storage::get", "src/lib.rs:"),
        ("gotestsum-reruns.xml", "TestBalance", "ledger_test.go:31: balance = 2, want 3"),
        ("jest-junit.xml", "basket totals sums", "basket.test.js:20"),
        ("vitest-junit.xml", "hooked", "no database"),
        ("playwright-ctrf.json", "checkout > tax", "Expected: 0.25"),
        ("playwright-junit.xml", "checkout › tax", "checkout.spec.js:8"),
        ("bats-junit.xml", "restores", "backup.bats, line 10"),
        ("bats.tap13", "restores", "backup.bats, line 10"),
        ("unittest-xml.xml", "test_balance", "balance is off"),
        ("tape.tap", "balance > balance is right", "expected: 3"),
        ("behave-junit.xml", "Balance", "the ledger has 0 entries, not 3"),
        ("robot-xunit.xml", "Balance", "2 != 3"),
        ("nose2-junit.xml", "test_balance", "balance is off"),
        ("mocha-junit.xml", "hook for \"reads\"", "no database"),
        ("ava.tap", "before hook", "no database"),
    ] {
        let t = tests_of(&runs[file])
            .iter()
            .find(|t| t["status"] == "failed" && t["name"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{file}: no failed {name}"));
        assert!(text(t).contains(wanted), "{file}: {name}: {}", text(t));
    }
    // JUnit 5's launcher: the case ids it writes as output and the JVM's properties are neither.
    let junit5 = &runs["junit5-jupiter.xml"];
    assert!(tests_of(junit5).iter().all(|t| t["stdout"].is_null()), "no unique ids as output: {junit5}");
    assert!(junit5["results"]["environment"].get("java.home").is_none(), "no JVM property is a label");
    let ctest = test(&runs["ctest-labels.xml"], "get");
    assert!(stdout(ctest).contains("crud.c:12: expected 2, got 3"), "ctest's reason is its output: {ctest}");

    // Attempts: pytest-rerunfailures' reruns and nextest's retries, each attempt listed.
    let rename = test(&runs["pytest-xunit2-reruns.xml"], "test_rename");
    assert_eq!((rename["retries"].as_u64(), rename["retryAttempts"].as_array().map(Vec::len)), (Some(2), Some(2)));
    let teardown = test(&runs["pytest-xunit2-reruns.xml"], "test_fails_then_teardown_fails");
    assert!(
        teardown["message"].as_str().unwrap().contains("failed on teardown"),
        "one test, both messages: {teardown}"
    );
    // A GoogleTest failure through ctest is its own block, not GoogleTest's banner; each
    // attempt keeps its block and the whole output as its trace.
    for file in ["ctest-gtest.log", "ctest-gtest.xml"] {
        let negative = test(&runs[file], "Vector::LengthOfNegative");
        let message = negative["message"].as_str().unwrap();
        assert!(message.ends_with("length must keep the sign (it does not)"), "{file}: {message}");
        assert!(!message.contains("Running main()") && !message.contains("[  FAILED  ]"), "{file}: {message}");
    }
    let reconnects = test(&runs["ctest-gtest.log"], "Store::Reconnects");
    let attempt = &reconnects["retryAttempts"][0];
    assert_eq!(
        attempt["message"].as_str().map(|m| m.ends_with(":19\nFailed\nthe first attempt cannot connect")),
        Some(true)
    );
    assert!(attempt["trace"].as_str().unwrap().starts_with("Running main()"), "{attempt}");
    let get = test(&runs["ctest-repeat.log"], "get");
    assert_eq!(get["retries"], 2);
    assert!(get["message"].as_str().unwrap().contains("crud.c:12"), "{get}");
    let flaky = test(&runs["nextest-retries.xml"], "storage::flaky");
    assert_eq!((flaky["status"].as_str(), flaky["retries"].as_u64()), (Some("passed"), Some(1)));
    // No terminal escapes reach the text shown (Playwright's CTRF keeps its colours).
    for (file, run) in &runs {
        for t in tests_of(run) {
            assert!(!t.to_string().contains("\\u001b"), "{file}: {}", t["name"]);
        }
    }
    // gotestsum's reruns are the test's attempts: three runs, the last its status.
    let balance = test(&runs["gotestsum-reruns.xml"], "TestBalance");
    assert_eq!((balance["retries"].as_u64(), balance["retryAttempts"].as_array().map(Vec::len)), (Some(2), Some(2)));
    // Two tests of one name in two describe blocks stay two; node's todo stays todo.
    let node = &runs["node-junit.xml"];
    assert_eq!(tests_of(node).iter().filter(|t| t["name"].as_str().unwrap().ends_with("works")).count(), 2);
    assert_eq!(test(node, "later")["status"], "pending");
}
