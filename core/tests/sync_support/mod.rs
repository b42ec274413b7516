//! Shared set-up for the sync suites: databases with synced stores, the real servers (started
//! by the project's own scripts), a relay that can take a server off the network and bring it
//! back, a relay that breaks requests on purpose ([`faults`], with the figures file it fills), and a misbehaving peer for
//! the fault tests.
#![allow(dead_code)]

pub mod faults;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use objstore_db_core::sync::reads::{need, prepare_read_here};
use objstore_db_core::sync::{Agent, FlushReport, Freshness, ReadScope, Stats, Token};
use objstore_db_core::{
    Database, Event, EventFilter, EventKind, Key, KeyRange, OpenOptions, Result, ScanOptions, Schema,
};
use serde_json::{json, Value};

/// The Sync options of each bucket kind, under a prefix of the test's own.
pub fn places(test: &str, dir: &Path) -> Vec<(&'static str, Value)> {
    let local = json!({"bucket": "b", "endpoint": format!("file://{}", dir.join("bucket").display())});
    vec![
        ("file", local),
        ("moto", signed_options(&server("moto"), "moto", "MOTO_SIGNED_BUCKET", &unique_prefix(test))),
        ("garage", signed_options(&server("garage"), "garage", "GARAGE_BUCKET", &unique_prefix(test))),
    ]
}

/// `options` with the fields of `extra` set.
pub fn with(options: &Value, extra: Value) -> Value {
    let mut options = options.clone();
    for (k, v) in extra.as_object().unwrap() {
        options[k] = v.clone();
    }
    options
}

/// A prefix no other test (or earlier run against the same server) uses.
pub fn unique_prefix(test: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{test}-{}-{nanos}-{}/", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A schema with one synced store `name` (out-of-line keys) and the given Sync block.
pub fn schema_with(stores: &[(&str, Value)]) -> Schema {
    let stores: Vec<Value> = stores
        .iter()
        .map(|(name, sync)| {
            let mut store = json!({"name": name});
            if sync.get("format").and_then(Value::as_str) == Some("objstore-meta") {
                store["indexes"] = json!([
                    {"name": "platform", "keyPath": "metadata.platform"},
                    {"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]}
                ]);
            }
            if !sync.is_null() {
                store["Sync"] = sync.clone();
            }
            store
        })
        .collect();
    Schema::from_json(&json!({"version": 1, "stores": stores}).to_string()).unwrap()
}

pub fn open(path: &Path, schema: Schema) -> Client {
    open_on(path, schema, objstore_db_core::MechanismKind::Sqlite)
}

/// The same on a mechanism of choice (the memory one keeps the sync state in memory too).
pub fn open_on(path: &Path, schema: Schema, mechanism: objstore_db_core::MechanismKind) -> Client {
    let options = OpenOptions { mechanism, ..OpenOptions::default() };
    let mut db = Database::open(path.to_str().unwrap(), Some(schema), &options).unwrap();
    let agent = Agent::new(&mut db).unwrap();
    Client { db, agent }
}

/// A database and its sync agent on the test's thread: the agent's work, which its runner
/// does in the background, is done here synchronously after each call (by the library's one
/// read policy, `sync::reads`), so a test can count the requests each call costs. Writes are
/// flushed at once; `get` and `values_of` validate (fresh reads); scans of a prefetching store
/// prefetch within the refractory period rules.
pub struct Client {
    pub db: Database,
    pub agent: Agent,
}

impl std::ops::Deref for Client {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.db
    }
}

impl std::ops::DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Database {
        &mut self.db
    }
}

#[allow(dead_code)]
impl Client {
    fn flushed<T>(&mut self, outcome: Result<T>) -> Result<T> {
        let _ = self.agent.flush(&mut self.db, &Token::default());
        outcome
    }

    fn before_scan(&mut self, store: &str, scan: &ScanOptions) -> Result<()> {
        let read = ReadScope::scan(store, scan.clone(), Freshness::Cached);
        prepare_read_here(&self.agent, &mut self.db, &read, &Token::default())
    }

    pub fn put(&mut self, store: &str, value: Value, key: Option<Key>) -> Result<Key> {
        let outcome = self.db.put(store, value, key);
        self.flushed(outcome)
    }

    pub fn add(&mut self, store: &str, value: Value, key: Option<Key>) -> Result<Key> {
        let outcome = self.db.add(store, value, key);
        self.flushed(outcome)
    }

    pub fn remove(&mut self, store: &str, range: &KeyRange) -> Result<u64> {
        let outcome = self.db.remove(store, range);
        self.flushed(outcome)
    }

    pub fn clear(&mut self, store: &str) -> Result<()> {
        let outcome = self.db.clear(store);
        self.flushed(outcome)
    }

    pub fn get(&mut self, store: &str, key: &Key) -> Result<Option<Value>> {
        Ok(self.values_of(store, std::slice::from_ref(key))?.pop().flatten())
    }

