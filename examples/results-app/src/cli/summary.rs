//! `objstore-results summary`: a CI run's or a commit's results as Markdown or text.

use std::path::PathBuf;

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::ingest;
use crate::report::summary;

use super::source::{self, Source};
use super::{open_viewer, unknown, value_of};

/// `objstore-results summary`: a CI run's or a commit's results as Markdown or text.
pub fn run(args: &[String]) -> AppResult<()> {
    let (mut run, mut commit, mut base, mut page, mut cache) = (None, None, None, None, None);
    let mut collector = None;
    let mut format = summary::Format::Text;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--markdown" {
            format = summary::Format::Markdown;
            continue;
        }
        let value = value_of(flag, &mut args)?.clone();
        match flag.as_str() {
            "--run" => run = Some(value),
            "--commit" => commit = Some(value),
            "--base" => base = Some(value),
            "--page" => {
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    return Err(AppError::bad(format!("--page {value:?} is not an http(s) URL")));
                }
                page = Some(value)
            }
            "--cache" => cache = Some(PathBuf::from(value)),
            "--collector" => collector = Some(value),
            other => return Err(unknown(other)),
        }
    }
    if base.is_some() && commit.is_none() {
        return Err(AppError::bad("--base compares with --commit: name the commit too"));
    }
    let subject = match (commit, run) {
        (Some(commit), None) => summary::Subject::Commit { commit, base },
        (None, run) => summary::Subject::Run(
            run.or_else(|| std::env::var("OBJSTORE_RESULTS_RUN").ok().filter(|r| !r.is_empty()))
                .or_else(|| ingest::ci::detect(&|name| std::env::var(name).ok()).run)
                .ok_or_else(|| {
                    AppError::bad(
                        "name a run (--run ID, or OBJSTORE_RESULTS_RUN, or run in CI) or a commit (--commit C)",
                    )
                })?,
        ),
        (Some(_), Some(_)) => return Err(AppError::bad("name a run or a commit, not both")),
    };
    let source = Source::for_reading(collector)?;
    eprintln!("objstore-results: reading {}", source.describe());
    let text = match &source {
        Source::NoBucket(_, dir) => return Err(AppError::bad(format!("no runs: {} does not exist", dir.display()))),
        Source::Bucket(target) => {
            let viewer = open_viewer(target, cache)?;
            summary::summarize(&viewer, &subject, now_ms(), page.as_deref(), format)?.view.text
        }
        Source::Collector(url) => {
            let mut query = vec![("format", if format == summary::Format::Markdown { "markdown" } else { "text" })];
            match &subject {
                summary::Subject::Run(run) => query.push(("run", run)),
                summary::Subject::Commit { commit, base } => {
                    query.push(("commit", commit));
                    query.extend(base.as_deref().map(|b| ("base", b)));
                }
            }
            query.extend(page.as_deref().map(|p| ("page", p)));
            let answer = source::get(url, "/api/summary", &query)?;
            answer["text"].as_str().unwrap_or_default().to_string()
        }
    };
    print!("{text}");
    Ok(())
}
