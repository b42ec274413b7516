//! The request-oriented API the C ABI and the bindings sit on, proved where a binding would
//! break: a cursor whose consumer awaits other requests between steps, a request waiting for an
//! explicit transaction, cancellation of a queued request and of a fetch between its
//! HTTP attempts, close racing requests from several threads, a transaction whose commit
//! succeeds while the bucket refuses one of its writes, and a black-holed bucket that leaves
//! cached reads and unsynced stores answering. The local tests run on both mechanisms; the
//! sync tests on moto and the misbehaving peer of the core's sync suites (Garage answers a
//! conditional create over an existing object with 200, which issue 11 deals with).

#[path = "../../core/tests/sync_support/mod.rs"]
mod sync_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use objstore_db::json;
use objstore_db::rsapi::{AsValue, Db, Freshness, ReadKind, RequestId};
use objstore_db_core::{Error, ErrorCode, Key, KeyRange, Mode, Query, Result, ScanOptions, Schema, Stats, SyncStatus};
use serde_json::{json, Value};
use sync_support::{server, signed_options, unique_prefix, Misbehaviour, Peer};
use tempfile::TempDir;

/// Far longer than any request here should take; a completion that does not come within it
/// is a hang, reported as such (this is not a timing assertion).
const PATIENCE: Duration = Duration::from_secs(30);

type Done<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// Makes a request and waits for its completion; an error from the call itself is returned
/// the same way.
/// The JSON forms the tests write their arguments in, as the library's types (as the skins
/// convert them).
fn as_key(value: &Value) -> Key {
    json::key(value).unwrap()
}

fn as_keys(value: &Value) -> Vec<Key> {
    json::keys(value).unwrap()
}

fn as_target(value: &Value) -> KeyRange {
    json::target(value).unwrap()
}

fn as_scan(value: &Value) -> ScanOptions {
    json::scan(Some(value)).unwrap()
}

fn as_stores(value: &Value) -> Vec<String> {
    json::stores(value).unwrap()
}

fn as_schema(value: &Value) -> Option<Schema> {
    json::schema(Some(value)).unwrap()
}

fn as_query(value: &Value) -> Query {
    Query::from_json(value).unwrap()
}

fn wait<T: Send + 'static>(start: impl FnOnce(Done<T>) -> Result<RequestId>) -> Result<T> {
    let (tx, rx) = mpsc::channel();
    start(Box::new(move |r| {
        let _ = tx.send(r);
    }))?;
    rx.recv_timeout(PATIENCE).expect("the request did not complete")
}

fn open_db(name: &str, schema: &Value, options: Value) -> Db {
    let options = json::open_options(Some(&options)).unwrap();
    let (tx, rx) = mpsc::channel();
    let db = Db::open(name, as_schema(schema), &options, move |r| {
        let _ = tx.send(r);
    })
    .unwrap();
    rx.recv_timeout(PATIENCE).unwrap().unwrap();
    db
}

fn close(db: &Db) {
    wait(|done| db.close(done).map(|()| 0)).unwrap();
}

fn local_schema() -> Value {
    json!({"stores": [{"name": "notes", "keyPath": "id"}]})
}

/// Runs a test once on a SQLite file and once in memory.
fn on_both_mechanisms(test: impl Fn(Db)) {
    let dir = TempDir::new().unwrap();
    for mechanism in ["sqlite", "memory"] {
        let path = dir.path().join(format!("{mechanism}.sqlite3"));
        test(open_db(path.to_str().unwrap(), &local_schema(), json!({"mechanism": mechanism})));
    }
}

fn put(db: &Db, value: Value) -> Result<Key> {
    wait(|done| db.put(None, "notes", value, None, done))
}

fn count(db: &Db) -> u64 {
    wait(|done| db.read_scan(None, "notes", ReadKind::Count, ScanOptions::new(), Freshness::Cached, AsValue, done))
        .unwrap()
        .as_u64()
        .unwrap()
}

fn seed(db: &Db, n: u64) {
    let values: Vec<Value> = (1..=n).map(|id| json!({"id": id, "n": 0})).collect();
    wait(|done| db.put_many(None, "notes", values, done)).unwrap();
}

