//! The triage lifecycle weighed on the runs (`analysis/lifecycle.rs` decides): each test's flake
//! and pass rates over 3 and 7 days and each rule's failures over its windows, from the runs'
//! digests and the failures the cache keeps; the proposals moved on in the bucket's
//! `.lifecycle`; and a proposal applied when a person confirms it (or by itself, when the team
//! turned that on).

use std::collections::BTreeSet;

use super::triage::{began, has_failures, DAY_MS};
use super::*;
use crate::analysis::flaky::flaked;
use crate::analysis::lifecycle::{advance, policy, MIN_RUNS, QUIET_DAYS, RATE_DAYS};
use crate::clock::now_ms;
use crate::model::failure_rules::FailureRules;
use crate::model::lifecycle::{Action, Event, Lifecycle, Proposal};
use crate::model::quarantine::{Entry, Quarantine};
use crate::store::documents;

/// How many of each pair's newest runs the lifecycle weighs (its windows are days long).
const WEIGHED_RUNS: usize = 200;

/// A test's runs and flaky (or passed) runs in a window.
#[derive(Default, Clone, Copy)]
struct Tally {
    of: usize,
    ran: usize,
}

impl Tally {
    fn rate(self) -> f64 {
        if self.ran < MIN_RUNS {
            0.0
        } else {
            self.of as f64 / self.ran as f64
        }
    }
}

fn proposal(action: Action, subject: &str, measures: BTreeMap<String, f64>) -> Proposal {
    let action_name = serde_json::to_value(action).ok().and_then(|v| v.as_str().map(str::to_string));
    Proposal {
        id: format!("{} {subject}", action_name.unwrap_or_default()),
        action,
        suite: None,
        name: None,
        rule: None,
        why: policy(action).1.to_string(),
        measures,
        since: 0,
    }
}

impl Viewer {
    /// Every test and rule the lifecycle could propose something for at `now`, weighed.
    pub fn weigh_lifecycle(&self, now: u64) -> AppResult<Vec<Proposal>> {
        let (quarantine, _) = documents::load::<Quarantine>(&self.target)?;
        let (rules, _) = self.failure_rules()?;
        let built = self.view(|db| {
            let runs = newest_digested(db, &all_pairs(db)?, WEIGHED_RUNS)?;
            let mut weighed = self.weigh_flaky(db, &runs, &quarantine, now)?;
            weighed.extend(self.weigh_quarantined(&runs, &quarantine, now)?);
            weighed.extend(self.weigh_rules(db, &runs, &rules, now)?);
            Ok(weighed)
        })?;
        Ok(built.view)
    }

