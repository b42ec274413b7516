//! The quarantine kept in the bucket, edited by several editors at once without losing an
//! edit (file:// and moto, which honours If-Match), and `gate`, which lets a C or C++ job pass
//! when every failure it reports is quarantined for its pair.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the app with `args` against `env` (a bucket's settings), outside any CI.
fn app(args: &[&str], env: &[(String, String)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    let who = ["GITHUB_ACTOR", "GITLAB_USER_LOGIN", "USERNAME"];
    for marker in support::CI_MARKERS.iter().chain(&["OBJSTORE_RESULTS_PREFIX", "OBJSTORE_RESULTS_BUCKET"]).chain(&who)
    {
        command.env_remove(marker);
    }
    command.args(args).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).output().unwrap()
}

fn file_bucket(dir: &Path) -> Vec<(String, String)> {
    vec![("OBJSTORE_RESULTS".into(), format!("file://{}", dir.display()))]
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Six editors add at once: every entry is there after, and the history has each; without
/// `--by`, the shell's user added it.
fn editors_at_once_lose_nothing(env: &[(String, String)]) {
    let env: Vec<(String, String)> = env.iter().cloned().chain([("USER".into(), "ci-bot".into())]).collect();
    let env = env.as_slice();
    let editors: Vec<_> = (0..6)
        .map(|i| {
            let env = env.to_vec();
            std::thread::spawn(move || {
                let name = format!("test_{i}");
                app(&["quarantine", "add", "--suite", "crud", "--name", &name, "--reason", "flaky on CI"], &env)
            })
        })
        .collect();
    for editor in editors {
        let out = editor.join().unwrap();
        assert!(out.status.success(), "{}", said(&out));
    }
    let list = app(&["quarantine", "list"], env);
    let text = String::from_utf8_lossy(&list.stdout);
    for i in 0..6 {
        assert!(
            text.contains(&format!("crud › test_{i}  [*/*]: flaky on CI (added by ci-bot)\n")),
            "test_{i} kept: {text}"
        );
    }
}

#[test]
fn the_quarantine_is_edited_in_the_bucket_and_no_edit_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let env = file_bucket(dir.path());
    assert_eq!(String::from_utf8_lossy(&app(&["quarantine", "list"], &env).stdout), "The quarantine is empty.\n");
    let added = app(
        &[
            "quarantine",
            "add",
            "--suite",
            "sql",
            "--name",
            "select",
            "--pairs",
            "windows-*/c-msvc-*",
            "--reason",
            "MSVC bug",
            "--until",
            "2999-12-31",
            "--by",
            "ada",
        ],
        &env,
    );
    assert!(added.status.success(), "{}", said(&added));
    assert!(String::from_utf8_lossy(&added.stdout)
        .contains("sql › select  [windows-*/c-msvc-*] until 2999-12-31: MSVC bug (added by ada)\n"));
    editors_at_once_lose_nothing(&env);

    let removed = app(&["quarantine", "remove", "--suite", "crud", "--name", "test_0"], &env);
    assert!(removed.status.success(), "{}", said(&removed));
    let stored: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("results/.quarantine")).unwrap()).unwrap();
    assert_eq!(stored["entries"].as_array().unwrap().len(), 6);
    let by: Vec<&str> = stored["entries"].as_array().unwrap().iter().map(|e| e["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["ada", "ci-bot", "ci-bot", "ci-bot", "ci-bot", "ci-bot"]);
    let actions: Vec<&str> =
        stored["history"].as_array().unwrap().iter().map(|c| c["action"].as_str().unwrap()).collect();
    assert_eq!((actions.len(), actions.last().copied()), (8, Some("remove")), "{actions:?}");

    for (args, expected) in [
        (vec!["quarantine", "remove", "--suite", "crud", "--name", "nothing"], "is not in the quarantine"),
        (vec!["quarantine", "add", "--suite", "crud", "--name", "x"], "needs --reason"),
        (vec!["quarantine", "add", "--suite", "crud", "--name", "x", "--reason", "r", "--pairs", "linux"], "--pairs"),
        (
            vec!["quarantine", "add", "--suite", "crud", "--name", "x", "--reason", "r", "--until", "tomorrow"],
            "--until",
        ),
        (vec!["quarantine", "add", "--suite", "crud", "--name", "x", "--reason", "r", "--by", " "], "--by must be"),
        (vec!["quarantine", "purge"], "unknown quarantine action"),
    ] {
        let out = app(&args, &env);
        assert!(!out.status.success() && said(&out).contains(expected), "{args:?}: {}", said(&out));
    }
}

#[test]
fn editors_at_once_on_moto() {
    let s = support::server("moto");
    let prefix = format!(
        "quarantine-{}-{}/",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    );
    let env: Vec<(String, String)> = vec![
        ("OBJSTORE_RESULTS".into(), s["MOTO_ENDPOINT"].clone()),
        ("OBJSTORE_RESULTS_BUCKET".into(), s["MOTO_SIGNED_BUCKET"].clone()),
        ("OBJSTORE_RESULTS_PREFIX".into(), prefix),
        ("AWS_ACCESS_KEY_ID".into(), s["MOTO_ACCESS_KEY_ID"].clone()),
        ("AWS_SECRET_ACCESS_KEY".into(), s["MOTO_SECRET_ACCESS_KEY"].clone()),
        ("AWS_REGION".into(), s["MOTO_REGION"].clone()),
    ];
    editors_at_once_lose_nothing(&env);
}

#[test]
fn gate_passes_a_job_whose_every_failure_is_quarantined_for_its_pair() {
    let dir = tempfile::tempdir().unwrap();
    let env = file_bucket(dir.path());
    let report = dir.path().join("ctest.xml");
    std::fs::write(
        &report,
        r#"<testsuite name="crud" tests="3"><testcase classname="crud" name="put"><failure message="expected 2"/></testcase>
           <testcase classname="crud" name="get"><failure message="timeout"/></testcase><testcase classname="crud" name="scan"/></testsuite>"#,
    )
    .unwrap();
    let report = report.display().to_string();
    let gate = |platform: &str| app(&["gate", "--platform", platform, "--runtime", "c-msvc-19", &report], &env);
    let quarantine = |name: &str, pairs: &str| {
        let out =
            app(&["quarantine", "add", "--suite", "crud", "--name", name, "--pairs", pairs, "--reason", "known"], &env);
        assert!(out.status.success(), "{}", said(&out));
    };
    let out = gate("windows-x86_64");
    assert!(!out.status.success() && said(&out).contains("2 failures not quarantined"), "{}", said(&out));
    quarantine("crud::put", "windows-*/*");
    let out = gate("windows-x86_64");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("1 failure quarantined:\n  crud › crud::put (known)")
            && said(&out).contains("crud › crud::get"),
        "{}",
        said(&out)
    );
    quarantine("crud::get", "*/c-msvc-*");
    let out = gate("windows-x86_64");
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("2 failures quarantined"), "{}", said(&out));
    // A report with no failure passes without reading the quarantine (a bucket out of reach).
    let green = dir.path().join("green.xml");
    std::fs::write(&green, r#"<testsuite name="crud" tests="1"><testcase classname="crud" name="put"/></testsuite>"#)
        .unwrap();
    let nowhere = vec![("OBJSTORE_RESULTS".to_string(), "http://127.0.0.1:9/".to_string())];
    let out = app(&["gate", "--runtime", "c-gcc-13", &green.display().to_string()], &nowhere);
    assert!(out.status.success() && said(&out).contains("no test failed"), "{}", said(&out));
    // Another platform: put is quarantined on Windows only.
    let out = gate("linux-x86_64");
    assert!(!out.status.success() && said(&out).contains("1 failure not quarantined"), "{}", said(&out));
}
