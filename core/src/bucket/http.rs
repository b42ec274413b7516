//! A bucket on an S3-compatible server (or, for the `rest` format, any HTTP server) over `ureq`:
//! keep-alive connections shared by the threads that fetch in parallel, SigV4 when there are
//! credentials, retries with backoff on what may pass (no answer, 429, 5xx; no sooner than a
//! `Retry-After` asks), a size cap on every body, and every attempt counted.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ureq::http::{Request, Response};
use ureq::Body;

use super::accounting::Accounting;
use super::connection::{Addressing, Connection};
use super::{listing, mime_words, sign};
use super::{
    Bucket, Fetched, ListPage, ListRequest, ListVersion, Metadata, Object, ObjectInfo, PutMode, PutOptions, Validators,
};
use crate::error::{Error, Result};
use crate::token::Token;

pub struct HttpBucket {
    agent: ureq::Agent,
    connection: Connection,
    accounting: Arc<Accounting>,
    /// The server's clock minus this machine's, in ms, as the last `Date` header said
    /// (`i64::MIN` before any did).
    clock_offset_ms: AtomicI64,
}

/// One answer: status, headers and the (capped) body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The largest listing page or error body read: a page of 1,000 keys with metadata is far less.
const OTHER_BODY_LIMIT: u64 = 64 * 1024 * 1024;

