//! The `memory` mechanism: ordered maps in process memory, no SQLite. It follows the same byte
//! order as the SQLite tables, so it doubles as the reference model in differential tests.
//! A write transaction keeps an undo log; rollback replays it backwards.
//!
//! Readers (`reader_opener`) share the maps. A reader reads only while it holds a view, which
//! it cannot take while a write transaction is open or waiting to open; a write transaction
//! waits for the views held to be released (a read on a caller's thread, microseconds).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound::{Excluded, Included};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{After, Mechanism, OpenReader, TableId, Visit, VisitJoined, META_TABLE};
use crate::error::{Error, Result};
use crate::range::ByteRange;

enum Table {
    Data(BTreeMap<Vec<u8>, Vec<u8>>),
    Index(BTreeSet<(Vec<u8>, Vec<u8>)>),
}

enum Undo {
    Put { t: TableId, key: Vec<u8>, old: Option<Vec<u8>> },
    IndexInsert { t: TableId, entry: (Vec<u8>, Vec<u8>) },
    IndexDelete { t: TableId, entry: (Vec<u8>, Vec<u8>) },
    Created(TableId),
    Replaced(TableId, Option<Table>),
}

type Tables = HashMap<TableId, Table>;

/// Who may read the maps now: readers holding a view, or one write transaction.
#[derive(Default)]
struct Views {
    held: usize,
    writing: bool,
    /// A write transaction waits for the views held: no new one is given meanwhile.
    writer_waiting: bool,
}

#[derive(Default)]
struct Shared {
    tables: RwLock<Tables>,
    views: Mutex<Views>,
    released: Condvar,
}

impl Shared {
    fn views(&self) -> std::sync::MutexGuard<'_, Views> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct MemoryMechanism {
    shared: Arc<Shared>,
    /// Present while a write transaction is open.
    undo: Option<Vec<Undo>>,
    /// A reader: reads only while it holds a view, never writes.
    reader: bool,
    holding: bool,
}

impl Default for MemoryMechanism {
    fn default() -> Self {
        MemoryMechanism::new()
    }
}

impl MemoryMechanism {
    pub fn new() -> MemoryMechanism {
        let shared = Arc::new(Shared::default());
        shared.tables.write().unwrap_or_else(|p| p.into_inner()).insert(META_TABLE, Table::Data(BTreeMap::new()));
        MemoryMechanism { shared, undo: None, reader: false, holding: false }
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Tables>> {
        if self.reader && !self.holding {
            return Err(Error::Internal("a memory reader read without holding a view".into()));
        }
        Ok(self.shared.tables.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Tables>> {
        if self.reader {
            return Err(Error::Internal("a memory reader was asked to write".into()));
        }
        Ok(self.shared.tables.write().unwrap_or_else(|p| p.into_inner()))
    }

    fn log(&mut self, entry: Undo) {
        if let Some(undo) = &mut self.undo {
            undo.push(entry);
        }
    }

    fn create(&mut self, t: TableId, table: Table) -> Result<()> {
        let created = match self.write()?.entry(t) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(table);
                true
            }
            std::collections::hash_map::Entry::Occupied(_) => false,
        };
        if created {
            self.log(Undo::Created(t));
        }
        Ok(())
    }

    /// Entries in `range`, and strictly after `after` in the scan's direction.
    fn index_entries<'a>(
        set: &'a BTreeSet<(Vec<u8>, Vec<u8>)>,
        range: &ByteRange,
        after: After,
        reverse: bool,
    ) -> impl DoubleEndedIterator<Item = &'a (Vec<u8>, Vec<u8>)> {
        let mut low = (range.low.clone(), Vec::new());
        let mut high = (range.high.clone(), Vec::new());
        let (mut low_open, mut high_open) = (false, true);
        if let Some((ik, pk)) = after {
            let at = (ik.to_vec(), pk.to_vec());
            if reverse && at < high {
                high = at;
            } else if !reverse && at >= low {
                low = at;
                low_open = true;
            }
            high_open = true;
        }
        if low > high || (low == high && (low_open || high_open)) {
            // An empty range, in the one form BTreeSet::range accepts for it.
            return set.range((Included(low.clone()), Excluded(low)));
        }
        let low = if low_open { Excluded(low) } else { Included(low) };
        let high = if high_open { Excluded(high) } else { Included(high) };
        set.range((low, high))
    }
}

