//! The flaky tests across every pair, ranked by the CI minutes they cost, then by how often they
//! flaked: the list a team reads to pick what to fix (Trunk's, Datadog's and BuildPulse's).

use super::*;
use crate::analysis::flaky::flaked;
use crate::analysis::impact::impacts;

/// The most tests the flaky list shows.
const LISTED: usize = 200;

impl Viewer {
    /// Every test flaky in some pair's window (its newest run and the [`PAGE`] before it), by
    /// the runs' digests; each with, per pair, the runs that ran it and those that show it
    /// flaked (failed at a commit where it also passed, or passed on a retry); its flake rate
    /// over all of them and since when; and per pair the newest run whose page marks it flaky.
    /// A test's name is read from that run (one GET per such run, cached for good).
    pub fn flaky_tests(&self) -> View<FlakyListView> {
        let (owners, requests) = self.code_owners()?;
        let mut view = self.view(|db| {
            let window = self.impact_window(db)?;
            let mut impacts = impacts(window.iter().map(Arc::as_ref), |f| (f.suite.clone(), f.id));
            let pairs = all_pairs(db)?;
            let windows = newest_digested(db, &pairs, PAGE + 1)?;
            let mut found: BTreeMap<(String, u32), Vec<FlakyOnPair>> = BTreeMap::new();
            let mut since: HashMap<(String, u32), u64> = HashMap::new();
            for ((platform, browser), runs) in pairs.iter().zip(&windows) {
                let window: Vec<Seen> = runs.iter().map(seen).collect();
                for f in flaked(&window) {
                    let (marked, oldest) = (&runs[f.marked], &runs[f.runs[f.runs.len() - 1]]);
                    let key = (f.suite.clone(), f.id);
                    if let Some(at) = started(oldest) {
                        let first = since.entry(key.clone()).or_insert(at);
                        *first = (*first).min(at);
                    }
                    found.entry(key).or_default().push(FlakyOnPair {
                        pair: format!("{platform}/{browser}"),
                        ran: f.ran,
                        flaky: f.runs.len(),
                        run: marked.key.clone(),
                    });
                }
            }
            let mut tests: Vec<FlakyListed> = found
                .into_iter()
                .map(|((suite, id), pairs)| {
                    let (flaky, ran) = pairs.iter().fold((0, 0), |(f, r), p| (f + p.flaky, r + p.ran));
                    FlakyListed {
                        since: since.get(&(suite.clone(), id)).copied(),
                        rate: flaky as f64 / ran.max(1) as f64,
                        flaky,
                        ran,
                        name: String::new(),
                        owners: Vec::new(),
                        impact: impacts.remove(&(suite.clone(), id)).unwrap_or_default(),
                        suite,
                        id,
                        pairs,
                    }
                })
                .collect();
            tests.sort_by(|a, b| {
                (b.impact.minutes.total_cmp(&a.impact.minutes))
                    .then(b.rate.total_cmp(&a.rate))
                    .then(b.flaky.cmp(&a.flaky))
                    .then(a.suite.cmp(&b.suite))
            });
            let more = tests.len() > LISTED;
            tests.truncate(LISTED);
            // Names from the newest run that shows each test flaky.
            let wanted: Vec<String> = tests.iter().map(|t| t.pairs[0].run.clone()).collect();
            let loaded: HashMap<String, Loaded> =
                load_runs(db, &wanted)?.into_iter().map(|l| (l.key.clone(), l)).collect();
            for test in &mut tests {
                let named = loaded.get(&test.pairs[0].run).and_then(|run| {
                    run.tests_with_ids()
                        .find(|(t, id)| t.suite == test.suite && *id == test.id)
                        .map(|(t, _)| t.name.clone())
                });
                test.name = named.unwrap_or_else(|| format!("(a test of {} whose run cannot be read)", test.suite));
                test.owners = owners.of_test(&test.suite, &test.name);
            }
            Ok(FlakyListView {
                window: PAGE + 1,
                tests,
                more,
                triage: TriageRules::new(self.new_days, &*self.newest(db)?),
            })
        })?;
        view.add_requests(requests);
        Ok(view)
    }
}
