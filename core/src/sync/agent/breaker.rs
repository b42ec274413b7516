//! The circuit breaker: after a failure to reach a bucket, requests to it fail at once for a
//! while.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Fails fast after a failure to reach a bucket, for a backoff that doubles up to a minute.
/// Kept per bucket (its address): one bucket down never stops requests to another, and another
/// bucket's success never resets this one's backoff.
#[derive(Default)]
pub(super) struct Breaker {
    tripped: Mutex<HashMap<String, Trip>>,
}

/// A bucket's breaker, open: until when, the backoff that led there, and why.
struct Trip {
    until: Instant,
    backoff: Duration,
    reason: String,
}

const BREAKER_FIRST: Duration = Duration::from_secs(1);
const BREAKER_MAX: Duration = Duration::from_secs(60);

impl Breaker {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Trip>> {
        self.tripped.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn check(&self, bucket: &str, what: &str) -> Result<()> {
        match self.lock().get(bucket) {
            Some(trip) if Instant::now() < trip.until => Err(Error::Unreachable {
                what: what.to_string(),
                reason: format!(
                    "{}; not retried for another {} ms",
                    trip.reason,
                    trip.until.saturating_duration_since(Instant::now()).as_millis()
                ),
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn record<T>(&self, bucket: &str, outcome: &Result<T>) {
        let mut tripped = self.lock();
        match outcome {
            Err(e) if e.is_offline() => {
                let backoff = tripped.get(bucket).map_or(BREAKER_FIRST, |t| (t.backoff * 2).min(BREAKER_MAX));
                let trip = Trip { until: Instant::now() + backoff, backoff, reason: e.to_string() };
                tripped.insert(bucket.to_string(), trip);
            }
            Ok(_) => drop(tripped.remove(bucket)),
            Err(_) => {}
        }
    }

    pub(super) fn reset(&self) {
        self.lock().clear();
    }
}
