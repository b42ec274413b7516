//! A directory that behaves as a bucket (`file://<dir>`), for the embedded default: objects are
//! files under `<dir>/<bucket>/` at their key's path, and `.objstore/meta/<key>` beside them
//! holds the etag (MD5 of the body, quoted, as S3 gives for a single-part upload), the time of
//! the write and the custom metadata. Listings are in UTF-8 byte order with S3's prefix,
//! delimiter, max-keys and start-after/marker rules; conditional reads and writes answer as S3
//! does (304, 412). Keys that would leave the directory are refused.

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use super::accounting::Accounting;
use super::bucket::{Bucket, Fetched, ListPage, ListRequest, Metadata, Object, ObjectInfo, Precondition, Validators};
use super::time;
use super::token::Token;
use crate::error::{Error, Result};

/// The folder inside the bucket directory that holds what is not an object.
const RESERVED: &str = ".objstore";
const DEFAULT_MAX_KEYS: usize = 1000;

pub struct LocalBucket {
    root: PathBuf,
    max_object_bytes: u64,
    accounting: Arc<Accounting>,
    /// Serialises writers in this process; `flock` on `.objstore/lock` serialises processes.
    writers: Mutex<()>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sidecar {
    etag: String,
    /// Milliseconds since the Unix epoch.
    modified_ms: u64,
    /// The body's length when this was written, to notice a body changed behind our back.
    #[serde(default)]
    size: u64,
    #[serde(default)]
    metadata: Metadata,
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
        for dir in [root.join(RESERVED).join("meta"), root.join(RESERVED).join("tmp")] {
            fs::create_dir_all(&dir)
                .map_err(|e| io_error(&format!("creating the local bucket {}", root.display()), e))?;
        }
        Ok(LocalBucket { root, max_object_bytes, accounting, writers: Mutex::new(()) })
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
        Ok(self.root.join(key))
    }

    fn sidecar_path(&self, key: &str) -> PathBuf {
        self.root.join(RESERVED).join("meta").join(key)
    }

    /// The object's description, or `None` when there is no object. The file is the truth: a
    /// sidecar without its file describes nothing, and one whose size disagrees with the file
    /// (edited by hand, or a crash between the two renames) is recomputed from it.
    fn sidecar(&self, key: &str, path: &Path) -> Result<Option<Sidecar>> {
        let file = match fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Ok(None),
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
        };
        let recorded: Option<Sidecar> = match fs::read(self.sidecar_path(key)) {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(e) if absent(&e) => None,
            Err(e) => return Err(io_error(&format!("reading the local bucket's record of {key:?}"), e)),
        };
        match recorded {
            Some(sidecar) if sidecar.size == file.len() => Ok(Some(sidecar)),
            stale => {
                let body = match fs::read(path) {
                    Ok(body) => body,
                    Err(e) if absent(&e) => return Ok(None),
                    Err(e) => return Err(io_error(&format!("reading {}", path.display()), e)),
                };
                let modified = file.modified().unwrap_or(SystemTime::now());
                Ok(Some(Sidecar {
                    etag: etag_of(&body),
                    modified_ms: millis(modified),
                    size: body.len() as u64,
                    metadata: stale.map(|s| s.metadata).unwrap_or_default(),
                }))
            }
        }
    }

    /// Writes `bytes` to `path` by way of a temporary file, so that a reader never sees half.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = self.root.join(RESERVED).join("tmp").join(format!(
            "{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let context = format!("writing {}", path.display());
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| io_error(&context, e))?;
        }
        File::create(&tmp).and_then(|mut f| f.write_all(bytes)).map_err(|e| io_error(&context, e))?;
        fs::rename(&tmp, path).map_err(|e| io_error(&context, e))
    }

    /// Every object key, in byte order.
    fn all_keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut pending = vec![(self.root.clone(), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            let entries = fs::read_dir(&dir).map_err(|e| io_error(&format!("listing {}", dir.display()), e))?;
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&format!("listing {}", dir.display()), e))?;
                let Ok(name) = entry.file_name().into_string() else { continue };
                if prefix.is_empty() && name == RESERVED {
                    continue;
                }
                let file_type = entry.file_type().map_err(|e| io_error("listing", e))?;
                if file_type.is_dir() {
                    pending.push((entry.path(), format!("{prefix}{name}/")));
                } else if file_type.is_file() {
                    keys.push(format!("{prefix}{name}"));
                }
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }

    fn lock(&self) -> Result<(std::sync::MutexGuard<'_, ()>, File)> {
        let guard = self.writers.lock().unwrap_or_else(|p| p.into_inner());
        let file =
            File::create(self.root.join(RESERVED).join("lock")).map_err(|e| io_error("locking the local bucket", e))?;
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_error("locking the local bucket", std::io::Error::last_os_error()));
        }
        Ok((guard, file))
    }
}

