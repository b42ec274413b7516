//! The triage lifecycle's decisions, with hysteresis (LUCI Analysis's bug policies): a proposal
//! activates when its measure crosses its upper threshold in any window, and deactivates only
//! when every window is below its lower one, so a quiet weekend does not flap it. The measures
//! (`views/lifecycle.rs` works them out from the runs' digests and failures):
//! - quarantine a test: its flake rate over 3 and 7 days (at least [`MIN_RUNS`] runs of it in
//!   the window, else 0); on at 10%, off below 2%. A quarantined test is not proposed.
//! - release a quarantined test: its pass rate over 3 and 7 days (at least [`MIN_RUNS`] runs);
//!   on at 100% (quiet), off below 95%.
//! - close a rule's issue: whether no failure it matches was seen in 21 days (1, else 0), for a
//!   rule older than that; on at 1, off below 1 (Treeherder closes intermittents after 21 quiet
//!   days).
//! - reopen a closed rule: failures it matched since it was closed, over 3 and 7 days; on at 1,
//!   off below 1.

use std::collections::BTreeMap;

use crate::model::lifecycle::{Action, Event, Lifecycle, Proposal};

/// The fewest runs of a test in a window for its rate to count.
pub const MIN_RUNS: usize = 5;
/// The windows flake and pass rates are weighed over (days).
pub const RATE_DAYS: [u64; 2] = [3, 7];
/// The quiet window after which a rule's issue may close (days).
pub const QUIET_DAYS: u64 = 21;

/// A proposal's thresholds: on at `on` in any window, off below `off` in every one.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub on: f64,
    pub off: f64,
}

/// Each action's thresholds and its rule in words.
pub fn policy(action: Action) -> (Thresholds, &'static str) {
    match action {
        Action::Quarantine => (
            Thresholds { on: 0.10, off: 0.02 },
            "flaky in 10% or more of its runs over 3 or 7 days (5 runs at least); stays until under 2% over both",
        ),
        Action::Release => (
            Thresholds { on: 1.0, off: 0.95 },
            "quarantined, and passed every run over 3 or 7 days (5 runs at least); stays until under 95% over both",
        ),
        Action::CloseRule => (
            Thresholds { on: 1.0, off: 1.0 },
            "no failure it matches in 21 days (Treeherder closes intermittents so); stays until one comes back",
        ),
        Action::ReopenRule => (
            Thresholds { on: 1.0, off: 1.0 },
            "closed, and a failure it matches came back within 3 or 7 days; stays until none has for 7 days",
        ),
    }
}

/// Whether a proposal is active after weighing `measures`, given whether it was.
pub fn stays_active(was: bool, measures: impl IntoIterator<Item = f64>, t: Thresholds) -> bool {
    let mut measures = measures.into_iter();
    if was {
        measures.any(|m| m >= t.off)
    } else {
        measures.any(|m| m >= t.on)
    }
}

/// Moves `state` on to what `weighed` (every subject that could be proposed now) says, at
/// `now`: each weighed subject activates or stays by its thresholds; an active proposal no
/// longer weighed (its test quarantined, its rule removed) deactivates. Answers the events.
pub fn advance(state: &mut Lifecycle, weighed: Vec<Proposal>, now: u64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut was: BTreeMap<String, Proposal> = state.active.drain(..).map(|p| (p.id.clone(), p)).collect();
    let mut active: Vec<Proposal> = Vec::new();
    for mut proposal in weighed {
        // One proposal per id: a subject weighed twice is weighed once.
        if active.iter().any(|p| p.id == proposal.id) || events.iter().any(|e: &Event| e.proposal.id == proposal.id) {
            continue;
        }
        let (thresholds, _) = policy(proposal.action);
        let before = was.remove(&proposal.id);
        let on = stays_active(before.is_some(), proposal.measures.values().copied(), thresholds);
        match (before, on) {
            (Some(before), true) => {
                // As it activated: its measures then are its evidence.
                active.push(before);
            }
            (None, true) => {
                proposal.since = now;
                events.push(state.note("activated", now, proposal.clone()));
                active.push(proposal);
            }
            (Some(_), false) => events.push(state.note("deactivated", now, proposal)),
            (None, false) => {}
        }
    }
    for (_, gone) in was {
        events.push(state.note("deactivated", now, gone));
    }
    active.sort_by(|a, b| a.id.cmp(&b.id));
    state.active = active;
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flaky(rate_3d: f64, rate_7d: f64) -> Proposal {
        Proposal {
            id: "quarantine crud::put".into(),
            action: Action::Quarantine,
            suite: Some("crud".into()),
            name: Some("put".into()),
            rule: None,
            why: String::new(),
            measures: BTreeMap::from([("3d".into(), rate_3d), ("7d".into(), rate_7d)]),
            since: 0,
        }
    }

    /// On at 10% in either window; kept while either is at 2% or more; off when both fall
    /// under it; no event while nothing changes.
    #[test]
    fn proposals_do_not_flap() {
        let mut state = Lifecycle::default();
        let events = |state: &mut Lifecycle, p: Proposal, at| {
            advance(state, vec![p], at).into_iter().map(|e| e.event).collect::<Vec<_>>()
        };
        assert_eq!(events(&mut state, flaky(0.05, 0.08), 1), Vec::<String>::new(), "under 10%: not on");
        assert_eq!(events(&mut state, flaky(0.12, 0.08), 2), ["activated"]);
        // A quiet weekend: 3 days at 0%, 7 days still 3%: stays.
        assert_eq!(events(&mut state, flaky(0.0, 0.03), 3), Vec::<String>::new());
        assert_eq!(state.active[0].since, 2);
        assert_eq!(state.active[0].measures["3d"], 0.12, "its measures as it activated");
        assert_eq!(events(&mut state, flaky(0.0, 0.01), 4), ["deactivated"]);
        assert!(state.active.is_empty());
        // Weighed no more (quarantined by hand): an active proposal deactivates.
        events(&mut state, flaky(0.5, 0.5), 5);
        assert_eq!(advance(&mut state, vec![], 6).len(), 1);
        let history: Vec<&str> = state.history.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(history, ["activated", "deactivated", "activated", "deactivated"]);
    }
}
