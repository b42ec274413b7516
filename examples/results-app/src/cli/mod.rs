//! The commands, one file each: what each reads from its arguments and the environment, which
//! rooms it calls, and what it prints. Any room may be called from here.

mod checkpoint;
mod codeowners;
mod export;
mod gate;
mod matrix;
mod post;
mod quarantine;
mod rules;
mod serve;
mod source;
mod summary;
mod triage;

use std::path::PathBuf;

use crate::error::{AppError, AppResult};
use crate::store::Target;
use crate::views::Viewer;

pub const USAGE: &str = "usage: objstore-results [--listen ADDR] [--cache PATH]
       objstore-results post [--runtime R] [--platform P] [--version V] [--suite S] [--run ID] [--commit C] [--branch B] [--url U] [--job J] [--label K=V]... [--codeowners FILE] [--collector URL] FILE...
       objstore-results serve [--listen ADDR] [--cache PATH] [--origin URL]... [--token T]... [--tokens FILE] [--allow-anonymous-origins] [--max-bytes N] [--per-minute N] [--burst N] [--timeout-secs N] [--editor-token T]... [--webhook URL] [--triage-every SECS] [--checkpoint-every SECS] [--auto-apply]
       objstore-results matrix [--cache PATH]
       objstore-results export --out FILE [--cache PATH]
       objstore-results summary [--run ID | --commit C [--base B]] [--markdown] [--page URL] [--cache PATH] [--collector URL]
       objstore-results quarantine add --suite S --name N [--pairs P/R] --reason TEXT [--until YYYY-MM-DD] [--by WHO]
       objstore-results quarantine remove --suite S --name N [--pairs P/R]
       objstore-results quarantine list [--collector URL]
       objstore-results gate [--platform P] [--runtime R] [--suite S] [--collector URL] REPORT...
       objstore-results codeowners set FILE | show | owners PATH...
       objstore-results rules add --title T --issue URL [--test PATTERN] [--text PATTERN] [--by WHO]
       objstore-results rules edit ID [--title T] [--issue URL] [--test PATTERN] [--text PATTERN]
       objstore-results rules remove ID | close ID | reopen ID | list
       objstore-results triage [--apply] [--confirm ID] [--webhook URL]
       objstore-results checkpoint [--cache PATH]
       objstore-results --help";

/// The value after `flag`, or an error that says it is missing.
fn value_of<'a>(flag: &str, args: &mut impl Iterator<Item = &'a String>) -> AppResult<&'a String> {
    args.next().ok_or_else(|| AppError::bad(format!("{flag} needs a value\n{USAGE}")))
}

/// An option the command does not know.
fn unknown(flag: &str) -> AppError {
    AppError::bad(format!("unknown option {flag}\n{USAGE}"))
}

