//! The matrix (every pair's newest run, paged and filtered), a pair's history, the latest runs
//! across pairs, and every pair's newest runs for the page's summary.

use super::*;

impl Viewer {
    /// The home view: per pair, the newest run (on the branch asked for, else the default one:
    /// `branches.rs`) with its counts per suite, every file of that run
    /// counted, and how many of each suite's tests fall in each class; the pairs that pass
    /// `filter`, [`PAIRS`] at a time after the pair `filter.after`. Every pair's runs are weighed
    /// for the classes, whichever are shown.
    pub fn matrix(&self, filter: &MatrixFilter) -> View<MatrixView> {
        self.view(|db| {
            let (every, branch, newest) = self.shown_newest(db, filter.branch.as_deref())?;
            let Newest { pairs, runs, seen, .. } = &*newest;
            let weighed = std::cell::OnceCell::new();
            // A row's cells weigh its tests against the pair's runs before it and every pair's,
            // as a run's page does: worked out for the rows shown only, unless the filter reads
            // them, and kept with the newest runs.
            let with_cells = |i: usize, row: &mut RunRow| -> AppResult<()> {
                let newest_run = &runs[i][0];
                if newest_run.digests.is_empty() {
                    return Ok(());
                }
                if let Some(kept) = newest.cells.lock().unwrap_or_else(|p| p.into_inner())[i].clone() {
                    row.cells = Some(kept);
                    return Ok(());
                }
                let earlier = newest.before(db, i)?;
                let weighed = weighed.get_or_init(|| Pairs::new(seen));
                let worked_out = cells(&newest_run.digests, &seen[i][0], &evidence(&earlier, weighed));
                newest.cells.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(worked_out.clone());
                row.cells = Some(worked_out);
                Ok(())
            };
            let mut matching = Vec::new();
            let mut variants = std::collections::BTreeSet::new();
            for (i, (pair, runs)) in pairs.iter().zip(runs).enumerate() {
                let Some(newest) = runs.first() else { continue };
                let mut row = digest_brief(newest);
                if !newest.digests.is_empty() {
                    row.labels = Some(run_labels(&newest.digests));
                }
                if filter.reads_cells() {
                    with_cells(i, &mut row)?;
                }
                for (key, value) in row.labels.iter().flatten() {
                    if variants.len() < VARIANTS {
                        variants.insert(format!("{key}={}", value.as_str().unwrap_or_default()));
                    }
                }
                if filter.passes(&row) {
                    matching.push((pair, i, row));
                }
            }
            // Pairs in the index's order, (platform, browser): "linux" before "linux-x86_64".
            let after = filter.after.as_deref().map(|a| a.split_once('/').unwrap_or((a, "")));
            let start = match after {
                Some((p, b)) => matching.iter().position(|(pair, ..)| (pair.0.as_str(), pair.1.as_str()) > (p, b)),
                None => Some(0),
            }
            .unwrap_or(matching.len());
            let end = (start + PAIRS).min(matching.len());
            let next = (end < matching.len())
                .then(|| matching[..end].last().map(|(pair, ..)| format!("{}/{}", pair.0, pair.1)))
                .flatten();
            let matched = matching.len();
            let mut shown: Vec<(usize, RunRow)> =
                matching.into_iter().skip(start).take(end - start).map(|(_, i, row)| (i, row)).collect();
            if !filter.reads_cells() {
                for (i, row) in shown.iter_mut() {
                    with_cells(*i, row)?;
                }
            }
            let mut suites: Vec<String> = shown
                .iter()
                .flat_map(|(i, _)| &runs[*i][0].digests)
                .flat_map(|d| d.suites.iter().map(|s| s.name.clone()))
                .collect();
            sort_suites(&mut suites);
            let mut runtimes: BTreeMap<String, std::collections::BTreeSet<String>> =
                suites.iter().map(|s| (s.clone(), Default::default())).collect();
            for ((_, browser), runs) in pairs.iter().zip(runs) {
                for suite in runs.iter().take(1).flat_map(|r| &r.digests).flat_map(|d| &d.suites) {
                    if let Some(has) = runtimes.get_mut(&suite.name) {
                        has.insert(browser.clone());
                    }
                }
            }
            let distinct = |f: fn(&(String, String)) -> &String| {
                let mut values: Vec<String> = pairs.iter().map(f).cloned().collect();
                values.sort();
                values.dedup();
                values
            };
            Ok(MatrixView {
                suites,
                rows: shown.into_iter().map(|(_, row)| row).collect(),
                next,
                matching: matched,
                pairs: pairs.len(),
                platforms: distinct(|p| &p.0),
                browsers: distinct(|p| &p.1),
                labels: variants,
                runtimes,
                branches: branches::branches(&every, every.default_branch.as_deref()),
                branch: branch.map(|b| b.name),
                default_branch: every.default_branch.clone(),
                rules: Rules,
            })
        })
    }

