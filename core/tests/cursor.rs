//! The cursor suite: records streamed one at a time with their keys, updated and deleted in
//! place, stopped early, and refused writes where the transaction or the key forbids them.

#[macro_use]
mod common;

use common::*;
use objstore_db_core::{ErrorCode, Key, Mode, Op, Query, Step};
use serde_json::json;

const SCHEMA: &str = r#"{"stores": [
  {"name": "items", "keyPath": "id", "indexes": [{"keyPath": "group"}, {"keyPath": "n"}]},
  {"name": "loose"}
]}"#;

fn seeded(kind: objstore_db_core::MechanismKind) -> TestDb {
    let mut db = open(kind, Some(SCHEMA));
    db.run(&["items", "loose"], Mode::ReadWrite, |tx| {
        for i in 1..=600 {
            tx.put("items", json!({"id": i, "group": format!("g{}", i % 3), "n": i % 50}), None)?;
        }
        tx.put("loose", json!({"n": 1}), Some(Key::from("a")))?;
        tx.put("loose", json!({"n": 2}), Some(Key::from("b")))?;
        Ok(())
    })
    .unwrap();
    db
}

for_each_mechanism! {
    fn a_cursor_streams_every_match_in_order_with_its_keys(kind) {
        let mut db = seeded(kind);
        let mut seen = Vec::new();
        let q = Query::from("items").filter("group", Op::Eq, "g1").order("n");
        let visited = q.open(&mut db, Mode::ReadOnly, |item| {
            seen.push((item.key.clone(), item.primary_key.clone(), item.value["n"].as_i64().unwrap()));
            Ok(Step::Continue)
        }).unwrap();
        assert_eq!(visited, 200, "more than one read-ahead batch");
        assert_eq!(seen.len(), 200);
        assert!(seen.windows(2).all(|w| (w[0].2, &w[0].1) < (w[1].2, &w[1].1)), "ordered by n, then primary key");
        assert_eq!((seen[0].0.clone(), seen[0].1.clone()), (Key::from(0), Key::from(100)), "the key is the order key");
    }

    fn update_inside_a_readwrite_cursor_rewrites_the_record_and_its_indexes(kind) {
        let mut db = seeded(kind);
        Query::from("items").filter("group", Op::Eq, "g0").open(&mut db, Mode::ReadWrite, |item| {
            let mut v = item.value.clone();
            v["group"] = json!("moved");
            item.update(v);
            Ok(Step::Continue)
        }).unwrap();
        assert_eq!(Query::from("items").filter("group", Op::Eq, "g0").count(&mut db).unwrap(), 0);
        assert_eq!(Query::from("items").filter("group", Op::Eq, "moved").count(&mut db).unwrap(), 200);
        assert_eq!(db.get("items", &Key::from(3)).unwrap().unwrap()["group"], "moved");
    }

    fn delete_inside_a_cursor_removes_each_record_it_is_asked_to(kind) {
        let mut db = seeded(kind);
        let visited = Query::from("items").open(&mut db, Mode::ReadWrite, |item| {
            if item.value["n"].as_i64().unwrap() % 2 == 0 {
                item.delete();
            }
            Ok(Step::Continue)
        }).unwrap();
        assert_eq!(visited, 600);
        assert_eq!(Query::from("items").count(&mut db).unwrap(), 300);
        assert_eq!(Query::from("items").filter("n", Op::Eq, 4).count(&mut db).unwrap(), 0);
    }

    fn a_cursor_stops_when_told(kind) {
        let mut db = seeded(kind);
        let mut seen = 0;
        let visited = Query::from("items").open(&mut db, Mode::ReadOnly, |_| {
            seen += 1;
            Ok(if seen == 5 { Step::Stop } else { Step::Continue })
        }).unwrap();
        assert_eq!((visited, seen), (5, 5));
    }

    fn a_write_from_a_readonly_cursor_is_refused_and_nothing_changes(kind) {
        let mut db = seeded(kind);
        let err = Query::from("items").open(&mut db, Mode::ReadOnly, |item| {
            item.delete();
            Ok(Step::Continue)
        }).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadOnly);
        assert_eq!(Query::from("items").count(&mut db).unwrap(), 600);
    }

    fn an_update_that_would_change_the_key_is_refused_and_rolled_back(kind) {
        let mut db = seeded(kind);
        let err = Query::from("items").open(&mut db, Mode::ReadWrite, |item| {
            let mut v = item.value.clone();
            if item.primary_key == Key::from(1) {
                v["n"] = json!(-1);
            } else {
                v["id"] = json!(-7);
            }
            item.update(v);
            Ok(Step::Continue)
        }).unwrap_err();
        assert!(err.to_string().contains("would change its key to -7"), "{err}");
        assert_eq!(db.get("items", &Key::from(1)).unwrap().unwrap()["n"], 1, "the whole cursor's work rolled back");
    }

    fn a_callback_error_stops_the_cursor_and_rolls_back_its_writes(kind) {
        let mut db = seeded(kind);
        let mut seen = 0;
        let err = Query::from("items").open(&mut db, Mode::ReadWrite, |item| {
            seen += 1;
            item.delete();
            if seen == 10 {
                return Err(objstore_db_core::Error::InvalidArgument("caller gave up".into()));
            }
            Ok(Step::Continue)
        }).unwrap_err();
        assert!(err.to_string().contains("caller gave up"));
        assert_eq!(Query::from("items").count(&mut db).unwrap(), 600);
    }

    fn cursors_work_on_stores_with_out_of_line_keys(kind) {
        let mut db = seeded(kind);
        Query::from("loose").open(&mut db, Mode::ReadWrite, |item| {
            let n = item.value["n"].as_i64().unwrap();
            item.update(json!({"n": n * 10}));
            Ok(Step::Continue)
        }).unwrap();
        assert_eq!(db.get("loose", &Key::from("b")).unwrap(), Some(json!({"n": 20})));
    }
}
