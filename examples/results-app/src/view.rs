//! The page's views, read from the bucket only through the library (`runs.rs`): the matrix (the
//! seed's home view: `keys` on `results-meta` by `platform, browser`, unique, then `values_of` on
//! `results`; every pair, paged and filtered here), a pair's history, one run, the latest runs
//! across pairs, the diff of two runs, the top failures, a test's history and a search, each with
//! what it cost in bucket requests (the library's own accounting).
//!
//! Everything read from the bucket is untrusted: a body that is not a run becomes a row that
//! says so, and the views carry only counts, labels and texts, never markup.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use objstore_db::rsapi::{Db, Freshness};
use objstore_db_core::MechanismKind;
use serde_json::{json, Map, Value};

use crate::classes::{self, classify, Pairs, Seen, TestId, Weighed};
use crate::digest;
use crate::filter::MatrixFilter;
use crate::fingerprint::{self, Failure};
use crate::format::{check_label, is_run_segment, pair_matches, sort_suites, Status, Test};
use crate::history::{self, Outcome};
use crate::post::{call, open_and_wait, Target};
use crate::rows::{brief, cells, digest_brief, evidence, flaky, labels};
use crate::runs::{
    all_pairs, digested, each_pair_files, identified, keys, load_runs, newest_digested, newest_runs, pair_files,
    pair_of, pair_prefix, pair_runs, run_keys, run_segment, Digested, Loaded,
};

/// The pairs the matrix shows at a time (the seed's limit, now a page).
pub const PAIRS: usize = 50;
/// The runs a history or the latest-runs page shows at a time.
pub const PAGE: usize = 25;
/// The most tests a search answers with.
pub const FOUND: usize = 100;
/// Adds `requests` made outside the view's database (the quarantine's GET) to what it cost.
pub fn add_requests(view: &mut Value, requests: u64) {
    if requests > 0 {
        let cost = &mut view["cost"];
        cost["requests"] = json!(cost["requests"].as_u64().unwrap_or(0) + requests);
        cost["byKind"]["GET"] = json!(cost["byKind"]["GET"].as_u64().unwrap_or(0) + requests);
    }
}

/// How many of its last runs a quarantined test must have passed on every pair it covers
/// before the page suggests releasing it.
pub const RELEASE_AFTER: usize = 20;
/// The most build-variant labels (`key=value`) the matrix offers as a filter.
pub const VARIANTS: usize = 200;
/// How many of each pair's newest runs the commit view looks through for the commit.
pub const COMMIT_RUNS: usize = 25;

/// Reads the results bucket through a database of its own (its cache).
pub struct Viewer {
    db: Db,
    /// The bucket, for what lives beside the runs (the quarantine).
    target: Target,
    /// One view at a time, so that the requests counted during a view are that view's.
    building: Mutex<()>,
    /// Run keys found naming no files lately, and when: asked again, they cost no listing.
    missing: Mutex<HashMap<String, Instant>>,
    /// The files a writer beside this viewer stored, and how many the last view had seen.
    followed: Mutex<Option<(Arc<AtomicU64>, u64)>>,
    /// The bucket requests the library made before the view being built began.
    requests: AtomicU64,
    /// Every pair's newest runs as of when the library had made that many requests.
    newest: Mutex<Option<(u64, Arc<Newest>)>>,
}

/// Every pair with its newest runs ([`classes::BROKEN_RUNS`]), as digests and as the classes
/// weigh them.
struct Newest {
    pairs: Vec<(String, String)>,
    runs: Vec<Vec<Digested>>,
    seen: Vec<Vec<Seen>>,
}

/// How long a run found missing is answered from memory.
const MISSING_FOR: Duration = Duration::from_secs(10);
/// Missing runs remembered at most (a loop of made-up keys must not grow it without bound).
const MISSING_REMEMBERED: usize = 10_000;

/// A view's answer: its data, and what it cost.
pub type View = Result<Value, ViewError>;

#[derive(Debug)]
pub enum ViewError {
    /// The request named something wrong (a key outside the layout, an unknown pair).
    BadRequest(String),
    NotFound(String),
    /// The library or the bucket failed.
    Failed(String),
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::BadRequest(why) | ViewError::NotFound(why) | ViewError::Failed(why) => f.write_str(why),
        }
    }
}

impl From<String> for ViewError {
    fn from(why: String) -> ViewError {
        ViewError::Failed(why)
    }
}

impl Viewer {
    /// Opens the cache at `cache` (a SQLite file; created with its folder when missing).
    pub fn open(target: &Target, cache: &Path) -> Result<Viewer, String> {
        if let Some(dir) = cache.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let path = cache.to_str().ok_or_else(|| format!("the cache path {} is not UTF-8", cache.display()))?;
        let db = open_and_wait(path, &schema(target), MechanismKind::Sqlite)
            .map_err(|e| format!("opening the cache {}: {e}", cache.display()))?;
        Ok(Viewer {
            db,
            target: target.clone(),
            building: Mutex::new(()),
            missing: Mutex::default(),
            followed: Mutex::default(),
            requests: AtomicU64::default(),
            newest: Mutex::default(),
        })
    }