fn data(tables: &Tables, t: TableId) -> Result<&BTreeMap<Vec<u8>, Vec<u8>>> {
    match tables.get(&t) {
        Some(Table::Data(map)) => Ok(map),
        _ => Err(Error::Internal(format!("memory table t{t} is not a data table"))),
    }
}

fn data_mut(tables: &mut Tables, t: TableId) -> Result<&mut BTreeMap<Vec<u8>, Vec<u8>>> {
    match tables.get_mut(&t) {
        Some(Table::Data(map)) => Ok(map),
        _ => Err(Error::Internal(format!("memory table t{t} is not a data table"))),
    }
}

fn index(tables: &Tables, t: TableId) -> Result<&BTreeSet<(Vec<u8>, Vec<u8>)>> {
    match tables.get(&t) {
        Some(Table::Index(set)) => Ok(set),
        _ => Err(Error::Internal(format!("memory table t{t} is not an index table"))),
    }
}

fn index_mut(tables: &mut Tables, t: TableId) -> Result<&mut BTreeSet<(Vec<u8>, Vec<u8>)>> {
    match tables.get_mut(&t) {
        Some(Table::Index(set)) => Ok(set),
        _ => Err(Error::Internal(format!("memory table t{t} is not an index table"))),
    }
}

/// Visits items forwards or backwards, stopping when the visitor says so.
fn visit_in_order<'a, I>(
    items: I,
    reverse: bool,
    mut visit: impl FnMut(&'a [u8], &'a [u8]) -> Result<bool>,
) -> Result<()>
where
    I: DoubleEndedIterator<Item = (&'a [u8], &'a [u8])>,
{
    let items: Box<dyn Iterator<Item = _>> = if reverse { Box::new(items.rev()) } else { Box::new(items) };
    for (a, b) in items {
        if !visit(a, b)? {
            break;
        }
    }
    Ok(())
}

impl Mechanism for MemoryMechanism {
    fn reader_opener(&self) -> OpenReader {
        let shared = self.shared.clone();
        Arc::new(move || {
            let reader = MemoryMechanism { shared: shared.clone(), undo: None, reader: true, holding: false };
            Ok(Box::new(reader) as Box<dyn Mechanism>)
        })
    }

    fn hold_view(&mut self) -> Result<()> {
        if !self.reader || self.holding {
            return Ok(());
        }
        let mut views = self.shared.views();
        if views.writing || views.writer_waiting {
            return Err(Error::Internal("a write transaction holds the memory database".into()));
        }
        views.held += 1;
        self.holding = true;
        Ok(())
    }

    fn release_view(&mut self) {
        if !self.holding {
            return;
        }
        self.holding = false;
        let mut views = self.shared.views();
        views.held -= 1;
        if views.held == 0 {
            self.shared.released.notify_all();
        }
    }

