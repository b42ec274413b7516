//! A SQL subset over stores, parsed with `sqlparser` and run through the query planner:
//!
//! ```sql
//! SELECT * | field [AS name], ... | COUNT(*) | COUNT/MIN/MAX/SUM/AVG(field) [AS name], ...
//!   FROM store [WHERE cond AND cond ...] [ORDER BY field, ... [ASC|DESC]] [LIMIT n] [OFFSET n]
//! INSERT [OR REPLACE] INTO store (field, ...) VALUES (...), ...   -- or VALUES (?) with an object
//! UPDATE store SET field = value, ... [WHERE ...]
//! DELETE FROM store [WHERE ...]
//! ```
//!
//! A condition is `field op value` with `=`, `<`, `<=`, `>`, `>=`, or `field LIKE 'prefix%'`.
//! Fields may be dotted (`meta.v`, or quoted: `"meta.v"`). Values are literals or `?`
//! parameters, which are bound as JSON values and never spliced into the text. Anything else
//! is an error that names the construct.

use std::sync::Mutex;

use serde_json::{Map, Number, Value};
use sqlparser::ast::{self, Expr, SelectItem, SetExpr};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::database::{Database, Mode, Tx};
use crate::error::{Error, Result};
use crate::keypath::lookup;
use crate::query::{Op, Query, Step};

/// What a statement gives back.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlOutput {
    /// The rows of a SELECT.
    Rows(Vec<Value>),
    /// How many records an INSERT, UPDATE or DELETE wrote.
    Changed(u64),
}

enum Statement {
    Select {
        query: Query,
        columns: Columns,
        limit: Option<usize>,
    },
    Insert {
        store: String,
        records: Vec<Value>,
        replace: bool,
    },
    /// `SET path = value, ...`: each value replaces what is at its path.
    Update {
        query: Query,
        assignments: Vec<(String, Value)>,
    },
    Delete {
        query: Query,
    },
    /// `EXPLAIN SELECT ...`: the plan, as one row `{"plan": text}`.
    Explain {
        query: Query,
        columns: Columns,
    },
}

enum Columns {
    All,
    Fields(Vec<(String, String)>),
    Aggregates(Vec<(Aggregate, Option<String>, String)>),
}

#[derive(Clone, Copy, PartialEq)]
enum Aggregate {
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("SQL: {what} is not supported"))
}

/// Parses and runs one statement in a transaction of its own.
pub fn execute(db: &mut Database, sql: &str, params: &[Value]) -> Result<SqlOutput> {
    let statement = parse(sql, params)?;
    let (store, mode) = target_of(&statement);
    db.run(&[&store], mode, |tx| run(tx, statement))
}

/// The store a statement works on and the mode it needs, from the statement itself; every
/// error of the statement and its parameters is found here, before it is run.
pub fn target(sql: &str, params: &[Value]) -> Result<(String, Mode)> {
    parse(sql, params).map(|statement| target_of(&statement))
}

/// The result columns a SELECT names, in order, and whether they are aggregates (one row);
/// `None` for `SELECT *` and for statements that are not a SELECT. YDN-DB's `executeSql`
/// answers with values for one column and with a number for one aggregate.
pub fn columns(sql: &str, params: &[Value]) -> Result<Option<(Vec<String>, bool)>> {
    Ok(match parse(sql, params)? {
        Statement::Select { columns: Columns::Fields(fields), .. } => {
            Some((fields.into_iter().map(|(_, name)| name).collect(), false))
        }
        Statement::Select { columns: Columns::Aggregates(aggregates), .. } => {
            Some((aggregates.into_iter().map(|(_, _, name)| name).collect(), true))
        }
        _ => None,
    })
}

fn target_of(statement: &Statement) -> (String, Mode) {
    match statement {
        Statement::Select { query, .. } | Statement::Explain { query, .. } => {
            (query.store().to_string(), Mode::ReadOnly)
        }
        Statement::Insert { store, .. } => (store.clone(), Mode::ReadWrite),
        Statement::Update { query, .. } | Statement::Delete { query } => (query.store().to_string(), Mode::ReadWrite),
    }
}

/// Parses and runs one statement inside an open transaction.
pub fn execute_in(tx: &mut Tx<'_>, sql: &str, params: &[Value]) -> Result<SqlOutput> {
    run(tx, parse(sql, params)?)
}

