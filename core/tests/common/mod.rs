//! Shared set-up for the suites: a database in a fresh temporary directory, on either
//! mechanism, and `for_each_mechanism!` to run one test body on both.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use objstore_db_core::{AsyncDatabase, Database, ExecutorOptions, MechanismKind, OpenOptions, Result, Schema};
use serde_json::Value;
use tempfile::TempDir;

/// The schema most tests use: inline and generated keys, every kind of index.
pub const PEOPLE: &str = r#"{
  "version": 1,
  "stores": [
    {"name": "people", "keyPath": "id", "indexes": [
      {"keyPath": "name"},
      {"keyPath": "email", "unique": true},
      {"keyPath": ["city", "age"]},
      {"keyPath": "tags", "multiEntry": true},
      {"keyPath": "address.zip"}
    ]},
    {"name": "notes", "autoIncrement": true},
    {"name": "counters"},
    {"name": "generated", "keyPath": "meta.id", "autoIncrement": true}
  ]
}"#;

pub struct TestDb {
    pub db: Database,
    pub kind: MechanismKind,
    pub path: PathBuf,
    dir: TempDir,
}

impl std::ops::Deref for TestDb {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.db
    }
}

impl std::ops::DerefMut for TestDb {
    fn deref_mut(&mut self) -> &mut Database {
        &mut self.db
    }
}

impl TestDb {
    /// Closes and opens the same database again (same file for sqlite). The temporary
    /// directory stays, so a failed reopen can be followed by another.
    pub fn reopen(mut self, schema: Option<&str>) -> Result<TestDb> {
        self.try_reopen(schema)?;
        Ok(self)
    }

    pub fn try_reopen(&mut self, schema: Option<&str>) -> Result<()> {
        let placeholder = Database::open("closed", None, &options(MechanismKind::Memory))?;
        drop(std::mem::replace(&mut self.db, placeholder));
        self.db = Database::open(self.path.to_str().unwrap(), schema.map(parse).transpose()?, &options(self.kind))?;
        Ok(())
    }
}

pub fn options(kind: MechanismKind) -> OpenOptions {
    OpenOptions { mechanism: kind, ..Default::default() }
}

pub fn parse(schema: &str) -> Result<Schema> {
    Schema::from_json(schema)
}

pub fn try_open(kind: MechanismKind, schema: Option<&str>) -> Result<TestDb> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("test.sqlite3");
    let db = Database::open(path.to_str().unwrap(), schema.map(parse).transpose()?, &options(kind))?;
    Ok(TestDb { db, kind, path, dir })
}

pub fn open(kind: MechanismKind, schema: Option<&str>) -> TestDb {
    try_open(kind, schema).expect("database opens")
}

pub fn people(kind: MechanismKind) -> TestDb {
    open(kind, Some(PEOPLE))
}

/// A temporary path for a database file, kept alive by the returned directory.
pub fn temp_path() -> (TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("async.sqlite3").to_str().unwrap().to_string();
    (dir, path)
}

pub fn person(id: i64, name: &str, email: &str, city: &str, age: i64) -> Value {
    serde_json::json!({"id": id, "name": name, "email": email, "city": city, "age": age, "tags": [], "address": {"zip": format!("{:05}", id)}})
}

/// Submits `work` and waits for its completion.
pub fn call<T, W>(db: &AsyncDatabase, work: W) -> Result<T>
where
    T: Send + 'static,
    W: FnOnce(&mut Database) -> Result<T> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    db.submit(work, move |r| tx.send(r).unwrap()).unwrap();
    rx.recv_timeout(Duration::from_secs(30)).expect("completion arrives")
}

/// Defines one test module per name with a test for each mechanism, so that a failure reads
/// `suite::what_it_proves::sqlite`.
#[macro_export]
macro_rules! for_each_mechanism {
    ($( $(#[$meta:meta])* fn $name:ident($kind:ident) $body:block )*) => {
        $(
            $(#[$meta])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                fn body($kind: objstore_db_core::MechanismKind) $body
                #[test]
                fn sqlite() { body(objstore_db_core::MechanismKind::Sqlite) }
                #[test]
                fn memory() { body(objstore_db_core::MechanismKind::Memory) }
            }
        )*
    };
}

/// A database with the PEOPLE schema at `path` on its worker thread, once it is open.
#[allow(dead_code)]
pub fn start_async(kind: MechanismKind, path: &str) -> std::sync::Arc<AsyncDatabase> {
    let options = ExecutorOptions { open: options(kind), ..Default::default() };
    let (tx, rx) = mpsc::channel();
    let db = AsyncDatabase::open(path, Some(parse(PEOPLE).unwrap()), options, move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
    std::sync::Arc::new(db)
}
