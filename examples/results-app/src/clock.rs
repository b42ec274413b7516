//! The one clock: milliseconds since the epoch. Imports nothing, so every room may ask it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch (0 on a clock before it).
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