#[test]
fn a_cursor_consumer_awaits_other_requests_between_steps() {
    on_both_mechanisms(|db| {
        seed(&db, 10);
        let query = db.query(as_query(&json!({"from": "notes"}))).unwrap();
        let cursor = query.cursor(None, Mode::ReadWrite);
        let mut seen = Vec::new();
        loop {
            let batch = wait(|done| cursor.next(3, Freshness::Cached, done)).unwrap();
            let items = batch.as_array().unwrap().clone();
            if items.is_empty() {
                break;
            }
            for item in items {
                let id = item["primaryKey"].as_u64().unwrap();
                seen.push(id);
                // Other requests, awaited inside the loop's body: each is served at once.
                let got =
                    wait(|done| db.get(None, "notes", as_key(&json!(id)), Freshness::Cached, AsValue, done)).unwrap();
                assert_eq!(got["id"], json!(id));
                if id <= 10 {
                    put(&db, json!({"id": 100 + id, "n": 0})).unwrap();
                }
                if id % 2 == 0 {
                    wait(|done| cursor.update(as_key(&json!(id)), json!({"id": id, "n": 1}), done)).unwrap();
                } else {
                    wait(|done| cursor.delete(as_key(&json!(id)), done)).unwrap();
                }
            }
        }
        // The records the body added ahead of the cursor are met too, in key order.
        assert_eq!(seen, (1..=10).chain(101..=110).collect::<Vec<_>>());
        assert_eq!(count(&db), 10, "the odd ones were deleted");
        let evens = wait(|done| {
            db.values_of(None, "notes", as_keys(&json!([2, 10, 102, 110])), Freshness::Cached, AsValue, done)
        })
        .unwrap();
        assert!(evens.as_array().unwrap().iter().all(|v| v["n"] == json!(1)), "{evens}");
        close(&db);
    });
}

#[test]
fn a_request_outside_an_open_transaction_waits_for_it_to_end() {
    on_both_mechanisms(|db| {
        seed(&db, 1);
        let tx = wait(|done| db.begin(as_stores(&json!(["notes"])), Mode::ReadWrite, done)).unwrap();
        wait(|done| db.put(Some(tx), "notes", json!({"id": 2}), None, done)).unwrap();
        // A read outside it and a second transaction wait; the open one's requests still run.
        let (turns_tx, turns) = mpsc::channel();
        let read_turn = turns_tx.clone();
        let counted = move |r: Result<Value>| read_turn.send(format!("count {}", r.unwrap())).unwrap();
        db.read_scan(None, "notes", ReadKind::Count, ScanOptions::new(), Freshness::Cached, AsValue, counted).unwrap();
        db.begin(as_stores(&json!("notes")), Mode::ReadOnly, move |r| {
            turns_tx.send(format!("begun {}", r.is_ok())).unwrap()
        })
        .unwrap();
        assert!(turns.recv_timeout(Duration::from_millis(300)).is_err(), "nothing outside ran while it was open");
        // A waiting request that is cancelled completes at once, while the transaction is open.
        let (cancelled_tx, cancelled) = mpsc::channel();
        let id = db
            .read_scan(None, "notes", ReadKind::Count, ScanOptions::new(), Freshness::Cached, AsValue, move |r| {
                cancelled_tx.send(r).unwrap()
            })
            .unwrap();
        assert!(db.cancel(id));
        let err = cancelled.recv_timeout(PATIENCE).expect("cancelled at once").unwrap_err();
        assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
        wait(|done| db.put(Some(tx), "notes", json!({"id": 3}), None, done)).unwrap();
        wait(|done| db.commit(tx, done)).unwrap();
        assert_eq!(turns.recv_timeout(PATIENCE).unwrap(), "count 3", "in order, after the commit, seeing it");
        assert_eq!(turns.recv_timeout(PATIENCE).unwrap(), "begun true");
        close(&db);
    });
}

