//! The results app's cold view under the fault matrix's faults: runs posted to moto, then a
//! viewer with an empty cache reads them through a relay that breaks every request. While the
//! fault lasts the matrix is an error that says what the bucket did (never a panic, never a
//! matrix with rows missing); once it ends, the next reload shows every pair. The rows join
//! the core's in `target/bench/faults.json`.

mod support;

#[allow(dead_code)]
#[path = "../../../core/tests/sync_support/faults.rs"]
mod faults;

use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use faults::{every_fault, record, Fault, FaultRelay, Row, Targets};
use serde_json::{json, Value};
use support::{server, CI_MARKERS};

const PAIRS: [(&str, &str); 3] = [("linux", "python-3.11"), ("linux", "node-20"), ("macos", "python-3.11")];

/// The environment that points the app at moto's signed bucket, under `prefix`, at `endpoint`.
fn moto_env(endpoint: &str, prefix: &str) -> Vec<(&'static str, String)> {
    let env = server("moto");
    vec![
        ("OBJSTORE_RESULTS", endpoint.to_string()),
        ("OBJSTORE_RESULTS_BUCKET", env["MOTO_SIGNED_BUCKET"].clone()),
        ("OBJSTORE_RESULTS_PREFIX", prefix.to_string()),
        ("AWS_ACCESS_KEY_ID", env["MOTO_ACCESS_KEY_ID"].clone()),
        ("AWS_SECRET_ACCESS_KEY", env["MOTO_SECRET_ACCESS_KEY"].clone()),
        ("AWS_REGION", env["MOTO_REGION"].clone()),
        // A black hole is found out in seconds, not the default ten per attempt.
        ("OBJSTORE_RESULTS_TIMEOUT_MS", "1500".into()),
    ]
}

