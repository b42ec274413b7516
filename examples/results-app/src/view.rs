//! The page's views, read from the bucket only through the library: the seed's home view (`keys`
//! on `results-meta` by `platform, browser`, unique, limit 50, then `values_of` on `results`), a
//! pair's history, one run, the latest runs across pairs and the diff of two runs, each with
//! what it cost in bucket requests (the library's own accounting).
//!
//! Everything read from the bucket is untrusted: a body that is not a run becomes a row that
//! says so, and the views carry only counts, labels and texts, never markup.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use objstore_db::rsapi::{Db, OpenOptions, Read, ReadKind};
use objstore_db_core::MechanismKind;
use serde_json::{json, Map, Value};

use crate::format::{clip, sort_suites, stored_at, Run, Status, Test};
use crate::post::{call, Target};

/// The pairs of the home view (the seed's limit).
pub const PAIRS: usize = 50;
/// The runs a history or the latest-runs page shows at a time.
pub const PAGE: usize = 25;

/// Reads the results bucket through a database of its own (its cache).
pub struct Viewer {
    db: Db,
    /// One view at a time, so that the requests counted during a view are that view's.
    building: Mutex<()>,
    /// Runs found missing lately, and when: asked again, they cost no request for a while.
    missing: Mutex<HashMap<String, Instant>>,
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

/// A stored run as a view shows it: its name, the labels its name carries, and its body, or
/// why the body could not be used.
struct Loaded {
    key: String,
    platform: String,
    browser: String,
    run: Result<Run, String>,
}

impl Viewer {
    /// Opens the cache at `cache` (a SQLite file; created with its folder when missing).
    pub fn open(target: &Target, cache: &Path) -> Result<Viewer, String> {
        if let Some(dir) = cache.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let options = OpenOptions { mechanism: MechanismKind::Sqlite, ..OpenOptions::default() };
        let (tx, rx) = mpsc::channel();
        let path = cache.to_str().ok_or_else(|| format!("the cache path {} is not UTF-8", cache.display()))?;
        let db = Db::open(path, Some(&schema(target)), &options, move |r| {
            let _ = tx.send(r.map(drop));
        })
        .map_err(|e| e.to_string())?;
        rx.recv()
            .map_err(|_| "the cache database went away".to_string())?
            .map_err(|e| format!("opening the cache {}: {e}", cache.display()))?;
        Ok(Viewer { db, building: Mutex::new(()), missing: Mutex::default() })
    }

    /// Whether the listing has run `key` (one not listed yet may be a run posted a moment ago,
    /// and is still asked of the bucket); a run found missing in the last [`MISSING_FOR`] is a
    /// 404 at once, with no request.
    fn listed(&self, db: &Db, key: &str) -> Result<bool, ViewError> {
        {
            let mut missing = self.missing.lock().unwrap_or_else(|p| p.into_inner());
            missing.retain(|_, at| at.elapsed() < MISSING_FOR);
            if missing.contains_key(key) {
                return Err(ViewError::NotFound(format!("no run {key:?}")));
            }
        }
        let listed = call(|done| db.values_of(None, "results-meta", &json!([key]), Read::default(), done))?;
        Ok(listed.get(0).is_some_and(|v| !v.is_null()))
    }

    /// Remembers that run `key` is missing; the error to answer with.
    fn gone(&self, key: &str) -> ViewError {
        let mut missing = self.missing.lock().unwrap_or_else(|p| p.into_inner());
        if missing.len() >= MISSING_REMEMBERED {
            missing.clear();
        }
        missing.insert(key.to_string(), Instant::now());
        ViewError::NotFound(format!("no run {key:?}"))
    }

    /// Lists the bucket now, whatever the refractory period (after this process wrote to it).
    pub fn relist(&self) -> Result<(), String> {
        call(|done| self.db.prefetch("results-meta", done))
    }

