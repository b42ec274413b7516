//! Engine benchmark: objstore-db against raw rusqlite doing the same work, measured in the same
//! run so that the ratios hold on a noisy machine.
//!
//! `cargo bench -p objstore-db-core --bench engine` prints each figure and writes
//! `target/bench/engine.json`. Without `--bench` (as under `cargo test`) it runs a small smoke
//! version that checks both sides return the same data and writes nothing.
//!
//! Figures (ratio = objstore-db / baseline; higher is better):
//! - get: point get by primary key (baseline: raw rusqlite)
//! - bulk_put: 100,000 records with two indexes in one transaction (baseline: raw rusqlite)
//! - index_range: 1,000 records through an index (baseline: raw rusqlite)
//! - async_get: pipelined point gets through the executor's `read`, which answers on the caller's
//!   thread while nothing is queued (baseline: the synchronous core)
//! - async_get_queued: the same gets, each queued for the worker (`submit`), as every request was
//!   before reads ran on the caller's thread (baseline: the synchronous core)
//!
//! Peak RSS of the bulk put is measured in a child process of its own.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use common::{
    child_dir, child_task, in_child, measuring, median, ops_per_s, paired_medians, peak_rss_mb, report, Figure,
};

use objstore_db_core::{
    AsyncDatabase, Database, ExecutorOptions, Key, KeyRange, Mode, OpenOptions, ScanOptions, Schema,
};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde_json::{json, Value};

const SCHEMA: &str =
    r#"{"stores": [{"name": "bench", "keyPath": "id", "indexes": [{"keyPath": "city"}, {"keyPath": "age"}]}]}"#;
const CITIES: usize = 50;
const AGES: i64 = 100;

struct Sizes {
    records: usize,
    gets: usize,
    ranges: usize,
    rounds: usize,
}

fn record(i: usize) -> Value {
    json!({
        "id": format!("r{i:08}"),
        "city": format!("city-{:02}", i % CITIES),
        "age": (i as i64 * 7919) % AGES,
        "name": format!("person number {i}"),
        "payload": "x".repeat(64),
    })
}

/// A fixed pseudo-random walk over the ids, the same for both sides.
fn ids(count: usize, records: usize) -> Vec<String> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("r{:08}", x as usize % records)
        })
        .collect()
}

// ----- the baseline: what a careful hand-written rusqlite program does ---------------------

struct Raw {
    conn: Connection,
}

impl Raw {
    fn open(path: &Path) -> Raw {
        // The same open flags and pragmas as the engine's SQLite mechanism.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;
             CREATE TABLE IF NOT EXISTS data (k TEXT NOT NULL PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS idx_city (ik TEXT NOT NULL, pk TEXT NOT NULL, PRIMARY KEY (ik, pk)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS idx_age (ik INTEGER NOT NULL, pk TEXT NOT NULL, PRIMARY KEY (ik, pk)) WITHOUT ROWID;",
        )
        .unwrap();
        Raw { conn }
    }

    /// Upserts keeping both indexes right: read the old record, drop its index entries, write.
    fn bulk_put(&mut self, n: usize) {
        let tx = self.conn.transaction().unwrap();
        {
            let mut old = tx.prepare_cached("SELECT v FROM data WHERE k = ?1").unwrap();
            let mut put = tx.prepare_cached("INSERT OR REPLACE INTO data (k, v) VALUES (?1, ?2)").unwrap();
            let mut del_city = tx.prepare_cached("DELETE FROM idx_city WHERE ik = ?1 AND pk = ?2").unwrap();
            let mut del_age = tx.prepare_cached("DELETE FROM idx_age WHERE ik = ?1 AND pk = ?2").unwrap();
            let mut ins_city = tx.prepare_cached("INSERT OR IGNORE INTO idx_city (ik, pk) VALUES (?1, ?2)").unwrap();
            let mut ins_age = tx.prepare_cached("INSERT OR IGNORE INTO idx_age (ik, pk) VALUES (?1, ?2)").unwrap();
            for i in 0..n {
                let rec = record(i);
                let id = rec["id"].as_str().unwrap();
                let previous: Option<Vec<u8>> = old.query_row([id], |r| r.get(0)).optional().unwrap();
                if let Some(bytes) = previous {
                    let prev: Value = serde_json::from_slice(&bytes).unwrap();
                    del_city.execute(params![prev["city"].as_str(), id]).unwrap();
                    del_age.execute(params![prev["age"].as_i64(), id]).unwrap();
                }
                put.execute(params![id, serde_json::to_vec(&rec).unwrap()]).unwrap();
                ins_city.execute(params![rec["city"].as_str(), id]).unwrap();
                ins_age.execute(params![rec["age"].as_i64(), id]).unwrap();
            }
        }
        tx.commit().unwrap();
    }

    fn get(&self, id: &str) -> Option<Value> {
        let mut stmt = self.conn.prepare_cached("SELECT v FROM data WHERE k = ?1").unwrap();
        let bytes: Option<Vec<u8>> = stmt.query_row([id], |r| r.get(0)).optional().unwrap();
        bytes.map(|b| serde_json::from_slice(&b).unwrap())
    }

    fn by_age(&self, age: i64) -> Vec<Value> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT d.v FROM idx_age AS i JOIN data AS d ON d.k = i.pk WHERE i.ik = ?1 ORDER BY i.pk")
            .unwrap();
        let rows = stmt.query_map([age], |r| r.get::<_, Vec<u8>>(0)).unwrap();
        rows.map(|b| serde_json::from_slice(&b.unwrap()).unwrap()).collect()
    }
}

