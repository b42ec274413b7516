//! Views by test: the search for tests, the top failures grouped by
//! fingerprint, and the quarantine.

use super::*;
use crate::analysis::impact::impacts;
use crate::analysis::novelty::Novelty;
use crate::analysis::quarantine::{releasable, RELEASE_AFTER};
use crate::model::codeowners::{CodeOwners, Stored};

impl Viewer {
    /// The quarantine's entries as stored, and the requests its read made.
    pub fn quarantine_entries(&self) -> AppResult<(crate::model::quarantine::Quarantine, u64)> {
        crate::store::documents::load(&self.target)
    }

    /// The quarantine (one GET of `.quarantine`, counted in the cost), each entry with the
    /// pairs it covers and, on each, the test's outcomes in the pair's last [`RELEASE_AFTER`]
    /// runs, by their names' digests; an entry whose test passed in all of them on every pair
    /// it covers is marked releasable.
    pub fn quarantine(&self) -> View<QuarantineView> {
        let (quarantine, requests) =
            crate::store::documents::load::<crate::model::quarantine::Quarantine>(&self.target)?;
        let mut view = self.view(|db| {
            let pairs = all_pairs(db)?;
            let mut runs_of: HashMap<(String, String), Vec<Digested>> = HashMap::new();
            let now = crate::clock::now_ms();
            let entries = quarantine
                .entries
                .iter()
                .map(|e| {
                    let id = digest::test_id(&e.suite, &e.name, 1);
                    let mut covered = Vec::new();
                    for (platform, browser) in pairs.iter().filter(|(p, b)| pair_matches(&e.pairs, p, b)) {
                        let key = (platform.clone(), browser.clone());
                        if !runs_of.contains_key(&key) {
                            let files = pair_files(db, platform, browser, None, RELEASE_AFTER)?;
                            runs_of.insert(key.clone(), digested(db, files)?);
                        }
                        let outcomes = runs_of[&key].iter().map(|d| seen(d).status(&e.suite, id)).collect();
                        covered.push(Covered { pair: format!("{platform}/{browser}"), outcomes });
                    }
                    Ok(QuarantineEntry {
                        entry: e.clone(),
                        releasable: releasable(covered.iter().map(|c| &c.outcomes[..])),
                        expired: e.expired(now),
                        pairs_covered: covered,
                    })
                })
                .collect::<AppResult<_>>()?;
            Ok(QuarantineView {
                entries,
                release_after: RELEASE_AFTER,
                history: quarantine.history.iter().rev().take(50).cloned().collect(),
            })
        })?;
        view.add_requests(requests);
        Ok(view)
    }

    /// Tests whose name or suite holds `query` (case aside), in each pair's newest run: at most
    /// [`FOUND`], each with its pair and status.
    pub fn search(&self, query: &str) -> View<SearchView> {
        let query = query.trim().to_lowercase();
        if query.is_empty() || query.chars().count() > 200 {
            return Err(AppError::bad("search for 1 to 200 characters of a test's name or suite"));
        }
        self.view(|db| {
            // Each pair's newest run only: the one read whole.
            let pairs = newest_runs(db, &all_pairs(db)?, 1)?;
            let mut found = Vec::new();
            let mut more = false;
            for run in pairs.iter().filter_map(|runs| runs.first()) {
                for (_, t) in run.tests() {
                    if !(t.name.to_lowercase().contains(&query) || t.suite.to_lowercase().contains(&query)) {
                        continue;
                    }
                    if found.len() == FOUND {
                        more = true;
                        break;
                    }
                    found.push(FoundTest {
                        platform: run.platform.clone(),
                        browser: run.browser.clone(),
                        run: run.key.clone(),
                        suite: t.suite.clone(),
                        name: t.name.clone(),
                        status: t.status,
                    });
                }
            }
            Ok(SearchView { query, tests: found, more })
        })
    }

    /// Failures grouped across pairs: every failed test of each pair's newest run, under the
    /// first failure rule that matches it, else by its fingerprint (the failure's text with
    /// paths, numbers and addresses taken out). Each group with its impact over each pair's
    /// newest runs ([`Viewer::impact_window`]), whether it is new, and its owners; ranked by
    /// the CI minutes it cost.
    pub fn failures(&self) -> View<FailuresView> {
        let (rules, rule_requests) = self.failure_rules()?;
        let mut view = self.view(|db| {
            // Each pair's newest run only: the one read whole.
            let pairs = newest_runs(db, &all_pairs(db)?, 1)?;
            let newest: Vec<&Loaded> = pairs.iter().filter_map(|runs| runs.first()).collect();
            let failures = newest.iter().flat_map(|run| {
                run.tests().filter(|(_, t)| t.status == Status::Failed).map(move |(_, test)| Failure {
                    pair: format!("{}/{}", run.platform, run.browser),
                    run: run.key.clone(),
                    test,
                })
            });
            let mut groups = fingerprint::group(failures, &rules);
            let novelty = self.novelty_by_test(db, &rules, &newest)?;
            for group in &mut groups {
                Viewer::mark_novelty(&novelty, group.tests.iter_mut());
                group.novelty = group_novelty(&group.tests);
            }
            let window = self.impact_window(db)?;
            let mut impacts = impacts(window.iter().map(Arc::as_ref), |f| f.group(&rules));
            for group in &mut groups {
                group.impact = impacts.remove(&group.key).unwrap_or_default();
            }
            groups.sort_by(|a, b| b.impact.minutes.total_cmp(&a.impact.minutes));
            Ok(FailuresView { groups, triage: TriageRules::new(self.new_days, &*self.newest(db)?) })
        })?;
        let (owners, requests) = self.code_owners()?;
        for group in &mut view.view.groups {
            group.owners = owners_of(&owners, group.tests.iter().map(|t| (t.suite.as_str(), t.name.as_str())));
        }
        view.add_requests(requests + rule_requests);
        Ok(view)
    }

    /// The team's CODEOWNERS as the bucket keeps it (one GET; none kept, none owned), and the
    /// requests that took. One the bucket holds that no longer parses owns nothing.
    pub fn code_owners(&self) -> AppResult<(CodeOwners, u64)> {
        let (stored, requests) = crate::store::documents::load::<Stored>(&self.target)?;
        Ok((CodeOwners::parse(&stored.text).unwrap_or_default(), requests))
    }
}

/// The owners of some tests, each once, in the order met.
pub(crate) fn owners_of<'t>(owners: &CodeOwners, tests: impl Iterator<Item = (&'t str, &'t str)>) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for (suite, name) in tests {
        for owner in owners.of_test(suite, name) {
            if !all.contains(&owner) {
                all.push(owner);
            }
        }
    }
    all
}

/// A group's word from its failures': known when a rule knows them, new when each is, else
/// the first seen before.
fn group_novelty(tests: &[PairTest]) -> Option<Novelty> {
    let each: Vec<&Novelty> = tests.iter().filter_map(|t| t.novelty.as_ref()).collect();
    let first = each.first()?;
    if first.known().is_some() || each.iter().all(|n| n.is_new()) {
        return Some((*first).clone());
    }
    each.into_iter().find(|n| matches!(n, Novelty::Seen { .. })).cloned()
}
