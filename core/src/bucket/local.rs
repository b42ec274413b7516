//! A directory that behaves as a bucket (`file://<dir>`), for the embedded default: objects are
//! files under `<dir>/<bucket>/` at their key's path, each with its record (the etag, the time of
//! the write and the custom metadata: `record.rs`) in an attribute of its file. Listings are in
//! UTF-8 byte order with S3's prefix, delimiter, max-keys and start-after/marker rules;
//! conditional reads and writes answer as S3 does (304, 412). Keys that would leave the
//! directory are refused.

use std::cell::{Cell, OnceCell};
use std::fs::{self, File};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::accounting::Accounting;
use super::dirwalk::{Step, Walker};
use super::record::{Keeping, Record};
use super::{
    etag_of, Bucket, Fetched, ListPage, ListRequest, Metadata, Object, ObjectInfo, PutMode, PutOptions, Validators,
};
use crate::error::{Error, Result};
use crate::time;
use crate::token::Token;

/// A body this large has its etag (MD5, about 700 MB/s) worked out on a thread of its own
/// while it is copied to the disk, which takes as long: a 2 MB run's write took 8 ms, 3 of
/// them MD5.
const ETAG_BESIDE_WRITE: usize = 1 << 20;

/// The folder inside the bucket directory that holds what is not an object.
const RESERVED: &str = ".objstore";
const DEFAULT_MAX_KEYS: usize = 1000;
/// S3's cap on an object's custom metadata (names and values), which it answers with 400.
const MAX_METADATA_BYTES: usize = 2048;

pub struct LocalBucket {
    root: PathBuf,
    max_object_bytes: u64,
    accounting: Arc<Accounting>,
    /// `.objstore/lock`, opened at the first write and kept open (with the id of the process
    /// that opened it): its mutex serialises writers in this process, `flock` on it serialises
    /// processes.
    writers: Mutex<Option<(u32, File)>>,
    walker: Walker,
    /// Where new records go: the body file's attribute, or a sidecar file where the file system
    /// refuses attributes.
    keeping: Keeping,
    /// Whether `.objstore/meta` holds sidecars (this bucket's, or those of a bucket written
    /// before attributes), to be read where a file has no attribute and removed with it.
    sidecars: bool,
}

/// An object as the bucket describes it: its record, or one recomputed from the body.
#[derive(Debug, Clone)]
struct Described {
    etag: String,
    modified_ms: u64,
    size: u64,
    metadata: Metadata,
    /// Recomputed from the body: no record described it.
    stale: bool,
}

impl LocalBucket {
    /// Opens (creating) `<directory>/<bucket>`.
    pub fn open(
        directory: &Path,
        bucket: &str,
        max_object_bytes: u64,
        accounting: Arc<Accounting>,
    ) -> Result<LocalBucket> {
        if bucket.is_empty() || bucket.contains(['/', '\0']) || bucket == "." || bucket == ".." {
            return Err(Error::InvalidArgument(format!("{bucket:?} is not a usable local bucket name")));
        }
        let root = directory.join(bucket);
        let creating = |dir: &Path| {
            fs::create_dir_all(dir).map_err(|e| io_error(&format!("creating the local bucket {}", root.display()), e))
        };
        let scratch = root.join(RESERVED).join("tmp");
        creating(&scratch)?;
        let keeping = Keeping::probe(&scratch);
        if keeping == Keeping::Sidecar {
            // Not made in a read-only folder: what is there is still read.
            let _ = fs::create_dir_all(root.join(RESERVED).join("meta"));
        }
        let sidecars = root.join(RESERVED).join("meta").is_dir();
        let writers = Mutex::new(None);
        let bucket =
            LocalBucket { root, max_object_bytes, accounting, writers, walker: Walker::default(), keeping, sidecars };
        bucket.remove_orphaned_temporaries();
        Ok(bucket)
    }

