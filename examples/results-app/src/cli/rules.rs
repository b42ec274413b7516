//! `objstore-results rules add|edit|remove|close|reopen|list`: the team's failure rules, kept in
//! the bucket (`.rules`), each a known problem bound to its issue.

use crate::error::{AppError, AppResult};
use crate::model::failure_rules::{FailureRules, RuleFields};
use crate::store::{self, Target};
use crate::views::shapes::RulesView;

use super::{open_viewer, unknown, value_of, USAGE};

/// `objstore-results rules ...`.
pub fn run(args: &[String]) -> AppResult<()> {
    let Some((action, args)) = args.split_first() else { return Err(AppError::bad(USAGE)) };
    let (id, args) = match action.as_str() {
        "edit" | "remove" | "close" | "reopen" => match args.split_first() {
            Some((id, rest)) if !id.starts_with("--") => (Some(id.clone()), rest),
            _ => return Err(AppError::bad(format!("rules {action} needs a rule's id (rules list shows them)"))),
        },
        _ => (None, args),
    };
    let mut fields = RuleFields::default();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = Some(value_of(flag, &mut args)?.clone());
        match flag.as_str() {
            "--title" if matches!(action.as_str(), "add" | "edit") => fields.title = value,
            "--issue" if matches!(action.as_str(), "add" | "edit") => fields.issue = value,
            "--test" if matches!(action.as_str(), "add" | "edit") => fields.test = value,
            "--text" if matches!(action.as_str(), "add" | "edit") => fields.text = value,
            "--by" if action == "add" => fields.by = value,
            other => return Err(unknown(other)),
        }
    }
    let target = Target::from_env()?;
    eprintln!("objstore-results: the failure rules of {}", target.describe());
    if action == "list" {
        let viewer = open_viewer(&target, None)?;
        print!("{}", rules_table(&viewer.rules()?.view));
        return Ok(());
    }
    let id = id.unwrap_or_default();
    let (_, said) = store::documents::edit(&target, |rules: &mut FailureRules| match action.as_str() {
        "add" => {
            rules.add(RuleFields { by: fields.by.clone().or_else(super::quarantine::who_is_adding), ..fields.clone() })
        }
        "edit" => rules.edit(&id, fields.clone()).map(|()| id.clone()),
        "remove" => rules.remove(&id).map(|()| id.clone()),
        "close" => rules.set_closed(&id, Some(crate::clock::now_ms())).map(|()| id.clone()),
        "reopen" => rules.set_closed(&id, None).map(|()| id.clone()),
        other => {
            Err(AppError::bad(format!("unknown rules action {other:?} (add, edit, remove, close, reopen or list)")))
        }
    })?;
    println!("objstore-results: rule {said}: {action} done");
    Ok(())
}

/// The rules as lines: id, title, issue, patterns, and what they matched lately.
fn rules_table(view: &RulesView) -> String {
    if view.rules.is_empty() {
        return "The bucket holds no failure rules.\n".into();
    }
    let mut out = String::new();
    for r in &view.rules {
        let rule = &r.rule;
        let closed = if rule.closed.is_some() { " (closed)" } else { "" };
        out.push_str(&format!("{}{closed}  {}  {}\n", rule.id, rule.title, rule.issue));
        for (what, pattern) in [("test", &rule.test), ("text", &rule.text)] {
            if let Some(pattern) = pattern {
                out.push_str(&format!("    {what}: {pattern}\n"));
            }
        }
        let i = &r.impact;
        out.push_str(&format!(
            "    {} runs failed, {} commits blocked, {} pairs, {} CI minutes lost\n",
            i.runs, i.blocked, i.pairs, i.minutes
        ));
    }
    out
}
