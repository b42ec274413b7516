//! The views' tests, and the helpers other modules' tests share (a report, a file:// target).

use super::*;
use crate::model::Run;
use serde::Serialize;
use serde_json::json;
use serde_json::Value;

/// A report of `tests` (linux/c, version 1) started at `start`, at `commit`.
pub(crate) fn report(start: u64, commit: Option<&str>, tests: Value) -> Run {
    let mut run: Run = serde_json::from_value(json!({"platform": "linux", "browser": "c", "version": "1",
        "results": {"tool": {"name": "ctest"}, "summary": {"tests": 0, "passed": 0, "failed": 0, "skipped": 0,
            "pending": 0, "other": 0, "start": start, "stop": start}, "tests": tests}}))
    .unwrap();
    run.results.summary = crate::model::Summary::of(&run.results.tests, start, start);
    run.ci.commit = commit.map(str::to_string);
    run
}

/// A view as the page gets it.
pub(crate) fn json<T: Serialize>(view: View<T>) -> Value {
    serde_json::to_value(view.unwrap()).unwrap()
}

/// A `file://` bucket named `results` under `root`.
fn file_target(root: &Path) -> Target {
    Target {
        endpoint: format!("file://{}", root.display()),
        bucket: "results".into(),
        prefix: String::new(),
        timeout_ms: None,
    }
}

fn one(suite: &str, name: &str, status: &str) -> Value {
    json!({"name": name, "status": status, "duration": 1, "suite": suite})
}

/// The runs' objects of a file:// bucket's folder (not the change log, anchors or records).
fn objects(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    found
}

/// The matrix drawn from the names' digests, with no GET, is the matrix drawn from the
/// bodies: the same bucket with its names stripped of their digests gives the same rows.
#[test]
fn the_matrix_from_names_is_the_matrix_from_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target;
    let named = dir.path().join("named");
    let writer = crate::store::Writer::open(&target(&named)).unwrap();
    let mut at = 1_795_000_000_000;
    for (platform, commit, a, b) in [
        ("linux", "c1", "passed", "passed"),
        ("linux", "c2", "failed", "passed"),
        ("mac", "c1", "passed", "failed"),
        ("mac", "c2", "passed", "failed"),
        ("win", "c2", "failed", "skipped"),
    ] {
        let mut run =
            report(at, Some(commit), json!([one("crud", "a", a), one("crud", "b", b), one("sql", "c", "passed")]));
        run.platform = platform.into();
        run.results.environment.insert("build".into(), json!("debug"));
        writer.store(&run).unwrap();
        at += 1000;
    }
    drop(writer);
    // The same objects under names without digests (and no change log: a full listing).
    let stripped = dir.path().join("stripped");
    for key in objects(&named.join("results")) {
        let (run, file) = key.rsplit_once('/').unwrap();
        let to = stripped.join("results").join(run).join(file.split('.').next().unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(named.join("results").join(&key), to).unwrap();
    }
    let matrix = |root: &Path| {
        let viewer = Viewer::open(&target(root), &root.with_extension("cache.sqlite3")).unwrap();
        json(viewer.matrix(&MatrixFilter::default()))
    };
    let (from_names, from_bodies) = (matrix(&named), matrix(&stripped));
    assert_eq!(from_names["cost"]["byKind"].get("GET"), None, "{}", from_names["cost"]);
    assert_eq!(from_bodies["cost"]["byKind"]["GET"], 5, "{}", from_bodies["cost"]);
    // The view's time, of which the part spent waiting on the bucket.
    let time = |cost: &Value, field: &str| cost[field].as_f64().unwrap_or(-1.0);
    assert!(time(&from_bodies["cost"], "ms") >= time(&from_bodies["cost"], "bucketMs"), "{}", from_bodies["cost"]);
    assert!(time(&from_bodies["cost"], "bucketMs") >= 0.0, "{}", from_bodies["cost"]);
    assert_eq!(from_names["rows"], from_bodies["rows"]);
    // At c2, a failed on linux (passed before: new) and win, passed on mac; b passed on
    // linux, failed on mac (as before: not new) and did not run on win.
    let classes: Vec<&Value> = (0..3).map(|i| &from_names["rows"][i]["cells"]["crud"]["classes"]).collect();
    assert_eq!(classes, [&json!({"regressed": 1, "divergent": 2}), &json!({"divergent": 2}), &json!({"divergent": 1})]);
    assert_eq!(from_names["rows"][0]["labels"], json!({"build": "debug"}));
}