    /// Follows a writer's stored count (the collector's): a view after it stored a file lists
    /// the bucket again, whatever the refractory period, so that what was posted shows at once.
    pub fn follow(&self, stored: Arc<AtomicU64>) {
        let seen = stored.load(Ordering::Relaxed);
        *self.followed.lock().unwrap_or_else(|p| p.into_inner()) = Some((stored, seen));
    }

    /// Lists again when the followed writer stored something since the last view.
    fn catch_up(&self, db: &Db) -> Result<(), ViewError> {
        let mut followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((stored, seen)) = followed.as_mut() {
            let now = stored.load(Ordering::Relaxed);
            if now != *seen {
                call(|done| db.prefetch("results-meta", done))?;
                *seen = now;
            }
        }
        Ok(())
    }

    /// The run under `key` with its files. One the listing does not have may have been posted
    /// a moment ago: the bucket is listed again (with the change log, one LIST) before it is a
    /// 404, which is then remembered for [`MISSING_FOR`], so a made-up key costs one listing.
    fn find_run(&self, db: &Db, key: &str) -> Result<Loaded, ViewError> {
        let not_found = || ViewError::NotFound(format!("no run {key:?}"));
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
        call(|done| db.prefetch("results-meta", done))?;
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
    pub fn relist(&self) -> Result<(), String> {
        call(|done| self.db.prefetch("results-meta", done))
    }

    /// Builds a view with `build`, adding `"cost"`: the bucket requests it made.
    fn view(&self, build: impl FnOnce(&Db) -> View) -> View {
        let _one = self.building.lock().unwrap_or_else(|p| p.into_inner());
        // Requests between views (revalidations in the background) count as made, not as this
        // view's.
        self.requests.fetch_add(requests_in(&self.db.sync_stats(true)), Ordering::Relaxed);
        self.catch_up(&self.db)?;
        let built = build(&self.db);
        let stats = self.db.sync_stats(true);
        self.requests.fetch_add(requests_in(&stats), Ordering::Relaxed);
        let mut view = built?;
        let by_kind: Map<String, Value> = stats["requests"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(kind, by_status)| {
                (
                    kind.clone(),
                    json!(by_status.as_object().map_or(0, |s| s.values().filter_map(Value::as_u64).sum::<u64>())),
                )
            })
            .collect();
        view["cost"] = json!({"requests": stats["total"], "byKind": by_kind,
            "bytesIn": stats["bytesReceived"], "usd": stats["costUsd"], "usdBy": stats["costsUsd"]});
        Ok(view)
    }

    /// Every pair with its newest runs (listed first when the refractory period is over). The
    /// cache changes only through a bucket request, so they are worked out again only after the
    /// library made one: a warm reload of the matrix reads one scan, not one per pair.
    fn newest(&self, db: &Db) -> Result<Arc<Newest>, ViewError> {
        let pairs = all_pairs(db)?;
        let made = |db: &Db| self.requests.load(Ordering::Relaxed) + requests_in(&db.sync_stats(false));
        let mut kept = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, newest)) = kept.as_ref().filter(|(at, n)| *at == made(db) && n.pairs == pairs) {
            return Ok(newest.clone());
        }
        let runs = newest_digested(db, &pairs)?;
        let seen = runs.iter().map(|runs| runs.iter().map(Digested::seen).collect()).collect();
        let newest = Arc::new(Newest { pairs, runs, seen });
        *kept = Some((made(db), newest.clone()));
        Ok(newest)
    }

    /// The home view: per pair, the newest run's counts per suite, every file of that run
    /// counted, and how many of each suite's tests fall in each class; the pairs that pass
    /// `filter`, [`PAIRS`] at a time after the pair `filter.after`. Every pair's runs are weighed
    /// for the classes, whichever are shown.
    pub fn matrix(&self, filter: &MatrixFilter) -> View {
        self.view(|db| {
            let newest = self.newest(db)?;
            let Newest { pairs, runs, seen } = &*newest;
            let weighed = Pairs::new(seen);
            // A row's cells weigh its tests against every pair's: worked out for the rows shown
            // only, unless the filter reads them.
            let with_cells = |i: usize, row: &mut Value| {
                let newest = &runs[i][0];
                if !newest.digests.is_empty() {
                    row["cells"] = cells(&newest.digests, &seen[i][0], &evidence(&seen[i][1..], &weighed));
                }
            };
            let mut matching = Vec::new();
            let mut variants = std::collections::BTreeSet::new();
            for (i, (pair, runs)) in pairs.iter().zip(runs).enumerate() {
                let Some(newest) = runs.first() else { continue };
                let mut row = digest_brief(newest);
                if !newest.digests.is_empty() {
                    row["labels"] = labels(&newest.digests);
                }
                if filter.reads_cells() {
                    with_cells(i, &mut row);
                }
                for (key, value) in row["labels"].as_object().into_iter().flatten() {
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
            let shown = &mut matching[start..end];
            if !filter.reads_cells() {
                for (_, i, row) in shown.iter_mut() {
                    with_cells(*i, row);
                }
            }
            let mut suites: Vec<String> = shown
                .iter()
                .flat_map(|(_, i, _)| &runs[*i][0].digests)
                .flat_map(|d| d.suites.iter().map(|s| s.name.clone()))
                .collect();
            sort_suites(&mut suites);
            let distinct = |f: fn(&(String, String)) -> &String| {
                let mut values: Vec<&String> = pairs.iter().map(f).collect();
                values.sort();
                values.dedup();
                values
            };
            Ok(json!({"suites": suites, "rows": shown.iter().map(|(_, _, row)| row).collect::<Vec<_>>(),
                "next": next, "matching": matching.len(), "pairs": pairs.len(), "platforms": distinct(|p| &p.0),
                "browsers": distinct(|p| &p.1), "labels": variants, "rules": classes::rules()}))
        })
    }

    /// A pair's runs, newest first, [`PAGE`] at a time after the run `after` (paged by key),
    /// with the tests that both passed and failed at one commit (or version) among them.
    pub fn history(&self, platform: &str, browser: &str, after: Option<&str>) -> View {
        pair_prefix(platform, browser)?;
        if let Some(after) = after {
            if pair_of(after)? != (platform.to_string(), browser.to_string()) {
                return Err(ViewError::BadRequest(format!("after {after:?} is not a run of {platform}/{browser}")));
            }
        }
        self.view(|db| {
            let (page, next) = paged(pair_runs(db, platform, browser, after, PAGE + 1)?);
            let loaded = load_runs(db, &page)?;
            let flaky: Vec<Value> = flaky(&loaded)
                .into_iter()
                .map(|(basis, (suite, name, _))| json!({"basis": basis, "suite": suite, "name": name}))
                .collect();
            Ok(json!({"platform": platform, "browser": browser,
                "runs": loaded.iter().map(brief).collect::<Vec<_>>(), "next": next, "flaky": flaky}))
        })
    }

    /// The latest runs across every pair, newest first, [`PAGE`] at a time after `after`.
    pub fn latest(&self, after: Option<&str>) -> View {
        let after = match after {
            None => None,
            Some(key) => {
                let (platform, browser) = pair_of(key)?;
                Some(json!([run_segment(key), platform, browser]))
            }
        };
        self.view(|db| {
            let mut scan = json!({"index": "run", "unique": true, "limit": PAGE + 1});
            if let Some(after) = after {
                scan["range"] = json!({"lower": after, "lowerOpen": true});
            }
            // Paged by the listing's keys, so that a name outside the layout cannot end the pages.
            let found = keys(db, "results-meta", &scan)?;
            let page = run_keys(&found[..found.len().min(PAGE)]);
            let next = (found.len() > PAGE).then(|| page.last().cloned()).flatten();
            let loaded = load_runs(db, &page)?;
            Ok(json!({"runs": loaded.iter().map(brief).collect::<Vec<_>>(), "next": next}))
        })
    }

    /// One run: its files and tests, each test with its classes (new failure, flaky, broken,
    /// divergent: [`classes::RULES`]) weighed against the pair's [`PAGE`] runs before it and
    /// every pair's newest runs; and the pair's previous run, to diff against.
    pub fn run(&self, key: &str) -> View {
        pair_of(key)?;
        let key = key.to_string();
        self.view(move |db| {
            let this = self.find_run(db, &key)?;
            run_view(db, &this, &Pairs::new(&self.newest(db)?.seen))
        })
    }

    /// Every pair's part of CI run `id` (the files posted with `--run ID` or from one CI run),
    /// each as [`Viewer::run`] shows it: the run's anchor names its segment, the `run` index
    /// finds its pairs. A run nobody anchored is not found.
    pub fn ci_run(&self, id: &str) -> View {
        check_label("run", id).map_err(ViewError::BadRequest)?;
        self.view(|db| {
            let anchor = call(|done| db.get(None, "results", &json!(format!(".runs/{id}")), Freshness::Cached, done))?;
            let not_found = || {
                ViewError::NotFound(format!("no run {id:?} in the bucket (runs posted with --run or from CI have one)"))
            };
            let segment = anchor["segment"].as_str().filter(|s| is_run_segment(s, id)).ok_or_else(not_found)?;
            let range = json!({"lower": [segment], "upper": [format!("{segment}\u{0}")], "upperOpen": true});
            let found = keys(db, "results-meta", &json!({"index": "run", "range": range}))?;
            let runs = load_runs(db, &run_keys(&found))?;
            if runs.is_empty() {
                return Err(not_found());
            }
            let newest = self.newest(db)?;
            let weighed = Pairs::new(&newest.seen);
            let views = runs.iter().map(|run| run_view(db, run, &weighed)).collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"run": id, "runs": views}))
        })
    }

    /// The quarantine (one GET of `.quarantine`, counted in the cost), each entry with the
    /// pairs it covers and, on each, the test's outcomes in the pair's last [`RELEASE_AFTER`]
    /// runs, by their names' digests; an entry whose test passed in all of them on every pair
    /// it covers is marked releasable.
    pub fn quarantine(&self) -> View {
        let (quarantine, requests) = crate::quarantine::load(&self.target)?;
        let mut view = self.view(|db| {
            let pairs = all_pairs(db)?;
            let mut runs_of: HashMap<(String, String), Vec<Digested>> = HashMap::new();
            let now = crate::post::now_ms();
            let entries: Vec<Value> = quarantine
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
                        let outcomes: Vec<Value> = runs_of[&key]
                            .iter()
                            .map(|d| json!(d.seen().status(&e.suite, id)))
                            .collect();
                        covered.push(json!({"pair": format!("{platform}/{browser}"), "outcomes": outcomes}));
                    }
                    let passing = |c: &Value| {
                        let outcomes = c["outcomes"].as_array().map(Vec::as_slice).unwrap_or_default();
                        outcomes.len() == RELEASE_AFTER && outcomes.iter().all(|o| o == "passed")
                    };
                    let mut entry = serde_json::to_value(e).unwrap_or_default();
                    entry["pairsCovered"] = json!(covered);
                    entry["releasable"] = json!(!covered.is_empty() && covered.iter().all(passing));
                    entry["expired"] = json!(e.expired(now));
                    Ok(entry)
                })
                .collect::<Result<_, ViewError>>()?;
            Ok(json!({"entries": entries, "releaseAfter": RELEASE_AFTER, "history": quarantine.history.iter().rev().take(50).collect::<Vec<_>>()}))
        })?;
        add_requests(&mut view, requests);
        Ok(view)
    }

    /// Each pair's newest run as [`Viewer::run`] shows it, the pairs weighed once for all
    /// (for `export`).
    pub fn newest_run_views(&self) -> View {
        self.view(|db| {
            let kept = self.newest(db)?;
            let newest = newest_runs(db, &kept.pairs)?;
            let weighed = Pairs::new(&kept.seen);
            let views = newest
                .iter()
                .filter_map(|runs| runs.first())
                .map(|run| run_view(db, run, &weighed))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"runs": views}))
        })
    }

    /// One test's history on one pair: its outcome in each of the pair's last
    /// [`history::HISTORY_RUNS`] runs, since when it fails, its durations and whether it got
    /// slower.
    pub fn test_history(&self, platform: &str, browser: &str, suite: &str, name: &str) -> View {
        pair_prefix(platform, browser)?;
        self.view(|db| {
            let runs = load_runs(db, &pair_runs(db, platform, browser, None, history::HISTORY_RUNS)?)?;
            let outcomes: Vec<Outcome> = runs
                .iter()
                .map(|run| {
                    let tests: Vec<&Test> =
                        run.tests().map(|(_, t)| t).filter(|t| t.suite == suite && t.name == name).collect();
                    let row = brief(run);
                    Outcome {
                        run: run.key.clone(),
                        time: row["time"].as_u64(),
                        commit: row["ci"]["commit"].as_str().map(str::to_string),
                        found: history::outcome_of(&tests),
                    }
                })
                .collect();
            let mut view = history::history(&outcomes);
            view["platform"] = json!(platform);
            view["browser"] = json!(browser);
            view["suite"] = json!(suite);
            view["name"] = json!(name);
            view["runs"] = json!(outcomes.len());
            Ok(view)
        })
    }

    /// Tests whose name or suite holds `query` (case aside), in each pair's newest run: at most
    /// [`FOUND`], each with its pair and status.
    pub fn search(&self, query: &str) -> View {
        let query = query.trim().to_lowercase();
        if query.is_empty() || query.chars().count() > 200 {
            return Err(ViewError::BadRequest("search for 1 to 200 characters of a test's name or suite".into()));
        }
        self.view(|db| {
            let pairs = newest_runs(db, &all_pairs(db)?)?;
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
                    found.push(json!({"platform": run.platform, "browser": run.browser, "run": run.key,
                        "suite": t.suite, "name": t.name, "status": t.status}));
                }
            }
            Ok(json!({"query": query, "tests": found, "more": more}))
        })
    }

    /// Every pair at one commit (`commit` a prefix of it): each pair's newest run at it among its
    /// last [`COMMIT_RUNS`] (found by their names' digests: the bodies read are those of the
    /// runs shown, and of the base's); the tests divergent there (passed on some pairs, failed
    /// on others) and flaky there (both outcomes in one pair's runs at it); with `base`, per
    /// pair, the tests newly failing and fixed since that commit.
    pub fn commit(&self, commit: &str, base: Option<&str>) -> View {
        let (asked, asked_base) = (commit, base);
        for (field, value) in std::iter::once(("commit", commit)).chain(base.map(|b| ("base", b))) {
            check_label(field, value).map_err(ViewError::BadRequest)?;
            if value.len() < 7 {
                return Err(ViewError::BadRequest(format!("{field} {value:?}: give at least 7 characters of it")));
            }
        }
        self.view(|db| {
            // Each pair's last runs by their names' digests; bodies only of the runs shown.
            let pairs = all_pairs(db)?;
            let files = each_pair_files(db, &pairs, COMMIT_RUNS)?;
            let counts: Vec<usize> = files.iter().map(Vec::len).collect();
            let mut all = digested(db, files.into_iter().flatten().collect())?.into_iter();
            let recent: Vec<Vec<Digested>> = counts.iter().map(|n| all.by_ref().take(*n).collect()).collect();
            let commit_of = |d: &Digested| d.digests.iter().find_map(|x| x.commit.clone());
            // A prefix names one commit: the one the runs hold that starts with it (digests carry
            // a commit's first 12 characters, so a longer prefix is matched on those).
            let resolve = |field: &str, prefix: &str| -> Result<Option<String>, ViewError> {
                let mut found: Vec<String> = recent
                    .iter()
                    .flatten()
                    .filter_map(commit_of)
                    .filter(|c| commit_matches(c, prefix))
                    .collect();
                found.sort();
                found.dedup();
                match found.len() {
                    0 | 1 => Ok(found.pop()),
                    _ => Err(ViewError::BadRequest(format!("{field} {prefix:?} is more than one commit: {}", found.join(", ")))),
                }
            };
            let Some(commit) = resolve("commit", commit)? else {
                return Ok(json!({"commit": commit, "base": base, "runs": [], "newlyFailing": [], "fixed": [],
                    "divergent": [], "flaky": []}));
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
                    let before = newest.zip(base.as_deref()).and_then(|(n, b)| {
                        runs.iter().skip(n + 1).position(|d| at(d, b)).map(|i| n + 1 + i)
                    });
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
            let entry = |pair: &str, run: &str, (suite, name, _): &TestId| json!({"pair": pair, "run": run, "suite": suite, "name": name});
            let (mut rows, mut failing, mut fixed, mut flaky) = (vec![], vec![], vec![], vec![]);
            let mut across: BTreeMap<TestId, [Vec<String>; 2]> = BTreeMap::new();
            for (((platform, browser), runs), (newest, before)) in pairs.iter().zip(&recent).zip(&shown) {
                let pair = format!("{platform}/{browser}");
                let Some(newest) = newest.and_then(|n| loaded.get(&runs[n].key)) else { continue };
                rows.push(brief(newest));
                let now = outcomes(newest);
                for (id, status) in &now {
                    let seen = across.entry(id.clone()).or_default();
                    match status {
                        Status::Passed => seen[0].push(pair.clone()),
                        Status::Failed => seen[1].push(pair.clone()),
                        _ => {}
                    }
                }
                // Flaky: the newest run's tests that passed in one of the pair's runs at the
                // commit and failed in another, by those runs' digests.
                let at_commit: Vec<Seen> = runs.iter().filter(|d| at(d, &commit)).map(Digested::seen).collect();
                let named = newest.files.iter().filter_map(|f| f.run.as_ref().ok()).flat_map(|run| {
                    run.results.tests.iter().zip(digest::ids(run)).map(|(t, id)| (t.suite.as_str(), t.name.as_str(), id))
                });
                let mut listed = std::collections::BTreeSet::new();
                for (suite, name, id) in named {
                    let statuses: Vec<Status> = at_commit.iter().filter_map(|r| r.status(suite, id)).collect();
                    if statuses.contains(&Status::Passed) && statuses.contains(&Status::Failed) && listed.insert((suite, name)) {
                        flaky.push(entry(&pair, &newest.key, &(suite.to_string(), name.to_string(), 1)));
                    }
                }
                // The base's run is one before the commit's, on this pair.
                let Some(before) = before.and_then(|b| loaded.get(&runs[b].key)) else { continue };
                let before = outcomes(before);
                let messages: HashMap<TestId, &str> = identified(newest.tests())
                    .filter_map(|(id, (_, t))| t.message.as_deref().map(|m| (id, m)))
                    .collect();
                for (id, status) in &now {
                    match (before.get(id), status) {
                        (Some(Status::Passed), Status::Failed) => {
                            let mut failed = entry(&pair, &newest.key, id);
                            if let Some(message) = messages.get(id) {
                                failed["message"] = json!(message);
                            }
                            failing.push(failed);
                        }
                        (Some(Status::Failed), Status::Passed) => fixed.push(entry(&pair, &newest.key, id)),
                        _ => {}
                    }
                }
            }
            // The commits in full, as the runs' bodies name them.
            let full = |short: &str| {
                loaded.values().flat_map(|l| l.reports()).find_map(|r| r.ci.commit.clone().filter(|c| c.starts_with(short)))
            };
            let (commit, base) = (full(&commit).unwrap_or(commit), base.map(|b| full(&b).unwrap_or(b)));
            // A prefix longer than a digest's commit was matched on its first characters only.
            if !commit.starts_with(asked) || base.as_deref().zip(asked_base).is_some_and(|(b, a)| !b.starts_with(a)) {
                return Ok(json!({"commit": asked, "base": asked_base, "runs": [], "newlyFailing": [], "fixed": [],
                    "divergent": [], "flaky": []}));
            }
            let divergent: Vec<Value> = across
                .into_iter()
                .filter(|(_, [passed, failed])| !passed.is_empty() && !failed.is_empty())
                .map(|((suite, name, _), [passed, failed])| json!({"suite": suite, "name": name, "passed": passed, "failed": failed}))
                .collect();
            Ok(json!({"commit": commit, "base": base, "runs": rows, "newlyFailing": failing, "fixed": fixed,
                "divergent": divergent, "flaky": flaky}))
        })
    }

    /// Failures grouped across pairs: every failed test of each pair's newest run, grouped by
    /// its fingerprint (the failure's text with paths, numbers and addresses taken out), the
    /// groups that hit most pairs first.
    pub fn failures(&self) -> View {
        self.view(|db| {
            let pairs = newest_runs(db, &all_pairs(db)?)?;
            let failures = pairs.iter().filter_map(|runs| runs.first()).flat_map(|run| {
                run.tests().filter(|(_, t)| t.status == Status::Failed).map(move |(_, test)| Failure {
                    pair: format!("{}/{}", run.platform, run.browser),
                    run: run.key.clone(),
                    test,
                })
            });
            Ok(json!({"groups": fingerprint::group(failures)}))
        })
    }

    /// What changed from run `from` to run `to`: tests newly failing, newly passing, added and
    /// removed (a test is its suite, name and occurrence).
    pub fn diff(&self, from: &str, to: &str) -> View {
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
                    return Err(ViewError::Failed(format!("run {key:?} cannot be read: {why}")));
                }
                loaded.push(run);
            }
            let index = |run: &Loaded| -> BTreeMap<TestId, Test> {
                identified(run.tests()).map(|(id, (_, t))| (id, t.clone())).collect()
            };
            let (before, after) = (index(&loaded[0]), index(&loaded[1]));
            let entry = |t: &Test| {
                let mut e = json!({"suite": t.suite, "name": t.name, "status": t.status});
                if let Some(m) = &t.message {
                    e["message"] = json!(m);
                }
                e
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
            Ok(json!({"from": brief(&loaded[0]), "to": brief(&loaded[1]), "newlyFailing": failing,
                "newlyPassing": passing, "added": added, "removed": removed}))
        })
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.db.close_and_join();
    }
}