impl HttpBucket {
    pub fn new(connection: Connection, accounting: Arc<Accounting>) -> Result<HttpBucket> {
        let mut tls = ureq::tls::TlsConfig::builder().disable_verification(connection.insecure_tls);
        if let Some(path) = &connection.ca_file {
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certificates_in(path)?)));
        }
        let tls = tls.build();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(connection.timeout))
            .max_idle_connections(connection.concurrency * 2)
            .max_idle_connections_per_host(connection.concurrency * 2)
            .tls_config(tls)
            .build()
            .into();
        Ok(HttpBucket { agent, connection, accounting, clock_offset_ms: AtomicI64::new(i64::MIN) })
    }

    /// The URL of an object (`Some(key)`) or of the bucket itself, with its query.
    fn url(&self, key: Option<&str>, query: &[(&str, String)]) -> String {
        let location = &self.connection.location;
        let path = key.map(|k| format!("/{}", encode(k, false))).unwrap_or_default();
        let mut url = match (&location.bucket, self.connection.addressing) {
            (Some(bucket), Addressing::Virtual) if !self.connection.rest => {
                let (scheme, host) = location.endpoint.split_once("://").unwrap_or(("https", &location.endpoint));
                let path = if path.is_empty() { "/".to_string() } else { path };
                format!("{scheme}://{bucket}.{host}{path}")
            }
            (Some(bucket), _) => format!("{}/{}{path}", location.endpoint, encode(bucket, false)),
            (None, _) => format!("{}{path}", location.endpoint),
        };
        let mut pairs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={}", encode(v, true))).collect();
        pairs.sort();
        if !pairs.is_empty() {
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        url
    }

    /// Sends a request, retrying what may pass, and reads the answer. `kind` is what the
    /// request is counted as (LIST for a listing GET).
    fn send(
        &self,
        kind: &str,
        method: &str,
        url: &str,
        mut headers: Vec<(String, String)>,
        body: &[u8],
        token: &Token,
    ) -> Result<Answer> {
        if let Some(credentials) = &self.connection.credentials {
            let signature = sign::signature_headers(credentials, &self.connection.region, method, url, &headers, body)?;
            headers.extend(signature);
        }
        let what = format!("{method} {url}");
        // A POST that may have arrived must not be sent twice (503 and 429 say it was not
        // handled); the other methods are idempotent.
        let idempotent = method != "POST";
        let mut attempt = 0;
        loop {
            token.check(&what)?;
            let outcome = self.attempt(kind, method, url, &headers, body, &what);
            let retry = match &outcome {
                Ok(answer) if idempotent => matches!(answer.status, 429 | 500 | 502 | 503 | 504),
                Ok(answer) => matches!(answer.status, 429 | 503),
                Err((error, sent)) => error.is_offline() && (idempotent || !sent),
            };
            // A 429 or 503 may say when to come back: no sooner, and not within this request
            // when that is longer than a request may take.
            let asked = outcome.as_ref().ok().and_then(asked_wait);
            let asked_too_long = asked.is_some_and(|wait| wait > self.connection.timeout);
            if !retry || asked_too_long || attempt >= self.connection.retries {
                return match outcome {
                    Ok(answer) if answer.status >= 500 || answer.status == 429 => Err(remote_error(&what, &answer)),
                    Ok(answer) => Ok(answer),
                    Err((error, _)) => Err(error),
                };
            }
            token.sleep(backoff(self.connection.retry_base, attempt).max(asked.unwrap_or_default()));
            attempt += 1;
        }
    }

    /// One try. An error comes with whether the request may have reached the server.
    fn attempt(
        &self,
        kind: &str,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
        what: &str,
    ) -> std::result::Result<Answer, (Error, bool)> {
        let _waiting = self.accounting.begin();
        let mut builder = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let unreachable = |reason: String, sent: bool| (Error::Unreachable { what: what.to_string(), reason }, sent);
        let request =
            builder.body(body).map_err(|e| (Error::InvalidArgument(format!("{what} cannot be sent: {e}")), false))?;
        let response = match self.agent.run(request) {
            Ok(response) => response,
            Err(e) => {
                self.accounting.record(kind, 0, body.len() as u64, 0);
                let sent = !matches!(e, ureq::Error::ConnectionFailed | ureq::Error::HostNotFound);
                return Err(unreachable(e.to_string(), sent));
            }
        };
        let status = response.status().as_u16();
        // Options.maxObjectBytes is about objects; listing pages and error bodies have their own.
        let limit = if kind == "GET" { self.connection.max_object_bytes } else { OTHER_BODY_LIMIT };
        let (answer, cut) = read_answer(response, limit, method == "HEAD");
        if let Some(offset) =
            answer.header("date").and_then(|date| crate::time::offset_from_now_ms(date, SystemTime::now()))
        {
            self.clock_offset_ms.store(offset, Ordering::Relaxed);
        }
        // What crossed the wire is counted, also for a body refused or cut off part way.
        self.accounting.record(kind, status, body.len() as u64, answer.body.len() as u64);
        match cut {
            // A GET says so in its answer (the object is there, only too large to use).
            None if answer.body.len() as u64 > limit && kind != "GET" => Err((
                Error::RemoteData {
                    what: what.to_string(),
                    reason: format!("the body is larger than the {limit}-byte limit of a listing page or error body"),
                },
                true,
            )),
            None => Ok(answer),
            Some(e) => {
                Err((Error::Unreachable { what: what.to_string(), reason: format!("reading the body: {e}") }, true))
            }
        }
    }

    fn object_headers(&self, answer: &Answer) -> Metadata {
        let prefix = &self.connection.metadata_prefix;
        answer
            .headers
            .iter()
            .filter_map(|(k, v)| {
                let k = k.to_ascii_lowercase();
                k.strip_prefix(prefix.as_str()).map(|name| (name.to_string(), mime_words::decode(v)))
            })
            .collect()
    }

    fn check(&self, what: &str, answer: Answer) -> Result<Answer> {
        if (200..300).contains(&answer.status) {
            return Ok(answer);
        }
        let mut error = remote_error(what, &answer);
        if let Error::Remote { status: 401 | 403, detail, .. } = &mut error {
            if self.connection.credentials_not_found {
                let lead = if detail.is_empty() { "" } else { "; " };
                detail.push_str(&format!("{lead}{CREDENTIALS_NOT_FOUND}"));
            }
        }
        Err(error)
    }
}

impl Bucket for HttpBucket {
    fn describe(&self) -> String {
        self.url(None, &[])
    }