/// A run of more files than the first scan of its pair's names takes is read whole, and the
/// run before it too, while the other pairs' scans, asked with it, answer theirs.
#[test]
fn a_run_of_many_files_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    for (platform, run, files) in [("linux", "old", 1), ("linux", "big", 60), ("mac", "one", 2)] {
        for i in 0..files {
            let mut report = report(1_795_000_000_000, None, json!([one("crud", &format!("t{i}"), "passed")]));
            report.platform = platform.into();
            report.ci.run = Some(run.into());
            writer.store(&report).unwrap();
        }
    }
    drop(writer);
    let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
    let pairs = [("linux".into(), "c".into()), ("mac".into(), "c".into())];
    let newest = newest_digested(&viewer.db, &pairs, BROKEN_RUNS).unwrap();
    let found: Vec<Vec<(usize, &str)>> =
        newest.iter().map(|runs| runs.iter().map(|d| (d.files, d.key.rsplit('-').next().unwrap())).collect()).collect();
    assert_eq!(found, [vec![(60, "big"), (1, "old")], vec![(2, "one")]]);
    let matrix = json(viewer.matrix(&MatrixFilter::default()));
    assert_eq!(matrix["rows"][0]["cells"]["crud"]["passed"], 60, "{matrix}");
}

/// The pairs' newest runs are kept between views only while the library makes no bucket
/// request: a listing that finds a new run shows it in the next matrix.
#[test]
fn a_listing_that_finds_a_new_run_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    writer.store(&report(1_795_000_000_000, Some("c1"), json!([one("crud", "a", "passed")]))).unwrap();
    let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
    let newest_commit = |viewer: &Viewer| {
        let matrix = json(viewer.matrix(&MatrixFilter::default()));
        (matrix["rows"][0]["ci"]["commit"].clone(), matrix["rows"][0]["cells"]["crud"]["failed"].clone())
    };
    assert_eq!(newest_commit(&viewer), (json!("c1"), json!(0)));
    assert_eq!(newest_commit(&viewer), (json!("c1"), json!(0)), "kept, without a request");
    writer.store(&report(1_795_000_001_000, Some("c2"), json!([one("crud", "a", "failed")]))).unwrap();
    viewer.relist().unwrap();
    assert_eq!(newest_commit(&viewer), (json!("c2"), json!(1)));
}

/// Branches: a pull request's runs do not replace the default branch's in the matrix, even
/// when the pair's newest runs are all the pull request's; asked for, its branch (or any) shows
/// it; rows say their commit and branch; the pull request's run is compared with its base's
/// run before it; a run of no branch counts as the default's; a
/// configured default branch wins, and with neither main nor master, any branch shows.
#[test]
fn the_matrix_shows_the_default_branch_and_a_pull_request_compares_with_its_base() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    let store = |commit: &str, branch: Option<&str>, status: &str| {
        let mut run = report(1_795_000_000_000, Some(commit), json!([one("crud", "a", status)]));
        run.ci.branch = branch.map(str::to_string);
        // Runs sort by the millisecond they were stored in: one apart.
        std::thread::sleep(Duration::from_millis(3));
        let key = writer.store(&run).unwrap();
        key.rsplit_once('/').unwrap().0.to_string()
    };
    let legacy = store("c0", None, "passed");
    let main = store("c1", Some("main"), "passed");
    let pull: Vec<String> = (2..5).map(|i| store(&format!("c{i}"), Some("feature/slug-fix"), "failed")).collect();
    let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
    let matrix = |branch: Option<&str>| {
        json(viewer.matrix(&MatrixFilter { branch: branch.map(str::to_string), ..MatrixFilter::default() }))
    };
    let shown = matrix(None);
    assert_eq!(shown["rows"][0]["key"], json!(main), "{shown}");
    assert_eq!(shown["rows"][0]["ci"], json!({"commit": "c1", "branch": "main"}));
    assert_eq!((shown["branch"].clone(), shown["defaultBranch"].clone()), (json!("main"), json!("main")));
    assert_eq!(shown["branches"], json!(["feature/slug-fix", "main"]));
    assert_eq!(matrix(Some("feature/slug-fix"))["rows"][0]["key"], json!(pull[2]));
    assert_eq!(matrix(Some("*"))["rows"][0]["key"], json!(pull[2]));
    assert_eq!(matrix(Some("*"))["branch"], Value::Null);
    assert_eq!(matrix(Some("release/1.x"))["rows"], json!([]), "no run on that branch");
    assert!(viewer.matrix(&MatrixFilter { branch: Some("a\nb".into()), ..MatrixFilter::default() }).is_err());

    // The pull request's run: compared with main's run before it.
    let run = json(viewer.run(&pull[2]));
    assert_eq!((run["previous"].clone(), run["base"].clone()), (json!(main), json!("main")), "{run}");
    // Main's run: compared with the run of no branch, which is the default branch's.
    let run = json(viewer.run(&main));
    assert_eq!((run["previous"].clone(), run.get("base").cloned()), (json!(legacy), None));

    // Configured, the default wins; with neither main nor master, any branch shows.
    let trunk = Viewer::open(&target, &dir.path().join("trunk.sqlite3")).unwrap();
    let trunk = trunk.with_default_branch(Some("trunk".into()));
    let shown = json(trunk.matrix(&MatrixFilter::default()));
    assert_eq!(shown["rows"][0]["key"], json!(legacy), "a run of no branch is the default's: {shown}");
    let other = tempfile::tempdir().unwrap();
    let target = file_target(other.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    let mut run = report(1_795_000_000_000, Some("d1"), json!([one("crud", "a", "passed")]));
    run.ci.branch = Some("develop".into());
    let develop = writer.store(&run).unwrap();
    let viewer = Viewer::open(&target, &other.path().join("cache.sqlite3")).unwrap();
    let shown = json(viewer.matrix(&MatrixFilter::default()));
    assert_eq!(
        (shown["branch"].clone(), shown["rows"][0]["key"].clone()),
        (Value::Null, json!(develop.rsplit_once('/').unwrap().0))
    );
}

