//! Running a plan. Everything reads through `stream`, which hands over matching records in
//! plan order, strictly after a position, each with the position to resume after it. Writes
//! (cursor updates, patch, delete) never happen while a scan is open: rows are read in
//! batches, then written.

use serde_json::{Map, Value};

use crate::catalog::StoreInfo;
use crate::database::{Database, Tx};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::keypath::lookup;
use crate::ops::write;
use crate::range::{just_above, KeyRange};
use crate::records::{decode_record, record_text};

use super::plan::{plan, Plan, Source};
use super::{Position, Query};

/// Rows a cursor reads ahead before handing them out one by one.
const CURSOR_BATCH: usize = 256;

/// What a cursor callback says after each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Continue,
    Stop,
}

/// One record under a cursor. `key` is the key it was reached by (index key, order key or
/// primary key). Call `update` or `delete` to change it; the change is made before the next
/// record is read.
#[derive(Debug)]
pub struct CursorItem {
    pub key: Key,
    pub primary_key: Key,
    pub value: Value,
    action: Option<Action>,
}

#[derive(Debug)]
enum Action {
    Update(Value),
    Delete,
}

impl CursorItem {
    /// Replaces the record (its key must stay the same).
    pub fn update(&mut self, value: Value) {
        self.action = Some(Action::Update(value));
    }

    pub fn delete(&mut self) {
        self.action = Some(Action::Delete);
    }
}

struct Row {
    sort: Vec<u8>,
    pk: Vec<u8>,
    value: Stored,
    group: Option<Vec<u8>>,
    /// The element of the plan's multiEntry field this row is the index entry of, when the
    /// query selects that field.
    element: Option<Value>,
}

/// A matching record as it is stored (JSON text), decoded only when something looks inside
/// it: a page with nothing to check, sort or select hands the stored text on untouched.
enum Stored {
    Text(Vec<u8>),
    Decoded(Value),
}

impl Stored {
    fn value(&mut self, store: &str) -> Result<&Value> {
        if let Stored::Text(bytes) = self {
            *self = Stored::Decoded(decode_record(store, bytes)?);
        }
        match self {
            Stored::Decoded(value) => Ok(value),
            Stored::Text(_) => unreachable!("decoded above"),
        }
    }

    fn into_value(self, store: &str) -> Result<Value> {
        match self {
            Stored::Text(bytes) => decode_record(store, &bytes),
            Stored::Decoded(value) => Ok(value),
        }
    }

    /// Appends the record as JSON text.
    fn write_json(&self, store: &str, out: &mut String) -> Result<()> {
        match self {
            Stored::Text(bytes) => out.push_str(record_text(store, bytes)?),
            Stored::Decoded(value) => out.push_str(&value.to_string()),
        }
        Ok(())
    }
}

impl Row {
    fn position(&self) -> Position {
        Position { sort: self.sort.clone(), pk: self.pk.clone(), group: self.group.clone() }
    }
}

type Visit<'a> = &'a mut dyn FnMut(Row, Position) -> Result<bool>;
/// A visitor of matching (sort key, primary key, record) straight from the source.
type VisitMatch<'a> = &'a mut dyn FnMut(&[u8], &[u8], Stored) -> Result<bool>;

/// The encoded order key of a record: one field's key, or an array of several. `None` when a
/// field is missing or not a valid key.
fn order_key(query: &Query, record: &Value) -> Option<Vec<u8>> {
    if query.nulls_sorted {
        // Each field as [] (NULL: missing or not a key, before any value) or [key].
        let fields = query.order.iter().map(|field| {
            let key = lookup(record, field).and_then(|v| Key::from_json(v).ok());
            Key::Array(key.into_iter().collect())
        });
        return Key::Array(fields.collect()).encode().ok();
    }
    let mut keys = Vec::with_capacity(query.order.len());
    for field in &query.order {
        keys.push(Key::from_json(lookup(record, field)?).ok()?);
    }
    let key = if keys.len() == 1 { keys.pop().expect("one key") } else { Key::Array(keys) };
    key.encode().ok()
}