// ----- objstore-db --------------------------------------------------------------------------

fn open_engine(path: &Path) -> Database {
    Database::open(path.to_str().unwrap(), Some(Schema::from_json(SCHEMA).unwrap()), &OpenOptions::default()).unwrap()
}

fn engine_bulk_put(db: &mut Database, n: usize) {
    db.run(&["bench"], Mode::ReadWrite, |tx| {
        for i in 0..n {
            tx.put("bench", record(i), None)?;
        }
        Ok(())
    })
    .unwrap();
}

fn engine_by_age(db: &mut Database, age: i64) -> Vec<Value> {
    db.values("bench", &ScanOptions::new().index("age").range(KeyRange::only(age))).unwrap()
}

/// Makes every get at once, as reads (`read`: on this thread while nothing is queued) or as
/// queued requests (`submit`), and waits for the last completion.
fn async_gets(db: &AsyncDatabase, ids: &[String], queued: bool) {
    let left = Arc::new((AtomicUsize::new(ids.len()), Mutex::new(false), Condvar::new()));
    for id in ids {
        let key = Key::from(id.as_str());
        let left = left.clone();
        let get = move |db: &mut Database| db.get("bench", &key);
        let done = move |r: objstore_db_core::Result<Option<Value>>| {
            assert!(r.unwrap().is_some());
            if left.0.fetch_sub(1, Ordering::AcqRel) == 1 {
                *left.1.lock().unwrap() = true;
                left.2.notify_all();
            }
        };
        if queued {
            db.submit(get, done).unwrap();
        } else {
            db.read(&["bench"], get, done).unwrap();
        }
    }
    let mut finished = left.1.lock().unwrap();
    while !*finished {
        finished = left.2.wait(finished).unwrap();
    }
}

// ----- measuring ------------------------------------------------------------------------------