fn run(tx: &mut Tx<'_>, statement: Statement) -> Result<SqlOutput> {
    match statement {
        Statement::Select { mut query, columns, limit } => select(tx, &mut query, &columns, limit),
        Statement::Insert { store, records, replace } => {
            let n = records.len() as u64;
            for record in records {
                if replace {
                    tx.put(&store, record, None)?;
                } else {
                    tx.add(&store, record, None)?;
                }
            }
            Ok(SqlOutput::Changed(n))
        }
        Statement::Update { query, assignments } => query
            .rewrite_in(tx, |record| {
                for (path, value) in &assignments {
                    crate::keypath::set(record, path, value.clone());
                }
            })
            .map(SqlOutput::Changed),
        Statement::Explain { query, columns } => {
            let plan = query.explain_in(tx)?;
            let text = match counts_only(&query, &columns) {
                true if plan.is_exact() => format!("count: {plan}, counted without reading records"),
                true => format!("count: {plan}"),
                false => plan.to_string(),
            };
            Ok(SqlOutput::Rows(vec![serde_json::json!({ "plan": text })]))
        }
        Statement::Delete { query } => query.delete_in(tx).map(SqlOutput::Changed),
    }
}

fn select(tx: &mut Tx<'_>, query: &mut Query, columns: &Columns, limit: Option<usize>) -> Result<SqlOutput> {
    let limit = limit.unwrap_or(usize::MAX);
    match columns {
        Columns::All => Ok(SqlOutput::Rows(query.list_in(tx, limit)?)),
        Columns::Fields(fields) => {
            let rows = query.list_in(tx, limit)?;
            let pick = |row: &Value| -> Value {
                let out: Map<String, Value> = fields
                    .iter()
                    .map(|(path, name)| (name.clone(), lookup(row, path).cloned().unwrap_or(Value::Null)))
                    .collect();
                Value::Object(out)
            };
            Ok(SqlOutput::Rows(rows.iter().map(pick).collect()))
        }
        Columns::Aggregates(aggregates) => {
            if limit == 0 {
                return Ok(SqlOutput::Rows(Vec::new()));
            }
            if counts_only(query, columns) {
                // The planner's count: from the index or the store alone when the range is exact.
                let n = query.count_in(tx)?;
                return Ok(SqlOutput::Rows(vec![serde_json::json!({ aggregates[0].2.clone(): n })]));
            }
            let mut totals: Vec<Totals> = aggregates.iter().map(|_| Totals::default()).collect();
            query.open_in(tx, |item| {
                for ((aggregate, field, _), total) in aggregates.iter().zip(&mut totals) {
                    total.add(
                        *aggregate,
                        field.as_deref().map(|f| lookup(&item.value, f)).unwrap_or(Some(&Value::Bool(true))),
                    );
                }
                Ok(Step::Continue)
            })?;
            let row: Map<String, Value> = aggregates
                .iter()
                .zip(totals)
                .map(|((aggregate, _, name), total)| (name.clone(), total.result(*aggregate)))
                .collect();
            Ok(SqlOutput::Rows(vec![Value::Object(row)]))
        }
    }
}

/// `SELECT COUNT(*)` and nothing else, with no OFFSET: the query's own count answers it.
fn counts_only(query: &Query, columns: &Columns) -> bool {
    matches!(columns, Columns::Aggregates(a) if matches!(a.as_slice(), [(Aggregate::Count, None, _)]))
        && query.skip == 0
}

/// Running totals of one aggregate. MIN and MAX compare in key order; SUM and AVG use numbers.
#[derive(Default)]
struct Totals {
    count: u64,
    sum: f64,
    numbers: u64,
    min: Option<(crate::Key, Value)>,
    max: Option<(crate::Key, Value)>,
}

impl Totals {
    fn add(&mut self, aggregate: Aggregate, value: Option<&Value>) {
        let Some(value) = value.filter(|v| !v.is_null()) else { return };
        self.count += 1;
        if let Some(n) = value.as_f64() {
            self.sum += n;
            self.numbers += 1;
        }
        if matches!(aggregate, Aggregate::Min | Aggregate::Max) {
            if let Ok(key) = crate::Key::from_json(value) {
                if self.min.as_ref().is_none_or(|(k, _)| key < *k) {
                    self.min = Some((key.clone(), value.clone()));
                }
                if self.max.as_ref().is_none_or(|(k, _)| key > *k) {
                    self.max = Some((key, value.clone()));
                }
            }
        }
    }

