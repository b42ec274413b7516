//! The matrix as a table for a terminal: what `tests/run-all` and the main command print.

use serde_json::Value;

/// `matrix` is the home view's answer ([`crate::views::Viewer::matrix`]); `now_ms` dates the runs.
pub fn render(matrix: &Value, now_ms: u64) -> String {
    let suites: Vec<&str> = matrix["suites"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let rows = matrix["rows"].as_array().cloned().unwrap_or_default();
    let mut lines: Vec<Vec<String>> = vec![["platform / runtime", "version", "age"]
        .into_iter()
        .map(String::from)
        .chain(suites.iter().map(|s| s.to_string()))
        .collect()];
    for row in &rows {
        let text =
            |field: &str| row[field].as_str().unwrap_or("?").chars().filter(|c| !c.is_control()).collect::<String>();
        let mut line = vec![format!("{} / {}", text("platform"), text("browser"))];
        match row.get("error") {
            Some(error) => {
                line.push("-".into());
                line.push(age(row["time"].as_u64(), now_ms));
                line.push(format!("cannot be read: {}", error.as_str().unwrap_or("?")));
            }
            None => {
                line.push(text("version"));
                line.push(age(row["time"].as_u64(), now_ms));
                for suite in &suites {
                    let cell = &row["cells"][suite];
                    let n = |f: &str| cell[f].as_u64().unwrap_or(0);
                    line.push(match cell.is_object() {
                        false => "-".into(),
                        true if n("failed") > 0 => format!("FAIL {}/{}/{}", n("passed"), n("failed"), n("skipped")),
                        true if n("passed") == 0 => format!("skip {}/{}/{}", n("passed"), n("failed"), n("skipped")),
                        true => format!("ok {}/{}/{}", n("passed"), n("failed"), n("skipped")),
                    });
                }
            }
        }
        lines.push(line);
    }
    // An unreadable run's reason runs on past the suites' columns rather than widening one.
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            let cells = lines.iter().filter(|l| l.len() == lines[0].len() || c < 3);
            cells.filter_map(|l| l.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .zip(widths.iter().chain(std::iter::repeat(&0)))
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no runs in the bucket)\n");
    }
    if let (Some(_), Some(matching)) = (matrix["next"].as_str(), matrix["matching"].as_u64()) {
        out.push_str(&format!("({} of {matching} pairs shown; the page shows every one)\n", rows.len()));
    }
    out.push_str(
        "cells: passed/failed/skipped of the newest run; FAIL marks a failure, skip a suite where nothing ran\n",
    );
    out
}

/// "3 min", "2 h", "5 d" ago.
pub fn age(time: Option<u64>, now_ms: u64) -> String {
    let Some(time) = time else { return "?".into() };
    let s = now_ms.saturating_sub(time) / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86399 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A suite where nothing ran (every test skipped) is neither ok nor FAIL.
    #[test]
    fn cells_say_ok_fail_or_skip() {
        let matrix = json!({"suites": ["crud", "sql", "query"], "rows": [{"platform": "linux", "browser": "c",
            "version": "1", "time": 0, "cells": {
                "crud": {"passed": 3, "failed": 0, "skipped": 1},
                "sql": {"passed": 2, "failed": 1, "skipped": 0},
                "query": {"passed": 0, "failed": 0, "skipped": 4}}}]});
        let table = super::render(&matrix, 0);
        let row = table.lines().nth(1).unwrap();
        assert!(row.contains("ok 3/0/1") && row.contains("FAIL 2/1/0") && row.contains("skip 0/0/4"), "{table}");
    }
}