impl Bucket for LocalBucket {
    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }

    fn get(&self, key: &str, validators: &Validators, _token: &Token) -> Result<Fetched> {
        let path = self.path_of(key)?;
        let Some(sidecar) = self.sidecar(key, &path)? else {
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
            return Err(Error::RemoteData {
                what: format!("GET {}/{key}", self.describe()),
                reason: format!(
                    "the body is larger than the {}-byte limit (Options.maxObjectBytes)",
                    self.max_object_bytes
                ),
            });
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
        let path = self.path_of(key)?;
        let found = self.sidecar(key, &path)?;
        self.accounting.record("HEAD", if found.is_some() { 200 } else { 404 }, 0, 0);
        Ok(found.map(|s| {
            let last_modified = time::iso(s.modified());
            let info = ObjectInfo { key: key.to_string(), etag: s.etag, last_modified, size: s.size, metadata: None };
            (info, s.metadata)
        }))
    }

    fn put(
        &self,
        key: &str,
        body: &[u8],
        metadata: &Metadata,
        condition: &Precondition,
        _create: bool,
        _token: &Token,
    ) -> Result<Option<String>> {
        let path = self.path_of(key)?;
        let _lock = self.lock()?;
        // A file system holds "a" and "a/b" only one way round, unlike S3.
        let mut folder = String::new();
        for segment in key.split('/').take(key.split('/').count() - 1) {
            folder.push_str(segment);
            if self.root.join(&folder).is_file() {
                return Err(Error::InvalidArgument(format!(
                    "object key {key:?} cannot be used in the local bucket {}: the object {folder:?} is where its folder would be",
                    self.root.display()
                )));
            }
            folder.push('/');
        }
        if path.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "object key {key:?} cannot be used in the local bucket {}: objects already live under {key:?}/",
                self.root.display()
            )));
        }
        let current = self.sidecar(key, &path)?;
        let refused = match (condition, &current) {
            (Precondition::Absent, Some(_)) => Some("the object exists (If-None-Match: *)".to_string()),
            (Precondition::Matches(etag), Some(now)) if *etag != now.etag => {
                Some(format!("its etag is {}, not {etag}", now.etag))
            }
            (Precondition::Matches(etag), None) => Some(format!("there is no object to match {etag}")),
            _ => None,
        };
        if let Some(detail) = refused {
            self.accounting.record("PUT", 412, body.len() as u64, 0);
            return Err(Error::Remote { what: format!("PUT {}/{key}", self.describe()), status: 412, detail });
        }
        let sidecar = Sidecar {
            etag: etag_of(body),
            modified_ms: millis(SystemTime::now()),
            size: body.len() as u64,
            metadata: metadata.clone(),
        };
        self.write_atomically(&path, body)?;
        self.write_atomically(&self.sidecar_path(key), &serde_json::to_vec(&sidecar).expect("a sidecar serialises"))?;
        self.accounting.record("PUT", 200, body.len() as u64, 0);
        Ok(Some(sidecar.etag))
    }

    fn delete(&self, key: &str, _token: &Token) -> Result<()> {
        let path = self.path_of(key)?;
        let _lock = self.lock()?;
        // The sidecar first: a crash in between leaves a file that describes itself.
        for file in [&self.sidecar_path(key), &path] {
            match fs::remove_file(file) {
                Ok(()) => prune_empty_parents(file, &self.root),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_error(&format!("removing {}", file.display()), e)),
            }
        }
        self.accounting.record("DELETE", 204, 0, 0);
        Ok(())
    }

    fn list_page(&self, request: &ListRequest, _token: &Token) -> Result<ListPage> {
        let after = request.continuation.as_ref().or(request.start_after.as_ref());
        let max_keys = request.max_keys.map_or(DEFAULT_MAX_KEYS, |n| (n as usize).min(DEFAULT_MAX_KEYS));
        let delimiter = request.delimiter.as_deref().filter(|d| !d.is_empty());
        let mut page = ListPage::default();
        let mut bytes = 0;
        let mut taken = 0;
        let mut last = None;
        for key in self.all_keys()? {
            if !key.starts_with(&request.prefix)
                || after.is_some_and(|a| key <= *a || skipped_group(&key, a, delimiter))
            {
                continue;
            }
            let group = delimiter.and_then(|d| {
                key[request.prefix.len()..].find(d).map(|i| key[..request.prefix.len() + i + d.len()].to_string())
            });
            if group.is_some() && page.common_prefixes.last() == group.as_ref() {
                continue;
            }
            if taken == max_keys {
                page.next = last;
                break;
            }
            taken += 1;
            if let Some(group) = group {
                last = Some(group.clone());
                page.common_prefixes.push(group);
                continue;
            }
            let path = self.root.join(&key);
            let Some(sidecar) = self.sidecar(&key, &path)? else { continue };
            let size = sidecar.size;
            let last_modified = time::iso(sidecar.modified());
            bytes += key.len() + sidecar.etag.len() + last_modified.len();
            let metadata = Some(sidecar.metadata).filter(|m| !m.is_empty());
            last = Some(key.clone());
            page.objects.push(ObjectInfo { key, etag: sidecar.etag, last_modified, size, metadata });
        }
        self.accounting.record("LIST", 200, 0, bytes as u64);
        Ok(page)
    }
}

/// After a common prefix `p/x/`, keys under it were rolled up into it and are not listed again.
fn skipped_group(key: &str, after: &str, delimiter: Option<&str>) -> bool {
    delimiter.is_some_and(|d| after.ends_with(d) && key.starts_with(after))
}

impl Sidecar {
    fn modified(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.modified_ms)
    }
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn etag_of(body: &[u8]) -> String {
    let digest = Md5::digest(body);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
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
