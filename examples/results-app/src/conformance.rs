//! The conformance suites the main command runs when the bucket is empty, so that the first
//! matrix anyone sees holds real results: the library's behaviour per column (crud, cursor,
//! event, transaction, query, sql), checked through the same API the bindings use, on both
//! mechanisms (a SQLite file and memory). Each check returns what went wrong as text.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use objstore_db::json;
use objstore_db::rsapi::{AsValue, Db, Freshness, ReadKind};
use objstore_db_core::{
    Event, EventFilter, EventKind, Key, KeyRange, MechanismKind, Mode, Query, Result as CoreResult, ScanOptions,
};
use serde_json::{json, Value};

use crate::clock::now_ms;
use crate::error::AppResult;
use crate::ingest::this_platform;
use crate::model::{Detail, Results, Run, Status, Summary, Test, Tool};
use crate::store;

type Check = fn(&Db) -> Result<(), String>;

const CHECKS: [(&str, &str, Check); 18] = [
    ("crud", "put then get gives the record back; add over an existing key is refused", put_get_add),
    ("crud", "keys of every type come back as they went in, in IndexedDB order", key_types),
    ("crud", "remove by range and clear; count follows", remove_and_clear),
    ("crud", "an unknown store is an error naming it, and nothing is written", unknown_store),
    ("cursor", "a cursor visits 1,000 records once each, in key order, in batches", cursor_visits_all),
    ("cursor", "a reverse unique cursor on an index gives one record per value", cursor_reverse_unique),
    ("cursor", "update and delete through a cursor take effect", cursor_writes),
    ("event", "created, updated and deleted arrive in order with their keys", events_in_order),
    ("event", "after unsubscribe no event arrives", events_unsubscribe),
    ("event", "an aborted transaction sends no event", events_not_for_abort),
    ("transaction", "a body's writes to two stores commit together", tx_commits_both),
    ("transaction", "a body that fails rolls back everything it wrote", tx_rolls_back),
    ("transaction", "a read-only transaction refuses writes", tx_readonly),
    ("query", "where, order and limit by an index", query_where_order),
    ("query", "pages continue from call to call without repeats", query_pages),
    ("query", "count, patch and delete every match", query_patch_delete),
    ("sql", "SELECT with parameters, WHERE, ORDER BY and LIMIT", sql_select),
    ("sql", "INSERT, UPDATE and DELETE say how many changed; a statement outside the subset is refused", sql_writes),
];

/// Runs every check on both mechanisms (databases in `scratch`) as one run of `runtime`.
pub fn run(scratch: &std::path::Path, runtime: &str) -> AppResult<Run> {
    let start = now_ms();
    let mut tests = Vec::new();
    for (mechanism, kind) in [("sqlite", MechanismKind::Sqlite), ("memory", MechanismKind::Memory)] {
        for (i, (suite, name, check)) in CHECKS.iter().enumerate() {
            let path = scratch.join(format!("conformance-{mechanism}-{i}.sqlite3"));
            let began = Instant::now();
            let outcome = open(&path, kind).and_then(|db| {
                let outcome = check(&db);
                db.close_and_join();
                outcome
            });
            tests.push(Test {
                name: format!("{name} ({mechanism})"),
                status: if outcome.is_ok() { Status::Passed } else { Status::Failed },
                duration: (began.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
                suite: suite.to_string(),
                message: outcome.err(),
                detail: Detail::default(),
            });
        }
    }
    let summary = Summary::of(&tests, start, now_ms());
    let run = Run {
        platform: this_platform(),
        browser: runtime.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        results: Results {
            tool: Tool { name: "objstore-results conformance".into(), version: Some(env!("CARGO_PKG_VERSION").into()) },
            summary,
            tests,
            environment: Default::default(),
        },
        ci: Default::default(),
    };
    run.check()?;
    Ok(run)
}

/// Asks the library and waits; a check's failure is the text it records as the test's message.
fn call<T: Send + 'static>(
    request: impl FnOnce(Box<dyn FnOnce(CoreResult<T>) + Send>) -> CoreResult<u64>,
) -> Result<T, String> {
    store::call(request).map_err(|e| e.message)
}

fn open(path: &std::path::Path, mechanism: MechanismKind) -> Result<Db, String> {
    let _ = std::fs::remove_file(path);
    let schema = json!({"stores": [
        {"name": "people", "keyPath": "id", "indexes": [{"keyPath": "city"}, {"keyPath": "age"}]},
        {"name": "log", "autoIncrement": true},
        {"name": "keys"}]});
    store::open_and_wait(&path.display().to_string(), &schema, mechanism).map_err(|e| e.message)
}

// The suites write their arguments in the JSON forms the bindings pass; the skins' conversions
// make them the library's types.

