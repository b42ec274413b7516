//! `objstore-results post FILE...`: reports read as runs (every file before anything is
//! stored), then stored in the bucket or sent to a collector.

use std::time::Duration;

use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::ingest::{self, Labels};
use crate::model::{new_run_id, Run};
use crate::store::{self, Encoded};

use super::{unknown, value_of, USAGE};

/// Reads every file first, so that one bad file writes nothing; then stores each run.
pub fn run(args: &[String]) -> AppResult<()> {
    let mut labels = Labels::from_env(&|name| std::env::var(name).ok());
    let mut collector = std::env::var("OBJSTORE_COLLECTOR").ok().filter(|c| !c.is_empty());
    let mut codeowners: Option<String> = None;
    let mut files = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--runtime" => &mut labels.runtime,
            "--platform" => &mut labels.platform,
            "--version" => &mut labels.version,
            "--suite" => &mut labels.suite,
            "--run" => &mut labels.ci.run,
            "--commit" => &mut labels.ci.commit,
            "--branch" => &mut labels.ci.branch,
            "--url" => &mut labels.ci.url,
            "--job" => &mut labels.ci.job,
            "--label" => {
                let given = value_of("--label", &mut args)?;
                labels.extra.push(ingest::parse_label(given)?);
                continue;
            }
            "--collector" => &mut collector,
            "--codeowners" => &mut codeowners,
            "--rerun" => {
                labels.ci.rerun = true;
                continue;
            }
            flag if flag.starts_with("--") => return Err(unknown(flag)),
            file => {
                files.push(file.to_string());
                continue;
            }
        };
        *slot = Some(value_of(arg, &mut args)?.clone());
    }
    labels.check()?;
    if files.is_empty() {
        return Err(AppError::bad(USAGE));
    }
    labels.fill_ci(&|name| std::env::var(name).ok())?;
    if labels.ci.rerun && labels.ci.run.is_none() {
        return Err(AppError::bad(
            "--rerun posts later attempts of a run's tests: name the run (--run ID or OBJSTORE_RESULTS_RUN, or post in its CI run)",
        ));
    }
    // One call is one run, as `--help` says: files posted together and in no CI run share a
    // run of their own, anchored as a CI run is.
    if labels.ci.run.is_none() && files.len() > 1 {
        labels.ci.run = Some(format!("post-{}", new_run_id()));
    }
    // Each report is encoded as soon as it is read: its parsed form (ten times its text) is
    // gone before the next file is read, and before anything is stored.
    let reports = files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).map_err(|e| AppError::internal(format!("{file}: {e}")))?;
            let run = ingest::ingest(file, &bytes, &labels.for_file(file), None)?;
            Ok(Read { counts: counts(&run), run: Encoded::of(&run) })
        })
        .collect::<AppResult<Vec<_>>>()?;
    if codeowners.is_some() && collector.is_some() {
        return Err(AppError::bad(
            "--codeowners keeps the repository's CODEOWNERS in the bucket: it needs OBJSTORE_RESULTS, not a collector",
        ));
    }
    let writer = match &collector {
        None => {
            let target = store::Target::from_env()?;
            eprintln!("objstore-results: storing runs in {}", target.describe());
            // Checked and kept before any run is stored: a bad file stores nothing.
            if let Some(file) = &codeowners {
                super::codeowners::set(&target, std::path::Path::new(file))?;
                eprintln!("objstore-results: CODEOWNERS kept from {file}");
            }
            Some(store::Writer::open(&target)?)
        }
        Some(url) => {
            eprintln!("objstore-results: posting runs to the collector at {}", collector_url(url));
            None
        }
    };
    for (file, Read { counts, mut run }) in files.iter().zip(reports) {
        let key = match (&writer, &collector) {
            (Some(writer), _) => writer.store_encoded(run)?,
            (None, Some(url)) => send_to_collector(url, run.json()).map_err(|e| e.context(file))?,
            (None, None) => unreachable!("a writer or a collector"),
        };
        println!("{file}: {counts} stored as {key}");
    }
    Ok(())
}

/// A report read, as it waits to be stored.
struct Read {
    /// What `post` says of it.
    counts: String,
    run: Encoded,
}

/// `3 tests (2 passed, 1 failed, 0 skipped; suites crud, sql)`.
fn counts(run: &Run) -> String {
    let summary = &run.results.summary;
    format!(
        "{} tests ({} passed, {} failed, {} skipped; suites {})",
        summary.tests,
        summary.passed,
        summary.failed,
        summary.skipped,
        run.suites().join(", ")
    )
}

/// The collector's address for runs: a URL naming only the server (`http://host:port`) means
/// its `/results`.
pub fn collector_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let path_starts = trimmed.split_once("://").map_or(0, |(scheme, _)| scheme.len() + 3);
    match trimmed[path_starts..].contains('/') {
        true => url.to_string(),
        false => format!("{trimmed}/results"),
    }
}

/// How long `post` waits before each new try of a post the collector failed (a 5xx, or no
/// answer): four tries in all, over about seven seconds.
const RETRY_WAITS: [Duration; 3] = [Duration::from_millis(500), Duration::from_secs(2), Duration::from_secs(5)];

/// Posts a run (its JSON) to a collector (`OBJSTORE_COLLECTOR_TOKEN` is sent as its bearer
/// token); returns the key it stored the run under. A post the collector failed is sent again
/// with the same `Idempotency-Key`, so that it is stored once however many tries it took.
pub fn send_to_collector(url: &str, run: &str) -> AppResult<String> {
    let url = &collector_url(url);
    let once = new_run_id();
    let mut waits = RETRY_WAITS.iter();
    loop {
        match send_once(url, run, &once) {
            Err(Try::Again(why)) => match waits.next() {
                Some(wait) => {
                    eprintln!("objstore-results: {why}; trying again in {} ms", wait.as_millis());
                    std::thread::sleep(*wait);
                }
                None => return Err(AppError::unavailable(why)),
            },
            Err(Try::Never(refused)) => return Err(refused),
            Ok(key) => return Ok(key),
        }
    }
}

/// Why a try did not store the run: for now (another may), or for good.
enum Try {
    Again(String),
    Never(AppError),
}

fn send_once(url: &str, run: &str, once: &str) -> Result<String, Try> {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut request = agent.post(url).header("content-type", "application/json").header("idempotency-key", once);
    if let Some(token) = std::env::var("OBJSTORE_COLLECTOR_TOKEN").ok().filter(|t| !t.is_empty()) {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut response = request.send(run.as_bytes()).map_err(|e| Try::Again(format!("posting to {url}: {e}")))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let hint = match status {
        401 | 403 => " (OBJSTORE_COLLECTOR_TOKEN is sent as the bearer token)",
        _ => "",
    };
    let said = format!(
        "the collector at {url} answered {status}: {}{hint}",
        answer["error"].as_str().unwrap_or("no error message")
    );
    match (status, answer["key"].as_str()) {
        (201, Some(key)) => Ok(key.to_string()),
        (500..=599, _) => Err(Try::Again(said)),
        _ => Err(Try::Never(AppError::refused(said))),
    }
}
