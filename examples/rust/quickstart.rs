//! Quickstart: open a database file, define stores with indexes, write test results, query
//! them the way the results page does, and print a small feature matrix.
//!
//!     cargo run --example quickstart [path/to/file.sqlite3]

use std::sync::mpsc;

use objstore_db_core::{
    AsyncDatabase, Database, ExecutorOptions, Key, KeyRange, Mode, OpenOptions, ScanOptions, Schema,
};
use serde_json::json;

const SCHEMA: &str = r#"{
  "version": 1,
  "stores": [
    {"name": "results", "keyPath": "id", "indexes": [
      {"keyPath": "platform"},
      {"keyPath": "browser"},
      {"keyPath": ["platform", "browser"]}
    ]}
  ]
}"#;

const SUITES: [&str; 6] = ["crud", "cursor", "event", "transaction", "query", "sql"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "quickstart.sqlite3".into());
    let mut db = Database::open(&path, Some(Schema::from_json(SCHEMA)?), &OpenOptions::default())?;

    // Two runs per platform/runtime pair; the key sorts the newest run first within a pair.
    let runs = [
        ("linux-x86_64", "rust", 2, [true, true, true, true, true, true]),
        ("linux-x86_64", "rust", 1, [true, true, false, true, true, false]),
        ("linux-x86_64", "python-3.11", 1, [true, true, true, true, false, true]),
        ("linux-x86_64", "node-20", 1, [true, false, true, true, true, true]),
        ("macos-arm64", "c", 1, [true, true, true, false, true, true]),
    ];
    db.run(&["results"], Mode::ReadWrite, |tx| {
        for (platform, browser, run, passed) in &runs {
            let suites: serde_json::Map<_, _> =
                SUITES.iter().zip(passed).map(|(s, p)| (s.to_string(), json!(p))).collect();
            let id = format!("{platform}/{browser}/{:04}", 9999 - run);
            tx.put("results", json!({"id": id, "platform": platform, "browser": browser, "suites": suites}), None)?;
        }
        Ok(())
    })?;

    // The home view: one newest run per platform/runtime pair, via the compound index.
    let newest = db.keys("results", &ScanOptions::new().index("platform, browser").unique().limit(50))?;
    let rows = db.values_of("results", &newest)?;
    println!("{:<28} {}", "platform / runtime", SUITES.map(|s| format!("{s:<12}")).join(""));
    for row in rows.into_iter().flatten() {
        let cells: String =
            SUITES.iter().map(|s| format!("{:<12}", if row["suites"][s] == true { "pass" } else { "FAIL" })).collect();
        println!(
            "{:<28} {cells}",
            format!("{} / {}", row["platform"].as_str().unwrap(), row["browser"].as_str().unwrap())
        );
    }
    let linux = db.count("results", &ScanOptions::new().index("platform").range(KeyRange::only("linux-x86_64")))?;
    println!("\n{linux} runs on linux-x86_64; database file {path}");
    drop(db);

    // The same database through the executor: every request completes through a callback.
    let (done, wait) = mpsc::channel();
    let adb = AsyncDatabase::open(&path, None, ExecutorOptions::default(), |opened| opened.expect("database opens"))?;
    adb.submit(|db| db.get("results", &Key::from("macos-arm64/c/9998")), move |result| done.send(result).unwrap());
    let record = wait.recv()??.expect("the macOS run is there");
    println!("asynchronous get: macos-arm64/c passed sql = {}", record["suites"]["sql"]);
    Ok(())
}
