//! A bucket's runs as the views read them, only through the library: every pair, a pair's runs
//! in order, a run with all of its report files, each file read or with why it could not be.

use std::sync::mpsc;

use objstore_db::rsapi::{AsValue, Freshness, ReadKind};
use objstore_db_core::{Key, KeyRange, ScanOptions};
use serde_json::Value;

use crate::error::{AppError, AppResult};
use crate::model::digest::{self, Digest};
use crate::model::{fold_reruns, is_run_segment, is_scoped, pair_of, pair_prefix, run_key, run_segment_of, Run, Test};
use crate::store::cache::Cache;
use crate::store::call;

/// A run as a view shows it: its key (`<platform>/<browser>/<run>`), the labels its name
/// carries, and its report files, each read or with why it could not be.
pub(crate) struct Loaded {
    pub(crate) key: String,
    pub(crate) platform: String,
    pub(crate) browser: String,
    pub(crate) files: Vec<File>,
}

pub(crate) struct File {
    pub(crate) key: String,
    pub(crate) run: Result<Run, String>,
}

impl Loaded {
    /// The files that could be read, in key order.
    pub(crate) fn reports(&self) -> impl Iterator<Item = &Run> {
        self.files.iter().filter_map(|f| f.run.as_ref().ok())
    }

    /// Every test of the run, file after file, with the index of its file.
    pub(crate) fn tests(&self) -> impl Iterator<Item = (usize, &Test)> {
        self.files
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.run.as_ref().ok().map(|r| (i, r)))
            .flat_map(|(i, r)| r.results.tests.iter().map(move |t| (i, t)))
    }

    /// Every test of the run's readable files with its id in digests.
    pub(crate) fn tests_with_ids(&self) -> impl Iterator<Item = (&Test, u32)> {
        self.reports().flat_map(|r| r.results.tests.iter().zip(digest::ids(r)))
    }

    /// What flaky is keyed on: the run's commit where a file names one, else its version.
    pub(crate) fn basis(&self) -> Option<String> {
        let mut reports = self.reports();
        let first = self.reports().next()?;
        Some(match reports.find_map(|r| r.ci.commit.clone()) {
            Some(commit) => format!("commit {commit}"),
            None => format!("version {}", first.version),
        })
    }
}

/// The body of a name the listing had but the bucket no longer holds.
pub(crate) const MISSING: &str = "the bucket no longer holds this file";

fn keys(db: &Cache, store: &str, scan: ScanOptions) -> AppResult<Vec<String>> {
    // `fresh`: listed unless a listing within the refractory period answered.
    let found = call(|done| db.db.read_scan(None, store, ReadKind::Keys, scan, Freshness::Fresh, AsValue, done))?;
    Ok(strings(&found))
}

/// The keys each of `scans` finds, in order: asked all at once, so that the database answers
/// them one after the other rather than a round trip between threads each (500 pairs' scans
/// took 60 ms one at a time).
pub(crate) fn keys_of_each(db: &Cache, store: &str, scans: Vec<ScanOptions>) -> AppResult<Vec<Vec<String>>> {
    let (sender, answers) = mpsc::channel();
    let count = scans.len();
    for (i, scan) in scans.into_iter().enumerate() {
        let sender = sender.clone();
        let done = move |answer| {
            let _ = sender.send((i, answer));
        };
        db.db
            .read_scan(None, store, ReadKind::Keys, scan, Freshness::Fresh, AsValue, done)
            .map_err(|e| AppError::refused(e.to_string()))?;
    }
    drop(sender);
    let mut found: Vec<Option<Vec<String>>> = vec![None; count];
    for (i, answer) in answers {
        found[i] = Some(strings(&answer.map_err(|e| AppError::refused(e.to_string()))?));
    }
    found
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| AppError::refused("the database closed before it answered"))
}

fn strings(found: &Value) -> Vec<String> {
    found.as_array().into_iter().flatten().filter_map(|k| k.as_str().map(str::to_string)).collect()
}

