//! `objstore-results post` as a user runs it: report files from real producers into a `file://`
//! bucket, read back as stored; a bad file anywhere in the list writes nothing.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};
use support::server;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).display().to_string()
}

fn post(bucket: &Path, args: &[&str]) -> Output {
    post_in(bucket, args, &[])
}

/// `post` with `env` set, outside any CI but the one `env` may name.
fn post_in(bucket: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    command.arg("post").args(args).env("OBJSTORE_RESULTS", format!("file://{}", bucket.display()));
    let settings =
        ["OBJSTORE_RESULTS_PREFIX", "OBJSTORE_RESULTS_BUCKET", "OBJSTORE_RESULTS_PLATFORM", "OBJSTORE_RESULTS_RUNTIME"];
    for name in support::CI_MARKERS.iter().chain(&settings).chain(&["OBJSTORE_RESULTS_VERSION"]) {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

/// Every stored run, in key order: (key, record).
fn stored(bucket: &Path) -> Vec<(String, Value)> {
    support::stored(bucket).into_iter().collect()
}

/// `--help` explains every command, option and setting; a read of a bucket that is not there
/// says which one and creates nothing.
#[test]
fn help_explains_and_a_read_names_the_bucket_it_opened() {
    let help = Command::new(env!("CARGO_BIN_EXE_objstore-results")).args(["post", "--help"]).output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for needed in [
        "--collector URL",
        "OBJSTORE_COLLECTOR_TOKEN",
        "OBJSTORE_RESULTS_BUCKET",
        "matrix",
        "--allow-anonymous-origins",
    ] {
        assert!(text.contains(needed), "{needed} is explained: {text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("nowhere");
    let matrix = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .arg("matrix")
        .env("OBJSTORE_RESULTS", format!("file://{}", nowhere.display()))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("OBJSTORE_RESULTS_BUCKET")
        .env_remove("OBJSTORE_RESULTS_PREFIX")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&matrix.stderr);
    assert!(!matrix.status.success(), "{said}");
    assert!(
        said.contains("bucket \"results\"") && said.contains(&nowhere.join("results").display().to_string()),
        "{said}"
    );
    assert!(!nowhere.exists(), "a read creates no bucket");
}

#[test]
fn reports_of_every_producer_are_stored_in_the_layout() {
    let dir = tempfile::tempdir().unwrap();
    let out = post(
        dir.path(),
        &["--runtime", "python-3.11", &fixture("pytest-9.xml"), &fixture("nextest.xml"), &fixture("ctest.xml")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    let runs = stored(dir.path());
    assert_eq!(runs.len(), 3);
    let platform = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
    // One call is one run: its files share a run segment, named for the call.
    let segments: std::collections::BTreeSet<&str> =
        runs.iter().map(|(key, _)| key.split('/').nth(2).unwrap()).collect();
    assert_eq!(segments.len(), 1, "{segments:?}");
    for (key, run) in &runs {
        let parts: Vec<&str> = key.split('/').collect();
        assert_eq!(parts[..2], [platform.as_str(), "python-3.11"], "{key}");
        let (reverse, id) = parts[2].split_once('-').unwrap();
        // The file's name: its id, then the digest a listing draws the matrix from.
        let (file_id, digest) = parts[3].split_once('.').unwrap();
        let call = id.strip_prefix("post-").unwrap_or_else(|| panic!("a call's run: {key}"));
        assert_eq!((reverse.len(), call.len(), file_id.len()), (13, 16, 16), "{key}");
        assert_eq!(run["ci"]["run"], id);
        assert!(
            digest.starts_with("2.") && digest.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
            "{key}"
        );
        assert!(stdout.contains(key.as_str()), "the key is printed: {stdout}");
        assert_eq!(run["platform"], Value::String(platform.clone()));
        assert_eq!(run["browser"], "python-3.11");
        let tests = run["results"]["tests"].as_array().unwrap();
        assert_eq!(run["results"]["summary"]["tests"], tests.len());
        assert!(tests.iter().all(|t| t["suite"].as_str().is_some_and(|s| !s.is_empty())));
    }
    // The metadata headers the matrix lists by are in each object's record.
    use objstore_db_core::bucket::open_bucket;
    use objstore_db_core::sync::{SyncConfig, Token};
    let block = serde_json::json!({"format": "objstore", "Options": {"bucket": "results",
        "endpoint": format!("file://{}", dir.path().display())}});
    let bucket =
        open_bucket(&SyncConfig::from_json("results", &block, &|_| None).unwrap().connection, Default::default());
    let (_, metadata) = bucket.unwrap().head(&runs[0].0, &Token::default()).unwrap().unwrap();
    assert_eq!((metadata["platform"].as_str(), metadata["browser"].as_str()), (platform.as_str(), "python-3.11"));
}

#[test]
fn a_test_that_names_no_suite_takes_the_files_name_and_labels_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    // node's top-level test names no suite: the file's name (node-20.xml → node-20) does.
    let out = post(dir.path(), &["--runtime", "node-20", &fixture("node-20.xml")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = stored(dir.path());
    let tests = runs[0].1["results"]["tests"].as_array().unwrap().clone();
    let suite_of =
        |name: &str| tests.iter().find(|t| t["name"].as_str().unwrap().contains(name)).unwrap()["suite"].clone();
    assert_eq!((suite_of("top level"), suite_of("deep")), (json!("node-20"), json!("crud")));
    let out = post(dir.path(), &["--runtime", "node/20", "--suite", "crud", &fixture("node-20.xml")]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--runtime \"node/20\" holds '/'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stored(dir.path()).len(), 1, "the refused post stored nothing");
    // --suite names every test's suite, whatever the report says.
    let other = tempfile::tempdir().unwrap();
    let out = post(other.path(), &["--runtime", "node-20", "--suite", "sql", &fixture("node-20.xml")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = stored(other.path());
    let suites: Vec<&str> =
        runs[0].1["results"]["tests"].as_array().unwrap().iter().map(|t| t["suite"].as_str().unwrap()).collect();
    assert!(suites.iter().all(|s| *s == "sql"), "{suites:?}");
}

/// A job sets its labels once, for post as for the pytest plugin and the node reporter; a run
/// nothing gives a version is "unversioned", never objstore-results's own version.
#[test]
fn labels_come_from_the_environment_and_a_run_with_no_version_is_unversioned() {
    let dir = tempfile::tempdir().unwrap();
    let labels = [("OBJSTORE_RESULTS_PLATFORM", "macos-aarch64"), ("OBJSTORE_RESULTS_RUNTIME", "node-20")];
    let out = post_in(dir.path(), &[&fixture("node-20.xml")], &labels);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (key, run) = stored(dir.path()).remove(0);
    assert!(key.starts_with("macos-aarch64/node-20/"), "{key}");
    assert_eq!(run["version"], "unversioned");
    let other = tempfile::tempdir().unwrap();
    let given = [("OBJSTORE_RESULTS_VERSION", "4.2.0"), ("OBJSTORE_RESULTS_PLATFORM", "macos-aarch64")];
    let out =
        post_in(other.path(), &["--platform", "linux-arm64", "--runtime", "node-20", &fixture("node-20.xml")], &given);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (key, run) = stored(other.path()).remove(0);
    assert!(key.starts_with("linux-arm64/node-20/"), "an option wins over the environment: {key}");
    assert_eq!(run["version"], "4.2.0");
}

#[test]
fn one_bad_file_writes_nothing_and_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<testsuite>\n<testcase name=\"a\">\n<failure message=\"x\">&xxe;</failure></testcase></testsuite>",
    )
    .unwrap();
    let bad = bad.display().to_string();
    let out = post(dir.path(), &["--runtime", "python-3.11", &fixture("pytest-9.xml"), &bad]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{bad}:3:")) && stderr.contains("xxe"), "{stderr}");
    assert!(stored(dir.path()).is_empty(), "the good file before it was not written either");
    let huge = dir.path().join("huge.json");
    std::fs::write(&huge, vec![b' '; 17 * 1024 * 1024]).unwrap();
    let out = post(dir.path(), &["--runtime", "python-3.11", &huge.display().to_string()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("over the"), "{}", String::from_utf8_lossy(&out.stderr));
    // A CODEOWNERS given with the runs is checked first: a bad one stores nothing.
    let owners = dir.path().join("CODEOWNERS");
    std::fs::write(&owners, "tests/ @qa\n!tests/slow/ @nobody\n").unwrap();
    let owners = owners.display().to_string();
    let out = post(dir.path(), &["--runtime", "python-3.11", "--codeowners", &owners, &fixture("pytest-9.xml")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("CODEOWNERS line 2"), "{stderr}");
    assert!(stored(dir.path()).is_empty(), "no run stored with a bad CODEOWNERS");
    std::fs::write(&owners, "tests/ @qa\n").unwrap();
    let out = post(dir.path(), &["--runtime", "python-3.11", "--codeowners", &owners, &fixture("pytest-9.xml")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kept: Value = serde_json::from_slice(&std::fs::read(dir.path().join("results/.codeowners")).unwrap()).unwrap();
    assert_eq!(kept["text"], "tests/ @qa\n");
}

#[test]
fn ctrf_reports_and_stored_runs_are_read_back_alike() {
    let dir = tempfile::tempdir().unwrap();
    let ctrf = dir.path().join("ctrf.json");
    std::fs::write(
        &ctrf,
        r#"{"results": {"tool": {"name": "jest"}, "summary": {"tests": 99, "passed": 0, "failed": 0, "skipped": 0, "pending": 0, "other": 0, "start": 5, "stop": 9},
            "tests": [{"name": "a", "status": "passed", "duration": 3, "suite": "sql"}, {"name": "b", "status": "failed", "duration": 1.5, "suite": ["x", "query"], "message": "m"}],
            "environment": {"runtime": "node-22", "osPlatform": "linux-arm64"}}}"#,
    )
    .unwrap();
    let out = post(dir.path(), &[&ctrf.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (key, mut run) = stored(dir.path()).remove(0);
    assert!(key.starts_with("linux-arm64/node-22/"), "the report's labels: {key}");
    assert_eq!(run["ci"]["file"], "ctrf.json", "the file's name is kept");
    assert_eq!(run["results"]["summary"]["tests"], 2, "counted, not declared");
    assert_eq!(run["results"]["tests"][1]["suite"], "x", "a suite path's first step is the column");
    // What it stored, posted again, is read alike (one definition, both sides).
    let again = dir.path().join("again.json");
    std::fs::write(&again, serde_json::to_vec(&run).unwrap()).unwrap();
    let other = tempfile::tempdir().unwrap();
    assert!(post(other.path(), &[&again.display().to_string()]).status.success());
    run["ci"]["file"] = json!("again.json");
    assert_eq!(stored(other.path())[0].1, run);
}

/// To an S3 server, through the standard AWS variables: the same file posted twice is two runs
/// (never one overwriting the other), each read back as stored, on moto and on Garage (which
/// ignores If-None-Match on PUT).
#[test]
fn posts_reach_moto_and_garage_through_the_aws_variables() {
    for (name, bucket_var) in [("moto", "MOTO_SIGNED_BUCKET"), ("garage", "GARAGE_BUCKET")] {
        let env = server(name);
        let up = name.to_uppercase();
        let prefix = format!(
            "post-{}-{}/",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        );
        let run = |file: &str| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
            for marker in support::CI_MARKERS {
                command.env_remove(marker);
            }
            command
                .args(["post", "--runtime", "python-3.11", file])
                .env("OBJSTORE_RESULTS", &env[&format!("{up}_ENDPOINT")])
                .env("OBJSTORE_RESULTS_BUCKET", &env[bucket_var])
                .env("OBJSTORE_RESULTS_PREFIX", &prefix)
                .env("AWS_ACCESS_KEY_ID", &env[&format!("{up}_ACCESS_KEY_ID")])
                .env("AWS_SECRET_ACCESS_KEY", &env[&format!("{up}_SECRET_ACCESS_KEY")])
                .env("AWS_REGION", &env[&format!("{up}_REGION")])
                .output()
                .unwrap()
        };
        for _ in 0..2 {
            let out = run(&fixture("pytest-9.xml"));
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let block = serde_json::json!({"format": "objstore", "Options": {"bucket": env[bucket_var], "prefix": prefix,
            "endpoint": env[&format!("{up}_ENDPOINT")], "region": env[&format!("{up}_REGION")],
            "accessKeyId": env[&format!("{up}_ACCESS_KEY_ID")], "secretAccessKey": env[&format!("{up}_SECRET_ACCESS_KEY")]}});
        use objstore_db_core::bucket::{list_all, open_bucket, Fetched, ListRequest, Validators};
        use objstore_db_core::sync::{SyncConfig, Token};
        let config = SyncConfig::from_json("results", &block, &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        let listed =
            list_all(&*bucket, &ListRequest { prefix: prefix.clone(), ..Default::default() }, &Token::default())
                .unwrap();
        let (markers, runs): (Vec<_>, Vec<_>) =
            listed.objects.iter().partition(|o| o.key[prefix.len()..].starts_with(".objstore-changes/"));
        assert_eq!((runs.len(), markers.len()), (2, 2), "{name}: two runs, two objects and their change-log markers");
        for object in runs {
            let Fetched::Found(found) = bucket.get(&object.key, &Validators::default(), &Token::default()).unwrap()
            else {
                panic!("{name}: {} is gone", object.key);
            };
            let run: Value = serde_json::from_slice(&found.body).unwrap();
            assert_eq!(run["results"]["summary"]["tests"], 4, "{name}");
            assert_eq!(found.metadata.get("browser").map(String::as_str), Some("python-3.11"), "{name}");
        }
    }
}

/// Files posted for one run, by separate calls (separate CI jobs), are stored under one run
/// segment and counted as one run; a call for no run is a run of its own. The run comes from
/// `--run` or from the CI's environment, with its commit, branch and page; labels come from
/// `--label` and the report's `<properties>`.
#[test]
fn files_posted_for_one_run_are_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let labelled = dir.path().join("crud.xml");
    std::fs::write(
        &labelled,
        r#"<testsuite name="crud" tests="1"><properties><property name="build_type" value="Release"/></properties>
           <testcase classname="crud" name="put" time="0.1"/></testsuite>"#,
    )
    .unwrap();
    let alone = post(dir.path(), &["--runtime", "c-gcc-12", &fixture("ctest.xml")]);
    assert!(alone.status.success());
    let first = post(
        dir.path(),
        &[
            "--runtime",
            "c-gcc-12",
            "--run",
            "nightly-7",
            "--commit",
            "abc123",
            "--label",
            "sanitizer=asan",
            &labelled.display().to_string(),
        ],
    );
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let second = post(dir.path(), &["--runtime", "c-gcc-12", "--run", "nightly-7", &fixture("ctest.xml")]);
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let runs = stored(dir.path());
    let segments: Vec<&str> = runs.iter().map(|(key, _)| key.split('/').nth(2).unwrap()).collect();
    assert_eq!(runs.len(), 3);
    let nightly: Vec<&(String, Value)> = runs.iter().filter(|(_, r)| r["ci"]["run"] == "nightly-7").collect();
    assert_eq!(nightly.len(), 2);
    assert_eq!(nightly[0].0.split('/').nth(2), nightly[1].0.split('/').nth(2), "one run segment: {segments:?}");
    assert!(nightly[0].0.split('/').nth(2).unwrap().ends_with("-nightly-7"));
    assert_eq!(segments.iter().collect::<std::collections::HashSet<_>>().len(), 2, "the lone call is a run of its own");
    let labelled = runs.iter().find(|(_, r)| r["ci"]["file"] == "crud.xml").unwrap();
    assert_eq!(labelled.1["ci"]["commit"], "abc123");
    assert_eq!(labelled.1["results"]["environment"], json!({"build_type": "Release", "sanitizer": "asan"}));
    assert!(dir.path().join("results/.runs/nightly-7").exists(), "the run's anchor");

    // The matrix counts both files of the newest run: crud from one, ctest's from the other.
    let matrix = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .args(["matrix", "--cache", &dir.path().join("cache.sqlite3").display().to_string()])
        .env("OBJSTORE_RESULTS", format!("file://{}", dir.path().display()))
        .env_remove("OBJSTORE_RESULTS_BUCKET")
        .env_remove("OBJSTORE_RESULTS_PREFIX")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&matrix.stdout);
    assert!(matrix.status.success(), "{}", String::from_utf8_lossy(&matrix.stderr));
    let row = table.lines().find(|l| l.contains("c-gcc-12")).unwrap();
    let header = table.lines().next().unwrap();
    assert!(header.contains("crud"), "{table}");
    assert!(row.contains("ok 1/0/0"), "crud counted beside ctest's suites: {table}");

    // In GitHub Actions, the run, attempt, commit, branch and page come from its variables.
    let github = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_RUN_ID", "555"),
        ("GITHUB_RUN_ATTEMPT", "2"),
        ("GITHUB_SHA", "feedbeef"),
        ("GITHUB_REF_NAME", "main"),
        ("GITHUB_SERVER_URL", "https://github.com"),
        ("GITHUB_REPOSITORY", "team/db"),
    ];
    let other = tempfile::tempdir().unwrap();
    for file in ["pytest-9.xml", "nextest.xml"] {
        let out = post_in(other.path(), &["--runtime", "python-3.11", &fixture(file)], &github);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let runs = stored(other.path());
    let ci: Vec<&Value> = runs.iter().map(|(_, r)| &r["ci"]).collect();
    assert_eq!(ci[0]["run"], "github-555-2");
    assert_eq!((&ci[0]["commit"], &ci[0]["branch"]), (&json!("feedbeef"), &json!("main")));
    assert_eq!(ci[0]["url"], "https://github.com/team/db/actions/runs/555/attempts/2");
    let keys: Vec<&String> = runs.iter().map(|(key, _)| key).collect();
    assert_eq!(keys[0].rsplit_once('/').unwrap().0, keys[1].rsplit_once('/').unwrap().0, "{keys:?}");

    // Jobs that post at the same moment race to anchor the run: one anchor stands, and every
    // file goes under it.
    let raced = tempfile::tempdir().unwrap();
    let posts: Vec<_> = (0..4)
        .map(|_| {
            let dir = raced.path().to_path_buf();
            std::thread::spawn(move || post(&dir, &["--runtime", "c-gcc-12", "--run", "race", &fixture("ctest.xml")]))
        })
        .collect();
    for done in posts {
        let out = done.join().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let runs: std::collections::HashSet<String> =
        stored(raced.path()).into_iter().map(|(key, _)| key.rsplit_once('/').unwrap().0.to_string()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");

    // What is not a label or a URL is refused, naming the option, and nothing is stored.
    for (flag, value, said) in
        [("--run", "a/b", "--run"), ("--url", "javascript:alert(1)", "--url"), ("--label", "novalue", "--label")]
    {
        let out = post(other.path(), &["--runtime", "python-3.11", flag, value, &fixture("pytest-9.xml")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(said), "{flag}: {stderr}");
    }
    assert_eq!(stored(other.path()).len(), 2);
}

/// `export` writes the matrix and each pair's newest run as one HTML file that needs nothing
/// else: no script, no request; what the bucket holds is escaped text in it.
#[test]
fn export_writes_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("evil.json");
    std::fs::write(
        &evil,
        r#"{"results": {"tool": {"name": "x"}, "tests": [{"name": "<script>alert(1)</script>", "status": "failed",
            "duration": 1, "suite": "crud", "message": "<img src=x onerror=alert(2)>", "trace": "at t.c:3"}]}}"#,
    )
    .unwrap();
    let out = post(dir.path(), &["--runtime", "c-gcc-12", &evil.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(post(dir.path(), &["--runtime", "python-3.11", &fixture("pytest-xunit2-reruns.xml")]).status.success());
    // A pair whose newest run cannot be read says so.
    let garbage = dir.path().join("results/linux-x86_64/broken-1/0000000000001-garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(garbage.join("0123456789abcdef"), "not JSON {").unwrap();
    let page = dir.path().join("report.html");
    let export = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .args([
            "export",
            "--out",
            &page.display().to_string(),
            "--cache",
            &dir.path().join("c.sqlite3").display().to_string(),
        ])
        .env("OBJSTORE_RESULTS", format!("file://{}", dir.path().display()))
        .env_remove("OBJSTORE_RESULTS_BUCKET")
        .env_remove("OBJSTORE_RESULTS_PREFIX")
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for needed in [
        "<table id=\"matrix\">",
        "/ c-gcc-12",
        "/ python-3.11",
        "unit/crud",
        "test_flaky",
        "&lt;script&gt;alert(1)",
        "&lt;img src=x",
    ] {
        assert!(html.contains(needed), "{needed} in the page");
    }
    assert!(html.contains("test_rename") && html.contains("the name did not change"), "a failure and its text");
    assert!(html.contains("/ broken-1") && html.contains("This run cannot be read."), "an unreadable run says so");
    assert!(
        !html.contains("class=\"scroll\""),
        "the matrix laid out whole, not in a scrolling frame, to print or mail"
    );
    for forbidden in ["<script", "<img", "<link", " src=\"", "http://", "https://"] {
        assert!(!html.contains(forbidden), "{forbidden} is not in the page");
    }
}

/// `summary` writes a CI run's results across its pairs, and a commit's against a base, as
/// Markdown for a job summary or as text, saying what it cost: a listing and a GET per pair.
#[test]
fn summary_of_a_run_and_of_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let report = |name: &str, failure: Option<&str>| {
        let path = dir.path().join(name);
        let body = match failure {
            Some(m) => format!(r#"<failure message="{m}">at crud.c:12</failure>"#),
            None => String::new(),
        };
        std::fs::write(
            &path,
            format!(r#"<testsuite name="crud" tests="2"><testcase classname="crud" name="put">{body}</testcase><testcase classname="crud" name="get"/></testsuite>"#),
        )
        .unwrap();
        path.display().to_string()
    };
    let (pass, fail) = (report("pass.xml", None), report("fail.xml", Some("expected 2, got 3")));
    let commits = ["1111111aaaaaaaaa", "2222222bbbbbbbbb"];
    for (run, commit, linux, mac) in [("nightly-1", commits[0], &pass, &pass), ("nightly-2", commits[1], &fail, &pass)]
    {
        for (platform, file) in [("linux-x86_64", linux), ("macos-arm64", mac)] {
            let out = post(
                dir.path(),
                &["--platform", platform, "--runtime", "c-gcc-13", "--run", run, "--commit", commit, file],
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let summary = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
            .arg("summary")
            .args(args)
            .args([
                "--cache",
                &dir.path().join(format!("cache-{}.sqlite3", args.join("-").replace('/', "_"))).display().to_string(),
            ])
            .env("OBJSTORE_RESULTS", format!("file://{}", dir.path().display()))
            .env_remove("OBJSTORE_RESULTS_BUCKET")
            .env_remove("OBJSTORE_RESULTS_PREFIX")
            .env_remove("OBJSTORE_RESULTS_RUN")
            .envs(support::CI_MARKERS.iter().map(|m| (*m, "")))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, md, err) = summary(&["--run", "nightly-2", "--markdown", "--page", "https://results.example/"]);
    assert!(ok, "{err}");
    assert!(md.starts_with("### Test results of run nightly-2\n\n**Failed**: 1 test on 1 of 2 pairs.\n"), "{md}");
    assert!(
        md.contains("| [linux-x86\\_64 / c-gcc-13](https://results.example/?view=run&key=linux-x86_64%2Fc-gcc-13%2F"),
        "{md}"
    );
    assert!(md.contains("| 1 | 1 | 0 |") && md.contains("| 2 | 0 | 0 |"), "{md}");
    // put failed on linux, passed there before and on macos at this commit; it never failed
    // before on the default branch: new.
    assert!(
        md.contains("**Failures** (1)\n\n- crud › crud::put \\[regressed, divergent, new\\] · linux-x86\\_64 / c-gcc-13: expected 2, got 3\n"),
        "{md}"
    );
    // A fresh cache: one listing, the run's anchor, one GET per pair at most, the quarantine, the
    // CODEOWNERS and the failure rules.
    let cost = md.lines().last().unwrap();
    let gets: u64 = cost.split(" GET").next().unwrap().rsplit(['(', ' ']).next().unwrap().parse().unwrap();
    assert!(cost.contains("LIST") && gets <= 1 + 2 + 3, "{cost}");

    let (ok, text, err) = summary(&["--commit", "2222222", "--base", "1111111"]);
    assert!(ok, "{err}");
    assert!(
        text.starts_with("Test results of commit 2222222bbbbb against 1111111aaaaa\nFailed: 1 test on 1 of 2 pairs.\n"),
        "{text}"
    );
    assert!(
        text.contains("Regressed (1):\n  crud › crud::put [new]  on linux-x86_64 / c-gcc-13: expected 2, got 3\n"),
        "{text}"
    );
    // A commit where nothing failed says so first.
    let (ok, text, err) = summary(&["--commit", "1111111"]);
    assert!(ok && text.contains("\nPassed: 4 tests on 2 pairs, none failed.\n"), "{text}{err}");
    // Without a base, the commit's failures are named all the same.
    let (ok, text, err) = summary(&["--commit", "2222222"]);
    assert!(ok, "{err}");
    assert!(
        text.contains("Failures (1):\n  crud › crud::put [new]  on linux-x86_64 / c-gcc-13: expected 2, got 3\n"),
        "{text}"
    );

    for (args, said) in [
        (vec!["--run", "nobody"], "no run \"nobody\""),
        (vec!["--base", "1111111"], "--base compares with --commit"),
        (vec!["--page", "javascript:alert(1)", "--run", "nightly-2"], "--page"),
        (vec![], "name a run"),
    ] {
        let (ok, _, err) = summary(&args);
        assert!(!ok && err.contains(said), "{args:?}: {err}");
    }
}

/// A bucket timeout that is not a whole number of milliseconds is refused, naming the setting,
/// before anything is stored.
#[test]
fn a_bad_bucket_timeout_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["abc", "0", "-5", "1.5"] {
        let out =
            post_in(dir.path(), &["--runtime", "r", &fixture("pytest-9.xml")], &[("OBJSTORE_RESULTS_TIMEOUT_MS", bad)]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(said.contains(&format!("OBJSTORE_RESULTS_TIMEOUT_MS is {bad:?}")), "{bad}: {said}");
        assert!(stored(dir.path()).is_empty(), "{bad}: nothing stored");
    }
    let fine =
        post_in(dir.path(), &["--runtime", "r", &fixture("pytest-9.xml")], &[("OBJSTORE_RESULTS_TIMEOUT_MS", "2500")]);
    assert!(fine.status.success(), "{}", String::from_utf8_lossy(&fine.stderr));
    assert_eq!(stored(dir.path()).len(), 1);
}

/// The tests of a stored run: (suite, name, status).
fn identities(run: &Value) -> Vec<(String, String, String)> {
    let text = |t: &Value, k: &str| t[k].as_str().unwrap_or_default().to_string();
    let mut tests: Vec<_> = run["results"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (text(t, "suite"), text(t, "name"), text(t, "status")))
        .collect();
    tests.sort();
    tests
}

/// One test, one name, whichever way it was published: pytest's run as its JUnit (xunit1, and
/// xunit2 with reruns), as pytest-json-ctrf's CTRF and through this project's plugin; node's as
/// its JUnit, its TAP (each named after the test file, which they do not name) and through this
/// project's reporter. One test's history then reads every run, a quarantine entry under that
/// name holds for the JUnit's failure, and an entry under another name warns, naming the test.
#[test]
fn a_test_has_one_name_however_it_was_published() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &str, to: &str| {
        let to = dir.path().join(to);
        std::fs::copy(fixture(from), &to).unwrap();
        to.display().to_string()
    };
    // As support::app and its page read it.
    let bucket = dir.path().join("bucket");
    let pytest = [
        fixture("pytest-xunit1.xml"),
        fixture("pytest-xunit2-reruns.xml"),
        fixture("pytest-ctrf.json"),
        fixture("pytest-plugin.json"),
    ];
    let node = [copy("node-junit.xml", "crud.xml"), copy("node.tap", "crud.tap"), fixture("node-reporter.json")];
    for (runtime, files) in [("python-3.11", &pytest[..]), ("node-20", &node[..])] {
        for file in files {
            let out = post(&bucket, &["--platform", "linux-x86_64", "--runtime", runtime, file]);
            assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let runs: Vec<(String, Value)> = stored(&bucket)
            .into_iter()
            .filter(|(key, _)| key.starts_with(&format!("linux-x86_64/{runtime}/")))
            .collect();
        assert_eq!(runs.len(), files.len());
        let names = |run: &Value| identities(run).into_iter().map(|(suite, name, _)| (suite, name)).collect::<Vec<_>>();
        for (key, run) in &runs[1..] {
            assert_eq!(names(run), names(&runs[0].1), "{key} names its tests as {} does", runs[0].0);
        }
    }
    let renamed = ("api", "tests/test_api.py::TestUser::test_rename");
    let node_names: Vec<(String, String, String)> = stored(&bucket)
        .into_iter()
        .filter(|(k, _)| k.contains("/node-20/"))
        .flat_map(|(_, r)| identities(&r))
        .collect();
    assert!(
        node_names.iter().any(|(s, n, _)| s == "get" && n == "works"),
        "a describe block is the suite: {node_names:?}"
    );
    assert!(
        node_names.iter().any(|(s, n, _)| s == "crud" && n == "later"),
        "the file names the others: {node_names:?}"
    );

    // The history of one test holds all four pytest runs: it failed in each.
    let page = support::Page::start(dir.path());
    let history =
        page.get(&format!("/api/test?platform=linux-x86_64&browser=python-3.11&suite=api&name={}", renamed.1));
    let strip = history["strip"].as_array().unwrap();
    assert_eq!((strip.len(), &strip[0]["status"], &strip[0]["runs"]), (1, &json!("failed"), &json!(4)), "{history}");
    drop(page);

    // Quarantined under its one name, the JUnit's failure is held; under JUnit's dotted name the
    // entry is kept, with a warning that names the stored test.
    let app = |args: &[&str]| support::app(dir.path(), args).output().unwrap();
    let add = |name: &str| app(&["quarantine", "add", "--suite", "api", "--name", name, "--reason", "known"]);
    let known = add(renamed.1);
    assert!(known.status.success() && !String::from_utf8_lossy(&known.stderr).contains("warning"), "{known:?}");
    let gate = app(&["gate", "--platform", "linux-x86_64", "--runtime", "python-3.11", &pytest[1]]);
    let said = String::from_utf8_lossy(&gate.stdout);
    let (held, rest) = said.split_once("not quarantined").unwrap_or((&said, ""));
    assert!(held.contains(renamed.1) && !rest.contains("test_rename"), "{said}");
    let dotted = add("tests.test_api.TestUser::test_rename");
    let warned = String::from_utf8_lossy(&dotted.stderr);
    assert!(dotted.status.success(), "the entry is kept: {warned}");
    assert!(
        warned.contains("warning: no pair's newest run has the test api › tests.test_api.TestUser::test_rename")
            && warned.contains(&format!("--name {:?}", renamed.1)),
        "{warned}"
    );
}

/// A CTRF report of `tests` (suite `basket`), started at `start`.
fn basket_report(start: u64, tests: &[(&str, &str)]) -> String {
    let tests: Vec<Value> = tests
        .iter()
        .map(|(name, status)| {
            json!({"name": name, "status": status, "duration": 1, "suite": "basket",
            "message": format!("{name} {status}")})
        })
        .collect();
    let count = |s: &str| tests.iter().filter(|t| t["status"] == s).count();
    json!({"results": {"tool": {"name": "node"}, "summary": {"tests": tests.len(), "passed": count("passed"),
        "failed": count("failed"), "skipped": 0, "pending": 0, "other": 0, "start": start, "stop": start + 5},
        "tests": tests}})
    .to_string()
}

/// A rerun is its run's later attempts (node 20 has no retries: a team reruns a failed file and
/// posts both reports). Posted with `--rerun` to the run, a test that failed and then passed is
/// one flaky pass, one that failed twice is one failure, and a pass is counted once: in the
/// matrix, the run's page and the summary. A rerun's name carries no digest (a listing cannot
/// fold it); `--rerun` with no run to rerun is refused.
#[test]
fn a_rerun_is_its_runs_later_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = dir.path().join("bucket");
    let (first, again) = (dir.path().join("basket.json"), dir.path().join("basket-rerun.json"));
    std::fs::write(
        &first,
        basket_report(1_795_000_000_000, &[("adds", "failed"), ("sums", "passed"), ("totals", "failed")]),
    )
    .unwrap();
    std::fs::write(
        &again,
        basket_report(1_795_000_060_000, &[("adds", "passed"), ("sums", "passed"), ("totals", "failed")]),
    )
    .unwrap();
    let labels = ["--platform", "linux-x86_64", "--runtime", "node-20", "--run", "ci-9"];
    let posted = post(&bucket, &[&labels[..], &[&first.display().to_string()]].concat());
    assert!(posted.status.success(), "{}", String::from_utf8_lossy(&posted.stderr));
    let alone = post(&bucket, &["--runtime", "node-20", "--rerun", &again.display().to_string()]);
    assert!(!alone.status.success() && String::from_utf8_lossy(&alone.stderr).contains("--rerun posts later attempts"));
    let rerun = post(&bucket, &[&labels[..], &["--rerun", &again.display().to_string()]].concat());
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let runs = stored(&bucket);
    assert_eq!(runs.len(), 2);
    let (rerun_key, rerun_body) = runs.iter().find(|(_, r)| r["ci"]["rerun"] == json!(true)).unwrap();
    assert!(rerun_key.rsplit('/').next().unwrap().len() == 16, "no digest in a rerun's name: {rerun_key}");
    assert_eq!(rerun_body["results"]["tests"].as_array().unwrap().len(), 3, "stored as it was posted");

    let page = support::Page::start(dir.path());
    let matrix = page.get("/api/matrix");
    let cell = &matrix["rows"][0]["cells"]["basket"];
    assert_eq!((&cell["passed"], &cell["failed"]), (&json!(2), &json!(1)), "each test once: {matrix}");
    assert_eq!(cell["classes"]["flaky"], json!(1), "{matrix}");
    let run_key = rerun_key.rsplit_once('/').unwrap().0;
    let run = page.get(&format!("/api/run?key={run_key}"));
    let tests = run["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3, "{run}");
    let adds = tests.iter().find(|t| t["name"] == "adds").unwrap();
    assert_eq!((&adds["status"], &adds["flaky"]), (&json!("passed"), &json!(true)), "{adds}");
    assert_eq!(adds["retryAttempts"][0]["message"], json!("adds failed"));
    let totals = tests.iter().find(|t| t["name"] == "totals").unwrap();
    assert_eq!((&totals["status"], &totals["retries"]), (&json!("failed"), &json!(1)), "{totals}");
    assert_eq!(run["files"].as_array().unwrap().iter().filter(|f| f["rerun"] == json!(true)).count(), 1);
    drop(page);
    let summary = support::app(dir.path(), &["summary", "--run", "ci-9"]).output().unwrap();
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(summary.status.success(), "{text}{}", String::from_utf8_lossy(&summary.stderr));
    assert!(text.contains("2 passed, 1 failed") && !text.contains("4 passed"), "{text}");
}