    fn begin(&mut self, write: bool) -> Result<()> {
        if write && !self.reader {
            let mut views = self.shared.views();
            views.writer_waiting = true;
            while views.held > 0 {
                views = self.shared.released.wait(views).unwrap_or_else(|p| p.into_inner());
            }
            views.writer_waiting = false;
            views.writing = true;
            self.undo = Some(Vec::new());
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if self.undo.take().is_some() {
            self.shared.views().writing = false;
        }
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        let Some(undo) = self.undo.take() else {
            return Ok(());
        };
        let mut tables = self.write()?;
        for entry in undo.into_iter().rev() {
            match entry {
                Undo::Put { t, key, old } => {
                    let map = data_mut(&mut tables, t)?;
                    match old {
                        Some(v) => map.insert(key, v),
                        None => map.remove(&key),
                    };
                }
                Undo::IndexInsert { t, entry } => {
                    index_mut(&mut tables, t)?.remove(&entry);
                }
                Undo::IndexDelete { t, entry } => {
                    index_mut(&mut tables, t)?.insert(entry);
                }
                Undo::Created(t) => {
                    tables.remove(&t);
                }
                Undo::Replaced(t, old) => {
                    match old {
                        Some(table) => tables.insert(t, table),
                        None => tables.remove(&t),
                    };
                }
            }
        }
        drop(tables);
        self.shared.views().writing = false;
        Ok(())
    }

    fn create_data_table(&mut self, t: TableId) -> Result<()> {
        self.create(t, Table::Data(BTreeMap::new()))
    }

    fn create_index_table(&mut self, t: TableId) -> Result<()> {
        self.create(t, Table::Index(BTreeSet::new()))
    }

    fn drop_table(&mut self, t: TableId) -> Result<()> {
        let old = self.write()?.remove(&t);
        self.log(Undo::Replaced(t, old));
        Ok(())
    }

    fn clear_table(&mut self, t: TableId) -> Result<()> {
        let mut tables = self.write()?;
        let empty = match tables.get(&t) {
            Some(Table::Data(_)) => Table::Data(BTreeMap::new()),
            Some(Table::Index(_)) => Table::Index(BTreeSet::new()),
            None => return Err(Error::Internal(format!("memory table t{t} does not exist"))),
        };
        let old = tables.insert(t, empty);
        drop(tables);
        self.log(Undo::Replaced(t, old));
        Ok(())
    }

    fn get(&mut self, t: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let tables = self.read()?;
        Ok(data(&tables, t)?.get(key).cloned())
    }

    fn put(&mut self, t: TableId, key: &[u8], value: &[u8]) -> Result<()> {
        let old = data_mut(&mut *self.write()?, t)?.insert(key.to_vec(), value.to_vec());
        self.log(Undo::Put { t, key: key.to_vec(), old });
        Ok(())
    }

    fn delete(&mut self, t: TableId, key: &[u8]) -> Result<()> {
        let old = data_mut(&mut *self.write()?, t)?.remove(key);
        if let Some(old) = old {
            self.log(Undo::Put { t, key: key.to_vec(), old: Some(old) });
        }
        Ok(())
    }

    fn count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        if range.is_empty() {
            return Ok(0);
        }
        let tables = self.read()?;
        let map = data(&tables, t)?;
        Ok(map.range::<[u8], _>((Included(&range.low[..]), Excluded(&range.high[..]))).count() as u64)
    }

    fn scan(&mut self, t: TableId, range: &ByteRange, reverse: bool, values: bool, visit: Visit) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let tables = self.read()?;
        let items = data(&tables, t)?
            .range::<[u8], _>((Included(&range.low[..]), Excluded(&range.high[..])))
            .map(|(k, v)| (&k[..], if values { &v[..] } else { &[][..] }));
        visit_in_order(items, reverse, visit)
    }

    fn index_insert(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        let entry = (index_key.to_vec(), primary_key.to_vec());
        let inserted = index_mut(&mut *self.write()?, t)?.insert(entry.clone());
        if inserted {
            self.log(Undo::IndexInsert { t, entry });
        }
        Ok(())
    }

    fn index_delete(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        let entry = (index_key.to_vec(), primary_key.to_vec());
        let removed = index_mut(&mut *self.write()?, t)?.remove(&entry);
        if removed {
            self.log(Undo::IndexDelete { t, entry });
        }
        Ok(())
    }

    fn index_count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        if range.is_empty() {
            return Ok(0);
        }
        let tables = self.read()?;
        Ok(Self::index_entries(index(&tables, t)?, range, None, false).count() as u64)
    }

    fn index_scan(&mut self, t: TableId, range: &ByteRange, after: After, reverse: bool, visit: Visit) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let tables = self.read()?;
        let items = Self::index_entries(index(&tables, t)?, range, after, reverse).map(|(ik, pk)| (&ik[..], &pk[..]));
        visit_in_order(items, reverse, visit)
    }

    fn index_scan_values(
        &mut self,
        index: TableId,
        data: TableId,
        range: &ByteRange,
        after: After,
        reverse: bool,
        visit: VisitJoined,
    ) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let tables = self.read()?;
        let (Some(Table::Index(set)), Some(Table::Data(map))) = (tables.get(&index), tables.get(&data)) else {
            return Err(Error::Internal(format!("memory tables t{index}/t{data} are not an index and its data")));
        };
        let entries = Self::index_entries(set, range, after, reverse);
        let entries: Box<dyn Iterator<Item = _>> = if reverse { Box::new(entries.rev()) } else { Box::new(entries) };
        for (ik, pk) in entries {
            if let Some(v) = map.get(&pk[..]) {
                if !visit(ik, pk, v)? {
                    break;
                }
            }
        }
        Ok(())
    }
}

impl Drop for MemoryMechanism {
    /// A writer gone mid-transaction (its database dropped) or a reader gone while holding a
    /// view leaves the others free.
    fn drop(&mut self) {
        if self.undo.is_some() {
            let _ = self.rollback();
        }
        self.release_view();
    }
}
