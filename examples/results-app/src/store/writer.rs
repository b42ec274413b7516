//! The writer: runs stored through the library, create-only, each under its run's anchor, in
//! waves that share one transaction and one flush; a write the bucket did not take is taken
//! back, so nothing half-stored stays behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use objstore_db::rsapi::{AsValue, Db, Freshness, Record};
use objstore_db_core::{Error, FlushReport, Key, MechanismKind, Resolution, SyncStatus};
use serde_json::{json, Value};

use crate::clock::now_ms;
use crate::error::{AppError, AppResult, Kind};
use crate::model::digest;
use crate::model::digest::Digest;
use crate::model::{clip, is_run_segment, new_run_id, object_key, run_segment, short_hash, Run, RunScope};

use super::group::Group;
use super::{call, open_and_wait, Target};

/// A database that only writes runs: in memory, since what matters is in the bucket.
/// Its database keeps a copy of each run it stored, so it is replaced by a fresh one after
/// this many: a long-running collector's memory stays bounded.
const RUNS_PER_DATABASE: u64 = 256;

/// How many requests a wave of posts sends to the bucket at once.
const WAVE_REQUESTS: usize = 48;

/// The waits between a retired writer database's flushes while it still owes change-log
/// markers (runs whose bodies landed, answered 201): about a minute in all after a rotation,
/// and the first few seconds of it when the collector stops.
const OWED_WAITS: [Duration; 6] = [
    Duration::from_millis(250),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(5),
    Duration::from_secs(15),
    Duration::from_secs(40),
];

pub struct Writer {
    target: Target,
    current: std::sync::Mutex<(Db, u64)>,
    /// Files stored so far: a viewer beside this writer lists again when it grew.
    stored: Arc<AtomicU64>,
    /// One run anchored at a time: two posts of one run in this process find one anchor.
    anchoring: std::sync::Mutex<()>,
    /// Runs posted together are written together: one transaction, one flush (`write_wave`).
    /// Runs waiting to be written, each as its key and its JSON text (a tenth of its size as a
    /// tree, which it never becomes: the library stores and sends the text).
    group: Group<(String, Record)>,
}

/// A run as the writer stores it: the parts of its object name, its digest, and its JSON text.
/// A post encodes each report as soon as it is read, so that only the text (a tenth of the
/// parsed run's size) waits to be written.
#[derive(Debug, Clone)]
pub struct Encoded {
    platform: String,
    browser: String,
    ci_run: Option<String>,
    digest: Option<String>,
    record: Record,
    /// The poster's key for this post (`Idempotency-Key`), as the run id and file id it names.
    once: Option<String>,
    /// The scope of the token that posted it, when that token may write some pairs only: its
    /// CI run is that scope's (`<id>@<scope>`), apart from other tokens' runs of the same id.
    scope: Option<RunScope>,
}

impl Encoded {
    pub fn of(run: &Run) -> Encoded {
        Encoded {
            platform: run.platform.clone(),
            browser: run.browser.clone(),
            ci_run: run.ci.run.clone(),
            digest: Digest::for_name(run),
            record: Record::of(run).expect("a run serialises"),
            once: None,
            scope: None,
        }
    }

    /// The same post, made by a token scoped to some pairs: it joins only its scope's CI run.
    pub fn scoped(mut self, scope: RunScope) -> Encoded {
        self.scope = Some(scope);
        self
    }

    /// The same post, keyed by its poster (an `Idempotency-Key`): posted again with the same
    /// key, it is stored under the same name, and create-only makes the second "already
    /// stored". The name is the key's hash within the run's pair, so no other pair's post
    /// can meet it.
    pub fn keyed(mut self, key: &str) -> Encoded {
        let named = format!("{}/{}/{key}", self.platform, self.browser);
        self.once = Some(format!("{:016x}", short_hash(named.as_bytes())));
        self
    }

    /// The run's JSON, as it is stored.
    pub fn json(&mut self) -> &str {
        self.record.text().get()
    }
}

impl Writer {
    pub fn open(target: &Target) -> AppResult<Writer> {
        let db = Self::open_database(target, None)?;
        Ok(Writer {
            target: target.clone(),
            current: std::sync::Mutex::new((db, 0)),
            stored: Arc::default(),
            anchoring: Default::default(),
            group: Group::default(),
        })
    }