fn as_key(value: &Value) -> CoreResult<Key> {
    json::key(value)
}

fn as_target(value: &Value) -> CoreResult<KeyRange> {
    json::target(value)
}

fn as_scan(value: &Value) -> CoreResult<ScanOptions> {
    json::scan(Some(value))
}

fn as_stores(value: &Value) -> CoreResult<Vec<String>> {
    json::stores(value)
}

fn as_query(value: &Value) -> CoreResult<Query> {
    Query::from_json(value)
}

fn as_params(value: &Value) -> CoreResult<Vec<Value>> {
    json::sql_params(Some(value))
}

/// `actual` must be `expected`, else the difference is the failure.
fn expect(what: &str, actual: Value, expected: Value) -> Result<(), String> {
    if actual == expected {
        Ok(())
    } else {
        Err(format!("{what}: got {actual}, expected {expected}"))
    }
}

/// A request that must fail; its error message must contain `says`.
fn refused<T: Send + 'static>(
    what: &str,
    says: &str,
    request: impl FnOnce(Box<dyn FnOnce(CoreResult<T>) + Send>) -> CoreResult<u64>,
) -> Result<(), String> {
    match call(request) {
        Ok(_) => Err(format!("{what} was accepted")),
        Err(e) if e.contains(says) => Ok(()),
        Err(e) => Err(format!("{what} failed without saying {says:?}: {e}")),
    }
}

fn people(db: &Db, n: usize) -> Result<(), String> {
    let cities = ["Oslo", "Lima", "Pune"];
    let records: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("p{i:04}"), "city": cities[i % 3], "age": 20 + (i * 7) % 50, "n": i}))
        .collect();
    call(|done| db.put_many(None, "people", records, done)).map(drop)
}

fn scan(db: &Db, store: &str, kind: ReadKind, scan: Value) -> Result<Value, String> {
    call(|done| db.read_scan(None, store, kind, as_scan(&scan)?, Freshness::Cached, AsValue, done))
}

fn count(db: &Db, store: &str) -> Result<Value, String> {
    scan(db, store, ReadKind::Count, json!({}))
}

// ----- crud -----------------------------------------------------------------------------------

fn put_get_add(db: &Db) -> Result<(), String> {
    let record = json!({"id": "a", "city": "Oslo", "age": 30, "tags": ["x", null, {"deep": [1.5]}]});
    call(|done| db.put(None, "people", record.clone(), None, done))?;
    expect(
        "get",
        call(|done| db.get(None, "people", as_key(&json!("a"))?, Freshness::Cached, AsValue, done))?,
        record.clone(),
    )?;
    refused("add over an existing key", "", |done| db.add(None, "people", json!({"id": "a", "age": 1}), None, done))?;
    expect(
        "the record after the refused add",
        call(|done| db.get(None, "people", as_key(&json!("a"))?, Freshness::Cached, AsValue, done))?,
        record,
    )
}

fn key_types(db: &Db) -> Result<(), String> {
    // IndexedDB's order: numbers < dates < strings < binary < arrays.
    let keys = [
        json!(-1.5),
        json!(7),
        json!({"$date": 1700000000000u64}),
        json!(""),
        json!("é"),
        json!({"$binary": "00ff"}),
        json!([1, "a"]),
    ];
    for (i, key) in keys.iter().rev().enumerate() {
        call(|done| db.put(None, "keys", json!({"i": i}), Some(as_key(key)?), done))?;
    }
    expect("keys in order", scan(db, "keys", ReadKind::Keys, json!({}))?, json!(keys))
}

fn remove_and_clear(db: &Db) -> Result<(), String> {
    people(db, 30)?;
    let removed =
        call(|done| db.remove(None, "people", as_target(&json!({"lower": "p0010", "upper": "p0019"}))?, done))?;
    expect("removed by range", json!(removed), json!(10))?;
    expect("count after the range", count(db, "people")?, json!(20))?;
    call(|done| db.clear(None, "people", done))?;
    expect("count after clear", count(db, "people")?, json!(0))
}

fn unknown_store(db: &Db) -> Result<(), String> {
    refused("a put to store \"nowhere\"", "nowhere", |done| db.put(None, "nowhere", json!({"id": 1}), None, done))?;
    expect("records written", count(db, "people")?, json!(0))
}

// ----- cursor ---------------------------------------------------------------------------------

fn cursor_visits_all(db: &Db) -> Result<(), String> {
    people(db, 1000)?;
    let cursor = db
        .query(as_query(&json!({"from": "people"})).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?
        .cursor(None, Mode::ReadOnly);
    let mut seen = Vec::new();
    loop {
        let batch = call(|done| cursor.next(128, Freshness::Cached, done))?;
        let items = batch.as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            break;
        }
        seen.extend(items.into_iter().map(|i| i["primaryKey"].clone()));
    }
    let expected: Vec<Value> = (0..1000).map(|i| json!(format!("p{i:04}"))).collect();
    expect("keys visited", json!(seen), json!(expected))
}