    fn clock_offset_ms(&self) -> Option<i64> {
        Some(self.clock_offset_ms.load(Ordering::Relaxed)).filter(|o| *o != i64::MIN)
    }

    fn get(&self, key: &str, validators: &Validators, token: &Token) -> Result<Fetched> {
        let url = self.url(Some(key), &[]);
        let mut headers = Vec::new();
        if let Some(etag) = &validators.etag {
            headers.push(("if-none-match".to_string(), etag.clone()));
        } else if let Some(date) = &validators.last_modified {
            headers.push(("if-modified-since".to_string(), date.clone()));
        }
        let answer = self.send("GET", "GET", &url, headers, &[], token)?;
        match answer.status {
            304 => Ok(Fetched::NotModified),
            404 if no_such_key(&answer) => Ok(Fetched::Missing),
            200..=299 if answer.body.len() as u64 > self.connection.max_object_bytes => Ok(Fetched::TooLarge {
                etag: answer.header("etag").map(str::to_string),
                limit: self.connection.max_object_bytes,
            }),
            _ => {
                let answer = self.check(&format!("GET {url}"), answer)?;
                Ok(Fetched::Found(Object {
                    etag: answer.header("etag").map(str::to_string),
                    last_modified: answer.header("last-modified").map(str::to_string),
                    metadata: self.object_headers(&answer),
                    body: answer.body,
                }))
            }
        }
    }

    fn head(&self, key: &str, token: &Token) -> Result<Option<(ObjectInfo, Metadata)>> {
        let url = self.url(Some(key), &[]);
        let answer = self.send("HEAD", "HEAD", &url, Vec::new(), &[], token)?;
        if answer.status == 404 {
            return Ok(None);
        }
        let answer = self.check(&format!("HEAD {url}"), answer)?;
        let info = ObjectInfo {
            key: key.to_string(),
            etag: answer.header("etag").unwrap_or_default().to_string(),
            last_modified: answer.header("last-modified").map(crate::time::http_date_to_iso).unwrap_or_default(),
            size: answer.header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0),
            metadata: None,
        };
        Ok(Some((info, self.object_headers(&answer))))
    }

    fn put(&self, key: &str, body: &[u8], options: &PutOptions, token: &Token) -> Result<Option<String>> {
        let url = self.url(Some(key), &[]);
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        for (name, value) in &options.metadata {
            headers.push((format!("{}{name}", self.connection.metadata_prefix), mime_words::encode(value)));
        }
        match &options.mode {
            PutMode::Overwrite => {}
            PutMode::Update(etag) => headers.push(("if-match".into(), etag.clone())),
            PutMode::Create => headers.push(("if-none-match".into(), "*".into())),
        }
        let method = if options.new_record && self.connection.rest { "POST" } else { "PUT" };
        let answer = self.send(method, method, &url, headers, body, token)?;
        let answer = self.check(&format!("{method} {url}"), answer)?;
        Ok(answer.header("etag").map(str::to_string))
    }

    fn delete(&self, key: &str, token: &Token) -> Result<()> {
        let url = self.url(Some(key), &[]);
        let answer = self.send("DELETE", "DELETE", &url, Vec::new(), &[], token)?;
        if answer.status == 404 && no_such_key(&answer) {
            return Ok(());
        }
        self.check(&format!("DELETE {url}"), answer).map(|_| ())
    }

    fn list_page(&self, request: &ListRequest, token: &Token) -> Result<ListPage> {
        // Names come back URL-encoded: XML cannot carry every character a name may hold (most
        // control characters), and a server that ignores this sends them as they are.
        let mut query: Vec<(&str, String)> = vec![("prefix", request.prefix.clone()), ("encoding-type", "url".into())];
        if let Some(d) = &request.delimiter {
            query.push(("delimiter", d.clone()));
        }
        if let Some(n) = request.max_keys {
            query.push(("max-keys", n.to_string()));
        }
        if self.connection.list_metadata {
            query.push(("metadata", "true".into()));
        }
        match request.version {
            ListVersion::V2 => {
                query.push(("list-type", "2".into()));
                if let Some(token) = &request.continuation {
                    query.push(("continuation-token", token.clone()));
                } else if let Some(after) = &request.start_after {
                    query.push(("start-after", after.clone()));
                }
            }
            ListVersion::V1 => {
                if let Some(marker) = request.continuation.as_ref().or(request.start_after.as_ref()) {
                    query.push(("marker", marker.clone()));
                }
            }
        }
        let url = self.url(None, &query);
        let what = format!("GET {url}");
        let answer = self.check(&what, self.send("LIST", "GET", &url, Vec::new(), &[], token)?)?;
        listing::parse_list(&answer.body, request.version).map_err(|reason| Error::RemoteData { what, reason })
    }
}

