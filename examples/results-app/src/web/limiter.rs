//! Per-client token buckets: how often one address may post to the collector or ask the page
//! for a view.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Token buckets per client address.
pub struct Limiter {
    per_second: f64,
    burst: f64,
    clients: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

/// Client addresses remembered at most; past it, full buckets are forgotten.
const REMEMBERED_CLIENTS: usize = 100_000;

impl Limiter {
    pub(crate) fn new(per_minute: u32, burst: u32) -> Limiter {
        Limiter { per_second: f64::from(per_minute) / 60.0, burst: f64::from(burst.max(1)), clients: Mutex::default() }
    }

    /// Takes one post from the client's bucket, or says how long until one is there.
    pub(crate) fn take(&self, client: IpAddr) -> Result<(), Duration> {
        // An IPv6 client holds a /64 at least: it is one client, not 2^64 of them.
        let client = match client {
            IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
            v4 => v4,
        };
        let now = Instant::now();
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if clients.len() >= REMEMBERED_CLIENTS {
            // Forget the buckets that have refilled; if that frees nothing, start over: a flood
            // of addresses must not grow this without bound.
            let (rate, burst) = (self.per_second, self.burst);
            clients.retain(|_, (tokens, at)| *tokens + at.elapsed().as_secs_f64() * rate < burst);
            if clients.len() >= REMEMBERED_CLIENTS {
                clients.clear();
            }
        }
        let (tokens, at) = clients.entry(client).or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else if self.per_second <= 0.0 {
            Err(Duration::from_secs(60))
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.per_second).max(Duration::from_secs(1)))
        }
    }
}
