//! Part of the query suite: random sequences of puts, removes and queries run against the
//! `sqlite` mechanism, the `memory` mechanism and a trivial model written here. The two
//! mechanisms must agree exactly; the model, which knows nothing of plans, must agree on which
//! records match, on their order keys in sequence, and on counts. Paging through a query with
//! `list(n)` must give what one big `list` gives.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use objstore_db_core::{Database, Key, KeyRange, MechanismKind, Mode, Op, OpenOptions, Query, Schema};
use proptest::prelude::*;
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"stores": [{"name": "s", "keyPath": "id", "indexes": [
  {"keyPath": "a"}, {"keyPath": "b"}, {"keyPath": ["a", "b"]}, {"keyPath": ["b", "id"]},
  {"keyPath": "t", "multiEntry": true}
]}]}"#;

#[derive(Debug, Clone)]
enum Step {
    Put { id: i64, a: Option<Value>, b: Option<i64>, t: Option<Value> },
    Remove { low: i64, high: i64 },
    Query(QuerySpec),
}

#[derive(Debug, Clone)]
struct QuerySpec {
    conditions: Vec<(&'static str, Op, Value)>,
    order: Vec<&'static str>,
    reverse: bool,
    unique: bool,
    page: usize,
}

fn a_value() -> impl Strategy<Value = Value> {
    prop_oneof![(0i64..4).prop_map(Value::from), prop::sample::select(vec!["x", "xy", "y", ""]).prop_map(Value::from)]
}

fn condition() -> impl Strategy<Value = (&'static str, Op, Value)> {
    let op = prop::sample::select(vec![Op::Eq, Op::Lt, Op::Le, Op::Gt, Op::Ge]);
    prop_oneof![
        (Just("id"), op.clone(), (0i64..12).prop_map(Value::from)),
        (Just("a"), op.clone(), a_value()),
        (Just("b"), op.clone(), (0i64..3).prop_map(Value::from)),
        (Just("a"), Just(Op::Starts), prop::sample::select(vec!["x", "y", ""]).prop_map(Value::from)),
        (Just("t"), op, a_value()),
        (Just("t"), Just(Op::Starts), prop::sample::select(vec!["x", "y"]).prop_map(Value::from)),
    ]
}

fn query_spec() -> impl Strategy<Value = QuerySpec> {
    let orders = prop::sample::select(vec![
        vec![],
        vec!["a"],
        vec!["b"],
        vec!["a", "b"],
        vec!["id"],
        vec!["b", "a"],
        vec!["t"],
        vec!["t", "b"],
    ]);
    (prop::collection::vec(condition(), 0..3), orders, any::<bool>(), any::<bool>(), 1usize..4).prop_map(
        |(conditions, order, reverse, unique, page)| {
            let unique = unique && !order.is_empty();
            QuerySpec { conditions, order, reverse, unique, page }
        },
    )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0i64..12, prop::option::weighted(0.8, a_value()), prop::option::weighted(0.8, 0i64..3), prop::option::weighted(0.8, t_value()))
            .prop_map(|(id, a, b, t)| Step::Put { id, a, b, t }),
        1 => (0i64..12, 0i64..4).prop_map(|(low, len)| Step::Remove { low, high: low + len }),
        3 => query_spec().prop_map(Step::Query),
    ]
}

/// A multiEntry field: an array of values (repeats and a non-key among them), or one value.
fn t_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(prop_oneof![4 => a_value(), 1 => Just(Value::Bool(true))], 0..4).prop_map(Value::Array),
        1 => a_value(),
    ]
}

fn record(id: i64, a: &Option<Value>, b: &Option<i64>, t: &Option<Value>) -> Value {
    let mut r = json!({"id": id});
    if let Some(t) = t {
        r["t"] = t.clone();
    }
    if let Some(a) = a {
        r["a"] = a.clone();
    }
    if let Some(b) = b {
        r["b"] = json!(b);
    }
    r
}

fn build(spec: &QuerySpec) -> Query {
    let mut q = Query::from("s");
    for (field, op, value) in &spec.conditions {
        q = q.filter(field, *op, Key::from_json(value).unwrap());
    }
    for field in &spec.order {
        q = q.order(field);
    }
    if spec.reverse {
        q = q.reverse();
    }
    if spec.unique {
        q = q.unique();
    }
    q
}

