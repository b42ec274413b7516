//! The views: typed answers to what the page, the summaries and the export ask (`shapes.rs`
//! declares each one's JSON), each with what it cost in bucket requests (the library's own
//! accounting). They reach the bucket only through `store` (its cache, readers and the
//! quarantine's object), weigh runs only through `analysis`, and never speak HTTP: `web`
//! serializes them, `report` writes them as text.
//!
//! A file per kind of view, each an `impl Viewer` block sharing what this file holds (the
//! viewer, its database and its memo of every pair's newest runs): `matrix.rs` (the seed's home
//! view: every pair, from the `platform, browser` index, its newest runs drawn from their files'
//! names' digests, a listing and no GET, paged and filtered here; a pair's history; the latest
//! runs), `run.rs` (one run, a CI run's parts, the diff of two runs), `by_test.rs` (a test's
//! history, the search, the top failures, the quarantine) and `commit.rs`.
//!
//! Everything read from the bucket is untrusted: a body that is not a run becomes a row that
//! says so, and the views carry only counts, labels and texts, never markup.

mod branches;
mod by_test;
mod commit;
pub mod filter;
mod flaky;
mod known;
mod lifecycle;
mod matrix;
pub mod rows;
mod run;
pub(crate) mod shapes;
mod test_page;
#[cfg(test)]
pub(crate) mod tests;
mod tree;
mod triage;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::analysis::classes::{classify, Pairs, Rules, Seen, Verdict, Weighed, BROKEN_RUNS};
use crate::analysis::fingerprint::PairTest;
use crate::analysis::fingerprint::{self, Failure};
use crate::analysis::history::{self, TestInRun};
use crate::analysis::rules::{self, Outcome};
use crate::error::{AppError, AppResult};
use crate::model::digest;
use crate::model::{
    check_label, check_run_name, check_text, identified, pair_matches, pair_of, pair_prefix, sort_suites, Detail,
    Status, Test, TestId,
};
use crate::store::cache::Cache;
use crate::store::reader::{
    all_pairs, ci_run_files, digested, each_pair_files, latest_files, load_runs, newest_digested, newest_runs,
    pair_files, pair_runs, run_keys, Digested, Loaded,
};
use crate::store::Target;
use crate::views::filter::MatrixFilter;
use crate::views::rows::{brief, cells, digest_brief, evidence, first_line, flaky, run_labels, seen, started};
use shapes::*;

/// The pairs the matrix shows at a time (the seed's limit, now a page).
pub const PAIRS: usize = 50;
/// The runs a history or the latest-runs page shows at a time.
pub const PAGE: usize = 25;
/// The most tests a search answers with.
pub const FOUND: usize = 100;
/// The most build-variant labels (`key=value`) the matrix offers as a filter.
pub const VARIANTS: usize = 200;
/// How many of each pair's newest runs the commit view looks through for the commit.
pub const COMMIT_RUNS: usize = 25;

/// Reads the results bucket through a database of its own (its cache).
pub struct Viewer {
    db: Cache,
    /// The bucket, for what lives beside the runs (the quarantine).
    target: Target,
    /// Views being built, and views begun so far: views are built side by side, each
    /// counting the requests made while it was built, so a view that overlapped another says
    /// its count may hold the other's ([`Cost::shared`]).
    building: AtomicUsize,
    begun: AtomicU64,
    /// Run keys found naming no files lately, and when: asked again, they cost no listing.
    missing: Mutex<HashMap<String, Instant>>,
    /// The files a writer beside this viewer stored, and how many the last view had seen.
    followed: Mutex<Option<(Arc<AtomicU64>, u64)>>,
    /// Every pair's newest runs as of when the library had made that many requests.
    newest: Mutex<Option<(u64, Arc<Newest>)>>,
    /// The branch the matrix shows unless asked for another (see `branches.rs`).
    default_branch: Option<String>,
    /// How many days before a failure "new" looks for one alike (`triage.rs`).
    new_days: u64,
    /// Runs' failures, read once (`triage.rs`).
    facts: Mutex<triage::FactsMemo>,
}