/// The runs (their keys) of files named by `file_keys`, in order, each once.
pub(crate) fn run_keys(file_keys: &[String]) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for key in file_keys {
        if let Some(run) = run_key(key).filter(|r| runs.last().map(String::as_str) != Some(*r)) {
            runs.push(run.to_string());
        }
    }
    runs
}

/// A pair's runs after run `after` (or from the newest), at most `limit`.
pub(crate) fn pair_runs(
    db: &Cache,
    platform: &str,
    browser: &str,
    after: Option<&str>,
    limit: usize,
) -> AppResult<Vec<String>> {
    Ok(pair_files(db, platform, browser, after, limit)?.into_iter().map(|(run, _)| run).collect())
}

/// The runs under `run_keys` with their files, fetched where not cached (immutable: a cached
/// file costs nothing).
pub(crate) fn load_runs(db: &Cache, run_keys: &[String]) -> AppResult<Vec<Loaded>> {
    let scans = run_keys.iter().map(|key| files_of(key)).collect();
    let file_keys = keys_of_each(db, "results-meta", scans)?;
    let mut bodies = load(db, &file_keys.concat())?.into_iter();
    Ok(run_keys
        .iter()
        .zip(file_keys)
        .map(|(key, files)| {
            let (platform, browser) = pair_of(key).unwrap_or_default();
            let mut files: Vec<File> =
                files.into_iter().map(|key| File { key, run: bodies.next().unwrap_or(Err(MISSING.into())) }).collect();
            // File ids are random: files are ordered by what they are (reruns last; job, name,
            // labels), so that a test in two files of a run (a debug and a release build) is the
            // same occurrence in every run.
            files.sort_by_cached_key(|f| match &f.run {
                Ok(run) => (
                    u8::from(run.ci.rerun),
                    run.ci.job.clone(),
                    run.ci.file.clone(),
                    serde_json::to_string(&run.results.environment).ok(),
                    f.key.clone(),
                ),
                Err(_) => (2, None, None, None, f.key.clone()),
            });
            // Reruns (last) are their run's later attempts, folded into the files before them.
            fold_reruns(&mut files.iter_mut().filter_map(|f| f.run.as_mut().ok()).collect::<Vec<_>>());
            Loaded { key: key.clone(), platform, browser, files }
        })
        .collect())
}

/// The files under `keys` (which the listing has), as runs or why not.
fn load(db: &Cache, keys: &[String]) -> AppResult<Vec<Result<Run, String>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let wanted = keys.iter().map(|key| Key::from(key.as_str())).collect();
    let bodies = match call(|done| db.db.values_of(None, "results", wanted, Freshness::Cached, AsValue, done)) {
        Ok(bodies) => bodies,
        // The library answers a read of one key that cannot be used with that key's error (and
        // a bucket out of reach with its own): that file's reason, not the view's failure.
        Err(reason) if keys.len() == 1 => return Ok(vec![Err(reason.message)]),
        Err(e) => return Err(AppError::refused(format!("reading the runs: {e}"))),
    };
    let bodies = bodies.as_array().cloned().unwrap_or_default();
    Ok(keys
        .iter()
        .zip(bodies.into_iter().chain(std::iter::repeat(Value::Null)))
        .map(|(key, body)| match body {
            Value::Null => Err(why_missing(db, key)),
            body => serde_json::from_value::<Run>(body)
                .map_err(|e| format!("not a run: {e}"))
                .and_then(|run| run.check().map(|()| run).map_err(|e| e.message)),
        })
        .collect())
}

/// Why the bucket gave no file under `key`, which the listing has: the library's reason when
/// the object cannot be used (asked of that key alone, a conditional request), else that it
/// is gone.
fn why_missing(db: &Cache, key: &str) -> String {
    match call(|done| db.db.values_of(None, "results", vec![Key::from(key)], Freshness::Cached, AsValue, done)) {
        Err(reason) => reason.message,
        Ok(_) => MISSING.to_string(),
    }
}

