//! `objstore-results`: the results app of objstore-db (see its README), built on the library.
//!
//!     objstore-results                 the main command: fill an empty bucket with the
//!                                      conformance suites' results, print the matrix, serve
//!     objstore-results post FILE...    store test reports as runs
//!     objstore-results serve           the page and the collector
//!     objstore-results matrix          print the matrix
//!     objstore-results summary         a run's or a commit's results for CI (Markdown or text)
//!
//! Results live in `OBJSTORE_RESULTS` (a `file://` directory, default `./results`, or an S3
//! endpoint with the standard `AWS_*` settings), bucket `OBJSTORE_RESULTS_BUCKET` (`results`).

mod analysis;
mod clock;
mod conformance;
mod error;
mod ingest;
mod model;
mod report;
mod store;
mod views;
mod web;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::error::{AppError, AppResult};
use ingest::Labels;
use clock::now_ms;
use views::Viewer;

const USAGE: &str = "usage: objstore-results [--listen ADDR] [--cache PATH]
       objstore-results post [--runtime R] [--platform P] [--version V] [--suite S] [--run ID] [--commit C] [--branch B] [--url U] [--job J] [--label K=V]... [--collector URL] FILE...
       objstore-results serve [--listen ADDR] [--cache PATH] [--origin URL]... [--token T]... [--tokens FILE] [--allow-anonymous-origins] [--max-bytes N] [--per-minute N] [--burst N] [--timeout-secs N]
       objstore-results matrix [--cache PATH]
       objstore-results export --out FILE [--cache PATH]
       objstore-results summary [--run ID | --commit C [--base B]] [--markdown] [--page URL] [--cache PATH]
       objstore-results quarantine add --suite S --name N [--pairs P/R] --reason TEXT [--until YYYY-MM-DD]
       objstore-results quarantine remove --suite S --name N [--pairs P/R]
       objstore-results quarantine list
       objstore-results gate [--platform P] [--runtime R] [--suite S] REPORT...
       objstore-results --help";

