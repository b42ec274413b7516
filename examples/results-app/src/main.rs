//! `objstore-results`: the results app of objstore-db (DESIGN §5), built on the library.
//!
//!     objstore-results post [--runtime R] [--platform P] [--version V] [--suite S] FILE...
//!
//! Results go to `OBJSTORE_RESULTS` (a `file://` directory, default `./results`, or an S3
//! endpoint with the standard `AWS_*` settings), bucket `OBJSTORE_RESULTS_BUCKET` (`results`).

mod collector;
mod format;
mod ingest;
mod junit;
mod post;

use std::process::ExitCode;

use ingest::Labels;

const USAGE: &str = "usage: objstore-results post [--runtime R] [--platform P] [--version V] [--suite S] [--collector URL] FILE...
       objstore-results serve [--listen ADDR] [--origin URL]... [--token T]... [--max-bytes N] [--per-minute N] [--burst N] [--timeout-secs N]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.split_first() {
        Some((command, rest)) if command == "post" => post_files(rest),
        Some((command, rest)) if command == "serve" => serve(rest),
        _ => Err(USAGE.to_string()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("objstore-results: {why}");
            ExitCode::FAILURE
        }
    }
}

/// Reads every file first, so that one bad file writes nothing; then stores each run.
fn post_files(args: &[String]) -> Result<(), String> {
    let mut labels = Labels::default();
    let mut collector = std::env::var("OBJSTORE_COLLECTOR").ok().filter(|c| !c.is_empty());
    let mut files = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--runtime" => &mut labels.runtime,
            "--platform" => &mut labels.platform,
            "--version" => &mut labels.version,
            "--suite" => &mut labels.suite,
            "--collector" => &mut collector,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}\n{USAGE}")),
            file => {
                files.push(file.to_string());
                continue;
            }
        };
        *slot = Some(args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))?.clone());
    }
    if files.is_empty() {
        return Err(USAGE.to_string());
    }
    let runs = files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
            ingest::ingest(file, &bytes, &labels)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let writer = match &collector {
        None => Some(post::Writer::open(&post::Target::from_env())?),
        Some(_) => None,
    };
    for (file, run) in files.iter().zip(&runs) {
        let key = match (&writer, &collector) {
            (Some(writer), _) => writer.store(run).map_err(|e| e.to_string())?,
            (None, Some(url)) => post::send_to_collector(url, run).map_err(|e| format!("{file}: {e}"))?,
            (None, None) => unreachable!("a writer or a collector"),
        };
        let summary = &run.results.summary;
        println!(
            "{file}: {} tests ({} failed; suites {}) stored as {key}",
            summary.tests,
            summary.failed,
            run.suites().join(", ")
        );
    }
    Ok(())
}

/// Runs the collector until interrupted. Tokens also come from `OBJSTORE_COLLECTOR_TOKENS`
/// (comma-separated), so that they need not appear in a process listing.
fn serve(args: &[String]) -> Result<(), String> {
    let mut config = collector::Config::default();
    if let Ok(tokens) = std::env::var("OBJSTORE_COLLECTOR_TOKENS") {
        config.tokens.extend(tokens.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_string));
    }
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |what: &str| value.parse::<u32>().map_err(|_| format!("{what} {value:?} is not a whole number"));
        match flag.as_str() {
            "--listen" => {
                config.listen = value.parse().map_err(|_| format!("--listen {value:?} is not an address:port"))?
            }
            "--origin" => {
                let origin = value.trim_end_matches('/');
                let (scheme, host) = origin.split_once("://").unwrap_or_default();
                if !matches!(scheme, "http" | "https") || host.is_empty() || host.contains(['/', '*', ' ']) {
                    return Err(format!("--origin {value:?} is not an origin (scheme://host[:port])"));
                }
                config.origins.push(origin.to_string());
            }
            "--token" => config.tokens.push(value.clone()),
            "--max-bytes" => config.max_bytes = number("--max-bytes")? as usize,
            "--per-minute" => config.per_minute = number("--per-minute")?,
            "--burst" => config.burst = number("--burst")?,
            "--timeout-secs" => config.timeout = std::time::Duration::from_secs(number("--timeout-secs")?.into()),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    let writer = post::Writer::open(&post::Target::from_env())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime
        .block_on(collector::serve(config, writer, |addr| {
            println!("objstore-results: collecting on http://{addr}/results")
        }))
        .map_err(|e| format!("serving: {e}"))
}
