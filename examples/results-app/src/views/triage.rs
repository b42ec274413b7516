//! What triage reads: each run's failures as facts (read from its bodies once and kept, since
//! a file never changes; a run that gains a file is read again), the window impact is counted over, and whether a failure is new. Every
//! figure comes from bodies the cache keeps for good: warm, none of it makes a request.

use super::*;
use crate::analysis::impact::{FailedTest, RunFacts};
use crate::analysis::novelty::{self, Novelty, LOOKED};
use crate::model::failure_rules::FailureRules;
use crate::model::stored_at;

/// The most bytes of facts kept in memory (past it, the memo starts again).
const FACTS_BYTES: usize = 64 << 20;
/// How many of each pair's newest runs the default branch's window for "new" looks through.
pub const NEW_RUNS: usize = 200;
pub(super) const DAY_MS: u64 = 86_400_000;

/// A run's place in the memo: its key and how many files it has (a CI run's jobs add files to
/// it; each file never changes).
fn memo_key(run: &str, files: usize) -> String {
    format!("{run}#{files}")
}

/// Runs' facts kept between views, and their weight.
#[derive(Default)]
pub(super) struct FactsMemo {
    runs: HashMap<String, Arc<RunFacts>>,
    weight: usize,
}

/// Whether a run's digests name a test that failed or passed on a retry.
pub(super) fn has_failures(d: &Digested) -> bool {
    d.unreadable > 0 || d.digests.iter().flat_map(|x| &x.suites).any(|s| s.failed > 0 || !s.retried_ids.is_empty())
}

/// The default branch's failed runs "new" looks through, newest first, and by each test that
/// failed in them (suite and digest id) the places of those runs.
pub(super) struct NewWindow {
    runs: Vec<Digested>,
    failed: HashMap<(String, u32), Vec<usize>>,
}

/// When a run started, by its digests, else when it was stored.
pub(super) fn began(d: &Digested) -> u64 {
    started(d).or_else(|| stored_at(&d.key)).unwrap_or(0)
}

impl Viewer {
    /// The facts of a run read whole (kept for the views after, until it gains a file).
    pub(super) fn facts_of(&self, run: &Loaded) -> Arc<RunFacts> {
        let kept_as = memo_key(&run.key, run.files.len());
        if let Some(kept) = self.facts.lock().unwrap_or_else(|p| p.into_inner()).runs.get(&kept_as) {
            return kept.clone();
        }
        let reports: Vec<&crate::model::Run> = run.reports().collect();
        let pair = format!("{}/{}", run.platform, run.browser);
        let facts =
            Arc::new(RunFacts::of(&run.key, &pair, stored_at(&run.key), reports.iter().copied(), run.tests_with_ids()));
        // Not kept: a run a file of which could not be read (a bucket error may pass), or one
        // so large it would crowd out the rest.
        if run.files.iter().any(|f| f.run.is_err()) || facts.weight() > FACTS_BYTES / 4 {
            return facts;
        }
        let mut memo = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        if memo.weight + facts.weight() > FACTS_BYTES {
            *memo = FactsMemo::default();
        }
        memo.weight += facts.weight();
        memo.runs.insert(kept_as, facts.clone());
        facts
    }

    /// The facts of `runs`, those not kept read from their bodies (cached for good).
    pub(super) fn facts(&self, db: &Cache, runs: &[&Digested]) -> AppResult<Vec<Arc<RunFacts>>> {
        let kept = |memo: &FactsMemo, d: &Digested| memo.runs.get(&memo_key(&d.key, d.files)).cloned();
        let missing: Vec<String> = {
            let memo = self.facts.lock().unwrap_or_else(|p| p.into_inner());
            runs.iter().filter(|d| kept(&memo, d).is_none()).map(|d| d.key.clone()).collect()
        };
        let mut read: HashMap<String, Arc<RunFacts>> =
            load_runs(db, &missing)?.iter().map(|l| (l.key.clone(), self.facts_of(l))).collect();
        let memo = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(runs.iter().filter_map(|d| read.remove(&d.key).or_else(|| kept(&memo, d))).collect())
    }

    /// The runs impact is counted over: each pair's newest run and the [`PAGE`] before it (the
    /// flaky list's window), those whose digests name a failure or a pass on a retry.
    pub(super) fn impact_window(&self, db: &Cache) -> AppResult<Vec<Arc<RunFacts>>> {
        let windows = newest_digested(db, &all_pairs(db)?, PAGE + 1)?;
        let failing: Vec<&Digested> = windows.iter().flatten().filter(|d| has_failures(d)).collect();
        self.facts(db, &failing)
    }

