//! The sql suite: the documented subset runs through the query planner, parameters are bound
//! as values (never spliced), and anything outside the subset is an error naming it.

#[macro_use]
mod common;

use common::*;
use objstore_db_core::sql::{execute, SqlOutput};
use objstore_db_core::{ErrorCode, Key, Op, Query};
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"stores": [
  {"name": "runs", "keyPath": "id", "indexes": [{"keyPath": "platform"}, {"keyPath": ["platform", "age"]}]}
]}"#;

fn seeded(kind: objstore_db_core::MechanismKind) -> TestDb {
    let mut db = open(kind, Some(SCHEMA));
    let inserted = execute(
        &mut db,
        "INSERT INTO runs (id, platform, browser, age, meta.v) VALUES (1, 'linux', 'rust', 30, 1), (2, 'linux', 'node', 25, 2), \
         (3, 'macos', 'rust', 41, 3), (4, 'linux', 'rust', 25.5, 4), (5, 'windows', 'c', -3, 5)",
        &[],
    )
    .unwrap();
    assert_eq!(inserted, SqlOutput::Changed(5));
    db
}

fn rows(out: SqlOutput) -> Vec<Value> {
    match out {
        SqlOutput::Rows(rows) => rows,
        other => panic!("expected rows, got {other:?}"),
    }
}