/// Views are built side by side: one held in the middle of its work does not hold up another
/// (every view used to wait for the one before it), and a view built beside another says that
/// its count of requests may hold the other's.
#[test]
fn views_do_not_wait_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    writer.store(&report(1_795_000_000_000, Some("c1"), json!([one("crud", "a", "passed")]))).unwrap();
    drop(writer);
    let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
    let alone = viewer.matrix(&MatrixFilter::default()).unwrap();
    assert!(!alone.cost.shared && alone.cost.requests > 0, "a cold view alone: its own requests");
    let (second_built, hear) = std::sync::mpsc::channel();
    let (inside, entered) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let viewer = &viewer;
        let held = s.spawn(move || {
            viewer.view(|_| {
                inside.send(()).unwrap();
                // Held until a second view is built whole; a bound, so that waiting fails.
                hear.recv_timeout(Duration::from_secs(120))
                    .map_err(|_| AppError::internal("the second view waited for this one"))
            })
        });
        // The second view begins once the first is in the middle of its work.
        entered.recv().unwrap();
        let second = viewer.matrix(&MatrixFilter::default()).unwrap();
        second_built.send(()).unwrap();
        assert!(second.cost.shared, "built beside the held view");
        assert!(held.join().unwrap().unwrap().cost.shared);
    });
    assert!(!viewer.matrix(&MatrixFilter::default()).unwrap().cost.shared);
}

