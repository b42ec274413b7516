//! Choosing how a query runs: from the store's primary key or from one index, over a byte
//! range that serves as many conditions as it can, with the rest as a residual filter and an
//! in-memory sort only when no candidate gives the order.
//!
//! A candidate is usable when every field of its key path is constrained by a condition or
//! named in the order (a record missing such a field is absent from the index, and could not
//! match anyway). Among usable candidates the planner prefers one that gives the order (so
//! paging is keyset and memory flat), then the one that serves the most conditions.

use std::fmt;

use crate::catalog::StoreInfo;
use crate::error::{Error, Result};
use crate::key::{encode_prefix, prefix_successor, Key};
use crate::keypath::KeyPath;
use crate::mechanism::TableId;
use crate::range::ByteRange;

use super::{Op, Query};

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The store in primary-key order.
    Store,
    /// One index, in index-key order.
    Index(String),
}

/// How a query runs; `Display` gives the line `explain` shows.
#[derive(Debug, Clone)]
pub struct Plan {
    pub source: Source,
    /// Conditions answered by the range itself.
    pub served: Vec<String>,
    /// Conditions checked against each record read.
    pub residual: Vec<String>,
    /// The fields sorted by in memory, when no candidate gives the order.
    pub sort: Option<Vec<String>>,
    /// A record without an order field is left out (the order is not `nulls_sorted`): said
    /// in the plan, since a misspelt field then lists nothing.
    pub(crate) drops_missing: bool,
    pub(crate) table: TableId,
    pub(crate) range: ByteRange,
    /// The range holds exactly the matching records: a count needs no record read.
    pub(crate) exact: bool,
    /// The store's multiEntry fields: a condition on one matches any element of an array.
    pub(crate) multi: Vec<String>,
    /// The multiEntry field the query orders by, if any: its rows are index entries, one per
    /// element (and `unique` keeps one per distinct element), as in IndexedDB.
    pub(crate) entries: Option<String>,
    /// The source is a multiEntry index: each record comes once per element in range.
    pub(crate) reads_entries: bool,
    /// The multiEntry field whose index entries the rows are, as IndexedDB would read them:
    /// the order's, the source index's, or one an equality names. Selecting it gives each
    /// row's element, not the record's array.
    pub(crate) entry_field: Option<String>,
}

impl Plan {
    /// Whether the range holds exactly the matching records (a count reads no record).
    pub fn is_exact(&self) -> bool {
        self.exact
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Store => write!(f, "scan store")?,
            Source::Index(name) => write!(f, "scan index {name:?}")?,
        }
        if self.served.is_empty() {
            write!(f, ", whole range")?;
        } else {
            write!(f, ", range: {}", self.served.join(" and "))?;
        }
        if !self.residual.is_empty() {
            write!(f, ", residual filter: {}", self.residual.join(" and "))?;
        }
        match &self.sort {
            Some(fields) if self.drops_missing => write!(
                f,
                ", sort in memory by {} (a record without an order field is left out: is each name right?)",
                fields.join(", ")
            ),
            Some(fields) => write!(f, ", sort in memory by {}", fields.join(", ")),
            None => write!(f, ", no sort"),
        }
    }
}

struct Candidate<'a> {
    source: Source,
    table: TableId,
    fields: Vec<&'a str>,
    compound: bool,
    /// A multiEntry index: one entry per element of its field's array.
    multi: bool,
}

/// What one candidate would do for the query.
struct Fit {
    served: Vec<usize>,
    range: ByteRange,
    gives_order: bool,
    score: usize,
}

pub(crate) fn plan(info: &StoreInfo, query: &Query) -> Result<Plan> {
    validate(query)?;
    // An index lacks the records missing its fields: usable when those could not be returned
    // anyway (a condition or, unless missing values sort as NULL, the order needs the field).
    let ordered = if query.nulls_sorted { &[][..] } else { &query.order[..] };
    let constrained: Vec<&str> =
        query.conditions.iter().map(|c| c.field.as_str()).chain(ordered.iter().map(String::as_str)).collect();

    let multi: Vec<String> = info.indexes.iter().filter(|i| i.multi_entry).map(|i| i.key_path.display_name()).collect();
    let entries = query.order.iter().find(|f| multi.contains(f)).cloned();
    let mut best: Option<(Candidate, Fit)> = None;
    for candidate in candidates(info) {
        let usable = match candidate.multi {
            // Its entries are the rows when the query orders by its field; otherwise it may only
            // serve an equality, which meets each record at most once (elements are distinct).
            true => {
                let field = candidate.fields[0];
                (entries.as_deref() == Some(field) && !query.nulls_sorted)
                    || query.conditions.iter().any(|c| c.field == field && c.op == Op::Eq)
            }
            false => candidate.source == Source::Store || candidate.fields.iter().all(|f| constrained.contains(f)),
        };
        if !usable {
            continue;
        }
        let fit = fit(&candidate, query, entries.is_some())?;
        if best.as_ref().is_none_or(|(_, b)| fit.score > b.score) {
            best = Some((candidate, fit));
        }
    }
    let (candidate, fit) = best.expect("the store is always a candidate");

    let residual: Vec<String> = query
        .conditions
        .iter()
        .enumerate()
        .filter(|(i, _)| !fit.served.contains(i))
        .map(|(_, c)| c.to_string())
        .chain(query.literals.iter().map(ToString::to_string))
        .collect();
    let order_implied = query.order.iter().all(|f| candidate.fields.contains(&f.as_str()));
    let entry_field =
        entries.clone().or_else(|| candidate.multi.then(|| candidate.fields[0].to_string())).or_else(|| {
            query.conditions.iter().find(|c| c.op == Op::Eq && multi.contains(&c.field)).map(|c| c.field.clone())
        });
    Ok(Plan {
        exact: residual.is_empty() && order_implied,
        served: fit.served.iter().map(|&i| query.conditions[i].to_string()).collect(),
        residual,
        sort: (!fit.gives_order).then(|| query.order.clone()),
        drops_missing: !query.order.is_empty() && !query.nulls_sorted,
        source: candidate.source,
        table: candidate.table,
        range: fit.range,
        multi,
        entries,
        reads_entries: candidate.multi,
        entry_field,
    })
}

