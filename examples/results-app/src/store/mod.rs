//! `objstore-results post`: runs written through the library, create-only, to the bucket (a
//! `file://` directory by default, any S3 endpoint through the standard AWS settings).

pub mod group;
pub mod quarantine;
pub mod reader;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use objstore_db::rsapi::{AsValue, Db, Freshness, OpenOptions};
use objstore_db_core::{Error, FlushReport, Key, MechanismKind, Resolution, Result as CoreResult, Schema, SyncStatus};
use serde_json::{json, Value};

use crate::model::digest;
use crate::error::{AppError, AppResult, Kind};
use crate::clock::now_ms;
use crate::model::{clip, is_run_segment, new_run_id, object_key, run_segment, short_hash, Run};
use crate::store::group::Group;

/// Where results go.
#[derive(Debug, Clone)]
pub struct Target {
    /// `file://<dir>` or `http(s)://host[:port]`.
    pub endpoint: String,
    pub bucket: String,
    pub prefix: String,
    /// How long one request to the bucket may take, in ms (`OBJSTORE_RESULTS_TIMEOUT_MS`; the
    /// library's 10,000 when unset).
    pub timeout_ms: Option<u64>,
}

impl Target {
    /// `OBJSTORE_RESULTS` (else `file://./results`), `OBJSTORE_RESULTS_BUCKET` (else `results`)
    /// and `OBJSTORE_RESULTS_PREFIX`, as the language reporters read them, and
    /// `OBJSTORE_RESULTS_TIMEOUT_MS`.
    pub fn from_env() -> AppResult<Target> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let endpoint = var("OBJSTORE_RESULTS").unwrap_or_else(|| {
            let here = std::env::current_dir().unwrap_or_default();
            format!("file://{}", here.join("results").display())
        });
        let timeout_ms = var("OBJSTORE_RESULTS_TIMEOUT_MS")
            .map(|ms| {
                ms.parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                    AppError::bad(format!("OBJSTORE_RESULTS_TIMEOUT_MS is {ms:?}: give a whole number of milliseconds"))
                })
            })
            .transpose()?;
        Ok(Target {
            endpoint,
            bucket: var("OBJSTORE_RESULTS_BUCKET").unwrap_or_else(|| "results".into()),
            prefix: var("OBJSTORE_RESULTS_PREFIX").unwrap_or_default(),
            timeout_ms,
        })
    }

    /// What a command says it opened: `bucket "results" at file:///... (prefix "p/")`.
    pub fn describe(&self) -> String {
        match self.prefix.as_str() {
            "" => format!("bucket {:?} at {}", self.bucket, self.endpoint),
            prefix => format!("bucket {:?} at {} (prefix {prefix:?})", self.bucket, self.endpoint),
        }
    }

    /// A `file://` target (its objects live in `<dir>/<bucket>/`) whose directory does not
    /// exist holds no runs: a read says so rather
    /// than creating it.
    pub fn missing_directory(&self) -> Option<std::path::PathBuf> {
        let dir = std::path::PathBuf::from(self.endpoint.strip_prefix("file://")?).join(&self.bucket);
        (!dir.exists()).then_some(dir)
    }

    /// Where a viewer of this target keeps its cache unless told: one SQLite file per target
    /// under `$XDG_CACHE_HOME/objstore-results` (else `~/.cache/objstore-results`).
    pub fn default_cache(&self) -> std::path::PathBuf {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(std::path::PathBuf::from);
        let base =
            var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache"))).unwrap_or_else(std::env::temp_dir);
        let id = format!("{} {} {}", self.endpoint, self.bucket, self.prefix);
        let readable: String = id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .skip(id.len().saturating_sub(80))
            .collect();
        base.join("objstore-results").join(format!("{readable}-{:016x}.sqlite3", short_hash(id.as_bytes())))
    }

    /// The `results` store (the app README's "The result format"), immutable and create-only, syncing to this target;
    /// each run stored leaves a change-log marker, so a viewer's warm refresh is one LIST.
    pub fn schema(&self) -> Value {
        let mut options = self.options();
        options["metadata"] = json!(["platform", "browser", "version"]);
        options["changeLog"] = json!(true);
        json!({"stores": [{"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": options}}]})
    }

    /// The sync options every store of this target starts from: where, and how long a request
    /// may take.
    pub fn options(&self) -> Value {
        let mut options = json!({"bucket": self.bucket, "prefix": self.prefix, "endpoint": self.endpoint});
        if let Some(ms) = self.timeout_ms {
            options["timeoutMs"] = json!(ms);
        }
        options
    }
}

