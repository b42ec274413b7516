//! The executor's promise: every request completes exactly once, never inside the call that
//! submitted it, in submission order; queued requests are cancelled on close; panics become
//! errors.

#[macro_use]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;
use objstore_db_core::{AsyncDatabase, Error, ErrorCode, ExecutorOptions, Key, MechanismKind, OpenOptions, Schema};
use serde_json::json;

for_each_mechanism! {
    fn every_completion_from_eight_threads_arrives_once_with_its_result(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        const THREADS: usize = 8;
        const EACH: usize = 250;
        let seen = Arc::new(Mutex::new(HashMap::<(usize, usize, &str), usize>::new()));
        let (all_done, wait) = mpsc::channel();
        let handles: Vec<_> = (0..THREADS).map(|t| {
            let (db, seen, all_done) = (db.clone(), seen.clone(), all_done.clone());
            thread::spawn(move || {
                for i in 0..EACH {
                    let key = Key::from(format!("{t}-{i}"));
                    let (s1, s2, d1, d2) = (seen.clone(), seen.clone(), all_done.clone(), all_done.clone());
                    let record = json!({"thread": t, "i": i});
                    let k = key.clone();
                    db.submit(move |db| db.put("counters", record, Some(k)), move |r| {
                        assert_eq!(r.unwrap(), Key::from(format!("{t}-{i}")));
                        *s1.lock().unwrap().entry((t, i, "put")).or_default() += 1;
                        d1.send(()).unwrap();
                    }).unwrap();
                    db.submit(move |db| db.get("counters", &key), move |r| {
                        // Same thread, submitted after the put: it must see the record.
                        assert_eq!(r.unwrap().unwrap(), json!({"thread": t, "i": i}));
                        *s2.lock().unwrap().entry((t, i, "get")).or_default() += 1;
                        d2.send(()).unwrap();
                    }).unwrap();
                }
            })
        }).collect();
        for h in handles {
            h.join().unwrap();
        }
        for _ in 0..THREADS * EACH * 2 {
            wait.recv_timeout(Duration::from_secs(30)).expect("every completion arrives");
        }
        assert!(wait.recv_timeout(Duration::from_millis(100)).is_err(), "no completion arrives twice");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), THREADS * EACH * 2);
        assert!(seen.values().all(|n| *n == 1));
    }

    fn completions_arrive_in_submission_order_on_the_worker_thread(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let order = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let (order, tx) = (order.clone(), tx.clone());
            db.submit(move |_| Ok(i), move |r| {
                order.lock().unwrap().push((r.unwrap(), thread::current().id()));
                tx.send(()).unwrap();
            }).unwrap();
        }
        for _ in 0..100 {
            rx.recv().unwrap();
        }
        let order = order.lock().unwrap();
        assert_eq!(order.iter().map(|(i, _)| *i).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
        assert!(order.iter().all(|(_, t)| *t != thread::current().id()));
    }

    fn close_cancels_queued_requests_and_fires_once(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let (o, t) = (outcomes.clone(), tx.clone());
        let (started_tx, started_rx) = mpsc::channel();
        db.submit(move |_| { started_tx.send(()).unwrap(); thread::sleep(Duration::from_millis(300)); Ok(()) }, move |r| { o.lock().unwrap().push(r.map_err(|e| e.code())); t.send(()).unwrap(); }).unwrap();
        started_rx.recv().unwrap();
        for _ in 0..50 {
            let (o, t) = (outcomes.clone(), tx.clone());
            db.submit(|db| db.put("notes", json!(1), None).map(|_| ()), move |r| { o.lock().unwrap().push(r.map_err(|e| e.code())); t.send(()).unwrap(); }).unwrap();
        }
        let (closed_tx, closed_rx) = mpsc::channel();
        let o = outcomes.clone();
        db.close(move |r| { o.lock().unwrap().push(Err(ErrorCode::Closed)); closed_tx.send(r).unwrap() }).unwrap();
        for _ in 0..51 {
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        closed_rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
        let mut outcomes = outcomes.lock().unwrap();
        assert_eq!(outcomes.pop(), Some(Err(ErrorCode::Closed)), "close's callback is the last one");
        assert_eq!(outcomes[0], Ok(()), "the running request finishes");
        assert!(outcomes[1..].iter().all(|o| *o == Err(ErrorCode::Cancelled)), "{outcomes:?}");
        if kind == MechanismKind::Sqlite {
            drop(db);
            let reopened = start_async(kind, &path);
            assert_eq!(call(&reopened, |db| db.count("notes", &Default::default())).unwrap(), 0, "cancelled writes never ran");
        }
    }

    fn requests_after_close_are_refused_at_once_with_no_callback(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let (closed_tx, closed_rx) = mpsc::channel();
        db.close(move |r| closed_tx.send(r).unwrap()).unwrap();
        closed_rx.recv().unwrap().unwrap();
        let called = Arc::new(AtomicUsize::new(0));
        let c = called.clone();
        let refused = db.submit(|db| db.get("notes", &Key::from(1)), move |_| { c.fetch_add(1, Ordering::SeqCst); });
        assert!(matches!(refused, Err(Error::Closed(_))), "{refused:?}");
        let c = called.clone();
        let again = db.close(move |_| { c.fetch_add(1, Ordering::SeqCst); });
        assert_eq!(again.unwrap_err().code(), ErrorCode::Closed, "double close is reported, not a crash");
        thread::sleep(Duration::from_millis(100));
        assert_eq!(called.load(Ordering::SeqCst), 0, "refused requests never call back");
    }

    fn close_racing_requests_from_several_threads_calls_back_last(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let log = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4).map(|_| {
            let (db, log, accepted) = (db.clone(), log.clone(), accepted.clone());
            thread::spawn(move || {
                for i in 0..500 {
                    let log = log.clone();
                    let submitted = db.submit(move |db| db.put("notes", json!(i), None), move |r| log.lock().unwrap().push(r.is_ok()));
                    match submitted {
                        Ok(()) => { accepted.fetch_add(1, Ordering::SeqCst); }
                        Err(e) => { assert_eq!(e.code(), ErrorCode::Closed); break; }
                    }
                }
            })
        }).collect();
        thread::sleep(Duration::from_millis(5));
        let (closed_tx, closed_rx) = mpsc::channel();
        let (l, a) = (log.clone(), accepted.clone());
        db.close(move |r| { closed_tx.send((r, l.lock().unwrap().len(), a.load(Ordering::SeqCst))).unwrap() }).unwrap();
        let (result, completed_before_close, _) = closed_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        result.unwrap();
        for t in threads { t.join().unwrap(); }
        thread::sleep(Duration::from_millis(100));
        let completed = log.lock().unwrap().len();
        assert_eq!(completed, accepted.load(Ordering::SeqCst), "every accepted request called back once");
        assert_eq!(completed_before_close, completed, "every callback came before close's");
    }

    fn a_panic_in_a_request_becomes_an_internal_error_and_the_database_goes_on(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let err = call(&db, |db| -> objstore_db_core::Result<()> {
            let t = db.begin(&["notes"], objstore_db_core::Mode::ReadWrite)?;
            db.transaction(t)?.put("notes", json!("half done"), None)?;
            panic!("boom")
        }).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Internal);
        assert!(err.to_string().contains("boom"));
        assert_eq!(call(&db, |db| db.count("notes", &Default::default())).unwrap(), 0, "the panicking transaction rolled back");
        call(&db, |db| db.put("notes", json!(1), None)).unwrap();
    }

    fn a_panicking_completion_does_not_stop_the_worker(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        db.submit(|_| Ok(()), |_| panic!("completion bug")).unwrap();
        call(&db, |db| db.put("notes", json!(1), None)).unwrap();
    }

    fn dropping_the_last_handle_closes_without_waiting_and_cancels(kind) {
        let (_dir, path) = temp_path();
        let db = start_async(kind, &path);
        let cancelled = Arc::new(AtomicUsize::new(0));
        let (started_tx, started_rx) = mpsc::channel();
        db.submit(move |_| { started_tx.send(()).unwrap(); thread::sleep(Duration::from_millis(300)); Ok(()) }, |_| {}).unwrap();
        started_rx.recv().unwrap();
        for _ in 0..10 {
            let c = cancelled.clone();
            db.submit(|_| Ok(()), move |r: objstore_db_core::Result<()>| if r.unwrap_err().code() == ErrorCode::Cancelled { c.fetch_add(1, Ordering::SeqCst); }).unwrap();
        }
        let dropped_at = std::time::Instant::now();
        drop(db);
        assert!(dropped_at.elapsed() < Duration::from_millis(250), "drop does not wait for the worker");
        for _ in 0..100 {
            if cancelled.load(Ordering::SeqCst) == 10 { break; }
            thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(cancelled.load(Ordering::SeqCst), 10, "queued requests were cancelled after the drop");
    }
}

