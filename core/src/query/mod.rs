//! Queries: `Query::from(store).filter(field, op, value).order(field).list(db, n)`.
//!
//! Any filter works with or without an index: the planner (`plan.rs`) picks the index that
//! serves the most of the filter and the order, and anything it cannot serve runs as a residual
//! filter (and, if need be, an in-memory sort) instead of failing. `explain` shows the choice.
//!
//! Semantics: a condition compares keys in key order, but never across types (`age > 30`
//! matches numbers only); a record whose field is missing or not a valid key matches no
//! condition. `true`, `false` and `null` compare by equality only, as a residual filter.
//! `order(fields)` returns only records that have every order field, as an index would (SQL's
//! ORDER BY keeps every row, sorting missing values as NULL). `list(n)` pages by keyset: each call resumes after the last record it returned.

mod exec;
mod plan;

use serde_json::{Map, Value};

use crate::database::{Database, Mode, Tx};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::keypath::lookup;

use exec::merge_patch;
pub use exec::{CursorItem, Step};
pub use plan::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    /// A string (or binary) prefix.
    Starts,
}

impl Op {
    pub fn parse(text: &str) -> Result<Op> {
        Ok(match text {
            // `==` is an alias, for callers used to it.
            "=" | "==" => Op::Eq,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            // `^` is YDN-DB's spelling.
            "starts" | "^" => Op::Starts,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown comparison {other:?} (known: = (or ==), <, <=, >, >=, starts (or ^))"
                )))
            }
        })
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Starts => "starts",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub field: String,
    pub op: Op,
    pub value: Key,
}

impl Condition {
    /// Whether a record satisfies this condition. On a multiEntry field (`multi`) an array
    /// matches when any of its elements does, as the index holds one entry per element.
    pub(crate) fn matches(&self, record: &Value, multi: bool) -> bool {
        match lookup(record, &self.field) {
            Some(Value::Array(items)) if multi => items.iter().any(|item| self.matches_value(item)),
            Some(found) => self.matches_value(found),
            None => false,
        }
    }

    fn matches_value(&self, value: &Value) -> bool {
        let Ok(found) = Key::from_json(value) else {
            return false;
        };
        match self.op {
            Op::Eq => found == self.value,
            Op::Starts => match (&found, &self.value) {
                (Key::String(s), Key::String(p)) => s.as_bytes().starts_with(p.as_bytes()),
                (Key::Binary(b), Key::Binary(p)) => b.starts_with(p),
                _ => false,
            },
            op => {
                if found.type_rank() != self.value.type_rank() {
                    return false;
                }
                let ordering = found.cmp(&self.value);
                match op {
                    Op::Lt => ordering.is_lt(),
                    Op::Le => ordering.is_le(),
                    Op::Gt => ordering.is_gt(),
                    _ => ordering.is_ge(),
                }
            }
        }
    }
}

/// A comparison with `true`, `false` or `null`, which are not keys: never served by an index,
/// checked against each record (equality only).
#[derive(Debug, Clone, PartialEq)]
pub struct Literal {
    pub field: String,
    pub value: Value,
}

impl Literal {
    fn matches(&self, record: &Value) -> bool {
        lookup(record, &self.field) == Some(&self.value)
    }
}

impl std::fmt::Display for Literal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}", self.field, self.value)
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.field, self.op.symbol(), self.value)
    }
}

/// Where the last `list` stopped: the row's key in plan order, its primary key, and (for
/// `unique`) its order key, so that the next call resumes strictly after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Position {
    pub sort: Vec<u8>,
    pub pk: Vec<u8>,
    pub group: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub(crate) store: String,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) literals: Vec<Literal>,
    pub(crate) order: Vec<String>,
    /// SQL's ORDER BY: records missing an order field (or holding a non-key there) stay, sorted
    /// as NULL, first ascending. Without it an order keeps only records that have its fields.
    pub(crate) nulls_sorted: bool,
    pub(crate) reverse: bool,
    pub(crate) unique: bool,
    pub(crate) select: Option<Vec<String>>,
    /// Records to pass over before the first one returned (SQL's OFFSET); used up once.
    pub(crate) skip: usize,
    pub(crate) position: Option<Position>,
    pub(crate) exhausted: bool,
}

impl Query {
    pub fn from(store: &str) -> Query {
        Query {
            store: store.to_string(),
            conditions: Vec::new(),
            literals: Vec::new(),
            order: Vec::new(),
            nulls_sorted: false,
            reverse: false,
            unique: false,
            select: None,
            skip: 0,
            position: None,
            exhausted: false,
        }
    }

