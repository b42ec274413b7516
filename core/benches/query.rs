//! Query benchmark, measured in the same run as its baseline.
//!
//! `cargo bench -p objstore-db-core --bench query` prints the figures and writes
//! `target/bench/query.json`; under `cargo test` it runs a small smoke version.
//!
//! - order_list20: `from(s).where(platform = P).order(age).list(20)` through the compound index
//!   (platform, age) over 100,000 records, against raw rusqlite with an equivalent table and
//!   index (`SELECT v ... WHERE platform = ? ORDER BY age, id LIMIT 20`). Ratio: ours / raw.
//! - sql_by_age: `SELECT * FROM runs WHERE age = ?` (one record, through the index on age) as SQL
//!   text with a parameter, against the same query from the builder (`from(s).where(age = A)`).
//!   Ratio: SQL / builder (what parsing costs once a text has been seen).
//! - paging: all 100,000 records in `list(100)` pages ordered by an index. Ratio: the time of
//!   the first pages over the time of the last ones (1.0 = a late page costs what an early one
//!   does; the target is at least 0.5).

mod common;

use std::path::Path;

use common::{child_dir, child_task, in_child, measuring, median, ops_per_s, paired_medians, report, seconds, Figure};
use objstore_db_core::sql::{self, SqlOutput};
use objstore_db_core::{Database, Mode, Op, OpenOptions, Query, Schema};
use rusqlite::{params, Connection, OpenFlags};
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"stores": [{"name": "runs", "keyPath": "id", "indexes": [
  {"keyPath": ["platform", "age"]}, {"keyPath": "age"}
]}]}"#;
const PLATFORMS: usize = 50;
const PAGE: usize = 100;

fn record(i: usize) -> Value {
    json!({
        "id": format!("r{i:08}"),
        "platform": format!("platform-{:02}", (i * 7) % PLATFORMS),
        "age": (i * 7919) % 100_000,
        "browser": "rust",
        "payload": "x".repeat(64),
    })
}

fn open_engine(path: &Path, records: usize) -> Database {
    let schema = Schema::from_json(SCHEMA).unwrap();
    let mut db = Database::open(path.to_str().unwrap(), Some(schema), &OpenOptions::default()).unwrap();
    db.run(&["runs"], Mode::ReadWrite, |tx| {
        for i in 0..records {
            tx.put("runs", record(i), None)?;
        }
        Ok(())
    })
    .unwrap();
    db
}

