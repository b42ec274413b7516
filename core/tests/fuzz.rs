//! Fuzzed inputs (issue 12): property tests over the key codec, the SQL front end and the
//! schema JSON (the XML listing parser's are beside it, in core/src/bucket/listing.rs; the C entry
//! points' in ffi/tests/capi_fuzz.rs). Every input is an answer or a clear error: no panic, no
//! hang, and never an `Internal` error. `tests/run-all` runs the default 256 cases a property;
//! `PROPTEST_CASES=100000 cargo test -p objstore-db-core --test fuzz` fuzzes longer.

use objstore_db_core::{sql, Database, ErrorCode, Key, MechanismKind, OpenOptions, Schema};
use proptest::prelude::*;
use serde_json::{json, Value};

fn key() -> impl Strategy<Value = Key> {
    let leaf = prop_oneof![
        any::<f64>().prop_filter("finite", |n| n.is_finite()).prop_map(Key::Number),
        (-9.0e15f64..9.0e15).prop_map(|n| Key::Date(n.trunc())),
        ".{0,8}".prop_map(Key::String),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(Key::Binary),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| prop::collection::vec(inner, 0..4).prop_map(Key::Array))
}

/// JSON of any shape, biased towards what schemas and records hold.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |n| n.is_finite()).prop_map(Value::from),
        prop::sample::select(vec!["", "s", "id", "a.b", "x, y", "name", "keyPath", "..", "Sync"]).prop_map(Value::from),
        ".{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let names = prop::sample::select(vec![
            "name",
            "keyPath",
            "autoIncrement",
            "indexes",
            "unique",
            "multiEntry",
            "stores",
            "version",
            "dispatchEvents",
            "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((names, inner), 0..5)
                .prop_map(|fields| { Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect()) }),
        ]
    })
}

/// Statements of the subset's shape with random parts, so that many run; and token soup.
fn sql_text() -> impl Strategy<Value = String> {
    let pick = |options: &[&'static str]| prop::sample::select(options.to_vec());
    let select = (
        pick(&["*", "id", "a, b.c", "\"a\"", "COUNT(*)", "MAX(a), MIN(id)", "SUM(b.c) AS n", "*, a"]),
        pick(&["s", "t", "nope"]),
        pick(&[
            "",
            "WHERE a = 1",
            "WHERE a = ? AND id > ?",
            "WHERE tags = 'x'",
            "WHERE ok = TRUE",
            "WHERE id LIKE 'x%'",
            "WHERE a < NULL",
        ]),
        pick(&["", "ORDER BY a", "ORDER BY b.c DESC", "ORDER BY a, id", "ORDER BY tags"]),
        pick(&["", "LIMIT 2", "LIMIT ? OFFSET 1", "LIMIT -1"]),
    )
        .prop_map(|(cols, from, filter, order, limit)| format!("SELECT {cols} FROM {from} {filter} {order} {limit}"));
    let write = (pick(&[
        "INSERT INTO s (id, a) VALUES (?, ?)",
        "INSERT INTO s VALUES (?)",
        "INSERT OR REPLACE INTO s (id, b.c) VALUES (7, NULL)",
        "UPDATE s SET a = ?",
        "UPDATE s SET b.c = NULL WHERE id = 1",
        "UPDATE s SET id = 99",
        "DELETE FROM s WHERE a >= ?",
        "INSERT INTO t (x) VALUES (1), (2)",
        "EXPLAIN SELECT COUNT(*) FROM s WHERE a = ?",
    ]),)
        .prop_map(|(text,)| text.to_string());
    prop_oneof![select, write, token_soup()]
}

fn token_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "SELECT", "*", ",", "FROM", "s", "t", "WHERE", "AND", "OR", "=", "<", ">=", "?", "?2", "$1", "1", "-2.5",
        "'x'", "'%'", "TRUE", "NULL", "ORDER", "BY", "DESC", "LIMIT", "OFFSET", "INSERT", "INTO", "VALUES", "(", ")",
        "UPDATE", "SET", "DELETE", "COUNT(*)", "MAX(a)", "a", "a.b", "\"a.b\"", "LIKE", "EXPLAIN", "JOIN", ";",
    ]);
    prop::collection::vec(token, 0..16).prop_map(|tokens| tokens.join(" "))
}

fn memory_db() -> Database {
    let schema = Schema::from_json(
        r#"{"stores": [{"name": "s", "keyPath": "id", "indexes": [{"keyPath": "a"}, {"keyPath": "tags", "multiEntry": true}]},
                       {"name": "t", "autoIncrement": true}]}"#,
    )
    .unwrap();
    let options = OpenOptions { mechanism: MechanismKind::Memory, ..OpenOptions::default() };
    let mut db = Database::open("fuzz", Some(schema), &options).unwrap();
    for i in 0..5 {
        db.put("s", json!({"id": i, "a": i % 2, "b": {"c": i}, "tags": ["x", i]}), None).unwrap();
    }
    db
}

proptest! {
    #[test]
    fn keys_round_trip_and_encode_in_order(a in key(), b in key()) {
        let (ea, eb) = (a.encode().unwrap(), b.encode().unwrap());
        prop_assert_eq!(Key::decode(&ea).unwrap(), a.clone());
        prop_assert_eq!(ea.cmp(&eb), a.cmp(&b), "byte order is key order: {:?} vs {:?}", a, b);
    }

    #[test]
    fn any_bytes_decode_to_a_key_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(key) = Key::decode(&bytes) {
            // What decodes encodes back to a key that decodes the same.
            prop_assert_eq!(Key::decode(&key.encode().unwrap()).unwrap(), key);
        }
    }

    #[test]
    fn json_keys_are_keys_or_errors(value in json_value()) {
        if let Ok(key) = Key::from_json(&value) {
            prop_assert_eq!(Key::from_json(&key.to_json()).unwrap(), key);
        }
    }

    #[test]
    fn sql_is_an_answer_or_a_clear_error(text in sql_text(), params in prop::collection::vec(json_value(), 0..3)) {
        let mut db = memory_db();
        if let Err(e) = sql::execute(&mut db, &text, &params) {
            prop_assert_ne!(e.code(), ErrorCode::Internal, "{}: {}", text, e);
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn any_sql_text_is_refused_cleanly(text in ".{0,64}") {
        let mut db = memory_db();
        if let Err(e) = sql::execute(&mut db, &text, &[]) {
            prop_assert_ne!(e.code(), ErrorCode::Internal, "{}: {}", text, e);
        }
    }

    #[test]
    fn schemas_open_or_are_refused_cleanly(value in json_value(), stores in prop::collection::vec(json_value(), 0..3)) {
        let mut candidates = vec![value];
        candidates.push(json!({"stores": stores}));
        for candidate in candidates {
            let Ok(schema) = Schema::from_json(&candidate.to_string()) else { continue };
            let options = OpenOptions { mechanism: MechanismKind::Memory, ..OpenOptions::default() };
            match Database::open("fuzz", Some(schema), &options) {
                Ok(mut db) => {
                    let names: Vec<String> = db.schema().stores.iter().map(|s| s.name.clone()).collect();
                    for name in names {
                        let _ = db.put(&name, json!({"id": 1, "a": [1, "x"]}), None);
                    }
                }
                Err(e) => prop_assert_ne!(e.code(), ErrorCode::Internal, "{}: {}", candidate, e),
            }
        }
    }
}
