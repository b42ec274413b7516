//! `objstore-results export --out FILE`: the matrix and the newest runs as one HTML file.

use std::path::PathBuf;

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::report::export;
use crate::store;

use super::{open_viewer, unknown, value_of, USAGE};

/// `objstore-results export --out FILE`: the matrix and the newest runs as one HTML file.
pub fn run(args: &[String]) -> AppResult<()> {
    let (mut out, mut cache) = (None, None);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = value_of(flag, &mut args)?;
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value)),
            "--cache" => cache = Some(PathBuf::from(value)),
            other => return Err(unknown(other)),
        }
    }
    let out = out.ok_or_else(|| AppError::bad(format!("export needs --out FILE\n{USAGE}")))?;
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: reading {}", target.describe());
    if let Some(dir) = target.missing_directory() {
        return Err(AppError::bad(format!("no runs: {} does not exist", dir.display())));
    }
    let viewer = open_viewer(&target, cache)?;
    let html = export::render(&viewer, &target.describe(), now_ms())?;
    std::fs::write(&out, html).map_err(|e| AppError::internal(format!("writing {}: {e}", out.display())))?;
    println!("objstore-results: the matrix and the newest runs are in {}", out.display());
    Ok(())
}