#[test]
fn a_queued_request_is_cancelled_without_running() {
    on_both_mechanisms(|db| {
        // A slow transaction body holds the worker while the put waits behind it.
        let (held_tx, held) = mpsc::channel();
        let body = move |_: &mut objstore_db::rsapi::TxOps| {
            thread::sleep(Duration::from_millis(300));
            Ok(())
        };
        db.run_body(as_stores(&json!(["notes"])), Mode::ReadWrite, body, move |r| held_tx.send(r).unwrap()).unwrap();
        let (put_tx, put_done) = mpsc::channel();
        let id = db.put(None, "notes", json!({"id": 1}), None, move |r| put_tx.send(r).unwrap()).unwrap();
        assert!(db.cancel(id), "the put was still pending");
        held.recv_timeout(PATIENCE).unwrap().unwrap();
        let err = put_done.recv_timeout(PATIENCE).unwrap().unwrap_err();
        assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
        assert!(!db.cancel(id), "a completed request is no longer pending");
        assert_eq!(count(&db), 0, "the cancelled put never ran");
        close(&db);
    });
}

/// A store synced over the `rest` format with the peer as its server.
fn peer_schema(peer: &Peer, options: Value) -> Value {
    let mut sync_options = json!({"endpoint": peer.endpoint(), "prefix": "api/"});
    for (k, v) in options.as_object().unwrap() {
        sync_options[k] = v.clone();
    }
    json!({"stores": [
        {"name": "remote", "Sync": {"format": "rest", "Options": sync_options}},
        {"name": "notes", "keyPath": "id"}
    ]})
}

#[test]
fn a_slow_values_of_is_cancelled_between_its_http_attempts() {
    // Every answer is a 503: the fetch retries with a backoff of 2 s, 4 s, 8 s...
    let peer = Peer::start(vec![Misbehaviour::Answer(503, b"busy".to_vec())]);
    let dir = TempDir::new().unwrap();
    let schema = peer_schema(&peer, json!({"retries": 5, "retryBaseMs": 2000}));
    let db = open_db(dir.path().join("c.sqlite3").to_str().unwrap(), &schema, json!({}));
    let (tx, rx) = mpsc::channel();
    let id = db
        .values_of(None, "remote", as_keys(&json!(["a", "b"])), Freshness::Cached, AsValue, move |r| {
            tx.send(r).unwrap()
        })
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while peer.count() == 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert!(peer.count() > 0, "the fetch reached the peer");
    assert!(db.cancel(id));
    let err = rx.recv_timeout(PATIENCE).unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
    let attempts = peer.count();
    assert!(attempts <= 2, "no attempt after the cancel: {attempts} requests (one per key at most)");
    // The database is not held up by the cancelled fetch.
    put(&db, json!({"id": 1})).unwrap();
    close(&db);
}