    fn result(self, aggregate: Aggregate) -> Value {
        let number = |f: f64| Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null);
        match aggregate {
            Aggregate::Count => Value::from(self.count),
            Aggregate::Min => self.min.map(|(_, v)| v).unwrap_or(Value::Null),
            Aggregate::Max => self.max.map(|(_, v)| v).unwrap_or(Value::Null),
            Aggregate::Sum if self.numbers == 0 => Value::Null,
            Aggregate::Sum if self.sum.fract() == 0.0 && self.sum.abs() < 9.0e15 => Value::from(self.sum as i64),
            Aggregate::Sum => number(self.sum),
            Aggregate::Avg if self.numbers == 0 => Value::Null,
            Aggregate::Avg => number(self.sum / self.numbers as f64),
        }
    }
}

// ----- parsing ------------------------------------------------------------------------------

/// Binds `?` (in order) and `?N` / `$N` (by number) to the parameters.
struct Params<'a> {
    values: &'a [Value],
    next: usize,
    used: usize,
}

impl Params<'_> {
    fn take(&mut self, placeholder: &str) -> Result<Value> {
        let index = match placeholder.trim_start_matches(['?', '$']) {
            "" => {
                self.next += 1;
                self.next - 1
            }
            n => n
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .map(|n| n - 1)
                .ok_or_else(|| unsupported(format!("parameter {placeholder}")))?,
        };
        self.used = self.used.max(index + 1);
        self.values.get(index).cloned().ok_or_else(|| {
            Error::InvalidArgument(format!("SQL: parameter {} is not given ({} given)", index + 1, self.values.len()))
        })
    }
}

/// The statements parsed last, newest first, by their text. A call through the bindings asks for
/// its statement three times (its target, its rows, its columns) and a program sends the same
/// few texts again and again: parsing each text once makes both cheap. Parameters are bound after,
/// so one text serves every set of values.
static PARSED: Mutex<Vec<(String, ast::Statement)>> = Mutex::new(Vec::new());
const PARSED_KEPT: usize = 64;
/// Longer texts (an INSERT of many rows, say) are parsed every time rather than held.
const PARSED_TEXT_MAX: usize = 4096;

fn parsed(sql: &str) -> Result<ast::Statement> {
    let mut kept = PARSED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(at) = kept.iter().position(|(text, _)| text == sql) {
        let entry = kept.remove(at);
        let statement = entry.1.clone();
        kept.insert(0, entry);
        return Ok(statement);
    }
    drop(kept);
    let mut statements = Parser::parse_sql(&GenericDialect {}, sql).map_err(|e| {
        Error::InvalidArgument(format!(
            "SQL: cannot parse {}: {}",
            crate::error::clip(sql),
            crate::error::clip_message(&e.to_string())
        ))
    })?;
    if statements.len() != 1 {
        return Err(Error::InvalidArgument(format!("SQL: expected one statement, found {}", statements.len())));
    }
    let statement = statements.remove(0);
    if sql.len() <= PARSED_TEXT_MAX {
        let mut kept = PARSED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.truncate(PARSED_KEPT - 1);
        kept.insert(0, (sql.to_string(), statement.clone()));
    }
    Ok(statement)
}

fn parse(sql: &str, params: &[Value]) -> Result<Statement> {
    let mut params = Params { values: params, next: 0, used: 0 };
    let statement = match parsed(sql)? {
        ast::Statement::Query(query) => parse_select(*query, &mut params)?,
        ast::Statement::Explain { statement, analyze: false, verbose: false, .. } => match *statement {
            ast::Statement::Query(query) => match parse_select(*query, &mut params)? {
                Statement::Select { query, columns, .. } => Statement::Explain { query, columns },
                _ => unreachable!("parse_select makes a Select"),
            },
            other => return Err(unsupported(format!("EXPLAIN of {}", first_word(&other.to_string())))),
        },
        ast::Statement::Insert(insert) => parse_insert(insert, &mut params)?,
        ast::Statement::Update(update) => parse_update(update, &mut params)?,
        ast::Statement::Delete(delete) => parse_delete(delete, &mut params)?,
        other => return Err(unsupported(format!("the statement {:?}", first_word(&other.to_string())))),
    };
    if params.used < params.values.len() {
        return Err(Error::InvalidArgument(format!(
            "SQL: {} parameters given but the statement uses {}",
            params.values.len(),
            params.used
        )));
    }
    Ok(statement)
}

