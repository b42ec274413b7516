//! `objstore-results summary`: a CI run's or a commit's results as Markdown or text.

use std::path::PathBuf;

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::ingest;
use crate::report::summary;
use crate::store;

use super::{open_viewer, unknown, value_of};

/// `objstore-results summary`: a CI run's or a commit's results as Markdown or text.
pub fn run(args: &[String]) -> AppResult<()> {
    let (mut run, mut commit, mut base, mut page, mut cache) = (None, None, None, None, None);
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
            other => return Err(unknown(other)),
        }
    }
    if base.is_some() && commit.is_none() {
        return Err(AppError::bad("--base compares with --commit: name the commit too"));
    }
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: reading {}", target.describe());
    if let Some(dir) = target.missing_directory() {
        return Err(AppError::bad(format!("no runs: {} does not exist", dir.display())));
    }
    let viewer = open_viewer(&target, cache)?;
    let text = match (commit, run) {
        (Some(commit), None) => {
            let mut view = viewer.commit(&commit, base.as_deref())?;
            let (quarantine, requests) = store::quarantine::load(&target)?;
            view.add_requests(requests);
            summary::of_commit(&view, &quarantine, now_ms(), page.as_deref(), format)
        }
        (None, run) => {
            let run = run
                .or_else(|| std::env::var("OBJSTORE_RESULTS_RUN").ok().filter(|r| !r.is_empty()))
                .or_else(|| ingest::ci::detect(&|name| std::env::var(name).ok()).run)
                .ok_or_else(|| {
                    AppError::bad(
                        "name a run (--run ID, or OBJSTORE_RESULTS_RUN, or run in CI) or a commit (--commit C)",
                    )
                })?;
            let mut view = viewer.ci_run(&run)?;
            let (quarantine, requests) = store::quarantine::load(&target)?;
            view.add_requests(requests);
            summary::of_run(&view, &quarantine, now_ms(), page.as_deref(), format)
        }
        (Some(_), Some(_)) => return Err(AppError::bad("name a run or a commit, not both")),
    };
    print!("{text}");
    Ok(())
}
