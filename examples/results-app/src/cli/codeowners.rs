//! `objstore-results codeowners set FILE | show | owners PATH...`: the team's CODEOWNERS kept in
//! the bucket (`.codeowners`), so that every view names a failing or flaky test's owners.

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::model::codeowners::{CodeOwners, Stored};
use crate::store::{self, Target};

use super::USAGE;

/// `objstore-results codeowners ...`.
pub fn run(args: &[String]) -> AppResult<()> {
    let target = Target::from_env()?;
    match args {
        [action, file] if action == "set" => {
            set(&target, std::path::Path::new(file))?;
            println!("objstore-results: CODEOWNERS of {} set from {file}", target.describe());
            Ok(())
        }
        [action] if action == "show" => {
            let (stored, _) = store::documents::load::<Stored>(&target)?;
            match stored.text.is_empty() {
                true => println!("The bucket holds no CODEOWNERS (objstore-results codeowners set FILE)."),
                false => print!("{}", stored.text),
            }
            Ok(())
        }
        [action, paths @ ..] if action == "owners" && !paths.is_empty() => {
            let (stored, _) = store::documents::load::<Stored>(&target)?;
            let owners = CodeOwners::parse(&stored.text)?;
            for path in paths {
                let of = owners.of_path(path);
                println!("{path}: {}", if of.is_empty() { "no owner".to_string() } else { of.join(" ") });
            }
            Ok(())
        }
        _ => Err(AppError::bad(format!("codeowners set FILE, codeowners show or codeowners owners PATH...\n{USAGE}"))),
    }
}

/// Checks `file` as a CODEOWNERS file and keeps it in the bucket, replacing the one before.
pub fn set(target: &Target, file: &std::path::Path) -> AppResult<()> {
    let bytes = std::fs::read(file).map_err(|e| AppError::bad(format!("reading {}: {e}", file.display())))?;
    let text = String::from_utf8(bytes).map_err(|_| AppError::bad(format!("{} is not UTF-8 text", file.display())))?;
    CodeOwners::parse(&text).map_err(|e| e.context(file.display()))?;
    let source = file.display().to_string();
    store::documents::keep(target, Stored { text, source, at: now_ms() }, Stored::same_file)?;
    Ok(())
}
