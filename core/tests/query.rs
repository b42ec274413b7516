//! The query suite: filters with and without indexes (same records either way), planning and
//! explain, order, reverse, unique, select, count, patch, delete and keyset paging.

#[macro_use]
mod common;

use common::*;
use objstore_db_core::{ErrorCode, Key, KeyRange, Mode, Op, Query};
use serde_json::{json, Value};

/// The same records in a store with indexes and in one without any.
const SCHEMA: &str = r#"{"stores": [
  {"name": "runs", "keyPath": "id", "indexes": [
    {"keyPath": "platform"},
    {"keyPath": "age"},
    {"keyPath": ["platform", "browser"]},
    {"keyPath": ["platform", "age"]}
  ]},
  {"name": "plain", "keyPath": "id"}
]}"#;

fn run(id: i64, platform: &str, browser: &str, age: Value) -> Value {
    json!({"id": id, "platform": platform, "browser": browser, "age": age, "meta": {"v": id % 3}})
}

fn seeded(kind: objstore_db_core::MechanismKind) -> TestDb {
    let mut db = open(kind, Some(SCHEMA));
    let records = [
        run(1, "linux", "rust", json!(30)),
        run(2, "linux", "node", json!(25)),
        run(3, "macos", "rust", json!(41)),
        run(4, "linux", "rust", json!(25)),
        run(5, "windows", "c", json!("old")),
        run(6, "macos", "node", json!(30)),
        run(7, "linux", "python", json!(52)),
        json!({"id": 8, "platform": "linux", "browser": "c"}),
    ];
    for r in records {
        db.put("runs", r.clone(), None).unwrap();
        db.put("plain", r, None).unwrap();
    }
    db
}

