//! The operations of a transaction: writes keep every index in step with the record, and all
//! checks (key, constraints) run before the first byte is written, so a failed operation
//! leaves nothing behind.

use serde_json::Value;

use crate::catalog::{key_generator_slot, StoreInfo};
use crate::database::{Database, Mode, Tx};
use crate::error::{Error, Result};
use crate::events::{Event, EventKind};
use crate::hook::{Write, WriteKind};
use crate::key::Key;
use crate::mechanism::{Mechanism, TableId, META_TABLE};
use crate::range::{just_above, ByteRange, KeyRange};
use crate::record::Record;
use crate::records::{check_unique, decode_record, index_entries, json_array, not_utf8, read_batch, record_text};
use crate::scan::ScanOptions;

/// The largest key a generator hands out, as in IndexedDB (2^53).
const MAX_GENERATED_KEY: f64 = 9_007_199_254_740_992.0;

/// One operation, one transaction: each runs in a transaction of its own.
impl Database {
    /// Writes a record, replacing any under the same key; returns its key.
    pub fn put(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        self.run(&[store], Mode::ReadWrite, |tx| tx.put(store, record, key))
    }

    /// Writes a new record; an existing key or a unique-index clash is a constraint error.
    pub fn add(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        self.run(&[store], Mode::ReadWrite, |tx| tx.add(store, record, key))
    }

    /// The record under `key` as held locally (for a synced store, the cached copy; the sync
    /// agent fetches and revalidates).
    pub fn get(&mut self, store: &str, key: &Key) -> Result<Option<Value>> {
        self.run_single_read(store, |tx| tx.get(store, key))
    }

    /// Removes the records in `range` (use [`KeyRange::Only`] for one key); returns how many.
    pub fn remove(&mut self, store: &str, range: &KeyRange) -> Result<u64> {
        self.run(&[store], Mode::ReadWrite, |tx| tx.remove(store, range))
    }

    pub fn clear(&mut self, store: &str) -> Result<()> {
        self.run(&[store], Mode::ReadWrite, |tx| tx.clear(store))
    }

    pub fn count(&mut self, store: &str, scan: &ScanOptions) -> Result<u64> {
        self.run(&[store], Mode::ReadOnly, |tx| tx.count(store, scan))
    }