/// A run as the matrix and the classes need it: its files' digests, from their names where
/// every name carries one (a listing's worth, no GET), else from their bodies.
#[derive(Clone)]
pub(crate) struct Digested {
    pub(crate) key: String,
    pub(crate) platform: String,
    pub(crate) browser: String,
    pub(crate) files: usize,
    /// The digests of the files that could be read.
    pub(crate) digests: Vec<Digest>,
    /// Files that could not be read, and why the first could not.
    pub(crate) unreadable: usize,
    pub(crate) error: Option<String>,
}

impl Digested {
    /// The run's branch, as its digests carry it (its first 32 bytes): the first file's that
    /// names one.
    pub(crate) fn branch(&self) -> Option<&str> {
        self.digests.iter().find_map(|d| d.branch.as_deref())
    }

    pub(crate) fn of(l: &Loaded) -> Digested {
        let errors: Vec<&String> = l.files.iter().filter_map(|f| f.run.as_ref().err()).collect();
        Digested {
            key: l.key.clone(),
            platform: l.platform.clone(),
            browser: l.browser.clone(),
            files: l.files.len(),
            digests: l.reports().map(Digest::of).collect(),
            unreadable: errors.len(),
            error: errors.first().map(|e| e.to_string()),
        }
    }
}

/// A run's key and its files' keys.
pub(crate) type RunFileKeys = (String, Vec<String>);

/// A pair's runs after run `after` (or from the newest), at most `runs`, each with its files:
/// one scan of the names in the usual case (a file a run), a longer one where runs hold more.
pub(crate) fn pair_files(
    db: &Cache,
    platform: &str,
    browser: &str,
    after: Option<&str>,
    runs: usize,
) -> AppResult<Vec<RunFileKeys>> {
    let mut limit = first_limit(runs);
    loop {
        let found =
            keys(db, "results-meta", ScanOptions::new().range(files_range(platform, browser, after)).limit(limit))?;
        if let Some(whole) = whole_runs(&found, limit, runs) {
            return Ok(whole);
        }
        limit *= 4;
    }
}

/// Each pair's newest runs, at most `runs`, each with its files, as [`pair_files`] finds them:
/// the pairs' scans asked at once.
pub(crate) fn each_pair_files(db: &Cache, pairs: &[(String, String)], runs: usize) -> AppResult<Vec<Vec<RunFileKeys>>> {
    let limit = first_limit(runs);
    let scans = pairs.iter().map(|(p, b)| ScanOptions::new().range(files_range(p, b, None)).limit(limit)).collect();
    let found = keys_of_each(db, "results-meta", scans)?;
    pairs
        .iter()
        .zip(found)
        .map(|((platform, browser), found)| match whole_runs(&found, limit, runs) {
            Some(whole) => Ok(whole),
            None => pair_files(db, platform, browser, None, runs),
        })
        .collect()
}

/// How many names a first scan for `runs` runs reads: enough for one file a run, as most runs
/// hold (runs of more files take a second scan, four times as long). A cold view reads no more
/// of a pair than it asks for here from the checkpoint: 26 names for the matrix's page of 25
/// runs before a pair's newest, within a checkpoint's 32 first names a pair (its heads and tails).
fn first_limit(runs: usize) -> usize {
    runs + 1
}

/// A pair's names after run `after` (or all of them). A run's files are "<run>/<file id>": those
/// of later runs sort from "<run>0" on.
fn files_range(platform: &str, browser: &str, after: Option<&str>) -> KeyRange {
    let lower = after.map_or_else(|| format!("{platform}/{browser}/"), |run| format!("{run}0"));
    KeyRange::bound(lower, format!("{platform}/{browser}0"), false, true)
}

