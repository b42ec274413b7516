//! How a database is opened, as the skins hand it over.

use std::time::Duration;

use objstore_db_core::{Durability, MechanismKind};

/// How a database is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub mechanism: MechanismKind,
    /// Whether a commit waits for an fsync (`full`) or only survives application crashes (`normal`).
    pub durability: Durability,
    /// An explicit transaction with no request for this long is aborted.
    pub idle_transaction_timeout: Duration,
    /// Requests that may wait for the worker before submitters wait for room.
    pub queue_capacity: usize,
    /// Threads of the sync agent (HTTP requests run on them, never on the worker).
    pub sync_threads: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            mechanism: MechanismKind::Sqlite,
            durability: Durability::Normal,
            idle_transaction_timeout: objstore_db_core::DEFAULT_IDLE_TRANSACTION_TIMEOUT,
            queue_capacity: objstore_db_core::DEFAULT_QUEUE_CAPACITY,
            sync_threads: 2,
        }
    }
}