    /// The file of an object, refusing keys that would escape the bucket or clash with its
    /// own files.
    fn path_of(&self, key: &str) -> Result<PathBuf> {
        let refuse = |why: &str| {
            Err(Error::InvalidArgument(format!(
                "object key {key:?} cannot be used in the local bucket {}: {why}",
                self.root.display()
            )))
        };
        if key.is_empty() || key.len() > 1024 {
            return refuse("keys are 1 to 1024 bytes");
        }
        if key.contains('\0') {
            return refuse("it contains NUL");
        }
        if key.starts_with('/') {
            return refuse("it is an absolute path");
        }
        for segment in key.split('/') {
            match segment {
                "" => return refuse("it has an empty path segment"),
                "." | ".." => return refuse("it has a . or .. segment"),
                _ => {}
            }
        }
        if key.split('/').next() == Some(RESERVED) {
            return refuse("the .objstore folder is reserved");
        }
        // A link planted in the bucket's folder (by anyone who may write it) must not carry a
        // write, or a read, outside it.
        if let Some(link) = self.link_on_the_way(key) {
            return refuse(&format!("{} is a symbolic link", link.display()));
        }
        Ok(self.root.join(key))
    }

    /// The first symbolic link among the folders and file `key` names, in the objects' tree or
    /// in the sidecars' (`.objstore/meta`).
    fn link_on_the_way(&self, key: &str) -> Option<PathBuf> {
        let meta = self.root.join(RESERVED).join("meta");
        let mut within = PathBuf::new();
        for segment in key.split('/') {
            within.push(segment);
            let trees = [Some(self.root.join(&within)), Some(meta.join(&within)).filter(|_| self.sidecars)];
            for path in trees.into_iter().flatten() {
                if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Some(path);
                }
            }
        }
        None
    }

    fn sidecar_path(&self, key: &str) -> PathBuf {
        self.root.join(RESERVED).join("meta").join(key)
    }

    /// The object's description, or `None` when there is no object. The file is the truth: a
    /// record without its file describes nothing, and one the file no longer matches (edited by
    /// hand, or a crash before its record was set) is recomputed from it.
    fn described(&self, key: &str, path: &Path) -> Result<Option<Described>> {
        let file = match fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Ok(None),
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
        };
        let recorded = match self.record(key, path) {
            Ok(recorded) => recorded,
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(io_error(&format!("reading the local bucket's record of {key:?}"), e)),
        };
        let size = file.len();
        match recorded {
            Some(r) if r.describes(&file) => Ok(Some(Described {
                etag: r.etag,
                modified_ms: r.modified_ms,
                size,
                metadata: r.metadata,
                stale: false,
            })),
            stale => {
                let body = match fs::read(path) {
                    Ok(body) => body,
                    Err(e) if absent(&e) => return Ok(None),
                    Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
                };
                let modified = file.modified().unwrap_or(SystemTime::now());
                Ok(Some(Described {
                    etag: etag_of(&body),
                    modified_ms: millis(modified),
                    size: body.len() as u64,
                    metadata: stale.map(|r| r.metadata).unwrap_or_default(),
                    stale: true,
                }))
            }
        }
    }

    /// The record set for the object: its file's attribute, else its sidecar.
    fn record(&self, key: &str, path: &Path) -> std::io::Result<Option<Record>> {
        let set = Record::read_attribute(path, key)?;
        if set.is_some() || !self.sidecars {
            return Ok(set);
        }
        match fs::read(self.sidecar_path(key)) {
            Ok(bytes) => Ok(Record::from_sidecar(&bytes)),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes `bytes` to `path` by way of a temporary file, so that a reader never sees half,
    /// and a crash of the machine leaves the old file or the new one: the data reaches the disk
    /// before the rename, and the rename before this returns.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = self.staged(path, bytes, "file", |_| Ok(()))?;
        self.move_into_place(&tmp, path)?;
        self.sync_folder_of(path)
    }

    /// Writes `bytes` to a new temporary file, has `finish` set what else it holds (its record),
    /// and syncs it to the disk; no lock is needed for that part. Its name is this process's id
    /// (for `remove_orphaned_temporaries`) and a random number, and it is created new and never
    /// through a link: a link planted at a name guessed ahead cannot carry the write outside
    /// the bucket.
    fn staged(&self, path: &Path, bytes: &[u8], what: &str, finish: impl Fn(&File) -> Result<()>) -> Result<PathBuf> {
        let context = format!("writing {}", path.display());
        let mut attempts = 0;
        loop {
            let tmp = self.root.join(RESERVED).join("tmp").join(format!(
                "{}-{:016x}-{what}",
                std::process::id(),
                crate::random::number()
            ));
            let created = fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp);
            match created {
                Ok(mut file) => {
                    let written = file.write_all(bytes).map_err(|e| io_error(&context, e));
                    let synced = written
                        .and_then(|()| finish(&file))
                        .and_then(|()| file.sync_all().map_err(|e| io_error(&context, e)));
                    if let Err(e) = synced {
                        let _ = fs::remove_file(&tmp);
                        return Err(e);
                    }
                    return Ok(tmp);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && attempts < 3 => attempts += 1,
                Err(e) => return Err(io_error(&context, e)),
            }
        }
    }

    /// Renames `tmp` to `path`, under the lock. Its folder is normally there already
    /// (`make_folders`); one removed since (emptied by a delete) is made again. Whether it was
    /// missing is not asked of the folder afterwards: another writer's `make_folders`, outside
    /// the lock, may have made it again in between, and the write was then refused.
    fn move_into_place(&self, tmp: &Path, path: &Path) -> Result<()> {
        let context = format!("writing {}", path.display());
        match fs::rename(tmp, path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                make_folders(path).map_err(|e| io_error(&context, e))?;
                fs::rename(tmp, path).map_err(|e| io_error(&context, e))
            }
            done => done.map_err(|e| io_error(&context, e)),
        }
    }

    /// Makes a rename into the file's folder durable.
    fn sync_folder_of(&self, path: &Path) -> Result<()> {
        let parent = path.parent().unwrap_or(&self.root);
        File::open(parent).and_then(|d| d.sync_all()).map_err(|e| io_error(&format!("writing {}", path.display()), e))
    }

    /// Removes the temporary files of writers that were killed mid-write (their process is
    /// gone); this process's own are left to it.
    fn remove_orphaned_temporaries(&self) {
        let Ok(entries) = fs::read_dir(self.root.join(RESERVED).join("tmp")) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<i32>().ok());
            // SAFETY: kill with signal 0 only asks whether the process exists.
            let gone = pid.is_some_and(|pid| {
                let status = unsafe { libc::kill(pid, 0) };
                status != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            });
            if gone {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Under the lock: checks that the key fits and the condition holds, then moves the staged
    /// body (with its record) into place, and its sidecar where records are kept so. Returns
    /// the etag now held.
    #[allow(clippy::too_many_arguments)]
    fn put_staged(
        &self,
        key: &str,
        path: &Path,
        body_tmp: &Path,
        sidecar_tmp: Option<&Path>,
        etag: &str,
        metadata: &Metadata,
        mode: &PutMode,
    ) -> Result<String> {
        let _lock = self.lock()?;
        // A file system holds "a" and "a/b" only one way round, unlike S3: a folder made for
        // the key (by `make_folders`) shows no object is where a folder is needed.
        let mut folder = String::new();
        let folders_made = path.parent().is_some_and(Path::is_dir);
        for segment in key.split('/').take(key.split('/').count() - 1).filter(|_| !folders_made) {
            folder.push_str(segment);
            if self.root.join(&folder).is_file() {
                return Err(Error::InvalidArgument(format!(
                    "object key {key:?} cannot be used in the local bucket {}: the object {folder:?} is where its folder would be",
                    self.root.display()
                )));
            }
            folder.push('/');
        }
        // An empty folder there was made for a write that did not happen (refused, or killed
        // before its rename): it goes. One that holds objects refuses the key.
        if path.is_dir() && fs::remove_dir(path).is_err() {
            return Err(Error::InvalidArgument(format!(
                "object key {key:?} cannot be used in the local bucket {}: objects already live under {key:?}/",
                self.root.display()
            )));
        }
        let current = self.described(key, path)?;
        if current.as_ref().is_some_and(|c| c.stale && c.etag == etag) {
            // This very body is in place but its record is not: a write killed before it was
            // set (or between a sidecar's two renames). It is set now, with this write's metadata.
            return self.record_in_place(key, path, etag, metadata);
        }
        let refused = match (mode, &current) {
            (PutMode::Create, Some(_)) => Some("the object exists (If-None-Match: *)".to_string()),
            (PutMode::Update(expected), Some(now)) if *expected != now.etag => {
                Some(format!("its etag is {}, not {expected}", now.etag))
            }
            (PutMode::Update(expected), None) => Some(format!("there is no object to match {expected}")),
            _ => None,
        };
        if let Some(detail) = refused {
            let size = fs::metadata(body_tmp).map_or(0, |m| m.len());
            self.accounting.record("PUT", 412, size, 0);
            return Err(Error::Remote { what: format!("PUT {}/{key}", self.describe()), status: 412, detail });
        }
        self.move_into_place(body_tmp, path)?;
        match sidecar_tmp {
            Some(tmp) => self.move_into_place(tmp, &self.sidecar_path(key))?,
            // A sidecar from before attributes would be read where the body lost its attribute.
            None if self.sidecars => remove_sidecar(&self.sidecar_path(key), &self.root)?,
            None => {}
        }
        Ok(etag.to_string())
    }

    /// Records the body now at `path` (whose etag is `etag`) with `metadata`.
    fn record_in_place(&self, key: &str, path: &Path, etag: &str, metadata: &Metadata) -> Result<String> {
        match self.keeping {
            Keeping::Attribute => Record::set_attribute_in_place(path, key, etag, metadata)?,
            Keeping::Sidecar => {
                self.write_atomically(&self.sidecar_path(key), &Record::sidecar_for(path, etag, metadata)?)?
            }
        }
        Ok(etag.to_string())
    }

    fn lock(&self) -> Result<WriteLock<'_>> {
        let mut held = self.writers.lock().unwrap_or_else(|p| p.into_inner());
        // A forked child opens its own: a lock shared with the parent's descriptor would
        // exclude neither.
        let pid = std::process::id();
        let file = match held.take().filter(|(opened_by, _)| *opened_by == pid) {
            Some((_, file)) => file,
            None => File::create(self.root.join(RESERVED).join("lock"))
                .map_err(|e| io_error("locking the local bucket", e))?,
        };
        let file = &held.insert((pid, file)).1;
        // SAFETY: flock on a descriptor the bucket owns (unlocked again by WriteLock's drop).
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_error("locking the local bucket", std::io::Error::last_os_error()));
        }
        Ok(WriteLock(held))
    }
}

