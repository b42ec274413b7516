//! Reads on the caller's thread: a read made while nothing is queued or running and no
//! transaction is open runs at once, on the caller's thread, and sees every write submitted
//! before it; otherwise it waits its turn on the worker. Ordering and exactly-once hold on
//! both mechanisms, with readers and writers racing from several threads.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::{self, ThreadId};

use common::*;
use objstore_db_core::{AsyncDatabase, ExecutorOptions, Key, Mode};
use serde_json::{json, Value};

/// Waits until every request made so far has completed (a request queued after them does).
fn settle(db: &AsyncDatabase) {
    let (tx, rx) = mpsc::channel();
    db.submit(|_| Ok(()), move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
}

/// Gets `key` of `counters` through `AsyncDatabase::read`; the value and the thread the
/// completion ran on, and whether it ran before `read` returned.
fn get(db: &AsyncDatabase, key: &str) -> (Option<Value>, ThreadId, bool) {
    let (tx, rx) = mpsc::channel();
    let key = Key::from(key);
    let returned = Arc::new(AtomicBool::new(false));
    let seen = returned.clone();
    db.read(
        &["counters"],
        move |db| db.get("counters", &key),
        move |r| tx.send((r.unwrap(), thread::current().id(), !seen.load(Ordering::SeqCst))).unwrap(),
    )
    .unwrap();
    returned.store(true, Ordering::SeqCst);
    rx.recv().unwrap()
}

for_each_mechanism! {
    fn a_read_of_an_idle_database_completes_inside_the_call_on_the_callers_thread(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        db.submit(|db| db.put("counters", json!(1), Some(Key::from("a"))), |r| { r.unwrap(); }).unwrap();
        settle(&db);
        let (value, on, inside) = get(&db, "a");
        assert_eq!(value, Some(json!(1)));
        assert_eq!(on, thread::current().id());
        assert!(inside, "the completion ran before the call returned");
    }

    fn a_get_made_right_after_an_unawaited_put_sees_it(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        for i in 0..200 {
            let key = format!("k{i}");
            db.submit(move |db| db.put("counters", json!(i), Some(Key::from(format!("k{i}")))), |r| { r.unwrap(); })
                .unwrap();
            // Queued behind the put, or run here once it finished: it sees it either way.
            assert_eq!(get(&db, &key).0, Some(json!(i)), "the get after put {i}");
        }
    }

    fn a_get_behind_a_queued_put_waits_for_it_on_the_worker(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        // The worker is held, so the put stays queued while the get is made.
        let (release, held) = mpsc::channel::<()>();
        db.submit(move |_| { held.recv().ok(); Ok(()) }, |r| r.unwrap()).unwrap();
        db.submit(|db| db.put("counters", json!("late"), Some(Key::from("q"))), |r| { r.unwrap(); }).unwrap();
        let (tx, rx) = mpsc::channel();
        db.read(&["counters"], |db| db.get("counters", &Key::from("q")), move |r| {
            tx.send((r.unwrap(), thread::current().id())).unwrap()
        })
        .unwrap();
        assert!(rx.try_recv().is_err(), "the get did not complete inside the call");
        release.send(()).unwrap();
        let (value, on) = rx.recv().unwrap();
        assert_eq!(value, Some(json!("late")));
        assert_ne!(on, thread::current().id(), "it completed on the worker, after the put");
    }

    fn a_read_while_a_transaction_is_open_waits_for_it(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let (tx, rx) = mpsc::channel();
        db.begin(vec!["counters".into()], Mode::ReadWrite, move |r| tx.send(r.unwrap()).unwrap()).unwrap();
        let id = rx.recv().unwrap();
        let (tx, rx) = mpsc::channel();
        db.submit_in(id, |t| t.put("counters", json!("in tx"), Some(Key::from("t"))), move |r| tx.send(r).unwrap())
            .unwrap();
        rx.recv().unwrap().unwrap();
        // Nothing is queued, but the transaction is open: the read must not run beside it.
        let given_back = db.read_now(&["counters"], |db| db.get("counters", &Key::from("t")));
        assert!(given_back.is_err(), "a read ran on the caller's thread while a transaction was open");
        let (tx, rx) = mpsc::channel();
        db.read(&["counters"], |db| db.get("counters", &Key::from("t")), move |r| tx.send(r.unwrap()).unwrap())
            .unwrap();
        db.commit(id, |r| r.unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), Some(json!("in tx")), "the read ran after the commit");
        settle(&db);
        assert!(db.read_now(&["counters"], |_| Ok(())).is_ok(), "idle again after the commit");
    }

    fn an_unknown_store_is_the_workers_error(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let given_back = db.read_now(&["nowhere"], |db| db.get("nowhere", &Key::from(1)));
        assert!(given_back.is_err(), "a store no reader knows goes to the worker");
        let (tx, rx) = mpsc::channel();
        db.read(&["nowhere"], |db| db.get("nowhere", &Key::from(1)), move |r| tx.send(r).unwrap()).unwrap();
        let error = rx.recv().unwrap().unwrap_err().to_string();
        assert!(error.contains("nowhere"), "{error}");
    }

    fn readers_racing_writers_from_several_threads_see_every_acknowledged_write_and_no_torn_one(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        const WRITES: i64 = 400;
        // Writer w writes pairs (w-a, w-b) = (n, n) in one transaction, n = 1..=WRITES; `acked`
        // holds the last n whose completion arrived.
        let acked: Arc<Vec<AtomicI64>> = Arc::new((0..2).map(|_| AtomicI64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let inline_reads = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..2).map(|w| {
            let (db, acked) = (db.clone(), acked.clone());
            thread::spawn(move || {
                for n in 1..=WRITES {
                    let (tx, rx) = mpsc::channel();
                    db.submit(move |db| db.run(&["counters"], Mode::ReadWrite, |t| {
                        t.put("counters", json!(n), Some(Key::from(format!("{w}-a"))))?;
                        t.put("counters", json!(n), Some(Key::from(format!("{w}-b"))))?;
                        Ok(())
                    }), move |r| tx.send(r).unwrap()).unwrap();
                    rx.recv().unwrap().unwrap();
                    acked[w].store(n, Ordering::SeqCst);
                    if n % 4 == 0 {
                        thread::yield_now(); // leaves the database idle now and then
                    }
                }
            })
        }).collect();
        let readers: Vec<_> = (0..3).map(|_| {
            let (db, acked, stop, inline_reads) = (db.clone(), acked.clone(), stop.clone(), inline_reads.clone());
            thread::spawn(move || {
                let mut last = [0i64; 2];
                while !stop.load(Ordering::SeqCst) {
                    for w in 0..2 {
                        let floor = acked[w].load(Ordering::SeqCst);
                        let keys = vec![Key::from(format!("{w}-a")), Key::from(format!("{w}-b"))];
                        let (tx, rx) = mpsc::channel();
                        let me = thread::current().id();
                        db.read(&["counters"], move |db| db.values_of("counters", &keys), move |r| {
                            tx.send((r.unwrap(), thread::current().id() == me)).unwrap()
                        }).unwrap();
                        let (pair, here) = rx.recv().unwrap();
                        if here {
                            inline_reads.fetch_add(1, Ordering::Relaxed);
                        }
                        let n = |v: &Option<Value>| v.as_ref().map_or(0, |v| v.as_i64().unwrap());
                        let (a, b) = (n(&pair[0]), n(&pair[1]));
                        assert_eq!(a, b, "writer {w}: a torn pair");
                        assert!(a >= floor, "writer {w}: read {a} after write {floor} was acknowledged");
                        assert!(a >= last[w], "writer {w}: read {a} after reading {}", last[w]);
                        last[w] = a;
                    }
                }
            })
        }).collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        for r in readers {
            r.join().unwrap();
        }
        assert!(inline_reads.load(Ordering::Relaxed) > 0, "no read ran on its caller's thread");
        let (value, _, inside) = get(&db, "0-a");
        assert_eq!(value, Some(json!(WRITES)));
        assert!(inside, "idle at the end: the last read ran on this thread");
    }

    fn close_waits_for_a_read_running_on_a_callers_thread(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        db.submit(|db| db.put("counters", json!(1), Some(Key::from("a"))), |r| { r.unwrap(); }).unwrap();
        settle(&db);
        let (entered, go) = (mpsc::channel::<()>(), mpsc::channel::<()>());
        let (entered_tx, entered_rx) = entered;
        let (go_tx, go_rx) = go;
        let reader = {
            let db = db.clone();
            thread::spawn(move || {
                db.read_now(&["counters"], |db| {
                    entered_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    db.get("counters", &Key::from("a"))
                })
                .ok()
                .expect("the database was idle")
                .unwrap()
            })
        };
        entered_rx.recv().unwrap();
        let closed = Arc::new(AtomicBool::new(false));
        let seen = closed.clone();
        db.close(move |r| { r.unwrap(); seen.store(true, Ordering::SeqCst); }).unwrap();
        thread::sleep(std::time::Duration::from_millis(100));
        assert!(!closed.load(Ordering::SeqCst), "close called back while a read was running");
        go_tx.send(()).unwrap();
        assert_eq!(reader.join().unwrap(), Some(json!(1)));
        db.join();
        assert!(closed.load(Ordering::SeqCst));
        assert!(db.read_now(&["counters"], |_| Ok(())).is_err(), "no read runs after close");
    }
}

/// A store a schemaless write creates after the readers were made is read on the caller's
/// thread too (a new reader loads the catalog).
#[test]
fn a_store_created_by_a_write_is_read_inline_once_it_exists() {
    let (_dir, path) = temp_path();
    let (tx, rx) = mpsc::channel();
    let db = AsyncDatabase::open(&path, None, ExecutorOptions::default(), move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
    db.submit(
        |db| db.put("first", json!({"id": 1}), Some(Key::from(1))),
        |r| {
            r.unwrap();
        },
    )
    .unwrap();
    settle(&db);
    assert!(db.read_now(&["first"], |db| db.get("first", &Key::from(1))).ok().unwrap().unwrap().is_some());
    db.submit(
        |db| db.put("later", json!({"id": 2}), Some(Key::from(2))),
        |r| {
            r.unwrap();
        },
    )
    .unwrap();
    settle(&db);
    let read = db.read_now(&["later"], |db| db.get("later", &Key::from(2)));
    assert_eq!(read.ok().expect("read inline").unwrap(), Some(json!({"id": 2})));
}
