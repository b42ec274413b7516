//! A cancellation flag that long sync work checks between batches, between HTTP requests and
//! between the attempts of one request (its backoff sleeps wake for it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How often a backoff sleep looks at the flag.
const SLEEP_SLICE: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Default)]
pub struct Token(Arc<AtomicBool>);

impl Token {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `Cancelled`, naming `what`, once the token is cancelled.
    pub fn check(&self, what: &str) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled(format!("{what} was cancelled")))
        } else {
            Ok(())
        }
    }

    /// Sleeps for `duration`, or less when the token is cancelled meanwhile.
    pub fn sleep(&self, duration: Duration) {
        let until = Instant::now() + duration;
        while !self.is_cancelled() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            thread::sleep(left.min(SLEEP_SLICE));
        }
    }
}
