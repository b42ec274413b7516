//! A relay in front of a real server that breaks requests on purpose, one HTTP exchange at a
//! time: while a fault is set, every request meets it; with none, bytes pass unchanged. It
//! counts the requests clients sent it, so a client's own accounting can be checked. And the
//! rows of `target/bench/faults.json`, which the fault tests (the core's and the results
//! app's, which includes this file) fill. Self-contained for that reason.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

/// What every request meets while it is set.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Requests go to the server and answers come back.
    None,
    /// The connection is reset once the request's head arrived, before its body.
    ResetBeforeBody,
    /// The request reaches the server (a write lands), then the connection is reset before
    /// the answer comes back.
    ResetAfterRequest,
    /// The answer's head and half its body come back (half its head, when it has no body), then
    /// the connection closes.
    CutAnswer,
    /// Answered here with this status and an S3 error body (`SlowDown` for 503), with a
    /// `Retry-After` header of this many seconds when given; nothing reaches the server.
    Status(u16, Option<u32>),
    /// Held this long, then passed on.
    Spike(Duration),
    /// Read and never answered (the connection stays open until the fault ends).
    BlackHole,
    /// A listing's answer comes back cut in the middle, with a length that says so (valid
    /// HTTP, broken XML); other requests pass.
    TruncatedListing,
    /// A listing's answer comes back with its XML mangled; other requests pass.
    MalformedListing,
}