#[test]
fn close_racing_requests_from_several_threads_calls_back_last() {
    on_both_mechanisms(|db| {
        seed(&db, 20);
        let order = Arc::new(AtomicUsize::new(0));
        let completions: Arc<Mutex<Vec<usize>>> = Arc::default();
        let accepted = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (db, order, completions, accepted) =
                    (db.clone(), order.clone(), completions.clone(), accepted.clone());
                thread::spawn(move || {
                    for i in 0.. {
                        let (order, completions) = (order.clone(), completions.clone());
                        let record = move || {
                            let at = order.fetch_add(1, Ordering::SeqCst);
                            completions.lock().unwrap().push(at);
                        };
                        let made = if i % 2 == 0 {
                            let key = as_key(&json!(1 + i % 20));
                            db.get(None, "notes", key, Freshness::Cached, AsValue, move |_| record())
                        } else {
                            db.put(None, "notes", json!({"id": 1000 * (t + 1) + i}), None, move |_| record())
                        };
                        match made {
                            Ok(_) => accepted.fetch_add(1, Ordering::SeqCst),
                            Err(e) => {
                                assert_eq!(e.code(), ErrorCode::Closed, "{e}");
                                break;
                            }
                        };
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        let order_at_close = order.clone();
        db.close(move |r| tx.send((r, order_at_close.fetch_add(1, Ordering::SeqCst))).unwrap()).unwrap();
        let (closed, close_at) = rx.recv_timeout(PATIENCE).unwrap();
        closed.unwrap();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let completions = completions.lock().unwrap();
        assert!(accepted.load(Ordering::SeqCst) > 0);
        assert_eq!(completions.len(), accepted.load(Ordering::SeqCst), "every accepted request called back once");
        assert!(completions.iter().all(|&at| at < close_at), "close's callback came last");
    });
}

// ----- sync --------------------------------------------------------------------------------

fn synced_schema(options: Value) -> Value {
    json!({"stores": [{"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": options}}]})
}

/// Two clients on one prefix; b's transaction writes a key a already created and a new one.
fn a_transaction_with_one_conflicting_write(options: Value) {
    let dir = TempDir::new().unwrap();
    let schema = synced_schema(options);
    let a = open_db(dir.path().join("a.sqlite3").to_str().unwrap(), &schema, json!({}));
    let b = open_db(dir.path().join("b.sqlite3").to_str().unwrap(), &schema, json!({}));
    wait(|done| a.add(None, "results", json!({"by": "a"}), Some(as_key(&json!("same"))), done)).unwrap();
    let report = wait(|done| a.flush(done)).unwrap();
    assert_eq!(report.pending, 0, "{report:?}");

    let conflicts: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = conflicts.clone();
    let filter = json!({"kinds": ["conflict"]});
    wait(|done| {
        b.subscribe(
            json::event_filter(Some(&filter)).unwrap(),
            move |e| seen.lock().unwrap().push(json::event_json(e)),
            done,
        )
    })
    .unwrap();
    let body = |ops: &mut objstore_db::rsapi::TxOps| {
        ops.add("results", json!({"by": "b"}), Some(Key::from("same")))?;
        ops.add("results", json!({"by": "b"}), Some(Key::from("fresh")))?;
        Ok(())
    };
    // The commit is local and succeeds; the bucket's refusal of one write is reported apart.
    wait(|done| b.run_body(as_stores(&json!(["results"])), Mode::ReadWrite, body, done)).unwrap();
    let report = wait(|done| b.flush(done)).unwrap();
    assert_eq!(report.pending, 0, "{report:?}");
    let refused = wait(|done| b.refused_writes(done)).unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].code, "Conflict", "{refused:?}");
    assert!(refused[0].message.contains("\"same\""), "{refused:?}");
    let status = |key: &str| wait(|done| b.sync_status("results", as_key(&json!(key)), done)).unwrap();
    assert_eq!(status("same"), SyncStatus::Refused);
    assert_eq!(status("fresh"), SyncStatus::Synced);
    assert_eq!(conflicts.lock().unwrap().len(), 1, "{:?}", conflicts.lock().unwrap());
    let fresh = Freshness::Fresh;
    let other = wait(|done| a.get(None, "results", as_key(&json!("fresh")), fresh, AsValue, done)).unwrap();
    assert_eq!(other, json!({"by": "b"}), "the write that was not refused reached the bucket");
    close(&a);
    close(&b);
}

#[test]
fn on_moto_a_transaction_with_one_conflicting_write_commits_and_reports_the_conflict_apart() {
    a_transaction_with_one_conflicting_write(signed_options(
        &server("moto"),
        "moto",
        "MOTO_SIGNED_BUCKET",
        &unique_prefix("tx-conflict"),
    ));
}