/// One run's view (see [`Viewer::run`]), its classes weighed against the pair's runs before it
/// and `pairs` (every pair's newest runs).
fn run_view(db: &Db, this: &Loaded, pairs: &Pairs) -> View {
    if this.reports().next().is_none() {
        return Ok(brief(this));
    }
    let earlier = digested(db, pair_files(db, &this.platform, &this.browser, Some(&this.key), PAGE)?)?;
    let previous = earlier.first().map(|d| d.key.clone());
    let earlier: Vec<Seen> = earlier.iter().map(Digested::seen).collect();
    let e = evidence(&earlier, pairs);
    let this_digested = Digested::of(this);
    let this_seen = this_digested.seen();
    let tests: Vec<Value> = this
        .files
        .iter()
        .enumerate()
        .filter_map(|(file, f)| f.run.as_ref().ok().map(|run| (file, run)))
        .flat_map(|(file, run)| run.results.tests.iter().zip(digest::ids(run)).map(move |(t, id)| (file, t, id)))
        .map(|(file, t, id)| {
            let mut test = json!({"name": t.name, "suite": t.suite, "status": t.status,
                "duration": t.duration, "file": file});
            if let Some(message) = &t.message {
                test["message"] = json!(message);
            }
            // The trace, output and earlier attempts, under CTRF's names; a pass on a retry is
            // flaky too.
            if let Ok(Value::Object(detail)) = serde_json::to_value(&t.detail) {
                for (field, value) in detail {
                    test[field] = value;
                }
            }
            // A retry counts where the test passed in the end, as the digests record it.
            let retried = t.detail.flaky && t.status == Status::Passed;
            let weighed = Weighed { suite: &t.suite, id, status: t.status, retried };
            let classes = classify(&weighed, &this_seen, &e);
            test["flaky"] = json!(classes.iter().any(|c| c["class"] == "flaky"));
            test["classes"] = json!(classes);
            test
        })
        .collect();
    let mut view = brief(this);
    view["files"] = json!(this
        .files
        .iter()
        .map(|f| match &f.run {
            Ok(run) => json!({"key": f.key, "file": run.ci.file, "job": run.ci.job, "tool": run.results.tool,
                "version": run.version, "tests": run.results.tests.len()}),
            Err(why) => json!({"key": f.key, "error": why}),
        })
        .collect::<Vec<_>>());
    view["labels"] = labels(&this_digested.digests);
    view["tests"] = json!(tests);
    view["rules"] = classes::rules();
    view["previous"] = json!(previous);
    Ok(view)
}

