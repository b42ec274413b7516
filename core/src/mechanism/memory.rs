//! The `memory` mechanism: ordered maps in process memory, no SQLite. It follows the same byte
//! order as the SQLite tables, so it doubles as the reference model in differential tests.
//! A write transaction keeps an undo log; rollback replays it backwards.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound::{Excluded, Included};

use super::{After, Mechanism, TableId, Visit, VisitJoined, META_TABLE};
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

#[derive(Default)]
pub struct MemoryMechanism {
    tables: HashMap<TableId, Table>,
    /// Present while a write transaction is open.
    undo: Option<Vec<Undo>>,
}

impl MemoryMechanism {
    pub fn new() -> MemoryMechanism {
        let mut m = MemoryMechanism::default();
        m.tables.insert(META_TABLE, Table::Data(BTreeMap::new()));
        m
    }

    fn log(&mut self, entry: Undo) {
        if let Some(undo) = &mut self.undo {
            undo.push(entry);
        }
    }

    fn data(&mut self, t: TableId) -> Result<&mut BTreeMap<Vec<u8>, Vec<u8>>> {
        match self.tables.get_mut(&t) {
            Some(Table::Data(map)) => Ok(map),
            _ => Err(Error::Internal(format!("memory table t{t} is not a data table"))),
        }
    }

    fn index(&mut self, t: TableId) -> Result<&mut BTreeSet<(Vec<u8>, Vec<u8>)>> {
        match self.tables.get_mut(&t) {
            Some(Table::Index(set)) => Ok(set),
            _ => Err(Error::Internal(format!("memory table t{t} is not an index table"))),
        }
    }

    fn create(&mut self, t: TableId, table: Table) {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.tables.entry(t) {
            slot.insert(table);
            self.log(Undo::Created(t));
        }
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
    fn begin(&mut self, write: bool) -> Result<()> {
        if write {
            self.undo = Some(Vec::new());
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.undo = None;
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        let Some(undo) = self.undo.take() else {
            return Ok(());
        };
        for entry in undo.into_iter().rev() {
            match entry {
                Undo::Put { t, key, old } => {
                    let map = self.data(t)?;
                    match old {
                        Some(v) => map.insert(key, v),
                        None => map.remove(&key),
                    };
                }
                Undo::IndexInsert { t, entry } => {
                    self.index(t)?.remove(&entry);
                }
                Undo::IndexDelete { t, entry } => {
                    self.index(t)?.insert(entry);
                }
                Undo::Created(t) => {
                    self.tables.remove(&t);
                }
                Undo::Replaced(t, old) => {
                    match old {
                        Some(table) => self.tables.insert(t, table),
                        None => self.tables.remove(&t),
                    };
                }
            }
        }
        Ok(())
    }

    fn create_data_table(&mut self, t: TableId) -> Result<()> {
        self.create(t, Table::Data(BTreeMap::new()));
        Ok(())
    }

    fn create_index_table(&mut self, t: TableId) -> Result<()> {
        self.create(t, Table::Index(BTreeSet::new()));
        Ok(())
    }

    fn drop_table(&mut self, t: TableId) -> Result<()> {
        let old = self.tables.remove(&t);
        self.log(Undo::Replaced(t, old));
        Ok(())
    }

    fn clear_table(&mut self, t: TableId) -> Result<()> {
        let empty = match self.tables.get(&t) {
            Some(Table::Data(_)) => Table::Data(BTreeMap::new()),
            Some(Table::Index(_)) => Table::Index(BTreeSet::new()),
            None => return Err(Error::Internal(format!("memory table t{t} does not exist"))),
        };
        let old = self.tables.insert(t, empty);
        self.log(Undo::Replaced(t, old));
        Ok(())
    }

    fn get(&mut self, t: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.data(t)?.get(key).cloned())
    }

    fn put(&mut self, t: TableId, key: &[u8], value: &[u8]) -> Result<()> {
        let old = self.data(t)?.insert(key.to_vec(), value.to_vec());
        self.log(Undo::Put { t, key: key.to_vec(), old });
        Ok(())
    }

    fn delete(&mut self, t: TableId, key: &[u8]) -> Result<()> {
        if let Some(old) = self.data(t)?.remove(key) {
            self.log(Undo::Put { t, key: key.to_vec(), old: Some(old) });
        }
        Ok(())
    }

    fn count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        if range.is_empty() {
            return Ok(0);
        }
        let map = self.data(t)?;
        Ok(map.range::<[u8], _>((Included(&range.low[..]), Excluded(&range.high[..]))).count() as u64)
    }

    fn scan(&mut self, t: TableId, range: &ByteRange, reverse: bool, values: bool, visit: Visit) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let map = self.data(t)?;
        let items = map
            .range::<[u8], _>((Included(&range.low[..]), Excluded(&range.high[..])))
            .map(|(k, v)| (&k[..], if values { &v[..] } else { &[][..] }));
        visit_in_order(items, reverse, visit)
    }

    fn index_insert(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        let entry = (index_key.to_vec(), primary_key.to_vec());
        if self.index(t)?.insert(entry.clone()) {
            self.log(Undo::IndexInsert { t, entry });
        }
        Ok(())
    }

    fn index_delete(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        let entry = (index_key.to_vec(), primary_key.to_vec());
        if self.index(t)?.remove(&entry) {
            self.log(Undo::IndexDelete { t, entry });
        }
        Ok(())
    }

    fn index_count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        if range.is_empty() {
            return Ok(0);
        }
        Ok(Self::index_entries(self.index(t)?, range, None, false).count() as u64)
    }

    fn index_scan(&mut self, t: TableId, range: &ByteRange, after: After, reverse: bool, visit: Visit) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let items = Self::index_entries(self.index(t)?, range, after, reverse).map(|(ik, pk)| (&ik[..], &pk[..]));
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
        let (Some(Table::Index(set)), Some(Table::Data(map))) = (self.tables.get(&index), self.tables.get(&data))
        else {
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