#[test]
fn a_black_holed_bucket_leaves_cached_reads_and_unsynced_stores_answering() {
    // The first GET is answered; every later request is held for ten minutes.
    let peer = Peer::start(vec![
        Misbehaviour::Answer(200, br#"{"v": 1}"#.to_vec()),
        Misbehaviour::Slow(Duration::from_secs(600), Vec::new()),
    ]);
    let dir = TempDir::new().unwrap();
    let schema = peer_schema(&peer, json!({"retries": 0, "timeoutMs": 600_000}));
    let db = open_db(dir.path().join("c.sqlite3").to_str().unwrap(), &schema, json!({}));
    let get_cached = || wait(|done| db.get(None, "remote", as_key(&json!("x")), Freshness::Cached, AsValue, done));
    assert_eq!(get_cached().unwrap(), json!({"v": 1}), "fetched once, now cached");
    for i in 0..50 {
        // Each read of the cached copy answers at once and revalidates in the background,
        // where the black hole holds it; the unsynced store is untouched by all of it.
        assert_eq!(get_cached().unwrap(), json!({"v": 1}));
        put(&db, json!({"id": i})).unwrap();
        assert_eq!(
            wait(|done| db.get(None, "notes", as_key(&json!(i)), Freshness::Cached, AsValue, done)).unwrap(),
            json!({"id": i})
        );
    }
    assert!(peer.count() >= 2, "a revalidation is held by the black hole meanwhile");
    assert_eq!(count(&db), 50);
    // A fresh read must wait for the bucket: cancelled, it gives up without an answer.
    let (tx, rx) = mpsc::channel();
    let id =
        db.get(None, "remote", as_key(&json!("x")), Freshness::Fresh, AsValue, move |r| tx.send(r).unwrap()).unwrap();
    thread::sleep(Duration::from_millis(50));
    assert!(rx.try_recv().is_err(), "a fresh read does not answer from the cache");
    db.cancel(id);
    close(&db);
    let err: Error = rx.recv_timeout(PATIENCE).unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
}

#[test]
fn a_store_without_prefetch_reads_what_it_holds_until_prefetch_brings_it_in_line() {
    let options = signed_options(&server("moto"), "moto", "MOTO_SIGNED_BUCKET", &unique_prefix("prefetch"));
    let schema =
        json!({"stores": [{"name": "docs", "keyPath": "id", "Sync": {"format": "objstore", "Options": options}}]});
    let dir = TempDir::new().unwrap();
    let writer = open_db(dir.path().join("w.sqlite3").to_str().unwrap(), &schema, json!({}));
    let values: Vec<Value> = (0..50).map(|i| json!({"id": format!("d{i:02}")})).collect();
    wait(|done| writer.put_many(None, "docs", values, done)).unwrap();
    assert_eq!(wait(|done| writer.flush(done)).unwrap().pending, 0);

    let reader = open_db(dir.path().join("r.sqlite3").to_str().unwrap(), &schema, json!({}));
    let count = |db: &Db| {
        wait(|done| db.read_scan(None, "docs", ReadKind::Count, ScanOptions::new(), Freshness::Cached, AsValue, done))
            .unwrap()
    };
    assert_eq!(count(&reader), json!(0), "without prefetch, a scan reads what this database holds");
    for key in ["d01", "d02", "d03", "d04"] {
        let got = wait(|done| reader.get(None, "docs", as_key(&json!(key)), Freshness::Cached, AsValue, done)).unwrap();
        assert_eq!(got, json!({"id": key}), "a record not held is fetched");
    }
    assert_eq!(count(&reader), json!(4));
    wait(|done| reader.prefetch("docs", done)).unwrap();
    assert_eq!(count(&reader), json!(50), "prefetch() brings the local copy in line");
    close(&writer);
    close(&reader);
}

/// A prefetch of a store that is not synced is the caller's mistake, named as such (not a
/// network error), in a database with synced stores and in one without.
#[test]
fn a_prefetch_of_an_unsynced_store_is_an_invalid_argument() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let schema = json!({"stores": [{"name": "notes", "keyPath": "id"},
        {"name": "synced", "Sync": {"format": "objstore", "Options": {"bucket": "b", "endpoint": endpoint}}}]});
    let db = open_db(dir.path().join("s.sqlite3").to_str().unwrap(), &schema, json!({}));
    let err = wait(|done| db.prefetch("notes", done)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("\"notes\" is not synced"), "{err}");
    wait(|done| db.prefetch("synced", done)).unwrap();
    close(&db);
    let plain = open_db(dir.path().join("p.sqlite3").to_str().unwrap(), &local_schema(), json!({}));
    assert_eq!(wait(|done| plain.prefetch("notes", done)).unwrap_err().code(), ErrorCode::InvalidArgument);
    close(&plain);
}