/// The order keys of a record's entries when the order names multiEntry `field`: one per
/// distinct element that is a key and meets the conditions on the field (a value that is not
/// an array is one element), as the index holds them, each with its element.
fn entry_order_keys(query: &Query, record: &Value, field: &str) -> Vec<(Vec<u8>, Value)> {
    let elements: Vec<Value> = match lookup(record, field) {
        Some(Value::Array(items)) => items.clone(),
        Some(other) => vec![other.clone()],
        None => Vec::new(),
    };
    let mut keys: Vec<(Vec<u8>, Value)> = elements
        .into_iter()
        .filter(|element| Key::from_json(element).is_ok())
        .filter_map(|element| {
            let mut entry = record.clone();
            crate::keypath::set(&mut entry, field, element.clone());
            let meets = query.conditions.iter().filter(|c| c.field == field).all(|c| c.matches(&entry, false));
            meets.then(|| order_key(query, &entry)).flatten().map(|key| (key, element))
        })
        .collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    keys.dedup_by(|a, b| a.0 == b.0);
    keys
}

/// Whether rows carry their multiEntry element: the query selects the field the rows are
/// index entries of.
fn wants_element(query: &Query, plan: &Plan) -> bool {
    let selected = |field: &String| query.select.as_ref().is_some_and(|fields| fields.contains(field));
    plan.entry_field.as_ref().is_some_and(selected)
}

/// The element every row has when an equality on the entry field names it.
fn named_element(query: &Query, plan: &Plan) -> Option<Value> {
    let field = plan.entry_field.as_ref()?;
    query.conditions.iter().find(|c| c.op == super::Op::Eq && &c.field == field).map(|c| c.value.to_json())
}

/// The element of a row read from the source in plan order: the one an equality names, else
/// the index key the row was read by.
fn source_element(query: &Query, plan: &Plan, sort: &[u8]) -> Result<Option<Value>> {
    match named_element(query, plan) {
        Some(element) => Ok(Some(element)),
        None if plan.reads_entries => Ok(Some(Key::decode(sort)?.to_json())),
        None => Ok(None),
    }
}

/// Reads the plan's source in its order, after `after`, passing (sort key, primary key, record)
/// of every record that matches the conditions.
fn read_source(
    db: &mut Database,
    info: &StoreInfo,
    query: &Query,
    plan: &Plan,
    after: Option<&Position>,
    visit: VisitMatch,
) -> Result<()> {
    let store = &info.schema.name;
    // The range answers the served conditions exactly; only the rest need checking.
    let check = !plan.residual.is_empty();
    // Reading a multiEntry index's entries: a condition on its field is met by the entry's
    // element (the index key), not by any element of the record's array.
    let entry_field = plan.entries.as_deref().filter(|_| plan.reads_entries);
    let mut matched = |sort: &[u8], pk: &[u8], bytes: &[u8]| {
        if !check {
            return visit(sort, pk, Stored::Text(bytes.to_vec()));
        }
        let value = decode_record(store, bytes)?;
        let matches = match entry_field {
            Some(field) => {
                let mut entry = value.clone();
                crate::keypath::set(&mut entry, field, Key::decode(sort)?.to_json());
                query.matches(&entry, &plan.multi)
            }
            None => query.matches(&value, &plan.multi),
        };
        if matches {
            visit(sort, pk, Stored::Decoded(value))
        } else {
            Ok(true)
        }
    };
    match &plan.source {
        Source::Store => {
            let mut range = plan.range.clone();
            if let Some(p) = after {
                if query.reverse {
                    range.high = range.high.min(p.pk.clone());
                } else {
                    range.low = range.low.max(just_above(&p.pk));
                }
            }
            db.mech.scan(plan.table, &range, query.reverse, true, &mut |pk, v| matched(pk, pk, v))
        }
        Source::Index(_) => {
            let after = after.map(|p| (p.sort.as_slice(), p.pk.as_slice()));
            db.mech.index_scan_values(plan.table, info.data, &plan.range, after, query.reverse, &mut matched)
        }
    }
}

