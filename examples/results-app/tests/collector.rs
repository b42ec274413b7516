//! The collector as the open internet meets it: the real binary on loopback, writing to a
//! `file://` bucket (and to moto and Garage), posted to over HTTP.

mod support;
#[path = "collector/tokens.rs"]
mod tokens;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use support::server;

struct Collector {
    child: Child,
    url: String,
    bucket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Collector {
    /// Starts `objstore-results serve` on a free port with these options and environment.
    fn start(args: &[&str], env: &[(&str, String)]) -> Collector {
        let dir = tempfile::tempdir().unwrap();
        let bucket = dir.path().join("bucket");
        let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
        command.args(["serve", "--listen", "127.0.0.1:0"]).args(args).stdout(Stdio::piped());
        command.env("OBJSTORE_RESULTS", format!("file://{}", bucket.display()));
        command.env("XDG_CACHE_HOME", dir.path().join("cache"));
        command.env_remove("OBJSTORE_RESULTS_PREFIX").env_remove("OBJSTORE_COLLECTOR_TOKENS");
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Collector { child, url, bucket, _dir: dir }
    }

    /// Every object stored: key → record.
    fn stored(&self) -> BTreeMap<String, Value> {
        support::stored(&self.bucket)
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: status, headers (lower-case names) and the JSON body (null when none).
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Value,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

fn answer(response: ureq::http::Response<ureq::Body>) -> Answer {
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    let text = response.into_body().read_to_string().unwrap_or_default();
    Answer { status, headers, body: serde_json::from_str(&text).unwrap_or(Value::Null) }
}

fn send(url: &str, headers: &[(&str, &str)], content_type: &str, body: &[u8]) -> Answer {
    let mut request = agent().post(url).header("content-type", content_type);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    answer(request.send(body).unwrap())
}

fn post_json(url: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    send(url, headers, "application/json", body.to_string().as_bytes())
}

/// A run as the reporters write it.
fn run(platform: &str, browser: &str) -> Value {
    json!({"platform": platform, "browser": browser, "version": "0.1.0", "results": {
        "tool": {"name": "pytest"},
        "summary": {"tests": 2, "passed": 1, "failed": 1, "skipped": 0, "pending": 0, "other": 0, "start": 1, "stop": 2},
        "tests": [{"name": "a", "status": "passed", "duration": 1, "suite": "crud"},
                  {"name": "b", "status": "failed", "duration": 2, "suite": "sql", "message": "no"}]}})
}

/// Posts each body from a thread of its own, all released at one instant; the stored keys.
fn post_at_once(url: &str, bodies: Vec<Value>) -> Vec<String> {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(bodies.len()));
    let posters: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let (url, barrier) = (url.to_string(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let answer = post_json(&url, &[], &body);
                assert_eq!(answer.status, 201, "{}", answer.body);
                answer.body["key"].as_str().unwrap().to_string()
            })
        })
        .collect();
    posters.into_iter().map(|t| t.join().unwrap()).collect()
}