// ----- the model: plain Rust over a map, no plans ------------------------------------------

fn field_key(record: &Value, field: &str) -> Option<Key> {
    record.get(field).and_then(|v| Key::from_json(v).ok())
}

/// On the multiEntry field `t`, an array matches when any element does.
fn model_matches(record: &Value, condition: &(&str, Op, Value)) -> bool {
    match record.get(condition.0) {
        Some(Value::Array(items)) if condition.0 == "t" => {
            items.iter().any(|item| model_matches(&json!({"t": item}), condition))
        }
        _ => model_matches_value(record, condition),
    }
}

fn model_matches_value(record: &Value, (field, op, value): &(&str, Op, Value)) -> bool {
    let (Some(found), want) = (field_key(record, field), Key::from_json(value).unwrap()) else { return false };
    let same_type = std::mem::discriminant(&found) == std::mem::discriminant(&want);
    match op {
        Op::Eq => found == want,
        Op::Starts => matches!((&found, &want), (Key::String(s), Key::String(p)) if s.starts_with(p.as_str())),
        Op::Lt => same_type && found < want,
        Op::Le => same_type && found <= want,
        Op::Gt => same_type && found > want,
        Op::Ge => same_type && found >= want,
    }
}

fn order_key(record: &Value, order: &[&str]) -> Option<Key> {
    let keys: Option<Vec<Key>> = order.iter().map(|f| field_key(record, f)).collect();
    let mut keys = keys?;
    Some(if keys.len() == 1 { keys.pop().unwrap() } else { Key::Array(keys) })
}

/// The records a query returns, as the model sees them, with their order keys.
fn model_query(records: &BTreeMap<i64, Value>, spec: &QuerySpec) -> Vec<(Option<Key>, Value)> {
    let matching = records.values().filter(|r| spec.conditions.iter().all(|c| model_matches(r, c)));
    if spec.order.is_empty() {
        return matching.map(|r| (None, r.clone())).collect();
    }
    // Ordered by `t`, the rows are its entries: one per distinct element that is a key and meets
    // the conditions on `t`, as IndexedDB's multiEntry index has them.
    let entries = |r: &Value| -> Vec<Value> {
        if !spec.order.contains(&"t") {
            return vec![r.clone()];
        }
        let elements = match r.get("t") {
            Some(Value::Array(items)) => items.clone(),
            Some(one) => vec![one.clone()],
            None => vec![],
        };
        let mut out: Vec<Value> = Vec::new();
        for element in elements.into_iter().filter(|e| Key::from_json(e).is_ok()) {
            let mut entry = r.clone();
            entry["t"] = element;
            let meets = spec.conditions.iter().filter(|c| c.0 == "t").all(|c| model_matches_value(&entry, c));
            if meets && !out.iter().any(|o| o["t"] == entry["t"]) {
                out.push(entry);
            }
        }
        out
    };
    let mut rows: Vec<(Key, i64, Value)> = matching
        .flat_map(|r| entries(r).into_iter().map(move |e| (e, r.clone())))
        .filter_map(|(e, r)| order_key(&e, &spec.order).map(|k| (k, r["id"].as_i64().unwrap(), r)))
        .collect();
    rows.sort_by(|x, y| (&x.0, x.1).cmp(&(&y.0, y.1)));
    if spec.unique {
        rows.dedup_by(|later, earlier| later.0 == earlier.0); // keeps the lowest id of each group
    }
    if spec.reverse {
        rows.reverse();
    }
    rows.into_iter().map(|(k, _, r)| (Some(k), r)).collect()
}

fn ids(rows: &[Value]) -> Vec<i64> {
    let mut ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort();
    ids
}

static CASE: AtomicUsize = AtomicUsize::new(0);