fn ids(records: &[Value]) -> Vec<i64> {
    records.iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

/// Runs the query on the indexed store and on the plain one; both must give the same records,
/// in the same order when the query has one (unordered results come in their source's order).
fn both_paths(db: &mut TestDb, query: impl Fn(&str) -> Query) -> Vec<i64> {
    let (mut indexed, mut plain) =
        (ids(&query("runs").list(db, 100).unwrap()), ids(&query("plain").list(db, 100).unwrap()));
    if !query("runs").is_ordered() {
        indexed.sort();
        plain.sort();
    }
    assert_eq!(indexed, plain, "index path and scan path disagree");
    assert!(query("plain").explain(db).unwrap().to_string().starts_with("scan store"));
    indexed
}

for_each_mechanism! {
    fn a_filter_without_any_index_runs_as_a_residual_scan(kind) {
        let mut db = seeded(kind);
        let q = Query::from("runs").filter("browser", Op::Eq, "rust");
        assert_eq!(ids(&q.clone().list(&mut db, 10).unwrap()), vec![1, 3, 4]);
        let plan = q.explain(&mut db).unwrap().to_string();
        assert!(plan.contains("scan store") && plan.contains("residual filter: browser = \"rust\""), "{plan}");
    }

    fn an_indexed_filter_uses_the_index_and_returns_what_a_scan_returns(kind) {
        let mut db = seeded(kind);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("platform", Op::Eq, "macos")), vec![3, 6]);
        let plan = Query::from("runs").filter("platform", Op::Eq, "macos").explain(&mut db).unwrap();
        assert!(plan.to_string().contains("range: platform = \"macos\"") && plan.residual.is_empty(), "{plan}");
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("age", Op::Ge, 30).filter("age", Op::Lt, 50)), vec![1, 3, 6]);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("platform", Op::Starts, "ma")), vec![3, 6]);
    }

    fn where_and_order_on_different_fields_return_sorted_records(kind) {
        let mut db = seeded(kind);
        // The seed's library returned nothing here; this sorts the matches.
        let found = both_paths(&mut db, |s| Query::from(s).filter("browser", Op::Eq, "rust").order("age"));
        assert_eq!(found, vec![4, 1, 3]);
        let plan = Query::from("runs").filter("browser", Op::Eq, "rust").order("age").explain(&mut db).unwrap();
        assert!(plan.to_string().contains("scan index \"age\""), "the age index gives the order: {plan}");
        // A misspelt order field lists nothing; the plan says why that can be.
        assert!(Query::from("runs").order("agee").list(&mut db, 10).unwrap().is_empty());
        let typo = Query::from("runs").order("agee").explain(&mut db).unwrap().to_string();
        assert!(typo.ends_with("sort in memory by agee (a record without an order field is left out: is each name right?)"), "{typo}");
    }

    fn a_compound_index_serves_equality_then_range_and_order(kind) {
        let mut db = seeded(kind);
        let q = |s: &str| Query::from(s).filter("platform", Op::Eq, "linux").filter("age", Op::Gt, 25).order("age");
        assert_eq!(both_paths(&mut db, q), vec![1, 7]);
        let plan = q("runs").explain(&mut db).unwrap();
        assert_eq!(plan.to_string(), "scan index \"platform, age\", range: platform = \"linux\" and age > 25, no sort");
        let desc = both_paths(&mut db, |s| Query::from(s).filter("platform", Op::Eq, "linux").order("age").reverse());
        assert_eq!(desc, vec![7, 1, 4, 2], "reverse reverses ties too");
    }

    fn comparisons_never_cross_types(kind) {
        let mut db = seeded(kind);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("age", Op::Gt, 0)), vec![1, 2, 3, 4, 6, 7]);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("age", Op::Ge, "a")), vec![5]);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("age", Op::Gt, 0).filter("age", Op::Lt, "z")), Vec::<i64>::new());
    }

    fn order_leaves_out_records_without_the_field_and_sorts_ties_by_primary_key(kind) {
        let mut db = seeded(kind);
        let found = both_paths(&mut db, |s| Query::from(s).order("age"));
        assert_eq!(found, vec![2, 4, 1, 6, 3, 7, 5], "8 has no age; numbers before strings");
    }

    fn unique_keeps_the_lowest_primary_key_per_order_value_in_either_direction(kind) {
        let mut db = seeded(kind);
        let pairs = |s: &str| Query::from(s).order("platform").order("browser").unique();
        assert_eq!(both_paths(&mut db, pairs), vec![8, 2, 7, 1, 6, 3, 5]);
        assert_eq!(both_paths(&mut db, |s| pairs(s).reverse()), vec![5, 3, 6, 1, 7, 2, 8]);
        assert_eq!(both_paths(&mut db, |s| Query::from(s).filter("platform", Op::Eq, "linux").order("age").unique()), vec![2, 1, 7]);
    }

    fn list_pages_by_keyset_until_an_empty_page(kind) {
        let mut db = seeded(kind);
        for store in ["runs", "plain"] {
            for query in [Query::from(store).order("age"), Query::from(store), Query::from(store).order("platform").order("browser").unique().reverse()] {
                let whole = ids(&query.clone().list(&mut db, 100).unwrap());
                let mut paged = Vec::new();
                let mut q = query.clone();
                loop {
                    let page = q.list(&mut db, 2).unwrap();
                    if page.is_empty() {
                        break;
                    }
                    assert!(page.len() <= 2);
                    paged.extend(ids(&page));
                }
                assert_eq!(paged, whole, "{store}: {}", query.explain(&mut db).unwrap());
            }
        }
    }

    fn paging_neither_skips_nor_repeats_records_when_others_come_and_go(kind) {
        let mut db = seeded(kind);
        for store in ["runs", "plain"] {
            let before = ids(&Query::from(store).order("age").list(&mut db, 100).unwrap());
            let mut q = Query::from(store).order("age");
            let mut seen = ids(&q.list(&mut db, 3).unwrap());
            db.put(store, run(100, "linux", "rust", json!(26)), None).unwrap(); // lands before the position
            db.put(store, run(101, "linux", "rust", json!(99)), None).unwrap(); // lands after it
            db.remove(store, &KeyRange::only(6)).unwrap(); // not yet seen
            db.remove(store, &KeyRange::only(2)).unwrap(); // already seen
            loop {
                let page = q.list(&mut db, 2).unwrap();
                if page.is_empty() {
                    break;
                }
                seen.extend(ids(&page));
            }
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), seen.len(), "{store}: repeated a record: {seen:?}");
            for id in before.iter().filter(|id| **id != 6) {
                assert!(seen.contains(id), "{store}: skipped {id}: {seen:?}");
            }
            assert!(seen.contains(&101) && !seen.contains(&100), "{store}: {seen:?}");
        }
    }

    fn select_keeps_only_the_named_fields(kind) {
        let mut db = seeded(kind);
        let rows = Query::from("runs").filter("id", Op::Eq, 3).select(&["browser", "meta.v"]).list(&mut db, 5).unwrap();
        assert_eq!(rows, vec![json!({"browser": "rust", "meta": {"v": 0}})]);
    }

    fn the_text_form_of_a_page_selects_filters_and_pages_alike(kind) {
        let mut db = seeded(kind);
        let as_text = |db: &mut TestDb, q: &mut Query, n| -> Value {
            serde_json::from_str(&db.run(&["runs"], Mode::ReadOnly, |tx| q.list_text_in(tx, n)).unwrap()).unwrap()
        };
        let mut selected = Query::from("runs").filter("id", Op::Eq, 3).select(&["browser", "meta.v"]);
        assert_eq!(as_text(&mut db, &mut selected, 5), json!([{"browser": "rust", "meta": {"v": 0}}]));
        // Served by the index alone (stored text handed on), then with a condition it cannot serve.
        let mut by_index = Query::from("runs").filter("platform", Op::Eq, "linux").order("age");
        let mut by_list = by_index.clone();
        assert_eq!(as_text(&mut db, &mut by_index, 2), json!(by_list.list(&mut db, 2).unwrap()));
        assert_eq!(as_text(&mut db, &mut by_index, 2), json!(by_list.list(&mut db, 2).unwrap()));
        let mut checked = Query::from("runs").filter("platform", Op::Eq, "linux").filter("meta.v", Op::Eq, 1);
        assert_eq!(as_text(&mut db, &mut checked, 10), json!(Query::from("runs").filter("platform", Op::Eq, "linux").filter("meta.v", Op::Eq, 1).list(&mut db, 10).unwrap()));
        assert_eq!(as_text(&mut db, &mut Query::from("runs"), 0), json!([]));
    }

    fn count_agrees_with_list_on_both_paths(kind) {
        let mut db = seeded(kind);
        for store in ["runs", "plain"] {
            for q in [
                Query::from(store),
                Query::from(store).filter("platform", Op::Eq, "linux"),
                Query::from(store).filter("platform", Op::Eq, "linux").filter("browser", Op::Eq, "rust"),
                Query::from(store).order("age"),
                Query::from(store).order("platform").unique(),
            ] {
                assert_eq!(q.count(&mut db).unwrap() as usize, q.clone().list(&mut db, 100).unwrap().len(), "{}", q.explain(&mut db).unwrap());
            }
        }
    }

    fn patch_merges_into_matching_records_and_keeps_indexes_right(kind) {
        let mut db = seeded(kind);
        let changed = Query::from("runs").filter("platform", Op::Eq, "macos").patch(&mut db, &json!({"platform": "darwin", "meta": {"v": null, "w": 1}})).unwrap();
        assert_eq!(changed, 2);
        assert!(Query::from("runs").filter("platform", Op::Eq, "macos").list(&mut db, 10).unwrap().is_empty());
        let darwin = Query::from("runs").filter("platform", Op::Eq, "darwin").list(&mut db, 10).unwrap();
        assert_eq!(ids(&darwin), vec![3, 6]);
        assert_eq!(darwin[0]["meta"], json!({"w": 1}));
        let err = Query::from("runs").filter("id", Op::Eq, 1).patch(&mut db, &json!({"id": 99})).unwrap_err();
        assert!(err.to_string().contains("would change its key"), "{err}");
        assert!(db.get("runs", &Key::from(1)).unwrap().is_some() && db.get("runs", &Key::from(99)).unwrap().is_none());
    }

    fn delete_removes_exactly_the_matching_records(kind) {
        let mut db = seeded(kind);
        assert_eq!(Query::from("runs").filter("age", Op::Lt, 30).delete(&mut db).unwrap(), 2);
        assert_eq!(ids(&Query::from("runs").list(&mut db, 100).unwrap()), vec![1, 3, 5, 6, 7, 8]);
        assert_eq!(Query::from("runs").filter("age", Op::Eq, 25).count(&mut db).unwrap(), 0);
    }

    fn bad_queries_are_errors_that_say_what_is_wrong(kind) {
        let mut db = seeded(kind);
        let err = Query::from("runs").filter("platform", Op::Starts, 5).list(&mut db, 1).unwrap_err();
        assert!(err.to_string().contains("starts on field \"platform\" needs a string prefix"), "{err}");
        // unique without an order: one per key of the index the plan reads.
        assert_eq!(Query::from("runs").filter("platform", Op::Eq, "linux").unique().list(&mut db, 10).unwrap().len(), 1);
        assert!(Op::parse("!=").unwrap_err().to_string().contains("unknown comparison \"!=\""));
        let err = Query::from("runs").filter_json("age", "=", &json!({"a": 1})).unwrap_err();
        assert!(err.to_string().contains("cannot compare field \"age\" with {\"a\":1}"), "{err}");
        let err = Query::from("runs").filter_json("age", ">", &json!(null)).unwrap_err();
        assert!(err.to_string().contains("true, false and null compare with = only"), "{err}");
        assert_eq!(Query::from("nope").list(&mut db, 1).unwrap_err().code(), ErrorCode::NotFound);
    }

    /// multiEntry as in IndexedDB: a condition on the field matches any element; ordering by
    /// it reads index entries, one row per distinct element (unique: one per element); patch,
    /// delete and count through it reach the matching records.
    fn multi_entry_fields_in_queries(kind) {
        let mut db = open(kind, Some(r#"{"stores": [{"name": "posts", "keyPath": "id", "indexes": [{"keyPath": "tags", "multiEntry": true}]}]}"#));
        for post in [json!({"id": 1, "tags": ["b", "a"]}), json!({"id": 2, "tags": ["c"]}), json!({"id": 3, "tags": "a"}),
                     json!({"id": 4}), json!({"id": 5, "tags": ["a", "a", "d", true]}), json!({"id": 6, "tags": []})] {
            db.put("posts", post, None).unwrap();
        }
        let list = |db: &mut TestDb, q: Query| ids(&q.select(&["id"]).list(db, 100).unwrap());
        let tagged = || Query::from("posts").filter("tags", Op::Eq, "a");
        assert_eq!(list(&mut db, tagged()), vec![1, 3, 5]);
        assert_eq!(tagged().explain(&mut db).unwrap().to_string(), "scan index \"tags\", range: tags = \"a\", no sort");
        assert_eq!(tagged().count(&mut db).unwrap(), 3);
        // A range without ordering by the field: each record once.
        assert_eq!(list(&mut db, Query::from("posts").filter("tags", Op::Ge, "c")), vec![2, 5]);
        // Ordered by the field: the index's entries.
        let by_tag = || Query::from("posts").order("tags");
        assert_eq!(list(&mut db, by_tag()), vec![1, 3, 5, 1, 2, 5]);
        assert_eq!(list(&mut db, by_tag().reverse()), vec![5, 2, 1, 5, 3, 1]);
        assert_eq!(list(&mut db, by_tag().unique()), vec![1, 1, 2, 5]);
        assert_eq!(list(&mut db, by_tag().filter("tags", Op::Ge, "b")), vec![1, 2, 5]);
        assert_eq!(by_tag().count(&mut db).unwrap(), 6);
        let mut paged = by_tag();
        let mut pages = Vec::new();
        loop {
            let page = paged.list(&mut db, 4).unwrap();
            if page.is_empty() { break; }
            pages.extend(page.iter().map(|r| r["id"].as_i64().unwrap()));
        }
        assert_eq!(pages, vec![1, 3, 5, 1, 2, 5]);
        let mut keys = Vec::new();
        by_tag().open(&mut db, objstore_db_core::Mode::ReadOnly, |item| {
            keys.push(item.key.to_json());
            Ok(objstore_db_core::Step::Continue)
        }).unwrap();
        assert_eq!(keys, vec![json!("a"), json!("a"), json!("a"), json!("b"), json!("c"), json!("d")]);
        // Selecting the field gives each row's element, as an index entry does; unique: the
        // distinct elements. Selected beside it, or not selected, the record keeps its array.
        let tags = |db: &mut TestDb, mut q: Query| -> Vec<Value> {
            q.list(db, 100).unwrap().into_iter().map(|r| r["tags"].clone()).collect()
        };
        assert_eq!(tags(&mut db, tagged().select(&["tags"])), vec![json!("a"); 3]);
        assert_eq!(tags(&mut db, tagged().select(&["tags"]).unique()), vec![json!("a")]);
        assert_eq!(tags(&mut db, by_tag().select(&["tags"])), vec![json!("a"), json!("a"), json!("a"), json!("b"), json!("c"), json!("d")]);
        assert_eq!(tags(&mut db, by_tag().select(&["tags"]).unique()), vec![json!("a"), json!("b"), json!("c"), json!("d")]);
        assert_eq!(tags(&mut db, by_tag().select(&["tags"]).filter("tags", Op::Ge, "b").reverse()), vec![json!("d"), json!("c"), json!("b")]);
        assert_eq!(tags(&mut db, tagged().order("id").select(&["id", "tags"])), vec![json!("a"); 3]);
        assert_eq!(tags(&mut db, tagged())[0], json!(["b", "a"]));
        let page = db.run(&["posts"], Mode::ReadOnly, |tx| tagged().select(&["id", "tags"]).list_text_in(tx, 2)).unwrap();
        assert_eq!(page, r#"[{"id":1,"tags":"a"},{"id":3,"tags":"a"}]"#);
        // Writes through it reach each matching record once.
        assert_eq!(by_tag().patch(&mut db, &json!({"seen": true})).unwrap(), 4);
        assert_eq!(Query::from("posts").filter("tags", Op::Ge, "c").delete(&mut db).unwrap(), 2);
        assert_eq!(list(&mut db, Query::from("posts").filter("seen", Op::Eq, 1)), Vec::<i64>::new());
        assert_eq!(Query::from("posts").count(&mut db).unwrap(), 4);
        let sql = objstore_db_core::sql::execute(&mut db, "SELECT id FROM posts WHERE tags = 'a' ORDER BY id DESC", &[]).unwrap();
        assert_eq!(sql, objstore_db_core::sql::SqlOutput::Rows(vec![json!({"id": 3}), json!({"id": 1})]));
    }
}
