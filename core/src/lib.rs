//! objstore-db core: an embeddable database of stores with key paths, secondary and compound
//! indexes, key ranges, transactions and change events, on SQLite or in memory.
//!
//! [`Database`] is the synchronous engine; [`AsyncDatabase`] runs one on a worker thread and
//! completes every request through a callback. Nothing here knows about C, Python or Node.

pub mod bucket;
mod catalog;
mod database;
mod error;
mod events;
mod executor;
pub mod hook;
mod inline;
mod key;
mod keypath;
mod mechanism;
mod ops;
mod query;
pub(crate) mod random;
mod range;
mod record;
mod records;
pub mod replica;
mod scan;
mod schema;
pub mod sql;
pub mod sync;
pub(crate) mod time;
mod token;

pub use database::{Database, MechanismKind, Mode, OpenOptions, Tx, TxId};
pub use error::{clip, clip_json, clip_message, Error, ErrorCode, Result};
pub use events::{Event, EventFilter, EventKind, Listener, SubscriptionId};
pub use executor::{AsyncDatabase, ExecutorOptions, DEFAULT_IDLE_TRANSACTION_TIMEOUT, DEFAULT_QUEUE_CAPACITY};
pub use key::Key;
pub use keypath::{lookup, KeyPath};
pub use mechanism::Durability;
pub use query::{Condition, CursorItem, Literal, Op, Plan, Query, Step};
pub use range::{ByteRange, KeyRange};
pub use record::{Record, RecordText};
pub use replica::{Change, RefusedWrite, Resolution, SyncStatus};
pub use scan::ScanOptions;
pub use schema::{IndexSchema, Schema, StoreSchema};
pub use sync::{CheckpointReport, FlushReport, Freshness, ReadScope, Stats, SyncedDatabase};
pub use token::Token;

/// The library version, as in Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