fn first_word(text: &str) -> String {
    text.split_whitespace().next().unwrap_or_default().to_uppercase()
}

fn parse_select(query: ast::Query, params: &mut Params) -> Result<Statement> {
    if query.with.is_some() {
        return Err(unsupported("WITH"));
    }
    if query.fetch.is_some() || !query.locks.is_empty() {
        return Err(unsupported("FETCH or FOR UPDATE"));
    }
    let SetExpr::Select(select) = *query.body else {
        return Err(unsupported(format!("{} (only a plain SELECT)", first_word(&query.body.to_string()))));
    };
    if select.distinct.is_some() {
        return Err(unsupported("DISTINCT"));
    }
    if select.having.is_some() || !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty()) {
        return Err(unsupported("GROUP BY / HAVING"));
    }
    let store = single_table(&select.from)?;
    let mut q = Query::from(&store);
    if let Some(selection) = select.selection {
        q = add_conditions(q, selection, params)?;
    }
    let columns = parse_columns(select.projection)?;

    if let Some(order_by) = query.order_by {
        let ast::OrderByKind::Expressions(items) = order_by.kind else {
            return Err(unsupported("ORDER BY ALL"));
        };
        let mut descending = None;
        for item in items {
            let desc = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            if descending.replace(desc).is_some_and(|d| d != desc) {
                return Err(unsupported("ORDER BY with mixed ASC and DESC"));
            }
            q = q.order(&field_name(&item.expr)?);
        }
        if descending == Some(true) {
            q = q.reverse();
        }
        q.nulls_sorted = true;
    }
    let mut limit = None;
    match query.limit_clause {
        None => {}
        Some(ast::LimitClause::LimitOffset { limit: l, offset, limit_by }) => {
            if !limit_by.is_empty() {
                return Err(unsupported("LIMIT BY"));
            }
            if let Some(l) = l {
                limit = Some(count_value(&l, "LIMIT", params)?);
            }
            if let Some(offset) = offset {
                q = q.skip(count_value(&offset.value, "OFFSET", params)?);
            }
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit: l }) => {
            limit = Some(count_value(&l, "LIMIT", params)?);
            q = q.skip(count_value(&offset, "OFFSET", params)?);
        }
    }
    Ok(Statement::Select { query: q, columns, limit })
}

fn parse_columns(projection: Vec<SelectItem>) -> Result<Columns> {
    let count = projection.len();
    let mut fields = Vec::new();
    let mut aggregates = Vec::new();
    for item in projection {
        let (expr, alias) = match item {
            SelectItem::Wildcard(_) if count == 1 => return Ok(Columns::All),
            SelectItem::Wildcard(_) => return Err(unsupported("* next to other columns")),
            SelectItem::UnnamedExpr(expr) => (expr, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value)),
            other => return Err(unsupported(format!("the column {other}"))),
        };
        // A column is named as written, without the quotes of a quoted identifier.
        match &expr {
            Expr::Function(function) => {
                let (aggregate, field) = parse_aggregate(function)?;
                let name = alias.unwrap_or_else(|| format!("{}({})", function.name, field.as_deref().unwrap_or("*")));
                aggregates.push((aggregate, field, name));
            }
            _ => {
                let field = field_name(&expr)?;
                fields.push((field.clone(), alias.unwrap_or(field)));
            }
        }
    }
    match (fields.is_empty(), aggregates.is_empty()) {
        (true, false) => Ok(Columns::Aggregates(aggregates)),
        (false, true) => Ok(Columns::Fields(fields)),
        _ => Err(unsupported("mixing aggregates and plain columns (that needs GROUP BY)")),
    }
}

fn parse_aggregate(function: &ast::Function) -> Result<(Aggregate, Option<String>)> {
    let name = function.name.to_string().to_uppercase();
    let aggregate = match name.as_str() {
        "COUNT" => Aggregate::Count,
        "MIN" => Aggregate::Min,
        "MAX" => Aggregate::Max,
        "SUM" => Aggregate::Sum,
        "AVG" => Aggregate::Avg,
        _ => return Err(unsupported(format!("the function {name}"))),
    };
    if function.filter.is_some() || function.over.is_some() || !function.within_group.is_empty() {
        return Err(unsupported(format!("{name} with FILTER, OVER or WITHIN GROUP")));
    }
    let ast::FunctionArguments::List(list) = &function.args else {
        return Err(unsupported(format!("{name} without an argument list")));
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return Err(unsupported(format!("{name}(DISTINCT ...) or clauses inside {name}")));
    }
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)] if aggregate == Aggregate::Count => {
            Ok((aggregate, None))
        }
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr))] => Ok((aggregate, Some(field_name(expr)?))),
        _ => Err(unsupported(format!("{name} with these arguments (one field, or * for COUNT)"))),
    }
}