/// A database that only writes runs: in memory, since what matters is in the bucket.
/// Its database keeps a copy of each run it stored, so it is replaced by a fresh one after
/// this many: a long-running collector's memory stays bounded.
const RUNS_PER_DATABASE: u64 = 256;

/// How many requests a wave of posts sends to the bucket at once.
const WAVE_REQUESTS: usize = 48;

pub struct Writer {
    target: Target,
    current: std::sync::Mutex<(Db, u64)>,
    /// Files stored so far: a viewer beside this writer lists again when it grew.
    stored: Arc<AtomicU64>,
    /// One run anchored at a time: two posts of one run in this process find one anchor.
    anchoring: std::sync::Mutex<()>,
    /// Runs posted together are written together: one transaction, one flush (`write_wave`).
    /// Runs waiting to be written, each as its key and its JSON text (a tenth of its size as a
    /// `Value`, which it becomes only as it is handed to the library).
    group: Group<(String, String)>,
}

/// Opens the database `name` (a file path for SQLite) with `schema` and waits until it is open.
pub(crate) fn open_and_wait(name: &str, schema: &Value, mechanism: MechanismKind) -> AppResult<Db> {
    let options = OpenOptions { mechanism, ..OpenOptions::default() };
    let (tx, rx) = mpsc::channel();
    let schema = Schema::from_json(&schema.to_string()).map_err(|e| AppError::internal(e.to_string()))?;
    let db = Db::open(name, Some(schema), &options, move |r| {
        let _ = tx.send(r.map(drop));
    })
    .map_err(|e| AppError::internal(e.to_string()))?;
    rx.recv()
        .map_err(|_| AppError::internal("the database went away"))?
        .map_err(|e| AppError::internal(e.to_string()))?;
    Ok(db)
}