impl Bucket for LocalBucket {
    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }

    fn get(&self, key: &str, validators: &Validators, _token: &Token) -> Result<Fetched> {
        let _waiting = self.accounting.begin();
        let path = self.path_of(key)?;
        let Some(sidecar) = self.described(key, &path)? else {
            self.accounting.record("GET", 404, 0, 0);
            return Ok(Fetched::Missing);
        };
        let unchanged = match (&validators.etag, &validators.last_modified) {
            (Some(etag), _) => *etag == sidecar.etag,
            // HTTP dates have whole seconds.
            (None, Some(since)) => {
                httpdate::parse_http_date(since).is_ok_and(|since| millis(since) / 1000 >= sidecar.modified_ms / 1000)
            }
            (None, None) => false,
        };
        if unchanged {
            self.accounting.record("GET", 304, 0, 0);
            return Ok(Fetched::NotModified);
        }
        let mut body = Vec::new();
        let read = File::open(&path).and_then(|f| f.take(self.max_object_bytes + 1).read_to_end(&mut body));
        match read {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                self.accounting.record("GET", 404, 0, 0);
                return Ok(Fetched::Missing);
            }
            Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
            Ok(_) => {}
        }
        self.accounting.record("GET", 200, 0, body.len() as u64);
        if body.len() as u64 > self.max_object_bytes {
            return Ok(Fetched::TooLarge { etag: Some(sidecar.etag), limit: self.max_object_bytes });
        }
        let last_modified = time::http_date(sidecar.modified());
        Ok(Fetched::Found(Object {
            body,
            etag: Some(sidecar.etag),
            last_modified: Some(last_modified),
            metadata: sidecar.metadata,
        }))
    }

    fn head(&self, key: &str, _token: &Token) -> Result<Option<(ObjectInfo, Metadata)>> {
        let _waiting = self.accounting.begin();
        let path = self.path_of(key)?;
        let found = self.described(key, &path)?;
        self.accounting.record("HEAD", if found.is_some() { 200 } else { 404 }, 0, 0);
        Ok(found.map(|s| {
            let last_modified = time::iso(s.modified());
            let info = ObjectInfo { key: key.to_string(), etag: s.etag, last_modified, size: s.size, metadata: None };
            (info, s.metadata)
        }))
    }

    fn put(&self, key: &str, body: &[u8], options: &PutOptions, _token: &Token) -> Result<Option<String>> {
        let _waiting = self.accounting.begin();
        let metadata = &options.metadata;
        let path = self.path_of(key)?;
        let metadata_bytes: usize = metadata.iter().map(|(name, value)| name.len() + value.len()).sum();
        if metadata_bytes > MAX_METADATA_BYTES {
            return Err(Error::InvalidArgument(format!(
                "the metadata of {key:?} is {metadata_bytes} bytes; S3 (and this local bucket) takes at most {MAX_METADATA_BYTES}"
            )));
        }
        // The body and its record reach the disk before the lock is taken, so that writers of
        // different objects wait for each other's renames only, not for each other's fsyncs.
        let (etag, staged) = std::thread::scope(|scope| {
            let hashing = Cell::new((body.len() >= ETAG_BESIDE_WRITE).then(|| scope.spawn(|| etag_of(body))));
            let etag = OnceCell::new();
            let etag_of_body = || {
                etag.get_or_init(|| hashing.take().and_then(|h| h.join().ok()).unwrap_or_else(|| etag_of(body))).clone()
            };
            let staged = match self.keeping {
                Keeping::Attribute => self
                    .staged(&path, body, "body", |file| Record::set_attribute(file, key, &etag_of_body(), metadata))
                    .map(|body_tmp| (body_tmp, None)),
                Keeping::Sidecar => self.staged(&path, body, "body", |_| Ok(())).and_then(|body_tmp| {
                    let sidecar_path = self.sidecar_path(key);
                    // A rename keeps the identity the sidecar records.
                    let record = Record::sidecar_for(&body_tmp, &etag_of_body(), metadata)?;
                    let sidecar_tmp = self.staged(&sidecar_path, &record, "record", |_| Ok(()));
                    let sidecar_tmp = sidecar_tmp.inspect_err(|_| drop(fs::remove_file(&body_tmp)))?;
                    Ok((body_tmp, Some((sidecar_path, sidecar_tmp))))
                }),
            };
            (etag_of_body(), staged)
        });
        let (body_tmp, sidecar) = staged?;
        // Folders are made before the lock is taken (writers wait for each other's renames
        // only); one that cannot be made is explained under the lock.
        let _ = make_folders(&path).and_then(|()| sidecar.as_ref().map_or(Ok(()), |(path, _)| make_folders(path)));
        let sidecar_tmp = sidecar.as_ref().map(|(_, tmp)| tmp.as_path());
        let outcome = self.put_staged(key, &path, &body_tmp, sidecar_tmp, &etag, metadata, &options.mode);
        for tmp in std::iter::once(body_tmp.as_path()).chain(sidecar_tmp) {
            let _ = fs::remove_file(tmp); // moved into place, or not wanted
        }
        let files = std::iter::once(path.as_path()).chain(sidecar.as_ref().map(|(path, _)| path.as_path()));
        if let (Err(_), Ok(_lock)) = (&outcome, self.lock()) {
            // The folders made for a write that did not happen go again.
            for file in files.clone() {
                prune_empty_parents(file, &self.root);
            }
        }
        let etag = outcome?;
        for file in files {
            self.sync_folder_of(file)?;
        }
        self.accounting.record("PUT", 200, body.len() as u64, 0);
        Ok(Some(etag))
    }

    fn delete(&self, key: &str, _token: &Token) -> Result<()> {
        let _waiting = self.accounting.begin();
        let path = self.path_of(key)?;
        let _lock = self.lock()?;
        // A sidecar first: a crash in between leaves a file that describes itself.
        if self.sidecars {
            remove_sidecar(&self.sidecar_path(key), &self.root)?;
        }
        match fs::remove_file(&path) {
            Ok(()) => prune_empty_parents(&path, &self.root),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&format!("removing {}", path.display()), e)),
        }
        self.accounting.record("DELETE", 204, 0, 0);
        Ok(())
    }

    /// Local upkeep, not a request: not counted in the accounting.
    fn expire_before(&self, prefix: &str, before: &str) -> Result<u64> {
        let folder = self.path_of(prefix.trim_end_matches('/'))?;
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if absent(&e) => return Ok(0),
            Err(e) => return Err(io_error(&format!("reading {}", folder.display()), e)),
        };
        let expired: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.as_str() < before && !name.starts_with('.'))
            .collect();
        let _lock = self.lock()?;
        for name in &expired {
            let key = format!("{prefix}{name}");
            // The records first: a crash in between leaves files that describe themselves.
            for path in [self.sidecar_path(&key), self.root.join(&key)] {
                match fs::remove_dir_all(&path) {
                    Err(e) if !absent(&e) => return Err(io_error(&format!("removing {}", path.display()), e)),
                    _ => {}
                }
            }
        }
        Ok(expired.len() as u64)
    }

    fn list_page(&self, request: &ListRequest, _token: &Token) -> Result<ListPage> {
        let _waiting = self.accounting.begin();
        let after = request.continuation.as_ref().or(request.start_after.as_ref());
        let max_keys = request.max_keys.map_or(DEFAULT_MAX_KEYS, |n| (n as usize).min(DEFAULT_MAX_KEYS));
        let delimiter = request.delimiter.as_deref().filter(|d| !d.is_empty());
        let mut page = ListPage::default();
        let mut bytes = 0;
        let mut taken = 0;
        let mut last = None;
        let mut failed = None;
        let mut visit = |key: String| {
            if let Some(group) = after.filter(|a| skipped_group(&key, a, delimiter)) {
                return Step::SkipPrefix(group.clone());
            }
            let group = delimiter.and_then(|d| {
                key[request.prefix.len()..].find(d).map(|i| key[..request.prefix.len() + i + d.len()].to_string())
            });
            if taken == max_keys {
                page.next = last.take();
                return Step::Stop;
            }
            taken += 1;
            if let Some(group) = group {
                last = Some(group.clone());
                page.common_prefixes.push(group.clone());
                return Step::SkipPrefix(group);
            }
            let path = self.root.join(&key);
            let sidecar = match self.described(&key, &path) {
                Ok(Some(sidecar)) => sidecar,
                Ok(None) => {
                    taken -= 1; // gone since the directory was read
                    return Step::Next;
                }
                Err(e) => {
                    failed = Some(e);
                    return Step::Stop;
                }
            };
            let size = sidecar.size;
            let last_modified = time::iso(sidecar.modified());
            bytes += key.len() + sidecar.etag.len() + last_modified.len();
            let metadata = Some(sidecar.metadata).filter(|m| !m.is_empty());
            last = Some(key.clone());
            page.objects.push(ObjectInfo { key, etag: sidecar.etag, last_modified, size, metadata });
            Step::Next
        };
        self.walker
            .walk(&self.root, RESERVED, &request.prefix, after.map(String::as_str), &mut visit)
            .map_err(|e| io_error(&format!("listing {}", self.root.display()), e))?;
        if let Some(e) = failed {
            return Err(e);
        }
        self.accounting.record("LIST", 200, 0, bytes as u64);
        Ok(page)
    }
}

