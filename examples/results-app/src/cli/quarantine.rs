//! `objstore-results quarantine add|remove|list`: the quarantine's entries, edited in the
//! bucket.

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::model;
use crate::store;

use super::source::Source;
use super::{open_viewer, unknown, value_of, USAGE};

/// `objstore-results quarantine add|remove|list`.
pub fn run(args: &[String]) -> AppResult<()> {
    let Some((action, args)) = args.split_first() else { return Err(AppError::bad(USAGE)) };
    let (mut suite, mut name, mut pairs, mut reason, mut until, mut by) = (None, None, None, None, None, None);
    let mut collector = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = value_of(flag, &mut args)?.clone();
        match flag.as_str() {
            "--collector" if action == "list" => collector = Some(value),
            "--collector" => {
                return Err(AppError::bad(format!(
                    "quarantine {action} writes the bucket's quarantine: it needs OBJSTORE_RESULTS (a collector \
                     takes runs and serves views, and `quarantine list --collector` reads through one)"
                )))
            }
            "--suite" => suite = Some(value),
            "--name" => name = Some(value),
            "--pairs" => pairs = Some(value),
            "--reason" => reason = Some(value),
            "--until" => until = Some(value),
            "--by" if action == "add" => by = Some(value),
            other => return Err(unknown(other)),
        }
    }
    if action == "list" {
        let source = Source::for_reading(collector)?;
        eprintln!("objstore-results: the quarantine of {}", source.describe());
        print!("{}", quarantine_table(&source.quarantine()?));
        return Ok(());
    }
    let target = store::Target::from_env()?;
    eprintln!("objstore-results: the quarantine of {}", target.describe());
    let needed = |field: &str, value: Option<String>| {
        value.ok_or_else(|| AppError::bad(format!("quarantine {action} needs {field}")))
    };
    match action.as_str() {
        "add" => {
            let entry = model::quarantine::Entry {
                suite: needed("--suite", suite)?,
                name: needed("--name", name)?,
                pairs: pairs.unwrap_or_else(|| "*/*".into()),
                reason: needed("--reason", reason)?,
                until,
                added: now_ms(),
                by: by.or_else(who_is_adding),
            };
            entry.check()?;
            let (q, _) = store::documents::edit(&target, |q: &mut model::quarantine::Quarantine| {
                q.add(entry.clone());
                Ok(String::new())
            })?;
            print!("{}", quarantine_table(&q));
            if let Some(warning) = unknown_test(&target, &entry.suite, &entry.name) {
                eprintln!("objstore-results: warning: {warning}");
            }
            Ok(())
        }
        "remove" => {
            let (suite, name) = (needed("--suite", suite)?, needed("--name", name)?);
            let (q, removed) = store::documents::edit(&target, |q: &mut model::quarantine::Quarantine| {
                match q.remove(&suite, &name, pairs.as_deref()) {
                    0 => Err(AppError::bad(format!(
                        "{suite} › {name} is not in the quarantine{}",
                        pairs.as_ref().map(|p| format!(" for {p}")).unwrap_or_default()
                    ))),
                    n => Ok(format!("{n}")),
                }
            })?;
            eprintln!("objstore-results: {removed} entr{} removed", if removed == "1" { "y" } else { "ies" });
            print!("{}", quarantine_table(&q));
            Ok(())
        }
        other => Err(AppError::bad(format!("unknown quarantine action {other:?} (add, remove or list)\n{USAGE}"))),
    }
}

/// Who runs `quarantine add` (or `rules add`) when `--by` does not say: the CI's actor, else the shell's user.
pub(super) fn who_is_adding() -> Option<String> {
    ["GITHUB_ACTOR", "GITLAB_USER_LOGIN", "USER", "USERNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|who| !who.trim().is_empty() && who.len() <= model::MAX_LABEL && !who.chars().any(char::is_control))
}

/// The quarantine as lines: test, pairs, until, reason, who added it.
fn quarantine_table(q: &model::quarantine::Quarantine) -> String {
    if q.entries.is_empty() {
        return "The quarantine is empty.\n".into();
    }
    q.entries
        .iter()
        .map(|e| {
            let until = e.until.as_deref().map(|u| format!(" until {u}")).unwrap_or_default();
            let by = e.by.as_deref().map(|by| format!(" (added by {by})")).unwrap_or_default();
            format!("{} › {}  [{}]{until}: {}{by}\n", e.suite, e.name, e.pairs, e.reason)
        })
        .collect()
}

/// Why an entry for `suite` › `name` may never hold: no pair's newest run has that test. Names the
/// stored tests of the same last word (`test_x` of `tests/test_p.py::test_x`), which are likely
/// the one meant under the name every producer gives it. `None` when a run has it, or when the
/// runs cannot be read (the entry is kept either way: the test may not have run yet).
fn unknown_test(target: &store::Target, suite: &str, name: &str) -> Option<String> {
    let viewer = open_viewer(target, None).ok()?;
    let leaf = ["::", " > ", " › "].iter().fold(name, |n, sep| n.rsplit(sep).next().unwrap_or(n));
    let leaf: String = leaf.chars().rev().take(200).collect::<Vec<_>>().into_iter().rev().collect();
    let found = viewer.search(&leaf).ok()?.view.tests;
    if found.iter().any(|t| t.suite == suite && t.name == name) {
        return None;
    }
    let mut like: Vec<String> = found.iter().map(|t| format!("--suite {:?} --name {:?}", t.suite, t.name)).collect();
    like.sort();
    like.dedup();
    let hint = match like.len() {
        0 => String::new(),
        n => format!("; stored tests of that name: {}{}", like[..n.min(3)].join(", "), if n > 3 { ", …" } else { "" }),
    };
    Some(format!("no pair's newest run has the test {suite} › {name}, so the entry holds for nothing yet{hint}"))
}
