//! The crud suite: put, add, get, remove, clear, count, keys and values over stores and
//! indexes, key ranges, key generation, schemas and migrations, on both mechanisms.

#[macro_use]
mod common;

use common::*;
use objstore_db_core::{Error, ErrorCode, EventFilter, EventKind, Key, KeyRange, Mode, ScanOptions};
use serde_json::json;

fn names(values: &[serde_json::Value]) -> Vec<String> {
    values.iter().map(|v| v["name"].as_str().unwrap().to_string()).collect()
}

fn numbers(keys: &[Key]) -> Vec<i64> {
    keys.iter()
        .map(|k| match k {
            Key::Number(n) => *n as i64,
            other => panic!("not a number key: {other}"),
        })
        .collect()
}

/// Five people: ids 1..=5, cities and ages chosen so that indexes have ties.
fn seed(db: &mut TestDb) {
    for p in [
        person(1, "ada", "ada@x", "paris", 36),
        person(2, "bob", "bob@x", "oslo", 25),
        person(3, "cy", "cy@x", "paris", 25),
        person(4, "dee", "dee@x", "oslo", 41),
        person(5, "bob", "bob2@x", "paris", 36),
    ] {
        db.put("people", p, None).unwrap();
    }
}

for_each_mechanism! {
    fn put_then_get_returns_the_record(kind) {
        let mut db = people(kind);
        let key = db.put("people", person(7, "ada", "a@x", "paris", 36), None).unwrap();
        assert_eq!(key, Key::from(7));
        assert_eq!(db.get("people", &Key::from(7)).unwrap(), Some(person(7, "ada", "a@x", "paris", 36)));
    }

    fn a_batch_writes_whole_or_not_and_its_error_names_the_batchs_record(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "ada@x", "paris", 36), None).unwrap();
        let batch = vec![person(2, "bob", "bob@x", "oslo", 25), person(3, "cy", "cy@x", "rome", 30), person(4, "dee", "ada@x", "oslo", 41)];
        let err = db.run(&["people"], Mode::ReadWrite, |tx| tx.write_many("people", batch.clone(), None, false)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint, "{err}");
        let message = err.to_string();
        assert!(message.starts_with("record 2 of the batch of 3 (key 4): "), "{message}");
        assert!(message.contains("email"), "the collision is still said: {message}");
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 1, "nothing of the batch stays");
        let keys = db.run(&["people"], Mode::ReadWrite, |tx| tx.write_many("people", batch[..2].to_vec(), None, true)).unwrap();
        assert_eq!(keys, vec![Key::from(2), Key::from(3)]);
        let err = db.run(&["people"], Mode::ReadWrite, |tx| tx.write_many("people", batch[..2].to_vec(), None, true)).unwrap_err();
        assert!(err.to_string().starts_with("record 0 of the batch of 2 (key 2): "), "{err}");
    }

    fn get_of_a_missing_key_is_none(kind) {
        let mut db = people(kind);
        assert_eq!(db.get("people", &Key::from(99)).unwrap(), None);
    }

    fn put_replaces_the_record_and_moves_its_index_entries(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "ada@x", "paris", 36), None).unwrap();
        db.put("people", person(1, "ann", "ann@x", "rome", 37), None).unwrap();
        let by_name = |db: &mut TestDb, name: &str| db.keys("people", &ScanOptions::new().index("name").range(KeyRange::only(name))).unwrap();
        assert!(by_name(&mut db, "ada").is_empty());
        assert_eq!(numbers(&by_name(&mut db, "ann")), vec![1]);
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 1);
        // The old unique value is free again.
        db.put("people", person(2, "x", "ada@x", "oslo", 1), None).unwrap();
    }

    fn add_of_an_existing_key_is_a_constraint_error_and_writes_nothing(kind) {
        let mut db = people(kind);
        db.add("people", person(1, "ada", "ada@x", "paris", 36), None).unwrap();
        let err = db.add("people", person(1, "bob", "bob@x", "oslo", 25), None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint);
        assert!(err.to_string().contains("key 1 already exists"), "{err}");
        assert_eq!(db.get("people", &Key::from(1)).unwrap().unwrap()["name"], "ada");
        assert!(db.keys("people", &ScanOptions::new().index("name").range(KeyRange::only("bob"))).unwrap().is_empty());
    }

    fn unique_index_clash_is_a_constraint_error_and_writes_nothing(kind) {
        let mut db = people(kind);
        db.put("people", person(1, "ada", "same@x", "paris", 36), None).unwrap();
        for write in [true, false] {
            let record = person(2, "bob", "same@x", "oslo", 25);
            let err = if write { db.put("people", record, None) } else { db.add("people", record, None) }.unwrap_err();
            assert_eq!(err.code(), ErrorCode::Constraint);
            assert!(err.to_string().contains("unique index \"email\""), "{err}");
            assert_eq!(db.get("people", &Key::from(2)).unwrap(), None);
            assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), 1, "no stray index entry");
        }
    }

    fn remove_by_key_and_by_range_deletes_records_and_index_entries(kind) {
        let mut db = people(kind);
        seed(&mut db);
        assert_eq!(db.remove("people", &KeyRange::only(3)).unwrap(), 1);
        assert_eq!(db.remove("people", &KeyRange::only(3)).unwrap(), 0);
        assert_eq!(db.remove("people", &KeyRange::bound(4, 10, false, false)).unwrap(), 2);
        assert_eq!(numbers(&db.keys("people", &ScanOptions::new()).unwrap()), vec![1, 2]);
        assert_eq!(db.count("people", &ScanOptions::new().index("city, age")).unwrap(), 2);
        assert_eq!(db.count("people", &ScanOptions::new().index("email")).unwrap(), 2);
    }

    fn clear_empties_the_store_and_its_indexes(kind) {
        let mut db = people(kind);
        seed(&mut db);
        db.clear("people").unwrap();
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 0);
        assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), 0);
        db.put("people", person(1, "ada", "ada@x", "paris", 36), None).unwrap();
        assert_eq!(db.count("people", &ScanOptions::new().index("email")).unwrap(), 1);
    }

    fn count_covers_store_index_range_and_unique(kind) {
        let mut db = people(kind);
        seed(&mut db);
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 5);
        assert_eq!(db.count("people", &ScanOptions::new().range(KeyRange::lower(3, true))).unwrap(), 2);
        assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), 5);
        assert_eq!(db.count("people", &ScanOptions::new().index("name").unique()).unwrap(), 4);
        assert_eq!(db.count("people", &ScanOptions::new().index("name").range(KeyRange::only("bob"))).unwrap(), 2);
    }

    fn keys_and_values_follow_index_order_with_limit_offset_and_reverse(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let by_name = ScanOptions::new().index("name");
        assert_eq!(names(&db.values("people", &by_name).unwrap()), ["ada", "bob", "bob", "cy", "dee"]);
        // Ties in the index are ordered by primary key.
        assert_eq!(numbers(&db.keys("people", &by_name).unwrap()), vec![1, 2, 5, 3, 4]);
        assert_eq!(numbers(&db.keys("people", &by_name.clone().offset(1).limit(2)).unwrap()), vec![2, 5]);
        assert_eq!(numbers(&db.keys("people", &by_name.clone().reverse()).unwrap()), vec![4, 3, 5, 2, 1]);
        assert_eq!(numbers(&db.keys("people", &by_name.clone().reverse().limit(2)).unwrap()), vec![4, 3]);
        assert_eq!(numbers(&db.keys("people", &ScanOptions::new().reverse().offset(1).limit(3)).unwrap()), vec![4, 3, 2]);
        assert!(db.keys("people", &by_name.clone().limit(0)).unwrap().is_empty());
        assert_eq!(db.values("people", &ScanOptions::new().limit(1)).unwrap()[0]["id"], 1);
    }

    fn unique_gives_one_lowest_primary_key_per_distinct_index_value(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let unique = ScanOptions::new().index("name").unique();
        assert_eq!(numbers(&db.keys("people", &unique).unwrap()), vec![1, 2, 3, 4]);
        assert_eq!(numbers(&db.keys("people", &unique.clone().reverse()).unwrap()), vec![4, 3, 2, 1]);
        assert_eq!(numbers(&db.keys("people", &unique.clone().reverse().limit(3)).unwrap()), vec![4, 3, 2]);
        assert_eq!(names(&db.values("people", &unique.clone().offset(1).limit(2)).unwrap()), ["bob", "cy"]);
    }

    fn unique_steps_over_long_runs_of_one_index_key(kind) {
        // Runs of 1 to 30 records share a name: past a few, the scan seeks to the next name.
        let mut db = people(kind);
        let mut id = 0;
        for (n, name) in ["ann", "ben", "cal", "dot", "eve"].iter().enumerate() {
            for _ in 0..[30, 1, 9, 8, 12][n] {
                id += 1;
                db.put("people", person(id, name, &format!("{id}@x"), "paris", 30), None).unwrap();
            }
        }
        let unique = ScanOptions::new().index("name").unique();
        assert_eq!(numbers(&db.keys("people", &unique).unwrap()), vec![1, 31, 32, 41, 49]);
        assert_eq!(numbers(&db.keys("people", &unique.clone().offset(1).limit(3)).unwrap()), vec![31, 32, 41]);
        assert_eq!(numbers(&db.keys("people", &unique.clone().reverse()).unwrap()), vec![49, 41, 32, 31, 1]);
        let from_cal = unique.clone().range(KeyRange::lower("cal", false));
        assert_eq!(names(&db.values("people", &from_cal).unwrap()), ["cal", "dot", "eve"]);
        assert_eq!(db.count("people", &unique).unwrap(), 5);
    }

    fn compound_index_orders_by_each_field_and_answers_a_leading_prefix(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let by_city_age = ScanOptions::new().index("city, age");
        assert_eq!(numbers(&db.keys("people", &by_city_age).unwrap()), vec![2, 4, 3, 1, 5]);
        let paris = by_city_age.clone().range(KeyRange::starts(Key::from(vec!["paris"])));
        assert_eq!(numbers(&db.keys("people", &paris).unwrap()), vec![3, 1, 5]);
        let exact = by_city_age.clone().range(KeyRange::only(Key::Array(vec!["paris".into(), 36.into()])));
        assert_eq!(numbers(&db.keys("people", &exact).unwrap()), vec![1, 5]);
        let paris_pairs = by_city_age.range(KeyRange::starts(Key::from(vec!["paris"]))).unique();
        assert_eq!(numbers(&db.keys("people", &paris_pairs).unwrap()), vec![3, 1]);
    }

    fn multi_entry_index_holds_one_entry_per_distinct_element(kind) {
        let mut db = people(kind);
        let mut p = person(1, "ada", "ada@x", "paris", 36);
        p["tags"] = json!(["red", "blue", "red", null, {"not": "a key"}]);
        db.put("people", p, None).unwrap();
        let tagged = |db: &mut TestDb, tag: &str| db.keys("people", &ScanOptions::new().index("tags").range(KeyRange::only(tag))).unwrap();
        assert_eq!(numbers(&tagged(&mut db, "red")), vec![1]);
        assert_eq!(numbers(&tagged(&mut db, "blue")), vec![1]);
        assert_eq!(db.count("people", &ScanOptions::new().index("tags")).unwrap(), 2);
    }

    fn dotted_key_paths_read_nested_fields(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let zip = ScanOptions::new().index("address.zip").range(KeyRange::bound("00002", "00003", false, false));
        assert_eq!(numbers(&db.keys("people", &zip).unwrap()), vec![2, 3]);
        let key = db.put("generated", json!({"meta": {"kind": "x"}}), None).unwrap();
        assert_eq!(db.get("generated", &key).unwrap().unwrap()["meta"], json!({"kind": "x", "id": 1}));
    }

    fn records_without_an_index_field_are_left_out_of_that_index(kind) {
        let mut db = people(kind);
        db.put("people", json!({"id": 1, "name": "ada"}), None).unwrap();
        db.put("people", json!({"id": 2, "name": true, "email": "e@x"}), None).unwrap();
        assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), 1);
        assert_eq!(db.count("people", &ScanOptions::new().index("city, age")).unwrap(), 0);
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 2);
    }

    fn values_of_keeps_the_order_given_and_reports_missing_keys(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let got = db.values_of("people", &[Key::from(4), Key::from(42), Key::from(1)]).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().unwrap()["name"], "dee");
        assert!(got[1].is_none());
        assert_eq!(got[2].as_ref().unwrap()["name"], "ada");
    }

    fn auto_increment_generates_keys_and_skips_past_explicit_ones(kind) {
        let mut db = people(kind);
        assert_eq!(db.put("notes", json!("first"), None).unwrap(), Key::from(1));
        assert_eq!(db.put("notes", json!("second"), None).unwrap(), Key::from(2));
        assert_eq!(db.put("notes", json!("explicit"), Some(Key::from(10.5))).unwrap(), Key::from(10.5));
        assert_eq!(db.put("notes", json!("after"), None).unwrap(), Key::from(11));
        assert_eq!(db.put("notes", json!("string key"), Some(Key::from("k"))).unwrap(), Key::from("k"));
        assert_eq!(db.put("notes", json!("next"), None).unwrap(), Key::from(12));
        assert_eq!(db.get("notes", &Key::from(2)).unwrap(), Some(json!("second")));
    }

    fn an_integer_key_a_double_cannot_hold_is_refused_never_rounded_into_a_collision(kind) {
        let mut db = people(kind);
        // 2^53 + 1 and 2^53 are one double apart from nothing: rounded, they would be one key.
        let err = db.put("people", json!({"id": 9_007_199_254_740_993_i64, "name": "x"}), None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidKey);
        assert!(err.to_string().contains("9007199254740993") && err.to_string().contains("string key"), "{err}");
        for snowflake in [1_234_567_890_123_456_789_i64, 1_234_567_890_123_456_790] {
            assert!(db.put("people", json!({"id": snowflake}), None).is_err(), "{snowflake} was accepted");
        }
        let err = db.put("people", json!({"id": u64::MAX}), None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidKey);
        // Condition values and range bounds are keys too.
        assert!(KeyRange::from_json(&json!({"lower": 9_007_199_254_740_993_i64})).is_err());
        // Exact integers, however large, are keys; and 2^53 itself is exact.
        db.put("people", json!({"id": 9_007_199_254_740_992_i64}), None).unwrap();
        db.put("people", json!({"id": -9_007_199_254_740_992_i64}), None).unwrap();
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 2);
    }

    fn the_key_generator_past_2_pow_53_is_exhausted_and_never_repeats_a_key(kind) {
        let mut db = people(kind);
        db.put("notes", json!("near the end"), Some(Key::from(9_007_199_254_740_991.0))).unwrap();
        assert_eq!(db.put("notes", json!("last"), None).unwrap(), Key::from(9_007_199_254_740_992.0));
        let err = db.put("notes", json!("one too many"), None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint);
        assert!(err.to_string().contains("exhausted"), "{err}");
        db.put("notes", json!("far"), Some(Key::from(1e300))).unwrap();
        assert!(db.put("notes", json!("still none"), None).is_err());
        assert_eq!(db.get("notes", &Key::from(9_007_199_254_740_992.0)).unwrap(), Some(json!("last")));
    }

    fn out_of_line_keys_must_be_given_and_inline_keys_must_not(kind) {
        let mut db = people(kind);
        let err = db.put("counters", json!({"n": 1}), None).unwrap_err();
        assert!(err.to_string().contains("pass a key"), "{err}");
        db.put("counters", json!({"n": 1}), Some(Key::from("a"))).unwrap();
        let err = db.put("people", person(1, "a", "a", "a", 1), Some(Key::from(1))).unwrap_err();
        assert!(err.to_string().contains("must not be passed"), "{err}");
    }

    fn invalid_keys_are_rejected_with_the_reason(kind) {
        let mut db = people(kind);
        for (bad, reason) in [
            (json!(null), "null is not a valid key"),
            (json!(true), "boolean true is not a valid key"),
            (json!({"a": 1}), "an object is not a valid key"),
            (json!([1, [false]]), "boolean false is not a valid key"),
        ] {
            let err = db.put("people", json!({"id": bad, "name": "x"}), None).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidKey);
            let text = err.to_string();
            assert!(text.contains(reason) && text.contains("store \"people\"") && text.contains("\"id\""), "{text}");
        }
        let err = db.get("people", &Key::Number(f64::NAN)).unwrap_err();
        assert!(err.to_string().contains("NaN is not a valid key"), "{err}");
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 0);
    }

    fn a_record_missing_its_key_path_is_an_error_naming_the_path(kind) {
        let mut db = people(kind);
        let err = db.put("people", json!({"name": "no id"}), None).unwrap_err();
        assert!(matches!(&err, Error::MissingKeyPath { store, key_path } if store == "people" && key_path == "id"), "{err}");
    }

    fn key_ranges_select_only_lower_upper_bound_and_starts(kind) {
        let mut db = people(kind);
        for k in ["a", "ab", "abc", "b", "ba"] {
            db.put("counters", json!(k), Some(Key::from(k))).unwrap();
        }
        let keys = |db: &mut TestDb, r: KeyRange| -> Vec<String> {
            db.keys("counters", &ScanOptions::new().range(r)).unwrap().iter().map(|k| k.to_string().trim_matches('"').to_string()).collect()
        };
        assert_eq!(keys(&mut db, KeyRange::only("ab")), ["ab"]);
        assert_eq!(keys(&mut db, KeyRange::lower("ab", false)), ["ab", "abc", "b", "ba"]);
        assert_eq!(keys(&mut db, KeyRange::lower("ab", true)), ["abc", "b", "ba"]);
        assert_eq!(keys(&mut db, KeyRange::upper("b", false)), ["a", "ab", "abc", "b"]);
        assert_eq!(keys(&mut db, KeyRange::upper("b", true)), ["a", "ab", "abc"]);
        assert_eq!(keys(&mut db, KeyRange::bound("ab", "b", true, true)), ["abc"]);
        assert_eq!(keys(&mut db, KeyRange::bound("ab", "ab", false, true)), Vec::<String>::new());
        assert_eq!(keys(&mut db, KeyRange::starts("ab")), ["ab", "abc"]);
        assert_eq!(keys(&mut db, KeyRange::starts("")), ["a", "ab", "abc", "b", "ba"]);
        let err = db.keys("counters", &ScanOptions::new().range(KeyRange::bound("b", "a", false, false))).unwrap_err();
        assert!(err.to_string().contains("lower bound \"b\" is above its upper bound \"a\""), "{err}");
    }

    fn keys_of_every_type_sort_number_date_string_binary_array(kind) {
        let mut db = people(kind);
        let keys = [
            Key::Array(vec![]),
            Key::Binary(vec![0, 1]),
            Key::from("a"),
            Key::Date(0.0),
            Key::from(-1e9),
            Key::from(2),
            Key::Array(vec![Key::from(1), Key::from("z")]),
        ];
        for k in &keys {
            db.put("counters", json!(k.to_string()), Some(k.clone())).unwrap();
        }
        let mut expected = keys.to_vec();
        expected.sort();
        assert_eq!(db.keys("counters", &ScanOptions::new()).unwrap(), expected);
        assert_eq!(expected[0], Key::from(-1e9));
        assert!(matches!(expected[6], Key::Array(ref items) if items.len() == 2));
    }

    fn unknown_store_and_index_errors_name_them_and_list_the_known_ones(kind) {
        let mut db = people(kind);
        let err = db.get("peeple", &Key::from(1)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotFound);
        assert!(err.to_string().contains("unknown store \"peeple\"") && err.to_string().contains("people"), "{err}");
        let err = db.keys("people", &ScanOptions::new().index("nmae")).unwrap_err();
        assert!(err.to_string().contains("unknown index \"nmae\" on store \"people\"") && err.to_string().contains("city, age"), "{err}");
    }

    fn without_a_schema_stores_are_created_on_first_write(kind) {
        let mut db = open(kind, None);
        assert!(db.get("later", &Key::from(1)).is_err());
        db.put("later", json!({"x": 1}), Some(Key::from("a"))).unwrap();
        assert_eq!(db.put("later", json!({"x": 2}), None).unwrap(), Key::from(1));
        assert!(db.schema().store("later").unwrap().auto_increment);
        assert_eq!(db.count("later", &ScanOptions::new()).unwrap(), 2);
    }

    fn the_stored_schema_reads_back_with_default_index_names(kind) {
        let db = people(kind);
        let store = db.schema().store("people").unwrap();
        let index_names: Vec<_> = store.indexes.iter().map(|i| i.name.clone().unwrap()).collect();
        assert_eq!(index_names, ["name", "email", "city, age", "tags", "address.zip"]);
        let db = db.reopen(None).unwrap();
        if db.kind == objstore_db_core::MechanismKind::Sqlite {
            assert_eq!(db.schema().store("people").unwrap().indexes.len(), 5);
        }
    }

    fn reopening_keeps_data_on_sqlite_and_starts_empty_in_memory(kind) {
        let mut db = people(kind);
        seed(&mut db);
        let mut db = db.reopen(Some(PEOPLE)).unwrap();
        let expected = if kind == objstore_db_core::MechanismKind::Sqlite { 5 } else { 0 };
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), expected);
        assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), expected);
    }

    fn bad_schemas_are_rejected_with_the_reason(kind) {
        for (schema, reason) in [
            (r#"{"stores": [{"name": "a", "autoincrement": true}]}"#, "unknown field \"autoincrement\""),
            (r#"{"stores": [{"name": "a"}, {"name": "a"}]}"#, "store \"a\" is defined twice"),
            (r#"{"stores": [{"name": "a", "indexes": [{"keyPath": ["x", "y"], "multiEntry": true}]}]}"#, "multiEntry cannot be used with a compound key path"),
            (r#"{"stores": [{"name": "a", "keyPath": ["x", "y"], "autoIncrement": true}]}"#, "autoIncrement needs a single non-empty key path"),
            (r#"{"stores": [{"name": "a", "indexes": [{"keyPath": "x..y"}]}]}"#, "empty segment"),
            (r#"{"stores": [{"name": "a", "indexes": [{"keyPath": "x"}, {"keyPath": "x"}]}]}"#, "index \"x\": defined twice"),
            (r#"{"stores": "#, "bad JSON in schema"),
        ] {
            let err = try_open(kind, Some(schema)).err().expect(schema);
            assert_eq!(err.code(), if reason == "bad JSON in schema" || reason.starts_with("unknown field") { ErrorCode::InvalidArgument } else { ErrorCode::Schema });
            assert!(err.to_string().contains(reason), "{schema}: {err}");
        }
    }
}

/// Migrations need a database that outlives one open, so they run on sqlite; the memory
/// mechanism's migration logic is the same code and is covered by the open-time checks above.
mod migration {
    use super::*;

    const V2: &str = r#"{
      "version": 2,
      "stores": [
        {"name": "people", "keyPath": "id", "indexes": [
          {"keyPath": "name"},
          {"keyPath": "email", "unique": true},
          {"keyPath": ["city", "age"]},
          {"keyPath": "tags", "multiEntry": true},
          {"keyPath": "age"}
        ]},
        {"name": "notes", "autoIncrement": true},
        {"name": "fresh", "keyPath": "k"}
      ]
    }"#;

    fn seeded() -> TestDb {
        let mut db = people(objstore_db_core::MechanismKind::Sqlite);
        seed(&mut db);
        db.put("counters", json!(1), Some(Key::from("c"))).unwrap();
        db
    }

    #[test]
    fn a_higher_version_adds_and_drops_stores_and_indexes_and_rebuilds_contents() {
        let mut db = seeded().reopen(Some(V2)).unwrap();
        assert_eq!(db.schema().version, 2);
        assert!(db.schema().store("counters").is_none());
        assert!(db.get("counters", &Key::from("c")).is_err());
        assert!(db.keys("people", &ScanOptions::new().index("address.zip")).is_err());
        let by_age = db.keys("people", &ScanOptions::new().index("age").range(KeyRange::only(36))).unwrap();
        assert_eq!(numbers(&by_age), vec![1, 5]);
        db.put("fresh", json!({"k": "x"}), None).unwrap();
        assert_eq!(db.count("people", &ScanOptions::new()).unwrap(), 5);
    }

    #[test]
    fn a_changed_schema_without_a_higher_version_is_an_error_and_changes_nothing() {
        let changed = V2.replace("\"version\": 2", "\"version\": 1");
        let err = seeded().reopen(Some(&changed)).err().unwrap();
        assert!(matches!(err, Error::SchemaChanged { stored: 1, given: 1, .. }), "{err}");
        assert!(err.to_string().contains("index \"address.zip\" removed from store \"people\""), "{err}");
    }

    #[test]
    fn a_lower_version_than_stored_is_an_error() {
        let db = seeded().reopen(Some(V2)).unwrap();
        let err = db.reopen(Some(PEOPLE)).err().unwrap();
        assert!(matches!(err, Error::VersionTooLow { stored: 2, given: 1, .. }), "{err}");
    }

    /// YDN-DB's rule: a schema without a version keeps the stored version when unchanged and
    /// takes the next one when it changed; the open tells the version before.
    #[test]
    fn a_schema_without_a_version_migrates_by_one_when_it_changed() {
        let unversioned = PEOPLE.replace("\"version\": 1,", "");
        assert_ne!(unversioned, PEOPLE);
        let mut db = seeded().reopen(Some(&unversioned)).unwrap();
        assert_eq!((db.schema().version, db.previous_version()), (1, Some(1)), "the same schema: unchanged");
        let with_age =
            unversioned.replace("{\"keyPath\": \"name\"}", "{\"keyPath\": \"name\"}, {\"keyPath\": \"age\"}");
        db = db.reopen(Some(&with_age)).unwrap();
        assert_eq!((db.schema().version, db.previous_version()), (2, Some(1)));
        assert_eq!(
            numbers(&db.keys("people", &ScanOptions::new().index("age").range(KeyRange::only(36))).unwrap()),
            vec![1, 5]
        );
        db = db.reopen(Some(&with_age)).unwrap();
        assert_eq!((db.schema().version, db.previous_version()), (2, Some(2)));
        db = db.reopen(Some(&unversioned)).unwrap();
        assert_eq!((db.schema().version, db.previous_version()), (3, Some(2)), "dropping the index is a change too");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        db.subscribe(
            EventFilter::kinds(&[EventKind::Ready]),
            Box::new(move |e| sink.lock().unwrap().push(e.value.clone())),
        );
        assert_eq!(seen.lock().unwrap().clone(), vec![Some(json!({"version": 3, "previousVersion": 2}))]);
        let err = db.reopen(Some(V2)).err().unwrap();
        assert!(matches!(err, Error::VersionTooLow { stored: 3, given: 2, .. }), "{err}");
        assert!(err.to_string().contains("at version 3, newer than the schema's version 2"), "{err}");
        let fresh = open(objstore_db_core::MechanismKind::Sqlite, Some(&unversioned));
        assert_eq!((fresh.schema().version, fresh.previous_version()), (1, None), "a new database starts at 1");
    }

    #[test]
    fn a_migration_that_breaks_a_unique_index_rolls_back_whole() {
        let v2 = PEOPLE
            .replace("\"version\": 1", "\"version\": 2")
            .replace("{\"keyPath\": \"name\"}", "{\"keyPath\": \"name\", \"unique\": true}");
        let mut db = seeded();
        let err = db.try_reopen(Some(&v2)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint, "{err}");
        assert!(err.to_string().contains("unique index \"name\" already holds \"bob\""), "{err}");
        db.try_reopen(None).unwrap();
        assert_eq!(db.schema().version, 1);
        assert_eq!(db.get("counters", &Key::from("c")).unwrap(), Some(json!(1)));
        assert_eq!(db.count("people", &ScanOptions::new().index("name")).unwrap(), 5);
    }

    #[test]
    fn changing_a_store_key_path_is_refused_with_advice() {
        let v2 =
            PEOPLE.replace("\"version\": 1", "\"version\": 2").replace("\"keyPath\": \"id\"", "\"keyPath\": \"email\"");
        let err = seeded().reopen(Some(&v2)).err().unwrap();
        assert!(err.to_string().contains("remove the store in one version and add it back"), "{err}");
    }
}

#[test]
fn a_database_file_has_one_process_at_a_time_and_a_second_open_names_the_file() {
    use objstore_db_core::{Database, OpenOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.sqlite3");
    let path_text = path.to_str().unwrap();
    let first = Database::open(path_text, None, &OpenOptions::default()).unwrap();
    // A second open (here in this process; another process meets the same lock) waits a moment
    // for the holder to let go, then says the file is in use.
    let Err(err) = Database::open(path_text, None, &OpenOptions::default()) else {
        panic!("a second open of a file in use succeeded");
    };
    assert_eq!(err.code(), ErrorCode::Storage);
    assert!(err.to_string().contains("one.sqlite3") && err.to_string().contains("open in another process"), "{err}");
    drop(first);
    Database::open(path_text, None, &OpenOptions::default()).expect("free again once the first is closed");
}

/// A real full disk: this test runs itself again in a user and mount namespace of its own
/// (`unshare`, no root needed), on a 256 KiB tmpfs filled to the last block.
#[test]
fn opening_on_a_full_disk_says_the_disk_is_full() {
    use objstore_db_core::{Database, OpenOptions};
    if let Ok(dir) = std::env::var("OBJSTORE_FULL_DISK_DIR") {
        let path = format!("{dir}/new.sqlite3");
        let Err(err) = Database::open(&path, None, &OpenOptions::default()) else {
            panic!("opened on a full disk");
        };
        assert_eq!(err.code(), ErrorCode::Storage);
        assert!(err.to_string().contains("the disk holding it is full"), "{err}");
        assert!(err.to_string().contains("new.sqlite3"), "{err}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().display().to_string();
    let script = format!(
        "mount -t tmpfs -o size=256k tmpfs {mount} && (dd if=/dev/zero of={mount}/fill bs=4k 2>/dev/null; true) && exec \"$0\" --exact opening_on_a_full_disk_says_the_disk_is_full --nocapture"
    );
    let out = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .arg(std::env::current_exe().unwrap())
        .env("OBJSTORE_FULL_DISK_DIR", &mount)
        .output()
        .expect("unshare (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the inner run ran the test: {text}");
}

/// Messages a person can use: an echoed input is cut short with its length, names are in the
/// schema's words (no Rust types, no internal tables), lists of names are unambiguous.
#[test]
fn messages_echo_inputs_short_and_name_things_in_the_schemas_words() {
    let mut db = open(
        objstore_db_core::MechanismKind::Memory,
        Some(r#"{"stores": [{"name": "a, b"}, {"name": "c", "keyPath": "id"}]}"#),
    );
    let huge = "s".repeat(1 << 20);
    let err = db.put(&huge, json!(1), Some(Key::from(1))).unwrap_err().to_string();
    assert!(err.len() < 300 && err.contains("(1048576 bytes)"), "{}", &err[..err.len().min(400)]);
    assert!(err.contains(r#"(known: "a, b", "c")"#), "{err}");
    let bad_sql = format!("SELEKT {}", "x".repeat(5 << 20));
    let err = objstore_db_core::sql::execute(&mut db, &bad_sql, &[]).unwrap_err().to_string();
    assert!(err.len() < 600 && err.contains("bytes)"), "{}", &err[..err.len().min(700)]);
    let err =
        objstore_db_core::Schema::from_json(r#"{"stores": [{"name": "s", "keyPath": 5}]}"#).unwrap_err().to_string();
    assert!(
        err.contains("a key path is a field path") && !err.contains("untagged") && !err.contains("KeyPath"),
        "{err}"
    );
    let err = db.put("c", json!({"id": 1}), Some(Key::from(1))).unwrap_err().to_string();
    assert!(err.contains("the record's id field") && !err.contains("Single"), "{err}");
    let err = KeyRange::from_json(&json!(5)).unwrap_err().to_string();
    assert!(err.contains(r#"{"only": key}"#) && err.contains(r#""lowerOpen"?: bool"#), "{err}");
    let err = KeyRange::from_json(&json!({"min": 1})).unwrap_err().to_string();
    assert!(err.contains(r#"unknown field "min" (known: only, lower, upper, lowerOpen, upperOpen, starts)"#), "{err}");
}