    /// Every pair's newest runs, those on `asked` (a branch, `*` for any, none for the default
    /// one): with every branch's, and the branch they are on.
    pub(super) fn shown_newest(
        &self,
        db: &Cache,
        asked: Option<&str>,
    ) -> AppResult<(Arc<Newest>, Option<branches::OnBranch>, Arc<Newest>)> {
        let every = self.newest(db)?;
        let branch = self.on_branch(asked, &every)?;
        let newest = match (&branch, &every.on_default) {
            (None, _) => every.clone(),
            (Some(branch), Some(on_default)) if branch.default => on_default.clone(),
            (Some(branch), _) => Arc::new(self.newest_on(db, &every, branch)?),
        };
        Ok((every, branch, newest))
    }

    /// A pair's runs, newest first, [`PAGE`] at a time after the run `after` (paged by key),
    /// with the tests flaky at one commit (or version) among them ([`rules::is_flaky`]).
    pub fn history(&self, platform: &str, browser: &str, after: Option<&str>) -> View<PairHistoryView> {
        pair_prefix(platform, browser)?;
        if let Some(after) = after {
            if pair_of(after)? != (platform.to_string(), browser.to_string()) {
                return Err(AppError::bad(format!("after {after:?} is not a run of {platform}/{browser}")));
            }
        }
        self.view(|db| {
            let (page, next) = paged(pair_runs(db, platform, browser, after, PAGE + 1)?);
            let loaded = load_runs(db, &page)?;
            let flaky =
                flaky(&loaded).into_iter().map(|(basis, (suite, name, _))| FlakyTest { basis, suite, name }).collect();
            Ok(PairHistoryView {
                platform: platform.to_string(),
                browser: browser.to_string(),
                runs: loaded.iter().map(brief).collect(),
                next,
                flaky,
            })
        })
    }

    /// The latest runs across every pair, newest first, [`PAGE`] at a time after `after`.
    pub fn latest(&self, after: Option<&str>) -> View<LatestView> {
        self.view(|db| {
            let found = latest_files(db, after, PAGE + 1)?;
            let page = run_keys(&found[..found.len().min(PAGE)]);
            let next = (found.len() > PAGE).then(|| page.last().cloned()).flatten();
            let loaded = load_runs(db, &page)?;
            Ok(LatestView { runs: loaded.iter().map(brief).collect(), next })
        })
    }

    /// Each pair's newest run as [`Viewer::run`] shows it, the pairs weighed once for all
    /// (for `export`).
    pub fn newest_run_views(&self) -> View<RunsView> {
        self.view(|db| {
            let kept = self.newest(db)?;
            let newest = newest_runs(db, &kept.pairs, BROKEN_RUNS)?;
            let weighed = Pairs::new(&kept.seen);
            let default = kept.default_branch.as_deref();
            let views = newest
                .iter()
                .filter_map(|runs| runs.first())
                .map(|run| run_view(db, run, &weighed, default))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RunsView { run: None, runs: views })
        })
    }
}