fn urlencode(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

const PAGE: &str = "https://results.example.org";

#[test]
fn a_json_post_is_stored_create_only_and_read_back_as_posted() {
    let c = Collector::start(&[], &[]);
    let posted = run("linux-x86_64", "python-3.11");
    let first = post_json(&c.url, &[], &posted);
    assert_eq!(first.status, 201, "{}", first.body);
    let key = first.body["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("linux-x86_64/python-3.11/"), "{key}");
    // The same post again is a second run under its own key: nothing is overwritten.
    let again = post_json(&c.url, &[], &posted);
    assert_eq!(again.status, 201);
    assert_ne!(again.body["key"], first.body["key"]);
    let stored = c.stored();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[&key], posted, "read back as posted");
}

/// A post sent again with its `Idempotency-Key` (its answer was lost, or was a 5xx) is stored
/// once and answered with the first one's key, whether or not it is a CI run's file; the same
/// key from another pair is another post; a key that is no header value a key can be is refused.
#[test]
fn a_post_sent_again_with_its_idempotency_key_is_stored_once() {
    let c = Collector::start(&[], &[]);
    let posted = run("linux-x86_64", "python-3.11");
    let once = [("idempotency-key", "job-7-file-1")];
    let first = post_json(&c.url, &once, &posted);
    let again = post_json(&c.url, &once, &posted);
    assert_eq!((first.status, again.status), (201, 201), "{} {}", first.body, again.body);
    assert_eq!(first.body["key"], again.body["key"]);
    assert_eq!(c.stored().len(), 1);

    let node = post_json(&c.url, &once, &run("linux-x86_64", "node-20"));
    assert_eq!(node.status, 201);
    assert_ne!(node.body["key"], first.body["key"]);
    assert_eq!(c.stored().len(), 2);

    let mut of_ci = run("linux-x86_64", "python-3.11");
    of_ci["ci"] = json!({"run": "github-77-1"});
    let keys: Vec<Value> = (0..2).map(|_| post_json(&c.url, &once, &of_ci).body["key"].clone()).collect();
    assert!(keys[0].as_str().is_some_and(|k| k.contains("-github-77-1/")), "{keys:?}");
    assert_eq!(keys[0], keys[1]);
    assert_eq!(c.stored().len(), 3);

    for bad in ["", &"k".repeat(256), "a key"] {
        let refused = post_json(&c.url, &[("idempotency-key", bad)], &posted);
        assert_eq!(refused.status, 400, "{bad:?}");
        assert!(refused.body["error"].as_str().unwrap().contains("Idempotency-Key"), "{}", refused.body);
    }
    assert_eq!(c.stored().len(), 3);
}

#[test]
fn origins_preflights_and_forms() {
    let c = Collector::start(&["--origin", PAGE], &[]);
    let preflight = |origin: &str| {
        answer(
            agent()
                .options(&c.url)
                .header("origin", origin)
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type")
                .call()
                .unwrap(),
        )
    };
    let allowed = preflight(PAGE);
    assert_eq!(allowed.headers.get("access-control-allow-origin").map(String::as_str), Some(PAGE));
    assert!(allowed.headers.get("access-control-allow-methods").is_some_and(|m| m.contains("POST")));
    let other = preflight("https://evil.example");
    assert!(!other.headers.contains_key("access-control-allow-origin"), "{:?}", other.headers);

    let refused = post_json(&c.url, &[("origin", "https://evil.example")], &run("linux-x86_64", "node-20"));
    assert_eq!((refused.status, refused.headers.get("access-control-allow-origin")), (403, None));
    assert!(refused.body["error"].as_str().unwrap().contains("evil.example"));

    let report = json!({"results": run("x", "y")["results"]}).to_string();
    let form =
        urlencode(&[("platform", "linux-x86_64"), ("browser", "node-20"), ("version", "1.0"), ("report", &report)]);
    let posted = send(&c.url, &[("origin", PAGE)], "application/x-www-form-urlencoded", form.as_bytes());
    assert_eq!(posted.status, 201, "{}", posted.body);
    assert_eq!(posted.headers.get("access-control-allow-origin").map(String::as_str), Some(PAGE));

    let boundary = "XyZ123";
    let multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"platform\"\r\n\r\nmacos-aarch64\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"browser\"\r\n\r\nc-clang-17\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"suite\"\r\n\r\ncrud\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"report\"; filename=\"junit.xml\"\r\nContent-Type: text/xml\r\n\r\n\
         <testsuite><testcase name=\"put\" time=\"0.001\"/></testsuite>\r\n--{boundary}--\r\n"
    );
    let posted =
        send(&c.url, &[("origin", PAGE)], &format!("multipart/form-data; boundary={boundary}"), multipart.as_bytes());
    assert_eq!(posted.status, 201, "{}", posted.body);
    let stored = c.stored();
    assert_eq!(stored.len(), 2, "the refused post wrote nothing");
    let key = posted.body["key"].as_str().unwrap();
    assert_eq!(stored[key]["results"]["tests"][0]["suite"], "crud");
}

