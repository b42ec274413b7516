//! `objstore-results matrix`: the home view as a table.

use std::path::PathBuf;

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::report::table;
use crate::store;

use super::{open_viewer, USAGE};

/// `objstore-results matrix`: the home view as a table.
pub fn run(args: &[String]) -> AppResult<()> {
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
    print!("{}", table::render(&matrix.view, now_ms()));
    Ok(())
}