    /// A plain read (no freshness asked) as an application's `get` makes it: the read policy's
    /// step first, if any; the revalidation that would follow runs in the background there, so
    /// not here.
    pub fn get_cached(&mut self, store: &str, key: &Key) -> Result<Option<Value>> {
        let read = ReadScope::keys(store, vec![key.clone()], Freshness::Cached);
        if let Some(need) = need(&self.agent, &mut self.db, &read)? {
            need.run(&self.agent, &mut self.db, &Token::default())?;
        }
        self.db.get(store, key)
    }

    pub fn values_of(&mut self, store: &str, keys: &[Key]) -> Result<Vec<Option<Value>>> {
        if self.agent.is_synced(store) && !self.agent.is_offline() {
            self.before_scan(store, &ScanOptions::new())?;
            let read = ReadScope::keys(store, keys.to_vec(), Freshness::Fresh);
            prepare_read_here(&self.agent, &mut self.db, &read, &Token::default())?;
            let _ = self.agent.flush(&mut self.db, &Token::default());
        }
        self.db.values_of(store, keys)
    }

    pub fn count(&mut self, store: &str, scan: &ScanOptions) -> Result<u64> {
        self.before_scan(store, scan)?;
        self.db.count(store, scan)
    }

    pub fn keys(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Key>> {
        self.before_scan(store, scan)?;
        self.db.keys(store, scan)
    }

    pub fn values(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Value>> {
        self.before_scan(store, scan)?;
        self.db.values(store, scan)
    }

    /// Sends the outbox; an unreachable or blocking bucket is the error.
    pub fn flush(&mut self) -> Result<FlushReport> {
        let mut report = self.agent.flush(&mut self.db, &Token::default())?;
        match report.offline.take().or(report.blocked.take()) {
            Some(error) => Err(error),
            None => Ok(report),
        }
    }

    pub fn prefetch(&mut self, store: &str) -> Result<()> {
        self.agent.prefetch(&mut self.db, store, &Token::default())
    }

    pub fn checkpoint(&mut self, store: &str) -> Result<objstore_db_core::CheckpointReport> {
        self.agent.checkpoint(&mut self.db, store, &Token::default())
    }

    pub fn set_offline(&mut self, offline: bool) {
        self.agent.set_offline(offline);
    }

    pub fn sync_stats(&self) -> Stats {
        self.agent.stats()
    }

    pub fn take_sync_stats(&mut self) -> Stats {
        self.agent.take_stats()
    }
}

/// Collects the events of some kinds.
pub fn record_events(db: &mut Database, kinds: &[EventKind]) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    db.subscribe(EventFilter::kinds(kinds), Box::new(move |e: &Event| sink.lock().unwrap().push(e.clone())));
    seen
}

// ----- real servers -------------------------------------------------------------------------

/// Starts (or reuses) a server with `tests/servers/<name>` and returns its settings.
pub fn server(name: &str) -> HashMap<String, String> {
    static STARTED: OnceLock<Mutex<HashMap<String, HashMap<String, String>>>> = OnceLock::new();
    let mut started = STARTED.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(env) = started.get(name) {
        return env.clone();
    }
    let root = repo_root();
    let status = std::process::Command::new(root.join("tests/servers").join(name))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run tests/servers/{name}: {e}"));
    assert!(status.success(), "tests/servers/{name} failed to start the server");
    let text = std::fs::read_to_string(root.join(format!("target/servers/{name}.env"))).unwrap();
    let env: HashMap<String, String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("export ").unwrap_or(l.trim()).split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches(['"', '\'']).to_string()))
        .collect();
    started.insert(name.to_string(), env.clone());
    env
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Sync options for a signed store on moto or Garage.
pub fn signed_options(env: &HashMap<String, String>, server: &str, bucket: &str, prefix: &str) -> Value {
    let up = server.to_ascii_uppercase();
    json!({
        "bucket": env[bucket],
        "prefix": prefix,
        "endpoint": env[&format!("{up}_ENDPOINT")],
        "region": env[&format!("{up}_REGION")],
        "accessKeyId": env[&format!("{up}_ACCESS_KEY_ID")],
        "secretAccessKey": env[&format!("{up}_SECRET_ACCESS_KEY")],
    })
}

// ----- a relay that can take a server off the network ----------------------------------------

/// Forwards a loopback port to a real server while up; while down, the port refuses
/// connections (nothing listens), exactly as a server that went away.
pub struct Relay {
    pub port: u16,
    target: String,
    up: Arc<AtomicBool>,
    listener: Mutex<Option<thread::JoinHandle<()>>>,
    /// Added before each request goes on, as a distant region would add.
    latency: Duration,
}

impl Relay {
    pub fn new(target: &str) -> Relay {
        Relay::with_latency(target, Duration::ZERO)
    }

