//! `objstore-results serve`, and the main command: the page and the collector, served until
//! interrupted.

use std::path::PathBuf;
use std::sync::Arc;

use crate::clock::now_ms;
use crate::conformance;
use crate::error::{AppError, AppResult};
use crate::report::table;
use crate::store;
use crate::views::Viewer;
use crate::web;

use super::{open_viewer, unknown, value_of};

/// Serves the page and the collector until interrupted. As the main command (`start`), first
/// fills an empty bucket with the conformance suites' run and prints the matrix, and takes
/// another port when the one asked for is taken. Tokens also come from
/// `OBJSTORE_COLLECTOR_TOKENS` (comma-separated), so that they need not appear in a process
/// listing.
pub fn run(args: &[String], start: bool) -> AppResult<()> {
    let mut config = web::tokens::Config::default();
    let mut cache = None;
    if let Ok(tokens) = std::env::var("OBJSTORE_EDITOR_TOKENS") {
        for token in tokens.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            config.editors.push(editor_token(token)?);
        }
    }
    if let Ok(tokens) = std::env::var("OBJSTORE_COLLECTOR_TOKENS") {
        config
            .tokens
            .extend(tokens.split(',').map(str::trim).filter(|t| !t.is_empty()).map(web::tokens::Token::any_pair));
    }
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--allow-anonymous-origins" && !start {
            config.anonymous_origins = true;
            continue;
        }
        if flag == "--auto-apply" {
            config.auto_apply = true;
            continue;
        }
        let value = value_of(flag, &mut args)?;
        let number = |what: &str| {
            value.parse::<u32>().map_err(|_| AppError::bad(format!("{what} {value:?} is not a whole number")))
        };
        match flag.as_str() {
            "--listen" => {
                config.listen =
                    value.parse().map_err(|_| AppError::bad(format!("--listen {value:?} is not an address:port")))?
            }
            "--cache" => cache = Some(PathBuf::from(value)),
            "--origin" if !start => {
                let origin = value.trim_end_matches('/');
                let (scheme, host) = origin.split_once("://").unwrap_or_default();
                if !matches!(scheme, "http" | "https") || host.is_empty() || host.contains(['/', '*', ' ']) {
                    return Err(AppError::bad(format!("--origin {value:?} is not an origin (scheme://host[:port])")));
                }
                config.origins.push(origin.to_string());
            }
            "--token" if !start => config.tokens.push(web::tokens::Token::any_pair(value)),
            "--editor-token" if !start => config.editors.push(editor_token(value)?),
            "--tokens" if !start => config.tokens.extend(web::tokens::read_tokens(std::path::Path::new(value))?),
            "--max-bytes" if !start => config.max_bytes = number("--max-bytes")? as usize,
            "--per-minute" if !start => config.per_minute = number("--per-minute")?,
            "--burst" if !start => config.burst = number("--burst")?,
            "--webhook" => {
                if !crate::model::is_web_address(value) || value.len() > 2048 {
                    return Err(AppError::bad(format!("--webhook {value:?} is not an http(s) URL")));
                }
                config.webhook = Some(value.clone());
            }
            "--checkpoint-every" => {
                let secs = number("--checkpoint-every")?;
                config.checkpoint_every = (secs > 0).then(|| std::time::Duration::from_secs(secs.into()));
            }
            "--triage-every" => {
                let secs = number("--triage-every")?;
                config.triage_every = (secs > 0).then(|| std::time::Duration::from_secs(secs.into()));
            }
            "--timeout-secs" if !start => {
                config.timeout = std::time::Duration::from_secs(number("--timeout-secs")?.into())
            }
            other => return Err(unknown(other)),
        }
    }
    // One secret twice (say any-pair and scoped) would make which scope holds depend on order.
    let mut secrets: Vec<&str> = config.tokens.iter().chain(&config.editors).map(|t| t.secret.as_str()).collect();
    secrets.sort_unstable();
    if secrets.windows(2).any(|w| w[0] == w[1]) {
        return Err(AppError::bad(
            "a token is given twice (--token, OBJSTORE_COLLECTOR_TOKENS, --tokens and --editor-token must not share one)",
        ));
    }
    if config.anonymous_origins {
        if config.origins.is_empty() {
            return Err(AppError::bad(
                "--allow-anonymous-origins lets pages on the --origin list post without a token: give an --origin",
            ));
        }
        if !config.tokens.is_empty() {
            eprintln!(
                "objstore-results: warning: --allow-anonymous-origins: posts claiming an allowed origin need no token, and any script can claim one"
            );
        }
    }
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: serving {}", target.describe());
    let viewer = open_viewer(&target, cache)?;
    let writer = store::Writer::open(&target)?;
    if start {
        fill_if_empty(&target, &viewer, &writer)?;
        let matrix = viewer.matrix(&Default::default())?;
        print!("\n{}\n", table::render(&matrix.view, now_ms()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::internal(e.to_string()))?;
    runtime
        .block_on(web::serve(config, writer, Arc::new(viewer), start, |addr| {
            println!("objstore-results: the page is at http://{addr}/ and runs are posted to http://{addr}/results")
        }))
        .map_err(|e| AppError::internal(format!("serving: {e}")))
}

/// An editor token (`--editor-token`, `OBJSTORE_EDITOR_TOKENS`): 16 or more printable
/// characters, as a tokens file's.
fn editor_token(secret: &str) -> AppResult<web::tokens::Token> {
    if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(AppError::bad("an editor token is 16 or more printable characters, no space"));
    }
    Ok(web::tokens::Token::any_pair(secret))
}

/// An empty bucket gets one real run: the conformance suites, run here on both mechanisms.
fn fill_if_empty(target: &store::Target, viewer: &Viewer, writer: &store::Writer) -> AppResult<()> {
    let matrix = viewer.matrix(&Default::default())?;
    if !matrix.view.rows.is_empty() {
        return Ok(());
    }
    println!(
        "objstore-results: {} bucket {:?} holds no runs; running the conformance suites",
        target.endpoint, target.bucket
    );
    let scratch = std::env::temp_dir().join(format!("objstore-results-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| AppError::internal(format!("creating {}: {e}", scratch.display())))?;
    let run = conformance::run(&scratch, "rust");
    let _ = std::fs::remove_dir_all(&scratch);
    let run = run?;
    let key = writer.store(&run)?;
    let s = &run.results.summary;
    println!("objstore-results: {} tests, {} passed, {} failed, stored as {key}", s.tests, s.passed, s.failed);
    viewer.relist()
}