/// Removes a database file and its WAL companions, so a bulk put starts from nothing.
fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// One measurement, in a process of its own; prints its numbers.
fn child(task: &str, sizes: &Sizes) {
    let dir = child_dir();
    let (engine_path, raw_path) = (dir.join("engine.sqlite3"), dir.join("raw.sqlite3"));
    let walk = ids(sizes.gets, sizes.records);
    let warm = &walk[..walk.len().min(1000)];
    let numbers = match task {
        "bulk_put:ours" => {
            remove_database(&engine_path);
            let mut db = open_engine(&engine_path);
            vec![ops_per_s(sizes.records, || engine_bulk_put(&mut db, sizes.records)), peak_rss_mb()]
        }
        "bulk_put:raw" => {
            remove_database(&raw_path);
            let mut raw = Raw::open(&raw_path);
            vec![ops_per_s(sizes.records, || raw.bulk_put(sizes.records)), peak_rss_mb()]
        }
        "get:ours" | "async_get:sync" => {
            let mut db = Database::open(engine_path.to_str().unwrap(), None, &OpenOptions::default()).unwrap();
            let mut gets = |ids: &[String]| {
                for id in ids {
                    assert!(db.get("bench", &Key::from(id.as_str())).unwrap().is_some());
                }
            };
            gets(warm);
            vec![ops_per_s(walk.len(), || gets(&walk))]
        }
        "get:raw" => {
            let raw = Raw::open(&raw_path);
            let gets = |ids: &[String]| ids.iter().for_each(|id| assert!(raw.get(id).is_some()));
            gets(warm);
            vec![ops_per_s(walk.len(), || gets(&walk))]
        }
        "index_range:ours" => {
            let mut db = open_engine(&engine_path);
            engine_by_age(&mut db, 0);
            vec![ops_per_s(sizes.ranges, || {
                for age in 0..sizes.ranges as i64 {
                    assert!(!engine_by_age(&mut db, age % AGES).is_empty());
                }
            })]
        }
        "index_range:raw" => {
            let raw = Raw::open(&raw_path);
            raw.by_age(0);
            vec![ops_per_s(sizes.ranges, || {
                for age in 0..sizes.ranges as i64 {
                    assert!(!raw.by_age(age % AGES).is_empty());
                }
            })]
        }
        "async_get:ours" | "async_get_queued:ours" => {
            let queued = task == "async_get_queued:ours";
            let db =
                AsyncDatabase::open(engine_path.to_str().unwrap(), None, ExecutorOptions::default(), |r| r.unwrap())
                    .unwrap();
            async_gets(&db, warm, queued);
            vec![ops_per_s(walk.len(), || async_gets(&db, &walk, queued))]
        }
        other => panic!("unknown benchmark task {other}"),
    };
    println!("{}", numbers.iter().map(f64::to_string).collect::<Vec<_>>().join(" "));
}

fn main() {
    let sizes = if measuring() {
        Sizes { records: 100_000, gets: 100_000, ranges: 100, rounds: 5 }
    } else {
        Sizes { records: 2_000, gets: 1_000, ranges: 5, rounds: 1 }
    };
    if let Some(task) = child_task() {
        return child(&task, &sizes);
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let against_raw = || "raw rusqlite doing the same work".to_string();
    let mut figures = Vec::new();

    // Bulk put: every round writes both files afresh; the reads below use the last round's.
    let (mut ours, mut raw, mut ours_rss, mut raw_rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..sizes.rounds.min(3) {
        let o = in_child("bulk_put:ours", dir);
        let r = in_child("bulk_put:raw", dir);
        ours.push(o[0]);
        ours_rss.push(o[1]);
        raw.push(r[0]);
        raw_rss.push(r[1]);
    }
    let ours_put = median(&mut ours);
    figures.push(Figure {
        name: "bulk_put",
        ops_per_s: ours_put,
        ratio: ours_put / median(&mut raw),
        against: against_raw(),
    });

    // Both sides hold the same records and answer ranges alike.
    let range_size = {
        let mut db = open_engine(&dir.join("engine.sqlite3"));
        let raw = Raw::open(&dir.join("raw.sqlite3"));
        for id in ids(50, sizes.records) {
            assert_eq!(
                db.get("bench", &Key::from(id.as_str())).unwrap(),
                raw.get(&id),
                "both sides hold the same record"
            );
        }
        assert_eq!(engine_by_age(&mut db, 42), raw.by_age(42), "both sides read the same range");
        raw.by_age(42).len()
    };

    for (name, ours, baseline, against) in [
        ("get", "get:ours", "get:raw", against_raw()),
        ("index_range", "index_range:ours", "index_range:raw", against_raw()),
        ("async_get", "async_get:ours", "async_get:sync", "the synchronous core".to_string()),
        ("async_get_queued", "async_get_queued:ours", "async_get:sync", "the synchronous core".to_string()),
    ] {
        let (o, b) = paired_medians(sizes.rounds, dir, ours, baseline);
        figures.push(Figure { name, ops_per_s: o, ratio: o / b, against });
    }

    let mut extra = serde_json::Map::new();
    extra.insert(
        "bulk_put_peak_rss_mb".into(),
        json!({"objstore_db": median(&mut ours_rss), "raw_rusqlite": median(&mut raw_rss)}),
    );
    let title = format!(
        "engine benchmark ({} records, ranges of {range_size} records, median of {} rounds, each side in its own process)",
        sizes.records, sizes.rounds
    );
    report(&title, "engine", &figures, extra);
}