    /// A relay that holds each request `latency` before passing it on: a request's first
    /// bytes after the previous answer (or on a new connection) wait, the rest flow.
    pub fn with_latency(target: &str, latency: Duration) -> Relay {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let target = target.trim_start_matches("http://").to_string();
        Relay { port, target, up: Arc::new(AtomicBool::new(false)), listener: Mutex::new(None), latency }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn up(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        self.up.store(true, Ordering::SeqCst);
        let (up, target, latency) = (self.up.clone(), self.target.clone(), self.latency);
        let handle = thread::spawn(move || {
            while up.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(&target) else { continue };
                        let _ = (client.set_nodelay(true), server.set_nodelay(true));
                        // Set when an answer went back: the next bytes from the client start
                        // a new request.
                        let answered = Arc::new(AtomicBool::new(true));
                        let request = Delay { latency, before: answered.clone(), after: None };
                        let answer = Delay { latency: Duration::ZERO, before: Arc::default(), after: Some(answered) };
                        pipe(client.try_clone().unwrap(), server.try_clone().unwrap(), up.clone(), request);
                        pipe(server, client, up.clone(), answer);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        *self.listener.lock().unwrap() = Some(handle);
    }

    pub fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        if let Some(handle) = self.listener.lock().unwrap().take() {
            handle.join().unwrap();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.down();
    }
}

/// What a relay's pipe waits for: `latency` before bytes that follow a flag set by the other
/// direction (`before`), and which flag it sets for the other direction (`after`).
struct Delay {
    latency: Duration,
    before: Arc<AtomicBool>,
    after: Option<Arc<AtomicBool>>,
}

fn pipe(mut from: TcpStream, mut to: TcpStream, up: Arc<AtomicBool>, delay: Delay) {
    thread::spawn(move || {
        from.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut buf = [0u8; 16384];
        loop {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if !delay.latency.is_zero() && delay.before.swap(false, Ordering::SeqCst) {
                        thread::sleep(delay.latency);
                    }
                    if let Some(flag) = &delay.after {
                        flag.store(true, Ordering::SeqCst);
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    if !up.load(Ordering::SeqCst) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

// ----- a misbehaving peer ---------------------------------------------------------------------

/// What the peer does with each request, in turn (the last one repeats).
#[derive(Clone)]
pub enum Misbehaviour {
    /// Answers with this status and body.
    Answer(u16, Vec<u8>),
    /// Answers 200 with exactly these header lines (no etag unless given) and body.
    WithHeaders(Vec<String>, Vec<u8>),
    /// Answers with this status, these header lines and body.
    StatusWithHeaders(u16, Vec<String>, Vec<u8>),
    /// Reads the request, then resets the connection.
    Reset,
    /// Waits this long before answering 200 with the body.
    Slow(Duration, Vec<u8>),
    /// Says the body is this long, sends part of it, and closes.
    ShortBody(usize, Vec<u8>),
}

/// A loopback HTTP peer that answers every request as told and counts them.
pub struct Peer {
    pub port: u16,
    pub requests: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Peer {
    pub fn start(script: Vec<Misbehaviour>) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (requests.clone(), seen.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (count, log, script) = (count.clone(), log.clone(), script.clone());
                thread::spawn(move || loop {
                    let Some(head) = read_request(&mut stream) else { return };
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    log.lock().unwrap().push(head);
                    let step = script[n.min(script.len() - 1)].clone();
                    if !answer(&mut stream, step) {
                        return;
                    }
                });
            }
        });
        Peer { port, requests, seen }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Reads one request (head and body); `None` when the client went away.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let head = String::from_utf8_lossy(&faults::read_head(stream)?).into_owned();
    faults::read_body(stream, &head)?;
    Some(head)
}

/// Answers one request; false when the connection is finished.
fn answer(stream: &mut TcpStream, step: Misbehaviour) -> bool {
    let respond_with = |stream: &mut TcpStream, status: u16, headers: &[String], body: &[u8], length: usize| {
        let headers: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        let head = format!("HTTP/1.1 {status} X\r\ncontent-length: {length}\r\n{headers}\r\n");
        stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body)).is_ok()
    };
    let etag = ["etag: \"peer\"".to_string()];
    let respond = |stream: &mut TcpStream, status: u16, body: &[u8], length: usize| {
        respond_with(stream, status, &etag, body, length)
    };
    match step {
        Misbehaviour::Answer(status, body) => respond(stream, status, &body, body.len()),
        Misbehaviour::WithHeaders(headers, body) => respond_with(stream, 200, &headers, &body, body.len()),
        Misbehaviour::StatusWithHeaders(status, headers, body) => {
            respond_with(stream, status, &headers, &body, body.len())
        }
        Misbehaviour::Slow(delay, body) => {
            thread::sleep(delay);
            respond(stream, 200, &body, body.len())
        }
        Misbehaviour::ShortBody(length, body) => {
            respond(stream, 200, &body, length);
            false
        }
        Misbehaviour::Reset => {
            let _ = faults::socket_linger_zero(stream);
            false
        }
    }
}