/// `--help`: every command and option, and the settings read from the environment.
const HELP: &str = "objstore-results: test results in a bucket, read back as a feature matrix.

  objstore-results [--listen ADDR] [--cache PATH]
      The main command: fills an empty bucket with this machine's conformance run, prints the
      matrix and serves the page (another port when ADDR, default 127.0.0.1:8080, is taken).

  objstore-results post [options] FILE...
      Stores test reports as runs: JUnit XML (pytest, node --test, ctest, GoogleTest, nextest),
      CTRF JSON, or cargo test / C harness logs. Every file is read before anything is stored.
      --runtime R, --platform P, --version V   label the run (default: from the report, else this machine)
      --suite S          every test's suite (default: what the report says, else the file's
                         name: crud.test.mjs → crud)
      --run ID           the run the files belong to: every file posted with one ID, by any
                         number of calls from any number of jobs, is one run (default:
                         OBJSTORE_RESULTS_RUN, else the CI's run id and attempt, from GitHub
                         Actions, GitLab CI, Buildkite, CircleCI, Jenkins or Azure Pipelines;
                         else each call is a run of its own)
      --commit C, --branch B, --url U, --job J   where the run came from (default: the CI's
                         environment, else the report's own)
      --label K=V        a build-variant label (repeatable), beside the report's own
                         (JUnit <properties>, CTRF environment)
      --collector URL    post to a running `serve` (http://host:port or its /results) instead of
                         writing to the bucket; OBJSTORE_COLLECTOR_TOKEN is sent as its bearer token

  objstore-results serve [options]
      Serves the page (/) and the collector (POST /results).
      --listen ADDR      address:port (default 127.0.0.1:8080)
      --cache PATH       the viewer's SQLite cache (default: one per bucket in ~/.cache/objstore-results)
      --origin URL       a page origin allowed to post (repeatable); CORS allows only these
      --token T          a bearer token a post must carry (repeatable; also OBJSTORE_COLLECTOR_TOKENS,
                         comma-separated, kept out of process listings); it may write any pair
      --tokens FILE      tokens scoped to pairs: a line per token, the token (16 or more
                         characters) then the platform/runtime patterns it may write
                         (linux-*/python-*); a post for another pair is refused (403)
      --allow-anonymous-origins   pages on the --origin list may post without a token
      --max-bytes N, --per-minute N, --burst N, --timeout-secs N   the size cap, the per-client
                         rate limit and the request timeout

  objstore-results matrix [--cache PATH]
      Prints the matrix: one row per platform / runtime, one column per suite.

  objstore-results export --out FILE [--cache PATH]
      Writes the matrix and each pair's newest run (its failed and flaky tests with their
      text) as one self-contained HTML file: no script, no request, for CI artefacts and mail.

  objstore-results summary [--run ID | --commit C [--base B]] [--markdown] [--page URL] [--cache PATH]
      A run's or a commit's results for a CI job summary or a pull request (--markdown; else
      plain text): counts per pair, failures with their first lines and classes (new,
      divergent, broken, flaky, quarantined), flaky passes, newly failing and fixed tests
      against --base,
      and what the summary cost in bucket requests
      (one listing and a GET per pair at most, beside the run's anchor and the quarantine).
      --run ID           a CI run (default: OBJSTORE_RESULTS_RUN, else this CI run's id)
      --commit C         every pair's newest run at commit C (7 characters or more), compared
                         with its run at --base B when given
      --page URL         the results page, linked from the summary

  objstore-results quarantine add --suite S --name N [--pairs P/R] --reason TEXT [--until YYYY-MM-DD]
  objstore-results quarantine remove --suite S --name N [--pairs P/R]
  objstore-results quarantine list
      The quarantine, kept in the bucket (.quarantine) with its history: tests known to fail
      that should not fail a job. --pairs is a platform/runtime pattern (* for any run of
      characters; default */*); --until, the last day it holds (UTC). Edits are written with
      If-Match: two editors at once both land, one after the other.
  objstore-results gate [--platform P] [--runtime R] [--suite S] REPORT...
      Reads reports as post does (with the same --platform, --runtime and --suite) and exits 0
      when every failure in them is quarantined for this pair (1 otherwise), listing the
      failures of each kind: for C and C++ harnesses, in place of the harness's own exit code
      when that counts only failed tests. The quarantine is read only when a test failed.

Where runs live (every command says which bucket it opened):
  OBJSTORE_RESULTS         file://DIR (default file://./results; objects in DIR/BUCKET/) or an S3
                           endpoint http(s)://host:port, signed with the standard AWS_* settings
  OBJSTORE_RESULTS_BUCKET  the bucket (default results)
  OBJSTORE_RESULTS_PREFIX  a key prefix inside it (default none)
  OBJSTORE_RESULTS_TIMEOUT_MS  the longest one request to the bucket may take (default 10000)
";

/// Whether the arguments ask for help: `help`, `--help` or `-h` alone, or after a command
/// (`post --help`); elsewhere they are an option's value or a file name.
fn wants_help(args: &[String]) -> bool {
    let asks = |a: &String| matches!(a.as_str(), "--help" | "-h" | "help");
    match args {
        [only] => asks(only),
        [command, flag] => {
            ["post", "serve", "matrix", "export", "summary", "quarantine", "gate"].contains(&command.as_str())
                && flag != "help"
                && asks(flag)
        }
        _ => false,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if wants_help(&args) {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let outcome = match args.split_first() {
        Some((command, rest)) if command == "post" => post_files(rest),
        Some((command, rest)) if command == "serve" => serve(rest, false),
        Some((command, rest)) if command == "matrix" => print_matrix(rest),
        Some((command, rest)) if command == "export" => export_page(rest),
        Some((command, rest)) if command == "summary" => print_summary(rest),
        Some((command, rest)) if command == "quarantine" => edit_quarantine(rest),
        Some((command, rest)) if command == "gate" => gate(rest),
        Some((command, _)) if !command.starts_with("--") => {
            Err(AppError::bad(format!("unknown command {command:?}\n{USAGE}")))
        }
        _ => serve(&args, true),
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
fn post_files(args: &[String]) -> AppResult<()> {
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
            "--run" => &mut labels.ci.run,
            "--commit" => &mut labels.ci.commit,
            "--branch" => &mut labels.ci.branch,
            "--url" => &mut labels.ci.url,
            "--job" => &mut labels.ci.job,
            "--label" => {
                let given = args.next().ok_or_else(|| AppError::bad(format!("--label needs a value\n{USAGE}")))?;
                labels.extra.push(ingest::parse_label(given)?);
                continue;
            }
            "--collector" => &mut collector,
            flag if flag.starts_with("--") => return Err(AppError::bad(format!("unknown option {flag}\n{USAGE}"))),
            file => {
                files.push(file.to_string());
                continue;
            }
        };
        *slot = Some(args.next().ok_or_else(|| AppError::bad(format!("{arg} needs a value\n{USAGE}")))?.clone());
    }
    if files.is_empty() {
        return Err(AppError::bad(USAGE));
    }
    labels.fill_ci(&|name| std::env::var(name).ok())?;
    let runs = files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).map_err(|e| AppError::internal(format!("{file}: {e}")))?;
            ingest::ingest(file, &bytes, &labels.for_file(file), None)
        })
        .collect::<AppResult<Vec<_>>>()?;
    let writer = match &collector {
        None => {
            let target = store::Target::from_env()?;
            eprintln!("objstore-results: storing runs in {}", target.describe());
            Some(store::Writer::open(&target)?)
        }
        Some(url) => {
            eprintln!("objstore-results: posting runs to the collector at {}", store::collector_url(url));
            None
        }
    };
    for (file, run) in files.iter().zip(&runs) {
        let key = match (&writer, &collector) {
            (Some(writer), _) => writer.store(run)?,
            (None, Some(url)) => store::send_to_collector(url, run).map_err(|e| e.context(file))?,
            (None, None) => unreachable!("a writer or a collector"),
        };
        let summary = &run.results.summary;
        println!(
            "{file}: {} tests ({} passed, {} failed, {} skipped; suites {}) stored as {key}",
            summary.tests,
            summary.passed,
            summary.failed,
            summary.skipped,
            run.suites().join(", ")
        );
    }
    Ok(())
}

/// The viewer's cache: `--cache PATH`, else one file per target in the user's cache folder.
fn open_viewer(target: &store::Target, cache: Option<PathBuf>) -> AppResult<Viewer> {
    Viewer::open(target, &cache.unwrap_or_else(|| target.default_cache()))
}

/// `objstore-results matrix`: the home view as a table.
fn print_matrix(args: &[String]) -> AppResult<()> {
    let cache = match args {
        [] => None,
        [flag, path] if flag == "--cache" => Some(PathBuf::from(path)),
        _ => return Err(AppError::bad(USAGE)),
    };
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: reading {}", target.describe());
    if let Some(dir) = target.missing_directory() {
        return Err(AppError::bad(format!(
            "no runs: {} does not exist (set OBJSTORE_RESULTS to where runs are, or post some first)",
            dir.display()
        )));
    }
    let viewer = open_viewer(&target, cache)?;
    let matrix = viewer.matrix(&Default::default())?;
    print!("{}", report::table::render(&matrix, now_ms()));
    Ok(())
}

/// `objstore-results export --out FILE`: the matrix and the newest runs as one HTML file.
fn export_page(args: &[String]) -> AppResult<()> {
    let (mut out, mut cache) = (None, None);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| AppError::bad(format!("{flag} needs a value\n{USAGE}")))?;
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value)),
            "--cache" => cache = Some(PathBuf::from(value)),
            other => return Err(AppError::bad(format!("unknown option {other}\n{USAGE}"))),
        }
    }
    let out = out.ok_or_else(|| AppError::bad(format!("export needs --out FILE\n{USAGE}")))?;
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: reading {}", target.describe());
    if let Some(dir) = target.missing_directory() {
        return Err(AppError::bad(format!("no runs: {} does not exist", dir.display())));
    }
    let viewer = open_viewer(&target, cache)?;
    let html = report::export::render(&viewer, &target.describe(), now_ms())?;
    std::fs::write(&out, html).map_err(|e| AppError::internal(format!("writing {}: {e}", out.display())))?;
    println!("objstore-results: the matrix and the newest runs are in {}", out.display());
    Ok(())
}

/// `objstore-results summary`: a CI run's or a commit's results as Markdown or text.
fn print_summary(args: &[String]) -> AppResult<()> {
    let (mut run, mut commit, mut base, mut page, mut cache) = (None, None, None, None, None);
    let mut format = report::summary::Format::Text;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--markdown" {
            format = report::summary::Format::Markdown;
            continue;
        }
        let value = args.next().ok_or_else(|| AppError::bad(format!("{flag} needs a value\n{USAGE}")))?.clone();
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
            other => return Err(AppError::bad(format!("unknown option {other}\n{USAGE}"))),
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
            views::add_requests(&mut view, requests);
            report::summary::of_commit(&view, &quarantine, now_ms(), page.as_deref(), format)
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
            views::add_requests(&mut view, requests);
            report::summary::of_run(&view, &quarantine, now_ms(), page.as_deref(), format)
        }
        (Some(_), Some(_)) => return Err(AppError::bad("name a run or a commit, not both")),
    };
    print!("{text}");
    Ok(())
}

/// `objstore-results quarantine add|remove|list`.
fn edit_quarantine(args: &[String]) -> AppResult<()> {
    let Some((action, args)) = args.split_first() else { return Err(AppError::bad(USAGE)) };
    let (mut suite, mut name, mut pairs, mut reason, mut until) = (None, None, None, None, None);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| AppError::bad(format!("{flag} needs a value\n{USAGE}")))?.clone();
        match flag.as_str() {
            "--suite" => suite = Some(value),
            "--name" => name = Some(value),
            "--pairs" => pairs = Some(value),
            "--reason" => reason = Some(value),
            "--until" => until = Some(value),
            other => return Err(AppError::bad(format!("unknown option {other}\n{USAGE}"))),
        }
    }
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: the quarantine of {}", target.describe());
    let needed = |field: &str, value: Option<String>| {
        value.ok_or_else(|| AppError::bad(format!("quarantine {action} needs {field}")))
    };
    match action.as_str() {
        "list" => {
            let (q, _) = store::quarantine::load(&target)?;
            print!("{}", quarantine_table(&q));
            Ok(())
        }
        "add" => {
            let entry = model::quarantine::Entry {
                suite: needed("--suite", suite)?,
                name: needed("--name", name)?,
                pairs: pairs.unwrap_or_else(|| "*/*".into()),
                reason: needed("--reason", reason)?,
                until,
                added: now_ms(),
            };
            entry.check()?;
            let (q, _) = store::quarantine::edit(&target, |q| {
                q.add(entry.clone());
                Ok(String::new())
            })?;
            print!("{}", quarantine_table(&q));
            Ok(())
        }
        "remove" => {
            let (suite, name) = (needed("--suite", suite)?, needed("--name", name)?);
            let (q, removed) = store::quarantine::edit(&target, |q| match q.remove(&suite, &name, pairs.as_deref()) {
                0 => Err(AppError::bad(format!(
                    "{suite} › {name} is not in the quarantine{}",
                    pairs.as_ref().map(|p| format!(" for {p}")).unwrap_or_default()
                ))),
                n => Ok(format!("{n}")),
            })?;
            eprintln!("objstore-results: {removed} entr{} removed", if removed == "1" { "y" } else { "ies" });
            print!("{}", quarantine_table(&q));
            Ok(())
        }
        other => Err(AppError::bad(format!("unknown quarantine action {other:?} (add, remove or list)\n{USAGE}"))),
    }
}

