//! Every request to a bucket is counted — by kind and status, with the body bytes each way — so
//! that the cost of a view can be measured and priced.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Request prices in US dollars per 1,000 requests of three price lists (us-east-1, 2025):
/// `(name, writes and listings, reads)`. S3 Standard bills PUT, COPY, POST and LIST at the first
/// rate and GET, HEAD and the rest at the second; Cloudflare R2 bills the same split as its
/// classes A and B; S3 Express One Zone bills LIST with the writes (and, beyond 512 KB per
/// request, a per-GB fee left out here). DELETE is free on all three.
pub const PRICE_LISTS: [(&str, f64, f64); 3] =
    [("s3Standard", 0.005, 0.0004), ("r2", 0.0045, 0.00036), ("s3ExpressOneZone", 0.00113, 0.00003)];

/// What one request of `kind` costs under the price list `(writes and listings, reads)`.
fn price(kind: &str, (writes, reads): (f64, f64)) -> f64 {
    match kind {
        "PUT" | "POST" | "COPY" | "LIST" => writes / 1000.0,
        "DELETE" => 0.0,
        _ => reads / 1000.0,
    }
}

/// The requests made to buckets, by kind and status, the bytes each way, and what is known of
/// each bucket's conditional writes: what a database's `stats` (rsapi's `sync_stats`) reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Requests by kind (GET, HEAD, PUT, POST, DELETE, LIST) and status; 0 stands for no answer
    /// (refused, reset, timed out).
    pub requests: BTreeMap<String, BTreeMap<u16, u64>>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Milliseconds with at least one request in flight: how long the database waited on its
    /// buckets (requests side by side count once), beside which the rest of a caller's time
    /// is its own work.
    pub busy_ms: u64,
    /// Whether each bucket (by address) honours conditional writes, where that is known: one
    /// that does not has writes checked by reading first (see `sync::agent`).
    pub conditional_writes: BTreeMap<String, bool>,
}

impl Stats {
    pub fn count(&self, kind: &str) -> u64 {
        self.requests.get(kind).map(|by_status| by_status.values().sum()).unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.requests.values().flat_map(|s| s.values()).sum()
    }

    /// What the requests cost at S3 Standard's prices.
    pub fn cost_usd(&self) -> f64 {
        self.cost_under((PRICE_LISTS[0].1, PRICE_LISTS[0].2))
    }

    /// What the requests cost under each of [`PRICE_LISTS`], by the list's name and in its
    /// order, each rounded to a billionth of a dollar as reports give it (the first is S3
    /// Standard's).
    pub fn costs_usd(&self) -> Vec<(&'static str, f64)> {
        PRICE_LISTS.iter().map(|(name, writes, reads)| (*name, rounded(self.cost_under((*writes, *reads))))).collect()
    }

    fn cost_under(&self, prices: (f64, f64)) -> f64 {
        self.requests
            .iter()
            .map(|(kind, by_status)| price(kind, prices) * by_status.values().sum::<u64>() as f64)
            .fold(0.0, |a, b| a + b)
    }

    /// `{"requests": {"GET": {"200": n}}, "total": n, "bytesSent": n, "bytesReceived": n,
    /// "costUsd": x (S3 Standard), "costsUsd": {"s3Standard": x, "r2": x, "s3ExpressOneZone": x}}`.
    pub fn to_json(&self) -> Value {
        let requests: serde_json::Map<String, Value> = self
            .requests
            .iter()
            .map(|(kind, by_status)| {
                let statuses = by_status.iter().map(|(status, n)| (status.to_string(), json!(n))).collect();
                (kind.clone(), Value::Object(statuses))
            })
            .collect();
        json!({
            "requests": requests,
            "total": self.total(),
            "bytesSent": self.bytes_sent,
            "bytesReceived": self.bytes_received,
            "busyMs": self.busy_ms,
            "costUsd": rounded(self.cost_usd()),
            "costsUsd": self
                .costs_usd()
                .into_iter()
                .map(|(name, usd)| (name.to_string(), json!(usd)))
                .collect::<serde_json::Map<_, _>>(),
            "conditionalWrites": self.conditional_writes,
        })
    }
}

