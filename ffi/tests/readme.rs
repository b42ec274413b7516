//! The README's Rust lines ("Use the library"), run as written, with their paths in a
//! temporary directory: a record written to a store synced with a `file://` bucket lands as
//! `DIR/BUCKET/KEY`, a flush reports it settled, and it reads back.

use objstore_db::rsapi::{AsValue, Db, Freshness, OpenOptions};
use objstore_db_core::{Key, Result, Schema};
use serde_json::json;

fn wait<T: Send + 'static>(request: impl FnOnce(Box<dyn FnOnce(Result<T>) + Send>) -> Result<u64>) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    request(Box::new(move |r| tx.send(r).unwrap()))?;
    rx.recv().unwrap()
}

#[test]
fn the_readme_rust_path_runs() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let buckets = format!("file://{}", dir.path().join("buckets").display());
    let file = dir.path().join("notes.sqlite3").display().to_string();

    let schema = Schema::from_json(&format!(
        r#"{{"stores": [{{"name": "notes", "Sync": {{"format": "objstore",
        "Options": {{"bucket": "notes", "endpoint": "{buckets}"}}}}}}]}}"#
    ))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let db = Db::open(&file, Some(schema), &OpenOptions::default(), move |r| tx.send(r).unwrap())?;
    rx.recv()??;
    wait(|done| db.put(None, "notes", json!({"text": "hello"}), Some(Key::from("n1")), done))?;
    let report = wait(|done| db.flush(done))?;
    let record = wait(|done| db.get(None, "notes", Key::from("n1"), Freshness::Cached, AsValue, done))?;

    assert_eq!((report.pending, report.refused), (0, 0), "{report:?}");
    assert_eq!(record, json!({"text": "hello"}));
    let object = std::fs::read_to_string(dir.path().join("buckets/notes/n1"))?;
    assert_eq!(serde_json::from_str::<serde_json::Value>(&object)?, json!({"text": "hello"}));
    Ok(())
}