/// Sync requests made while the database is still opening (the agent is made by the open, on
/// the worker) wait for the open instead of finding no synced store, and offline asked for in
/// that window holds.
#[test]
fn sync_requests_made_while_the_database_opens_wait_for_the_open() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let schema = json!({"stores": [{"name": "synced", "Sync": {"format": "objstore", "Options": {"bucket": "b", "endpoint": endpoint}}}]});
    let (tx, opened) = mpsc::channel();
    let path = dir.path().join("o.sqlite3");
    let options = json::open_options(None).unwrap();
    let db =
        Db::open(path.to_str().unwrap(), as_schema(&schema), &options, move |r| tx.send(r.map(drop)).unwrap()).unwrap();
    db.set_offline(true).unwrap();
    let report = wait(|done| db.flush(done)).unwrap();
    assert_eq!(report.pending, 0, "{report:?}");
    opened.recv().unwrap().unwrap();
    wait(|done| db.put(None, "synced", json!({"n": 1}), Some(Key::from("a")), done)).unwrap();
    let report = wait(|done| db.flush(done)).unwrap();
    assert!(report.offline.as_ref().is_some_and(|why| why.to_string().contains("offline")), "{report:?}");
    assert_eq!(report.pending, 1, "{report:?}");
    close(&db);
    // A schema with no synced store: refused by the call itself, opening or not.
    let (tx, opened) = mpsc::channel();
    let plain = dir.path().join("plain.sqlite3");
    let db =
        Db::open(plain.to_str().unwrap(), as_schema(&local_schema()), &options, move |r| tx.send(r.map(drop)).unwrap())
            .unwrap();
    let refused = db.flush(|_| panic!("a refused request never calls back")).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument, "{refused}");
    opened.recv().unwrap().unwrap();
    close(&db);
}

/// The home view's read (a unique scan of the index over the layout's first two fields) of a
/// cold store lists only the first name of each pair; any other read then lists it in full.
#[test]
fn the_newest_per_pair_is_read_without_listing_everything_and_other_reads_list_in_full() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let options = json!({"bucket": "b", "endpoint": endpoint});
    let runs =
        json!({"stores": [{"name": "runs", "keyPath": "name", "Sync": {"format": "objstore", "Options": options}}]});
    let writer = open_db(dir.path().join("w.sqlite3").to_str().unwrap(), &runs, json!({"mechanism": "memory"}));
    for runtime in ["node", "python"] {
        let values: Vec<Value> = (0..1_100).map(|n| json!({"name": format!("linux/{runtime}/{n:04}")})).collect();
        wait(|done| writer.put_many(None, "runs", values, done)).unwrap();
    }
    assert_eq!(wait(|done| writer.flush(done)).unwrap().pending, 0);
    let mut meta = options.clone();
    meta["keyLayout"] = json!("{platform}/{browser}/{run}");
    let schema = json!({"stores": [{"name": "meta", "keyPath": "name",
        "indexes": [{"name": "pair", "keyPath": ["metadata.platform", "metadata.browser"]}],
        "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": meta}}]});
    let reader = open_db(dir.path().join("r.sqlite3").to_str().unwrap(), &schema, json!({}));
    let scan = |scan: Value, kind: ReadKind| {
        wait(|done| reader.read_scan(None, "meta", kind, as_scan(&scan), Freshness::Cached, AsValue, done)).unwrap()
    };
    let newest = scan(json!({"index": "pair", "unique": true}), ReadKind::Keys);
    assert_eq!(newest, json!(["linux/node/0000", "linux/python/0000"]));
    let lists = |stats: &Stats| stats.count("LIST");
    // The store's first page (more follow), the platforms, linux's first page, its pairs
    // after that page, python's first name.
    assert_eq!(lists(&reader.sync_stats(true)), 5);
    assert_eq!(scan(json!({}), ReadKind::Count), json!(2_200), "another read lists in full");
    assert!(lists(&reader.sync_stats(true)) >= 2);
    close(&writer);
    close(&reader);
}