/// The hand-written equivalent: a table with the filtered and ordered columns, a composite
/// index, the record as JSON.
fn open_raw(path: &Path, records: usize) -> Connection {
    let mut conn = raw_connection(path);
    conn.execute_batch(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, platform TEXT NOT NULL, age INTEGER NOT NULL, v BLOB NOT NULL) WITHOUT ROWID;
         CREATE INDEX runs_platform_age ON runs (platform, age, id);",
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx.prepare("INSERT INTO runs (id, platform, age, v) VALUES (?1, ?2, ?3, ?4)").unwrap();
        for i in 0..records {
            let r = record(i);
            insert
                .execute(params![
                    r["id"].as_str(),
                    r["platform"].as_str(),
                    r["age"].as_i64(),
                    serde_json::to_vec(&r).unwrap()
                ])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    conn
}

/// A connection with the engine's open flags and pragmas.
fn raw_connection(path: &Path) -> Connection {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;").unwrap();
    conn
}

fn raw_first_20(conn: &Connection, platform: &str) -> Vec<Value> {
    let mut stmt = conn.prepare_cached("SELECT v FROM runs WHERE platform = ?1 ORDER BY age, id LIMIT 20").unwrap();
    let rows = stmt.query_map([platform], |r| r.get::<_, Vec<u8>>(0)).unwrap();
    rows.map(|b| serde_json::from_slice(&b.unwrap()).unwrap()).collect()
}

fn ours_first_20(db: &mut Database, platform: &str) -> Vec<Value> {
    Query::from("runs").filter("platform", Op::Eq, platform).order("age").list(db, 20).unwrap()
}

fn builder_by_age(db: &mut Database, age: usize) -> Vec<Value> {
    Query::from("runs").filter("age", Op::Eq, age as i64).list(db, usize::MAX).unwrap()
}

fn sql_by_age(db: &mut Database, age: usize) -> Vec<Value> {
    match sql::execute(db, "SELECT * FROM runs WHERE age = ?", &[json!(age)]).unwrap() {
        SqlOutput::Rows(rows) => rows,
        other => panic!("a SELECT gives rows, not {other:?}"),
    }
}

/// Seconds per page over one pass through every record, in page order.
fn page_times(db: &mut Database, page: usize) -> Vec<f64> {
    let mut q = Query::from("runs").order("age");
    let mut times = Vec::new();
    loop {
        let mut n = 0;
        times.push(seconds(|| n = q.list(db, page).unwrap().len()));
        if n < page {
            return times;
        }
    }
}

/// One measurement, in a process of its own; prints its numbers.
fn child(task: &str, records: usize, lookups: usize) {
    let dir = child_dir();
    // Ages that are there: record i has age (i * 7919) % 100,000.
    let ages: Vec<usize> = (0..lookups).map(|i| ((i * 37) % records * 7919) % 100_000).collect();
    let platforms: Vec<String> = (0..lookups).map(|i| format!("platform-{:02}", (i * 13) % PLATFORMS)).collect();
    let numbers = match task {
        "order_list20:ours" => {
            let mut db =
                Database::open(dir.join("query.sqlite3").to_str().unwrap(), None, &OpenOptions::default()).unwrap();
            ours_first_20(&mut db, &platforms[0]);
            vec![ops_per_s(platforms.len(), || {
                platforms.iter().for_each(|p| assert_eq!(ours_first_20(&mut db, p).len(), 20))
            })]
        }
        "order_list20:raw" => {
            let raw = raw_connection(&dir.join("raw.sqlite3"));
            raw_first_20(&raw, &platforms[0]);
            vec![ops_per_s(platforms.len(), || {
                platforms.iter().for_each(|p| assert_eq!(raw_first_20(&raw, p).len(), 20))
            })]
        }
        "sql_by_age:sql" => {
            let mut db =
                Database::open(dir.join("query.sqlite3").to_str().unwrap(), None, &OpenOptions::default()).unwrap();
            vec![ops_per_s(ages.len(), || ages.iter().for_each(|a| assert_eq!(sql_by_age(&mut db, *a).len(), 1)))]
        }
        "sql_by_age:builder" => {
            let mut db =
                Database::open(dir.join("query.sqlite3").to_str().unwrap(), None, &OpenOptions::default()).unwrap();
            vec![ops_per_s(ages.len(), || ages.iter().for_each(|a| assert_eq!(builder_by_age(&mut db, *a).len(), 1)))]
        }
        "paging:ours" => {
            // The first and last tenth of the pages: their median times, and pages per second.
            let mut db =
                Database::open(dir.join("query.sqlite3").to_str().unwrap(), None, &OpenOptions::default()).unwrap();
            let mut times = page_times(&mut db, PAGE);
            times.pop(); // the empty page that says the end
            let tenth = (times.len() / 10).max(1);
            let first = median(&mut times[..tenth].to_vec());
            let last = median(&mut times[times.len() - tenth..].to_vec());
            vec![first, last, times.len() as f64 / times.iter().sum::<f64>()]
        }
        other => panic!("unknown benchmark task {other}"),
    };
    println!("{}", numbers.iter().map(f64::to_string).collect::<Vec<_>>().join(" "));
}

fn main() {
    let (records, lookups, rounds) = if measuring() { (100_000, 2_000, 5) } else { (2_000, 50, 1) };
    if let Some(task) = child_task() {
        return child(&task, records, lookups);
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    {
        let mut db = open_engine(&dir.join("query.sqlite3"), records);
        let raw = open_raw(&dir.join("raw.sqlite3"), records);
        let plan = Query::from("runs").filter("platform", Op::Eq, "platform-07").order("age").explain(&mut db).unwrap();
        assert!(plan.to_string().contains("scan index \"platform, age\"") && plan.sort.is_none(), "{plan}");
        for i in 0..10 {
            let p = format!("platform-{:02}", (i * 13) % PLATFORMS);
            assert_eq!(ours_first_20(&mut db, &p), raw_first_20(&raw, &p), "both sides return the same 20 records");
            let age = (i * 7919) % 100_000;
            assert_eq!(sql_by_age(&mut db, age), builder_by_age(&mut db, age), "SQL returns the builder's record");
        }
        let pages = page_times(&mut db, PAGE).len();
        assert_eq!(pages, records / PAGE + 1, "paging reaches every record, then an empty page");
    }

    let (ours, raw) = paired_medians(rounds, dir, "order_list20:ours", "order_list20:raw");
    let order_list20 = Figure {
        name: "order_list20",
        ops_per_s: ours,
        ratio: ours / raw,
        against: "raw rusqlite, equivalent table and index".into(),
    };

    let (sql, builder) = paired_medians(rounds, dir, "sql_by_age:sql", "sql_by_age:builder");
    let sql_by_age = Figure {
        name: "sql_by_age",
        ops_per_s: sql,
        ratio: sql / builder,
        against: "the query builder, same query".into(),
    };

    let (mut first, mut last, mut pages_per_s) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let n = in_child("paging:ours", dir);
        first.push(n[0]);
        last.push(n[1]);
        pages_per_s.push(n[2]);
    }
    let (first, last) = (median(&mut first), median(&mut last));
    let paging = Figure {
        name: "paging",
        ops_per_s: median(&mut pages_per_s),
        ratio: first / last,
        against: format!(
            "first-page time / last-page time: {:.0} µs vs {:.0} µs per page of {PAGE}",
            first * 1e6,
            last * 1e6
        ),
    };
    report(
        &format!("query benchmark ({records} records, median of {rounds} rounds, each in its own process)"),
        "query",
        &[order_list20, sql_by_age, paging],
        serde_json::Map::new(),
    );
}