    /// Builds a view with `build`, adding `"cost"`: the bucket requests it made.
    fn view(&self, build: impl FnOnce(&Db) -> View) -> View {
        let _one = self.building.lock().unwrap_or_else(|p| p.into_inner());
        self.db.sync_stats(true);
        let mut view = build(&self.db)?;
        let stats = self.db.sync_stats(true);
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
            "bytesIn": stats["bytesReceived"], "usd": stats["costUsd"]});
        Ok(view)
    }

    /// The home view: per pair (at most [`PAIRS`]), the newest run's counts per suite.
    pub fn matrix(&self) -> View {
        self.view(|db| {
            let scan = json!({"index": "platform, browser", "unique": true, "limit": PAIRS + 1});
            let mut keys = keys(db, "results-meta", &scan)?;
            let more = keys.len() > PAIRS;
            keys.truncate(PAIRS);
            let loaded = load(db, &keys, true)?;
            let mut suites: Vec<String> =
                loaded.iter().filter_map(|l| l.run.as_ref().ok()).flat_map(Run::suites).collect();
            sort_suites(&mut suites);
            let rows: Vec<Value> = loaded
                .iter()
                .map(|l| {
                    let mut row = brief(l);
                    if let Ok(run) = &l.run {
                        row["cells"] = cells(run);
                    }
                    row
                })
                .collect();
            Ok(json!({"suites": suites, "rows": rows, "morePairs": more}))
        })
    }

    /// A pair's runs, newest first, [`PAGE`] at a time after the run `after` (paged by key),
    /// with the tests that both passed and failed on one version among them.
    pub fn history(&self, platform: &str, browser: &str, after: Option<&str>) -> View {
        let prefix = pair_prefix(platform, browser)?;
        if let Some(after) = after.filter(|a| !a.starts_with(&prefix)) {
            return Err(ViewError::BadRequest(format!("after {after:?} is not a run of {platform}/{browser}")));
        }
        self.view(|db| {
            let keys = pair_keys(db, &prefix, after, PAGE + 1)?;
            let (page, next) = paged(keys);
            let loaded = load(db, &page, true)?;
            let runs: Vec<&Run> = loaded.iter().filter_map(|l| l.run.as_ref().ok()).collect();
            let flaky: Vec<Value> = flaky(&runs)
                .into_iter()
                .map(|(version, (suite, name, _))| json!({"version": version, "suite": suite, "name": name}))
                .collect();
            Ok(json!({"platform": platform, "browser": browser,
                "runs": loaded.iter().map(brief).collect::<Vec<_>>(), "next": next, "flaky": flaky}))
        })
    }

    /// The latest runs across every pair, newest first, [`PAGE`] at a time after `after`.
    pub fn latest(&self, after: Option<&str>) -> View {
        let after_run = match after {
            None => None,
            Some(key) => Some(run_segment(key)?),
        };
        self.view(|db| {
            let mut scan = json!({"index": "run", "limit": PAGE + 1});
            if let Some(run) = after_run {
                scan["range"] = json!({"lower": run, "lowerOpen": true});
            }
            let (page, next) = paged(keys(db, "results-meta", &scan)?);
            let loaded = load(db, &page, true)?;
            Ok(json!({"runs": loaded.iter().map(brief).collect::<Vec<_>>(), "next": next}))
        })
    }

    /// One run: its tests, each marked flaky when it both passed and failed among the pair's
    /// last [`PAGE`] runs of the same version; and the pair's previous run, to diff against.
    pub fn run(&self, key: &str) -> View {
        let (platform, browser) = pair_of(key)?;
        let prefix = pair_prefix(&platform, &browser)?;
        let key = key.to_string();
        self.view(move |db| {
            let listed = self.listed(db, &key)?;
            let mut loaded = load(db, std::slice::from_ref(&key), listed)?;
            let this = loaded.remove(0);
            let run = match &this.run {
                Ok(run) => run,
                Err(why) if why == MISSING => return Err(self.gone(&key)),
                Err(_) => return Ok(brief(&this)),
            };
            let previous = pair_keys(db, &prefix, Some(&key), 1)?.into_iter().next();
            let recent = load(db, &pair_keys(db, &prefix, None, PAGE)?, true)?;
            let same_version: Vec<&Run> = recent
                .iter()
                .filter_map(|l| l.run.as_ref().ok())
                .filter(|r| r.version == run.version)
                .chain(std::iter::once(run))
                .collect();
            let flaky: Vec<TestId> = flaky(&same_version).into_iter().map(|(_, t)| t).collect();
            let tests: Vec<Value> = identified(&run.results.tests)
                .map(|(id, t)| {
                    let mut test = json!({"name": t.name, "suite": t.suite, "status": t.status,
                        "duration": t.duration, "flaky": flaky.contains(&id)});
                    if let Some(message) = &t.message {
                        test["message"] = json!(message);
                    }
                    // The trace, output and earlier attempts, under CTRF's names; a pass on a
                    // retry is flaky too.
                    if let Ok(Value::Object(detail)) = serde_json::to_value(&t.detail) {
                        for (field, value) in detail {
                            test[field] = value;
                        }
                    }
                    test["flaky"] = json!(flaky.contains(&id) || t.detail.flaky);
                    test
                })
                .collect();
            let mut view = brief(&this);
            view["tool"] = json!(run.results.tool);
            view["tests"] = json!(tests);
            view["previous"] = json!(previous);
            Ok(view)
        })
    }

    /// What changed from run `from` to run `to`: tests newly failing, newly passing, added and
    /// removed (a test is its suite, name and occurrence).
    pub fn diff(&self, from: &str, to: &str) -> View {
        for key in [from, to] {
            pair_of(key)?;
        }
        let keys = vec![from.to_string(), to.to_string()];
        self.view(move |db| {
            let mut listed = true;
            for key in &keys {
                listed &= self.listed(db, key)?;
            }
            let loaded = load(db, &keys, listed)?;
            let mut runs = Vec::new();
            for l in &loaded {
                match &l.run {
                    Ok(run) => runs.push(run),
                    Err(why) if why == MISSING => return Err(self.gone(&l.key)),
                    Err(why) => return Err(ViewError::Failed(format!("run {:?} cannot be read: {why}", l.key))),
                }
            }
            let index = |run: &Run| -> BTreeMap<TestId, Test> {
                identified(&run.results.tests).map(|(id, t)| (id, t.clone())).collect()
            };
            let (before, after) = (index(runs[0]), index(runs[1]));
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

/// The viewer's stores: `results` as the writers have it, and `results-meta`, one record per
/// object from the listing, its labels from the key layout, with the indexes the views need.
fn schema(target: &Target) -> Value {
    let mut schema = target.schema();
    let mut options = schema["stores"][0]["Sync"]["Options"].clone();
    options.as_object_mut().expect("the options are an object").remove("metadata");
    options["keyLayout"] = json!("{platform}/{browser}/{run}");
    schema["stores"].as_array_mut().expect("a list of stores").push(json!({
        "name": "results-meta", "keyPath": "name",
        "indexes": [
            {"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]},
            {"name": "run", "keyPath": "metadata.run"}],
        "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": options}}));
    schema
}

/// The body of a name the listing had but the bucket no longer holds.
const MISSING: &str = "the bucket no longer holds this run";

fn keys(db: &Db, store: &str, scan: &Value) -> Result<Vec<String>, ViewError> {
    // `fresh`: listed unless a listing within the refractory period answered.
    let found = call(|done| db.read_scan(None, store, ReadKind::Keys, Some(scan), Read { fresh: true }, done))?;
    Ok(found.as_array().into_iter().flatten().filter_map(|k| k.as_str().map(str::to_string)).collect())
}

/// A pair's run names after `after` (or from the newest), at most `limit`.
fn pair_keys(db: &Db, prefix: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>, ViewError> {
    // Every name of the pair starts with "<platform>/<browser>/"; '0' follows '/'.
    let end = format!("{}0", &prefix[..prefix.len() - 1]);
    let range = match after {
        Some(after) => json!({"lower": after, "lowerOpen": true, "upper": end, "upperOpen": true}),
        None => json!({"lower": prefix, "upper": end, "upperOpen": true}),
    };
    keys(db, "results-meta", &json!({"range": range, "limit": limit}))
}

/// The runs under `keys`, fetched where not cached (immutable: a cached run costs nothing).
/// `listed`: the listing has them, so one the bucket does not give is asked why (a second,
/// conditional request); a key the listing never had is simply missing.
fn load(db: &Db, keys: &[String], listed: bool) -> Result<Vec<Loaded>, ViewError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let bodies = call(|done| db.values_of(None, "results", &json!(keys), Read::default(), done))
        .map_err(|e| ViewError::Failed(format!("reading the runs: {e}")))?;
    let bodies = bodies.as_array().cloned().unwrap_or_default();
    Ok(keys
        .iter()
        .zip(bodies.into_iter().chain(std::iter::repeat(Value::Null)))
        .map(|(key, body)| {
            let (platform, browser) = pair_of(key).unwrap_or_default();
            let run = match body {
                Value::Null if listed => Err(why_missing(db, key)),
                Value::Null => Err(MISSING.to_string()),
                body => serde_json::from_value::<Run>(body)
                    .map_err(|e| format!("not a run: {e}"))
                    .and_then(|run| run.check().map(|()| run)),
            };
            Loaded { key: key.clone(), platform, browser, run }
        })
        .collect())
}

/// Why the bucket gave no run under `key`: the library's reason when the object cannot be
/// used (asked of that key alone, a conditional request), else that it is gone.
fn why_missing(db: &Db, key: &str) -> String {
    match call(|done| db.values_of(None, "results", &json!([key]), Read::default(), done)) {
        Err(reason) => reason,
        Ok(_) => MISSING.to_string(),
    }
}

/// A run in a list: its name, labels, time and counts, or why it cannot be shown. Its time is
/// when the report says the run started, else when it was stored (`stored`).
fn brief(l: &Loaded) -> Value {
    let stored = stored_at(&l.key);
    let mut row = json!({"key": l.key, "platform": l.platform, "browser": l.browser, "time": stored, "stored": stored});
    match &l.run {
        Ok(run) => {
            let s = &run.results.summary;
            if s.start > 0 {
                row["time"] = json!(s.start);
            }
            row["version"] = json!(run.version);
            row["summary"] = json!({"tests": s.tests, "passed": s.passed, "failed": s.failed,
                "skipped": s.skipped + s.pending + s.other});
        }
        Err(why) => row["error"] = json!(why),
    }
    row
}

/// Passed, failed and skipped (pending and other with them) per suite.
fn cells(run: &Run) -> Value {
    let mut cells: HashMap<&str, [u64; 3]> = HashMap::new();
    for t in &run.results.tests {
        let column = match t.status {
            Status::Passed => 0,
            Status::Failed => 1,
            _ => 2,
        };
        cells.entry(&t.suite).or_default()[column] += 1;
    }
    cells
        .into_iter()
        .map(|(suite, [p, f, s])| (suite.to_string(), json!({"passed": p, "failed": f, "skipped": s})))
        .collect::<Map<_, _>>()
        .into()
}

/// A test across runs: its suite, its name and which occurrence of that name it is.
type TestId = (String, String, usize);

/// Tests with their identity: suite, name, and which occurrence of that name (suites run twice,
/// once per mechanism, repeat names).
fn identified(tests: &[Test]) -> impl Iterator<Item = (TestId, &Test)> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    tests.iter().map(move |t| {
        let n = seen.entry((&t.suite, &t.name)).or_default();
        *n += 1;
        ((t.suite.clone(), t.name.clone(), *n), t)
    })
}

/// Tests that both passed and failed among `runs` of one version: (version, test).
fn flaky(runs: &[&Run]) -> Vec<(String, TestId)> {
    let mut outcomes: BTreeMap<(String, TestId), [bool; 2]> = BTreeMap::new();
    for run in runs {
        for (id, t) in identified(&run.results.tests) {
            let seen = outcomes.entry((run.version.clone(), id)).or_default();
            match t.status {
                Status::Passed => seen[0] = true,
                Status::Failed => seen[1] = true,
                _ => {}
            }
        }
    }
    outcomes.into_iter().filter(|(_, [p, f])| *p && *f).map(|(id, _)| id).collect()
}

/// Splits one more than a page into the page and the key to continue after.
fn paged(mut keys: Vec<String>) -> (Vec<String>, Option<String>) {
    let next = (keys.len() > PAGE).then(|| {
        keys.truncate(PAGE);
        keys.last().cloned().unwrap_or_default()
    });
    (keys, next)
}

/// The platform and browser a run's name carries.
fn pair_of(key: &str) -> Result<(String, String), ViewError> {
    match key.split('/').collect::<Vec<_>>()[..] {
        [platform, browser, run] if [platform, browser, run].iter().all(|s| !matches!(*s, "" | "." | "..")) => {
            Ok((platform.to_string(), browser.to_string()))
        }
        _ => Err(ViewError::BadRequest(format!("{:?} is not a run's name (platform/browser/run)", clip(key)))),
    }
}

fn run_segment(key: &str) -> Result<String, ViewError> {
    pair_of(key)?;
    Ok(key.rsplit('/').next().unwrap_or_default().to_string())
}

/// The names of a pair's runs start with this. Any segment the bucket holds is a pair, even one
/// our writers would refuse to make, so only the layout's shape is checked.
fn pair_prefix(platform: &str, browser: &str) -> Result<String, ViewError> {
    for (field, value) in [("platform", platform), ("browser", browser)] {
        if value.is_empty() || value.contains('/') {
            return Err(ViewError::BadRequest(format!("{field} {:?} is not a name segment", clip(value))));
        }
    }
    Ok(format!("{platform}/{browser}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(start: u64) -> Loaded {
        let run = json!({"platform": "linux", "browser": "c", "version": "1", "results": {"tool": {"name": "ctest"},
            "summary": {"tests": 0, "passed": 0, "failed": 0, "skipped": 0, "pending": 0, "other": 0,
                        "start": start, "stop": start}, "tests": []}});
        let key = crate::format::object_key("linux", "c", 1_795_000_000_000, "aa");
        Loaded { key, platform: "linux".into(), browser: "c".into(), run: Ok(serde_json::from_value(run).unwrap()) }
    }

    /// A run's age counts from when its report says it ran, not from when it was posted.
    #[test]
    fn a_run_is_dated_by_its_report() {
        let dated = brief(&loaded(1_577_836_800_000));
        assert_eq!(
            (dated["time"].as_u64(), dated["stored"].as_u64()),
            (Some(1_577_836_800_000), Some(1_795_000_000_000))
        );
        let undated = brief(&loaded(0));
        assert_eq!(undated["time"].as_u64(), Some(1_795_000_000_000), "no timestamp in the report: when it was stored");
    }
}