/// After a common prefix `p/x/`, keys under it were rolled up into it and are not listed again.
fn skipped_group(key: &str, after: &str, delimiter: Option<&str>) -> bool {
    delimiter.is_some_and(|d| after.ends_with(d) && key.starts_with(after))
}

impl Described {
    fn modified(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.modified_ms)
    }
}

/// Removes the sidecar at `file`, if there is one, and the folders it leaves empty.
fn remove_sidecar(file: &Path, root: &Path) -> Result<()> {
    match fs::remove_file(file) {
        Ok(()) => {
            prune_empty_parents(file, root);
            Ok(())
        }
        Err(e) if absent(&e) => Ok(()),
        Err(e) => Err(io_error(&format!("removing {}", file.display()), e)),
    }
}

pub(super) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Holds the local bucket's write lock: the process's mutex and the `flock`.
struct WriteLock<'a>(std::sync::MutexGuard<'a, Option<(u32, File)>>);

impl Drop for WriteLock<'_> {
    fn drop(&mut self) {
        if let Some((_, file)) = self.0.as_ref() {
            // SAFETY: unlocks the flock taken on this descriptor by `LocalBucket::lock`.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

/// Makes the folders `file` goes in.
fn make_folders(file: &Path) -> std::io::Result<()> {
    file.parent().map_or(Ok(()), fs::create_dir_all)
}

fn prune_empty_parents(file: &Path, root: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || d.ends_with(Path::new(RESERVED).join("meta")) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn absent(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

/// A key the file system cannot hold (a file where a folder is needed, a name too long) is
/// refused for what it is; anything else is the directory being out of reach for now.
fn io_error(context: &str, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::NotADirectory | ErrorKind::IsADirectory | ErrorKind::InvalidFilename => {
            Error::InvalidArgument(format!("{context}: the local bucket cannot hold this key ({e})"))
        }
        _ => Error::Unreachable { what: context.to_string(), reason: e.to_string() },
    }
}

#[cfg(test)]
mod tests;
