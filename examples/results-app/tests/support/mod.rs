//! What the app's test files share: the S3 servers' settings and the runs a `file://` bucket
//! holds.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// The settings a server script writes (`target/servers/<name>.env`), after starting it.
pub fn server(name: &str) -> HashMap<String, String> {
    // Started (and its settings read) once per test binary: the script rewrites its settings
    // file, which a test's other threads would otherwise read half-written.
    static STARTED: OnceLock<Mutex<HashMap<String, HashMap<String, String>>>> = OnceLock::new();
    let mut started = STARTED.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(env) = started.get(name) {
        return env.clone();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = Command::new(root.join("tests/servers").join(name)).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let env: HashMap<String, String> = std::fs::read_to_string(root.join(format!("target/servers/{name}.env")))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches(['"', '\'']).to_string()))
        .collect();
    started.insert(name.to_string(), env.clone());
    env
}

/// The variables by which `post` knows it runs in CI: the tests clear them, so that a CI
/// running these tests does not group their posts into its own run.
pub const CI_MARKERS: [&str; 7] =
    ["GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "JENKINS_URL", "TF_BUILD", "OBJSTORE_RESULTS_RUN"];

/// Every run the `results` bucket under `bucket_dir` holds: key → record.
pub fn stored(bucket_dir: &Path) -> BTreeMap<String, Value> {
    let root = bucket_dir.join("results");
    let mut found = BTreeMap::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|e| e.path()) {
            // The local bucket's records, the change log's markers and the runs' anchors are
            // not runs.
            if path.file_name().is_some_and(|n| n == ".objstore" || n == ".objstore-changes" || n == ".runs") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                let key = path.strip_prefix(&root).unwrap().display().to_string();
                found.insert(key, serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
            }
        }
    }
    found
}