/// Makes a request of the library and waits for its answer (a refusal is the library's or
/// the bucket's: [`Kind::Refused`]).
pub(crate) fn call<T: Send + 'static>(
    request: impl FnOnce(Box<dyn FnOnce(CoreResult<T>) + Send>) -> CoreResult<u64>,
) -> AppResult<T> {
    let (tx, rx) = mpsc::channel();
    request(Box::new(move |answer| {
        let _ = tx.send(answer);
    }))?;
    Ok(rx.recv().map_err(|_| AppError::refused("the database closed before it answered"))??)
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
            // The old one closes when the stores still using it let go of it.
            drop(std::mem::replace(&mut current.0, fresh));
            current.1 = 0;
        }
        current.1 += runs;
        Ok(current.0.clone())
    }

    /// Stores `run` under a new key and waits until the bucket holds it; returns the key. A run
    /// the bucket did not take is an error, and nothing else was written. Files of one CI run
    /// (`ci.run`) go under one run segment, whoever posts them.
    pub fn store(&self, run: &Run) -> AppResult<String> {
        let segment = match &run.ci.run {
            None => run_segment(now_ms(), &new_run_id()),
            Some(id) => self.segment_of(&self.database(1)?, id)?,
        };
        // The file's name carries its digest where it fits, so that a listing draws the matrix.
        let fixed = self.target.prefix.len() + object_key(&run.platform, &run.browser, &segment, "").len();
        let file = digest::file_segment(&new_run_id(), run, fixed);
        let key = object_key(&run.platform, &run.browser, &segment, &file);
        let text = serde_json::to_string(run).map_err(|e| local(AppError::internal(e.to_string())))?;
        self.group.submit((key.clone(), text), |wave| self.write_wave(wave))?;
        self.stored.fetch_add(1, Ordering::Relaxed);
        Ok(key)
    }

    /// Writes runs posted together: create-only in one local transaction, sent with one flush
    /// (the library sends them in parallel); each is answered by its own sync status. A wave
    /// the library refuses as a whole (a key taken twice) is written run by run instead.
    fn write_wave(&self, wave: Vec<(String, String)>) -> Vec<AppResult<()>> {
        let db = match self.database(wave.len() as u64) {
            Ok(db) => db,
            Err(e) => return vec![Err(e); wave.len()],
        };
        let value = |text: &str| serde_json::from_str::<Value>(text).expect("a run's own JSON reads back");
        let keys: Vec<Key> = wave.iter().map(|(key, _)| Key::from(key.as_str())).collect();
        let values = wave.iter().map(|(_, text)| value(text)).collect();
        let written = call(|done| db.write_many(None, "results", values, Some(keys), true, done));
        if written.is_err() {
            return wave.iter().map(|(key, text)| self.create(&db, key, value(text))).collect();
        }
        let report = match call(|done| db.flush(done)).map_err(local) {
            Ok(report) => report,
            // Each run is taken back unless the bucket already holds it.
            Err(e) => return wave.iter().map(|(key, _)| self.take_back(&db, key, e.clone())).collect(),
        };
        wave.iter().map(|(key, _)| self.settle(&db, key, &report)).collect()
    }

    /// The run segment of run `id`: the one its anchor (`.runs/<id>`, written create-only by
    /// the first file of the run to arrive) holds, else a new one, anchored now. Of two posts
    /// that race to anchor a run, the bucket keeps one anchor and the other reads it; a server
    /// that ignores conditional writes (checked with a GET first) narrows the race to the
    /// moment between that GET and the write.
    fn segment_of(&self, db: &Db, id: &str) -> AppResult<String> {
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
        match self.create(db, &anchor, json!({"run": id, "segment": mine})) {
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

    /// Writes `value` under `key`, create-only, and waits until the bucket holds it.
    fn create(&self, db: &Db, key: &str, value: Value) -> AppResult<()> {
        call(|done| db.add(None, "results", value, Some(Key::from(key)), done)).map_err(local)?;
        let report = call(|done| db.flush(done)).map_err(local)?;
        self.settle(db, key, &report)
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
    /// it must not land later either. A run whose body is already in the bucket (only its
    /// change-log marker is owed, and is sent later) cannot be taken back: it is stored, and
    /// said so.
    fn take_back(&self, db: &Db, key: &str, failed: AppError) -> AppResult<()> {
        call(|done| db.withdraw_pending("results", Key::from(key), done)).map_err(local)?;
        match call(|done| db.sync_status("results", Key::from(key), done)).map_err(local)? {
            SyncStatus::Pending => Ok(()),
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

impl Drop for Writer {
    fn drop(&mut self) {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).0.close_and_join();
    }
}

/// The collector's address for runs: a URL naming only the server (`http://host:port`) means
/// its `/results`.
pub fn collector_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let path_starts = trimmed.split_once("://").map_or(0, |(scheme, _)| scheme.len() + 3);
    match trimmed[path_starts..].contains('/') {
        true => url.to_string(),
        false => format!("{trimmed}/results"),
    }
}

/// Posts `run` to a collector (`OBJSTORE_COLLECTOR_TOKEN` is sent as its bearer token);
/// returns the key it stored the run under.
pub fn send_to_collector(url: &str, run: &Run) -> AppResult<String> {
    let url = &collector_url(url);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut request = agent.post(url).header("content-type", "application/json");
    if let Some(token) = std::env::var("OBJSTORE_COLLECTOR_TOKEN").ok().filter(|t| !t.is_empty()) {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = serde_json::to_vec(run).map_err(|e| AppError::internal(e.to_string()))?;
    let mut response = request.send(&body[..]).map_err(|e| AppError::unavailable(format!("posting to {url}: {e}")))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match (status, answer["key"].as_str()) {
        (201, Some(key)) => Ok(key.to_string()),
        _ => Err(AppError::refused(format!(
            "the collector at {url} answered {status}: {}",
            answer["error"].as_str().unwrap_or("no error message")
        ))),
    }
}