fn single_table(from: &[ast::TableWithJoins]) -> Result<String> {
    match from {
        [] => Err(unsupported("a statement without FROM")),
        [table] if table.joins.is_empty() => match &table.relation {
            ast::TableFactor::Table { name, alias: None, args: None, .. } => object_name(name),
            other => Err(unsupported(format!("the table expression {other}"))),
        },
        [table] => Err(unsupported(format!("JOIN ({})", table))),
        _ => Err(unsupported("more than one table in FROM")),
    }
}

fn object_name(name: &ast::ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|part| match part {
            ast::ObjectNamePart::Identifier(ident) => Ok(ident.value.clone()),
            other => Err(unsupported(format!("the name {other}"))),
        })
        .collect::<Result<_>>()?;
    Ok(parts.join("."))
}

/// A field reference: `a`, `a.b` or `"a.b"`, as a dotted path.
fn field_name(expr: &Expr) -> Result<String> {
    match expr {
        Expr::Identifier(ident) => Ok(ident.value.clone()),
        Expr::CompoundIdentifier(parts) => Ok(parts.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".")),
        Expr::Nested(inner) => field_name(inner),
        other => Err(unsupported(format!("the expression {other} where a field name is expected"))),
    }
}

/// A literal or a bound parameter, as JSON.
fn value(expr: &Expr, params: &mut Params) -> Result<Value> {
    match expr {
        Expr::Value(v) => match &v.value {
            ast::Value::Number(text, _) => parse_number(text),
            ast::Value::SingleQuotedString(s) => Ok(Value::String(s.clone())),
            ast::Value::Boolean(b) => Ok(Value::Bool(*b)),
            ast::Value::Null => Ok(Value::Null),
            ast::Value::Placeholder(p) => params.take(p),
            other => Err(unsupported(format!("the literal {other}"))),
        },
        Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match value(expr, params)? {
            Value::Number(n) => parse_number(&format!("-{n}")),
            other => Err(unsupported(format!("minus applied to {other}"))),
        },
        Expr::Nested(inner) => value(inner, params),
        other => Err(unsupported(format!("the expression {other} where a value is expected"))),
    }
}

fn parse_number(text: &str) -> Result<Value> {
    if let Ok(i) = text.parse::<i64>() {
        return Ok(Value::from(i));
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| Error::InvalidArgument(format!("SQL: {} is not a number", crate::error::clip_message(text))))
}

fn count_value(expr: &Expr, clause: &str, params: &mut Params) -> Result<usize> {
    match value(expr, params)? {
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap() as usize),
        other => Err(Error::InvalidArgument(format!(
            "SQL: {clause} needs a whole number, not {}",
            crate::error::clip_json(&other)
        ))),
    }
}

/// Adds the conditions of a WHERE clause: comparisons joined by AND.
fn add_conditions(query: Query, expr: Expr, params: &mut Params) -> Result<Query> {
    match expr {
        Expr::Nested(inner) => add_conditions(query, *inner, params),
        Expr::BinaryOp { left, op: ast::BinaryOperator::And, right } => {
            let query = add_conditions(query, *left, params)?;
            add_conditions(query, *right, params)
        }
        Expr::BinaryOp { left, op, right } => {
            let (op, flipped) = match op {
                ast::BinaryOperator::Eq => (Op::Eq, Op::Eq),
                ast::BinaryOperator::Lt => (Op::Lt, Op::Gt),
                ast::BinaryOperator::LtEq => (Op::Le, Op::Ge),
                ast::BinaryOperator::Gt => (Op::Gt, Op::Lt),
                ast::BinaryOperator::GtEq => (Op::Ge, Op::Le),
                other => return Err(unsupported(format!("the operator {other} (only AND of =, <, <=, >, >=, LIKE)"))),
            };
            let (field, op, operand) = match field_name(&left) {
                Ok(field) => (field, op, value(&right, params)?),
                Err(_) => (field_name(&right)?, flipped, value(&left, params)?),
            };
            if operand.is_null() {
                return Err(Error::InvalidArgument(format!(
                    "SQL: {field} {} NULL is never true in SQL (IS NULL is not supported)",
                    op.symbol()
                )));
            }
            query.filter_json(&field, op.symbol(), &operand)
        }
        Expr::Like { negated: false, any: false, expr, pattern, escape_char: None } => {
            let field = field_name(&expr)?;
            let pattern = match value(&pattern, params)? {
                Value::String(p) => p,
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "SQL: LIKE needs a string pattern, not {}",
                        crate::error::clip_json(&other)
                    )))
                }
            };
            match pattern.strip_suffix('%') {
                Some(prefix) if !prefix.contains(['%', '_']) => Ok(query.filter(&field, Op::Starts, prefix)),
                _ => Err(unsupported(format!("LIKE {pattern:?} (only 'prefix%')"))),
            }
        }
        Expr::Like { .. } => Err(unsupported("NOT LIKE, LIKE ANY or LIKE with ESCAPE")),
        other => Err(unsupported(format!("the condition {other} (only AND of comparisons)"))),
    }
}

