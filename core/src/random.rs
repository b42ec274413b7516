//! Numbers no other caller, in this process or another, is likely to get: std's random hash
//! keys, a counter, the process id and the clock, hashed together. For names that must not
//! clash or be guessed ahead (a temporary file's, a change-log writer's), not for secrets.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh number. The counter and the clock keep two in one process apart; the pid keeps
/// apart children forked from one parent, whose hash keys start alike.
pub(crate) fn number() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    hasher.finish()
}
