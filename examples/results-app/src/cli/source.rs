//! Where a reading command (`summary`, `gate`, `quarantine list`) reads: the bucket, or a
//! collector (`--collector URL`, else `OBJSTORE_COLLECTOR`), whose own views it asks
//! (`/api/quarantine`, `/api/summary`) with `OBJSTORE_COLLECTOR_TOKEN` as its bearer token, so
//! that a CI job needs no bucket credentials. A read never creates a bucket's directory: one
//! that is not there has no runs and an empty quarantine.

use std::time::Duration;

use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::quarantine::{Entry, Quarantine};
use crate::store::{self, Target};

/// How long a read through a collector may take (its views sync its cache first).
const COLLECTOR_READ: Duration = Duration::from_secs(60);

pub enum Source {
    Bucket(Target),
    /// A `file://` bucket whose directory is not there: no runs, an empty quarantine, and
    /// nothing created by reading it.
    NoBucket(Target, std::path::PathBuf),
    /// The collector's root URL (`http://host:port`, without `/results`).
    Collector(String),
}

impl Source {
    /// The collector `flag` or `OBJSTORE_COLLECTOR` names, else the bucket.
    pub fn for_reading(flag: Option<String>) -> AppResult<Source> {
        let collector = flag.or_else(|| std::env::var("OBJSTORE_COLLECTOR").ok()).filter(|c| !c.is_empty());
        if let Some(url) = collector {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(AppError::bad(format!("the collector {url:?} is not an http(s) URL")));
            }
            let root = url.trim_end_matches('/').trim_end_matches("/results").to_string();
            return Ok(Source::Collector(root));
        }
        let target = Target::from_env()?;
        Ok(match target.missing_directory() {
            Some(dir) => Source::NoBucket(target, dir),
            None => Source::Bucket(target),
        })
    }

    /// What a command says it reads.
    pub fn describe(&self) -> String {
        match self {
            Source::Bucket(target) => target.describe(),
            Source::NoBucket(target, dir) => format!(
                "{}, which is not there ({} does not exist; set OBJSTORE_RESULTS to the bucket, or \
                 OBJSTORE_COLLECTOR or --collector to read through a collector)",
                target.describe(),
                dir.display()
            ),
            Source::Collector(url) => format!("the collector at {url}"),
        }
    }

    /// The quarantine's entries (one GET of the bucket's, or of the collector's view).
    pub fn quarantine(&self) -> AppResult<Quarantine> {
        match self {
            Source::Bucket(target) => Ok(store::documents::load(target)?.0),
            Source::NoBucket(..) => Ok(Quarantine::default()),
            Source::Collector(url) => {
                let view = get(url, "/api/quarantine", &[])?;
                let entries = view["entries"].as_array().cloned().unwrap_or_default();
                let entries = entries
                    .into_iter()
                    .map(serde_json::from_value::<Entry>)
                    .collect::<Result<_, _>>()
                    .map_err(|e| AppError::refused(format!("the collector at {url} sent no quarantine: {e}")))?;
                Ok(Quarantine { entries, history: Vec::new() })
            }
        }
    }
}

/// A view of the collector at `root`: its JSON, or its refusal as an error that says what to do.
pub fn get(root: &str, path: &str, query: &[(&str, &str)]) -> AppResult<Value> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(COLLECTOR_READ)).build().into();
    let url = format!("{root}{path}");
    let mut request = agent.get(&url);
    for (name, value) in query {
        request = request.query(*name, *value);
    }
    if let Some(token) = std::env::var("OBJSTORE_COLLECTOR_TOKEN").ok().filter(|t| !t.is_empty()) {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut response = request.call().map_err(|e| AppError::unavailable(format!("reading {url}: {e}")))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let said = answer["error"].as_str().unwrap_or("no error message");
    match status {
        200 => Ok(answer),
        404 if answer.is_null() => {
            Err(AppError::refused(format!("the collector at {root} has no {path}: is it an objstore-results serve?")))
        }
        401 | 403 => Err(AppError::refused(format!(
            "the collector at {root} answered {status}: {said} (OBJSTORE_COLLECTOR_TOKEN is sent as the bearer token)"
        ))),
        404 => Err(AppError::not_found(said.to_string())),
        _ => Err(AppError::refused(format!("the collector at {root} answered {status}: {said}"))),
    }
}
