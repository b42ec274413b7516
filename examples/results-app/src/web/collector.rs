//! `objstore-results serve`: the collector (the seed's proxy). Pages on allowed origins post a
//! run as JSON or as an HTML form; with tokens configured, every poster shows one (a script can
//! claim any origin), unless pages were explicitly let in without one. Each post is checked, capped,
//! rate-limited per client, and stored create-only through the library: no post overwrites a
//! stored result, and a post the bucket did not take leaves nothing behind but its error.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequest, Multipart, Request, State};
use axum::http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::error::{AppError, AppResult, Kind};
use crate::ingest::{ingest, Labels};
use crate::model::{check_label, Ci, Run};
use crate::store::{Encoded, Writer};

use super::limiter::Limiter;
use super::tokens::{admit, Config, Token};

struct App {
    config: Config,
    writer: Arc<Writer>,
    limiter: Limiter,
}

/// `POST /results`, with CORS for the allowed origins.
pub fn router(config: Config, writer: Writer) -> Router {
    let origins: Vec<HeaderValue> = config.origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::POST])
        .allow_headers([CONTENT_TYPE, AUTHORIZATION, HeaderName::from_static(IDEMPOTENCY_KEY)])
        .expose_headers([RETRY_AFTER])
        .max_age(Duration::from_secs(600));
    let limiter = Limiter::new(config.per_minute, config.burst);
    let limit = DefaultBodyLimit::max(config.max_bytes);
    let app = Arc::new(App { config, writer: Arc::new(writer), limiter });
    Router::new()
        .route(
            "/results",
            post(post_results).fallback(|| async {
                let mut refused = AppError::new(Kind::MethodNotAllowed, "POST a run to /results").into_response();
                refused.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
                refused
            }),
        )
        .layer(limit)
        .layer(cors)
        .with_state(app)
}

async fn post_results(
    State(app): State<Arc<App>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    // The limit comes first, so that guessing tokens is limited too.
    if let Err(wait) = app.limiter.take(client.ip()) {
        let mut refused =
            AppError::new(Kind::TooMany, "too many posts from this address; try again later").into_response();
        refused.headers_mut().insert(RETRY_AFTER, HeaderValue::from(wait.as_secs().max(1)));
        return refused;
    }
    // One line per post on stderr, as a server's access log: who, what was stored or why not.
    let token = match admit(&app.config, request.headers()) {
        Ok(token) => token.cloned(),
        Err(refused) => {
            let why =
                if refused.status() == StatusCode::FORBIDDEN { "an origin not allowed" } else { "no token it takes" };
            access_log(format_args!("{} refused ({}): {why}", client.ip(), refused.status().as_u16()));
            return *refused;
        }
    };
    match store_post(&app, token, request).await {
        Ok((key, tests, failed)) => {
            access_log(format_args!("{} posted {key} ({tests} tests, {failed} failed)", client.ip()));
            (StatusCode::CREATED, Json(json!({"key": key}))).into_response()
        }
        Err(refused) => {
            access_log(format_args!("{} refused ({}): {}", client.ip(), refused.status().as_u16(), refused.message));
            refused.into_response()
        }
    }
}

/// One line of the access log on stderr, in one write: `eprintln!` writes each piece of its
/// format on its own (stderr is unbuffered), a dozen system calls a post under load.
fn access_log(line: std::fmt::Arguments) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("objstore-results: {line}\n").as_bytes());
}

/// An admitted post (`token`, the one it showed) stored, once its key is good and its run was
/// read in time and is inside the token's pairs: its key, and its tests and failures.
async fn store_post(app: &App, token: Option<Token>, request: Request) -> AppResult<(String, u64, u64)> {
    let once = idempotency_key(request.headers())?;
    // Reading the post has a deadline (a client sending slowly or not at all is cut off); the
    // write that follows has the library's own timeouts, and is never cut off half-way.
    // The parse has the same deadline: it runs on a thread of its own, which the timeout below
    // cannot stop, so it looks at the clock itself.
    let deadline = Instant::now() + app.config.timeout;
    let run = tokio::time::timeout(app.config.timeout, read_run(&app.config, request, deadline))
        .await
        .map_err(|_| AppError::new(Kind::Timeout, "the post did not arrive in time"))??;
    // A token scoped to some pairs writes nothing outside them, and joins only its own runs.
    if let Some(why) = token.as_ref().and_then(|t| t.refuses(&run.platform, &run.browser)) {
        return Err(AppError::new(Kind::Forbidden, why).at("platform"));
    }
    let scope = token.as_ref().and_then(Token::scope);
    if run.ci.rerun && run.ci.run.is_none() {
        return Err(AppError::bad("a rerun holds later attempts of a run's tests: name its run (ci.run)").at("ci.run"));
    }
    let (tests, failed) = (run.results.summary.tests, run.results.summary.failed);
    let writer = app.writer.clone();
    // Encoded first, so that only the run's text (not its parsed form) waits for the write.
    let stored = tokio::task::spawn_blocking(move || {
        let encoded = Encoded::of(&run);
        let encoded = match &once {
            Some(key) => encoded.keyed(key),
            None => encoded,
        };
        let encoded = match scope {
            Some(scope) => encoded.scoped(scope),
            None => encoded,
        };
        drop(run);
        writer.store_encoded(encoded)
    })
    .await
    .map_err(|_| AppError::internal("the write stopped unexpectedly"))??;
    Ok((stored, tests, failed))
}