/// Hands matching records to `visit` in the query's order, strictly after `after`, with
/// `unique` applied, until `visit` returns false.
fn stream(
    db: &mut Database,
    info: &StoreInfo,
    query: &Query,
    plan: &Plan,
    after: Option<&Position>,
    visit: Visit,
) -> Result<()> {
    let store = &info.schema.name;
    let mut unique =
        Unique { on: query.unique, skip_group: after.and_then(|p| p.group.clone()), pending: None, stopped: false };
    let with_element = wants_element(query, plan);
    if plan.sort.is_none() {
        read_source(db, info, query, plan, after, &mut |sort, pk, mut value| {
            let group = match (query.unique, &plan.entries) {
                // Rows are a multiEntry index's entries: one group per element, its index key.
                // ... or, with no order, the key of the index (or store) the plan reads.
                (true, Some(_)) => Some(sort.to_vec()),
                (true, None) if query.order.is_empty() => Some(sort.to_vec()),
                (true, None) => Some(order_key(query, value.value(store)?).unwrap_or_default()),
                (false, _) => None,
            };
            let element = if with_element { source_element(query, plan, sort)? } else { None };
            unique.offer(Row { sort: sort.to_vec(), pk: pk.to_vec(), value, group, element }, visit)
        })?;
        return unique.finish(visit);
    }

    // No candidate gives the order: sort the matches in memory by (order key, primary key).
    let mut rows = Vec::new();
    // A multiEntry index meets a record once per element in range: its entries come from the
    // record itself, once.
    let mut expanded = std::collections::HashSet::new();
    read_source(db, info, query, plan, None, &mut |_, pk, mut value| {
        if plan.reads_entries && !expanded.insert(pk.to_vec()) {
            return Ok(true);
        }
        let record = value.value(store)?;
        let sorts: Vec<(Vec<u8>, Option<Value>)> = match &plan.entries {
            Some(field) => entry_order_keys(query, record, field).into_iter().map(|(k, e)| (k, Some(e))).collect(),
            None => order_key(query, record).into_iter().map(|k| (k, None)).collect(),
        };
        for (sort, entry_element) in sorts {
            let group = query.unique.then(|| sort.clone());
            let element = match with_element {
                true => named_element(query, plan).or(entry_element),
                false => None,
            };
            rows.push(Row { sort, pk: pk.to_vec(), value: Stored::Decoded(record.clone()), group, element });
        }
        Ok(true)
    })?;
    rows.sort_by(|a, b| (&a.sort, &a.pk).cmp(&(&b.sort, &b.pk)));
    if query.reverse {
        rows.reverse();
    }
    let beyond = |row: &Row| match after {
        None => true,
        Some(p) if query.reverse => (&row.sort, &row.pk) < (&p.sort, &p.pk),
        Some(p) => (&row.sort, &row.pk) > (&p.sort, &p.pk),
    };
    for row in rows.into_iter().filter(beyond) {
        if !unique.offer(row, visit)? {
            return Ok(());
        }
    }
    unique.finish(visit)
}

/// `unique`: of each run of records with the same order key, keep the one with the lowest
/// primary key. A run is known complete only when the next begins, so the kept record resumes
/// after the run's last row.
struct Unique {
    on: bool,
    /// The group the previous page ended in: its rows were all seen.
    skip_group: Option<Vec<u8>>,
    /// The best row of the current run, and the run's last position.
    pending: Option<(Row, Position)>,
    stopped: bool,
}

impl Unique {
    fn offer(&mut self, row: Row, visit: Visit) -> Result<bool> {
        if !self.on {
            let position = row.position();
            return visit(row, position);
        }
        if row.group.is_some() && row.group == self.skip_group {
            return Ok(true);
        }
        let position = row.position();
        match &mut self.pending {
            Some((best, last)) if best.group == row.group => {
                *last = position;
                if row.pk < best.pk {
                    *best = row;
                }
                Ok(true)
            }
            pending => match pending.replace((row, position)) {
                None => Ok(true),
                Some((done, last)) => {
                    let go_on = visit(done, last)?;
                    self.stopped = !go_on;
                    Ok(go_on)
                }
            },
        }
    }

    fn finish(&mut self, visit: Visit) -> Result<()> {
        if let (false, Some((best, last))) = (self.stopped, self.pending.take()) {
            visit(best, last)?;
        }
        Ok(())
    }
}

