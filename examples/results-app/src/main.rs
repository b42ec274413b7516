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
mod cli;
mod clock;
mod conformance;
mod error;
mod ingest;
mod model;
mod report;
mod store;
mod views;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if cli::wants_help(&args) {
        print!("{}", cli::HELP);
        return ExitCode::SUCCESS;
    }
    match cli::dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("objstore-results: {why}");
            ExitCode::FAILURE
        }
    }
}
