//! The collector's settings and who may post: its tokens, each scoped to the pairs it may write,
//! read from the command line or a file, and the check a post's headers pass or fail.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::header::{AUTHORIZATION, ORIGIN, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::{AppError, AppResult, Kind};
use crate::model::{check_pair_pattern, pair_matches, RunScope};

/// The collector's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// Origins (`https://host[:port]`) whose pages may post; no other gets CORS headers.
    pub origins: Vec<String>,
    /// Bearer tokens, each with the pairs it may write; with any configured, every post needs
    /// one (an `Origin` header proves nothing outside a browser). None configured means none
    /// needed.
    pub tokens: Vec<Token>,
    /// Pages on an allowed origin may post without a token (`--allow-anonymous-origins`): a
    /// page cannot hold a secret, but any script can then post by claiming such an origin.
    pub anonymous_origins: bool,
    /// The largest body taken (413 past it).
    pub max_bytes: usize,
    /// Posts per minute per client address, after a burst of `burst`.
    pub per_minute: u32,
    pub burst: u32,
    /// The longest a post may take, from its first byte to its answer (408 past it), so that
    /// a client sending slowly, or not at all, is cut off rather than waited for.
    pub timeout: Duration,
    /// The triage lifecycle: how often it is weighed (none: never), where its events are
    /// posted, and whether a proposal applies itself without a person's confirmation.
    pub triage_every: Option<Duration>,
    /// How often a checkpoint of the runs is written (none: never).
    pub checkpoint_every: Option<Duration>,
    pub webhook: Option<String>,
    pub auto_apply: bool,
    /// Tokens that may edit the failure rules and confirm proposals (`--editor-token`); none
    /// configured, a token of every pair may.
    pub editors: Vec<Token>,
}

/// A bearer token and the pairs it may write.
#[derive(Debug, Clone)]
pub struct Token {
    pub secret: String,
    /// `platform/runtime` patterns, `*` standing for any run of characters within a segment
    /// (`linux-*/python-*`); `None`, any pair.
    pub pairs: Option<Vec<String>>,
}

impl Token {
    /// A token that may write any pair (`--token`, `OBJSTORE_COLLECTOR_TOKENS`).
    pub fn any_pair(secret: &str) -> Token {
        Token { secret: secret.to_string(), pairs: None }
    }

    /// The scope of the CI runs this token posts to: its own when it may write some pairs only
    /// (another team's token cannot join them); none for a token of every pair.
    pub fn scope(&self) -> Option<RunScope> {
        self.pairs.as_deref().map(RunScope::of)
    }

    /// Why this token may not write the pair, if it may not.
    pub(super) fn refuses(&self, platform: &str, browser: &str) -> Option<String> {
        let pairs = self.pairs.as_ref()?;
        (!pairs.iter().any(|pattern| pair_matches(pattern, platform, browser)))
            .then(|| format!("this token may write {} only, not {platform}/{browser}", pairs.join(" and ")))
    }
}

/// The tokens of a tokens file (`serve --tokens FILE`): a line per token, the token then the
/// `platform/runtime` patterns it may write, separated by spaces; `#` starts a comment. A token
/// is 16 or more printable characters.
pub fn read_tokens(path: &std::path::Path) -> AppResult<Vec<Token>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AppError::internal(format!("reading the tokens file {}: {e}", path.display())))?;
    let mut tokens = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("the tokens file {}, line {}", path.display(), n + 1);
        let mut fields = line.split('#').next().unwrap_or_default().split_whitespace();
        let Some(secret) = fields.next() else { continue };
        if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AppError::bad(format!("{}: a token is 16 or more printable characters", at())));
        }
        let pairs: Vec<String> = fields.map(str::to_string).collect();
        if pairs.is_empty() {
            return Err(AppError::bad(format!(
                "{}: name the pairs the token may write (platform/runtime, * for any run of characters)",
                at()
            )));
        }
        for pattern in &pairs {
            check_pair_pattern(pattern).map_err(|why| AppError::bad(format!("{}: {why}", at())))?;
        }
        tokens.push(Token { secret: secret.to_string(), pairs: Some(pairs) });
    }
    if tokens.is_empty() {
        return Err(AppError::bad(format!("the tokens file {} names no token", path.display())));
    }
    Ok(tokens)
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            origins: Vec::new(),
            tokens: Vec::new(),
            anonymous_origins: false,
            max_bytes: 1024 * 1024,
            per_minute: 600,
            burst: 100,
            timeout: Duration::from_secs(30),
            triage_every: Some(Duration::from_secs(300)),
            checkpoint_every: Some(Duration::from_secs(600)),
            webhook: None,
            auto_apply: false,
            editors: Vec::new(),
        }
    }
}