fn validate(query: &Query) -> Result<()> {
    for c in &query.conditions {
        if c.op == Op::Starts && !matches!(c.value, Key::String(_) | Key::Binary(_)) {
            return Err(Error::InvalidArgument(format!(
                "starts on field {:?} needs a string prefix, not {}",
                c.field, c.value
            )));
        }
        c.value.encode().map_err(|e| e.in_store(&query.store, Some(&c.field)))?;
    }
    Ok(())
}

fn candidates(info: &StoreInfo) -> Vec<Candidate<'_>> {
    let store_fields = info.schema.key_path.as_ref().map(path_fields).unwrap_or_default();
    let mut out = vec![Candidate {
        source: Source::Store,
        table: info.data,
        compound: info.schema.key_path.as_ref().is_some_and(KeyPath::is_compound),
        fields: store_fields,
        multi: false,
    }];
    for index in &info.indexes {
        out.push(Candidate {
            source: Source::Index(index.name.clone()),
            table: index.table,
            fields: path_fields(&index.key_path),
            compound: index.key_path.is_compound(),
            multi: index.multi_entry,
        });
    }
    out
}

fn path_fields(path: &KeyPath) -> Vec<&str> {
    match path {
        KeyPath::Single(p) if p.is_empty() => Vec::new(),
        KeyPath::Single(p) => vec![p.as_str()],
        KeyPath::Compound(ps) => ps.iter().map(String::as_str).collect(),
    }
}

fn fit(candidate: &Candidate, query: &Query, entries: bool) -> Result<Fit> {
    let conditions = &query.conditions;
    let condition_on =
        |field: &str, ops: &[Op]| conditions.iter().position(|c| c.field == field && ops.contains(&c.op));

    // Equality on a leading run of the key path, then at most a lower and an upper bound (or a
    // prefix) on the next field.
    let mut served = Vec::new();
    let mut prefix: Vec<Key> = Vec::new();
    for field in &candidate.fields {
        match condition_on(field, &[Op::Eq]) {
            Some(i) => {
                served.push(i);
                prefix.push(conditions[i].value.clone());
            }
            None => break,
        }
    }
    let mut base = match (candidate.compound, prefix.as_slice()) {
        (true, _) => encode_prefix(&Key::Array(prefix.clone()))?,
        (false, [only]) => only.encode()?,
        (false, _) => Vec::new(),
    };
    let mut range =
        if base.is_empty() { ByteRange::all() } else { ByteRange { high: prefix_successor(&base), low: base.clone() } };

    // A multiEntry index serves ranges only when its entries are the rows: otherwise a record
    // with two elements in range would come twice.
    let ranges = !candidate.multi || entries;
    if let Some(next) = candidate.fields.get(prefix.len()).filter(|_| ranges) {
        let starts = condition_on(next, &[Op::Starts]);
        let lower = condition_on(next, &[Op::Gt, Op::Ge]);
        let mut upper = condition_on(next, &[Op::Lt, Op::Le]);
        if let (Some(l), Some(u)) = (lower, upper) {
            if conditions[l].value.type_rank() != conditions[u].value.type_rank() {
                upper = None; // bounds of two types match nothing; the residual filter says so
            }
        }
        if let Some(i) = starts {
            served.push(i);
            base.extend(encode_prefix(&conditions[i].value)?);
            range = ByteRange { high: prefix_successor(&base), low: base };
        } else if lower.is_some() || upper.is_some() {
            // Comparisons stay within the bound's type: the range is clamped to its type tag.
            let bound = &conditions[lower.or(upper).expect("one is set")].value;
            let tag = bound.encode()?[0];
            let with = |suffix: &[u8]| [base.as_slice(), suffix].concat();
            range.low = with(&[tag]);
            range.high = with(&[tag + 1]);
            if let Some(i) = lower {
                let edge = with(&conditions[i].value.encode()?);
                range.low = if conditions[i].op == Op::Ge { edge } else { prefix_successor(&edge) };
                served.push(i);
            }
            if let Some(i) = upper {
                let edge = with(&conditions[i].value.encode()?);
                range.high = if conditions[i].op == Op::Lt { edge } else { prefix_successor(&edge) };
                served.push(i);
            }
        }
    }

    let gives_order = gives_order(&candidate.fields, prefix.len(), &query.order);
    let score = usize::from(gives_order) * 1000 + served.len() * 10 + usize::from(candidate.source == Source::Store);
    Ok(Fit { served, range, gives_order, score })
}

/// Whether reading the candidate in key order reads the records in the query's order: order
/// fields fixed by equality drop out, and the rest must lead the remaining key path.
fn gives_order(fields: &[&str], fixed: usize, order: &[String]) -> bool {
    let free: Vec<&str> = order.iter().map(String::as_str).filter(|f| !fields[..fixed].contains(f)).collect();
    fields[fixed..].starts_with(&free)
}
