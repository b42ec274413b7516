//! One run (by key, or a CI run of many files by its id) with its classes, and the diff of
//! two runs.

use super::*;
use crate::model::failure_rules::FailureRules;
use crate::model::run_title;

impl Viewer {
    /// One run: its files and tests, each test with its classes (regressed, flaky, broken,
    /// divergent: [`classes::RULES`]) weighed against the pair's [`PAGE`] runs before it and
    /// every pair's newest runs; and the pair's previous run, to diff against.
    pub fn run(&self, key: &str) -> View<RunView> {
        pair_of(key)?;
        let key = key.to_string();
        let (failure_rules, rule_requests) = self.failure_rules()?;
        let mut view = self.view(move |db| {
            let this = self.find_run(db, &key)?;
            let newest = self.newest(db)?;
            let mut view = run_view(db, &this, &Pairs::new(&newest.seen), newest.default_branch.as_deref())?;
            self.run_novelty(db, &failure_rules, &this, &mut view)?;
            Ok(view)
        })?;
        view.add_requests(rule_requests);
        Ok(view)
    }

    /// Marks each failed test of `view` (of run `this`) new, known or seen before.
    fn run_novelty(
        &self,
        db: &Cache,
        failure_rules: &FailureRules,
        this: &Loaded,
        view: &mut RunView,
    ) -> AppResult<()> {
        let Some(detail) = view.detail.as_mut() else { return Ok(()) };
        let novelties = self.novelties(db, failure_rules, &self.facts_of(this))?;
        let failed = detail.tests.iter_mut().filter(|t| t.status == Status::Failed);
        for (test, novelty) in failed.zip(novelties) {
            test.novelty = Some(novelty);
        }
        Ok(())
    }

    /// Every pair's part of CI run `id` (the files posted with `--run ID` or from one CI run),
    /// each as [`Viewer::run`] shows it: the run's anchor names its segment, the `run` index
    /// finds its pairs. A run nobody anchored is not found. `id` may name a scoped token's run
    /// (`<id>@<scope>`); a plain id names it too when it is the only run of that id.
    pub fn ci_run(&self, id: &str) -> View<RunsView> {
        check_run_name("run", id)?;
        let (failure_rules, rule_requests) = self.failure_rules()?;
        let mut view = self.view(|db| {
            let not_found = || {
                AppError::not_found(format!("no run {id:?} in the bucket (runs posted with --run or from CI have one)"))
            };
            let (name, found) = ci_run_files(db, id)?.ok_or_else(not_found)?;
            let runs = load_runs(db, &run_keys(&found))?;
            if runs.is_empty() {
                return Err(not_found());
            }
            let newest = self.newest(db)?;
            let weighed = Pairs::new(&newest.seen);
            let default = newest.default_branch.as_deref();
            let mut views = Vec::new();
            for run in &runs {
                let mut view = run_view(db, run, &weighed, default)?;
                self.run_novelty(db, &failure_rules, run, &mut view)?;
                views.push(view);
            }
            Ok(RunsView { run: Some(name), runs: views })
        })?;
        view.add_requests(rule_requests);
        Ok(view)
    }

    /// CI run `id` as its page shows it: each pair's run (a job), and its failing and flaky
    /// tests, each once with the pairs it hit (see [`Viewer::ci_run`]).
    pub fn ci_run_page(&self, id: &str) -> View<CiRunView> {
        let Costed { view, cost } = self.ci_run(id)?;
        let run = view.run.unwrap_or_default();
        let (mut failures, mut flaky) = (Vec::<FailingTest>::new(), Vec::<FailingTest>::new());
        // Each test's place in its list, so that a test on many pairs is found at once.
        let mut at: HashMap<(bool, String, String), usize> = HashMap::new();
        for each in &view.runs {
            let pair = format!("{}/{}", each.row.platform, each.row.browser);
            for test in each.detail.iter().flat_map(|d| &d.tests) {
                let is_flaky = test.classes.iter().any(|c| c.class == Verdict::Flaky);
                let failed = test.status == Status::Failed;
                if !failed && !is_flaky {
                    continue;
                }
                let list = if failed { &mut failures } else { &mut flaky };
                let place = *at.entry((failed, test.suite.clone(), test.name.clone())).or_insert_with(|| {
                    list.push(FailingTest {
                        suite: test.suite.clone(),
                        name: test.name.clone(),
                        pairs: vec![],
                        classes: Default::default(),
                        message: test.message.as_deref().map(|m| first_line(m, 300)),
                    });
                    list.len() - 1
                });
                let listed = &mut list[place];
                // A test failing in two files of one run (two builds) names its pair once.
                if listed.pairs.last().is_none_or(|(p, _)| *p != pair) {
                    listed.pairs.push((pair.clone(), each.row.key.clone()));
                }
                listed.classes.extend(test.classes.iter().map(|c| c.class.name()));
            }
        }
        let rows = view.runs.into_iter().map(|each| each.row).collect();
        Ok(Costed { view: CiRunView { title: run_title(&run), run, rows, failures, flaky }, cost })
    }

    /// What changed from run `from` to run `to`: tests newly failing, newly passing, added and
    /// removed (a test is its suite, name and occurrence).
    pub fn diff(&self, from: &str, to: &str) -> View<DiffView> {
        for key in [from, to] {
            pair_of(key)?;
        }
        let keys = [from.to_string(), to.to_string()];
        self.view(move |db| {
            let mut loaded = Vec::new();
            for key in &keys {
                let run = self.find_run(db, key)?;
                if run.reports().next().is_none() {
                    let why = run.files.iter().find_map(|f| f.run.as_ref().err()).cloned().unwrap_or_default();
                    return Err(AppError::refused(format!("run {key:?} cannot be read: {why}")));
                }
                loaded.push(run);
            }
            let index = |run: &Loaded| -> BTreeMap<TestId, Test> {
                identified(run.tests()).map(|(id, (_, t))| (id, t.clone())).collect()
            };
            let (before, after) = (index(&loaded[0]), index(&loaded[1]));
            let entry = |t: &Test| DiffTest {
                suite: t.suite.clone(),
                name: t.name.clone(),
                status: t.status,
                message: t.message.clone(),
            };
            let (mut failing, mut passing, mut added, mut removed) = (vec![], vec![], vec![], vec![]);
            for (id, t) in &after {
                match before.get(id) {
                    None => added.push(entry(t)),
                    Some(b) if b.status != Status::Failed && t.status == Status::Failed => failing.push(entry(t)),
                    Some(b) if b.status == Status::Failed && t.status == Status::Passed => passing.push(entry(t)),
                    Some(_) => {}
                }
            }
            for (id, t) in &before {
                if !after.contains_key(id) {
                    removed.push(entry(t));
                }
            }
            Ok(DiffView {
                from: brief(&loaded[0]),
                to: brief(&loaded[1]),
                newly_failing: failing,
                newly_passing: passing,
                added,
                removed,
            })
        })
    }
}