/// Reads that find a store cold together share one listing (review N12): ten counts at once
/// cost one LIST, not ten.
#[test]
fn concurrent_reads_of_a_cold_store_share_one_listing() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let sync = json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0,
        "Options": {"bucket": "b", "endpoint": endpoint}});
    let schema = json!({"stores": [{"name": "docs", "keyPath": "id", "Sync": sync}]});
    let writer = open_db(dir.path().join("w.sqlite3").to_str().unwrap(), &schema, json!({"mechanism": "memory"}));
    let values: Vec<Value> = (0..300).map(|n| json!({"id": format!("d{n:03}")})).collect();
    wait(|done| writer.put_many(None, "docs", values, done)).unwrap();
    assert_eq!(wait(|done| writer.flush(done)).unwrap().pending, 0);
    let reader = open_db(dir.path().join("r.sqlite3").to_str().unwrap(), &schema, json!({}));
    let (tx, rx) = mpsc::channel();
    for _ in 0..10 {
        let tx = tx.clone();
        reader
            .read_scan(
                None,
                "docs",
                ReadKind::Count,
                ScanOptions::new(),
                Freshness::Cached,
                AsValue,
                move |r: Result<Value>| {
                    let _ = tx.send(r);
                },
            )
            .unwrap();
    }
    for _ in 0..10 {
        assert_eq!(rx.recv_timeout(PATIENCE).unwrap().unwrap(), json!(300));
    }
    let stats = reader.sync_stats(true);
    assert_eq!(stats.count("LIST"), 1, "{stats:?}");
    // A fresh read later still asks the bucket: sharing is for reads that waited together.
    wait(|done| writer.put(None, "docs", json!({"id": "d300"}), None, done)).unwrap();
    assert_eq!(wait(|done| writer.flush(done)).unwrap().pending, 0);
    let fresh = wait(|done| {
        reader.read_scan(None, "docs", ReadKind::Count, ScanOptions::new(), Freshness::Fresh, AsValue, done)
    });
    assert_eq!(fresh.unwrap(), json!(301));
    close(&writer);
    close(&reader);
}

/// A huge name given where a store is named comes back cut in the error, whatever the entry
/// point (the C fuzzer met a 52 MB store name echoed whole).
#[test]
fn a_huge_store_name_is_cut_in_every_error() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let schema = json!({"stores": [{"name": "notes", "keyPath": "id"},
        {"name": "synced", "Sync": {"format": "objstore", "Options": {"bucket": "b", "endpoint": endpoint}}}]});
    let db = open_db(dir.path().join("h.sqlite3").to_str().unwrap(), &schema, json!({}));
    let huge = "s".repeat(1 << 20);
    let key = json!("k");
    let errors: Vec<(&str, Error)> = vec![
        ("get", wait(|done| db.get(None, &huge, as_key(&key), Freshness::Cached, AsValue, done)).unwrap_err()),
        ("put", wait(|done| db.put(None, &huge, json!({"id": 1}), None, done)).unwrap_err()),
        ("remove", wait(|done| db.remove(None, &huge, as_target(&key), done)).unwrap_err()),
        ("clear", wait(|done| db.clear(None, &huge, done)).unwrap_err()),
        (
            "count",
            wait(|done| {
                db.read_scan(None, &huge, ReadKind::Count, ScanOptions::new(), Freshness::Cached, AsValue, done)
            })
            .unwrap_err(),
        ),
        ("prefetch", wait(|done| db.prefetch(&huge, done)).unwrap_err()),
        ("sync_status", wait(|done| db.sync_status(&huge, as_key(&key), done)).unwrap_err()),
        ("withdraw_pending", wait(|done| db.withdraw_pending(&huge, as_key(&key), done)).unwrap_err()),
        ("begin", wait(|done| db.begin(as_stores(&json!([huge.clone()])), Mode::ReadOnly, done)).unwrap_err()),
        (
            "query",
            wait(|done| {
                db.query(as_query(&json!({"from": huge.clone()})))?.list(None, 10, Freshness::Cached, AsValue, done)
            })
            .unwrap_err(),
        ),
        ("sql", wait(|done| db.sql(None, &format!("SELECT * FROM {huge}"), Vec::new(), done)).unwrap_err()),
    ];
    for (call, err) in errors {
        let message = err.to_string();
        assert!(message.len() < 500, "{call}: a {}-byte message: {}…", message.len(), &message[..200]);
        assert!(message.contains("sss") && message.contains(&format!("{} bytes", huge.len())), "{call}: {message}");
    }
    let inside = wait(|done| db.begin(as_stores(&json!(["notes"])), Mode::ReadOnly, done)).unwrap();
    let err = wait(|done| db.get(Some(inside), &huge, as_key(&key), Freshness::Cached, AsValue, done)).unwrap_err();
    assert!(err.to_string().len() < 500, "inside a transaction: {} bytes", err.to_string().len());
    wait(|done| db.abort(inside, done)).unwrap();
    close(&db);
}