/// The certificates of a PEM file (Options.caFile).
fn certificates_in(path: &str) -> Result<Vec<ureq::tls::Certificate<'static>>> {
    let bad = |reason: String| Error::InvalidArgument(format!("Options.caFile {path:?}: {reason}"));
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certificates: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => Some(c.to_owned()),
            _ => None,
        })
        .collect();
    if certificates.is_empty() {
        return Err(bad("no certificate in the file".into()));
    }
    Ok(certificates)
}

/// The answer with up to `limit + 1` bytes of its body (one more than allowed tells an oversized
/// body), and the error that cut the body off, if one did (the bytes before it are kept).
fn read_answer(mut response: Response<Body>, limit: u64, head: bool) -> (Answer, Option<std::io::Error>) {
    use std::io::Read;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let mut body = Vec::new();
    let cut = if head {
        None
    } else {
        let reader = response.body_mut().with_config().limit(u64::MAX).reader();
        reader.take(limit.saturating_add(1)).read_to_end(&mut body).err()
    };
    (Answer { status, headers, body }, cut)
}

/// A 404 about the object, not about the bucket (`NoSuchBucket`) or the address: S3 says
/// `NoSuchKey`; a server without S3 error bodies (a rest server) says nothing more.
fn no_such_key(answer: &Answer) -> bool {
    match listing::parse_error(&answer.body) {
        Some((code, _)) => code == "NoSuchKey",
        None => true,
    }
}

/// Where sync looks for credentials, in order, for the message of a refused unsigned request.
const CREDENTIALS_NOT_FOUND: &str = "no credentials were found, so the request went unsigned; they are read from \
    Options.accessKeyId and Options.secretAccessKey, else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else the \
    AWS_PROFILE (or default) profile of ~/.aws/credentials and ~/.aws/config (or AWS_SHARED_CREDENTIALS_FILE and \
    AWS_CONFIG_FILE); for a public bucket give Options.anonymous: true";

fn remote_error(what: &str, answer: &Answer) -> Error {
    let detail = match listing::parse_error(&answer.body) {
        Some((code, message)) if message.is_empty() => code,
        Some((code, message)) => format!("{code}: {message}"),
        None => String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)]).trim().to_string(),
    };
    let detail = match asked_wait(answer) {
        Some(wait) => format!("{detail}; it asks to be tried again in {} s", wait.as_secs()),
        None => detail,
    };
    Error::Remote { what: what.to_string(), status: answer.status, detail }
}

