//! The SQLite mechanism's connection and its prepared statements, kept for the connection's
//! life and found by (table, statement) with one cheap hash. rusqlite's statement cache (an LRU
//! keyed by the SQL text, each statement taken out and put back on every use) was 7% of a bulk
//! put.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use rusqlite::{Connection, Statement};

/// A connection and the statements prepared on it.
pub(super) struct Prepared<K> {
    /// They borrow `conn`: declared before it, so dropped (finalized) before it closes.
    statements: HashMap<K, Statement<'static>, BuildHasherDefault<Fx>>,
    /// Boxed: the statements point at it, so its address never changes.
    conn: Box<Connection>,
}

// SAFETY: a statement is not Send only because it borrows its connection, which is not Sync.
// Here both are owned together and move together; nothing else ever holds the connection or a
// statement across threads (callers borrow them through `&mut self`).
unsafe impl<K: Send> Send for Prepared<K> {}

impl<K: Hash + Eq> Prepared<K> {
    pub(super) fn new(conn: Connection) -> Prepared<K> {
        Prepared { statements: HashMap::default(), conn: Box::new(conn) }
    }

    pub(super) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The statement for `key`, prepared from `text()` the first time.
    pub(super) fn statement(
        &mut self,
        key: K,
        text: impl FnOnce() -> String,
    ) -> rusqlite::Result<&mut Statement<'static>> {
        use std::collections::hash_map::Entry;
        match self.statements.entry(key) {
            Entry::Occupied(found) => Ok(found.into_mut()),
            Entry::Vacant(slot) => {
                let statement = self.conn.prepare(&text())?;
                // SAFETY: the statement borrows `*self.conn`, a box that lives at the same address
                // until `self` drops, and the statements are dropped before it (field order;
                // `forget` drops some earlier). The 'static never escapes: callers reach a
                // statement only through `&mut self`.
                let statement = unsafe { std::mem::transmute::<Statement<'_>, Statement<'static>>(statement) };
                Ok(slot.insert(statement))
            }
        }
    }

    /// Drops the statements whose key `matches` (their table is gone).
    pub(super) fn forget(&mut self, matches: impl Fn(&K) -> bool) {
        self.statements.retain(|key, _| !matches(key));
    }
}

/// A fast hasher for small keys (the multiply-rotate step of rustc's FxHash): no defence against
/// chosen keys is needed for table numbers.
#[derive(Default)]
pub(super) struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(*byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