/// The bucket requests `stats` (the library's `sync_stats`) counts.
fn requests_in(stats: &Value) -> u64 {
    stats["total"].as_u64().unwrap_or(0)
}

/// Whether a commit as a digest carries it (its first 12 characters) is the commit `prefix`
/// names: it starts with the prefix, or is a whole 12-character prefix of it.
fn commit_matches(commit: &str, prefix: &str) -> bool {
    commit.starts_with(prefix) || (commit.len() == digest::COMMIT_CHARS && prefix.starts_with(commit))
}

/// The viewer's stores: `results` as the writers have it, and `results-meta`, one record per
/// object from the listing, its labels from the key layout, with the indexes the views need:
/// every pair (its first name) and every run across pairs, newest first; a pair's runs are a
/// range of names.
fn schema(target: &Target) -> Value {
    let mut schema = target.schema();
    let mut options = schema["stores"][0]["Sync"]["Options"].clone();
    options.as_object_mut().expect("the options are an object").remove("metadata");
    options["keyLayout"] = json!("{platform}/{browser}/{run}/{file}");
    schema["stores"].as_array_mut().expect("a list of stores").push(json!({
        "name": "results-meta", "keyPath": "name",
        "indexes": [
            {"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]},
            {"name": "run", "keyPath": ["metadata.run", "metadata.platform", "metadata.browser"]}],
        "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": options}}));
    schema
}