/// The first `runs` runs of names a scan of at most `limit` found, when it found them whole:
/// every run but the last one found is; the last one too when the names ran out.
fn whole_runs(found: &[String], limit: usize, runs: usize) -> Option<Vec<RunFileKeys>> {
    let mut grouped: Vec<RunFileKeys> = Vec::new();
    for key in found {
        let Some(run) = run_key(key) else { continue };
        match grouped.last_mut() {
            Some((last, files)) if last == run => files.push(key.clone()),
            _ => grouped.push((run.to_string(), vec![key.clone()])),
        }
    }
    (found.len() < limit || grouped.len() > runs).then(|| {
        grouped.truncate(runs);
        grouped
    })
}

/// Runs as digests: from their names where each of a run's file names carries one, the others'
/// bodies fetched (immutable: cached ones cost nothing).
pub(crate) fn digested(db: &Cache, runs: Vec<RunFileKeys>) -> AppResult<Vec<Digested>> {
    let mut found: Vec<Option<Digested>> = Vec::with_capacity(runs.len());
    let mut to_read = Vec::new();
    for (key, files) in runs {
        let digests: Option<Vec<Digest>> = files.iter().map(|f| digest::of_key(f)).collect();
        match digests.filter(|d| !d.is_empty()) {
            Some(digests) => {
                let (platform, browser) = pair_of(&key).unwrap_or_default();
                let files = files.len();
                found.push(Some(Digested { key, platform, browser, files, digests, unreadable: 0, error: None }));
            }
            None => {
                found.push(None);
                to_read.push(key);
            }
        }
    }
    let mut read = load_runs(db, &to_read)?.into_iter().map(|l| Digested::of(&l));
    Ok(found.into_iter().map(|d| d.or_else(|| read.next())).collect::<Option<Vec<_>>>().unwrap_or_default())
}

/// Each pair's newest `runs` runs (newest first) as digests, one list per pair.
pub(crate) fn newest_digested(db: &Cache, pairs: &[(String, String)], runs: usize) -> AppResult<Vec<Vec<Digested>>> {
    let runs_of = each_pair_files(db, pairs, runs)?;
    let counts: Vec<usize> = runs_of.iter().map(Vec::len).collect();
    let mut found = digested(db, runs_of.into_iter().flatten().collect())?.into_iter();
    Ok(counts.iter().map(|n| found.by_ref().take(*n).collect()).collect())
}

/// The listing's range of a run's files ("<run>/<file id>"; '0' follows '/').
fn files_of(run_key: &str) -> ScanOptions {
    ScanOptions::new().range(KeyRange::bound(format!("{run_key}/"), format!("{run_key}0"), false, true))
}

/// Every pair the bucket holds runs of, in name order (the `platform, browser` index, unique:
/// local, no request beyond the listing).
pub(crate) fn all_pairs(db: &Cache) -> AppResult<Vec<(String, String)>> {
    let scan = ScanOptions::new().index("platform, browser").unique();
    Ok(keys(db, "results-meta", scan)?
        .iter()
        .filter_map(|key| {
            let mut segments = key.split('/');
            let (platform, browser) = (segments.next()?, segments.next()?);
            pair_prefix(platform, browser).ok().map(|()| (platform.to_string(), browser.to_string()))
        })
        .collect())
}

/// Each pair's newest `runs` runs (newest first), one list per pair (empty where none is in the
/// layout).
pub(crate) fn newest_runs(db: &Cache, pairs: &[(String, String)], runs: usize) -> AppResult<Vec<Vec<Loaded>>> {
    let runs_of = newest_keys(db, pairs, runs)?;
    let mut loaded = load_runs(db, &runs_of.concat())?.into_iter();
    Ok(runs_of.iter().map(|runs| loaded.by_ref().take(runs.len()).collect()).collect())
}