/// The wait a 429 or 503 asks for in its `Retry-After` (seconds, or an HTTP date), if any. A
/// date is read on the server's clock: against the answer's own `Date` (this machine's clock
/// may be minutes off), else against this machine's.
fn asked_wait(answer: &Answer) -> Option<Duration> {
    if !matches!(answer.status, 429 | 503) {
        return None;
    }
    let value = answer.header("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let now =
        answer.header("date").and_then(|date| httpdate::parse_http_date(date).ok()).unwrap_or_else(SystemTime::now);
    Some(at.duration_since(now).unwrap_or_default())
}

/// Exponential backoff with a little jitter, so that clients retrying together spread out.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1 << attempt.min(10));
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    exp + exp.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

/// Percent-encodes all but RFC 3986's unreserved characters; `/` too when `slash` is set (query
/// values must be encoded exactly as they are signed).
fn encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b as char),
            b'/' if !slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bucket(options: serde_json::Value) -> HttpBucket {
        let text = |name: &str| options.get(name).and_then(|v| v.as_str()).map(str::to_string);
        let connection = Connection {
            location: super::super::connection::Location {
                endpoint: text("endpoint").unwrap(),
                bucket: text("bucket"),
                prefix: String::new(),
            },
            rest: false,
            addressing: if text("addressing").as_deref() == Some("virtual") {
                Addressing::Virtual
            } else {
                Addressing::Path
            },
            region: "us-east-1".into(),
            metadata_prefix: "x-amz-meta-".into(),
            credentials: None,
            credentials_not_found: false,
            timeout: Duration::from_secs(10),
            retries: 3,
            retry_base: Duration::from_millis(100),
            concurrency: 8,
            list_version: ListVersion::V2,
            list_metadata: false,
            conditional_writes: None,
            max_object_bytes: 1 << 24,
            insecure_tls: false,
            ca_file: None,
        };
        HttpBucket::new(connection, Arc::default()).unwrap()
    }

    #[test]
    fn builds_path_and_virtual_host_urls() {
        let path = bucket(json!({"bucket": "b", "endpoint": "http://127.0.0.1:9000"}));
        assert_eq!(path.url(Some("a b/c+d"), &[]), "http://127.0.0.1:9000/b/a%20b/c%2Bd");
        let query = [("prefix", "p/".to_string()), ("delimiter", "/".to_string())];
        assert_eq!(path.url(None, &query), "http://127.0.0.1:9000/b?delimiter=%2F&prefix=p%2F");
        let virt = bucket(json!({"bucket": "b", "endpoint": "https://s3.example.com", "addressing": "virtual"}));
        assert_eq!(virt.url(Some("k"), &[]), "https://b.s3.example.com/k");
        assert_eq!(virt.url(None, &[]), "https://b.s3.example.com/");
    }

    #[test]
    fn backoff_grows() {
        let base = Duration::from_millis(10);
        assert!(backoff(base, 0) >= base && backoff(base, 0) < base * 2);
        assert!(backoff(base, 3) >= base * 8);
    }

    #[test]
    fn a_retry_after_is_seconds_or_a_date_on_a_429_or_503_only() {
        let answer = |status, value: &str| Answer {
            status,
            headers: vec![("Retry-After".to_string(), value.to_string())],
            body: Vec::new(),
        };
        assert_eq!(asked_wait(&answer(503, "7")), Some(Duration::from_secs(7)));
        assert_eq!(asked_wait(&answer(429, " 0 ")), Some(Duration::ZERO));
        let in_a_minute = crate::time::http_date(SystemTime::now() + Duration::from_secs(60));
        let wait = asked_wait(&answer(503, &in_a_minute)).unwrap();
        assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60), "{wait:?}");
        let a_minute_ago = crate::time::http_date(SystemTime::now() - Duration::from_secs(60));
        assert_eq!(asked_wait(&answer(503, &a_minute_ago)), Some(Duration::ZERO));
        // A server whose clock is an hour behind this machine's: its date is read on its clock.
        let server_now = SystemTime::now() - Duration::from_secs(3600);
        let mut behind = answer(503, &crate::time::http_date(server_now + Duration::from_secs(5)));
        behind.headers.push(("Date".to_string(), crate::time::http_date(server_now)));
        assert_eq!(asked_wait(&behind), Some(Duration::from_secs(5)));
        assert_eq!(asked_wait(&answer(503, "soon")), None);
        assert_eq!(asked_wait(&answer(500, "7")), None);
    }
}
