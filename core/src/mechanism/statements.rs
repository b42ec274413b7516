//! The SQLite mechanism's connection and its prepared statements, kept for the connection's
//! life and found by (table, statement) with one cheap hash. rusqlite's statement cache (an LRU
//! keyed by the SQL text, each statement taken out and put back on every use) was 7% of a bulk
//! put.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use rusqlite::{Connection, Statement};

/// A connection and the statements prepared on it.
pub(super) struct Prepared<K> {
    /// They borrow `*conn`; `Drop` finalizes them before it closes the connection.
    statements: HashMap<K, Statement<'static>, BuildHasherDefault<Fx>>,
    /// Owned (from `Box::leak`) and never moved or handed out mutably: the statements
    /// point at it while `Prepared` itself moves around.
    conn: std::ptr::NonNull<Connection>,
}

impl<K> Drop for Prepared<K> {
    fn drop(&mut self) {
        self.statements.clear();
        // SAFETY: `conn` came from `Box::leak` in `new`, is freed only here, and no
        // statement borrowing it is left.
        drop(unsafe { Box::from_raw(self.conn.as_ptr()) });
    }
}

// SAFETY: a statement is not Send only because it borrows its connection, which is not Sync
// (and a pointer is never Send). Here the statements and the connection (owned through its
// pointer) move together; nothing else holds either across threads (callers borrow them
// through `&mut self`).
unsafe impl<K: Send> Send for Prepared<K> {}

impl<K: Hash + Eq> Prepared<K> {
    pub(super) fn new(conn: Connection) -> Prepared<K> {
        let conn = std::ptr::NonNull::from(Box::leak(Box::new(conn)));
        Prepared { statements: HashMap::default(), conn }
    }

    pub(super) fn conn(&self) -> &Connection {
        // SAFETY: `conn` is valid from `new` until `drop`, and only ever shared.
        unsafe { self.conn.as_ref() }
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
                // SAFETY (for `conn()` and the transmute): the connection lives at one address
                // from `new` until `drop`, which finalizes every statement before freeing it
                // (`forget` finalizes some earlier). The 'static never escapes: callers reach a
                // statement only through `&mut self`.
                let conn: &Connection = unsafe { self.conn.as_ref() };
                let statement = conn.prepare(&text())?;
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