    /// Reads a query written as JSON, as the C, Python and Node APIs pass it:
    /// `{"from": store, "where"?: [[field, op, value], ...], "order"?: field | [fields],
    /// "reverse"?: bool, "unique"?: bool, "select"?: [fields]}`.
    pub fn from_json(spec: &Value) -> Result<Query> {
        let bad = |why: String| Error::InvalidArgument(format!("query: {why}"));
        let map = spec.as_object().ok_or_else(|| bad(format!("expected an object, got {spec}")))?;
        let store = map.get("from").and_then(Value::as_str).ok_or_else(|| bad("\"from\" must name a store".into()))?;
        let strings = |v: &Value, what: &str| -> Result<Vec<String>> {
            match v {
                Value::String(s) => Ok(vec![s.clone()]),
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string).ok_or_else(|| bad(format!("{what} must hold field names"))))
                    .collect(),
                _ => Err(bad(format!("{what} must be a field name or an array of them"))),
            }
        };
        let mut query = Query::from(store);
        for (field, v) in map {
            match field.as_str() {
                "from" => {}
                "where" => {
                    let conditions =
                        v.as_array().ok_or_else(|| bad("where must be an array of [field, op, value]".into()))?;
                    for c in conditions {
                        match c.as_array().map(Vec::as_slice) {
                            Some([Value::String(f), Value::String(op), value]) => {
                                query = query.filter_json(f, op, value)?
                            }
                            _ => return Err(bad(format!("a condition must be [field, op, value], not {c}"))),
                        }
                    }
                }
                "order" => query.order = strings(v, "order")?,
                "select" => query.select = Some(strings(v, "select")?),
                "reverse" => query.reverse = v.as_bool().ok_or_else(|| bad("reverse must be true or false".into()))?,
                "unique" => query.unique = v.as_bool().ok_or_else(|| bad("unique must be true or false".into()))?,
                other => {
                    return Err(bad(format!(
                        "unknown field {other:?} (known: from, where, order, reverse, unique, select)"
                    )))
                }
            }
        }
        Ok(query)
    }

    pub fn store(&self) -> &str {
        &self.store
    }

    /// Adds a condition (`where` in the other languages). Conditions combine with AND.
    pub fn filter(mut self, field: &str, op: Op, value: impl Into<Key>) -> Query {
        self.conditions.push(Condition { field: field.to_string(), op, value: value.into() });
        self.reset();
        self
    }

    /// Adds a condition given as text and JSON, as the bindings and SQL do. `true`, `false`
    /// and `null` are not keys: they compare by equality, as a residual filter.
    pub fn filter_json(mut self, field: &str, op: &str, value: &Value) -> Result<Query> {
        let op = Op::parse(op)?;
        if matches!(value, Value::Bool(_) | Value::Null) {
            if op != Op::Eq {
                return Err(Error::InvalidArgument(format!(
                    "field {field:?} {} {value}: true, false and null compare with = only",
                    op.symbol()
                )));
            }
            self.literals.push(Literal { field: field.to_string(), value: value.clone() });
            self.reset();
            return Ok(self);
        }
        let key = Key::from_json(value).map_err(|e| match e {
            Error::InvalidKey { reason, .. } => {
                Error::InvalidArgument(format!("cannot compare field {field:?} with {value}: {reason}"))
            }
            other => other,
        })?;
        Ok(self.filter(field, op, key))
    }

    /// Another condition; the same as `filter`.
    pub fn and(self, field: &str, op: Op, value: impl Into<Key>) -> Query {
        self.filter(field, op, value)
    }

    /// Orders by a field (call again to order by further fields).
    pub fn order(mut self, field: &str) -> Query {
        self.order.push(field.to_string());
        self.reset();
        self
    }

    pub fn reverse(mut self) -> Query {
        self.reverse = !self.reverse;
        self.reset();
        self
    }

    /// One record per distinct value of the order fields: the one with the lowest primary key.
    /// Without an order, one per key of the index the plan reads (as a `nextunique` cursor on
    /// it): `filter("city", Op::Eq, "oslo").unique()` gives one record.
    pub fn unique(mut self) -> Query {
        self.unique = true;
        self.reset();
        self
    }

    /// Returns only these (possibly dotted) fields of each record.
    pub fn select(mut self, fields: &[&str]) -> Query {
        self.select = Some(fields.iter().map(|f| f.to_string()).collect());
        self
    }

    /// Passes over the first `n` records (SQL's OFFSET). Paging should use `list` instead.
    pub fn skip(mut self, n: usize) -> Query {
        self.skip = n;
        self
    }

    /// Starts paging again from the first record.
    pub fn reset(&mut self) {
        self.position = None;
        self.exhausted = false;
    }

    /// Whether the query names an order (otherwise records come in the order of whatever the
    /// plan reads: an index or the primary key).
    pub fn is_ordered(&self) -> bool {
        !self.order.is_empty()
    }

    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Whether a record matches; `multi` names the store's multiEntry fields.
    pub(crate) fn matches(&self, record: &Value, multi: &[String]) -> bool {
        self.conditions.iter().all(|c| c.matches(record, multi.contains(&c.field)))
            && self.literals.iter().all(|l| l.matches(record))
    }

    /// The record cut down to the selected fields.
    pub(crate) fn project(&self, record: Value) -> Value {
        let Some(fields) = &self.select else { return record };
        let mut out = Value::Object(Map::new());
        for field in fields {
            if let Some(found) = lookup(&record, field) {
                let mut node = &mut out;
                let mut segments = field.split('.').peekable();
                while let Some(segment) = segments.next() {
                    let map = node.as_object_mut().expect("built as objects");
                    if segments.peek().is_none() {
                        map.insert(segment.to_string(), found.clone());
                        break;
                    }
                    node = map.entry(segment.to_string()).or_insert_with(|| Value::Object(Map::new()));
                }
            }
        }
        out
    }

    // ----- running, each in a transaction of its own or inside one ---------------------------

    /// The next `n` records: the first call starts at the beginning, each further call resumes
    /// after the last record returned (keyset paging). An empty page means the end.
    pub fn list(&mut self, db: &mut Database, n: usize) -> Result<Vec<Value>> {
        let store = self.store.clone();
        db.run_single_read(&store, |tx| self.list_in(tx, n)) // a page is one scan
    }

    pub fn list_in(&mut self, tx: &mut Tx<'_>, n: usize) -> Result<Vec<Value>> {
        exec::list(tx, self, n)
    }

    /// As `list_in`, the page as one JSON array text (records handed on as stored where nothing
    /// had to look inside them): for a caller that hands text on.
    pub fn list_text_in(&mut self, tx: &mut Tx<'_>, n: usize) -> Result<String> {
        exec::list_text(tx, self, n)
    }

    /// How many records match (ignores paging).
    pub fn count(&self, db: &mut Database) -> Result<u64> {
        db.run_single_read(&self.store, |tx| self.count_in(tx)) // one count or one scan
    }

    pub fn count_in(&self, tx: &mut Tx<'_>) -> Result<u64> {
        exec::count(tx, self)
    }

    /// The plan the query runs with.
    pub fn explain(&self, db: &mut Database) -> Result<Plan> {
        db.run(&[&self.store], Mode::ReadOnly, |tx| self.explain_in(tx))
    }

    pub fn explain_in(&self, tx: &mut Tx<'_>) -> Result<Plan> {
        let info = tx.db.store_for(&self.store, false)?;
        plan::plan(&info, self)
    }

    /// Streams matching records one at a time to `visit`, which may update or delete each one
    /// (in a readwrite transaction) and may stop early. Returns how many were visited. Memory
    /// stays flat when the order comes from an index or the primary key.
    pub fn open(
        &self,
        db: &mut Database,
        mode: Mode,
        visit: impl FnMut(&mut CursorItem) -> Result<Step>,
    ) -> Result<u64> {
        db.run(&[&self.store], mode, |tx| self.open_in(tx, visit))
    }

    pub fn open_in(&self, tx: &mut Tx<'_>, visit: impl FnMut(&mut CursorItem) -> Result<Step>) -> Result<u64> {
        exec::open(tx, self, visit)
    }

    /// The next `n` matching records as cursor items, resuming after the last one returned:
    /// one step of a pull cursor. An empty batch means the end. Memory stays flat when the
    /// order comes from an index or the primary key.
    pub fn next_in(&mut self, tx: &mut Tx<'_>, n: usize) -> Result<Vec<CursorItem>> {
        exec::next_items(tx, self, n)
    }

    /// Replaces the record under `primary_key` in the query's store, refusing a value that
    /// would move it to another key (a pull cursor's `update`).
    pub fn update_in(&self, tx: &mut Tx<'_>, primary_key: &Key, value: Value) -> Result<()> {
        exec::update_one(tx, self, primary_key, value)
    }

    /// Merges `patch` (RFC 7396: null removes a field) into every matching record; returns
    /// how many changed. A patch may not change a record's key.
    pub fn patch(&self, db: &mut Database, patch: &Value) -> Result<u64> {
        db.run(&[&self.store], Mode::ReadWrite, |tx| self.patch_in(tx, patch))
    }

    pub fn patch_in(&self, tx: &mut Tx<'_>, patch: &Value) -> Result<u64> {
        self.rewrite_in(tx, |record| merge_patch(record, patch))
    }

    /// Rewrites every matching record with `change`; returns how many changed. A change may
    /// not move a record to another key.
    pub fn rewrite_in(&self, tx: &mut Tx<'_>, change: impl Fn(&mut Value)) -> Result<u64> {
        exec::rewrite(tx, self, change)
    }

    /// Removes every matching record; returns how many went.
    pub fn delete(&self, db: &mut Database) -> Result<u64> {
        db.run(&[&self.store], Mode::ReadWrite, |tx| self.delete_in(tx))
    }

    pub fn delete_in(&self, tx: &mut Tx<'_>) -> Result<u64> {
        exec::delete(tx, self)
    }
}