/// The keys of each pair's newest runs (a name outside the layout, written around the app, is
/// no run).
fn newest_keys(db: &Cache, pairs: &[(String, String)], runs: usize) -> AppResult<Vec<Vec<String>>> {
    let runs_of = each_pair_files(db, pairs, runs)?;
    Ok(runs_of.into_iter().map(|runs| runs.into_iter().map(|(run, _)| run).collect()).collect())
}

/// The latest runs' keys across every pair, newest first: the `run` index's first `limit`
/// entries after run `after`. Paged by the listing's keys, so that a name outside the layout
/// cannot end the pages: the caller pages on the run keys of what this finds.
pub(crate) fn latest_files(db: &Cache, after: Option<&str>, limit: usize) -> AppResult<Vec<String>> {
    let mut scan = ScanOptions::new().index("run").unique().limit(limit);
    if let Some(after) = after {
        let (platform, browser) = pair_of(after)?;
        let after = Key::Array(vec![run_segment_of(after).into(), platform.into(), browser.into()]);
        scan = scan.range(KeyRange::lower(after, true));
    }
    keys(db, "results-meta", scan)
}

/// CI run `name`'s own name and its files on every pair: its anchor (`.runs/<name>`) names the
/// run's segment, the `run` index finds the files under it. A plain id that no writer of every
/// pair anchored names the one scoped run of that id (`<id>@<scope>`, a scoped token's), if
/// there is one; of two or more, the answer names each with the pairs its token may write.
/// `None` when no anchor names a segment of `name`.
pub(crate) fn ci_run_files(db: &Cache, name: &str) -> AppResult<Option<(String, Vec<String>)>> {
    let (name, segment) = match anchored(db, name)? {
        Some(anchor) => (name.to_string(), anchor.segment),
        None if is_scoped(name) => return Ok(None),
        None => {
            let scoped = keys(db, "results-meta", ScanOptions::new().range(scoped_anchors(name)))?;
            let mut found = Vec::new();
            for anchor in &scoped {
                let scoped_name = &anchor[".runs/".len()..];
                found.extend(anchored(db, scoped_name)?.map(|a| (scoped_name.to_string(), a)));
            }
            match found.len() {
                0 => return Ok(None),
                1 => {
                    let (name, anchor) = found.pop().expect("one");
                    (name, anchor.segment)
                }
                _ => {
                    let each: Vec<String> =
                        found.iter().map(|(name, a)| format!("{name} ({})", a.scope.join(" "))).collect();
                    return Err(AppError::bad(format!(
                        "run {name:?} was posted by tokens of {} scopes, each a run of its own: name one of {}",
                        found.len(),
                        each.join(", ")
                    )));
                }
            }
        }
    };
    let (lower, upper) =
        (Key::Array(vec![segment.as_str().into()]), Key::Array(vec![format!("{segment}\u{0}").into()]));
    let scan = ScanOptions::new().index("run").range(KeyRange::bound(lower, upper, false, true));
    Ok(Some((name, keys(db, "results-meta", scan)?)))
}

/// What a run's anchor says: its segment, and the pairs of the token that made it (none for a
/// writer of every pair).
struct Anchor {
    segment: String,
    scope: Vec<String>,
}

/// The anchor of CI run `name`, when it is one (its segment is a segment of `name`).
fn anchored(db: &Cache, name: &str) -> AppResult<Option<Anchor>> {
    let key = Key::from(format!(".runs/{name}"));
    let anchor = call(|done| db.db.get(None, "results", key, Freshness::Cached, AsValue, done))?;
    let Some(segment) = anchor["segment"].as_str().filter(|s| is_run_segment(s, name)) else { return Ok(None) };
    let scope = anchor["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string);
    Ok(Some(Anchor { segment: segment.to_string(), scope: scope.collect() }))
}

/// The names of the anchors of id's scoped runs (`.runs/<id>@<scope>`; 'A' follows '@').
fn scoped_anchors(id: &str) -> KeyRange {
    KeyRange::bound(format!(".runs/{id}@"), format!(".runs/{id}A"), false, true)
}