    pub fn keys(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Key>> {
        self.run(&[store], Mode::ReadOnly, |tx| tx.keys(store, scan))
    }

    pub fn values(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Value>> {
        self.run(&[store], Mode::ReadOnly, |tx| tx.values(store, scan))
    }

    /// The records under `keys`, `None` where there is none locally.
    pub fn values_of(&mut self, store: &str, keys: &[Key]) -> Result<Vec<Option<Value>>> {
        self.run(&[store], Mode::ReadOnly, |tx| tx.values_of(store, keys))
    }
}

impl Tx<'_> {
    /// Writes a record, replacing any under the same key; returns its key.
    pub fn put(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        write(self.db, store, record.into(), key, false)
    }

    /// [`Tx::put`] over `previous`, the record under its key as this transaction just read it
    /// (`None`: there is none): the write does not read it again.
    pub(crate) fn put_over(
        &mut self,
        store: &str,
        record: impl Into<Record>,
        key: Option<Key>,
        previous: Option<Value>,
    ) -> Result<Key> {
        write_over(self.db, store, record.into(), key, false, Some(previous))
    }

    /// Writes a new record; an existing key or a unique-index clash is a constraint error.
    pub fn add(&mut self, store: &str, record: impl Into<Record>, key: Option<Key>) -> Result<Key> {
        write(self.db, store, record.into(), key, true)
    }

    /// Writes a batch of records in order (`create`: each must be new), with their keys when
    /// given; returns their keys. A failure names the batch's record: its position and key.
    pub fn write_many(
        &mut self,
        store: &str,
        records: impl IntoIterator<Item = impl Into<Record>>,
        keys: Option<Vec<Key>>,
        create: bool,
    ) -> Result<Vec<Key>> {
        let records: Vec<Record> = records.into_iter().map(Into::into).collect();
        let count = records.len();
        if let Some(keys) = keys.as_ref().filter(|k| k.len() != count) {
            return Err(Error::InvalidArgument(format!("a batch of {count} records was given {} keys", keys.len())));
        }
        let key_path = self.db.schema().store(store).and_then(|s| s.key_path.clone());
        let mut keys = keys.map(Vec::into_iter);
        let mut written = Vec::with_capacity(count);
        for (position, mut record) in records.into_iter().enumerate() {
            let given = keys.as_mut().and_then(Iterator::next);
            // The tree read here for the key path is the one the write then uses.
            let named = given.clone().or_else(|| {
                let tree = key_path.as_ref().and_then(|_| record.tree().ok())?;
                key_path.as_ref()?.extract(tree).ok().flatten()
            });
            match write(self.db, store, record, given, create) {
                Ok(key) => written.push(key),
                Err(source) => {
                    let key = named.map(|k| match k.to_json().to_string() {
                        long if long.chars().count() > 60 => crate::error::clip(&long),
                        short => short,
                    });
                    return Err(Error::InBatch { position, count, key, source: Box::new(source) });
                }
            }
        }
        Ok(written)
    }

    pub fn get(&mut self, store: &str, key: &Key) -> Result<Option<Value>> {
        let info = self.db.store_for(store, false)?;
        let pk = key.encode().map_err(|e| e.in_store(store, None))?;
        match self.db.mech.get(info.data, &pk)? {
            Some(bytes) => decode_record(store, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The record under `key` as the JSON text it is stored as: no decode and re-encode, for
    /// a caller that hands text on (the C API).
    pub fn get_text(&mut self, store: &str, key: &Key) -> Result<Option<String>> {
        let info = self.db.store_for(store, false)?;
        let pk = key.encode().map_err(|e| e.in_store(store, None))?;
        match self.db.mech.get(info.data, &pk)? {
            Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| not_utf8(store, e)),
            None => Ok(None),
        }
    }

    /// Removes the records in `range`; returns how many went.
    pub fn remove(&mut self, store: &str, range: &KeyRange) -> Result<u64> {
        let range = range.to_bytes().map_err(|e| e.in_store(store, None))?;
        self.remove_bytes(store, &range)
    }

    fn remove_bytes(&mut self, store: &str, range: &ByteRange) -> Result<u64> {
        let db = &mut *self.db;
        let info = db.store_for(store, true)?;
        let announce = db.wants_event(EventKind::Deleted, &info);
        let need_values = announce || !info.indexes.is_empty();
        let mut removed = 0;
        loop {
            let batch = read_batch(&mut *db.mech, &info, range, need_values)?;
            if batch.is_empty() {
                return Ok(removed);
            }
            for (pk, bytes) in batch {
                let old = if need_values { Some(decode_record(store, &bytes)?) } else { None };
                if let Some(old) = &old {
                    for index in &info.indexes {
                        for ik in index_entries(index, old) {
                            db.mech.index_delete(index.table, &ik, &pk)?;
                        }
                    }
                }
                let key = Key::decode(&pk)?;
                db.mirror(&Write { store, key: &key, kind: WriteKind::Delete, value: None, replaced: true })?;
                db.mech.delete(info.data, &pk)?;
                removed += 1;
                if announce {
                    db.emit(Event::change(EventKind::Deleted, store, Some(key), old));
                }
            }
        }
    }

    /// Removes every record; announced as one `deleted` event without a key. In a synced store
    /// each record is removed (and its object deleted) as by `remove`.
    pub fn clear(&mut self, store: &str) -> Result<()> {
        if self.db.mirrors(store) {
            return self.remove_bytes(store, &ByteRange::all()).map(|_| ());
        }
        let db = &mut *self.db;
        let info = db.store_for(store, true)?;
        db.mech.clear_table(info.data)?;
        for index in &info.indexes {
            db.mech.clear_table(index.table)?;
        }
        if db.wants_event(EventKind::Deleted, &info) {
            db.emit(Event::change(EventKind::Deleted, store, None, None));
        }
        Ok(())
    }

    /// How many records (or, with `unique`, distinct index keys) are in range.
    pub fn count(&mut self, store: &str, scan: &ScanOptions) -> Result<u64> {
        let db = &mut *self.db;
        let info = db.store_for(store, false)?;
        let range = scan.byte_range(store)?;
        let Some(name) = &scan.index else {
            return db.mech.count(info.data, &range);
        };
        let index = info.index(name)?;
        if !scan.unique {
            return db.mech.index_count(index.table, &range);
        }
        let mut firsts = Vec::new();
        unique_forward(&mut *db.mech, index.table, range, &mut Window { skip: 0, left: usize::MAX }, &mut firsts)?;
        Ok(firsts.len() as u64)
    }

    /// Primary keys of the selected records, in store or index order.
    pub fn keys(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Key>> {
        let info = self.db.store_for(store, false)?;
        let mut keys = Vec::new();
        select(self.db, &info, scan, false, &mut |pk, _| {
            keys.push(Key::decode(pk)?);
            Ok(())
        })?;
        Ok(keys)
    }

    /// The selected records, in store or index order.
    pub fn values(&mut self, store: &str, scan: &ScanOptions) -> Result<Vec<Value>> {
        let info = self.db.store_for(store, false)?;
        let mut values = Vec::new();
        select(self.db, &info, scan, true, &mut |_, v| {
            values.push(decode_record(store, v)?);
            Ok(())
        })?;
        Ok(values)
    }

    /// The records under `keys`, in that order; `None` where there is none.
    pub fn values_of(&mut self, store: &str, keys: &[Key]) -> Result<Vec<Option<Value>>> {
        keys.iter().map(|key| self.get(store, key)).collect()
    }

    /// As `values`, one JSON array of the records' stored texts: no decode and re-encode.
    pub fn values_text(&mut self, store: &str, scan: &ScanOptions) -> Result<String> {
        let info = self.db.store_for(store, false)?;
        let mut out = String::from("[");
        select(self.db, &info, scan, true, &mut |_, v| {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(record_text(store, v)?);
            Ok(())
        })?;
        out.push(']');
        Ok(out)
    }

    /// As `values_of`, one JSON array of stored texts, `null` where there is no record.
    pub fn values_of_text(&mut self, store: &str, keys: &[Key]) -> Result<String> {
        let info = self.db.store_for(store, false)?;
        let mut found = Vec::with_capacity(keys.len());
        for key in keys {
            let pk = key.encode().map_err(|e| e.in_store(store, None))?;
            found.push(self.db.mech.get(info.data, &pk)?);
        }
        json_array(store, found.iter().map(Option::as_deref))
    }
}

pub(crate) fn write(
    db: &mut Database,
    store: &str,
    record: Record,
    key: Option<Key>,
    no_overwrite: bool,
) -> Result<Key> {
    write_over(db, store, record, key, no_overwrite, None)
}

/// [`write`], over `known`: the record under the key as the caller read it in this transaction,
/// when it did (`Some(None)`: none), so that it is not read twice.
fn write_over(
    db: &mut Database,
    store: &str,
    mut record: Record,
    key: Option<Key>,
    no_overwrite: bool,
    known: Option<Option<Value>>,
) -> Result<Key> {
    let info = db.store_for(store, true)?;
    let schema = &info.schema;
    let key = match (&schema.key_path, key) {
        (Some(path), Some(given)) => {
            return Err(Error::KeyConflict {
                store: store.into(),
                what: "an inline key path",
                reason: format!(
                    "the key comes from the record's {path} field, so key {given} must not be passed as well"
                ),
            })
        }
        (Some(path), None) => {
            let found = path.extract(record.tree()?).map_err(|e| e.in_store(store, None))?;
            match found {
                Some(key) => key,
                None if schema.auto_increment => {
                    let key = next_generated_key(db, &info)?;
                    path.inject(record.tree_mut()?, &key).map_err(|e| e.in_store(store, None))?;
                    key
                }
                None => return Err(Error::MissingKeyPath { store: store.into(), key_path: path.to_string() }),
            }
        }
        (None, Some(key)) => key,
        (None, None) if schema.auto_increment => next_generated_key(db, &info)?,
        (None, None) => {
            return Err(Error::KeyConflict {
                store: store.into(),
                what: "no key path",
                reason: "pass a key with the record, or give the store a keyPath or autoIncrement".into(),
            })
        }
    };
    let pk = key.encode().map_err(|e| e.in_store(store, None))?;

    let (replaced, old_record) = match known {
        Some(previous) => (previous.is_some(), previous.filter(|_| !info.indexes.is_empty())),
        None => match db.mech.get(info.data, &pk)? {
            Some(bytes) if !info.indexes.is_empty() => (true, Some(decode_record(store, &bytes)?)),
            old => (old.is_some(), None),
        },
    };
    if no_overwrite && replaced {
        return Err(Error::Constraint {
            store: store.into(),
            detail: format!("a record with key {key} already exists"),
        });
    }
    let mut new_entries: Vec<Vec<Vec<u8>>> = Vec::with_capacity(info.indexes.len());
    for index in &info.indexes {
        new_entries.push(index_entries(index, record.tree()?));
    }
    for (index, entries) in info.indexes.iter().zip(&new_entries) {
        if index.unique {
            for ik in entries {
                check_unique(&mut *db.mech, &info, index, ik, &pk)?;
            }
        }
    }

    // Last of the checks: a write refused above must not reach the bucket.
    let kind = if no_overwrite { WriteKind::Add } else { WriteKind::Put };
    let text = record.text();
    db.mirror(&Write { store, key: &key, kind, value: Some(text), replaced })?;

    for (index, entries) in info.indexes.iter().zip(&new_entries) {
        let old_entries = old_record.as_ref().map(|r| index_entries(index, r)).unwrap_or_default();
        for ik in old_entries.iter().filter(|ik| !entries.contains(ik)) {
            db.mech.index_delete(index.table, ik, &pk)?;
        }
        for ik in entries.iter().filter(|ik| !old_entries.contains(ik)) {
            db.mech.index_insert(index.table, ik, &pk)?;
        }
    }
    db.mech.put(info.data, &pk, text.get().as_bytes())?;
    if schema.auto_increment {
        advance_generator(db, &info, &key)?;
    }

    let kind = if replaced { EventKind::Updated } else { EventKind::Created };
    if db.wants_event(kind, &info) {
        db.emit(Event::change(kind, store, Some(key.clone()), Some(record.into_tree()?)));
    }
    Ok(key)
}

/// A visitor of selected (primary key, stored record) pairs.
type SelectVisit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<()>;

/// Hands the selected (primary key, stored record) pairs to `visit` in store or index order
/// (the record empty unless `want_values`), without collecting them.
fn select(
    db: &mut Database,
    info: &StoreInfo,
    scan: &ScanOptions,
    want_values: bool,
    visit: SelectVisit,
) -> Result<()> {
    let range = scan.byte_range(&info.schema.name)?;
    let mut window = Window { skip: scan.offset, left: scan.limit.unwrap_or(usize::MAX) };
    let Some(name) = &scan.index else {
        return db.mech.scan(info.data, &range, scan.reverse, want_values, &mut |pk, v| window.offer(|| visit(pk, v)));
    };
    let index = info.index(name)?;
    if !scan.unique {
        return match want_values {
            true => db.mech.index_scan_values(index.table, info.data, &range, None, scan.reverse, &mut |_, pk, v| {
                window.offer(|| visit(pk, v))
            }),
            false => db
                .mech
                .index_scan(index.table, &range, None, scan.reverse, &mut |_, pk| window.offer(|| visit(pk, &[]))),
        };
    }
    // Unique: the first primary key of each run of equal index keys, then (if wanted) its record.
    let mut firsts = Vec::new();
    if scan.reverse {
        let mut groups = UniqueGroups { reverse: true, current: None, pending: None };
        db.mech.index_scan(index.table, &range, None, true, &mut |ik, pk| match groups.push(ik, pk) {
            Some(first) => window.offer(|| {
                firsts.push(first);
                Ok(())
            }),
            None => Ok(true),
        })?;
        if let Some(first) = groups.pending.take() {
            window.offer(|| {
                firsts.push(first);
                Ok(())
            })?;
        }
    } else {
        unique_forward(&mut *db.mech, index.table, range, &mut window, &mut firsts)?;
    }
    for pk in firsts {
        if !want_values {
            visit(&pk, &[])?;
            continue;
        }
        let record = db.mech.get(info.data, &pk)?.ok_or_else(|| {
            Error::Internal(format!(
                "index {:?} of store {:?} points at a missing record",
                index.name, info.schema.name
            ))
        })?;
        visit(&pk, &record)?;
    }
    Ok(())
}

/// Entries of one index key stepped over before a unique scan seeks past the key instead.
const STEPS_BEFORE_SEEK: usize = 8;

/// A forward unique scan: the first primary key of each run of equal index keys, into
/// `firsts`. Short runs are stepped through; a long one (many records sharing a key, as pairs
/// of a results bucket share their runs') is left with a seek just above its key, so the scan
/// costs the distinct keys rather than the entries.
fn unique_forward(
    mech: &mut dyn Mechanism,
    table: TableId,
    mut range: ByteRange,
    window: &mut Window,
    firsts: &mut Vec<Vec<u8>>,
) -> Result<()> {
    loop {
        let (mut current, mut steps, mut seek_past): (Option<Vec<u8>>, usize, Option<Vec<u8>>) = (None, 0, None);
        mech.index_scan(table, &range, None, false, &mut |ik, pk| {
            if current.as_deref() == Some(ik) {
                steps += 1;
                if steps < STEPS_BEFORE_SEEK {
                    return Ok(true);
                }
                seek_past = current.take();
                return Ok(false);
            }
            current = Some(ik.to_vec());
            steps = 1;
            window.offer(|| {
                firsts.push(pk.to_vec());
                Ok(())
            })
        })?;
        match seek_past {
            Some(ik) => range.low = just_above(&ik),
            None => return Ok(()),
        }
    }
}

/// Offset and limit over a stream of rows.
struct Window {
    skip: usize,
    left: usize,
}

impl Window {
    /// Takes or skips one row; says whether to go on.
    fn offer(&mut self, take: impl FnOnce() -> Result<()>) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(true);
        }
        take()?;
        self.left -= 1;
        Ok(self.left > 0)
    }
}

/// Picks the lowest primary key of each run of equal index keys. Forwards it is the first of
/// the run; backwards the last, so a run is only known complete when the next one starts.
struct UniqueGroups {
    reverse: bool,
    current: Option<Vec<u8>>,
    pending: Option<Vec<u8>>,
}

impl UniqueGroups {
    fn push(&mut self, ik: &[u8], pk: &[u8]) -> Option<Vec<u8>> {
        let same = self.current.as_deref() == Some(ik);
        if !same {
            self.current = Some(ik.to_vec());
        }
        match (self.reverse, same) {
            (false, true) => None,
            (false, false) => Some(pk.to_vec()),
            (true, true) => {
                self.pending = Some(pk.to_vec());
                None
            }
            (true, false) => self.pending.replace(pk.to_vec()),
        }
    }
}

fn generator_value(db: &mut Database, info: &StoreInfo) -> Result<f64> {
    if let Some(next) = db.key_generators.get(&info.data) {
        return Ok(*next);
    }
    let next = match db.mech.get(META_TABLE, &key_generator_slot(info.data))? {
        // Written by `advance_generator` as Rust prints a double ("12", or "inf" when exhausted).
        Some(bytes) => std::str::from_utf8(&bytes).ok().and_then(|text| text.parse::<f64>().ok()).ok_or_else(|| {
            Error::Internal(format!("key generator unreadable: {:?}", String::from_utf8_lossy(&bytes)))
        })?,
        None => 1.0,
    };
    db.key_generators.insert(info.data, next);
    Ok(next)
}

fn next_generated_key(db: &mut Database, info: &StoreInfo) -> Result<Key> {
    let next = generator_value(db, info)?;
    if next > MAX_GENERATED_KEY {
        return Err(Error::Constraint {
            store: info.schema.name.clone(),
            detail: "the key generator is exhausted (2^53)".into(),
        });
    }
    Ok(Key::Number(next))
}

/// A numeric key at or above the generator moves it past that key, as in IndexedDB.
fn advance_generator(db: &mut Database, info: &StoreInfo, key: &Key) -> Result<()> {
    let Key::Number(n) = key else { return Ok(()) };
    if *n < generator_value(db, info)? {
        return Ok(());
    }
    // Past the largest key it can make, the generator is exhausted for good (infinity, stored
    // as "inf"): 2^53 + 1 rounds back to 2^53 in a double, which would hand that key out twice.
    let next = if n.floor() >= MAX_GENERATED_KEY { f64::INFINITY } else { n.floor() + 1.0 };
    db.key_generators.insert(info.data, next);
    db.mech.put(META_TABLE, &key_generator_slot(info.data), next.to_string().as_bytes())
}
