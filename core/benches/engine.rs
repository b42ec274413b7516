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
//! - async_get: pipelined point gets through the executor (baseline: the synchronous core)
//!
//! Peak RSS of the bulk put is measured in a child process of its own.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use common::{measuring, median, ops_per_s, report, Figure};

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

/// Submits every get at once and waits for the last completion.
fn async_gets(db: &AsyncDatabase, ids: &[String]) {
    let left = Arc::new((AtomicUsize::new(ids.len()), Mutex::new(false), Condvar::new()));
    for id in ids {
        let key = Key::from(id.as_str());
        let left = left.clone();
        db.submit(
            move |db| db.get("bench", &key),
            move |r| {
                assert!(r.unwrap().is_some());
                if left.0.fetch_sub(1, Ordering::AcqRel) == 1 {
                    *left.1.lock().unwrap() = true;
                    left.2.notify_all();
                }
            },
        );
    }
    let mut finished = left.1.lock().unwrap();
    while !*finished {
        finished = left.2.wait(finished).unwrap();
    }
}

// ----- measuring ------------------------------------------------------------------------------

/// Peak resident memory of this process in MB. VmHWM belongs to the address space and starts
/// afresh at exec, unlike getrusage's ru_maxrss, which Linux carries over from the parent.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/self/status");
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

/// Runs one bulk put in a fresh child process and returns its peak RSS in MB.
fn bulk_put_rss_in_child(which: &str, records: usize) -> f64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("OBJSTORE_BENCH_CHILD", which)
        .env("OBJSTORE_BENCH_RECORDS", records.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "child failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

fn child(which: &str) {
    let records: usize = std::env::var("OBJSTORE_BENCH_RECORDS").unwrap().parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.sqlite3");
    match which {
        "engine" => engine_bulk_put(&mut open_engine(&path), records),
        _ => Raw::open(&path).bulk_put(records),
    }
    println!("{:.1}", peak_rss_mb());
}

fn main() {
    if let Ok(which) = std::env::var("OBJSTORE_BENCH_CHILD") {
        return child(&which);
    }
    let sizes = if measuring() {
        Sizes { records: 100_000, gets: 100_000, ranges: 100, rounds: 5 }
    } else {
        Sizes { records: 2_000, gets: 1_000, ranges: 5, rounds: 1 }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut figures = Vec::new();
    let against_raw = || "raw rusqlite doing the same work".to_string();

    // bulk put, alternating sides on fresh files each round
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    let rounds = sizes.rounds.min(3);
    for round in 1..=rounds {
        let mut db = open_engine(&dir.path().join(format!("bulk-engine-{round}.sqlite3")));
        ours.push(ops_per_s(sizes.records, || engine_bulk_put(&mut db, sizes.records)));
        let mut baseline = Raw::open(&dir.path().join(format!("bulk-raw-{round}.sqlite3")));
        raw.push(ops_per_s(sizes.records, || baseline.bulk_put(sizes.records)));
    }
    let ours_put = median(&mut ours);
    figures.push(Figure {
        name: "bulk_put",
        ops_per_s: ours_put,
        ratio: ours_put / median(&mut raw),
        against: against_raw(),
    });

    // reads go against the files of the last round, both fully written
    let engine_path = dir.path().join(format!("bulk-engine-{rounds}.sqlite3"));
    let raw_path = dir.path().join(format!("bulk-raw-{rounds}.sqlite3"));
    let mut db = open_engine(&engine_path);
    let baseline = Raw::open(&raw_path);
    let walk = ids(sizes.gets, sizes.records);

    for id in walk.iter().take(50) {
        assert_eq!(
            db.get("bench", &Key::from(id.as_str())).unwrap(),
            baseline.get(id),
            "both sides hold the same record"
        );
    }
    assert_eq!(engine_by_age(&mut db, 42), baseline.by_age(42), "both sides read the same range");
    let range_size = baseline.by_age(42).len();

    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..sizes.rounds {
        ours.push(ops_per_s(walk.len(), || {
            for id in &walk {
                assert!(db.get("bench", &Key::from(id.as_str())).unwrap().is_some());
            }
        }));
        raw.push(ops_per_s(walk.len(), || {
            for id in &walk {
                assert!(baseline.get(id).is_some());
            }
        }));
    }
    let ours_get = median(&mut ours);
    figures.push(Figure {
        name: "get",
        ops_per_s: ours_get,
        ratio: ours_get / median(&mut raw),
        against: against_raw(),
    });

    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..sizes.rounds {
        ours.push(ops_per_s(sizes.ranges, || {
            for age in 0..sizes.ranges as i64 {
                assert_eq!(engine_by_age(&mut db, age % AGES).len(), range_size);
            }
        }));
        raw.push(ops_per_s(sizes.ranges, || {
            for age in 0..sizes.ranges as i64 {
                assert_eq!(baseline.by_age(age % AGES).len(), range_size);
            }
        }));
    }
    let ours_range = median(&mut ours);
    figures.push(Figure {
        name: "index_range",
        ops_per_s: ours_range,
        ratio: ours_range / median(&mut raw),
        against: against_raw(),
    });

    // pipelined gets through the executor, against the synchronous core on the same file; each
    // side gets a freshly opened connection of its own, alone on the file, in every round
    drop(db);
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for _ in 0..sizes.rounds {
        let adb = AsyncDatabase::open(engine_path.to_str().unwrap(), None, ExecutorOptions::default(), |r| r.unwrap())
            .unwrap();
        async_gets(&adb, &walk[..walk.len().min(1000)]); // warm-up, as the sync side has
        ours.push(ops_per_s(walk.len(), || async_gets(&adb, &walk)));
        drop(adb);
        let mut sync_db = Database::open(engine_path.to_str().unwrap(), None, &OpenOptions::default()).unwrap();
        let mut sync_gets = |ids: &[String]| {
            for id in ids {
                assert!(sync_db.get("bench", &Key::from(id.as_str())).unwrap().is_some());
            }
        };
        sync_gets(&walk[..walk.len().min(1000)]);
        base.push(ops_per_s(walk.len(), || sync_gets(&walk)));
    }
    let ours_async = median(&mut ours);
    figures.push(Figure {
        name: "async_get",
        ops_per_s: ours_async,
        ratio: ours_async / median(&mut base),
        against: "the synchronous core".into(),
    });

    let engine_rss = bulk_put_rss_in_child("engine", sizes.records);
    let raw_rss = bulk_put_rss_in_child("raw", sizes.records);
    let mut extra = serde_json::Map::new();
    extra.insert("bulk_put_peak_rss_mb".into(), json!({"objstore_db": engine_rss, "raw_rusqlite": raw_rss}));
    let title = format!(
        "engine benchmark ({} records, ranges of {range_size} records, median of {} rounds)",
        sizes.records, sizes.rounds
    );
    report(&title, "engine", &figures, extra);
}