pub(super) fn list(tx: &mut Tx<'_>, query: &mut Query, n: usize) -> Result<Vec<Value>> {
    let store = query.store.clone();
    page(tx, query, n)?.into_iter().map(|record| Ok(query.project(record.into_value(&store)?))).collect()
}

/// As `list`, the page as one JSON array text: records nothing had to look inside are handed on
/// as stored, without a decode and an encode.
pub(super) fn list_text(tx: &mut Tx<'_>, query: &mut Query, n: usize) -> Result<String> {
    let store = query.store.clone();
    let mut out = String::from("[");
    for (i, record) in page(tx, query, n)?.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match query.select {
            None => record.write_json(&store, &mut out)?,
            Some(_) => out.push_str(&query.project(record.into_value(&store)?).to_string()),
        }
    }
    out.push(']');
    Ok(out)
}

/// The next `n` matches (after `skip` and the position of the previous page), moving the
/// query's paging on.
fn page(tx: &mut Tx<'_>, query: &mut Query, n: usize) -> Result<Vec<Stored>> {
    if n == 0 || query.exhausted {
        return Ok(Vec::new());
    }
    let db = &mut *tx.db;
    let info = db.store_for(&query.store, false)?;
    let plan = plan(&info, query)?;
    let store = &info.schema.name;
    let (mut out, mut skip, mut last) = (Vec::new(), query.skip, None);
    stream(db, &info, query, &plan, query.position.as_ref(), &mut |row, position| {
        last = Some(position);
        if skip > 0 {
            skip -= 1;
            return Ok(true);
        }
        out.push(with_element(row, &plan, store)?);
        Ok(out.len() < n)
    })?;
    query.skip = skip;
    if let Some(position) = last {
        query.position = Some(position);
    }
    query.exhausted = out.len() < n;
    Ok(out)
}

/// The row's record, its entry field holding the row's element when it carries one (the
/// selection then gives the element, as an index entry does).
fn with_element(row: Row, plan: &Plan, store: &str) -> Result<Stored> {
    let (Some(element), Some(field)) = (row.element, &plan.entry_field) else { return Ok(row.value) };
    let mut record = row.value.into_value(store)?;
    crate::keypath::set(&mut record, field, element);
    Ok(Stored::Decoded(record))
}

/// The next `n` matches as cursor items (key, primary key, unprojected record), resuming after
/// the last one handed out: the step of a pull cursor.
pub(super) fn next_items(tx: &mut Tx<'_>, query: &mut Query, n: usize) -> Result<Vec<CursorItem>> {
    if n == 0 || query.exhausted {
        return Ok(Vec::new());
    }
    let db = &mut *tx.db;
    let info = db.store_for(&query.store, false)?;
    let plan = plan(&info, query)?;
    let (mut rows, mut last) = (Vec::new(), None);
    stream(db, &info, query, &plan, query.position.as_ref(), &mut |row, position| {
        last = Some(position);
        rows.push(row);
        Ok(rows.len() < n)
    })?;
    if let Some(position) = last {
        query.position = Some(position);
    }
    query.exhausted = rows.len() < n;
    let store = &info.schema.name;
    rows.into_iter()
        .map(|row| {
            Ok(CursorItem {
                key: Key::decode(&row.sort)?,
                primary_key: Key::decode(&row.pk)?,
                value: row.value.into_value(store)?,
                action: None,
            })
        })
        .collect()
}

/// Replaces the record under `key` in the query's store (a pull cursor's update).
pub(super) fn update_one(tx: &mut Tx<'_>, query: &Query, key: &Key, value: Value) -> Result<()> {
    let info = tx.db.store_for(&query.store, true)?;
    replace(tx, &info, key, value)
}

pub(super) fn count(tx: &mut Tx<'_>, query: &Query) -> Result<u64> {
    let db = &mut *tx.db;
    let info = db.store_for(&query.store, false)?;
    let plan = plan(&info, query)?;
    if plan.exact && !query.unique {
        return match plan.source {
            Source::Store => db.mech.count(plan.table, &plan.range),
            Source::Index(_) => db.mech.index_count(plan.table, &plan.range),
        };
    }
    let mut n = 0;
    stream(db, &info, query, &plan, None, &mut |_, _| {
        n += 1;
        Ok(true)
    })?;
    Ok(n)
}