/// The quarantine as lines: test, pairs, until, reason.
fn quarantine_table(q: &model::quarantine::Quarantine) -> String {
    if q.entries.is_empty() {
        return "The quarantine is empty.\n".into();
    }
    q.entries
        .iter()
        .map(|e| {
            let until = e.until.as_deref().map(|u| format!(" until {u}")).unwrap_or_default();
            format!("{} › {}  [{}]{until}: {}\n", e.suite, e.name, e.pairs, e.reason)
        })
        .collect()
}

/// `objstore-results gate REPORT...`: exits 0 when every failure in the reports is quarantined
/// for their pair.
fn gate(args: &[String]) -> AppResult<()> {
    let mut labels = Labels::default();
    let mut files = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--platform" => &mut labels.platform,
            "--runtime" => &mut labels.runtime,
            "--suite" => &mut labels.suite,
            flag if flag.starts_with("--") => return Err(AppError::bad(format!("unknown option {flag}\n{USAGE}"))),
            file => {
                files.push(file.to_string());
                continue;
            }
        };
        *slot = Some(args.next().ok_or_else(|| AppError::bad(format!("{arg} needs a value\n{USAGE}")))?.clone());
    }
    if files.is_empty() {
        return Err(AppError::bad(format!("gate needs the reports to weigh\n{USAGE}")));
    }
    let mut runs = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).map_err(|e| AppError::internal(format!("reading {file}: {e}")))?;
        runs.push(ingest::ingest(file, &bytes, &labels.for_file(file), None)?);
    }
    let failures = runs.iter().flat_map(|r| &r.results.tests).filter(|t| t.status == model::Status::Failed).count();
    if failures == 0 {
        // Nothing to look up: a green job passes even with the bucket out of reach.
        println!("no test failed");
        return Ok(());
    }
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: the quarantine of {}", target.describe());
    let (q, _) = store::quarantine::load(&target)?;
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