/// Every pair with its newest runs ([`classes::BROKEN_RUNS`]), as digests and as the classes
/// weigh them.
struct Newest {
    pairs: Vec<(String, String)>,
    runs: Vec<Vec<Digested>>,
    seen: Vec<Vec<Seen>>,
    /// The matrix's default branch (`branches.rs`), and every pair's newest runs on it: the
    /// home view's, worked out once with these.
    default_branch: Option<String>,
    on_default: Option<Arc<Newest>>,
    /// Per pair, the runs its newest is weighed against ([`weighed_before`]), once worked out:
    /// a warm matrix does not read them again.
    before: Mutex<Vec<Option<Arc<Vec<Seen>>>>>,
    /// The default branch's failed runs "new" is weighed against, once worked out (`triage.rs`).
    new_window: Mutex<Option<Arc<triage::NewWindow>>>,
    /// Per pair, its newest run's matrix cells, once worked out: a warm matrix does not weigh
    /// its tests again.
    cells: Mutex<Vec<Option<BTreeMap<String, shapes::Cell>>>>,
}

impl Newest {
    fn new(pairs: Vec<(String, String)>, runs: Vec<Vec<Digested>>, default_branch: Option<String>) -> Newest {
        let seen = runs.iter().map(|runs| runs.iter().map(seen).collect()).collect();
        let (before, cells) = (Mutex::new(vec![None; pairs.len()]), Mutex::new(vec![None; pairs.len()]));
        Newest { pairs, runs, seen, default_branch, on_default: None, before, new_window: Mutex::default(), cells }
    }

    /// The runs pair `i`'s newest run is weighed against (see [`weighed_before`]).
    fn before(&self, db: &Cache, i: usize) -> AppResult<Arc<Vec<Seen>>> {
        if let Some(kept) = self.before.lock().unwrap_or_else(|p| p.into_inner())[i].clone() {
            return Ok(kept);
        }
        let (earlier, _) = weighed_before(db, &self.runs[i][0], self.default_branch.as_deref())?;
        let earlier = Arc::new(earlier);
        self.before.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(earlier.clone());
        Ok(earlier)
    }
}

/// How long a run found missing is answered from memory.
const MISSING_FOR: Duration = Duration::from_secs(10);
/// Missing runs remembered at most (a loop of made-up keys must not grow it without bound).
const MISSING_REMEMBERED: usize = 10_000;

/// A view's answer: its data (one of [`shapes`]' views) and what it cost. It is serialized
/// once, by whoever sends it (the page's JSON); the reports read its fields.
pub type View<T> = AppResult<Costed<T>>;

impl Viewer {
    /// Opens the cache at `cache` (a SQLite file; created with its folder when missing).
    pub fn open(target: &Target, cache: &Path) -> AppResult<Viewer> {
        Ok(Viewer {
            db: Cache::open(target, cache)?,
            target: target.clone(),
            building: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            missing: Mutex::default(),
            followed: Mutex::default(),
            newest: Mutex::default(),
            default_branch: None,
            new_days: crate::analysis::novelty::NEW_DAYS,
            facts: Mutex::default(),
        })
    }

    /// The bucket it reads.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// How many days before a failure "new" looks for one alike (21 unless set; 1 to 3,650).
    pub fn with_new_days(mut self, days: u64) -> Viewer {
        self.new_days = days.clamp(1, 3650);
        self
    }

    /// The branch the matrix shows unless asked for another; unset, `main` or `master`.
    pub fn with_default_branch(mut self, branch: Option<String>) -> Viewer {
        self.default_branch = branch.filter(|b| !b.is_empty());
        self
    }

    /// Follows a writer's stored count (the collector's): a view after it stored a file lists
    /// the bucket again, whatever the refractory period, so that what was posted shows at once.
    pub fn follow(&self, stored: Arc<AtomicU64>) {
        let seen = stored.load(Ordering::Relaxed);
        *self.followed.lock().unwrap_or_else(|p| p.into_inner()) = Some((stored, seen));
    }

