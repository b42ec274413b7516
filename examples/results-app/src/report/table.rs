//! The matrix as a table for a terminal: what `tests/run-all` and the main command print.

use crate::views::shapes::MatrixView;

/// `matrix` is the home view's answer ([`crate::views::Viewer::matrix`]); `now_ms` dates the runs.
pub fn render(matrix: &MatrixView, now_ms: u64) -> String {
    let (suites, rows) = (&matrix.suites, &matrix.rows);
    let mut lines: Vec<Vec<String>> = vec![["platform / runtime", "version", "age"]
        .into_iter()
        .map(String::from)
        .chain(suites.iter().map(|s| s.to_string()))
        .collect()];
    for row in rows {
        let text = |text: &str| text.chars().filter(|c| !c.is_control()).collect::<String>();
        let mut line = vec![format!("{} / {}", text(&row.platform), text(&row.browser))];
        match &row.error {
            Some(error) => {
                line.push("-".into());
                line.push(age(row.time, now_ms));
                line.push(format!("cannot be read: {error}"));
            }
            None => {
                line.push(text(row.version.as_deref().unwrap_or("?")));
                line.push(age(row.time, now_ms));
                for suite in suites {
                    let cell = row.cells.as_ref().and_then(|cells| cells.get(suite));
                    line.push(match cell {
                        None => "-".into(),
                        Some(c) => {
                            let mark = match (c.failed, c.passed) {
                                (1.., _) => "FAIL",
                                (0, 0) => "skip",
                                _ => "ok",
                            };
                            format!("{mark} {}/{}/{}", c.passed, c.failed, c.skipped)
                        }
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
    if rows.is_empty() && matrix.pairs == 0 {
        out.push_str("(no runs in the bucket)\n");
    } else if rows.is_empty() {
        out.push_str(&format!("(no pair has a run on {})\n", matrix.branch.as_deref().unwrap_or("any branch")));
    }
    if matrix.next.is_some() {
        out.push_str(&format!("({} of {} pairs shown; the page shows every one)\n", rows.len(), matrix.matching));
    }
    let on = matrix.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default();
    out.push_str(&format!(
        "cells: passed/failed/skipped of the newest run{on}; FAIL marks a failure, skip a suite where nothing ran\n"
    ));
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
    use crate::views::shapes::{Cell, MatrixView, RunRow};

    /// A suite where nothing ran (every test skipped) is neither ok nor FAIL.
    #[test]
    fn cells_say_ok_fail_or_skip() {
        let cell = |passed, failed, skipped| Cell { passed, failed, skipped, ..Cell::default() };
        let row = RunRow {
            platform: "linux".into(),
            browser: "c".into(),
            version: Some("1".into()),
            time: Some(0),
            cells: Some(
                [("crud".into(), cell(3, 0, 1)), ("sql".into(), cell(2, 1, 0)), ("query".into(), cell(0, 0, 4))].into(),
            ),
            ..RunRow::default()
        };
        let matrix = MatrixView {
            suites: vec!["crud".into(), "sql".into(), "query".into()],
            rows: vec![row],
            ..MatrixView::default()
        };
        let table = super::render(&matrix, 0);
        let row = table.lines().nth(1).unwrap();
        assert!(row.contains("ok 3/0/1") && row.contains("FAIL 2/1/0") && row.contains("skip 0/0/4"), "{table}");
    }
}