/// Serves the page and the collector until interrupted. As the main command (`start`), first
/// fills an empty bucket with the conformance suites' run and prints the matrix, and takes
/// another port when the one asked for is taken. Tokens also come from
/// `OBJSTORE_COLLECTOR_TOKENS` (comma-separated), so that they need not appear in a process
/// listing.
fn serve(args: &[String], start: bool) -> AppResult<()> {
    let mut config = web::collector::Config::default();
    let mut cache = None;
    if let Ok(tokens) = std::env::var("OBJSTORE_COLLECTOR_TOKENS") {
        config
            .tokens
            .extend(tokens.split(',').map(str::trim).filter(|t| !t.is_empty()).map(web::collector::Token::any_pair));
    }
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--allow-anonymous-origins" && !start {
            config.anonymous_origins = true;
            continue;
        }
        let value = args.next().ok_or_else(|| AppError::bad(format!("{flag} needs a value\n{USAGE}")))?;
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
            "--token" if !start => config.tokens.push(web::collector::Token::any_pair(value)),
            "--tokens" if !start => config.tokens.extend(web::collector::read_tokens(std::path::Path::new(value))?),
            "--max-bytes" if !start => config.max_bytes = number("--max-bytes")? as usize,
            "--per-minute" if !start => config.per_minute = number("--per-minute")?,
            "--burst" if !start => config.burst = number("--burst")?,
            "--timeout-secs" if !start => {
                config.timeout = std::time::Duration::from_secs(number("--timeout-secs")?.into())
            }
            other => return Err(AppError::bad(format!("unknown option {other}\n{USAGE}"))),
        }
    }
    // One secret twice (say any-pair and scoped) would make which scope holds depend on order.
    let mut secrets: Vec<&str> = config.tokens.iter().map(|t| t.secret.as_str()).collect();
    secrets.sort_unstable();
    if secrets.windows(2).any(|w| w[0] == w[1]) {
        return Err(AppError::bad(
            "a token is given twice (--token, OBJSTORE_COLLECTOR_TOKENS and --tokens must not share one)",
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
        print!("\n{}\n", report::table::render(&matrix, now_ms()));
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

/// An empty bucket gets one real run: the conformance suites, run here on both mechanisms.
fn fill_if_empty(target: &store::Target, viewer: &Viewer, writer: &store::Writer) -> AppResult<()> {
    let matrix = viewer.matrix(&Default::default())?;
    if matrix["rows"].as_array().is_some_and(|rows| !rows.is_empty()) {
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