#[test]
fn a_failed_open_reports_its_error_to_the_open_and_to_every_request() {
    let (_dir, path) = temp_path();
    Database_open_v2(&path);
    let bad = Schema::from_json(PEOPLE).unwrap(); // version 1 < stored 2
    let (tx, rx) = mpsc::channel();
    let db = AsyncDatabase::open(&path, Some(bad), ExecutorOptions::default(), move |r| tx.send(r).unwrap()).unwrap();
    let (rtx, rrx) = mpsc::channel();
    db.submit(|db| db.get("people", &Key::from(1)), move |r| rtx.send(r).unwrap()).unwrap();
    let open_error = rx.recv().unwrap().unwrap_err();
    assert_eq!(open_error.code(), ErrorCode::Schema);
    let request_error = rrx.recv().unwrap().unwrap_err();
    assert_eq!(request_error.code(), ErrorCode::Schema);
    assert!(
        request_error.to_string().contains("did not open")
            && request_error.to_string().contains("newer than the schema's version 1"),
        "{request_error}"
    );
}

#[allow(non_snake_case)]
fn Database_open_v2(path: &str) {
    let v2 = Schema::from_json(&PEOPLE.replace("\"version\": 1", "\"version\": 2")).unwrap();
    objstore_db_core::Database::open(path, Some(v2), &OpenOptions::default()).unwrap();
}

