//! What the app's test files share: the S3 servers' settings and the runs a `file://` bucket
//! holds.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
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

/// The app on a `file://` bucket under `dir`, outside any CI.
pub fn app(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    command.args(args).env("OBJSTORE_RESULTS", format!("file://{}", dir.join("bucket").display()));
    command.env("XDG_CACHE_HOME", dir.join("cache"));
    for name in CI_MARKERS.iter().chain(&["OBJSTORE_RESULTS_PREFIX", "OBJSTORE_RESULTS_BUCKET"]) {
        command.env_remove(name);
    }
    command
}

/// `serve` on a free port, stopped when dropped.
pub struct Page {
    child: Child,
    pub url: String,
}

impl Page {
    pub fn start(dir: &Path) -> Page {
        Page::start_with(dir, &[])
    }

    /// `serve` with more options (`--token T`).
    pub fn start_with(dir: &Path, more: &[&str]) -> Page {
        let args: Vec<&str> = ["serve", "--listen", "127.0.0.1:0"].iter().chain(more).copied().collect();
        let mut child = app(dir, &args).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().trim_end_matches("/results").to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Page { child, url }
    }

    pub fn get(&self, path: &str) -> Value {
        let answer = ureq::get(&format!("{}{path}", self.url)).call().unwrap();
        serde_json::from_str(&answer.into_body().read_to_string().unwrap()).unwrap()
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}