/// The matrix's faults, by the names their rows carry (the unresolvable host is not a relay's).
pub fn every_fault() -> [(&'static str, Fault); 10] {
    [
        ("reset before the request body", Fault::ResetBeforeBody),
        ("reset after the request", Fault::ResetAfterRequest),
        ("answer cut mid-body", Fault::CutAnswer),
        ("listing truncated", Fault::TruncatedListing),
        ("listing malformed", Fault::MalformedListing),
        ("503 SlowDown storm with Retry-After", Fault::Status(503, Some(1))),
        ("503 SlowDown storm", Fault::Status(503, None)),
        ("500s", Fault::Status(500, None)),
        ("2-second latency spike", Fault::Spike(Duration::from_secs(2))),
        ("black hole", Fault::BlackHole),
    ]
}

/// Which requests a targeted fault meets: by method and path (`PUT`, `/bucket/prefix/k3`).
pub type Targets = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

pub struct FaultRelay {
    pub port: u16,
    fault: Arc<Mutex<Fault>>,
    /// A fault for some requests only, met instead of `fault` by those it targets.
    targeted: Arc<Mutex<Option<(Targets, Fault)>>>,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FaultRelay {
    pub fn start(target: &str) -> FaultRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let target = target.trim_start_matches("http://").to_string();
        let relay = FaultRelay {
            port,
            fault: Arc::new(Mutex::new(Fault::None)),
            targeted: Arc::default(),
            requests: Arc::default(),
            stop: Arc::default(),
        };
        let (fault, targeted, requests, stop) =
            (relay.fault.clone(), relay.targeted.clone(), relay.requests.clone(), relay.stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let faults = Faults { all: fault.clone(), targeted: targeted.clone() };
                        let (requests, stop, target) = (requests.clone(), stop.clone(), target.clone());
                        thread::spawn(move || serve(client, &target, &faults, &requests, &stop));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        relay
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }

    /// `fault` for the requests `targets` names (by method and path), until cleared with
    /// `None`; the others meet the fault [`FaultRelay::set`] set.
    pub fn set_for(&self, targeted: Option<(Targets, Fault)>) {
        *self.targeted.lock().unwrap() = targeted;
    }

    /// Requests clients sent through this relay so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FaultRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The faults a connection's requests meet.
struct Faults {
    all: Arc<Mutex<Fault>>,
    targeted: Arc<Mutex<Option<(Targets, Fault)>>>,
}

impl Faults {
    /// The fault a request whose head starts `head` meets now.
    fn of(&self, head: &str) -> Fault {
        let mut line = head.lines().next().unwrap_or_default().split(' ');
        let (method, path) = (line.next().unwrap_or_default(), line.next().unwrap_or_default());
        let path = path.split('?').next().unwrap_or_default();
        match &*self.targeted.lock().unwrap() {
            Some((targets, fault)) if targets(method, path) => fault.clone(),
            _ => self.all.lock().unwrap().clone(),
        }
    }
}

/// One client connection: its requests in turn, each meeting the fault set when it arrived.
fn serve(mut client: TcpStream, target: &str, faults: &Faults, requests: &AtomicUsize, stop: &AtomicBool) {
    let _ = client.set_nodelay(true);
    let mut server: Option<TcpStream> = None;
    loop {
        let Some(head) = read_head(&mut client) else { return };
        requests.fetch_add(1, Ordering::SeqCst);
        let now = faults.of(&String::from_utf8_lossy(&head));
        let fault = &faults.all;
        if now == Fault::ResetBeforeBody {
            return reset(&client);
        }
        let text = String::from_utf8_lossy(&head).to_string();
        let Some(body) = read_body(&mut client, &text) else { return };
        let listing = is_listing(&text);
        match &now {
            Fault::Status(status, retry_after) => {
                let code = if *status == 503 { "SlowDown" } else { "InternalError" };
                let body = match text.starts_with("HEAD ") {
                    true => String::new(), // an answer to HEAD has no body
                    false => {
                        format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>injected</Message></Error>")
                    }
                };
                let retry = retry_after.map(|s| format!("retry-after: {s}\r\n")).unwrap_or_default();
                let answer = format!(
                    "HTTP/1.1 {status} Injected\r\ncontent-type: application/xml\r\ncontent-length: {}\r\n{retry}\r\n{body}",
                    body.len()
                );
                if client.write_all(answer.as_bytes()).is_err() {
                    return;
                }
                continue;
            }
            Fault::BlackHole => {
                while *fault.lock().unwrap() == Fault::BlackHole && !stop.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(10));
                }
                return;
            }
            Fault::Spike(hold) => thread::sleep(*hold),
            _ => {}
        }
        let answer = match exchange(&mut server, target, &head, &body, text.starts_with("HEAD ")) {
            Some(answer) => answer,
            None => return reset(&client),
        };
        let sent = match &now {
            Fault::ResetAfterRequest => return reset(&client),
            Fault::CutAnswer => {
                // Half the body, or, for an answer without one (a PUT's, a HEAD's), half the head.
                let (head, body) = answer.split_at(answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
                let _ = match body.is_empty() {
                    true => client.write_all(&head[..head.len() / 2]),
                    false => client.write_all(head).and_then(|_| client.write_all(&body[..body.len() / 2])),
                };
                return;
            }
            Fault::TruncatedListing if listing => {
                client.write_all(&rewrite_body(&answer, |b| b[..b.len() / 2].to_vec()))
            }
            Fault::MalformedListing if listing => client
                .write_all(&rewrite_body(&answer, |b| String::from_utf8_lossy(b).replace("</Key>", "</Ke>").into())),
            _ => client.write_all(&answer),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Sends one request to the server (on the kept connection, or a new one) and reads its whole
/// answer; `None` when the server cannot be reached.
fn exchange(
    server: &mut Option<TcpStream>,
    target: &str,
    head: &[u8],
    body: &[u8],
    head_only: bool,
) -> Option<Vec<u8>> {
    for _ in 0..2 {
        if server.is_none() {
            let stream = TcpStream::connect(target).ok()?;
            let _ = stream.set_nodelay(true);
            *server = Some(stream);
        }
        let stream = server.as_mut().unwrap();
        if stream.write_all(head).and_then(|_| stream.write_all(body)).is_ok() {
            if let Some(answer) = read_answer(stream, head_only) {
                return Some(answer);
            }
        }
        *server = None; // the kept connection had closed: once more on a new one
    }
    None
}

fn reset(stream: &TcpStream) {
    let _ = socket_linger_zero(stream);
}

/// An HTTP message's head, up to its blank line; `None` when the peer went away.
pub fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A message's body, as long as its `content-length` says.
pub fn read_body(stream: &mut TcpStream, head: &str) -> Option<Vec<u8>> {
    let length = header(head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    Some(body)
}

/// A server's whole answer, its body read by length or chunk by chunk.
fn read_answer(stream: &mut TcpStream, head_only: bool) -> Option<Vec<u8>> {
    let head = read_head(stream)?;
    let text = String::from_utf8_lossy(&head).to_string();
    let status: u16 = text.split_whitespace().nth(1)?.parse().ok()?;
    let mut answer = head;
    if head_only || status == 204 || status == 304 {
        return Some(answer);
    }
    if header(&text, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let line = read_line(stream)?;
            let size = usize::from_str_radix(String::from_utf8_lossy(&line).trim(), 16).ok()?;
            answer.extend_from_slice(&line);
            let mut chunk = vec![0u8; size + 2];
            stream.read_exact(&mut chunk).ok()?;
            answer.extend_from_slice(&chunk);
            if size == 0 {
                return Some(answer);
            }
        }
    }
    answer.extend(read_body(stream, &text)?);
    Some(answer)
}

fn read_line(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        line.push(byte[0]);
    }
    Some(line)
}

/// Whether a request asks for a listing: a GET of the bucket with list parameters.
fn is_listing(head: &str) -> bool {
    let target = head.split_whitespace().nth(1).unwrap_or("");
    head.starts_with("GET ")
        && (target.contains("list-type=") || target.contains("prefix=") || target.contains("delimiter="))
}

/// The answer with its body changed by `change` and its length set to match (a chunked answer
/// is sent back as one with a length).
fn rewrite_body(answer: &[u8], change: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let mut body = answer[split..].to_vec();
    if header(&head, "transfer-encoding").is_some() {
        body = dechunk(&body);
    }
    let body = change(&body);
    let mut lines: Vec<&str> = head
        .trim_end()
        .lines()
        .filter(|l| {
            let name = l.split(':').next().unwrap_or("").trim().to_ascii_lowercase();
            name != "content-length" && name != "transfer-encoding"
        })
        .collect();
    let length = format!("content-length: {}", body.len());
    lines.push(&length);
    let mut out = format!("{}\r\n\r\n", lines.join("\r\n")).into_bytes();
    out.extend(body);
    out
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
    out
}

// ----- the figures ----------------------------------------------------------------------------

/// One row of the matrix.
#[derive(Default)]
pub struct Row {
    pub fault: String,
    pub scenario: &'static str,
    pub tried: usize,
    pub acknowledged: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub corrupt: usize,
    /// From the fault's end to the writer drained (or the reader listed); `None` where it
    /// never ends.
    pub recovery_ms: Option<u128>,
    /// What the library said while the fault lasted.
    pub said: String,
}

/// Puts `rows` into `target/bench/faults.json` in place of the file's rows of the same fault and
/// scenario (each fault test adds its own).
pub fn record(rows: &[Row]) {
    static FILE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = FILE.lock().unwrap_or_else(|p| p.into_inner());
    // The workspace's target folder, from whichever crate's tests include this file.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().find(|dir| dir.join("Cargo.lock").exists());
    let out = root.expect("a workspace above the crate").join("target/bench/faults.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let ours: Vec<(&str, &str)> = rows.iter().map(|r| (r.fault.as_str(), r.scenario)).collect();
    let mut all: Vec<Value> = std::fs::read(&out)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|file| file["faults"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|row| {
            let row = (row["fault"].as_str().unwrap_or_default(), row["scenario"].as_str().unwrap_or_default());
            !ours.contains(&row)
        })
        .collect();
    all.extend(rows.iter().map(Row::json));
    std::fs::write(&out, serde_json::to_string_pretty(&json!({"faults": all})).unwrap()).unwrap();
}

impl Row {
    fn json(&self) -> Value {
        json!({"fault": self.fault, "scenario": self.scenario, "tried": self.tried,
            "acknowledged": self.acknowledged, "lost": self.lost, "duplicated": self.duplicated,
            "corrupt": self.corrupt, "recovery_ms": self.recovery_ms, "said": self.said})
    }
}

/// Closing with SO_LINGER 0 sends a TCP reset instead of a clean close.
pub fn socket_linger_zero(stream: &TcpStream) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt on a socket we own, with a correctly sized option value.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