fn run_case(steps: Vec<Step>, dir: &std::path::Path) -> Result<(), TestCaseError> {
    let schema = || Some(Schema::from_json(SCHEMA).unwrap());
    let path = dir.join(format!("case-{}.sqlite3", CASE.fetch_add(1, Ordering::Relaxed)));
    let mut sqlite = Database::open(
        path.to_str().unwrap(),
        schema(),
        &OpenOptions { mechanism: MechanismKind::Sqlite, ..Default::default() },
    )
    .unwrap();
    let mut memory =
        Database::open("memory", schema(), &OpenOptions { mechanism: MechanismKind::Memory, ..Default::default() })
            .unwrap();
    let mut model = BTreeMap::new();

    for step in steps {
        match step {
            Step::Put { id, a, b, t } => {
                let r = record(id, &a, &b, &t);
                sqlite.put("s", r.clone(), None).unwrap();
                memory.put("s", r.clone(), None).unwrap();
                model.insert(id, r);
            }
            Step::Remove { low, high } => {
                let range = KeyRange::bound(low, high, false, false);
                let removed = sqlite.remove("s", &range).unwrap();
                prop_assert_eq!(memory.remove("s", &range).unwrap(), removed);
                let before = model.len();
                model.retain(|id, _| *id < low || *id > high);
                prop_assert_eq!(removed as usize, before - model.len());
            }
            Step::Query(spec) => {
                let whole = build(&spec).list(&mut sqlite, 1000).unwrap();
                let whole_memory = build(&spec).list(&mut memory, 1000).unwrap();
                prop_assert_eq!(&whole, &whole_memory, "sqlite and memory differ for {:?}", spec);

                let mut paged = Vec::new();
                let mut q = build(&spec);
                loop {
                    let page = q.list(&mut sqlite, spec.page).unwrap();
                    prop_assert!(page.len() <= spec.page);
                    if page.is_empty() {
                        break;
                    }
                    paged.extend(page);
                }
                prop_assert_eq!(&paged, &whole, "paging differs from one list for {:?}", spec);

                // The text form (stored texts handed on where nothing looked inside) says the same.
                let text = sqlite.run(&["s"], Mode::ReadOnly, |tx| build(&spec).list_text_in(tx, 1000)).unwrap();
                let from_text: Vec<Value> = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(&from_text, &whole, "list_text differs from list for {:?}", spec);

                let expected = model_query(&model, &spec);
                let expected_records: Vec<Value> = expected.iter().map(|(_, r)| r.clone()).collect();
                prop_assert_eq!(
                    ids(&whole),
                    ids(&expected_records),
                    "the model disagrees on which records, {:?}",
                    spec
                );
                if spec.order.contains(&"t") {
                    // Rows are entries: the records, in entry order (ties by id), must agree.
                    let in_order = |rows: &[Value]| rows.iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
                    prop_assert_eq!(
                        in_order(&whole),
                        in_order(&expected_records),
                        "the model disagrees on entries, {:?}",
                        spec
                    );
                } else if !spec.order.is_empty() {
                    let got_keys: Vec<Option<Key>> = whole.iter().map(|r| order_key(r, &spec.order)).collect();
                    let want_keys: Vec<Option<Key>> = expected.iter().map(|(k, _)| k.clone()).collect();
                    prop_assert_eq!(got_keys, want_keys, "the model disagrees on order, {:?}", spec);
                }
                if spec.unique {
                    prop_assert_eq!(&whole, &expected_records, "unique keeps the lowest id per group, {:?}", spec);
                }
                prop_assert_eq!(build(&spec).count(&mut sqlite).unwrap() as usize, whole.len());
                prop_assert_eq!(build(&spec).count(&mut memory).unwrap() as usize, whole.len());
            }
        }
    }
    drop(sqlite);
    let _ = std::fs::remove_file(&path);
    Ok(())
}

#[test]
fn sqlite_memory_and_a_model_agree_on_random_puts_removes_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    // 10,000 cases as two runners of 5,000 on two threads (each seeded at random, as one is):
    // the cases are independent, and one thread left a core idle for 45 s.
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                    cases: 5_000,
                    ..ProptestConfig::default()
                });
                runner
                    .run(&prop::collection::vec(step(), 1..30), |steps| run_case(steps, dir.path()))
                    .unwrap_or_else(|failure| panic!("{failure}"));
            });
        }
    });
}
