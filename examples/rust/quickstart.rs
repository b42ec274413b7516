//! Quickstart: the results app's flow on the embedded default. A test reporter writes results
//! as objects into a bucket — here a local directory that behaves as one (`file://`) — and a
//! viewer with a database of its own reads them back through its cache: the newest run per
//! platform/runtime pair from the object metadata, then those results, shown as a feature
//! matrix with the requests it took.
//!
//! The database does no I/O but SQLite: writes to synced stores wait in its outbox, and the
//! sync agent (here driven on this thread; `objstore_db::rsapi` runs it on threads of its own)
//! sends them and fetches what reads need.
//!
//!     cargo run --release --example quickstart [path/to/reporter.sqlite3]

use std::path::Path;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use objstore_db_core::sync::{Agent, Freshness, Token};
use objstore_db_core::{
    AsyncDatabase, Database, ExecutorOptions, Key, KeyRange, Mode, OpenOptions, ScanOptions, Schema,
};
use serde_json::{json, Value};

const SUITES: [&str; 6] = ["crud", "cursor", "event", "transaction", "query", "sql"];
/// A far-future epoch (ms): `FAR - now` puts the newest run first within a pair.
const FAR: u128 = 9_999_999_999_999;

/// The reporter's and the viewer's schema: results as immutable objects, and a read-only store
/// of object metadata (from the listing and the key layout) with the indexes the view needs.
fn schema(bucket_dir: &Path) -> Result<Schema, objstore_db_core::Error> {
    let options = json!({"bucket": "results", "endpoint": format!("file://{}", bucket_dir.display())});
    let mut meta_options = options.clone();
    meta_options["keyLayout"] = json!("{platform}/{browser}/{run}");
    let mut result_options = options;
    result_options["metadata"] = json!(["platform", "browser", "version"]);
    Schema::from_json(
        &json!({"version": 1, "stores": [
            {"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": result_options}},
            {"name": "results-meta", "keyPath": "name", "indexes": [
                {"name": "platform", "keyPath": "metadata.platform"},
                {"name": "platform, browser", "keyPath": ["metadata.platform", "metadata.browser"]}],
             "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": meta_options}}
        ]})
        .to_string(),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "quickstart.sqlite3".into());
    let bucket_dir = Path::new(&path).with_extension("bucket");
    let viewer_path = Path::new(&path).with_extension("viewer.sqlite3");

    // The reporter: one object per run at <platform>/<browser>/<reverse timestamp>.
    let mut reporter = Database::open(&path, Some(schema(&bucket_dir)?), &OpenOptions::default())?;
    let runs = [
        ("linux-x86_64", "rust", [true, true, false, true, true, false]),
        ("linux-x86_64", "rust", [true, true, true, true, true, true]),
        ("linux-x86_64", "python-3.11", [true, true, true, true, false, true]),
        ("linux-x86_64", "node-20", [true, false, true, true, true, true]),
        ("macos-arm64", "c", [true, true, true, false, true, true]),
    ];
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    reporter.run(&["results"], Mode::ReadWrite, |tx| {
        for (i, (platform, browser, passed)) in runs.iter().enumerate() {
            let suites: serde_json::Map<_, _> =
                SUITES.iter().zip(passed).map(|(s, p)| (s.to_string(), json!(p))).collect();
            let name = format!("{platform}/{browser}/{:013}", FAR - now - i as u128);
            let record = json!({"platform": platform, "browser": browser, "version": "0.1.0", "suites": suites});
            tx.add("results", record, Some(name.as_str().into()))?;
        }
        Ok(())
    })?;
    let sent = Agent::new(&mut reporter)?.flush(&mut reporter, &Token::default())?;
    assert_eq!(sent.pending, 0, "every result reached the bucket");
    println!("reporter: {} results written to file://{}", runs.len(), bucket_dir.join("results").display());

    // The viewer, with a cache of its own: the seed's home view.
    let mut viewer =
        Database::open(viewer_path.to_str().unwrap(), Some(schema(&bucket_dir)?), &OpenOptions::default())?;
    let agent = Agent::new(&mut viewer)?;
    for view in ["cold", "again"] {
        let rows = home_view(&mut viewer, &agent)?;
        let stats = agent.take_stats();
        if view == "cold" {
            print_matrix(&rows);
        }
        println!(
            "{view} view: {} requests ({} LIST, {} GET), {} bytes in",
            stats.total(),
            stats.count("LIST"),
            stats.count("GET"),
            stats.bytes_received
        );
    }
    let linux =
        viewer.count("results-meta", &ScanOptions::new().index("platform").range(KeyRange::only("linux-x86_64")))?;
    println!("{linux} runs on linux-x86_64 in the bucket");
    drop(viewer);

    // The same database through the executor: every request completes through a callback.
    let (done, wait) = mpsc::channel();
    let adb = AsyncDatabase::open(viewer_path.to_str().unwrap(), None, ExecutorOptions::default(), |opened| {
        opened.expect("database opens")
    })?;
    adb.submit(
        |db| {
            db.keys("results-meta", &ScanOptions::new().index("platform").range(KeyRange::only("macos-arm64")).limit(1))
        },
        move |result| done.send(result).unwrap(),
    )?;
    let newest_mac = wait.recv()??;
    println!("asynchronous read: newest macos-arm64 run is {}", newest_mac[0]);
    Ok(())
}

/// The newest run per platform/runtime pair (the compound index, unique), then those results:
/// the agent lists the bucket when the metadata is stale and fetches the results not cached.
fn home_view(db: &mut Database, agent: &Agent) -> Result<Vec<Value>, objstore_db_core::Error> {
    agent.refresh(db, "results-meta", &Token::default())?;
    let newest: Vec<Key> =
        db.keys("results-meta", &ScanOptions::new().index("platform, browser").unique().limit(50))?;
    agent.fetch(db, "results", &newest, Freshness::Cached, &Token::default())?;
    Ok(db.values_of("results", &newest)?.into_iter().flatten().collect())
}

fn print_matrix(rows: &[Value]) {
    println!("\n{:<28} {}", "platform / runtime", SUITES.map(|s| format!("{s:<12}")).join(""));
    for row in rows {
        let cells: String =
            SUITES.iter().map(|s| format!("{:<12}", if row["suites"][s] == true { "pass" } else { "FAIL" })).collect();
        let pair = format!("{} / {}", row["platform"].as_str().unwrap_or("?"), row["browser"].as_str().unwrap_or("?"));
        println!("{pair:<28} {cells}");
    }
    println!();
}