    /// How many files this writer has stored, as it grows.
    pub fn stored_count(&self) -> Arc<AtomicU64> {
        self.stored.clone()
    }

    /// A writer database; `conditional_writes`, what an earlier one learnt of the bucket's
    /// conditional writes, spares this one the probe (four requests and a stalled wave).
    fn open_database(target: &Target, conditional_writes: Option<bool>) -> AppResult<Db> {
        let mut schema = target.schema();
        let options = &mut schema["stores"][0]["Sync"]["Options"];
        // A wave's runs go out together: up to WAVE_REQUESTS requests at once (the library's
        // default is 8), as a bucket takes many writes in parallel far faster than in turn.
        options["concurrency"] = json!(WAVE_REQUESTS);
        if let Some(honoured) = conditional_writes {
            options["conditionalWrites"] = json!(honoured);
        }
        open_and_wait("results-writer", &schema, MechanismKind::Memory)
    }

    /// The database to write `runs` runs through, replaced by a fresh one every
    /// [`RUNS_PER_DATABASE`] runs (the old one closes once its last write is answered).
    fn database(&self, runs: u64) -> AppResult<Db> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.1 >= RUNS_PER_DATABASE {
            let learnt = current.0.sync_stats(false).conditional_writes.into_values().next();
            let fresh = Self::open_database(&self.target, learnt).map_err(local)?;
            // The old one closes when the stores still using it let go of it, and once it
            // owes no marker: its owed markers are sent first, beside the new one's writes.
            let old = std::mem::replace(&mut current.0, fresh);
            std::thread::spawn(move || send_what_is_owed(&old, &OWED_WAITS));
            current.1 = 0;
        }
        current.1 += runs;
        Ok(current.0.clone())
    }

    /// Stores `run` under a new key and waits until the bucket holds it; returns the key. A run
    /// the bucket did not take is an error, and nothing else was written. Files of one CI run
    /// (`ci.run`) go under one run segment, whoever posts them.
    pub fn store(&self, run: &Run) -> AppResult<String> {
        self.store_encoded(Encoded::of(run))
    }

    /// [`Writer::store`] of a run already encoded (whose parsed form is gone).
    pub fn store_encoded(&self, run: Encoded) -> AppResult<String> {
        // A keyed post of no CI run is a run of its own, anchored as a CI run is, so that its
        // second post finds the first one's time in its name.
        let segment = match (&run.ci_run, &run.once) {
            (Some(id), _) => {
                let name = run.scope.as_ref().map_or_else(|| id.clone(), |scope| scope.run_name(id));
                self.segment_of(&self.database(1)?, &name, run.scope.as_ref())?
            }
            // Named after the pair, which the token may write: no scope needed.
            (None, Some(once)) => self.segment_of(&self.database(1)?, &format!("post-{once}"), None)?,
            (None, None) => run_segment(now_ms(), &new_run_id()),
        };
        // The file's name carries its digest where it fits, so that a listing draws the matrix.
        let fixed = self.target.prefix.len() + object_key(&run.platform, &run.browser, &segment, "").len();
        let file_id = run.once.clone().unwrap_or_else(new_run_id);
        let file = digest::file_segment(&file_id, run.digest.as_deref(), fixed);
        let key = object_key(&run.platform, &run.browser, &segment, &file);
        self.group.submit((key.clone(), run.record), |wave| self.write_wave(wave))?;
        self.stored.fetch_add(1, Ordering::Relaxed);
        Ok(key)
    }

    /// Writes runs posted together: create-only in one local transaction, sent with one flush
    /// (the library sends them in parallel); each is answered by its own sync status. A wave
    /// the library refuses as a whole (a key taken twice) is written run by run instead.
    fn write_wave(&self, wave: Vec<(String, Record)>) -> Vec<AppResult<()>> {
        let db = match self.database(wave.len() as u64) {
            Ok(db) => db,
            Err(e) => return vec![Err(e); wave.len()],
        };
        if wave.len() == 1 {
            // One run alone is written as it is, never copied (a copy is kept of each run of a
            // larger wave, to write it alone should the wave fail).
            let (key, record) = wave.into_iter().next().expect("one run");
            return vec![self.create(&db, &key, record)];
        }
        let keys: Vec<Key> = wave.iter().map(|(key, _)| Key::from(key.as_str())).collect();
        let records: Vec<Record> = wave.iter().map(|(_, record)| record.clone()).collect();
        let written = call(|done| db.write_many(None, "results", records, Some(keys), true, done));
        if written.is_err() {
            return wave.into_iter().map(|(key, record)| self.create(&db, &key, record)).collect();
        }
        let report = match call(|done| db.flush(done)).map_err(local) {
            Ok(report) => report,
            // Each run is taken back unless the bucket already holds it.
            Err(e) => return wave.iter().map(|(key, _)| self.take_back(&db, key, e.clone())).collect(),
        };
        wave.iter().map(|(key, _)| self.settle(&db, key, &report)).collect()
    }

    /// The run segment of run `id`: the one its anchor (`.runs/<id>`, written create-only by
    /// the first file of the run to arrive, with the `scope` that posted it) holds, else a new
    /// one, anchored now (the collector's time, never a poster's). Of two posts
    /// that race to anchor a run, the bucket keeps one anchor and the other reads it; a server
    /// that ignores conditional writes (checked with a GET first) narrows the race to the
    /// moment between that GET and the write.
    fn segment_of(&self, db: &Db, id: &str, scope: Option<&RunScope>) -> AppResult<String> {
        let _one = self.anchoring.lock().unwrap_or_else(|p| p.into_inner());
        let anchor = format!(".runs/{id}");
        let anchored = |db: &Db| -> AppResult<Option<String>> {
            let found =
                call(|done| db.get(None, "results", Key::from(anchor.as_str()), Freshness::Fresh, AsValue, done))
                    .map_err(|e| unavailable(&e.message))?;
            match &found {
                Value::Null => Ok(None),
                Value::Object(o) => match o.get("segment").and_then(Value::as_str) {
                    Some(segment) if is_run_segment(segment, id) => Ok(Some(segment.to_string())),
                    _ => Err(not_taken(&format!(
                        "the bucket's anchor of run {id:?} is not a run's: {}",
                        clip(&found.to_string())
                    ))),
                },
                _ => Err(not_taken(&format!(
                    "the bucket's anchor of run {id:?} is not a run's: {}",
                    clip(&found.to_string())
                ))),
            }
        };
        if let Some(segment) = anchored(db)? {
            return Ok(segment);
        }
        let mine = run_segment(now_ms(), id);
        let mut body = json!({"run": id, "segment": mine});
        if let Some(scope) = scope {
            body["scope"] = json!(scope.pairs);
        }
        match self.create(db, &anchor, body) {
            Ok(()) => Ok(mine),
            Err(refused) if refused.kind == Kind::Refused => {
                // Another post anchored the run first: its anchor wins, and is read.
                let writes = call(|done| db.refused_writes(done)).map_err(local)?;
                let Some(sequence) = writes.iter().find(|w| w.entry.id == anchor).map(|w| w.sequence) else {
                    return Err(refused);
                };
                call(|done| db.resolve(sequence, Resolution::Discard, done)).map_err(local)?;
                anchored(db)?.ok_or(refused)
            }
            Err(other) => Err(other),
        }
    }

    /// Writes `record` under `key`, create-only, and waits until the bucket holds it.
    fn create(&self, db: &Db, key: &str, record: impl Into<Record>) -> AppResult<()> {
        let record = record.into();
        // A keyed post sent again is settled as the first one is.
        if !self.written_before(db, key, &record)? {
            call(|done| db.add(None, "results", record, Some(Key::from(key)), done)).map_err(local)?;
        }
        self.flush_and_settle(db, key)
    }

    /// Flushes, and answers whether the bucket holds `key`.
    fn flush_and_settle(&self, db: &Db, key: &str) -> AppResult<()> {
        match call(|done| db.flush(done)).map_err(local) {
            Ok(report) => self.settle(db, key, &report),
            // Taken back unless the bucket already holds it, as a wave's runs are.
            Err(e) => self.take_back(db, key, e),
        }
    }

    /// Whether `key` was written here before with this same record (a keyed post, posted
    /// again). A key written with another record is refused.
    fn written_before(&self, db: &Db, key: &str, record: &Record) -> AppResult<bool> {
        // Asked of the local state first: a new key (every post but a keyed one sent again)
        // costs no read and no copy.
        let known = call(|done| db.sync_status("results", Key::from(key), done)).map_err(local)?;
        if matches!(known, SyncStatus::Unknown) {
            return Ok(false);
        }
        let found =
            call(|done| db.get(None, "results", Key::from(key), Freshness::Cached, AsValue, done)).map_err(local)?;
        if found.is_null() {
            return Ok(false);
        }
        match found == record.clone().into_tree().map_err(|e| local(e.into()))? {
            true => Ok(true),
            false => Err(AppError::bad("this Idempotency-Key was posted before with another report")),
        }
    }

    /// After a flush: whether the bucket holds `key`. The report covers every write the flush
    /// met (other posts' too): this run's outcome is its own sync status; the report only says
    /// why. A run not stored is taken back, so that it does not land later.
    fn settle(&self, db: &Db, key: &str, report: &FlushReport) -> AppResult<()> {
        let status = call(|done| db.sync_status("results", Key::from(key), done)).map_err(local)?;
        // Why, from the first of the report's reasons that says anything: a stop (offline,
        // blocked), or the first of a list of writes (rejected, held).
        let stopped = |e: &Option<Error>| e.as_ref().map(Error::to_string);
        let first = |writes: &[(u64, Error)]| writes.first().map(|(_, e)| e.to_string());
        let why = |reasons: Option<String>| reasons.unwrap_or_else(|| "the bucket did not take it".into());
        let failed = match status {
            SyncStatus::Synced => return Ok(()),
            SyncStatus::Refused => not_taken(&why(stopped(&report.blocked).or_else(|| first(&report.rejected)))),
            _ => unavailable(&why(stopped(&report.offline)
                .or_else(|| first(&report.held))
                .or_else(|| stopped(&report.blocked)))),
        };
        self.take_back(db, key, failed)
    }

    /// A run that was not stored (`failed` says why) is taken back: the caller hears so, and
    /// it must not land later either. A run whose body is already in the bucket cannot be
    /// taken back: it is stored, and said so — one whose change-log marker is owed (sent
    /// later), and one a flush running beside this one acknowledged in between.
    fn take_back(&self, db: &Db, key: &str, failed: AppError) -> AppResult<()> {
        call(|done| db.withdraw_pending("results", Key::from(key), done)).map_err(local)?;
        match call(|done| db.sync_status("results", Key::from(key), done)).map_err(local)? {
            SyncStatus::Pending | SyncStatus::Synced => Ok(()),
            _ => Err(failed),
        }
    }
}

