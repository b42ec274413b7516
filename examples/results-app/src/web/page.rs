//! The matrix page: three static files (no build step) and the JSON views they read. Every
//! answer says `nosniff`; the page's Content-Security-Policy allows scripts, styles and
//! requests from this server only, and no inline script.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::limiter::Limiter;
use super::tokens::{reader_scope, Token};
use crate::error::{AppError, AppResult, Kind};
use crate::model::is_scoped;
use crate::report::summary::{summarize, Format, Subject, Summary};
use crate::views::filter::MatrixFilter;
use crate::views::shapes::{
    CiRunView, CommitView, DiffView, LatestView, MatrixView, PairHistoryView, RunView, SearchView, TestPageView,
    TreeView,
};
use crate::views::{View, Viewer};

/// The page's own files, served as they are.
const ASSETS: [(&str, &str, &str); 10] = [
    ("/", "text/html; charset=utf-8", include_str!("../../page/index.html")),
    // The script's modules: the router, the helpers every view shares, and the views.
    ("/app.js", "text/javascript; charset=utf-8", include_str!("../../page/app.js")),
    ("/core.js", "text/javascript; charset=utf-8", include_str!("../../page/core.js")),
    ("/matrix.js", "text/javascript; charset=utf-8", include_str!("../../page/matrix.js")),
    ("/runs.js", "text/javascript; charset=utf-8", include_str!("../../page/runs.js")),
    ("/tests.js", "text/javascript; charset=utf-8", include_str!("../../page/tests.js")),
    ("/tree.js", "text/javascript; charset=utf-8", include_str!("../../page/tree.js")),
    ("/triage.js", "text/javascript; charset=utf-8", include_str!("../../page/triage.js")),
    ("/app.css", "text/css; charset=utf-8", include_str!("../../page/app.css")),
    // Named by the page, so that a browser does not ask for /favicon.ico (a 404 on every load).
    ("/favicon.svg", "image/svg+xml", include_str!("../../page/favicon.svg")),
];

/// The policy of every answer: nothing but this server's own script, style and data.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Views a client may ask for per minute, after a burst: a page load asks for a few; a loop
/// over made-up keys is held back before it holds up everybody's views.
const VIEWS_PER_MINUTE: u32 = 1200;
const VIEW_BURST: u32 = 200;

/// The page and its views; `tokens`, the collector's, name the scope of a job's own CI run in
/// `/api/summary` (a scoped token's runs are its own).
pub fn router(
    viewer: Arc<Viewer>,
    tokens: Arc<[Token]>,
    editor_tokens: Arc<[Token]>,
    webhook: Option<Arc<str>>,
) -> Router {
    let both = (tokens.clone(), editor_tokens);
    let (editors, confirmers, owners) = (both.clone(), both.clone(), both);
    let limiter = Arc::new(Limiter::new(VIEWS_PER_MINUTE, VIEW_BURST));
    let api = Router::new()
        .route("/api/matrix", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, matrix, q)))
        .route("/api/tree", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, tree, q)))
        .route("/api/history", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, history, q)))
        .route("/api/latest", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, latest, q)))
        .route("/api/run", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, run, q)))
        .route("/api/cirun", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, ci_run, q)))
        .route("/api/diff", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, diff, q)))
        .route("/api/flaky", get(|State(v): State<Arc<Viewer>>| answer(v, |v, _| v.flaky_tests(), Params::new())))
        .route("/api/failures", get(|State(v): State<Arc<Viewer>>| answer(v, |v, _| v.failures(), Params::new())))
        .route("/api/test", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, test_page, q)))
        .route("/api/search", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, search, q)))
        .route("/api/commit", get(|State(v): State<Arc<Viewer>>, Query(q): Query<Params>| answer(v, commit, q)))
        .route("/api/quarantine", get(|State(v): State<Arc<Viewer>>| answer(v, |v, _| v.quarantine(), Params::new())))
        .route(
            "/api/codeowners",
            post(move |State(v): State<Arc<Viewer>>, headers: HeaderMap, body: axum::body::Bytes| {
                super::editing::keep_codeowners(v, owners.clone(), headers, body)
            }),
        )
        .route(
            "/api/proposals",
            get(|State(v): State<Arc<Viewer>>| answer(v, |v, _| v.lifecycle(), Params::new())).post(
                move |State(v): State<Arc<Viewer>>, headers: HeaderMap, body: axum::body::Bytes| {
                    super::editing::confirm_proposal(v, confirmers.clone(), webhook.clone(), headers, body)
                },
            ),
        )
        .route(
            "/api/rules",
            get(|State(v): State<Arc<Viewer>>| answer(v, |v, _| v.rules(), Params::new())).post(
                move |State(v): State<Arc<Viewer>>, headers: HeaderMap, body: axum::body::Bytes| {
                    super::editing::edit_rules(v, editors.clone(), headers, body)
                },
            ),
        )
        .route(
            "/api/summary",
            get(move |State(v): State<Arc<Viewer>>, headers: HeaderMap, Query(mut q): Query<Params>| {
                let scoped = scoped_run(&tokens, &headers, &mut q);
                async move {
                    match scoped {
                        Ok(()) => answer(v, summary, q).await,
                        Err(refused) => *refused,
                    }
                }
            }),
        )
        .layer(middleware::from_fn_with_state(limiter, limited))
        .with_state(viewer);
    let mut router = Router::new();
    for (path, content_type, body) in ASSETS {
        router = router.route(path, get(move |headers: HeaderMap| async move { asset(&headers, content_type, body) }));
    }
    router.merge(api)
}