#[test]
fn bad_posts_get_a_4xx_naming_what_was_wrong_and_write_nothing() {
    let c = Collector::start(&["--max-bytes", "4000"], &[]);
    let big = json!({"padding": "x".repeat(5000)});
    let too_big = post_json(&c.url, &[], &big);
    assert_eq!(too_big.status, 413, "{}", too_big.body);
    assert!(too_big.body["error"].as_str().unwrap().contains("4000-byte limit"));
    for (platform, browser, version, field) in [
        ("../etc", "python-3.11", "1", "platform"),
        ("linux", "python/3.11", "1", "browser"),
        ("linux", "python-3.11", "1 2", "version"),
        ("linux", "", "1", "browser"),
    ] {
        let report = json!({"results": run("x", "y")["results"]}).to_string();
        let form =
            urlencode(&[("platform", platform), ("browser", browser), ("version", version), ("report", &report)]);
        let refused = send(&c.url, &[], "application/x-www-form-urlencoded", form.as_bytes());
        assert_eq!((refused.status, refused.body["field"].as_str()), (400, Some(field)), "{}", refused.body);
    }
    let mut unnamed = run("linux", "c");
    unnamed["results"]["tests"][0]["suite"] = json!("");
    let refused = post_json(&c.url, &[], &unnamed);
    assert_eq!((refused.status, refused.body["field"].as_str()), (400, Some("report")), "{}", refused.body);
    assert_eq!(send(&c.url, &[], "text/plain", b"hello").status, 415);
    let report = json!({"results": run("x", "y")["results"]}).to_string();
    for (field, value) in [("run", "a b"), ("url", "javascript:alert(1)"), ("commit", "")] {
        let form = urlencode(&[("browser", "c"), (field, value), ("report", &report)]);
        let refused = send(&c.url, &[], "application/x-www-form-urlencoded", form.as_bytes());
        assert_eq!((refused.status, refused.body["field"].as_str()), (400, Some(field)), "{}", refused.body);
    }
    let escaped = send(&c.url, &[], "application/x-www-form-urlencoded", b"platform=%+A&browser=c&report=x");
    assert_eq!(escaped.status, 400, "{}", escaped.body);
    assert!(c.stored().is_empty());
}

#[test]
fn a_client_past_its_rate_waits_with_retry_after() {
    let c = Collector::start(&["--per-minute", "6", "--burst", "2"], &[]);
    let body = run("linux-x86_64", "node-20");
    assert_eq!(post_json(&c.url, &[], &body).status, 201);
    assert_eq!(post_json(&c.url, &[], &body).status, 201);
    let limited = post_json(&c.url, &[], &body);
    assert_eq!(limited.status, 429, "{}", limited.body);
    let wait: u64 = limited.headers["retry-after"].parse().unwrap();
    assert!((1..=10).contains(&wait), "{wait}");
    assert_eq!(c.stored().len(), 2);
}

#[test]
fn concurrent_posts_in_one_millisecond_are_all_stored_once() {
    let c = Collector::start(&[], &[]);
    let bodies = (0..24).map(|i| run("linux-x86_64", if i % 2 == 0 { "python-3.11" } else { "node-20" })).collect();
    let keys = post_at_once(&c.url, bodies);
    let stored = c.stored();
    assert_eq!(stored.len(), 24, "every acknowledged post is there once");
    for key in &keys {
        assert!(stored.contains_key(key), "{key}");
    }
    // Files of one run posted at once race to anchor it: one anchor stands, and every file
    // goes under its run segment.
    let bodies = (0..12)
        .map(|_| {
            let mut body = run("linux-x86_64", "c-gcc-12");
            body["ci"] = json!({"run": "race-1"});
            body
        })
        .collect();
    let keys = post_at_once(&c.url, bodies);
    let runs: std::collections::HashSet<&str> = keys.iter().map(|k| k.rsplit_once('/').unwrap().0).collect();
    assert_eq!(runs.len(), 1, "{keys:?}");
    assert_eq!(c.stored().len(), 36);
}