fn app(args: &[&str], env: &[(&str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    command.args(args);
    for marker in CI_MARKERS {
        command.env_remove(marker);
    }
    command.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    command
}

/// `objstore-results serve` with an empty cache, until dropped.
struct Viewer {
    child: Child,
    page: String,
    _cache: tempfile::TempDir,
}

impl Viewer {
    fn start(env: &[(&str, String)]) -> Viewer {
        let cache = tempfile::tempdir().unwrap();
        let path = cache.path().join("cache.sqlite3");
        let mut child = app(&["serve", "--listen", "127.0.0.1:0", "--cache", path.to_str().unwrap()], env)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_string();
        Viewer { child, page: url.trim_end_matches("results").to_string(), _cache: cache }
    }

    /// The matrix's status and body.
    fn matrix(&self) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let mut answer = agent.get(&format!("{}api/matrix", self.page)).call().unwrap();
        let status = answer.status().as_u16();
        let text = answer.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a matrix shows every pair posted, each with its run's counts.
fn shows_every_pair(matrix: &Value) -> bool {
    let rows = matrix["rows"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut shown: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["platform"].as_str().unwrap_or("").into(), r["browser"].as_str().unwrap_or("").into()))
        .collect();
    shown.sort();
    let mut want: Vec<(String, String)> = PAIRS.iter().map(|(p, r)| (p.to_string(), r.to_string())).collect();
    want.sort();
    shown == want && rows.iter().all(|r| r["cells"].is_object())
}

/// A cold view through a relay of its own that breaks every request with `fault`: the matrix
/// while it lasts (whole, or an error that says what happened), and how long after it ends the
/// view shows every pair.
fn cold_view_under(name: &'static str, fault: Fault, moto: &str, prefix: &str) -> Row {
    let relay = FaultRelay::start(moto);
    let viewer = Viewer::start(&moto_env(&relay.endpoint(), prefix));
    relay.set(fault);
    let (status, during) = viewer.matrix();
    let said = during["error"].as_str().unwrap_or_default().to_string();
    // A fault the view got through whole would be a 200 with every pair; anything else is an
    // error naming what happened.
    let clear = (status == 200 && shows_every_pair(&during)) || (status >= 500 && !said.is_empty());
    assert!(clear, "{name}: {status} {during}");

    relay.set(Fault::None);
    let ended = Instant::now();
    let after = loop {
        let (status, after) = viewer.matrix();
        if status == 200 || ended.elapsed() > Duration::from_secs(30) {
            break after;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let recovery_ms = ended.elapsed().as_millis();
    assert!(shows_every_pair(&after), "{name}: after the fault, {after}");
    eprintln!("{name}: {status} {said:.120}; every pair {recovery_ms} ms after");
    Row {
        fault: name.into(),
        scenario: "a cold view of the results app (its matrix)",
        tried: 1,
        acknowledged: usize::from(status == 200),
        lost: 0,
        duplicated: 0,
        corrupt: 0,
        recovery_ms: Some(recovery_ms),
        said: format!("{status} {said}"),
    }
}

#[test]
fn a_cold_matrix_under_each_fault_is_a_clear_error_then_every_pair() {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("app-faults-{}-{now}/", std::process::id());
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pytest-9.xml");
    for (platform, runtime) in PAIRS {
        let posted = app(&["post", "--platform", platform, "--runtime", runtime, fixture], &moto_env(&moto, &prefix))
            .output()
            .unwrap();
        assert!(posted.status.success(), "{}", String::from_utf8_lossy(&posted.stderr));
    }
    // A bucket whose host does not resolve: the matrix says which host, and never recovers.
    let nowhere = Viewer::start(&moto_env("http://objstore-no-such-host.invalid:9000", &prefix));
    let (status, answer) = nowhere.matrix();
    let said = answer["error"].as_str().unwrap_or_default().to_string();
    assert!(status == 502 && said.contains("objstore-no-such-host.invalid"), "{status} {answer}");
    let mut rows = vec![Row {
        fault: "unresolvable host".into(),
        scenario: "a cold view of the results app (its matrix)",
        tried: 1,
        said: format!("{status} {said}"),
        ..Row::default()
    }];
    // Each fault with a relay and a viewer of its own, all at once: most of a fault's time is
    // waiting (on timeouts, Retry-After, a latency spike), and one after another that was 50 s.
    let (moto, prefix) = (&moto, &prefix);
    let faulted: Vec<Row> = std::thread::scope(|scope| {
        let runs: Vec<_> = every_fault()
            .into_iter()
            .map(|(name, fault)| scope.spawn(move || cold_view_under(name, fault, moto, prefix)))
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    rows.extend(faulted);
    record(&rows);
}

/// The run objects moto holds under `prefix` (not the change log, the anchors or the probes:
/// no name segment of theirs starts with a dot).
fn run_objects(moto: &str, prefix: &str) -> BTreeSet<String> {
    let bucket = &server("moto")["MOTO_SIGNED_BUCKET"];
    let url = format!("{moto}/{bucket}?list-type=2&prefix={prefix}");
    let listing = ureq::get(&url).call().unwrap().body_mut().read_to_string().unwrap();
    assert!(!listing.contains("<IsTruncated>true"), "one page of listing is enough here");
    listing
        .split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split("</Key>").next())
        .filter_map(|key| key.strip_prefix(prefix))
        .filter(|key| !key.split('/').any(|segment| segment.starts_with('.')))
        .map(str::to_string)
        .collect()
}

/// 48 posts at once to a collector whose bucket resets every PUT of one run object in 20
/// (each such run can never be stored; the waves it is in stop when it fails). Afterwards the
/// bucket holds exactly the runs answered 201, each once: a run in a stopped wave that landed is
/// answered 201, never 503 (a poster's retry would store it twice), and no run answered 503 is
/// in the bucket.
#[test]
fn a_collector_under_reset_writes_stores_exactly_the_runs_it_answered_201() {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("app-resets-{}-{now}/", std::process::id());
    let relay = FaultRelay::start(&moto);
    let poisoned = Arc::new(Mutex::new((0usize, HashSet::<String>::new())));
    let targets: Targets = {
        let (poisoned, prefix) = (poisoned.clone(), prefix.clone());
        Arc::new(move |method, path| {
            let Some((_, key)) = path.split_once(&prefix) else { return false };
            if method != "PUT" || key.split('/').any(|segment| segment.starts_with('.')) {
                return false;
            }
            let (seen, paths) = &mut *poisoned.lock().unwrap();
            if !paths.contains(path) {
                *seen += 1;
                if *seen % 20 == 0 {
                    paths.insert(path.to_string());
                }
            }
            paths.contains(path)
        })
    };
    relay.set_for(Some((targets, Fault::ResetBeforeBody)));
    let collector = Viewer::start(&moto_env(&relay.endpoint(), &prefix));
    let url = format!("{}results", collector.page);
    let barrier = Arc::new(Barrier::new(48));
    let posters: Vec<_> = (0..48)
        .map(|i| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                let run = json!({"platform": "linux", "browser": "python-3.11", "version": format!("1.{i}"),
                    "results": {"tool": {"name": "pytest"},
                        "summary": {"tests": 1, "passed": 1, "failed": 0, "skipped": 0, "pending": 0, "other": 0, "start": 1, "stop": 2},
                        "tests": [{"name": format!("t{i}"), "status": "passed", "duration": 1, "suite": "crud"}]}});
                let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
                barrier.wait();
                let mut answer =
                    agent.post(&url).header("content-type", "application/json").send(run.to_string().as_bytes()).unwrap();
                let status = answer.status().as_u16();
                let body: Value = serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
                (status, body)
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = posters.into_iter().map(|t| t.join().unwrap()).collect();
    relay.set_for(None);
    let answered_201: BTreeSet<String> = answers
        .iter()
        .filter(|(status, _)| *status == 201)
        .map(|(_, b)| b["key"].as_str().unwrap().to_string())
        .collect();
    let refused = answers.iter().filter(|(status, _)| *status != 201).count();
    for (status, body) in &answers {
        assert!(*status == 201 || *status == 503, "{status} {body}");
    }
    let poisoned = poisoned.lock().unwrap().1.len();
    eprintln!("48 posts: {} answered 201, {refused} answered 503; {poisoned} run objects reset", answered_201.len());
    assert!(poisoned > 0 && refused > 0, "the fault met no post");
    assert_eq!(answered_201.len() + refused, 48);
    assert_eq!(run_objects(&moto, &prefix), answered_201, "the bucket holds the runs answered 201, and no other");
}

/// A post whose answer is lost (the collector stored it, then the connection was reset) is
/// sent again by `post` with the same Idempotency-Key: it is answered with the first one's key,
/// and the bucket holds the run once.
#[test]
fn a_post_whose_answer_is_lost_is_sent_again_and_stored_once() {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("app-retries-{}-{now}/", std::process::id());
    let collector = Viewer::start(&moto_env(&moto, &prefix));
    let relay = FaultRelay::start(collector.page.trim_end_matches('/'));
    let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let the_first_post: Targets = Arc::new(move |method, path| {
        method == "POST" && path == "/results" && first.swap(false, std::sync::atomic::Ordering::SeqCst)
    });
    relay.set_for(Some((the_first_post, Fault::ResetAfterRequest)));
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pytest-9.xml");
    let posted = app(
        &["post", "--platform", "linux", "--runtime", "python-3.11", "--collector", &relay.endpoint(), fixture],
        &[],
    )
    .env_remove("OBJSTORE_RESULTS")
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&posted.stderr);
    assert!(posted.status.success(), "{said}");
    assert!(said.contains("trying again"), "the first answer was lost: {said}");
    assert_eq!(relay.requests(), 2);
    let stored = run_objects(&moto, &prefix);
    assert_eq!(stored.len(), 1, "{stored:?}");
    let answered = String::from_utf8_lossy(&posted.stdout);
    assert!(answered.contains(stored.iter().next().unwrap().as_str()), "{answered}");
}

/// The keys under `prefix` in moto's signed bucket that start with `under` (after the prefix).
fn objects_under(moto: &str, prefix: &str, under: &str) -> Vec<String> {
    let bucket = &server("moto")["MOTO_SIGNED_BUCKET"];
    let url = format!("{moto}/{bucket}?list-type=2&prefix={prefix}{under}");
    let listing = ureq::get(&url).call().unwrap().body_mut().read_to_string().unwrap();
    listing.split("<Key>").skip(1).filter_map(|rest| rest.split("</Key>").next()).map(str::to_string).collect()
}

/// A run answered 201 while its change-log marker was refused for now (503 on the log's PUTs)
/// gets its marker when the collector stops: the writer sends what it owes before its database
/// closes, as it does when it rotates one (review R4). Before, the marker died with the
/// in-memory database, and warm readers missed the run until their next full listing.
#[test]
fn a_marker_owed_when_the_collector_stops_is_sent_before_it_closes() {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("app-owed-{}-{now}/", std::process::id());
    let relay = FaultRelay::start(&moto);
    let the_log: Targets = Arc::new(|method, path| method == "PUT" && path.contains("/.objstore-changes/"));
    relay.set_for(Some((the_log, Fault::Status(503, None))));
    let mut collector = Viewer::start(&moto_env(&relay.endpoint(), &prefix));
    let run = json!({"platform": "linux", "browser": "python-3.11", "version": "1.0",
        "results": {"tool": {"name": "pytest"},
            "summary": {"tests": 1, "passed": 1, "failed": 0, "skipped": 0, "pending": 0, "other": 0, "start": 1, "stop": 2},
            "tests": [{"name": "t", "status": "passed", "duration": 1, "suite": "crud"}]}});
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let answer = agent
        .post(&format!("{}results", collector.page))
        .header("content-type", "application/json")
        .send(run.to_string().as_bytes())
        .unwrap();
    assert_eq!(answer.status().as_u16(), 201, "its body landed");
    assert_eq!(run_objects(&moto, &prefix).len(), 1);
    assert!(objects_under(&moto, &prefix, ".objstore-changes/").is_empty(), "its marker is owed");

    // Stopped (as ctrl-c stops it) while the log still refuses; the fault ends a moment later.
    unsafe { libc::kill(collector.child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(700));
    relay.set_for(None);
    let started = Instant::now();
    while collector.child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(30), "the collector stops");
        std::thread::sleep(Duration::from_millis(50));
    }
    let markers = objects_under(&moto, &prefix, ".objstore-changes/");
    assert!(!markers.is_empty(), "the owed marker was sent before the database closed");
}