fn cursor_reverse_unique(db: &Db) -> Result<(), String> {
    people(db, 30)?;
    let query = db.query(
        as_query(&json!({"from": "people", "order": "city", "reverse": true, "unique": true}))
            .map_err(|e| e.to_string())?,
    );
    let cursor = query.map_err(|e| e.to_string())?.cursor(None, Mode::ReadOnly);
    let batch = call(|done| cursor.next(10, Freshness::Cached, done))?;
    let cities: Vec<Value> = batch.as_array().into_iter().flatten().map(|i| i["key"].clone()).collect();
    expect("cities", json!(cities), json!(["Pune", "Oslo", "Lima"]))
}

fn cursor_writes(db: &Db) -> Result<(), String> {
    people(db, 3)?;
    let cursor = db
        .query(as_query(&json!({"from": "people"})).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?
        .cursor(None, Mode::ReadWrite);
    let batch = call(|done| cursor.next(3, Freshness::Cached, done))?;
    let first = batch[0]["value"].clone();
    let mut changed = first.clone();
    changed["age"] = json!(99);
    call(|done| cursor.update(as_key(&first["id"])?, changed.clone(), done))?;
    call(|done| cursor.delete(as_key(&batch[1]["primaryKey"])?, done))?;
    expect(
        "the updated record",
        call(|done| db.get(None, "people", as_key(&first["id"])?, Freshness::Cached, AsValue, done))?,
        changed,
    )?;
    expect("count after a delete", count(db, "people")?, json!(2))
}

// ----- event ----------------------------------------------------------------------------------

/// The events a subscription saw, as "kind key".
type Seen = Arc<Mutex<Vec<String>>>;

/// Subscribes to `store`'s changes: the subscription and what it sees.
fn listen(db: &Db, store: &str) -> Result<(u64, Seen), String> {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let filter = EventFilter::kinds(&[EventKind::Created, EventKind::Updated, EventKind::Deleted]).store(store);
    let id = call(|done| {
        db.subscribe(
            filter,
            move |e: &Event| {
                let key = e.key.as_ref().map_or(Value::Null, Key::to_json);
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{} {key}", e.kind.name()))
            },
            done,
        )
    })?;
    Ok((id, seen))
}

/// Events are delivered on the worker before a later request's answer: a count settles them.
fn events(db: &Db, seen: &Mutex<Vec<String>>) -> Result<Vec<String>, String> {
    count(db, "people")?;
    Ok(seen.lock().unwrap_or_else(|p| p.into_inner()).clone())
}

fn events_in_order(db: &Db) -> Result<(), String> {
    let (_, seen) = listen(db, "people")?;
    call(|done| db.put(None, "people", json!({"id": "e", "age": 1}), None, done))?;
    call(|done| db.put(None, "people", json!({"id": "e", "age": 2}), None, done))?;
    call(|done| db.remove(None, "people", as_target(&json!("e"))?, done))?;
    expect("events", json!(events(db, &seen)?), json!(["created \"e\"", "updated \"e\"", "deleted \"e\""]))
}

fn events_unsubscribe(db: &Db) -> Result<(), String> {
    let (id, seen) = listen(db, "people")?;
    expect("unsubscribe", json!(call(|done| db.unsubscribe(id, done))?), json!(true))?;
    call(|done| db.put(None, "people", json!({"id": "e"}), None, done))?;
    expect("events", json!(events(db, &seen)?), json!([]))
}

fn events_not_for_abort(db: &Db) -> Result<(), String> {
    let (_, seen) = listen(db, "people")?;
    let tx = call(|done| db.begin(as_stores(&json!("people"))?, Mode::ReadWrite, done))?;
    call(|done| db.put(Some(tx), "people", json!({"id": "gone"}), None, done))?;
    call(|done| db.abort(tx, done))?;
    expect("events", json!(events(db, &seen)?), json!([]))?;
    expect("count", count(db, "people")?, json!(0))
}

// ----- transaction ----------------------------------------------------------------------------

fn tx_commits_both(db: &Db) -> Result<(), String> {
    call(|done| {
        db.run_body(
            as_stores(&json!(["people", "log"]))?,
            Mode::ReadWrite,
            |ops| {
                ops.put("people", json!({"id": "t"}), None)?;
                ops.add("log", json!({"did": "put t"}), None)?;
                Ok(())
            },
            done,
        )
    })?;
    expect("people", count(db, "people")?, json!(1))?;
    expect("log", count(db, "log")?, json!(1))
}

fn tx_rolls_back(db: &Db) -> Result<(), String> {
    let failed = call(|done| {
        db.run_body(
            as_stores(&json!(["people", "log"]))?,
            Mode::ReadWrite,
            |ops| {
                ops.put("people", json!({"id": "t"}), None)?;
                ops.add("log", json!({"did": "put t"}), None)?;
                ops.put("people", json!({"no id": true}), None)?;
                Ok(())
            },
            done,
        )
    });
    if failed.is_ok() {
        return Err("a record without its key path was taken".into());
    }
    expect("people", count(db, "people")?, json!(0))?;
    expect("log", count(db, "log")?, json!(0))
}

fn tx_readonly(db: &Db) -> Result<(), String> {
    let tx = call(|done| db.begin(as_stores(&json!("people"))?, Mode::ReadOnly, done))?;
    let outcome = refused("a put in a read-only transaction", "", |done| {
        db.put(Some(tx), "people", json!({"id": "r"}), None, done)
    });
    call(|done| db.abort(tx, done))?;
    outcome?;
    expect("count", count(db, "people")?, json!(0))
}

// ----- query ----------------------------------------------------------------------------------

fn query_where_order(db: &Db) -> Result<(), String> {
    people(db, 60)?;
    let q = db
        .query(as_query(&json!({"from": "people", "where": [["city", "=", "Lima"], ["age", ">=", 40]], "order": "age", "select": ["id", "age"]})).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let rows = call(|done| q.list(None, 3, Freshness::Cached, AsValue, done))?;
    let ages: Vec<u64> = rows.as_array().into_iter().flatten().filter_map(|r| r["age"].as_u64()).collect();
    if ages.len() != 3 || ages.windows(2).any(|w| w[0] > w[1]) || ages.iter().any(|a| *a < 40) {
        return Err(format!("rows {rows}: expected 3, by age, each 40 or more"));
    }
    if rows[0].get("city").is_some() {
        return Err(format!("select kept an unselected field: {}", rows[0]));
    }
    Ok(())
}

fn query_pages(db: &Db) -> Result<(), String> {
    people(db, 25)?;
    let q = db
        .query(as_query(&json!({"from": "people", "order": "age"})).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let mut ids = Vec::new();
    loop {
        let page = call(|done| q.list(None, 10, Freshness::Cached, AsValue, done))?;
        let page = page.as_array().cloned().unwrap_or_default();
        if page.is_empty() {
            break;
        }
        ids.extend(page.into_iter().map(|r| r["id"].clone()));
    }
    let mut unique = ids.clone();
    unique.sort_by_key(|v| v.to_string());
    unique.dedup();
    expect("records over the pages", json!([ids.len(), unique.len()]), json!([25, 25]))
}

fn query_patch_delete(db: &Db) -> Result<(), String> {
    people(db, 30)?;
    let oslo = db
        .query(as_query(&json!({"from": "people", "where": [["city", "=", "Oslo"]]})).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    expect("count", json!(call(|done| oslo.count(None, Freshness::Cached, done))?), json!(10))?;
    expect("patched", json!(call(|done| oslo.patch(None, json!({"seen": true}), done))?), json!(10))?;
    expect(
        "a patched record",
        call(|done| db.get(None, "people", as_key(&json!("p0003"))?, Freshness::Cached, AsValue, done))?["seen"]
            .clone(),
        json!(true),
    )?;
    expect("deleted", json!(call(|done| oslo.delete(None, done))?), json!(10))?;
    expect("left", count(db, "people")?, json!(20))
}

// ----- sql ------------------------------------------------------------------------------------

fn sql_select(db: &Db) -> Result<(), String> {
    people(db, 30)?;
    let params = json!(["Pune", 2]);
    let out = call(|done| {
        db.sql(None, "SELECT id FROM people WHERE city = ? ORDER BY id DESC LIMIT ?", as_params(&params)?, done)
    })?;
    expect("rows", out["rows"].clone(), json!([{"id": "p0029"}, {"id": "p0026"}]))
}

fn sql_writes(db: &Db) -> Result<(), String> {
    let changed = |text: &str| call(|done| db.sql(None, text, Vec::new(), done)).map(|v| v["changed"].clone());
    expect(
        "INSERT",
        changed("INSERT INTO people (id, city, age) VALUES ('s1', 'Oslo', 30), ('s2', 'Lima', 40)")?,
        json!(2),
    )?;
    expect("UPDATE", changed("UPDATE people SET age = 31 WHERE city = 'Oslo'")?, json!(1))?;
    expect("DELETE", changed("DELETE FROM people WHERE age > 35")?, json!(1))?;
    refused("a JOIN", "JOIN", |done| {
        db.sql(None, "SELECT * FROM people JOIN log ON people.id = log.id", Vec::new(), done)
    })?;
    expect("left", count(db, "people")?, json!(1))
}