/// Reads answered on the caller's thread (`*_now`): only while nothing is queued or running,
/// and never for a synced store, whose reads go through the read policy (here: a record the
/// cache lacks is fetched from the bucket).
#[test]
fn reads_answered_now_skip_synced_stores_and_wait_behind_queued_writes() {
    let dir = TempDir::new().unwrap();
    let endpoint = format!("file://{}", dir.path().join("bucket").display());
    let schema = json!({"stores": [
        {"name": "notes", "keyPath": "id"},
        {"name": "docs", "keyPath": "id", "Sync": {"format": "objstore", "Options": {"bucket": "b", "endpoint": endpoint}}}]});
    let writer = open_db(dir.path().join("w.sqlite3").to_str().unwrap(), &schema, json!({}));
    wait(|done| writer.put(None, "docs", json!({"id": "d1"}), None, done)).unwrap();
    assert_eq!(wait(|done| writer.flush(done)).unwrap().pending, 0);

    let db = open_db(dir.path().join("r.sqlite3").to_str().unwrap(), &schema, json!({}));
    let d1 = as_key(&json!("d1"));
    assert!(db.get_now("docs", &d1, Freshness::Cached, AsValue).is_none(), "a synced store's read is a request");
    let fetched = wait(|done| db.get(None, "docs", d1.clone(), Freshness::Cached, AsValue, done)).unwrap();
    assert_eq!(fetched, json!({"id": "d1"}), "the read policy fetched what the cache lacked");

    let n1 = as_key(&json!(1));
    // The sync agent works in the background (a revalidation, the outbox): a read is answered
    // now once the database is idle again.
    let idle = |answer: &dyn Fn() -> Option<Result<Value>>| {
        let started = std::time::Instant::now();
        loop {
            match answer() {
                Some(result) => return result.unwrap(),
                None if started.elapsed() < PATIENCE => std::thread::sleep(std::time::Duration::from_millis(5)),
                None => panic!("the database never went idle"),
            }
        }
    };
    assert_eq!(idle(&|| db.get_now("notes", &n1, Freshness::Cached, AsValue)), Value::Null);
    let (tx, rx) = mpsc::channel();
    db.put(None, "notes", json!({"id": 1, "text": "queued"}), None, move |r| tx.send(r).unwrap()).unwrap();
    match db.get_now("notes", &n1, Freshness::Cached, AsValue) {
        // The put may have finished already; if it has, the read sees it.
        Some(now) => assert_eq!(now.unwrap(), json!({"id": 1, "text": "queued"})),
        None => {
            let later = wait(|done| db.get(None, "notes", n1.clone(), Freshness::Cached, AsValue, done)).unwrap();
            assert_eq!(later, json!({"id": 1, "text": "queued"}));
        }
    }
    rx.recv_timeout(PATIENCE).unwrap().unwrap();
    let scan = ScanOptions::new();
    assert_eq!(idle(&|| db.read_scan_now("notes", ReadKind::Count, &scan, Freshness::Cached, AsValue)), json!(1));
    let one = std::slice::from_ref(&n1);
    assert_eq!(
        idle(&|| db.values_of_now("notes", one, Freshness::Cached, AsValue)),
        json!([{"id": 1, "text": "queued"}])
    );
    let query = db.query(as_query(&json!({"from": "notes"}))).unwrap();
    let count = || query.count_now(Freshness::Cached).map(|r| r.map(|n| json!(n)));
    assert_eq!(idle(&count), json!(1));
    let page = || query.list_now(10, Freshness::Cached, AsValue);
    assert_eq!(idle(&page), json!([{"id": 1, "text": "queued"}]));
    assert_eq!(idle(&page), json!([]), "paging goes on");
    close(&db);
    assert!(db.get_now("notes", &n1, Freshness::Cached, AsValue).is_none(), "closed: the request says so");
    close(&writer);
}
