//! The storage mechanisms behind the engine: `sqlite` (a durable file) and `memory` (ordered
//! maps). A mechanism knows only numbered tables of two kinds, never stores, keys or JSON:
//! - data tables map an encoded primary key to a record's bytes;
//! - index tables hold (encoded index key, encoded primary key) pairs, ordered by both.
//!
//! Ranges are byte ranges over the first column: `low` inclusive, `high` exclusive.

mod memory;
mod sqlite;
mod statements;

pub use memory::MemoryMechanism;
pub use sqlite::SqliteMechanism;

use crate::error::{Error, Result};
use crate::range::ByteRange;

pub type TableId = u32;

/// The data table that holds the catalog and key generators.
pub const META_TABLE: TableId = 0;

/// What a scan's visitor says after each row: true to go on.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<bool>;
/// A visitor of (index key, primary key, record) rows.
pub type VisitJoined<'a> = &'a mut dyn FnMut(&[u8], &[u8], &[u8]) -> Result<bool>;

/// Where an index scan resumes: strictly after this (index key, primary key) pair in the scan's
/// direction. This is what keyset paging stands on.
pub type After<'a> = Option<(&'a [u8], &'a [u8])>;

/// Opens another connection to a mechanism's storage, read-only, for reads on callers' threads.
pub type OpenReader = std::sync::Arc<dyn Fn() -> Result<Box<dyn Mechanism>> + Send + Sync>;

pub trait Mechanism: Send {
    /// What opens readers of this storage (see [`OpenReader`]).
    fn reader_opener(&self) -> OpenReader;
    /// A reader holds a consistent view of the storage from here to `release_view` (the
    /// memory mechanism's readers take the read side of its lock; SQLite's statements and
    /// transactions see a snapshot each already). Fails, without waiting, when it cannot now.
    fn hold_view(&mut self) -> Result<()> {
        Ok(())
    }
    fn release_view(&mut self) {}

    /// Starts a transaction; `write` takes the write lock at once.
    fn begin(&mut self, write: bool) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    fn rollback(&mut self) -> Result<()>;

    fn create_data_table(&mut self, table: TableId) -> Result<()>;
    fn create_index_table(&mut self, table: TableId) -> Result<()>;
    fn drop_table(&mut self, table: TableId) -> Result<()>;
    fn clear_table(&mut self, table: TableId) -> Result<()>;

    fn get(&mut self, table: TableId, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn put(&mut self, table: TableId, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, table: TableId, key: &[u8]) -> Result<()>;
    fn count(&mut self, table: TableId, range: &ByteRange) -> Result<u64>;
    /// Visits (key, value) in key order until the visitor returns false. With `values` false
    /// the value passed is empty.
    fn scan(&mut self, table: TableId, range: &ByteRange, reverse: bool, values: bool, visit: Visit) -> Result<()>;

    fn index_insert(&mut self, table: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()>;
    fn index_delete(&mut self, table: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()>;
    fn index_count(&mut self, table: TableId, range: &ByteRange) -> Result<u64>;
    /// Visits (index key, primary key) in order until the visitor returns false.
    fn index_scan(
        &mut self,
        table: TableId,
        range: &ByteRange,
        after: After,
        reverse: bool,
        visit: Visit,
    ) -> Result<()>;
    /// Visits (index key, primary key, record) of the index entries in range, in index order,
    /// joining the data table in one pass.
    fn index_scan_values(
        &mut self,
        index: TableId,
        data: TableId,
        range: &ByteRange,
        after: After,
        reverse: bool,
        visit: VisitJoined,
    ) -> Result<()>;
}

/// When a commit is on disk (the sqlite mechanism; SQLite's `synchronous` setting in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// One fsync per checkpoint, none per commit: a commit survives the application crashing
    /// or being killed, but a machine crash or power loss can lose the last commits (never
    /// corrupt the file). The default.
    #[default]
    Normal,
    /// An fsync per commit: a commit survives a machine crash too, at the cost of one fsync per
    /// write transaction.
    Full,
}

impl Durability {
    pub fn from_name(name: &str) -> Result<Durability> {
        match name {
            "normal" => Ok(Durability::Normal),
            "full" => Ok(Durability::Full),
            other => Err(Error::InvalidArgument(format!("unknown durability {other:?} (known: normal, full)"))),
        }
    }
}
