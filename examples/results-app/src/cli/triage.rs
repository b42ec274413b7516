//! `objstore-results triage [--apply] [--confirm ID] [--webhook URL]`: weighs the triage
//! lifecycle once (as `serve` does every few minutes), moves the bucket's `.lifecycle` on, and
//! prints its proposals; `--apply` applies those that activated, `--confirm ID` applies an
//! active one, `--webhook` posts the events.

use crate::error::{AppError, AppResult};
use crate::model::lifecycle::Proposal;
use crate::store::Target;
use crate::web::webhook;

use super::{open_viewer, unknown, value_of};

/// `objstore-results triage ...`.
pub fn run(args: &[String]) -> AppResult<()> {
    let (mut apply, mut hook, mut confirm) = (false, None, None);
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--apply" => apply = true,
            "--webhook" => hook = Some(value_of(flag, &mut args)?.clone()),
            "--confirm" => confirm = Some(value_of(flag, &mut args)?.clone()),
            other => return Err(unknown(other)),
        }
    }
    if apply && confirm.is_some() {
        return Err(AppError::bad("--apply applies what activates now, --confirm one active proposal: give one"));
    }
    if hook.as_deref().is_some_and(|h| !crate::model::is_web_address(h)) {
        return Err(AppError::bad("--webhook is an http(s) URL"));
    }
    let target = Target::from_env()?;
    eprintln!("objstore-results: the triage lifecycle of {}", target.describe());
    let viewer = open_viewer(&target, None)?;
    let events = match &confirm {
        Some(id) => vec![viewer.confirm_proposal(id, &super::quarantine::who_is_adding().unwrap_or("the CLI".into()))?],
        None => viewer.evaluate_lifecycle(apply)?,
    };
    for event in &events {
        println!("{}: {}", event.event, event.proposal.id);
    }
    if let Some(url) = hook {
        for (id, why) in webhook::deliver(&url, &events) {
            eprintln!("objstore-results: the webhook did not take {id}: {why}");
        }
    }
    let active = viewer.lifecycle()?.view.active;
    if active.is_empty() {
        println!("No proposal is active.");
    }
    for p in &active {
        println!("proposed: {}  ({})  {}", p.id, measures(p), p.why);
    }
    Ok(())
}

fn measures(p: &Proposal) -> String {
    p.measures.iter().map(|(window, m)| format!("{window} {m}")).collect::<Vec<_>>().join(", ")
}