/// Who may post. An `Origin` not on the list is refused (a page of another site). With tokens
/// configured, a post needs one of them whatever `Origin` it claims, since a script can claim
/// any; only `anonymous_origins` lets allowed pages in without one. Answers the token shown.
pub(super) fn admit<'a>(config: &'a Config, headers: &HeaderMap) -> Result<Option<&'a Token>, Box<Response>> {
    let mut allowed_page = false;
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !config.origins.iter().any(|o| o == origin) {
            return Err(Box::new(
                AppError::new(Kind::Forbidden, format!("origin {origin:?} may not post results here")).into_response(),
            ));
        }
        allowed_page = true;
    }
    if config.tokens.is_empty() || (allowed_page && config.anonymous_origins) {
        return Ok(None);
    }
    let Some(given) = bearer(headers) else {
        return Err(Box::new(unauthorized("a bearer token is required (Authorization: Bearer <token>)")));
    };
    matching(&config.tokens, given).map(Some).ok_or_else(|| Box::new(not_accepted()))
}

/// The scope a reader's bearer token names (a job reading its own CI run through the
/// collector): none when it shows none, or when its token may write every pair; a token this
/// collector does not accept is refused, rather than read as none.
pub(super) fn reader_scope(tokens: &[Token], headers: &HeaderMap) -> Result<Option<RunScope>, Box<Response>> {
    match bearer(headers) {
        Some(given) if !tokens.is_empty() => {
            matching(tokens, given).map(Token::scope).ok_or_else(|| Box::new(not_accepted()))
        }
        _ => Ok(None),
    }
}

/// Who may change the team's documents through the page's API: the failure rules and the
/// lifecycle's confirmations (`writers_too` false), or a job's CODEOWNERS (`writers_too`).
/// With editor tokens configured (`--editor-token`), those; a job's CODEOWNERS also takes a
/// token that may write every pair. With none, a token that may write every pair (`--token`,
/// or `*/*` in a tokens file). With no token at all, nobody: anyone who can reach the page
/// could otherwise rewrite them.
pub(super) fn editor(
    tokens: &[Token],
    editors: &[Token],
    headers: &HeaderMap,
    writers_too: bool,
) -> Result<(), Box<Response>> {
    if tokens.is_empty() && editors.is_empty() {
        let why =
            "editing from the page needs a token: serve with --editor-token (or --token), then give it on the page";
        return Err(Box::new(AppError::new(Kind::Forbidden, why).into_response()));
    }
    let Some(given) = bearer(headers) else {
        return Err(Box::new(unauthorized("a bearer token is required (Authorization: Bearer <token>)")));
    };
    if matching(editors, given).is_some() {
        return Ok(());
    }
    let every_pair = |t: &Token| t.pairs.as_ref().is_none_or(|pairs| pairs.iter().any(|p| p == "*/*"));
    match matching(tokens, given) {
        Some(token) if every_pair(token) && (editors.is_empty() || writers_too) => Ok(()),
        Some(token) if every_pair(token) => Err(Box::new(
            AppError::new(Kind::Forbidden, "this collector takes edits with its editor token (--editor-token) only")
                .into_response(),
        )),
        Some(_) => Err(Box::new(
            AppError::new(Kind::Forbidden, "this token may write some pairs only; editing needs one of every pair")
                .into_response(),
        )),
        None => Err(Box::new(not_accepted())),
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
}

/// The configured token `given` is. Every token is compared, so that timing does not tell
/// which one nearly matched.
fn matching<'a>(tokens: &'a [Token], given: &str) -> Option<&'a Token> {
    tokens.iter().fold(None, |found, t| {
        let equal = constant_time_eq(t.secret.as_bytes(), given.as_bytes());
        found.or(equal.then_some(t))
    })
}

fn not_accepted() -> Response {
    unauthorized("the bearer token is not one this collector accepts")
}

fn unauthorized(message: &str) -> Response {
    let mut refused = AppError::new(Kind::Unauthorized, message).into_response();
    refused.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    refused
}

/// Compares without an early exit, so that timing does not tell how much of a token matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