/// Every matching (primary key, record), in order, each record once (rows of a multiEntry
/// order are entries: a record can be several); for writes that must not run mid-scan.
fn collect_all(db: &mut Database, info: &StoreInfo, query: &Query) -> Result<Vec<(Vec<u8>, Value)>> {
    let plan = plan(info, query)?;
    let mut rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    stream(db, info, query, &plan, None, &mut |row, _| {
        if seen.insert(row.pk.clone()) {
            rows.push((row.pk, row.value.into_value(&info.schema.name)?));
        }
        Ok(true)
    })?;
    Ok(rows)
}

pub(super) fn open(
    tx: &mut Tx<'_>,
    query: &Query,
    mut visit: impl FnMut(&mut CursorItem) -> Result<Step>,
) -> Result<u64> {
    let info = tx.db.store_for(&query.store, false)?;
    let plan = plan(&info, query)?;
    // An in-memory sort reads everything anyway: one batch. Otherwise read ahead a little.
    let batch_size = if plan.sort.is_some() { usize::MAX } else { CURSOR_BATCH };
    let (mut position, mut visited) = (None, 0);
    loop {
        let mut batch = Vec::new();
        stream(tx.db, &info, query, &plan, position.as_ref(), &mut |row, at| {
            batch.push((row, at));
            Ok(batch.len() < batch_size)
        })?;
        let complete = batch.len() < batch_size;
        for (row, at) in batch {
            position = Some(at);
            let mut item = CursorItem {
                key: Key::decode(&row.sort)?,
                primary_key: Key::decode(&row.pk)?,
                value: row.value.into_value(&query.store)?,
                action: None,
            };
            let step = visit(&mut item)?;
            visited += 1;
            match item.action {
                Some(Action::Update(value)) => replace(tx, &info, &item.primary_key, value)?,
                Some(Action::Delete) => {
                    tx.remove(&query.store, &KeyRange::Only(item.primary_key.clone()))?;
                }
                None => {}
            }
            if step == Step::Stop {
                return Ok(visited);
            }
        }
        if complete {
            return Ok(visited);
        }
    }
}

pub(super) fn rewrite(tx: &mut Tx<'_>, query: &Query, change: impl Fn(&mut Value)) -> Result<u64> {
    let info = tx.db.store_for(&query.store, true)?;
    let mut changed = 0;
    for (pk, record) in collect_all(tx.db, &info, query)? {
        let mut new = record.clone();
        change(&mut new);
        if new != record {
            replace(tx, &info, &Key::decode(&pk)?, new)?;
            changed += 1;
        }
    }
    Ok(changed)
}

pub(super) fn delete(tx: &mut Tx<'_>, query: &Query) -> Result<u64> {
    let info = tx.db.store_for(&query.store, true)?;
    let rows = collect_all(tx.db, &info, query)?;
    for (pk, _) in &rows {
        tx.remove(&query.store, &KeyRange::Only(Key::decode(pk)?))?;
    }
    Ok(rows.len() as u64)
}

/// Writes a new version of the record under `key`, refusing one that would move it.
fn replace(tx: &mut Tx<'_>, info: &StoreInfo, key: &Key, value: Value) -> Result<()> {
    let store = &info.schema.name;
    match &info.schema.key_path {
        Some(path) => {
            let new_key = path.extract(&value).map_err(|e| e.in_store(store, None))?;
            if new_key.as_ref() != Some(key) {
                return Err(Error::InvalidArgument(format!(
                    "an update of record {key} in store {store:?} would change its key to {}; remove it and add a new one instead",
                    new_key.map_or("nothing".to_string(), |k| k.to_string())
                )));
            }
            write(tx.db, store, value.into(), None, false)?;
        }
        None => {
            write(tx.db, store, value.into(), Some(key.clone()), false)?;
        }
    }
    Ok(())
}

/// RFC 7396 JSON merge patch: objects merge field by field, null removes, anything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let map = target.as_object_mut().expect("made an object above");
    for (name, value) in fields {
        if value.is_null() {
            map.remove(name);
        } else {
            merge_patch(map.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}
