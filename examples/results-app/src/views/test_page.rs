//! A test's own page: on every pair that runs it (or one), how often it failed and flaked, when
//! it last passed and first failed, its runs as a table and the failure groups it falls in.

use super::*;
use crate::analysis::fingerprint::RuleRef;
use crate::analysis::flaky::flaky_runs;
use crate::analysis::rules::Outcome;
use crate::model::failure_rules::matched_text;

/// The runs a test's table shows (each read whole, once, then cached).
const ROWS: usize = 50;

impl Viewer {
    /// Test `suite` › `name` on `pair` (else every pair whose runs hold its suite): per pair,
    /// over its newest runs ([`history::HISTORY_RUNS`] of one pair, the flaky window's
    /// [`PAGE`] + 1 of each of many) by their names' digests, the runs that ran it, failed it
    /// and show it flaky (the one rule), its flake rate, the newest run it passed in and the
    /// oldest it failed in; the newest [`ROWS`] runs that ran it as a table (commit, branch,
    /// pair, outcome with attempts, the message's first line, duration), read whole; the
    /// failure groups its failures there fall in; and on one pair, its history's strip.
    pub fn test_page(&self, pair: Option<(&str, &str)>, suite: &str, name: &str) -> View<TestPageView> {
        for (field, value) in [("suite", suite), ("name", name)] {
            if value.is_empty() || value.len() > 4096 {
                return Err(AppError::bad(format!("{field} must be 1 to 4096 bytes")));
            }
        }
        if let Some((platform, browser)) = pair {
            pair_prefix(platform, browser)?;
        }
        let (owners, requests) = self.code_owners()?;
        let (failure_rules, rule_requests) = self.failure_rules()?;
        let mut view = self.view(|db| {
            let pairs = match pair {
                Some((platform, browser)) => vec![(platform.to_string(), browser.to_string())],
                None => all_pairs(db)?,
            };
            // The figures weigh each pair's newest runs as the flaky list does; one pair's table
            // and strip go back further.
            let window = PAGE + 1;
            let read = if pair.is_some() { history::HISTORY_RUNS } else { window };
            let windows = newest_digested(db, &pairs, read)?;
            let id = digest::test_id(suite, name, 1);
            let mut on_pairs = Vec::new();
            // Per pair listed, the newest run that ran the test's suite: read whole to see that
            // the test is there (a digest names a suite's failed tests, not all of them).
            let mut newest_ran: Vec<String> = Vec::new();
            let mut ran_in: Vec<&Digested> = Vec::new();
            for ((platform, browser), runs) in pairs.iter().zip(&windows) {
                let seen: Vec<Seen> = runs.iter().map(seen).collect();
                let outcomes: Vec<Option<Outcome>> =
                    seen.iter().map(|r| r.outcome(suite, id).filter(|o| o.is_outcome())).collect();
                let ran: Vec<usize> = (0..runs.len()).filter(|i| outcomes[*i].is_some()).collect();
                let counted = runs.len().min(window);
                let outcomes = &outcomes[..counted];
                let ran_counted: Vec<usize> = ran.iter().copied().filter(|i| *i < counted).collect();
                if ran_counted.is_empty() {
                    continue;
                }
                let with = |status: Status| {
                    ran_counted.iter().copied().filter(move |i| outcomes[*i].is_some_and(|o| o.status == status))
                };
                let flaky = flaky_runs(&seen[..counted], outcomes).len();
                let (last_passed, first_failed) = (with(Status::Passed).next(), with(Status::Failed).next_back());
                on_pairs.push(TestOnPair {
                    pair: format!("{platform}/{browser}"),
                    ran: ran_counted.len(),
                    failed: with(Status::Failed).count(),
                    flaky,
                    rate: flaky as f64 / ran_counted.len() as f64,
                    last_passed: last_passed.map(|i| runs[i].key.clone()),
                    last_passed_at: last_passed.and_then(|i| started(&runs[i])),
                    first_failed: first_failed.map(|i| runs[i].key.clone()),
                    first_failed_at: first_failed.and_then(|i| started(&runs[i])),
                });
                newest_ran.push(runs[ran_counted[0]].key.clone());
                ran_in.extend(ran.iter().map(|i| &runs[*i]));
            }
            // The table: the newest runs that ran it, across pairs (run names sort newest first
            // within a pair; across pairs, by when they ran).
            ran_in.sort_by_key(|d| std::cmp::Reverse(started(d)));
            ran_in.truncate(ROWS);
            // On one pair, every run of its window, for the history's strip ("not run" too).
            let mut keys: Vec<String> = match pair {
                Some(_) => windows.iter().flatten().map(|d| d.key.clone()).collect(),
                None => ran_in.iter().map(|d| d.key.clone()).collect(),
            };
            keys.extend(newest_ran.iter().filter(|k| !keys.contains(k)).cloned().collect::<Vec<_>>());
            let loaded = load_runs(db, &keys)?;
            let holds = |key: &str| {
                loaded
                    .iter()
                    .find(|l| l.key == key)
                    .is_some_and(|l| l.tests().any(|(_, t)| t.suite == suite && t.name == name))
            };
            // A pair whose newest run of the suite lacks the test does not run it.
            let on_pairs: Vec<TestOnPair> =
                on_pairs.into_iter().zip(&newest_ran).filter(|(_, key)| holds(key)).map(|(p, _)| p).collect();
            let mut rows = Vec::new();
            let mut groups: BTreeMap<String, TestFailureGroup> = BTreeMap::new();
            let mut in_history = Vec::new();
            for run in &loaded {
                let tests: Vec<&Test> =
                    run.tests().map(|(_, t)| t).filter(|t| t.suite == suite && t.name == name).collect();
                let row = brief(run);
                in_history.push(TestInRun {
                    run: run.key.clone(),
                    time: row.time,
                    commit: row.ci.as_ref().and_then(|ci| ci.commit.clone()),
                    found: history::outcome_of(&tests),
                });
                let Some((status, duration, retried)) = history::outcome_of(&tests) else { continue };
                let failed = tests.iter().find(|t| t.status == Status::Failed);
                if let Some(test) = failed {
                    let print = fingerprint::fingerprint(test);
                    let rule = failure_rules.matching(&test.suite, &test.name, matched_text(test));
                    let key = fingerprint::group_key(rule, &print);
                    let group = groups.entry(key.clone()).or_insert_with(|| TestFailureGroup {
                        key,
                        fingerprint: print,
                        rule: rule.map(RuleRef::of),
                        text: fingerprint::normalised(test),
                        runs: 0,
                    });
                    group.runs += 1;
                }
                let message = failed.or(tests.first()).and_then(|t| t.message.as_deref()).map(|m| first_line(m, 200));
                let ci = row.ci.unwrap_or_default();
                rows.push(TestRunRow {
                    run: run.key.clone(),
                    pair: format!("{}/{}", run.platform, run.browser),
                    time: row.time,
                    commit: ci.commit,
                    branch: ci.branch,
                    status,
                    attempts: 1 + tests.iter().map(|t| t.detail.retries).max().unwrap_or(0),
                    passed_on_retry: retried,
                    message: if status == Status::Failed || retried { message } else { None },
                    duration,
                });
            }
            rows.sort_by_key(|r| std::cmp::Reverse(r.time));
            rows.truncate(ROWS);
            let mut groups: Vec<TestFailureGroup> = groups.into_values().collect();
            groups.sort_by_key(|g| std::cmp::Reverse(g.runs));
            Ok(TestPageView {
                suite: suite.to_string(),
                name: name.to_string(),
                pair: pair.map(|(p, b)| format!("{p}/{b}")),
                window,
                pairs: on_pairs,
                owners: owners.of_test(suite, name),
                rows,
                groups,
                history: pair.is_some().then(|| history::history(&in_history)),
            })
        })?;
        view.add_requests(requests + rule_requests);
        Ok(view)
    }
}