/// Mangled bodies of every kind: each is a 4xx, and the bucket is unchanged.
#[test]
fn mangled_bodies_are_refused_and_change_nothing() {
    let c = Collector::start(&[], &[]);
    let good_json = run("linux-x86_64", "python-3.11").to_string();
    let good_xml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytest-9.xml")).unwrap();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut refused = 0;
    for round in 0..150 {
        let (source, kind) = match round % 3 {
            0 => (good_json.as_bytes().to_vec(), "application/json"),
            1 => (good_xml.as_bytes().to_vec(), "application/x-www-form-urlencoded"),
            _ => (good_json.as_bytes().to_vec(), "application/x-www-form-urlencoded"),
        };
        let mut body = source.clone();
        for _ in 0..1 + next() % 8 {
            let at = (next() as usize) % body.len();
            match next() % 4 {
                0 => body[at] = (next() % 256) as u8,
                1 => body.truncate(at.max(1)),
                2 => body.insert(at, b"<!DOCTYPE x [<!ENTITY e \"e\">]>&e;\"{}%"[(next() % 36) as usize]),
                _ => {
                    body.remove(at.min(body.len() - 1));
                }
            }
        }
        if kind.contains("urlencoded") {
            let text = String::from_utf8_lossy(&body).to_string();
            body = urlencode(&[("platform", "linux"), ("browser", "python-3.11"), ("report", &text)]).into_bytes();
            if round % 2 == 0 {
                body.truncate(body.len() / 2); // cut mid-escape, sometimes
            }
        }
        let answer = send(&c.url, &[], kind, &body);
        assert_ne!(answer.status / 100, 5, "round {round}: {}", answer.body);
        if answer.status == 201 {
            // A mangling can leave a valid report (a changed letter in a name): it is stored as any.
            continue;
        }
        assert_eq!(answer.status / 100, 4, "round {round}");
        assert!(answer.body["error"].is_string(), "round {round}: a JSON error");
        refused += 1;
    }
    assert!(refused > 100, "most mangled bodies are refused ({refused})");
    let stored = c.stored();
    assert_eq!(stored.len(), 150 - refused, "only the accepted posts are there");
}

/// On moto and on Garage (which ignores If-None-Match on PUT), concurrent posts each land once.
#[test]
fn the_collector_writes_to_moto_and_garage() {
    for (name, bucket_var) in [("moto", "MOTO_SIGNED_BUCKET"), ("garage", "GARAGE_BUCKET")] {
        let env = server(name);
        let up = name.to_uppercase();
        let prefix = format!(
            "collector-{}-{}/",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        );
        let c = Collector::start(
            &[],
            &[
                ("OBJSTORE_RESULTS", env[&format!("{up}_ENDPOINT")].clone()),
                ("OBJSTORE_RESULTS_BUCKET", env[bucket_var].clone()),
                ("OBJSTORE_RESULTS_PREFIX", prefix.clone()),
                ("AWS_ACCESS_KEY_ID", env[&format!("{up}_ACCESS_KEY_ID")].clone()),
                ("AWS_SECRET_ACCESS_KEY", env[&format!("{up}_SECRET_ACCESS_KEY")].clone()),
                ("AWS_REGION", env[&format!("{up}_REGION")].clone()),
            ],
        );
        let keys = post_at_once(&c.url, (0..8).map(|_| run("linux-x86_64", "python-3.11")).collect());
        use objstore_db_core::bucket::{list_all, open_bucket, ListRequest};
        use objstore_db_core::sync::{SyncConfig, Token};
        let block = json!({"format": "objstore", "Options": {"bucket": env[bucket_var], "prefix": prefix,
            "endpoint": env[&format!("{up}_ENDPOINT")], "region": env[&format!("{up}_REGION")],
            "accessKeyId": env[&format!("{up}_ACCESS_KEY_ID")], "secretAccessKey": env[&format!("{up}_SECRET_ACCESS_KEY")]}});
        let bucket =
            open_bucket(&SyncConfig::from_json("r", &block, &|_| None).unwrap().connection, Default::default())
                .unwrap();
        let listed =
            list_all(&*bucket, &ListRequest { prefix: prefix.clone(), ..Default::default() }, &Token::default())
                .unwrap();
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .map(|o| o.key[prefix.len()..].to_string())
            .filter(|name| !name.starts_with(".objstore-changes/"))
            .collect();
        // Every run is named by a change-log marker: its own, or its wave's (in the body).
        use objstore_db_core::sync::changelog;
        let log = format!("{prefix}{}", changelog::DIR);
        let mut marked: Vec<String> = Vec::new();
        let markers: Vec<_> = listed.objects.iter().filter(|o| o.key.starts_with(&log)).collect();
        for object in &markers {
            match (changelog::parse(&log, object), changelog::parse_wave(&log, object)) {
                (Some(marker), _) => marked.push(marker.id),
                (None, Some(wave)) => {
                    let objstore_db_core::bucket::Fetched::Found(body) =
                        bucket.get(&object.key, &Default::default(), &Token::default()).unwrap()
                    else {
                        panic!("{name}: the wave marker {} is gone", object.key)
                    };
                    marked.extend(changelog::wave_markers(&wave, &body.body).unwrap().into_iter().map(|m| m.id));
                }
                (None, None) => panic!("{name}: {} in the log is not a marker", object.key),
            }
        }
        assert!(markers.len() < keys.len(), "{name}: posts arriving together share a marker: {markers:?}");
        marked.sort();
        names.sort();
        assert_eq!(marked, names, "{name}: a marker names each run");
        let mut want = keys.clone();
        want.sort();
        assert_eq!(names, want, "{name}");
    }
}