    /// Tests flaky over 3 or 7 days that no quarantine entry holds: their flake rates (the
    /// runs where they flaked over the runs, on every pair, that ran them).
    fn weigh_flaky(&self, db: &Cache, runs: &[Vec<Digested>], q: &Quarantine, now: u64) -> AppResult<Vec<Proposal>> {
        // Each window's runs, per pair, as the classes weigh them.
        let windows: Vec<(u64, Vec<Vec<Seen>>)> = RATE_DAYS
            .iter()
            .map(|days| {
                let since = now.saturating_sub(days * DAY_MS);
                (*days, runs.iter().map(|pair| pair.iter().filter(|d| began(d) >= since).map(seen).collect()).collect())
            })
            .collect();
        let mut flaked_in: BTreeMap<(String, u32), BTreeMap<u64, usize>> = BTreeMap::new();
        let mut marked: HashMap<(String, u32), String> = HashMap::new();
        for (days, pairs) in &windows {
            for window in pairs {
                for f in flaked(window) {
                    let key = (f.suite.clone(), f.id);
                    marked.entry(key.clone()).or_insert_with(|| window[f.marked].key.clone());
                    *flaked_in.entry(key).or_default().entry(*days).or_default() += f.runs.len();
                }
            }
        }
        let off = policy(Action::Quarantine).0.off;
        let mut candidates = Vec::new();
        for ((suite, id), by_days) in flaked_in {
            let mut measures = BTreeMap::new();
            for (days, pairs) in &windows {
                let ran =
                    pairs.iter().flatten().filter(|r| r.outcome(&suite, id).is_some_and(|o| o.is_outcome())).count();
                let of = by_days.get(days).copied().unwrap_or(0);
                measures.insert(format!("{days}d"), round(Tally { of, ran }.rate()));
            }
            if measures.values().any(|m| *m >= off) {
                candidates.push((suite, id, measures));
            }
        }
        let wanted: Vec<String> = candidates
            .iter()
            .map(|(suite, id, _)| marked[&(suite.clone(), *id)].clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let loaded: HashMap<String, Loaded> = load_runs(db, &wanted)?.into_iter().map(|l| (l.key.clone(), l)).collect();
        // One proposal per test name (a name twice in a file is one test to quarantine).
        let mut found: BTreeMap<String, Proposal> = BTreeMap::new();
        for (suite, id, measures) in candidates {
            let name = loaded.get(&marked[&(suite.clone(), id)]).and_then(|run| {
                run.tests_with_ids().find(|(t, i)| t.suite == suite && *i == id).map(|(t, _)| t.name.clone())
            });
            let Some(name) = name else { continue };
            if q.entries.iter().any(|e| e.suite == suite && e.name == name) {
                continue;
            }
            let mut p = proposal(Action::Quarantine, &format!("{suite}::{name}"), measures);
            (p.suite, p.name) = (Some(suite), Some(name));
            found.entry(p.id.clone()).or_insert(p);
        }
        Ok(found.into_values().collect())
    }

    /// Quarantined tests: their pass rates over 3 and 7 days on the pairs their entries cover.
    fn weigh_quarantined(&self, runs: &[Vec<Digested>], q: &Quarantine, now: u64) -> AppResult<Vec<Proposal>> {
        let mut found = Vec::new();
        let mut tests: Vec<(&str, &str)> = q.entries.iter().map(|e| (e.suite.as_str(), e.name.as_str())).collect();
        tests.sort_unstable();
        tests.dedup();
        for (suite, name) in tests {
            let id = digest::test_id(suite, name, 1);
            let entries: Vec<&Entry> = q.entries.iter().filter(|e| e.suite == suite && e.name == name).collect();
            let mut measures = BTreeMap::new();
            for days in RATE_DAYS {
                let since = now.saturating_sub(days * DAY_MS);
                let mut tally = Tally::default();
                let covered = runs
                    .iter()
                    .flatten()
                    .filter(|d| entries.iter().any(|e| pair_matches(&e.pairs, &d.platform, &d.browser)));
                for d in covered.filter(|d| began(d) >= since) {
                    if let Some(outcome) = seen(d).outcome(suite, id).filter(|o| o.is_outcome()) {
                        tally.ran += 1;
                        tally.of += usize::from(outcome.status == Status::Passed && !outcome.retried);
                    }
                }
                measures.insert(format!("{days}d"), round(tally.rate()));
            }
            let mut p = proposal(Action::Release, &format!("{suite}::{name}"), measures);
            (p.suite, p.name) = (Some(suite.to_string()), Some(name.to_string()));
            found.push(p);
        }
        Ok(found)
    }

    /// Rules: an open one older than [`QUIET_DAYS`], whether it matched nothing in them; a
    /// closed one, the failures it matched since it was closed over 3 and 7 days.
    fn weigh_rules(
        &self,
        db: &Cache,
        runs: &[Vec<Digested>],
        rules: &FailureRules,
        now: u64,
    ) -> AppResult<Vec<Proposal>> {
        if rules.rules.is_empty() {
            return Ok(Vec::new());
        }
        let since = now.saturating_sub(QUIET_DAYS * DAY_MS);
        let failing: Vec<&Digested> = runs.iter().flatten().filter(|d| began(d) >= since && has_failures(d)).collect();
        let facts = self.facts(db, &failing)?;
        // The start of each run each rule matched a failure in (a pass on a retry counts: the
        // intermittent is still there).
        let mut matched: HashMap<String, Vec<u64>> = HashMap::new();
        for run in &facts {
            for f in &run.failures {
                if let Some(rule) = rules.matching(&f.suite, &f.name, &f.text) {
                    matched.entry(rule.id.clone()).or_default().push(run.started.unwrap_or(0));
                }
            }
        }
        let mut found = Vec::new();
        for rule in &rules.rules {
            let seen_at = matched.get(&rule.id).map(Vec::as_slice).unwrap_or_default();
            let (action, measures) = match rule.closed {
                None if rule.added <= since => {
                    let quiet = if seen_at.is_empty() { 1.0 } else { 0.0 };
                    (Action::CloseRule, BTreeMap::from([(format!("{QUIET_DAYS}d"), quiet)]))
                }
                None => continue,
                Some(closed) => {
                    let back = |days: u64| {
                        let from = now.saturating_sub(days * DAY_MS).max(closed);
                        seen_at.iter().filter(|at| **at > from).count() as f64
                    };
                    (Action::ReopenRule, RATE_DAYS.iter().map(|d| (format!("{d}d"), back(*d))).collect())
                }
            };
            let mut p = proposal(action, &rule.id, measures);
            p.rule = Some(rule.id.clone());
            found.push(p);
        }
        Ok(found)
    }

    /// Weighs the lifecycle now and moves the bucket's `.lifecycle` on (written with
    /// `If-Match`, only when a proposal activates or deactivates); with `auto_apply`, applies
    /// each proposal that activated. Answers the events.
    pub fn evaluate_lifecycle(&self, auto_apply: bool) -> AppResult<Vec<Event>> {
        let now = now_ms();
        let weighed = self.weigh_lifecycle(now)?;
        // Nothing to change, nothing written: a quiet bucket costs one GET a weighing.
        let (mut was, _) = documents::load::<Lifecycle>(&self.target)?;
        if advance(&mut was, weighed.clone(), now).is_empty() {
            return Ok(Vec::new());
        }
        let (_, said) = documents::edit(&self.target, |state: &mut Lifecycle| {
            let events = advance(state, weighed.clone(), now);
            serde_json::to_string(&events).map_err(|e| AppError::internal(e.to_string()))
        })?;
        let mut events: Vec<Event> = serde_json::from_str(&said).map_err(|e| AppError::internal(e.to_string()))?;
        if auto_apply {
            let activated: Vec<String> =
                events.iter().filter(|e| e.event == "activated").map(|e| e.proposal.id.clone()).collect();
            for id in activated {
                // One that cannot be applied now stays active for a person; the others go on.
                match self.confirm_proposal(&id, "the lifecycle") {
                    Ok(applied) => events.push(applied),
                    Err(e) => eprintln!("objstore-results: applying {id}: {e}"),
                }
            }
        }
        Ok(events)
    }

    /// Applies active proposal `id` (a person confirmed it, named `by`): claimed first (taken
    /// out of the active ones, `applied`, with `If-Match`: of two confirmations one claims it),
    /// then the quarantine or the rule changed; a change that fails puts it back. Answers the
    /// event.
    pub fn confirm_proposal(&self, id: &str, by: &str) -> AppResult<Event> {
        let (_, said) = documents::edit(&self.target, |state: &mut Lifecycle| {
            let Some(at) = state.active.iter().position(|p| p.id == id) else {
                return Err(AppError::not_found(format!(
                    "no active proposal {id:?} (it may have been applied or deactivated)"
                )));
            };
            let applied = state.active.remove(at);
            let event = state.note("applied", now_ms(), applied);
            serde_json::to_string(&event).map_err(|e| AppError::internal(e.to_string()))
        })?;
        let event: Event = serde_json::from_str(&said).map_err(|e| AppError::internal(e.to_string()))?;
        if let Err(e) = self.apply(&event.proposal, by) {
            let proposal = event.proposal.clone();
            documents::edit(&self.target, |state: &mut Lifecycle| {
                if !state.active.iter().any(|p| p.id == proposal.id) {
                    state.active.push(proposal.clone());
                }
                state.note("not applied", now_ms(), proposal.clone());
                Ok(String::new())
            })?;
            return Err(e);
        }
        Ok(event)
    }

    /// What a proposal does: quarantine or release its test, close or reopen its rule.
    fn apply(&self, p: &Proposal, by: &str) -> AppResult<()> {
        let (suite, name) = (p.suite.clone().unwrap_or_default(), p.name.clone().unwrap_or_default());
        let rule = p.rule.clone().unwrap_or_default();
        match p.action {
            Action::Quarantine => {
                let entry = Entry {
                    suite,
                    name,
                    pairs: "*/*".into(),
                    reason: format!("proposed by the lifecycle: {}", p.why),
                    until: None,
                    added: now_ms(),
                    by: Some(by.chars().take(crate::model::MAX_LABEL).collect()),
                };
                entry.check()?;
                documents::edit(&self.target, |q: &mut Quarantine| {
                    q.add(entry.clone());
                    Ok(String::new())
                })?;
            }
            Action::Release => {
                documents::edit(&self.target, |q: &mut Quarantine| Ok(q.remove(&suite, &name, None).to_string()))?;
            }
            Action::CloseRule | Action::ReopenRule => {
                let closed = (p.action == Action::CloseRule).then(now_ms);
                self.edit_rules(|rules| rules.set_closed(&rule, closed).map(|()| rule.clone()))?;
            }
        }
        Ok(())
    }

    /// The lifecycle as the page shows it: the active proposals (one GET of `.lifecycle`) and
    /// the newest events.
    pub fn lifecycle(&self) -> View<LifecycleView> {
        let (state, requests) = documents::load::<Lifecycle>(&self.target)?;
        let mut view = self.view(|_| {
            let history = state.history.iter().rev().take(50).cloned().collect();
            Ok(LifecycleView { active: state.active.clone(), history })
        })?;
        view.add_requests(requests);
        Ok(view)
    }
}

/// The lifecycle's active proposals, and its newest events first.
#[derive(serde::Serialize)]
pub struct LifecycleView {
    pub active: Vec<Proposal>,
    pub history: Vec<Event>,
}

/// A measure to three places.
fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