/// A completion on the worker may close the database while another thread waits for room in
/// a full queue: neither waits for the other (review N6). The waiting request fails Closed or
/// runs; close's callback comes.
#[test]
fn close_from_a_callback_while_a_submitter_waits_for_room() {
    let (_dir, path) = temp_path();
    let options = ExecutorOptions { queue_capacity: 1, ..Default::default() };
    let (tx, rx) = mpsc::channel();
    let db = Arc::new(
        AsyncDatabase::open(&path, Some(parse(PEOPLE).unwrap()), options, move |r| tx.send(r).unwrap()).unwrap(),
    );
    rx.recv().unwrap().unwrap();
    let (closed_tx, closed_rx) = mpsc::channel();
    let closer = db.clone();
    db.submit(
        |db| db.count("people", &Default::default()),
        move |_| {
            // Hold the worker while the producer below fills the queue and waits for room.
            thread::sleep(Duration::from_millis(200));
            closer.close(move |r| closed_tx.send(r).unwrap()).unwrap();
        },
    )
    .unwrap();
    let producer = {
        let db = db.clone();
        thread::spawn(move || {
            (0..20)
                .map(|_| db.submit(|db| db.count("people", &Default::default()), |_| {}))
                .filter(Result::is_err)
                .count()
        })
    };
    let closed = closed_rx.recv_timeout(Duration::from_secs(30));
    assert!(
        matches!(closed, Ok(Ok(()))),
        "close's callback never came: the worker and the producer wait for each other"
    );
    assert!(producer.join().unwrap() > 0, "the producer's later requests find the database closed");
}