/// A bucket that cannot be reached: the post is a 503 with the reason, not a 201 for a run that
/// might land later (the write is taken back).
#[test]
fn a_post_the_bucket_cannot_take_is_a_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let c = Collector::start(&[], &[("OBJSTORE_RESULTS", format!("http://127.0.0.1:{closed}"))]);
    let answer = post_json(&c.url, &[], &run("linux-x86_64", "python-3.11"));
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(answer.body["error"].as_str().unwrap().contains("unavailable"), "{}", answer.body);
}

/// `objstore-results post --collector URL` sends the run to a collector (with the token the
/// environment gives) instead of the bucket; the collector's refusal is the post's error.
#[test]
fn post_sends_runs_to_a_collector() {
    let c = Collector::start(&["--token", "ci-token"], &[]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytest-9.xml");
    let post_to = |url: &str, token: &str| {
        Command::new(env!("CARGO_BIN_EXE_objstore-results"))
            .args(["post", "--runtime", "python-3.11", "--collector", url])
            .arg(&fixture)
            .env("OBJSTORE_COLLECTOR_TOKEN", token)
            .output()
            .unwrap()
    };
    let post = |token: &str| post_to(&c.url, token);
    let refused = post("wrong");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"), "{}", String::from_utf8_lossy(&refused.stderr));
    let sent = post("ci-token");
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let stored = c.stored();
    assert_eq!(stored.len(), 1);
    let (key, run) = stored.iter().next().unwrap();
    assert!(String::from_utf8_lossy(&sent.stdout).contains(key.as_str()));
    assert_eq!(run["results"]["summary"]["tests"], 4);
    // The server's own address means its /results; the summary counts every outcome.
    let server_only = c.url.trim_end_matches("/results").to_string();
    let to_root = post_to(&format!("{server_only}/"), "ci-token");
    assert!(to_root.status.success(), "{}", String::from_utf8_lossy(&to_root.stderr));
    assert_eq!(c.stored().len(), 2);
    let summary = String::from_utf8_lossy(&to_root.stdout);
    assert!(summary.contains("passed") && summary.contains("skipped"), "{summary}");
    // Anything but POST /results is a JSON error too, a POST to the page included.
    let to_page = send(&format!("{server_only}/"), &[], "application/json", b"{}");
    assert_eq!(
        (to_page.status, to_page.body["error"].as_str().is_some_and(|e| e.contains("/results"))),
        (405, true),
        "{}",
        to_page.body
    );
    let lost = answer(agent().get(&format!("{}/../elsewhere", c.url.trim_end_matches("/results"))).call().unwrap());
    assert_eq!((lost.status, lost.body["error"].is_string()), (404, true));
    let wrong_method = answer(agent().get(&c.url).call().unwrap());
    assert_eq!((wrong_method.status, wrong_method.body["error"].is_string()), (405, true));
    assert_eq!(wrong_method.headers.get("allow").map(String::as_str), Some("POST"));
    let star = Command::new(env!("CARGO_BIN_EXE_objstore-results")).args(["serve", "--origin", "*"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&star.stderr).contains("not an origin"),
        "{}",
        String::from_utf8_lossy(&star.stderr)
    );
}

/// A client that announces a body and never sends it is cut off with a 408, and the collector
/// goes on serving others.
#[test]
fn a_post_that_never_finishes_is_cut_off() {
    use std::io::{Read, Write};
    let c = Collector::start(&["--timeout-secs", "1"], &[]);
    let address = c.url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let mut slow = std::net::TcpStream::connect(&address).unwrap();
    write!(
        slow,
        "POST /results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    )
    .unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut answer_text = String::new();
    let _ = slow.read_to_string(&mut answer_text);
    assert!(answer_text.starts_with("HTTP/1.1 408"), "{answer_text}");
    assert_eq!(post_json(&c.url, &[], &run("linux-x86_64", "c-gcc-12")).status, 201);
}

/// The page's views are rate-limited per client, and a made-up run key is a 404 answered from
/// the listing (review N13).
#[test]
fn views_are_rate_limited_and_made_up_keys_are_not_found() {
    let c = Collector::start(&[], &[]);
    let page = c.url.trim_end_matches("results");
    let get = |path: &str| answer(agent().get(&format!("{page}{path}")).call().unwrap());
    let made_up = get("api/run?key=linux-x86_64/rust-1/0000000000001-00000000000000ff");
    assert_eq!(made_up.status, 404, "{:?}", made_up.body);
    assert!(made_up.body["error"].as_str().unwrap().contains("no run"), "{:?}", made_up.body);
    let started = std::time::Instant::now();
    let statuses: Vec<u16> = (0..300).map(|_| get("api/run?key=bad").status).collect();
    assert_eq!(statuses[0], 400);
    let limited = statuses.iter().position(|s| *s == 429).expect("a client past its rate is held back");
    // The burst of 200, and what 1,200 a minute refilled while the requests were made.
    let refilled = (started.elapsed().as_secs_f64() * 20.0).ceil() as usize;
    assert!(limited <= 200 + refilled, "after the burst: {limited} (refilled {refilled})");
    let held = get("api/matrix");
    assert_eq!(held.status, 429);
    assert!(held.headers.contains_key("retry-after"));
}

/// Every pair is reachable: the matrix pages its pairs 50 at a time, in the index's order, and
/// filters them on the server (platform, status, suite, commit).
#[test]
fn the_matrix_pages_and_filters_every_pair() {
    let c = Collector::start(&[], &[]);
    let bodies: Vec<Value> = (0..53)
        .map(|i| {
            let mut body = run(&format!("p{i:02}"), "c-1");
            if i % 10 == 0 {
                // Every tenth pair passes everything, at a commit of its own.
                body["results"]["tests"][1]["status"] = json!("passed");
                body["results"]["summary"]["passed"] = json!(2);
                body["results"]["summary"]["failed"] = json!(0);
                body["ci"] = json!({"commit": format!("abc{i:02}")});
                body["results"]["environment"] = json!({"build_type": "Debug"});
            }
            body
        })
        .collect();
    for chunk in bodies.chunks(10) {
        post_at_once(&c.url, chunk.to_vec());
    }
    // A run of no tests is still its pair's row, unfiltered.
    let mut empty = run("q-empty", "c-1");
    empty["results"]["tests"] = json!([]);
    empty["results"]["summary"] =
        json!({"tests": 0, "passed": 0, "failed": 0, "skipped": 0, "pending": 0, "other": 0, "start": 1, "stop": 2});
    post_at_once(&c.url, vec![empty]);
    let page = c.url.trim_end_matches("results");
    let matrix = |query: &str| {
        let answer = answer(agent().get(&format!("{page}api/matrix?{query}")).call().unwrap());
        assert_eq!(answer.status, 200, "{query}: {}", answer.body);
        answer.body
    };
    let pairs = |m: &Value| -> Vec<String> {
        m["rows"].as_array().unwrap().iter().map(|r| r["platform"].as_str().unwrap().to_string()).collect()
    };
    let first = matrix("");
    assert_eq!((pairs(&first).len(), first["matching"].as_u64(), first["pairs"].as_u64()), (50, Some(54), Some(54)));
    assert_eq!(first["next"], "p49/c-1");
    assert_eq!(first["platforms"].as_array().unwrap().len(), 54, "every platform, for the filter");
    let rest = matrix("after=p49/c-1");
    assert_eq!(
        (pairs(&rest), &rest["next"]),
        (vec!["p50".to_string(), "p51".into(), "p52".into(), "q-empty".into()], &Value::Null)
    );
    assert_eq!(pairs(&matrix("platform=p07")), ["p07"]);
    let passing = matrix("status=failed&suite=sql");
    assert_eq!(passing["matching"], 47, "the six passing pairs are left out");
    assert_eq!(pairs(&matrix("commit=abc2")), ["p20"]);
    assert_eq!(pairs(&matrix("label=build_type=Debug")), ["p00", "p10", "p20", "p30", "p40", "p50"]);
    assert_eq!(pairs(&matrix("label=build_type=Release")), Vec::<String>::new());
    assert_eq!(pairs(&matrix("status=failed&suite=crud")), Vec::<String>::new(), "crud passes everywhere");
}

/// A CI job that has only the collector's address and a token: `post`, `summary`, `gate` and
/// `quarantine list` go through it, with no bucket setting at all, and nothing is written into
/// the job's directory; without the collector, a read of a bucket that is not there says so and
/// creates nothing.
#[test]
fn a_job_with_only_the_collector_posts_summarizes_and_gates_through_it() {
    let token = "ci-job-token-0000000001";
    let c = Collector::start(&["--token", token], &[]);
    let job = tempfile::tempdir().unwrap();
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ctest.xml").display().to_string();
    let cli = |args: &[&str], collector: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
        command.args(args).current_dir(job.path()).env("XDG_CACHE_HOME", job.path().join(".cache"));
        for name in
            support::CI_MARKERS.iter().chain(&["OBJSTORE_RESULTS", "OBJSTORE_RESULTS_BUCKET", "OBJSTORE_COLLECTOR"])
        {
            command.env_remove(name);
        }
        if collector {
            command.env("OBJSTORE_COLLECTOR", &c.url).env("OBJSTORE_COLLECTOR_TOKEN", token);
        }
        command.output().unwrap()
    };
    let said = |out: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let posted = cli(&["post", "--runtime", "c-gcc-12", "--run", "ci-7", &report], true);
    assert!(posted.status.success(), "{}", said(&posted));
    let mut unsigned = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    unsigned
        .args(["post", "--runtime", "c-gcc-12", "--collector", &c.url, &report])
        .env_remove("OBJSTORE_COLLECTOR_TOKEN");
    let unsigned = unsigned.output().unwrap();
    assert!(
        !unsigned.status.success()
            && said(&unsigned).contains("401")
            && said(&unsigned).contains("OBJSTORE_COLLECTOR_TOKEN"),
        "{}",
        said(&unsigned)
    );
    // The quarantine is kept in the bucket, by whoever may edit it.
    let mut add = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    add.args(["quarantine", "add", "--suite", "ctest", "--name", "crud_fails", "--reason", "known"]);
    add.env("OBJSTORE_RESULTS", format!("file://{}", c.bucket.display()))
        .env("XDG_CACHE_HOME", job.path().join(".admin"));
    assert!(add.output().unwrap().status.success());

    let listed = cli(&["quarantine", "list"], true);
    assert!(listed.status.success() && said(&listed).contains("ctest › crud_fails  [*/*]: known"), "{}", said(&listed));
    let summary = cli(&["summary", "--run", "ci-7", "--markdown"], true);
    let text = said(&summary);
    assert!(summary.status.success() && text.contains("Test results of run ci-7"), "{text}");
    assert!(text.contains("**Quarantined failures** (1)"), "the quarantined failure is apart: {text}");
    assert!(text.contains("**Failed**: 1 test on 1 of 1 pair, all of them quarantined."), "the verdict first: {text}");
    let gate = cli(&["gate", "--runtime", "c-gcc-12", &report], true);
    let verdict = said(&gate);
    assert!(verdict.contains("the quarantine of the collector at"), "{verdict}");
    assert!(verdict.contains("quarantined:\n  ctest › crud_fails (known)"), "{verdict}");
    let edit = cli(&["quarantine", "remove", "--suite", "ctest", "--name", "crud_fails", "--collector", &c.url], true);
    assert!(!edit.status.success() && said(&edit).contains("needs OBJSTORE_RESULTS"), "{}", said(&edit));
    let refused = Command::new(env!("CARGO_BIN_EXE_objstore-results"))
        .args(["quarantine", "list", "--collector", &c.url])
        .env("OBJSTORE_COLLECTOR_TOKEN", "")
        .output()
        .unwrap();
    assert!(refused.status.success(), "reading needs no token: {}", said(&refused));

    // Without the collector: no bucket, so nothing is quarantined, which gate says; no
    // directory is made.
    let alone = cli(&["gate", "--runtime", "c-gcc-12", &report], false);
    let verdict = said(&alone);
    assert!(!alone.status.success() && verdict.contains("which is not there"), "{verdict}");
    assert!(
        verdict.contains("the quarantine holds no entry") && verdict.contains("1 failure not quarantined"),
        "{verdict}"
    );
    let summary = cli(&["summary", "--run", "ci-7"], false);
    assert!(!summary.status.success() && said(&summary).contains("no runs:"), "{}", said(&summary));
    let left: Vec<_> = std::fs::read_dir(job.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(
        left.iter().all(|n| n.to_string_lossy().starts_with('.')),
        "nothing written into the job's directory: {left:?}"
    );
}
