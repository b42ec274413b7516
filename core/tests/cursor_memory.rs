//! Part of the cursor suite, alone in its own process so that its memory reading is its own:
//! a cursor over 1,000,000 records keeps memory flat.

use objstore_db_core::{Database, Mode, OpenOptions, Query, Schema, Step};
use serde_json::json;

fn resident_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

#[test]
fn a_cursor_over_a_million_records_keeps_memory_flat() {
    const RECORDS: i64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("million.sqlite3");
    let schema =
        Schema::from_json(r#"{"stores": [{"name": "big", "keyPath": "id", "indexes": [{"keyPath": "n"}]}]}"#).unwrap();
    let mut db = Database::open(path.to_str().unwrap(), Some(schema), &OpenOptions::default()).unwrap();
    db.run(&["big"], Mode::ReadWrite, |tx| {
        for i in 0..RECORDS {
            tx.put("big", json!({"id": i, "n": i % 1000, "pad": "0123456789abcdef0123456789abcdef"}), None)?;
        }
        Ok(())
    })
    .unwrap();

    let before = resident_mb();
    let (mut peak, mut visited, mut sum) = (before, 0i64, 0i64);
    Query::from("big")
        .order("n")
        .open(&mut db, Mode::ReadOnly, |item| {
            visited += 1;
            sum += item.value["n"].as_i64().unwrap();
            if visited % 50_000 == 0 {
                peak = peak.max(resident_mb());
            }
            Ok(Step::Continue)
        })
        .unwrap();
    assert_eq!(visited, RECORDS);
    assert_eq!(sum, (0..RECORDS).map(|i| i % 1000).sum::<i64>());
    // Holding the records would take hundreds of MB; a streaming cursor holds one batch.
    assert!(peak - before < 48.0, "memory grew from {before:.1} MB to {peak:.1} MB over the cursor");
}