    /// The window "new" is weighed in: each pair's newest [`NEW_RUNS`] runs on the default
    /// branch (any branch where there is none) that failed, newest first, indexed by the tests
    /// that failed in them. Kept with every pair's newest runs.
    fn new_window(&self, db: &Cache, newest: &Newest) -> AppResult<Arc<NewWindow>> {
        if let Some(kept) = newest.new_window.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(kept);
        }
        let on = newest.default_branch.as_deref().map(digest::branch_key);
        let mut runs: Vec<Digested> = newest_digested(db, &newest.pairs, NEW_RUNS)?
            .into_iter()
            .flatten()
            .filter(|d| on.is_none_or(|on| d.branch().is_none_or(|b| b == on)))
            .filter(|d| d.digests.iter().flat_map(|x| &x.suites).any(|s| s.failed > 0))
            .collect();
        runs.sort_by_key(|d| std::cmp::Reverse(began(d)));
        let mut failed: HashMap<(String, u32), Vec<usize>> = HashMap::new();
        for (at, run) in runs.iter().enumerate() {
            for suite in run.digests.iter().flat_map(|x| &x.suites) {
                for id in &suite.failed_ids {
                    let places = failed.entry((suite.name.clone(), *id)).or_default();
                    if places.last() != Some(&at) {
                        places.push(at);
                    }
                }
            }
        }
        let window = Arc::new(NewWindow { runs, failed });
        *newest.new_window.lock().unwrap_or_else(|p| p.into_inner()) = Some(window.clone());
        Ok(window)
    }

    /// Whether each failure of `run` (those that failed in the end, in order) is new, known to
    /// a rule, or seen before on the default branch (see `analysis/novelty.rs`). The earlier
    /// runs read are read together, once each.
    pub(super) fn novelties(&self, db: &Cache, rules: &FailureRules, run: &RunFacts) -> AppResult<Vec<Novelty>> {
        let newest = self.newest(db)?;
        let window = self.new_window(db, &newest)?;
        let branch = newest.default_branch.clone().unwrap_or_else(|| "any branch".into());
        let before = run.started.unwrap_or(u64::MAX);
        let since = before.saturating_sub(self.new_days.saturating_mul(DAY_MS));
        // A run of the same commit (another pair's, a rerun) is no "before": a regression fails
        // on every pair at once, and is new on each.
        let same_commit = |d: &Digested| {
            let commit = d.digests.iter().find_map(|x| x.commit.as_deref());
            commit.zip(run.commit.as_deref()).is_some_and(|(c, own)| commit_matches(c, own))
        };
        let failures: Vec<&FailedTest> = run.failures.iter().filter(|f| f.failed).collect();
        // Per failure, the earlier runs where its test failed (newest first), and whether a
        // rule knows it (then none is read).
        let earlier: Vec<Vec<usize>> = failures
            .iter()
            .map(|f| {
                let places = window.failed.get(&(f.suite.clone(), f.id)).map(Vec::as_slice).unwrap_or_default();
                let d = |at: &usize| &window.runs[*at];
                places
                    .iter()
                    .copied()
                    .filter(|at| d(at).key != run.key && !same_commit(d(at)) && (since..before).contains(&began(d(at))))
                    .collect()
            })
            .collect();
        // The rule each failure matches, tried once: a known one reads no earlier run.
        let known: Vec<_> = failures.iter().map(|f| rules.matching(&f.suite, &f.name, &f.text)).collect();
        let mut wanted: Vec<usize> = earlier
            .iter()
            .zip(&known)
            .filter(|(_, known)| known.is_none())
            .flat_map(|(places, _)| places.iter().take(LOOKED).copied())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let wanted_runs: Vec<&Digested> = wanted.iter().map(|at| &window.runs[*at]).collect();
        let read: HashMap<String, Arc<RunFacts>> =
            self.facts(db, &wanted_runs)?.into_iter().map(|f| (f.key.clone(), f)).collect();
        Ok(failures
            .iter()
            .zip(&earlier)
            .zip(known)
            .map(|((failure, places), rule)| {
                let looked: Vec<&RunFacts> = places
                    .iter()
                    .take(LOOKED)
                    .filter_map(|at| read.get(&window.runs[*at].key).map(Arc::as_ref))
                    .collect();
                novelty::novelty(rule, failure, &looked, places.len(), &branch, self.new_days)
            })
            .collect())
    }

    /// Whether each failure of `runs` is new, by run key, suite and name (a test failing twice in
    /// a run is weighed by its first failure).
    pub(super) fn novelty_by_test(
        &self,
        db: &Cache,
        rules: &FailureRules,
        runs: &[&Loaded],
    ) -> AppResult<HashMap<(String, String, String), Novelty>> {
        let mut found = HashMap::new();
        for run in runs {
            let facts = self.facts_of(run);
            let failed = facts.failures.iter().filter(|f| f.failed);
            for (f, novelty) in failed.zip(self.novelties(db, rules, &facts)?) {
                found.entry((run.key.clone(), f.suite.clone(), f.name.clone())).or_insert(novelty);
            }
        }
        Ok(found)
    }

    /// Sets each of `tests`' novelty from `found` ([`Viewer::novelty_by_test`]).
    pub(super) fn mark_novelty<'t>(
        found: &HashMap<(String, String, String), Novelty>,
        tests: impl Iterator<Item = &'t mut PairTest>,
    ) {
        for test in tests {
            let key = (test.run.clone(), test.suite.clone(), test.name.clone());
            test.novelty = found.get(&key).cloned();
        }
    }

    /// The team's failure rules as the bucket keeps them (one GET; none kept, none known).
    pub fn failure_rules(&self) -> AppResult<(FailureRules, u64)> {
        let (rules, requests) = crate::store::documents::load::<FailureRules>(&self.target)?;
        Ok((rules.checked(), requests))
    }
}

impl TriageRules {
    /// The rules as they hold now: "new" over `days` on the default branch of `newest`.
    pub(super) fn new(days: u64, newest: &Newest) -> TriageRules {
        let branch = newest.default_branch.clone().unwrap_or_else(|| "any branch".into());
        TriageRules {
            impact: crate::analysis::impact::IMPACT_RULES.to_vec(),
            window: format!("each pair's newest run and the {PAGE} before it"),
            new: novelty::new_rule(&branch, days),
        }
    }
}