fn parse_insert(insert: ast::Insert, params: &mut Params) -> Result<Statement> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(unsupported("INSERT INTO a table function"));
    };
    let store = object_name(name)?;
    let replace = match insert.or {
        None => false,
        Some(ast::SqliteOnConflict::Replace) => true,
        Some(other) => return Err(unsupported(format!("INSERT OR {other}"))),
    };
    if insert.on.is_some() || insert.returning.is_some() || !insert.assignments.is_empty() {
        return Err(unsupported("INSERT with ON CONFLICT, RETURNING or SET"));
    }
    let Some(source) = insert.source else {
        return Err(unsupported("INSERT without VALUES"));
    };
    let SetExpr::Values(values) = *source.body else {
        return Err(unsupported("INSERT ... SELECT"));
    };
    let columns: Vec<String> = insert.columns.iter().map(object_name).collect::<Result<_>>()?;
    let mut records = Vec::new();
    for row in values.rows.into_iter().map(|row| row.content) {
        let record = if columns.is_empty() {
            match row.as_slice() {
                [only] => match value(only, params)? {
                    object @ Value::Object(_) => object,
                    other => {
                        return Err(Error::InvalidArgument(format!(
                            "SQL: INSERT without columns takes one object per row, not {other}"
                        )))
                    }
                },
                _ => return Err(Error::InvalidArgument("SQL: INSERT without columns takes one object per row".into())),
            }
        } else {
            if row.len() != columns.len() {
                return Err(Error::InvalidArgument(format!(
                    "SQL: INSERT names {} columns but a row has {} values",
                    columns.len(),
                    row.len()
                )));
            }
            let mut record = Value::Object(Map::new());
            for (column, expr) in columns.iter().zip(&row) {
                crate::keypath::set(&mut record, column, value(expr, params)?);
            }
            record
        };
        records.push(record);
    }
    Ok(Statement::Insert { store, records, replace })
}

fn parse_update(update: ast::Update, params: &mut Params) -> Result<Statement> {
    if update.from.is_some() || update.returning.is_some() || !update.order_by.is_empty() || update.limit.is_some() {
        return Err(unsupported("UPDATE with FROM, RETURNING, ORDER BY or LIMIT"));
    }
    let store = single_table(std::slice::from_ref(&update.table))?;
    let mut assignments = Vec::new();
    for assignment in &update.assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(unsupported("assigning to a tuple of columns"));
        };
        assignments.push((object_name(column)?, value(&assignment.value, params)?));
    }
    let mut query = Query::from(&store);
    if let Some(selection) = update.selection {
        query = add_conditions(query, selection, params)?;
    }
    Ok(Statement::Update { query, assignments })
}

fn parse_delete(delete: ast::Delete, params: &mut Params) -> Result<Statement> {
    if !delete.tables.is_empty()
        || delete.using.is_some()
        || delete.returning.is_some()
        || delete.limit.is_some()
        || !delete.order_by.is_empty()
    {
        return Err(unsupported("DELETE with several tables, USING, RETURNING, ORDER BY or LIMIT"));
    }
    let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = &delete.from;
    let mut query = Query::from(&single_table(from)?);
    if let Some(selection) = delete.selection {
        query = add_conditions(query, selection, params)?;
    }
    Ok(Statement::Delete { query })
}
