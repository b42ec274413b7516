//! The event suite: created, updated and deleted after commit (never for rolled-back work),
//! ready and error, filters, and listeners that misbehave.

#[macro_use]
mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use objstore_db_core::{
    AsyncDatabase, Event, EventFilter, EventKind, ExecutorOptions, Key, KeyRange, MechanismKind, Mode, OpenOptions,
};
use serde_json::json;

type Log = Arc<Mutex<Vec<Event>>>;

fn record(db: &mut TestDb, filter: EventFilter) -> Log {
    let log: Log = Arc::default();
    let sink = log.clone();
    db.subscribe(filter, Box::new(move |e| sink.lock().unwrap().push(e.clone())));
    log
}

fn kinds(log: &Log) -> Vec<&'static str> {
    log.lock().unwrap().iter().map(|e| e.kind.name()).collect()
}

for_each_mechanism! {
    fn created_and_updated_are_told_apart_and_carry_store_key_and_value(kind) {
        let mut db = people(kind);
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Created, EventKind::Updated]));
        db.put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        db.put("people", person(1, "ann", "a@x", "paris", 36), None).unwrap();
        let events = log.lock().unwrap().clone();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].kind, EventKind::Created);
        assert_eq!(events[1].kind, EventKind::Updated);
        assert_eq!(events[1].store.as_deref(), Some("people"));
        assert_eq!(events[1].key, Some(Key::from(1)));
        assert_eq!(events[1].value.as_ref().unwrap()["name"], "ann");
    }

    fn deleted_carries_the_removed_record_and_clear_has_no_key(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        db.put("people", person(2, "bob", "b@x", "oslo", 25), None).unwrap();
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Deleted]));
        db.remove("people", &KeyRange::only(1)).unwrap();
        db.remove("people", &KeyRange::only(42)).unwrap();
        db.clear("people").unwrap();
        let events = log.lock().unwrap().clone();
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0].key, Some(Key::from(1)));
        assert_eq!(events[0].value.as_ref().unwrap()["name"], "ada");
        assert_eq!(events[1].key, None);
    }

    fn change_events_arrive_after_commit_in_the_order_made(kind) {
        let mut db = people(kind);
        let log = record(&mut db, EventFilter::all());
        let seen_inside = db.run(&["people", "notes"], Mode::ReadWrite, |tx| {
            tx.put("people", person(1, "ada", "a@x", "paris", 36), None)?;
            tx.put("notes", json!("n"), None)?;
            tx.remove("people", &KeyRange::only(1))?;
            Ok(())
        });
        seen_inside.unwrap();
        let events = log.lock().unwrap().clone();
        let summary: Vec<_> = events.iter().map(|e| (e.kind.name(), e.store.clone().unwrap_or_default())).collect();
        assert_eq!(summary[0].0, "ready");
        assert_eq!(&summary[1..], [("created", "people".to_string()), ("created", "notes".to_string()), ("deleted", "people".to_string())]);
    }

    fn nothing_is_announced_before_commit(kind) {
        let mut db = people(kind);
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Created]));
        let during = db.run(&["people"], Mode::ReadWrite, |tx| {
            tx.put("people", person(1, "ada", "a@x", "paris", 36), None)?;
            Ok(log.lock().unwrap().len())
        });
        assert_eq!(during.unwrap(), 0);
        assert_eq!(kinds(&log), ["created"]);
    }

    fn rolled_back_work_announces_no_change_but_an_error(kind) {
        let mut db = people(kind);
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Created, EventKind::Error]));
        let failed = db.run(&["people"], Mode::ReadWrite, |tx| {
            tx.put("people", person(1, "ada", "a@x", "paris", 36), None)?;
            tx.add("people", person(1, "dup", "d@x", "paris", 36), None)
        });
        assert!(failed.is_err());
        let txid = db.begin(&["people"], Mode::ReadWrite).unwrap();
        db.transaction(txid).unwrap().put("people", person(2, "bob", "b@x", "oslo", 1), None).unwrap();
        db.abort(txid).unwrap();
        let events = log.lock().unwrap().clone();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].kind, EventKind::Error);
        assert!(events[0].message.as_ref().unwrap().contains("already exists"));
    }

    fn filters_select_kinds_and_stores(kind) {
        let mut db = people(kind);
        let notes_only = record(&mut db, EventFilter::all().store("notes"));
        let updates_only = record(&mut db, EventFilter::kinds(&[EventKind::Updated]));
        db.put("people", person(1, "ada", "a@x", "paris", 36), None).unwrap();
        db.put("people", person(1, "ann", "a@x", "paris", 36), None).unwrap();
        db.put("notes", json!("n"), None).unwrap();
        assert_eq!(kinds(&notes_only), ["ready", "created"]);
        assert_eq!(kinds(&updates_only), ["updated"]);
    }

    fn dispatch_events_false_silences_a_store(kind) {
        let schema = r#"{"stores": [{"name": "quiet", "dispatchEvents": false}, {"name": "loud"}]}"#;
        let mut db = open(kind, Some(schema));
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Created]));
        db.put("quiet", json!(1), Some(Key::from(1))).unwrap();
        db.put("loud", json!(1), Some(Key::from(1))).unwrap();
        let stores: Vec<_> = log.lock().unwrap().iter().map(|e| e.store.clone().unwrap()).collect();
        assert_eq!(stores, ["loud"]);
    }

    fn unsubscribed_listeners_hear_nothing_more(kind) {
        let mut db = people(kind);
        let log: Log = Arc::default();
        let sink = log.clone();
        let id = db.subscribe(EventFilter::kinds(&[EventKind::Created]), Box::new(move |e| sink.lock().unwrap().push(e.clone())));
        db.put("notes", json!(1), None).unwrap();
        assert!(db.unsubscribe(id));
        assert!(!db.unsubscribe(id));
        db.put("notes", json!(2), None).unwrap();
        assert_eq!(kinds(&log), ["created"]);
    }

    fn a_panicking_listener_is_dropped_and_the_others_still_hear(kind) {
        let mut db = people(kind);
        db.subscribe(EventFilter::kinds(&[EventKind::Created]), Box::new(|_| panic!("listener bug")));
        let log = record(&mut db, EventFilter::kinds(&[EventKind::Created]));
        db.put("notes", json!(1), None).unwrap();
        db.put("notes", json!(2), None).unwrap();
        assert_eq!(kinds(&log), ["created", "created"]);
    }

    fn ready_reaches_a_listener_subscribed_through_the_executor(kind) {
        let (_dir, path) = temp_path();
        let options = ExecutorOptions { open: OpenOptions { mechanism: kind, ..Default::default() }, ..Default::default() };
        let db = AsyncDatabase::open(&path, Some(parse(PEOPLE).unwrap()), options, |r| r.unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        db.subscribe(EventFilter::all(), Box::new(move |e| { let _ = tx.send((e.kind, std::thread::current().name().map(str::to_string))); }), |r| { r.unwrap(); }).unwrap();
        let (kind_seen, thread) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(kind_seen, EventKind::Ready);
        assert!(thread.unwrap().starts_with("objstore-db"), "listeners run on the worker thread");
        call(&db, |db| db.put("notes", json!(1), None)).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap().0, EventKind::Created);
    }
}

#[test]
fn error_events_name_the_failure() {
    let mut db = people(MechanismKind::Memory);
    let log = record(&mut db, EventFilter::kinds(&[EventKind::Error]));
    let _ = db.put("people", json!({"name": "no id"}), None);
    let events = log.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].store.as_deref(), Some("people"));
    assert!(events[0].message.as_ref().unwrap().contains("no usable key at key path \"id\""));
}
