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
        let now = Instant::now();
        match outcome {
            // Requests in flight together when the bucket went away fail together: one outage,
            // one step of the backoff (eight parallel failures once held a restarted node off for
            // a minute). It doubles when a try after the hold fails too.
            Err(e) if e.is_offline() && tripped.get(bucket).is_some_and(|t| now < t.until) => {}
            Err(e) if e.is_offline() => {
                let backoff = tripped.get(bucket).map_or(BREAKER_FIRST, |t| (t.backoff * 2).min(BREAKER_MAX));
                let trip = Trip { until: now + backoff, backoff, reason: e.to_string() };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_of_one_outage_are_one_step_and_a_failed_try_after_the_hold_doubles_it() {
        let breaker = Breaker::default();
        let down: Result<()> = Err(Error::Unreachable { what: "PUT x".into(), reason: "refused".into() });
        for _ in 0..8 {
            breaker.record("b", &down);
        }
        assert_eq!(breaker.lock()["b"].backoff, BREAKER_FIRST, "eight requests in flight, one outage");
        assert!(breaker.check("b", "GET y").is_err());
        breaker.lock().get_mut("b").unwrap().until = Instant::now(); // the hold is over
        breaker.record("b", &down);
        assert_eq!(breaker.lock()["b"].backoff, BREAKER_FIRST * 2, "the try after the hold failed too");
        breaker.record("b", &Ok(()));
        assert!(breaker.check("b", "GET y").is_ok());
        assert!(breaker.check("another", "GET y").is_ok(), "per bucket");
    }
}