/// A 429 with `Retry-After` for a client past its rate of views.
async fn limited(
    State(limiter): State<Arc<Limiter>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    match limiter.take(client.ip()) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            let mut refused =
                AppError::new(Kind::TooMany, "too many views from this address; try again later").into_response();
            refused.headers_mut().insert(RETRY_AFTER, HeaderValue::from(wait.as_secs().max(1)));
            refused
        }
    }
}

type Params = HashMap<String, String>;

fn matrix(v: &Viewer, q: &Params) -> View<MatrixView> {
    let given = |name: &str| q.get(name).filter(|v| !v.is_empty()).cloned();
    v.matrix(&MatrixFilter {
        after: given("after"),
        platform: given("platform"),
        browser: given("browser"),
        suite: given("suite"),
        status: given("status"),
        class: given("class"),
        commit: given("commit"),
        label: given("label"),
        branch: given("branch"),
    })
}

fn ci_run(v: &Viewer, q: &Params) -> View<CiRunView> {
    v.ci_run_page(required(q, "run")?)
}

/// Tests down the side: `open` names the nodes opened, joined by newlines.
fn tree(v: &Viewer, q: &Params) -> View<TreeView> {
    let open: Vec<String> =
        q.get("open").map(|o| o.split('\n').filter(|p| !p.is_empty()).map(String::from).collect()).unwrap_or_default();
    v.tree(&open, q.get("branch").map(String::as_str).filter(|b| !b.is_empty()))
}

fn history(v: &Viewer, q: &Params) -> View<PairHistoryView> {
    v.history(required(q, "platform")?, required(q, "browser")?, q.get("after").map(String::as_str))
}

fn latest(v: &Viewer, q: &Params) -> View<LatestView> {
    v.latest(q.get("after").map(String::as_str))
}

fn run(v: &Viewer, q: &Params) -> View<RunView> {
    v.run(required(q, "key")?)
}

fn diff(v: &Viewer, q: &Params) -> View<DiffView> {
    v.diff(required(q, "from")?, required(q, "to")?)
}

/// A test's page: on the pair given, else on every pair that runs it.
fn test_page(v: &Viewer, q: &Params) -> View<TestPageView> {
    let given = |field: &str| q.get(field).map(String::as_str).filter(|v| !v.is_empty());
    let pair = match (given("platform"), given("browser")) {
        (Some(platform), Some(browser)) => Some((platform, browser)),
        (None, None) => None,
        _ => return Err(AppError::bad("a test's page on one pair needs both platform and browser")),
    };
    v.test_page(pair, required(q, "suite")?, required(q, "name")?)
}

fn commit(v: &Viewer, q: &Params) -> View<CommitView> {
    v.commit(required(q, "commit")?, q.get("base").map(String::as_str).filter(|b| !b.is_empty()))
}

/// A job reading through the collector names its CI run by its id; a scoped token's run is
/// that id within the token's scope (`<id>@<scope>`), as the token's posts anchored it.
fn scoped_run(tokens: &[Token], headers: &HeaderMap, q: &mut Params) -> Result<(), Box<Response>> {
    let scope = reader_scope(tokens, headers)?;
    if let (Some(scope), Some(run)) = (scope, q.get_mut("run")) {
        if !run.is_empty() && !is_scoped(run) {
            *run = scope.run_name(run);
        }
    }
    Ok(())
}

/// `summary`'s text, for a job that reads through the collector: `run` or `commit` (and
/// `base`), `format` (`markdown` or `text`) and `page` (the page's URL, for its links).
fn summary(v: &Viewer, q: &Params) -> View<Summary> {
    let given = |name: &str| q.get(name).filter(|v| !v.is_empty()).cloned();
    let subject = match (given("run"), given("commit")) {
        (Some(run), None) => Subject::Run(run),
        (None, Some(commit)) => Subject::Commit { commit, base: given("base") },
        _ => return Err(AppError::bad("name a run (run=ID) or a commit (commit=C), one of them")),
    };
    let format = match q.get("format").map(String::as_str) {
        None | Some("text") => Format::Text,
        Some("markdown") => Format::Markdown,
        Some(other) => return Err(AppError::bad(format!("format {other:?} is not markdown or text"))),
    };
    let page = given("page");
    if let Some(page) = page.as_deref().filter(|p| !(p.starts_with("http://") || p.starts_with("https://"))) {
        return Err(AppError::bad(format!("page {page:?} is not an http(s) URL")));
    }
    summarize(v, &subject, crate::clock::now_ms(), page.as_deref(), format)
}

fn search(v: &Viewer, q: &Params) -> View<SearchView> {
    v.search(required(q, "q")?)
}

fn required<'q>(q: &'q Params, name: &str) -> AppResult<&'q str> {
    q.get(name).map(String::as_str).ok_or_else(|| AppError::bad(format!("the parameter {name:?} is missing")))
}

/// Builds a view off the async threads (the library's calls wait for their answers).
async fn answer<T: Serialize + Send + 'static>(
    viewer: Arc<Viewer>,
    build: fn(&Viewer, &Params) -> View<T>,
    params: Params,
) -> Response {
    let built = tokio::task::spawn_blocking(move || build(&viewer, &params)).await;
    let mut response = match built {
        Ok(Ok(view)) => (StatusCode::OK, Json(view)).into_response(),
        Ok(Err(refused)) => refused.into_response(),
        Err(e) => AppError::internal(format!("the view failed: {e}")).into_response(),
    };
    response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A static file, revalidated by its etag (the build's content hash).
fn asset(headers: &HeaderMap, content_type: &'static str, body: &'static str) -> Response {
    let etag = format!("\"{:016x}\"", crate::model::short_hash(body.as_bytes()));
    let cached = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| v == etag);
    let mut response = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(CONTENT_TYPE, content_type)], body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(ETAG, HeaderValue::from_str(&etag).expect("hex is a header value"));
    response
}