fn ids(out: SqlOutput) -> Vec<i64> {
    rows(out).iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

for_each_mechanism! {
    fn select_with_where_order_limit_and_offset(kind) {
        let mut db = seeded(kind);
        let out = execute(&mut db, "SELECT * FROM runs WHERE platform = 'linux' AND age >= 25 ORDER BY age DESC LIMIT 2 OFFSET 1", &[]).unwrap();
        assert_eq!(ids(out), vec![4, 2]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE 30 > age ORDER BY age", &[]).unwrap()), vec![5, 2, 4]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE age = -3", &[]).unwrap()), vec![5]);
    }

    fn selected_fields_come_back_under_their_names(kind) {
        let mut db = seeded(kind);
        let out = execute(&mut db, "SELECT browser, meta.v AS version, missing FROM runs WHERE id = 3", &[]).unwrap();
        assert_eq!(rows(out), vec![json!({"browser": "rust", "version": 3, "missing": null})]);
    }

    fn aggregates_count_min_max_sum_avg(kind) {
        let mut db = seeded(kind);
        let out = execute(&mut db, "SELECT COUNT(*), MIN(age) AS youngest, MAX(age), SUM(meta.v), AVG(age) FROM runs WHERE platform = 'linux'", &[]).unwrap();
        assert_eq!(rows(out), vec![json!({"COUNT(*)": 3, "youngest": 25, "MAX(age)": 30, "SUM(meta.v)": 7, "AVG(age)": 26.833333333333332})]);
        let out = execute(&mut db, "SELECT COUNT(*) FROM runs WHERE platform = 'beos'", &[]).unwrap();
        assert_eq!(rows(out), vec![json!({"COUNT(*)": 0})]);
    }

    fn like_prefix_runs_as_starts_on_an_index(kind) {
        let mut db = seeded(kind);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE platform LIKE 'li%'", &[]).unwrap()), vec![1, 2, 4]);
        let plan = Query::from("runs").filter("platform", Op::Starts, "li").explain(&mut db).unwrap();
        assert!(plan.to_string().contains("scan index \"platform\""), "{plan}");
    }

    fn parameters_are_bound_as_values_never_spliced(kind) {
        let mut db = seeded(kind);
        let hostile = json!("linux' OR '1'='1");
        assert!(rows(execute(&mut db, "SELECT * FROM runs WHERE platform = ?", std::slice::from_ref(&hostile)).unwrap()).is_empty());
        execute(&mut db, "INSERT INTO runs (id, platform) VALUES (?, ?)", &[json!(9), hostile.clone()]).unwrap();
        assert_eq!(db.get("runs", &Key::from(9)).unwrap().unwrap()["platform"], hostile);
        let out = execute(&mut db, "SELECT * FROM runs WHERE platform = ?2 AND age < ?1", &[json!(28), json!("linux")]).unwrap();
        assert_eq!(ids(out), vec![2, 4]);
        execute(&mut db, "INSERT INTO runs VALUES (?)", &[json!({"id": 10, "platform": "bsd"})]).unwrap();
        assert_eq!(db.get("runs", &Key::from(10)).unwrap().unwrap()["platform"], "bsd");
    }

    fn parameter_counts_must_match(kind) {
        let mut db = seeded(kind);
        let err = execute(&mut db, "SELECT * FROM runs WHERE id = ? AND age = ?", &[json!(1)]).unwrap_err();
        assert!(err.to_string().contains("parameter 2 is not given (1 given)"), "{err}");
        let err = execute(&mut db, "SELECT * FROM runs WHERE id = ?", &[json!(1), json!(2)]).unwrap_err();
        assert!(err.to_string().contains("2 parameters given but the statement uses 1"), "{err}");
    }

    fn update_patches_matching_records_and_keeps_indexes_right(kind) {
        let mut db = seeded(kind);
        let out = execute(&mut db, "UPDATE runs SET platform = ?, meta.extra = 'yes' WHERE platform = 'linux' AND age < 26", &[json!("gnu")]).unwrap();
        assert_eq!(out, SqlOutput::Changed(2));
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE platform = 'gnu'", &[]).unwrap()), vec![2, 4]);
        assert_eq!(db.get("runs", &Key::from(2)).unwrap().unwrap()["meta"], json!({"v": 2, "extra": "yes"}));
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE platform = 'linux'", &[]).unwrap()), vec![1]);
    }

    fn delete_removes_matching_records(kind) {
        let mut db = seeded(kind);
        assert_eq!(execute(&mut db, "DELETE FROM runs WHERE age > 29", &[]).unwrap(), SqlOutput::Changed(2));
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs", &[]).unwrap()), vec![2, 4, 5]);
        assert_eq!(execute(&mut db, "DELETE FROM runs", &[]).unwrap(), SqlOutput::Changed(3));
    }

    fn insert_is_create_only_unless_or_replace(kind) {
        let mut db = seeded(kind);
        let err = execute(&mut db, "INSERT INTO runs (id, platform) VALUES (1, 'x')", &[]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint);
        assert_eq!(db.get("runs", &Key::from(1)).unwrap().unwrap()["platform"], "linux");
        execute(&mut db, "INSERT OR REPLACE INTO runs (id, platform) VALUES (1, 'x')", &[]).unwrap();
        assert_eq!(db.get("runs", &Key::from(1)).unwrap().unwrap()["platform"], "x");
        let err = execute(&mut db, "INSERT INTO runs (id, platform) VALUES (20, 'a'), (1, 'dup')", &[]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Constraint);
        assert!(db.get("runs", &Key::from(20)).unwrap().is_none(), "a failed statement writes nothing");
    }

    fn constructs_outside_the_subset_are_named_in_the_error(kind) {
        let mut db = seeded(kind);
        for (sql, named) in [
            ("SELECT * FROM runs WHERE id = 1 OR id = 2", "the operator OR"),
            ("SELECT * FROM runs WHERE id <> 1", "the operator <>"),
            ("SELECT * FROM runs JOIN other ON runs.id = other.id", "JOIN"),
            ("SELECT platform, COUNT(*) FROM runs GROUP BY platform", "GROUP BY"),
            ("SELECT DISTINCT platform FROM runs", "DISTINCT"),
            ("SELECT * FROM runs WHERE platform LIKE '%x'", "LIKE \"%x\" (only 'prefix%')"),
            ("SELECT * FROM runs ORDER BY platform ASC, age DESC", "mixed ASC and DESC"),
            ("SELECT UPPER(platform) FROM runs", "the function UPPER"),
            ("SELECT * FROM runs WHERE id IN (1, 2)", "the condition id IN (1, 2)"),
            ("SELECT * FROM (SELECT * FROM runs)", "the table expression"),
            ("CREATE TABLE t (a INT)", "the statement \"CREATE\""),
            ("SELECT * FROM runs; SELECT * FROM runs", "expected one statement, found 2"),
            ("SELEKT * FROM runs", "cannot parse"),
        ] {
            let err = execute(&mut db, sql, &[]).unwrap_err();
            assert!(err.to_string().contains(named), "{sql}: {err}");
        }
        assert_eq!(execute(&mut db, "SELECT * FROM nope", &[]).unwrap_err().code(), ErrorCode::NotFound);
    }

    fn sql_and_the_query_builder_agree(kind) {
        let mut db = seeded(kind);
        let by_sql = ids(execute(&mut db, "SELECT * FROM runs WHERE platform = 'linux' AND age > 20 ORDER BY age", &[]).unwrap());
        let by_builder: Vec<i64> = Query::from("runs").filter("platform", Op::Eq, "linux").filter("age", Op::Gt, 20).order("age")
            .list(&mut db, 100).unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
        assert_eq!(by_sql, by_builder);
    }

    fn booleans_and_null_are_compared_as_residual_filters(kind) {
        let mut db = open(kind, Some(SCHEMA));
        execute(&mut db, "INSERT INTO runs (id, platform, ok) VALUES (1, 'linux', TRUE), (2, 'linux', FALSE), (3, 'macos', TRUE), (4, 'linux', NULL)", &[]).unwrap();
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE ok = TRUE ORDER BY id", &[]).unwrap()), vec![1, 3]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE ok = ? AND platform = 'linux'", &[json!(true)]).unwrap()), vec![1]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE FALSE = ok", &[]).unwrap()), vec![2]);
        let mut by_json = Query::from_json(&json!({"from": "runs", "where": [["ok", "=", false]]})).unwrap();
        assert_eq!(by_json.list(&mut db, 10).unwrap()[0]["id"], json!(2));
        let mut nulls = Query::from_json(&json!({"from": "runs", "where": [["platform", "==", "linux"], ["ok", "=", null]]})).unwrap();
        assert_eq!(nulls.list(&mut db, 10).unwrap()[0]["id"], json!(4), "== is an alias of =; null matches a null field");
        let plan = Query::from("runs").filter("platform", Op::Eq, "linux").filter_json("ok", "=", &json!(true)).unwrap().explain(&mut db).unwrap();
        assert_eq!(plan.to_string(), "scan index \"platform\", range: platform = \"linux\", residual filter: ok = true, no sort");
        assert_eq!(rows(execute(&mut db, "SELECT COUNT(*) FROM runs WHERE ok = TRUE", &[]).unwrap()), vec![json!({"COUNT(*)": 2})]);
        for (sql, says) in [
            ("SELECT * FROM runs WHERE ok < TRUE", "compare with = only"),
            ("SELECT * FROM runs WHERE ok = NULL", "NULL is never true"),
        ] {
            assert!(execute(&mut db, sql, &[]).unwrap_err().to_string().contains(says), "{sql}");
        }
        let err = Query::from_json(&json!({"from": "runs", "where": [["ok", "!=", true]]})).unwrap_err();
        assert!(err.to_string().contains("unknown comparison \"!=\" (known: = (or ==)"), "{err}");
    }

    fn quoted_identifiers_name_columns_without_their_quotes(kind) {
        let mut db = seeded(kind);
        let out = execute(&mut db, r#"SELECT "browser", "meta.v", meta.v, MAX("age") FROM runs WHERE id = 3"#, &[]);
        assert!(out.unwrap_err().to_string().contains("mixing aggregates"));
        let out = execute(&mut db, r#"SELECT "browser", "meta.v" FROM runs WHERE "id" = 3"#, &[]).unwrap();
        assert_eq!(rows(out), vec![json!({"browser": "rust", "meta.v": 3})]);
        let out = execute(&mut db, r#"SELECT MAX("age"), count(*) FROM runs"#, &[]).unwrap();
        assert_eq!(rows(out), vec![json!({"MAX(age)": 41, "count(*)": 5})]);
    }

    fn order_by_never_changes_the_row_set(kind) {
        let mut db = seeded(kind);
        execute(&mut db, "INSERT INTO runs (id, platform, age) VALUES (6, 'linux', NULL), (7, 'linux', TRUE), (8, 'linux', 'old')", &[]).unwrap();
        execute(&mut db, "INSERT INTO runs (id, platform) VALUES (9, 'beos')", &[]).unwrap();
        // Missing, null and non-key values sort as NULL: first ascending (by key among them).
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs ORDER BY age", &[]).unwrap()), vec![6, 7, 9, 5, 2, 4, 1, 3, 8]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs ORDER BY age DESC", &[]).unwrap()), vec![8, 3, 1, 4, 2, 5, 9, 7, 6]);
        assert_eq!(ids(execute(&mut db, "SELECT * FROM runs WHERE platform = 'linux' ORDER BY age LIMIT 4", &[]).unwrap()), vec![6, 7, 2, 4]);
        assert_eq!(rows(execute(&mut db, "SELECT COUNT(*) FROM runs ORDER BY age", &[]).unwrap()), vec![json!({"COUNT(*)": 9})]);
        assert_eq!(rows(execute(&mut db, "SELECT COUNT(*) FROM runs", &[]).unwrap()), vec![json!({"COUNT(*)": 9})]);
        // The query builder keeps its documented rule: an order needs its field, as an index.
        assert_eq!(Query::from("runs").order("age").count(&mut db).unwrap(), 6);
    }

    fn update_set_and_insert_columns_replace_values_at_their_paths(kind) {
        let mut db = seeded(kind);
        let get = |db: &mut TestDb, id: i64| rows(execute(db, "SELECT * FROM runs WHERE id = ?", &[json!(id)]).unwrap()).remove(0);
        execute(&mut db, "UPDATE runs SET meta = ? WHERE id = 1", &[json!({"a": 1})]).unwrap();
        assert_eq!(get(&mut db, 1)["meta"], json!({"a": 1}), "SET replaces, it does not merge");
        execute(&mut db, "UPDATE runs SET meta.v = NULL, browser = NULL WHERE id = 2", &[]).unwrap();
        let two = get(&mut db, 2);
        assert_eq!((two["meta"].clone(), two.get("browser").cloned()), (json!({"v": null}), Some(Value::Null)));
        execute(&mut db, "INSERT INTO runs (id, doc, x, deep.er) VALUES (10, ?, NULL, 1)", &[json!({"x": null, "y": 1})]).unwrap();
        assert_eq!(get(&mut db, 10), json!({"id": 10, "doc": {"x": null, "y": 1}, "x": null, "deep": {"er": 1}}));
        assert_eq!(execute(&mut db, "UPDATE runs SET age = 1 WHERE id = 10", &[]).unwrap(), SqlOutput::Changed(1));
        assert_eq!(execute(&mut db, "UPDATE runs SET age = 1 WHERE id = 10", &[]).unwrap(), SqlOutput::Changed(0), "nothing new");
    }

    fn select_star_with_more_columns_is_refused(kind) {
        let mut db = seeded(kind);
        for sql in ["SELECT *, browser FROM runs", "SELECT browser, * FROM runs"] {
            assert!(execute(&mut db, sql, &[]).unwrap_err().to_string().contains("* next to other columns"), "{sql}");
        }
    }

    fn count_with_an_indexed_equality_is_counted_from_the_index(kind) {
        let mut db = seeded(kind);
        let plan = |db: &mut TestDb, sql: &str| rows(execute(db, sql, &[]).unwrap())[0]["plan"].as_str().unwrap().to_string();
        assert_eq!(
            plan(&mut db, "EXPLAIN SELECT COUNT(*) FROM runs WHERE platform = 'linux'"),
            "count: scan index \"platform\", range: platform = \"linux\", no sort, counted without reading records"
        );
        assert_eq!(
            plan(&mut db, "EXPLAIN SELECT COUNT(*) FROM runs WHERE platform = 'linux' AND browser = 'rust'"),
            "count: scan index \"platform\", range: platform = \"linux\", residual filter: browser = \"rust\", no sort"
        );
        assert_eq!(plan(&mut db, "EXPLAIN SELECT * FROM runs WHERE age > 26"), "scan store, whole range, residual filter: age > 26, no sort");
        assert_eq!(rows(execute(&mut db, "SELECT COUNT(*) AS n FROM runs WHERE platform = 'linux'", &[]).unwrap()), vec![json!({"n": 3})]);
    }
    fn a_text_sent_again_binds_its_new_values_and_old_texts_still_parse(kind) {
        // Parsed texts are kept (a few dozen, short ones): every call binds its own values, and
        // texts pushed out of what is kept, or too long to keep, parse as before.
        let mut db = seeded(kind);
        let by_platform = "SELECT * FROM runs WHERE platform = ? ORDER BY id";
        assert_eq!(ids(execute(&mut db, by_platform, &[json!("linux")]).unwrap()), vec![1, 2, 4]);
        assert_eq!(ids(execute(&mut db, by_platform, &[json!("macos")]).unwrap()), vec![3]);
        for i in 0..200 {
            let text = format!("SELECT * FROM runs WHERE id = {}", i % 7);
            let expected: Vec<i64> = if (1..=5).contains(&(i % 7)) { vec![i % 7] } else { vec![] };
            assert_eq!(ids(execute(&mut db, &text, &[]).unwrap()), expected, "{text}");
        }
        assert_eq!(ids(execute(&mut db, by_platform, &[json!("windows")]).unwrap()), vec![5]);
        let long = format!("SELECT * FROM runs WHERE platform = 'linux' {}AND age > ? ORDER BY id", "AND age > -100 ".repeat(400));
        assert_eq!(ids(execute(&mut db, &long, &[json!(26)]).unwrap()), vec![1]);
        assert_eq!(ids(execute(&mut db, &long, &[json!(24)]).unwrap()), vec![1, 2, 4]);
        let err = execute(&mut db, by_platform, &[]).unwrap_err();
        assert!(err.to_string().contains("parameter 1 is not given (0 given)"), "{err}");
    }
}
