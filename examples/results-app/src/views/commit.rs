//! The commit view: every pair at one commit, or two commits compared.

use super::*;

impl Viewer {
    /// Every pair at one commit (`commit` a prefix of it): each pair's newest run at it among its
    /// last [`COMMIT_RUNS`] (found by their names' digests: the bodies read are those of the
    /// runs shown, and of the base's); the tests divergent there and flaky there (among one
    /// pair's runs at it), by [`rules`]; every test that failed there, with its message; with
    /// `base`, per pair, the tests newly failing and fixed since that commit.
    pub fn commit(&self, commit: &str, base: Option<&str>) -> View<CommitView> {
        let (asked, asked_base) = (commit, base);
        for (field, value) in std::iter::once(("commit", commit)).chain(base.map(|b| ("base", b))) {
            check_label(field, value)?;
            if value.len() < 7 {
                return Err(AppError::bad(format!("{field} {value:?}: give at least 7 characters of it")));
            }
        }
        let (failure_rules, rule_requests) = self.failure_rules()?;
        let mut view = self.view(|db| {
            // Each pair's last runs by their names' digests; bodies only of the runs shown.
            let pairs = all_pairs(db)?;
            let newest_runs = self.newest(db)?;
            let default_branch = newest_runs.default_branch.as_deref();
            let files = each_pair_files(db, &pairs, COMMIT_RUNS)?;
            let counts: Vec<usize> = files.iter().map(Vec::len).collect();
            let mut all = digested(db, files.into_iter().flatten().collect())?.into_iter();
            let recent: Vec<Vec<Digested>> = counts.iter().map(|n| all.by_ref().take(*n).collect()).collect();
            let commit_of = |d: &Digested| d.digests.iter().find_map(|x| x.commit.clone());
            // A prefix names one commit: the one the runs hold that starts with it (digests carry
            // a commit's first 12 characters, so a longer prefix is matched on those).
            let resolve = |field: &str, prefix: &str| -> AppResult<Option<String>> {
                let mut found: Vec<String> =
                    recent.iter().flatten().filter_map(commit_of).filter(|c| commit_matches(c, prefix)).collect();
                found.sort();
                found.dedup();
                match found.len() {
                    0 | 1 => Ok(found.pop()),
                    _ => {
                        Err(AppError::bad(format!("{field} {prefix:?} is more than one commit: {}", found.join(", "))))
                    }
                }
            };
            let Some(commit) = resolve("commit", commit)? else {
                return Ok(CommitView::empty(commit, base));
            };
            let base = match base {
                Some(base) => resolve("base", base)?,
                None => None,
            };
            let at = |d: &Digested, c: &str| commit_of(d).as_deref() == Some(c);
            // Per pair, its newest run at the commit and the run before it at the base.
            let shown: Vec<(Option<usize>, Option<usize>)> = recent
                .iter()
                .map(|runs| {
                    let newest = runs.iter().position(|d| at(d, &commit));
                    let before = newest
                        .zip(base.as_deref())
                        .and_then(|(n, b)| runs.iter().skip(n + 1).position(|d| at(d, b)).map(|i| n + 1 + i));
                    (newest, before)
                })
                .collect();
            let wanted: Vec<String> = recent
                .iter()
                .zip(&shown)
                .flat_map(|(runs, (n, b))| [n, b].into_iter().flatten().map(|i| runs[*i].key.clone()))
                .collect();
            let loaded: HashMap<String, Loaded> =
                load_runs(db, &wanted)?.into_iter().map(|l| (l.key.clone(), l)).collect();
            let outcomes = |l: &Loaded| -> BTreeMap<TestId, Status> {
                identified(l.tests()).map(|(id, (_, t))| (id, t.status)).collect()
            };
            let entry = |pair: &str, run: &str, (suite, name, _): &TestId| PairTest {
                pair: pair.to_string(),
                run: run.to_string(),
                suite: suite.clone(),
                name: name.clone(),
                message: None,
                novelty: None,
            };
            let (mut rows, mut failing, mut fixed, mut flaky) = (vec![], vec![], vec![], vec![]);
            let mut failures = Vec::new();
            let mut across: BTreeMap<TestId, Vec<(String, Status)>> = BTreeMap::new();
            for (((platform, browser), runs), (newest, before)) in pairs.iter().zip(&recent).zip(&shown) {
                let pair = format!("{platform}/{browser}");
                let Some((newest_at, newest)) = newest.and_then(|n| Some((n, loaded.get(&runs[n].key)?))) else {
                    continue;
                };
                rows.push(brief(newest));
                let now = outcomes(newest);
                let messages: HashMap<TestId, &str> = identified(newest.tests())
                    .filter_map(|(id, (_, t))| t.message.as_deref().map(|m| (id, m)))
                    .collect();
                let with_message = |id: &TestId| PairTest {
                    message: messages.get(id).map(|m| m.to_string()),
                    ..entry(&pair, &newest.key, id)
                };
                for (id, status) in &now {
                    across.entry(id.clone()).or_default().push((pair.clone(), *status));
                    if *status == Status::Failed {
                        failures.push(with_message(id));
                    }
                }
                // Flaky: the newest run's tests flaky among it and the runs it is weighed against
                // at the commit (as its page has them), by their digests and the one rule.
                let this = seen(&runs[newest_at]);
                let (earlier, _) = weighed_before(db, &runs[newest_at], default_branch)?;
                let commit_here = this.commit.clone();
                let same_commit = earlier.into_iter().filter(|r| r.commit == commit_here);
                let at_commit: Vec<Seen> = std::iter::once(this).chain(same_commit).collect();
                let named = newest.tests_with_ids().map(|(t, id)| (t.suite.as_str(), t.name.as_str(), id));
                let mut listed = std::collections::BTreeSet::new();
                for (suite, name, id) in named {
                    let outcomes = at_commit.iter().filter_map(|r| r.outcome(suite, id));
                    if rules::is_flaky(outcomes) && listed.insert((suite, name)) {
                        flaky.push(entry(&pair, &newest.key, &(suite.to_string(), name.to_string(), 1)));
                    }
                }
                // The base's run is one before the commit's, on this pair.
                let Some(before) = before.and_then(|b| loaded.get(&runs[b].key)) else { continue };
                let before = outcomes(before);
                for (id, status) in &now {
                    let before = before.get(id).copied();
                    if rules::is_regressed(before, *status) {
                        failing.push(with_message(id));
                    } else if rules::is_fixed(before, *status) {
                        fixed.push(entry(&pair, &newest.key, id));
                    }
                }
            }
            // The commits in full, as the runs' bodies name them.
            let full = |short: &str| {
                loaded
                    .values()
                    .flat_map(|l| l.reports())
                    .find_map(|r| r.ci.commit.clone().filter(|c| c.starts_with(short)))
            };
            let (commit, base) = (full(&commit).unwrap_or(commit), base.map(|b| full(&b).unwrap_or(b)));
            // A prefix longer than a digest's commit was matched on its first characters only.
            if !commit.starts_with(asked) || base.as_deref().zip(asked_base).is_some_and(|(b, a)| !b.starts_with(a)) {
                return Ok(CommitView::empty(asked, asked_base));
            }
            let divergent = across
                .into_iter()
                .filter_map(|((suite, name, _), by_pair)| {
                    rules::divergence(by_pair).map(|(passed, failed)| Divergent { suite, name, passed, failed })
                })
                .collect();
            // Whether each failure is new (or known to a rule), weighed in the runs shown.
            let mut failed_in: Vec<&Loaded> = Vec::new();
            for run in failures.iter().filter_map(|f| loaded.get(&f.run)) {
                if !failed_in.iter().any(|l| l.key == run.key) {
                    failed_in.push(run);
                }
            }
            let novelty = self.novelty_by_test(db, &failure_rules, &failed_in)?;
            Viewer::mark_novelty(&novelty, failures.iter_mut().chain(failing.iter_mut()));
            Ok(CommitView { commit, base, runs: rows, failures, newly_failing: failing, fixed, divergent, flaky })
        })?;
        view.add_requests(rule_requests);
        Ok(view)
    }
}