/// Why a run was not stored: the bucket could not be reached, or failed for now.
fn unavailable(why: &str) -> AppError {
    AppError::unavailable(format!("the bucket is unavailable: {why}"))
}

/// The bucket refused the write (credentials, a conflict, a bad request).
fn not_taken(why: &str) -> AppError {
    AppError::refused(format!("the bucket did not take the run: {why}"))
}

/// The library refused it before the bucket was asked.
fn local(e: AppError) -> AppError {
    AppError::internal(format!("the run could not be written: {}", e.message))
}

/// Flushes `db` until it owes nothing (every write answered 201 has its change-log marker in
/// the bucket), waiting `waits` between tries; what is still owed after them is lost with the
/// database, and said. Without this, a run whose marker was owed when its database was dropped
/// stays unknown to warm readers until their next full relist.
fn send_what_is_owed(db: &Db, waits: &[Duration]) {
    let mut waits = waits.iter();
    loop {
        let owed = match call(|done| db.flush(done)) {
            Ok(report) if report.pending == 0 => return,
            Ok(report) => format!("{} change-log marker(s)", report.pending),
            Err(e) => e.message,
        };
        match waits.next() {
            Some(wait) => std::thread::sleep(*wait),
            None => {
                eprintln!("objstore-results: a writer database closed still owing {owed}: warm readers see those runs at their next full listing");
                return;
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let db = self.current.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
        send_what_is_owed(&db, &OWED_WAITS[..3]);
        db.close_and_join();
    }
}
