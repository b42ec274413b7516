//! `objstore-results checkpoint`: writes a checkpoint of the bucket's runs (as `serve` does every
//! few minutes), so that a cold view starts from it instead of listing every run.

use std::path::PathBuf;

use crate::error::AppResult;
use crate::store::Target;

use super::{open_viewer, unknown, value_of};

/// `objstore-results checkpoint [--cache PATH]`.
pub fn run(args: &[String]) -> AppResult<()> {
    let mut cache = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--cache" => cache = Some(PathBuf::from(value_of(flag, &mut args)?)),
            other => return Err(unknown(other)),
        }
    }
    let target = Target::from_env()?;
    eprintln!("objstore-results: a checkpoint of {}", target.describe());
    let report = open_viewer(&target, cache)?.checkpoint()?;
    println!(
        "{}: {} names as of {} ms, {} shards, {} bytes",
        report.manifest, report.objects, report.position_ms, report.shards, report.bytes
    );
    Ok(())
}