/// Splits one more than a page into the page and the key to continue after.
fn paged(mut keys: Vec<String>) -> (Vec<String>, Option<String>) {
    let next = (keys.len() > PAGE).then(|| {
        keys.truncate(PAGE);
        keys.last().cloned().unwrap_or_default()
    });
    (keys, next)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::Run;

    /// A report of `tests` (linux/c, version 1) started at `start`, at `commit`.
    pub(crate) fn report(start: u64, commit: Option<&str>, tests: Value) -> Run {
        let mut run: Run = serde_json::from_value(json!({"platform": "linux", "browser": "c", "version": "1",
            "results": {"tool": {"name": "ctest"}, "summary": {"tests": 0, "passed": 0, "failed": 0, "skipped": 0,
                "pending": 0, "other": 0, "start": start, "stop": start}, "tests": tests}}))
        .unwrap();
        run.results.summary = crate::format::Summary::of(&run.results.tests, start, start);
        run.ci.commit = commit.map(str::to_string);
        run
    }

    /// A `file://` bucket named `results` under `root`.
    fn file_target(root: &Path) -> Target {
        Target { endpoint: format!("file://{}", root.display()), bucket: "results".into(), prefix: String::new() }
    }

    fn one(suite: &str, name: &str, status: &str) -> Value {
        json!({"name": name, "status": status, "duration": 1, "suite": suite})
    }

    /// A run's age counts from when its reports say it ran (the earliest), not from when it
    /// was posted.
    /// The runs' objects of a file:// bucket's folder (not the change log, anchors or records).
    fn objects(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for path in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
                if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                    continue;
                }
                if path.is_dir() {
                    pending.push(path);
                } else {
                    found.push(path.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        found
    }

    /// The matrix drawn from the names' digests, with no GET, is the matrix drawn from the
    /// bodies: the same bucket with its names stripped of their digests gives the same rows.
    #[test]
    fn the_matrix_from_names_is_the_matrix_from_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let target = file_target;
        let named = dir.path().join("named");
        let writer = crate::post::Writer::open(&target(&named)).unwrap();
        let mut at = 1_795_000_000_000;
        for (platform, commit, a, b) in [
            ("linux", "c1", "passed", "passed"),
            ("linux", "c2", "failed", "passed"),
            ("mac", "c1", "passed", "failed"),
            ("mac", "c2", "passed", "failed"),
            ("win", "c2", "failed", "skipped"),
        ] {
            let mut run =
                report(at, Some(commit), json!([one("crud", "a", a), one("crud", "b", b), one("sql", "c", "passed")]));
            run.platform = platform.into();
            run.results.environment.insert("build".into(), json!("debug"));
            writer.store(&run).unwrap();
            at += 1000;
        }
        drop(writer);
        // The same objects under names without digests (and no change log: a full listing).
        let stripped = dir.path().join("stripped");
        for key in objects(&named.join("results")) {
            let (run, file) = key.rsplit_once('/').unwrap();
            let to = stripped.join("results").join(run).join(file.split('.').next().unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(named.join("results").join(&key), to).unwrap();
        }
        let matrix = |root: &Path| {
            let viewer = Viewer::open(&target(root), &root.with_extension("cache.sqlite3")).unwrap();
            viewer.matrix(&MatrixFilter::default()).unwrap()
        };
        let (from_names, from_bodies) = (matrix(&named), matrix(&stripped));
        assert_eq!(from_names["cost"]["byKind"].get("GET"), None, "{}", from_names["cost"]);
        assert_eq!(from_bodies["cost"]["byKind"]["GET"], 5, "{}", from_bodies["cost"]);
        assert_eq!(from_names["rows"], from_bodies["rows"]);
        // At c2, a failed on linux (passed before: new) and win, passed on mac; b passed on
        // linux, failed on mac (as before: not new) and did not run on win.
        let classes: Vec<&Value> = (0..3).map(|i| &from_names["rows"][i]["cells"]["crud"]["classes"]).collect();
        assert_eq!(
            classes,
            [&json!({"new failure": 1, "divergent": 2}), &json!({"divergent": 2}), &json!({"divergent": 1})]
        );
        assert_eq!(from_names["rows"][0]["labels"], json!({"build": "debug"}));
    }

    /// A run of more files than the first scan of its pair's names takes is read whole, and the
    /// run before it too, while the other pairs' scans, asked with it, answer theirs.
    #[test]
    fn a_run_of_many_files_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = file_target(dir.path());
        let writer = crate::post::Writer::open(&target).unwrap();
        for (platform, run, files) in [("linux", "old", 1), ("linux", "big", 60), ("mac", "one", 2)] {
            for i in 0..files {
                let mut report = report(1_795_000_000_000, None, json!([one("crud", &format!("t{i}"), "passed")]));
                report.platform = platform.into();
                report.ci.run = Some(run.into());
                writer.store(&report).unwrap();
            }
        }
        drop(writer);
        let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
        let pairs = [("linux".into(), "c".into()), ("mac".into(), "c".into())];
        let newest = newest_digested(&viewer.db, &pairs).unwrap();
        let found: Vec<Vec<(usize, &str)>> = newest
            .iter()
            .map(|runs| runs.iter().map(|d| (d.files, d.key.rsplit('-').next().unwrap())).collect())
            .collect();
        assert_eq!(found, [vec![(60, "big"), (1, "old")], vec![(2, "one")]]);
        let matrix = viewer.matrix(&MatrixFilter::default()).unwrap();
        assert_eq!(matrix["rows"][0]["cells"]["crud"]["passed"], 60, "{matrix}");
    }

    /// The pairs' newest runs are kept between views only while the library makes no bucket
    /// request: a listing that finds a new run shows it in the next matrix.
    #[test]
    fn a_listing_that_finds_a_new_run_shows_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = file_target(dir.path());
        let writer = crate::post::Writer::open(&target).unwrap();
        writer.store(&report(1_795_000_000_000, Some("c1"), json!([one("crud", "a", "passed")]))).unwrap();
        let viewer = Viewer::open(&target, &dir.path().join("cache.sqlite3")).unwrap();
        let newest_commit = |viewer: &Viewer| {
            let matrix = viewer.matrix(&MatrixFilter::default()).unwrap();
            (matrix["rows"][0]["ci"]["commit"].clone(), matrix["rows"][0]["cells"]["crud"]["failed"].clone())
        };
        assert_eq!(newest_commit(&viewer), (json!("c1"), json!(0)));
        assert_eq!(newest_commit(&viewer), (json!("c1"), json!(0)), "kept, without a request");
        writer.store(&report(1_795_000_001_000, Some("c2"), json!([one("crud", "a", "failed")]))).unwrap();
        viewer.relist().unwrap();
        assert_eq!(newest_commit(&viewer), (json!("c2"), json!(1)));
    }
}
