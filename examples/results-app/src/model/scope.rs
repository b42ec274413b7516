//! Whose a CI run is. Files posted with one CI run id join one run only when the tokens that
//! posted them name the same pairs: a token scoped to some pairs anchors its runs apart
//! (`<id>@<scope>`), so that no token can add files to another team's run, nor anchor its id
//! ahead of it. Writers with any pair (a token for every pair, a collector without tokens, a
//! direct bucket writer) share the plain `<id>`.

use super::names::{check_label, clip, short_hash};
use crate::error::{AppError, AppResult};

/// The pairs a scoped token may write, and the tag its runs are named by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunScope {
    /// 12 hex digits of the hash of the sorted patterns: tokens naming the same pairs (a secret
    /// and its replacement) share their runs.
    pub tag: String,
    /// The `platform/runtime` patterns, sorted, each once.
    pub pairs: Vec<String>,
}

impl RunScope {
    pub fn of(pairs: &[String]) -> RunScope {
        let mut pairs = pairs.to_vec();
        pairs.sort_unstable();
        pairs.dedup();
        let tag = format!("{:012x}", short_hash(pairs.join(" ").as_bytes()) >> 16);
        RunScope { tag, pairs }
    }

    /// The name of CI run `id` within this scope.
    pub fn run_name(&self, id: &str) -> String {
        format!("{id}@{}", self.tag)
    }
}

/// Checks the name a reader gives a CI run: its id (a label), or its id and scope
/// (`github-42-1@0123456789ab`).
pub fn check_run_name(field: &str, name: &str) -> AppResult<()> {
    let (id, tag) = match name.split_once('@') {
        Some((id, tag)) => (id, Some(tag)),
        None => (name, None),
    };
    check_label(field, id)?;
    match tag {
        Some(tag) if tag.len() != 12 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Err(AppError::bad(format!("{field} {:?}: after '@' comes a scope, 12 hex digits", clip(name))).at(field))
        }
        _ => Ok(()),
    }
}

/// Whether `name` names a CI run's scope (`id@scope`) rather than the run its plain id names.
pub fn is_scoped(name: &str) -> bool {
    name.contains('@')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_naming_the_same_pairs_share_a_scope_and_others_do_not() {
        let a = RunScope::of(&["linux-*/python-*".into(), "linux-x86_64/node-20".into()]);
        let rotated =
            RunScope::of(&["linux-x86_64/node-20".into(), "linux-*/python-*".into(), "linux-*/python-*".into()]);
        let b = RunScope::of(&["macos-*/node-*".into()]);
        assert_eq!(a, rotated);
        assert_ne!(a.tag, b.tag);
        assert_eq!(a.run_name("github-7-1"), format!("github-7-1@{}", a.tag));
        check_run_name("run", &a.run_name("github-7-1")).unwrap();
        check_run_name("run", "github-7-1").unwrap();
        for bad in ["github-7-1@", "github-7-1@xyz", "a/b@0123456789ab", "@0123456789ab", "x@0123456789abc"] {
            assert!(check_run_name("run", bad).is_err(), "{bad:?}");
        }
    }
}