    /// Lists again when the followed writer stored something since the last view.
    fn catch_up(&self, db: &Cache) -> AppResult<()> {
        let mut followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((stored, seen)) = followed.as_mut() {
            let now = stored.load(Ordering::Relaxed);
            if now != *seen {
                db.relist()?;
                *seen = now;
            }
        }
        Ok(())
    }

    /// The run under `key` with its files. One the listing does not have may have been posted
    /// a moment ago: the bucket is listed again (with the change log, one LIST) before it is a
    /// 404, which is then remembered for [`MISSING_FOR`], so a made-up key costs one listing.
    fn find_run(&self, db: &Cache, key: &str) -> AppResult<Loaded> {
        let not_found = || AppError::not_found(format!("no run {key:?}"));
        {
            let mut missing = self.missing.lock().unwrap_or_else(|p| p.into_inner());
            missing.retain(|_, at| at.elapsed() < MISSING_FOR);
            if missing.contains_key(key) {
                return Err(not_found());
            }
        }
        let loaded = load_runs(db, &[key.to_string()])?.remove(0);
        if !loaded.files.is_empty() {
            return Ok(loaded);
        }
        db.relist()?;
        let loaded = load_runs(db, &[key.to_string()])?.remove(0);
        if !loaded.files.is_empty() {
            return Ok(loaded);
        }
        let mut missing = self.missing.lock().unwrap_or_else(|p| p.into_inner());
        if missing.len() >= MISSING_REMEMBERED {
            missing.clear();
        }
        missing.insert(key.to_string(), Instant::now());
        Err(not_found())
    }

    /// Lists the bucket now, whatever the refractory period (after this process wrote to it).
    pub fn relist(&self) -> AppResult<()> {
        self.db.relist()
    }

    /// Writes a checkpoint of the runs' names (see [`Cache::checkpoint`]).
    pub fn checkpoint(&self) -> AppResult<crate::store::cache::CheckpointReport> {
        self.db.checkpoint()
    }

    /// Builds a view with `build`, with its cost: the bucket requests made while it was built.
    /// Views do not wait for each other; what they share waits once (the listing after a
    /// write beside this viewer, every pair's newest runs).
    fn view<T>(&self, build: impl FnOnce(&Cache) -> AppResult<T>) -> View<T> {
        let before = self.db.accounts();
        let started = Instant::now();
        let this = self.begun.fetch_add(1, Ordering::SeqCst);
        let others = self.building.fetch_add(1, Ordering::SeqCst) > 0;
        let built = self.catch_up(&self.db).and_then(|()| build(&self.db));
        self.building.fetch_sub(1, Ordering::SeqCst);
        let shared = others || self.begun.load(Ordering::SeqCst) != this + 1;
        let spent = self.db.spent_since(&before);
        let ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let mut cost = Cost { shared, ms, ..Cost::of(spent) };
        // Whole milliseconds on both ends of the wait may round it past the view's own time.
        cost.bucket_ms = cost.bucket_ms.min(ms.ceil() as u64);
        Ok(Costed { view: built?, cost })
    }

    /// Every pair with its newest runs (listed first when the refractory period is over). The
    /// cache changes only through a bucket request, so they are worked out again only after the
    /// library made one: a warm reload of the matrix reads one scan, not one per pair.
    fn newest(&self, db: &Cache) -> AppResult<Arc<Newest>> {
        let pairs = all_pairs(db)?;
        let mut kept = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, newest)) = kept.as_ref().filter(|(at, n)| *at == db.requests() && n.pairs == pairs) {
            return Ok(newest.clone());
        }
        let runs = newest_digested(db, &pairs, BROKEN_RUNS)?;
        let default_branch = self.find_default_branch(db, &pairs, &runs)?;
        let mut newest = Newest::new(pairs, runs, default_branch);
        if let Some(name) = newest.default_branch.clone() {
            let on_default = self.newest_on(db, &newest, &branches::OnBranch { name, default: true, base: None })?;
            newest.on_default = Some(Arc::new(on_default));
        }
        let newest = Arc::new(newest);
        *kept = Some((db.requests(), newest.clone()));
        Ok(newest)
    }
}

