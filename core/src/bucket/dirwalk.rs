//! The files of a directory tree as object keys in UTF-8 byte order, from a starting point:
//! only the directories on the way are read, each in name order (a folder `a` sorts as `a/`),
//! so a page of a listing costs its own keys, not the whole tree. The sorted entries of a
//! directory are kept while its modification time stays put; only directories untouched for a
//! second are kept, since a file system's clock is coarser than the changes it records.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What the visitor wants next.
pub enum Step {
    Next,
    /// Leave out every further key that starts with this (a group rolled up by a delimiter).
    SkipPrefix(String),
    Stop,
}

/// A directory's sorted entries, with the modification time they were read at.
type Listed = (SystemTime, Arc<Vec<Entry>>);

#[derive(Default)]
pub struct Walker {
    cache: Mutex<HashMap<PathBuf, Listed>>,
}

struct Entry {
    /// The name, with `/` after it for a folder: the order of the keys beneath.
    sort_key: String,
    dir: bool,
}

/// A directory is trusted unchanged this long after its last change.
const SETTLED: Duration = Duration::from_secs(1);
/// Directories whose entries are kept, at most (past it the cache starts over).
const CACHED_DIRS: usize = 100_000;

impl Walker {
    /// Visits the keys under `root` that start with `prefix` and sort after `after`, in byte
    /// order, leaving out names starting with `skip` at the top level (the caller's own folder).
    pub fn walk(
        &self,
        root: &Path,
        skip: &str,
        prefix: &str,
        after: Option<&str>,
        visit: &mut dyn FnMut(String) -> Step,
    ) -> io::Result<()> {
        let mut state = State { prefix, after, skip_prefix: None, visit };
        self.walk_dir(root, String::new(), skip, &mut state).map(|_| ())
    }

    /// Walks one directory whose keys start with `base`; `false` when the visitor stopped.
    fn walk_dir(&self, dir: &Path, base: String, reserved: &str, state: &mut State) -> io::Result<bool> {
        let entries = match self.entries(dir) {
            Ok(entries) => entries,
            // A folder removed since its parent was read holds nothing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(e),
        };
        let start = entries.partition_point(|e| state.entirely_before(&format!("{base}{}", e.sort_key), e.dir));
        for entry in &entries[start..] {
            let key = format!("{base}{}", entry.sort_key);
            if !state.reaches(&key, entry.dir) {
                break;
            }
            if base.is_empty() && entry.sort_key.trim_end_matches('/') == reserved {
                continue;
            }
            if state.skip_prefix.as_deref().is_some_and(|s| key.starts_with(s)) {
                continue;
            }
            if entry.dir {
                let name = entry.sort_key.trim_end_matches('/');
                if !self.walk_dir(&dir.join(name), key, reserved, state)? {
                    return Ok(false);
                }
                continue;
            }
            if !key.starts_with(state.prefix) || state.after.is_some_and(|a| key.as_str() <= a) {
                continue;
            }
            match (state.visit)(key) {
                Step::Next => {}
                Step::SkipPrefix(group) => state.skip_prefix = Some(group),
                Step::Stop => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The directory's entries, sorted by key order.
    fn entries(&self, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        let modified = fs::metadata(dir)?.modified()?;
        if let Some((at, entries)) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(dir) {
            if *at == modified {
                return Ok(entries.clone());
            }
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                entries.push(Entry { sort_key: format!("{name}/"), dir: true });
            } else if file_type.is_file() {
                entries.push(Entry { sort_key: name, dir: false });
            }
        }
        entries.sort_unstable_by(|a, b| a.sort_key.cmp(&b.sort_key));
        let entries = Arc::new(entries);
        if SystemTime::now().duration_since(modified).is_ok_and(|age| age > SETTLED) {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() >= CACHED_DIRS {
                cache.clear();
            }
            cache.insert(dir.to_path_buf(), (modified, entries.clone()));
        }
        Ok(entries)
    }
}

struct State<'a> {
    prefix: &'a str,
    after: Option<&'a str>,
    skip_prefix: Option<String>,
    visit: &'a mut dyn FnMut(String) -> Step,
}

impl State<'_> {
    /// Whether every key of this entry (a file's key, or a folder's `key/` and below) sorts
    /// before what is asked: before the prefix, or at or before `after`.
    fn entirely_before(&self, key: &str, dir: bool) -> bool {
        let before = |bound: &str, inclusive: bool| {
            if dir {
                key < bound && !bound.starts_with(key)
            } else {
                key < bound || (inclusive && key == bound)
            }
        };
        before(self.prefix, false) || self.after.is_some_and(|a| before(a, true))
    }

    /// Whether this entry may still hold keys with the prefix (entries come in key order, so
    /// the first that cannot ends the directory).
    fn reaches(&self, key: &str, dir: bool) -> bool {
        key.starts_with(self.prefix) || (dir && self.prefix.starts_with(key)) || key < self.prefix
    }
}