/// Rounded to a billionth of a dollar: no float noise (7.000000000000001e-5) in reports. The
/// costs a report gives (`to_json`'s `costUsd`, [`Stats::costs_usd`]) are rounded so.
fn rounded(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// The counters one database shares between its buckets and their worker threads.
#[derive(Debug, Default)]
pub struct Accounting {
    stats: Mutex<Stats>,
    /// What is known of each bucket's conditional writes: kept across `take`.
    conditional_writes: Mutex<BTreeMap<String, bool>>,
    flight: Mutex<Flight>,
}

/// Requests in flight now, since when some have been, and the time with some in flight before.
#[derive(Debug, Default)]
struct Flight {
    in_flight: usize,
    since: Option<Instant>,
    busy: Duration,
}

impl Flight {
    /// The busy time so far, the stretch in flight now included.
    fn busy_now(&self) -> Duration {
        self.busy + self.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

/// A request in flight: it ends when this is dropped (on every way out of the request).
pub struct InFlight<'a>(&'a Accounting);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut flight = self.0.flight.lock().unwrap_or_else(|p| p.into_inner());
        flight.in_flight = flight.in_flight.saturating_sub(1);
        if flight.in_flight == 0 {
            if let Some(since) = flight.since.take() {
                flight.busy += since.elapsed();
            }
        }
    }
}

impl Accounting {
    /// Marks a request begun, until the answer is dropped: the time with any in flight is the
    /// waiting `Stats::busy_ms` reports.
    pub fn begin(&self) -> InFlight<'_> {
        let mut flight = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        if flight.in_flight == 0 {
            flight.since = Some(Instant::now());
        }
        flight.in_flight += 1;
        InFlight(self)
    }

    pub fn record(&self, kind: &str, status: u16, sent: u64, received: u64) {
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        *stats.requests.entry(kind.to_string()).or_default().entry(status).or_default() += 1;
        stats.bytes_sent += sent;
        stats.bytes_received += received;
    }

    pub fn note_conditional_writes(&self, bucket: &str, honoured: bool) {
        self.conditional_writes.lock().unwrap_or_else(|p| p.into_inner()).insert(bucket.to_string(), honoured);
    }

    pub fn conditional_writes(&self, bucket: &str) -> Option<bool> {
        self.conditional_writes.lock().unwrap_or_else(|p| p.into_inner()).get(bucket).copied()
    }

    pub fn snapshot(&self) -> Stats {
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        stats.busy_ms = self.flight.lock().unwrap_or_else(|p| p.into_inner()).busy_now().as_millis() as u64;
        self.with_capabilities(stats)
    }

    /// Returns the counts so far and starts again from zero.
    pub fn take(&self) -> Stats {
        let mut stats = std::mem::take(&mut *self.stats.lock().unwrap_or_else(|p| p.into_inner()));
        let mut flight = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        stats.busy_ms = flight.busy_now().as_millis() as u64;
        flight.busy = Duration::ZERO;
        if flight.since.is_some() {
            flight.since = Some(Instant::now());
        }
        drop(flight);
        self.with_capabilities(stats)
    }

    fn with_capabilities(&self, mut stats: Stats) -> Stats {
        stats.conditional_writes = self.conditional_writes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests side by side count once; the time between them not at all.
    #[test]
    fn busy_time_is_the_time_with_a_request_in_flight() {
        let accounting = Accounting::default();
        let start = Instant::now();
        {
            let _one = accounting.begin();
            let _two = accounting.begin();
            std::thread::sleep(Duration::from_millis(30));
        }
        std::thread::sleep(Duration::from_millis(60));
        let busy = accounting.take().busy_ms as u128;
        // At least the 30 ms in flight; not the 60 ms after (a loaded machine may stretch both).
        assert!(busy >= 30 && busy + 60 <= start.elapsed().as_millis(), "{busy} ms");
        assert_eq!(accounting.snapshot().busy_ms, 0, "taken");
    }

    #[test]
    fn prices_requests_at_s3_standard_rates() {
        let accounting = Accounting::default();
        for _ in 0..1000 {
            accounting.record("LIST", 200, 0, 10);
            accounting.record("GET", 200, 0, 1);
        }
        accounting.record("DELETE", 204, 0, 0);
        let stats = accounting.take();
        assert!((stats.cost_usd() - 0.0054).abs() < 1e-12, "{}", stats.cost_usd());
        assert_eq!(stats.total(), 2001);
        assert_eq!(stats.bytes_received, 11_000);
        assert_eq!(accounting.snapshot().total(), 0);
        assert_eq!(stats.to_json()["requests"]["GET"]["200"], 1000);
        assert_eq!(stats.to_json()["busyMs"], 0, "no request was in flight");
        // R2 and S3 Express One Zone price the same requests by their own lists.
        assert_eq!(
            stats.to_json()["costsUsd"],
            json!({"s3Standard": 0.0054, "r2": 0.00486, "s3ExpressOneZone": 0.00116})
        );
    }
}