/// The views' shapes: an optional field is absent while unset and present once set, and a
/// field the page reads as null (`next`, `previous`) is present as null.
#[test]
fn optional_fields_are_absent_until_set() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let writer = crate::store::Writer::open(&target).unwrap();
    let failed = json!({"name": "a", "status": "failed", "duration": 1, "suite": "crud", "message": "boom",
        "trace": "at a"});
    let mut old = report(1_795_000_000_000, None, json!([one("crud", "a", "passed")]));
    old.platform = "mac".into();
    writer.store(&old).unwrap();
    let mut new = report(1_795_000_001_000, Some("c1"), json!([failed, one("crud", "b", "passed")]));
    new.platform = "mac".into();
    new.results.environment.insert("build".into(), json!("debug"));
    let new_key = crate::model::run_key(&writer.store(&new).unwrap()).unwrap().to_string();
    writer.store(&report(1_795_000_002_000, None, json!([one("sql", "c", "passed")]))).unwrap();
    drop(writer);
    // A run of one file that is not a run.
    let unreadable = format!("linux/c/{}", crate::model::run_segment(1_700_000_000_000, "bad"));
    std::fs::create_dir_all(dir.path().join("results").join(&unreadable)).unwrap();
    std::fs::write(dir.path().join("results").join(&unreadable).join("f"), "{\"not\": \"a run\"}").unwrap();
    let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
    let has = |v: &Value, field: &str| v.get(field).is_some();

    let matrix = json(viewer.matrix(&MatrixFilter::default()));
    assert!(matrix["next"].is_null() && has(&matrix, "next"), "{matrix}");
    let (linux, mac) = (&matrix["rows"][0], &matrix["rows"][1]);
    assert_eq!((linux["platform"].as_str(), mac["platform"].as_str()), (Some("linux"), Some("mac")));
    for field in ["ci", "error", "unreadable"] {
        assert!(!has(linux, field), "{field}: {linux}");
    }
    for field in ["version", "summary", "labels", "cells"] {
        assert!(has(linux, field), "{field}: {linux}");
    }
    assert_eq!((&mac["ci"], &mac["labels"]), (&json!({"commit": "c1"}), &json!({"build": "debug"})));
    assert!(has(&matrix["cost"], "requests") && has(&matrix["cost"], "byKind"), "{matrix}");

    let run = json(viewer.run(&new_key));
    assert!(has(&run, "previous") && run["previous"].as_str().is_some_and(|p| p.starts_with("mac/c/")), "{run}");
    assert!(!has(&run, "error") && !has(&run, "unreadable"), "{run}");
    let tests = run["tests"].as_array().unwrap();
    assert_eq!((tests[0]["message"].as_str(), tests[0]["trace"].as_str()), (Some("boom"), Some("at a")));
    for field in ["message", "trace", "stdout", "retries"] {
        assert!(!has(&tests[1], field), "{field}: {}", tests[1]);
    }
    assert_eq!((tests[0]["flaky"].as_bool(), tests[1]["classes"].as_array().map(Vec::len)), (Some(false), Some(0)));
    assert!(has(&run["files"][0], "file") && run["files"][0]["file"].is_null(), "{run}");
    let mac_runs = json(viewer.history("mac", "c", None));
    let first = json(viewer.run(mac_runs["runs"][1]["key"].as_str().unwrap()));
    assert!(has(&first, "previous") && first["previous"].is_null(), "{first}");

    let history = json(viewer.history("linux", "c", None));
    assert!(has(&history, "next") && history["next"].is_null(), "{history}");
    let (readable, bad) = (&history["runs"][0], &history["runs"][1]);
    assert!(has(readable, "summary") && !has(readable, "error"), "{readable}");
    assert!(bad["error"].as_str().is_some_and(|e| e.starts_with("not a run")), "{bad}");
    for field in ["version", "ci", "summary", "unreadable", "labels", "cells"] {
        assert!(!has(bad, field), "{field}: {bad}");
    }
    // An unreadable run's page is its row alone.
    let page = json(viewer.run(&unreadable));
    assert_eq!(page["error"], bad["error"]);
    for field in ["tests", "rules", "previous", "labels"] {
        assert!(!has(&page, field), "{field}: {page}");
    }

    let failing = json(viewer.test_page(Some(("mac", "c")), "crud", "a"));
    assert_eq!((failing["failingSince"]["runs"].as_u64(), failing["pairs"][0]["ran"].as_u64()), (Some(1), Some(2)));
    // The table: the newest run first, failed with its message; the run before passed.
    let rows = failing["rows"].as_array().unwrap();
    assert_eq!(
        (rows.len(), rows[0]["status"].as_str(), rows[1]["status"].as_str()),
        (2, Some("failed"), Some("passed"))
    );
    assert_eq!(failing["pairs"][0]["failed"], 1, "{failing}");
    assert_eq!(failing["pairs"][0]["lastPassed"], rows[1]["run"], "{failing}");
    assert_eq!(failing["pairs"][0]["firstFailed"], rows[0]["run"], "{failing}");
    assert_eq!(failing["groups"].as_array().map(Vec::len), Some(1), "its failure's group: {failing}");
    assert_eq!(failing["failingSince"]["commit"], "c1");
    assert_eq!(failing["durations"]["of"], 1, "{failing}");
    assert!(!has(&failing, "slower"), "{failing}");
    let passing = json(viewer.test_page(Some(("mac", "c")), "crud", "b"));
    assert!(!has(&passing, "failingSince") && !has(&passing, "slower"), "{passing}");
    assert_eq!(passing["durations"]["p50"], 1.0, "{passing}");
    let never = json(viewer.test_page(Some(("mac", "c")), "sql", "c"));
    assert!(!has(&never, "failingSince") && !has(&never, "durations"), "{never}");
    assert_eq!((never["strip"][0]["status"].as_str(), never["strip"][0]["runs"].as_u64()), (Some("not run"), Some(2)));
}