/// One run's view (see [`Viewer::run`]), its classes weighed against the pair's runs before it
/// and `pairs` (every pair's newest runs).
fn run_view(db: &Cache, this: &Loaded, pairs: &Pairs, default_branch: Option<&str>) -> AppResult<RunView> {
    let mut row = brief(this);
    if this.reports().next().is_none() {
        return Ok(RunView { row, detail: None });
    }
    let this_digested = Digested::of(this);
    let (earlier, previous) = weighed_before(db, &this_digested, default_branch)?;
    let e = evidence(&earlier, pairs);
    let this_seen = seen(&this_digested);
    let tests: Vec<RunTest> = this
        .files
        .iter()
        .enumerate()
        .filter_map(|(file, f)| f.run.as_ref().ok().map(|run| (file, run)))
        .flat_map(|(file, run)| run.results.tests.iter().zip(digest::ids(run)).map(move |(t, id)| (file, t, id)))
        .map(|(file, t, id)| {
            // A retry counts where the test passed in the end, as the digests record it.
            let weighed = Weighed { suite: &t.suite, id, outcome: Outcome::of(t) };
            let classes = classify(&weighed, &this_seen, &e);
            RunTest {
                name: t.name.clone(),
                suite: t.suite.clone(),
                status: t.status,
                duration: t.duration,
                file,
                message: t.message.clone(),
                // The trace, output and earlier attempts, under CTRF's names; whether it is flaky
                // is the classes' word (a pass on a retry is flaky too).
                detail: Detail { flaky: false, ..t.detail.clone() },
                flaky: classes.iter().any(|c| c.class == Verdict::Flaky),
                classes,
                novelty: None,
            }
        })
        .collect();
    row.files = RunFiles::Each(
        this.files
            .iter()
            .map(|f| match &f.run {
                Ok(run) => RunFile::Read {
                    key: f.key.clone(),
                    file: run.ci.file.clone(),
                    job: run.ci.job.clone(),
                    tool: run.results.tool.clone(),
                    version: run.version.clone(),
                    tests: run.results.tests.len(),
                    rerun: run.ci.rerun,
                },
                Err(why) => RunFile::Unreadable { key: f.key.clone(), error: why.clone() },
            })
            .collect(),
    );
    row.labels = Some(run_labels(&this_digested.digests));
    let (previous, base) = previous.map_or((None, None), |p| (Some(p.key), p.base));
    Ok(RunView { row, detail: Some(RunDetail { tests, rules: Rules, previous, base }) })
}

/// The runs a run is weighed against, the same in every view (the classes' rules say so): the
/// pair's [`PAGE`] runs before it, of its own branch and its base's (`branches::earlier_runs`),
/// by their names' digests; and the one it is compared with.
fn weighed_before(
    db: &Cache,
    this: &Digested,
    default_branch: Option<&str>,
) -> AppResult<(Vec<Seen>, Option<branches::PreviousRun>)> {
    let earlier = digested(db, pair_files(db, &this.platform, &this.browser, Some(&this.key), PAGE)?)?;
    let (earlier, previous) = branches::earlier_runs(this, earlier, default_branch);
    Ok((earlier.iter().map(seen).collect(), previous))
}

/// Whether a commit as a digest carries it (its first 12 characters) is the commit `prefix`
/// names: it starts with the prefix, or is a whole 12-character prefix of it.
fn commit_matches(commit: &str, prefix: &str) -> bool {
    commit.starts_with(prefix) || (commit.len() == digest::COMMIT_CHARS && prefix.starts_with(commit))
}

/// Splits one more than a page into the page and the key to continue after.
fn paged(mut keys: Vec<String>) -> (Vec<String>, Option<String>) {
    let next = (keys.len() > PAGE).then(|| {
        keys.truncate(PAGE);
        keys.last().cloned().unwrap_or_default()
    });
    (keys, next)
}