/// The post's `Idempotency-Key`, if it has one: 1 to 255 visible ASCII characters. A post sent
/// again with the same key (and the same report) is stored once, and answered as the first was.
fn idempotency_key(headers: &HeaderMap) -> AppResult<Option<String>> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    match value.to_str() {
        Ok(key) if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(Some(key.to_string()))
        }
        _ => {
            Err(AppError::bad("the Idempotency-Key header must be 1 to 255 visible ASCII characters")
                .at("Idempotency-Key"))
        }
    }
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The run a post carries: a JSON body (a run or a CTRF report), or a form (urlencoded or
/// multipart) with fields platform, browser, version, suite and report.
async fn read_run(config: &Config, request: Request, deadline: Instant) -> AppResult<Run> {
    let kind =
        request.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
    let too_large = || AppError::new(Kind::TooLarge, format!("the body is over the {}-byte limit", config.max_bytes));
    if kind.starts_with("multipart/form-data") {
        // The router's DefaultBodyLimit caps what the multipart reader takes.
        let mut form = Multipart::from_request(request, &()).await.map_err(|e| AppError::bad(e.body_text()))?;
        let mut fields = HashMap::new();
        while let Some(field) = form.next_field().await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                AppError::bad(e.body_text())
            }
        })? {
            let name = field.name().unwrap_or_default().to_string();
            let value = field.bytes().await.map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    AppError::bad(e.body_text()).at(&name)
                }
            })?;
            fields.insert(name, value);
        }
        let (report, labels) = form_report(fields)?;
        return ingest_aside("the report", report, labels, deadline).await.map_err(form_field);
    }
    let body = to_bytes(request.into_body(), config.max_bytes).await.map_err(|e| {
        // Only the cap is a 413; a body cut off or badly chunked is the client's 400.
        if format!("{e:?}").contains("LengthLimitError") {
            too_large()
        } else {
            AppError::bad(format!("the body could not be read: {e}"))
        }
    })?;
    if kind.starts_with("application/json") {
        return ingest_aside("the body", body, Labels::default(), deadline).await.map_err(|mut e| {
            e.field = Some("report".into());
            e
        });
    }
    if kind.starts_with("application/x-www-form-urlencoded") {
        let pairs: Vec<(String, String)> = form_pairs(&body).map_err(|e| e.context("the form is not urlencoded"))?;
        let (report, labels) = form_report(pairs.into_iter().map(|(k, v)| (k, Bytes::from(v))).collect())?;
        return ingest_aside("the report", report, labels, deadline).await.map_err(form_field);
    }
    Err(AppError::new(
        Kind::Unsupported,
        "post application/json, application/x-www-form-urlencoded or multipart/form-data",
    ))
}

/// A form's run: each label checked on its own (a 400 names the field), then the report.
/// Reads a report into a run on a thread of the blocking pool: parsing is CPU work, which on
/// the runtime's own threads would hold up every other answer (the page's too), and which the
/// post's deadline can only cut off from there.
async fn ingest_aside(what: &'static str, report: Bytes, labels: Labels, deadline: Instant) -> AppResult<Run> {
    let read = tokio::task::spawn_blocking(move || ingest(what, &report, &labels, Some(deadline)))
        .await
        .unwrap_or_else(|_| Err(AppError::internal(format!("reading {what} stopped unexpectedly"))));
    match read {
        Err(_) if Instant::now() > deadline => {
            Err(AppError::new(Kind::Timeout, format!("{what} was not read in the time a post has")))
        }
        read => read,
    }
}

/// A form's report and the labels its fields give.
fn form_report(mut fields: HashMap<String, Bytes>) -> AppResult<(Bytes, Labels)> {
    let mut text = |name: &str| -> AppResult<Option<String>> {
        match fields.remove(name) {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes.to_vec())
                .map(Some)
                .map_err(|_| AppError::bad(format!("{name} is not UTF-8")).at(name)),
        }
    };
    let labels = Labels {
        platform: text("platform")?,
        runtime: text("browser")?,
        version: text("version")?,
        suite: text("suite")?,
        default_suite: None,
        ci: Ci {
            run: text("run")?,
            commit: text("commit")?,
            branch: text("branch")?,
            url: text("url")?,
            job: text("job")?,
            file: None,
            rerun: text("rerun")?.is_some_and(|v| v != "0" && v != "false"),
        },
        extra: Vec::new(),
    };
    // The form's fields are the CI labels' names without `ci.`.
    labels.ci.check().map_err(|mut e| {
        e.field = e.field.and_then(|f| f.strip_prefix("ci.").map(str::to_string)).filter(|f| f != "file");
        e
    })?;
    for (field, value) in [
        ("platform", &labels.platform),
        ("browser", &labels.runtime),
        ("version", &labels.version),
        ("suite", &labels.suite),
    ] {
        if let Some(value) = value {
            check_label(field, value)?;
        }
    }
    let report = fields.remove("report").ok_or_else(|| AppError::bad("the form has no report field").at("report"))?;
    if labels.runtime.is_none() {
        return Err(AppError::bad("the form has no browser field (the runtime, as python-3.11)").at("browser"));
    }
    Ok((report, labels))
}

/// A form's report that could not be read: the label at fault, or else the report.
fn form_field(mut e: AppError) -> AppError {
    if !matches!(e.field.as_deref(), Some("platform" | "browser" | "version" | "suite")) {
        e.field = Some("report".into());
    }
    e
}

/// `application/x-www-form-urlencoded` pairs, percent-decoded. Strict where `serde_urlencoded`
/// is lenient: a bad %-escape or a field that is not UTF-8 is refused, not stored mangled.
fn form_pairs(body: &[u8]) -> AppResult<Vec<(String, String)>> {
    let text = std::str::from_utf8(body).map_err(|_| AppError::bad("not UTF-8"))?;
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

fn percent_decode(text: &str) -> AppResult<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.ok_or_else(|| AppError::bad(format!("a bad %-escape at byte {i}")))?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| AppError::bad("a field is not UTF-8"))
}
