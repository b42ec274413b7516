//! `objstore-results gate REPORT...`: exits 0 when every failure in the reports is
//! quarantined for their pair.

use super::source::Source;
use super::{unknown, value_of, USAGE};
use crate::analysis;
use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::ingest::{self, Labels};
use crate::model::Status;

/// `objstore-results gate REPORT...`: exits 0 when every failure in the reports is quarantined
/// for their pair.
pub fn run(args: &[String]) -> AppResult<()> {
    let mut labels = Labels::from_env(&|name| std::env::var(name).ok());
    let mut files = Vec::new();
    let mut collector = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--platform" => &mut labels.platform,
            "--runtime" => &mut labels.runtime,
            "--suite" => &mut labels.suite,
            "--collector" => &mut collector,
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
        return Err(AppError::bad(format!("gate needs the reports to weigh\n{USAGE}")));
    }
    let mut runs = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).map_err(|e| AppError::internal(format!("reading {file}: {e}")))?;
        runs.push(ingest::ingest(file, &bytes, &labels.for_file(file), None)?);
    }
    let failures = runs.iter().flat_map(|r| &r.results.tests).filter(|t| t.status == Status::Failed).count();
    if failures == 0 {
        // Nothing to look up: a green job passes even with the bucket out of reach.
        println!("no test failed");
        return Ok(());
    }
    let source = Source::for_reading(collector)?;
    eprintln!("objstore-results: the quarantine of {}", source.describe());
    let q = source.quarantine()?;
    if q.entries.is_empty() {
        eprintln!("objstore-results: warning: the quarantine holds no entry, so every failure fails the job");
    }
    let verdict = analysis::quarantine::weigh(&q, &runs, now_ms());
    let held: Vec<String> =
        verdict.held.iter().map(|(suite, name, reason)| format!("  {suite} › {name} ({reason})")).collect();
    let failing: Vec<String> = verdict.failing.iter().map(|(suite, name)| format!("  {suite} › {name}")).collect();
    if !held.is_empty() {
        println!("{} failure{} quarantined:\n{}", held.len(), if held.len() == 1 { "" } else { "s" }, held.join("\n"));
    }
    if !failing.is_empty() {
        println!(
            "{} failure{} not quarantined:\n{}",
            failing.len(),
            if failing.len() == 1 { "" } else { "s" },
            failing.join("\n")
        );
        return Err(AppError::bad(format!(
            "{} failure{} not quarantined",
            failing.len(),
            if failing.len() == 1 { " is" } else { "s are" }
        )));
    }
    println!("every failure is quarantined");
    Ok(())
}
