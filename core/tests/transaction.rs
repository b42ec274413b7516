//! The transaction suite: atomic work across stores, rollback on any error, readonly and scope
//! checks, and the explicit begin/commit/abort form with waiting work and an idle timeout.

#[macro_use]
mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use objstore_db_core::{
    AsyncDatabase, Error, ErrorCode, ExecutorOptions, Key, KeyRange, Mode, OpenOptions, ScanOptions,
};
use serde_json::json;

for_each_mechanism! {
    fn run_commits_writes_to_several_stores_together(kind) {
        let mut db = people(kind);
        let note = db.run(&["people", "notes"], Mode::ReadWrite, |tx| {
            tx.put("people", person(1, "ada", "a@x", "paris", 36), None)?;
            tx.put("notes", json!("about ada"), None)
        }).unwrap();
        assert_eq!(db.get("notes", &note).unwrap(), Some(json!("about ada")));
        assert!(db.get("people", &Key::from(1)).unwrap().is_some());
    }

    fn an_error_inside_run_rolls_back_every_store(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        let err = db.run(&["people", "notes"], Mode::ReadWrite, |tx| {
            tx.put("notes", json!("kept?"), None)?;
            tx.put("people", person(1, "changed", "a@x", "paris", 36), None)?;
            tx.remove("people", &KeyRange::lower(0, false))?;
            tx.add("people", person(2, "clash", "a@x", "oslo", 1), None)?;
            tx.add("people", person(3, "dup", "d@x", "oslo", 1), None)?;
            tx.add("people", person(3, "dup", "e@x", "oslo", 1), None)
        }).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint);
        assert_eq!(db.count("notes", &ScanOptions::new()).unwrap(), 0);
        assert_eq!(db.get("people", &Key::from(1)).unwrap().unwrap()["name"], "ada");
        assert_eq!(db.count("people", &ScanOptions::new().index("email")).unwrap(), 1);
        // The key generator rolled back too.
        assert_eq!(db.put("notes", json!("first for real"), None).unwrap(), Key::from(1));
    }

    fn a_write_in_a_readonly_transaction_is_an_error_naming_the_store(kind) {
        let mut db = people(kind);
        let err = db.run(&["people"], Mode::ReadOnly, |tx| tx.put("people", person(1, "a", "a", "a", 1), None)).unwrap_err();
        assert!(matches!(&err, Error::ReadOnly { store } if store == "people"), "{err}");
        assert_eq!(err.code(), ErrorCode::ReadOnly);
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 0);
    }

    fn a_store_outside_the_scope_is_an_error(kind) {
        let mut db = people(kind);
        let err = db.run(&["people"], Mode::ReadWrite, |tx| tx.get("notes", &Key::from(1))).unwrap_err();
        assert!(err.to_string().contains("store \"notes\" is not in the scope of this transaction"), "{err}");
        let err = db.run(&[], Mode::ReadOnly, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("at least one store"), "{err}");
        let err = db.run(&["nope"], Mode::ReadOnly, |_| Ok(())).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotFound);
    }

    fn explicit_commit_keeps_and_explicit_abort_discards(kind) {
        let mut db = people(kind);
        let t1 = db.begin(&["people"], Mode::ReadWrite).unwrap();
        db.transaction(t1).unwrap().put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        assert!(db.transaction(t1).unwrap().get("people", &Key::from(1)).unwrap().is_some(), "a transaction reads its own writes");
        db.commit(t1).unwrap();
        let t2 = db.begin(&["people"], Mode::ReadWrite).unwrap();
        db.transaction(t2).unwrap().put("people", person(2, "bob", "b@x", "oslo", 25), None).unwrap();
        db.transaction(t2).unwrap().clear("people").unwrap();
        db.abort(t2).unwrap();
        assert_eq!(db.keys("people", &ScanOptions::new()).unwrap(), vec![Key::from(1)]);
    }

    fn a_finished_transaction_says_why_it_is_inactive(kind) {
        let mut db = people(kind);
        let t = db.begin(&["people"], Mode::ReadOnly).unwrap();
        db.commit(t).unwrap();
        let err = db.transaction(t).err().unwrap();
        assert!(err.to_string().contains(&format!("transaction {t} is not active: it was committed")), "{err}");
        assert!(db.commit(999).unwrap_err().to_string().contains("no such transaction was started"));
    }

    fn only_one_explicit_transaction_is_active_at_a_time(kind) {
        let mut db = people(kind);
        let t = db.begin(&["people"], Mode::ReadWrite).unwrap();
        let err = db.begin(&["notes"], Mode::ReadWrite).unwrap_err();
        assert!(err.to_string().contains(&format!("transaction {t} is still active")), "{err}");
        let err = db.put("notes", json!(1), None).unwrap_err();
        assert!(err.to_string().contains("still active"), "{err}");
        db.abort(t).unwrap();
    }

    fn a_failed_operation_writes_nothing_and_the_transaction_goes_on(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        let t = db.begin(&["people"], Mode::ReadWrite).unwrap();
        let mut tx = db.transaction(t).unwrap();
        tx.put("people", person(2, "bob", "b@x", "oslo", 25), None).unwrap();
        assert!(tx.put("people", person(3, "cy", "a@x", "oslo", 25), None).is_err());
        tx.put("people", person(4, "dee", "d@x", "oslo", 41), None).unwrap();
        db.commit(t).unwrap();
        assert_eq!(db.keys("people", &ScanOptions::new()).unwrap(), vec![Key::from(1), Key::from(2), Key::from(4)]);
        assert_eq!(db.count("people", &ScanOptions::new().index("email")).unwrap(), 3);
    }

    fn a_store_created_in_an_aborted_transaction_disappears(kind) {
        let mut db = open(kind, None);
        let t = db.begin(&["scratch"], Mode::ReadWrite).unwrap();
        db.transaction(t).unwrap().put("scratch", json!(1), None).unwrap();
        db.abort(t).unwrap();
        assert!(db.schema().store("scratch").is_none());
        assert_eq!(db.get("scratch", &Key::from(1)).unwrap_err().code(), ErrorCode::NotFound);
        db.put("scratch", json!(1), None).unwrap();
        assert!(db.schema().store("scratch").is_some());
    }

    /// As IndexedDB queues overlapping transactions: a request outside an open transaction,
    /// and a second `begin`, wait (first come, first served) while the open one's own requests
    /// keep running; once it commits they run, in order, and see its writes.
    fn requests_outside_an_open_transaction_wait_their_turn(kind) {
        let (_dir, path) = temp_path();
        let options = ExecutorOptions { open: OpenOptions { mechanism: kind, ..Default::default() }, ..Default::default() };
        let db = AsyncDatabase::open(&path, Some(parse(PEOPLE).unwrap()), options, |r| r.unwrap()).unwrap();
        let (begun_tx, begun_rx) = mpsc::channel();
        db.begin(vec!["people".into()], Mode::ReadWrite, move |r| begun_tx.send(r.unwrap()).unwrap()).unwrap();
        let t = begun_rx.recv().unwrap();
        let (turns_tx, turns) = mpsc::channel();
        let read_turn = turns_tx.clone();
        db.submit(|db| db.get("people", &Key::from(1)), move |r| read_turn.send(format!("read {}", r.unwrap().is_some())).unwrap()).unwrap();
        let second = std::sync::Arc::new(std::sync::Mutex::new(None));
        let second_id = second.clone();
        db.begin(vec!["people".into()], Mode::ReadWrite, move |r| {
            *second_id.lock().unwrap() = Some(r.unwrap());
            turns_tx.send("second begun".to_string()).unwrap();
        })
        .unwrap();
        assert!(turns.recv_timeout(Duration::from_millis(300)).is_err(), "nothing outside runs while it is open");
        let put = |id| {
            let (put_tx, put_rx) = mpsc::channel();
            db.submit_in(t, move |tx| tx.put("people", person(id, "ada", &format!("{id}@x"), "paris", 36), None), move |r| put_tx.send(r).unwrap()).unwrap();
            put_rx.recv().unwrap().unwrap();
        };
        put(1);
        put(2);
        let (done_tx, done_rx) = mpsc::channel();
        db.commit(t, move |r| done_tx.send(r).unwrap()).unwrap();
        done_rx.recv().unwrap().unwrap();
        assert_eq!(turns.recv().unwrap(), "read true", "the read came first and sees the commit");
        assert_eq!(turns.recv().unwrap(), "second begun");
        let t2 = second.lock().unwrap().expect("begun");
        assert_ne!(t2, t);
        let (done_tx, done_rx) = mpsc::channel();
        db.submit_in(t2, |tx| tx.remove("people", &KeyRange::only(2)), |r| assert_eq!(r.unwrap(), 1)).unwrap();
        db.commit(t2, move |r| done_tx.send(r).unwrap()).unwrap();
        done_rx.recv().unwrap().unwrap();
        assert_eq!(call(&db, |db| db.count("people", &ScanOptions::new())).unwrap(), 1);
    }

    /// A request waiting for a transaction that is cancelled completes at once (Cancelled),
    /// not when the transaction ends; requests waiting for it still take room in the queue, and
    /// the transaction's own requests never wait for that room.
    fn waiting_requests_can_be_cancelled_and_count_for_backpressure(kind) {
        let (_dir, path) = temp_path();
        let options = ExecutorOptions { open: OpenOptions { mechanism: kind, ..Default::default() }, queue_capacity: 2, ..Default::default() };
        let db = std::sync::Arc::new(AsyncDatabase::open(&path, Some(parse(PEOPLE).unwrap()), options, |r| r.unwrap()).unwrap());
        let (begun_tx, begun_rx) = mpsc::channel();
        db.begin(vec!["people".into()], Mode::ReadWrite, move |r| begun_tx.send(r.unwrap()).unwrap()).unwrap();
        let t = begun_rx.recv().unwrap();
        let token = objstore_db_core::sync::Token::default();
        let (cancelled_tx, cancelled_rx) = mpsc::channel();
        db.submit_as(None, token.clone(), |db| db.count("people", &ScanOptions::new()), move |r| cancelled_tx.send(r).unwrap()).unwrap();
        token.cancel();
        db.wake();
        let err = cancelled_rx.recv_timeout(Duration::from_secs(30)).expect("it completes while the transaction is open").unwrap_err();
        assert_eq!(err.code(), ErrorCode::Cancelled, "{err}");
        // Two requests wait for the transaction and fill the queue; a third submitter waits for
        // room, while the transaction's own requests go on.
        let (outside_tx, outside_rx) = mpsc::channel();
        for _ in 0..2 {
            let done = outside_tx.clone();
            db.submit(|db| db.count("people", &ScanOptions::new()), move |r| done.send(r.unwrap()).unwrap()).unwrap();
        }
        let third = {
            let (db, done) = (db.clone(), outside_tx.clone());
            std::thread::spawn(move || db.submit(|db| db.count("people", &ScanOptions::new()), move |r| done.send(r.unwrap()).unwrap()).unwrap())
        };
        for id in 1..=3 {
            let (put_tx, put_rx) = mpsc::channel();
            db.submit_in(t, move |tx| tx.put("people", person(id, "ada", &format!("{id}@x"), "paris", 36), None), move |r| put_tx.send(r).unwrap()).unwrap();
            put_rx.recv_timeout(Duration::from_secs(30)).expect("the transaction's own request is not held").unwrap();
        }
        let (done_tx, done_rx) = mpsc::channel();
        db.commit(t, move |r| done_tx.send(r).unwrap()).unwrap();
        done_rx.recv().unwrap().unwrap();
        third.join().unwrap();
        let counts: Vec<u64> = (0..3).map(|_| outside_rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
        assert_eq!(counts, vec![3, 3, 3], "each ran after the commit and saw it");
    }

    fn an_idle_explicit_transaction_is_aborted_and_work_then_runs(kind) {
        let (_dir, path) = temp_path();
        let options = ExecutorOptions { open: OpenOptions { mechanism: kind, ..Default::default() }, idle_transaction_timeout: Duration::from_millis(200), ..Default::default() };
        let db = AsyncDatabase::open(&path, Some(parse(PEOPLE).unwrap()), options, |r| r.unwrap()).unwrap();
        let (begun_tx, begun_rx) = mpsc::channel();
        db.begin(vec!["people".into()], Mode::ReadWrite, move |r| begun_tx.send(r.unwrap()).unwrap()).unwrap();
        let t = begun_rx.recv().unwrap();
        let (put_tx, put_rx) = mpsc::channel();
        db.submit_in(t, |tx| tx.put("people", person(1, "ada", "a@x", "paris", 36), None), move |r| put_tx.send(r).unwrap()).unwrap();
        put_rx.recv().unwrap().unwrap();
        // This request waits for the transaction; the idle timeout ends it, then it runs.
        let waiting = call(&db, |db| db.count("people", &ScanOptions::new()));
        assert_eq!(waiting.unwrap(), 0, "the idle transaction's write was rolled back");
        let (late_tx, late_rx) = mpsc::channel();
        db.submit_in(t, |tx| tx.get("people", &Key::from(1)), move |r| late_tx.send(r).unwrap()).unwrap();
        let err = late_rx.recv().unwrap().unwrap_err();
        assert!(err.to_string().contains("aborted after 200 ms without a request"), "{err}");
        assert!(err.to_string().contains("while 1 request(s) outside it waited for it to end"), "{err}");
    }
}