/// `--help`: every command and option, and the settings read from the environment.
pub const HELP: &str = "objstore-results: test results in a bucket, read back as a feature matrix.

  objstore-results [--listen ADDR] [--cache PATH]
      The main command: fills an empty bucket with this machine's conformance run, prints the
      matrix and serves the page (another port when ADDR, default 127.0.0.1:8080, is taken).

  objstore-results post [options] FILE...
      Stores test reports as runs: JUnit XML (pytest, node --test, ctest, GoogleTest, nextest,
      jest, vitest, Playwright, go through gotestsum, ...), CTRF JSON, TAP, ctest's console
      output, or cargo test / C harness logs. Every file is read before anything is stored.
      --runtime R, --platform P, --version V   label the run (default: OBJSTORE_RESULTS_RUNTIME,
                         _PLATFORM and _VERSION, else the report's, else this machine's platform;
                         a run nothing gives a version is unversioned)
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
      --rerun            the files rerun tests their run already has (a failed file run again):
                         their tests are those tests' later attempts, a pass after a failure
                         flaky, each test counted once (also OBJSTORE_RESULTS_RERUN=1; needs a run)
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
      --triage-every SECS  how often the triage lifecycle is weighed (default 300; 0: never)
      --webhook URL      each lifecycle event (a proposal activated, deactivated or applied) is
                         POSTed there as JSON, tried 4 times
      --editor-token T   a token that may edit the failure rules and confirm proposals from the
                         page (repeatable; also OBJSTORE_EDITOR_TOKENS, comma-separated); without
                         one, a token of every pair may (--token, or a tokens file's */* line)
      --auto-apply       a proposal that activates applies itself (else a person confirms it
                         on the page's Proposals view, with the token)
      --checkpoint-every SECS  how often a checkpoint of the runs is written (default 600; 0:
                         never), so that a cold view starts from it (see checkpoint)

  objstore-results matrix [--cache PATH]
      Prints the matrix: one row per platform / runtime, one column per suite.

  objstore-results export --out FILE [--cache PATH]
      Writes the matrix and each pair's newest run (its failed and flaky tests with their
      text) as one self-contained HTML file: no script, no request, for CI artefacts and mail.

  objstore-results summary [--run ID | --commit C [--base B]] [--markdown] [--page URL] [--cache PATH] [--collector URL]
      A run's or a commit's results for a CI job summary or a pull request (--markdown; else
      plain text): counts per pair, failures with their first lines and classes (new,
      divergent, broken, flaky, quarantined), flaky passes, newly failing and fixed tests
      against --base,
      and what the summary cost in bucket requests
      (one listing and a GET per pair at most, beside the run's anchor, the quarantine and the
      CODEOWNERS).
      --run ID           a CI run (default: OBJSTORE_RESULTS_RUN, else this CI run's id)
      --commit C         every pair's newest run at commit C (7 characters or more), compared
                         with its run at --base B when given
      --page URL         the results page, linked from the summary
      --collector URL    read through a running `serve` (its /api/summary) instead of the bucket

  objstore-results quarantine add --suite S --name N [--pairs P/R] --reason TEXT [--until YYYY-MM-DD] [--by WHO]
  objstore-results quarantine remove --suite S --name N [--pairs P/R]
  objstore-results quarantine list [--collector URL]
      The quarantine, kept in the bucket (.quarantine) with its history: tests known to fail
      that should not fail a job. --pairs is a platform/runtime pattern (* for any run of
      characters; default */*); --until, the last day it holds (UTC). Edits are written with
      If-Match: two editors at once both land, one after the other. add warns when no pair's
      newest run has the test. list reads through a collector too; add and remove need the bucket.
  objstore-results gate [--platform P] [--runtime R] [--suite S] [--collector URL] REPORT...
      Reads reports as post does (with the same --platform, --runtime and --suite) and exits 0
      when every failure in them is quarantined for this pair (1 otherwise), listing the
      failures of each kind: for C and C++ harnesses, in place of the harness's own exit code
      when that counts only failed tests. The quarantine is read only when a test failed,
      from the bucket or through --collector URL (its /api/quarantine).
  objstore-results codeowners set FILE | show | owners PATH...
      The team's CODEOWNERS (GitHub's or GitLab's syntax), kept in the bucket (.codeowners):
      the flaky list, top failures and a test's page name each test's owners, by its suite's
      path (else its name's part before ::). set checks the file and replaces the one kept;
      owners prints who owns each PATH. post --codeowners FILE sets it with the runs it stores.
  objstore-results rules add --title T --issue URL [--test PATTERN] [--text PATTERN] [--by WHO]
  objstore-results rules edit ID [...] | remove ID | close ID | reopen ID | list
      Failure rules, kept in the bucket (.rules): a known problem bound to its issue. Every view
      groups the failures a rule matches under it, marks them known rather than new, and the
      summaries link the issue. --test matches a test's whole suite::name, --text anywhere in
      its failure's message (else trace); * stands for any run of characters; both given, both
      must match. An edit's empty pattern removes it. Edits are written with If-Match.
  objstore-results triage [--apply] [--confirm ID] [--webhook URL]
      Weighs the triage lifecycle once (serve does every --triage-every): proposals to
      quarantine a test flaky in 10% of its runs over 3 or 7 days, release a quarantined test
      that passed every run, close a rule quiet for 21 days, reopen a closed rule whose
      failures came back. Each activates on any window and deactivates only when every window
      is under a lower threshold. Kept in the bucket (.lifecycle); --apply applies those that
      activated in this weighing, --confirm ID applies an active one (as the page's Confirm);
      nothing is applied otherwise.
  objstore-results checkpoint [--cache PATH]
      Writes a checkpoint of the bucket's runs (serve does every --checkpoint-every): every
      run's name as of now, in shards under .objstore-checkpoints/. A cold view (an empty
      cache) then reads the newest checkpoint's small parts and the change log after it, a
      handful of requests, instead of listing every run the bucket ever held.

Where runs live (every command says which bucket it opened):
  OBJSTORE_RESULTS         file://DIR (default file://./results; objects in DIR/BUCKET/) or an S3
                           endpoint http(s)://host:port, signed with the standard AWS_* settings
  OBJSTORE_RESULTS_BUCKET  the bucket (default results)
  OBJSTORE_RESULTS_PREFIX  a key prefix inside it (default none)
  OBJSTORE_RESULTS_TIMEOUT_MS  the longest one request to the bucket may take (default 10000)
  OBJSTORE_RESULTS_DEFAULT_BRANCH  the branch the matrix shows unless asked for another
                           (default main, else master, where some run is on it, else any),
                           and where a failure is looked for before it is called new
  OBJSTORE_RESULTS_NEW_DAYS  how many days before a failure it is looked for (default 21)
  OBJSTORE_COLLECTOR       a collector (http(s)://host:port) that post, summary, gate and
                           quarantine list go through instead of the bucket: a CI job then needs
                           no bucket credentials; OBJSTORE_COLLECTOR_TOKEN is its bearer token
A read (summary, gate, quarantine list, matrix) of a file:// bucket that does not exist says so
and creates nothing.
";

/// Whether the arguments ask for help: `help`, `--help` or `-h` alone, or after a command
/// (`post --help`); elsewhere they are an option's value or a file name.
pub fn wants_help(args: &[String]) -> bool {
    let asks = |a: &String| matches!(a.as_str(), "--help" | "-h" | "help");
    match args {
        [only] => asks(only),
        [command, flag] => {
            ["post", "serve", "matrix", "export", "summary", "quarantine", "gate", "codeowners"]
                .contains(&command.as_str())
                && flag != "help"
                && asks(flag)
        }
        _ => false,
    }
}

/// Runs the command `args` name (the main command when they name none).
pub fn dispatch(args: &[String]) -> AppResult<()> {
    match args.split_first() {
        Some((command, rest)) if command == "post" => post::run(rest),
        Some((command, rest)) if command == "serve" => serve::run(rest, false),
        Some((command, rest)) if command == "matrix" => matrix::run(rest),
        Some((command, rest)) if command == "export" => export::run(rest),
        Some((command, rest)) if command == "summary" => summary::run(rest),
        Some((command, rest)) if command == "quarantine" => quarantine::run(rest),
        Some((command, rest)) if command == "gate" => gate::run(rest),
        Some((command, rest)) if command == "codeowners" => codeowners::run(rest),
        Some((command, rest)) if command == "rules" => rules::run(rest),
        Some((command, rest)) if command == "triage" => triage::run(rest),
        Some((command, rest)) if command == "checkpoint" => checkpoint::run(rest),
        Some((command, _)) if !command.starts_with("--") => {
            Err(AppError::bad(format!("unknown command {command:?}\n{USAGE}")))
        }
        _ => serve::run(args, true),
    }
}

/// The viewer's cache: `--cache PATH`, else one file per target in the user's cache folder;
/// the matrix's default branch from `OBJSTORE_RESULTS_DEFAULT_BRANCH` (else `main` or `master`).
fn open_viewer(target: &Target, cache: Option<PathBuf>) -> AppResult<Viewer> {
    let viewer = Viewer::open(target, &cache.unwrap_or_else(|| target.default_cache()))?;
    let viewer = viewer.with_default_branch(std::env::var("OBJSTORE_RESULTS_DEFAULT_BRANCH").ok());
    Ok(match std::env::var("OBJSTORE_RESULTS_NEW_DAYS") {
        Err(_) => viewer,
        Ok(days) => {
            viewer.with_new_days(days.trim().parse().map_err(|_| {
                AppError::bad(format!("OBJSTORE_RESULTS_NEW_DAYS {days:?} is not a whole number of days"))
            })?)
        }
    })
}
