//! The viewer's cache: the results bucket's stores opened through the library on a SQLite file
//! of their own. The views hold one and hand it to the readers (`reader.rs`); what its bucket
//! requests cost is counted here, in the views' terms.

use std::collections::BTreeMap;
use std::path::Path;

use objstore_db::rsapi::Db;
pub use objstore_db_core::CheckpointReport;
use objstore_db_core::{MechanismKind, Stats};

use crate::error::{AppError, AppResult};
use crate::store::schema::viewer_schema;
use crate::store::{call, open_and_wait, Target};

/// The bucket's runs as the library keeps them, in a local database.
pub struct Cache {
    pub(super) db: Db,
}

/// What the library's bucket requests cost since it was last asked (its `sync_stats`).
#[derive(Debug, Default, PartialEq)]
pub struct Spent {
    pub requests: u64,
    /// Requests by kind (GET, LIST, PUT, …).
    pub by_kind: BTreeMap<String, u64>,
    pub bytes_in: u64,
    /// Dollars by price list, in the library's order (S3 Standard's first).
    pub usd_by: Vec<(&'static str, f64)>,
    /// Milliseconds with a request in flight: the time waited on the bucket.
    pub busy_ms: u64,
}

impl Spent {
    pub(crate) fn of(stats: &Stats) -> Spent {
        Spent {
            requests: stats.total(),
            by_kind: stats.requests.keys().map(|kind| (kind.clone(), stats.count(kind))).collect(),
            bytes_in: stats.bytes_received,
            usd_by: stats.costs_usd(),
            busy_ms: stats.busy_ms,
        }
    }
}

impl Cache {
    /// Opens the cache at `path` (a SQLite file; created with its folder when missing) on
    /// `target`'s stores.
    pub fn open(target: &Target, path: &Path) -> AppResult<Cache> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| AppError::internal(format!("creating {}: {e}", dir.display())))?;
        }
        let name =
            path.to_str().ok_or_else(|| AppError::bad(format!("the cache path {} is not UTF-8", path.display())))?;
        let db = open_and_wait(name, &viewer_schema(target), MechanismKind::Sqlite)
            .map_err(|e| AppError::internal(format!("opening the cache {}: {e}", path.display())))?;
        Ok(Cache { db })
    }

    /// Lists the bucket now, whatever the refractory period.
    pub fn relist(&self) -> AppResult<()> {
        call(|done| self.db.prefetch("results-meta", done))
    }

    /// Writes a checkpoint of the runs' names (the library's `checkpoint`): a cold view then
    /// starts from it, in a handful of requests however many runs the bucket holds.
    pub fn checkpoint(&self) -> AppResult<CheckpointReport> {
        call(|done| self.db.checkpoint("results-meta", done))
    }

    /// The library's count of requests so far (it only grows).
    pub fn requests(&self) -> u64 {
        self.db.sync_stats(false).total()
    }

    /// The library's accounting so far, for [`Cache::spent_since`].
    pub fn accounts(&self) -> Stats {
        self.db.sync_stats(false)
    }

    /// What the requests made since `before` (an earlier [`Cache::accounts`]) cost.
    pub fn spent_since(&self, before: &Stats) -> Spent {
        let now = self.db.sync_stats(false);
        let mut spent = Stats {
            bytes_sent: now.bytes_sent.saturating_sub(before.bytes_sent),
            bytes_received: now.bytes_received.saturating_sub(before.bytes_received),
            busy_ms: now.busy_ms.saturating_sub(before.busy_ms),
            ..Stats::default()
        };
        for (kind, by_status) in &now.requests {
            for (status, count) in by_status {
                let earlier = before.requests.get(kind).and_then(|b| b.get(status)).copied().unwrap_or(0);
                if *count > earlier {
                    spent.requests.entry(kind.clone()).or_default().insert(*status, count - earlier);
                }
            }
        }
        Spent::of(&spent)
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.db.close_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::shapes::Cost;
    use serde_json::json;

    /// A view's cost is the library's own count, in the same numbers and order.
    #[test]
    fn a_views_cost_is_what_the_library_reports() {
        let mut stats = Stats { bytes_received: 37, busy_ms: 12, ..Default::default() };
        stats.requests.insert("LIST".into(), [(200, 3)].into());
        stats.requests.insert("GET".into(), [(200, 1), (404, 1)].into());
        let reported = stats.to_json();
        let cost = serde_json::to_value(Cost::of(Spent::of(&stats))).unwrap();
        let expected = json!({"requests": reported["total"], "byKind": {"GET": 2, "LIST": 3},
            "bytesIn": reported["bytesReceived"], "usd": reported["costUsd"], "usdBy": reported["costsUsd"],
            "ms": 0.0, "bucketMs": reported["busyMs"]});
        assert_eq!(cost.to_string(), expected.to_string(), "the same numbers, in the same order");
    }
}
