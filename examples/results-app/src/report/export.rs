//! `objstore-results export`: the matrix and each pair's newest run as one self-contained HTML
//! file (its style inline, no script, no request), for CI artefacts and mail. Everything from
//! the bucket is escaped: it is text in the file, never markup.

use std::fmt::Write;

use crate::error::AppResult;
use crate::model::Status;
use crate::views::filter::MatrixFilter;
use crate::views::shapes::{RunRow, RunView};
use crate::views::Viewer;

const STYLE: &str = include_str!("../../page/app.css");

/// `text` as HTML text or an attribute's value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn text(value: Option<&str>) -> String {
    escape(value.unwrap_or("?"))
}

/// `2026-11-27 12:05 UTC` (the civil calendar from days since 1970).
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", rest / 3600, rest % 3600 / 60)
}

/// Each pair's matrix row, with its newest run's view where it could be read.
type Rows = Vec<(RunRow, Option<RunView>)>;

/// Every pair's row of the matrix (page after page) and its newest run's view.
fn gather(viewer: &Viewer) -> AppResult<(Vec<String>, Rows)> {
    let mut filter = MatrixFilter::default();
    let (mut suites, mut rows): (Vec<String>, Rows) = (Vec::new(), Vec::new());
    loop {
        let page = viewer.matrix(&filter)?.view;
        for suite in page.suites {
            if !suites.contains(&suite) {
                suites.push(suite);
            }
        }
        rows.extend(page.rows.into_iter().map(|row| (row, None)));
        match page.next {
            Some(next) => filter.after = Some(next),
            None => break,
        }
    }
    // The newest runs' views, the pairs weighed once for all.
    for view in viewer.newest_run_views()?.view.runs {
        if let Some((_, run)) = rows.iter_mut().find(|(row, _)| row.key == view.row.key) {
            *run = Some(view).filter(|v| v.row.error.is_none());
        }
    }
    crate::model::sort_suites(&mut suites);
    Ok((suites, rows))
}

/// The HTML file of the matrix and the newest runs, `source` naming where they came from and
/// `now_ms` when.
pub fn render(viewer: &Viewer, source: &str, now_ms: u64) -> AppResult<String> {
    let (suites, rows) = gather(viewer)?;
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Test results · {}</title>\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n<header><h1>Test results</h1><p class=\"muted\">{} · exported {}</p></header>\n<main>",
        escape(source),
        escape(source),
        utc(now_ms),
    );
    // The whole table, not the page's scrolling frame: an export is printed and mailed.
    let _ = write!(html, "<h2>Newest run per platform and runtime</h2>\n<table id=\"matrix\">\n<thead><tr><th>platform / runtime</th><th>newest run</th>");
    for suite in &suites {
        let _ = write!(html, "<th>{}</th>", escape(suite));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for (i, (row, _)) in rows.iter().enumerate() {
        let pair = format!("{} / {}", escape(&row.platform), escape(&row.browser));
        let version = text(row.version.as_deref());
        let _ = write!(html, "<tr><th><a href=\"#run-{i}\">{pair}</a></th><td>{version}</td>");
        if let Some(error) = &row.error {
            let _ = writeln!(
                html,
                "<td class=\"error\" colspan=\"{}\">cannot be read: {}</td></tr>",
                suites.len().max(1),
                escape(error)
            );
            continue;
        }
        for suite in &suites {
            let Some(cell) = row.cells.as_ref().and_then(|cells| cells.get(suite)) else {
                html.push_str("<td class=\"none\">not run</td>");
                continue;
            };
            let verdict = if cell.failed > 0 {
                "fail"
            } else if cell.passed > 0 {
                "pass"
            } else {
                "skip"
            };
            let _ = write!(
                html,
                "<td class=\"cell {verdict}\"><span>{} passed</span><span>{} failed</span>",
                cell.passed, cell.failed
            );
            if cell.skipped > 0 {
                let _ = write!(html, "<span>{} skipped</span>", cell.skipped);
            }
            for (class, count) in &cell.classes {
                let _ = write!(html, "<span class=\"badge\">{} {}</span>", count, escape(class));
            }
            html.push_str("</td>");
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");
    for (i, (row, run)) in rows.iter().enumerate() {
        let _ = writeln!(
            html,
            "<section id=\"run-{i}\"><h2>{} / {} · version {}</h2>",
            escape(&row.platform),
            escape(&row.browser),
            text(row.version.as_deref())
        );
        let Some(RunView { row: run, detail: Some(detail) }) = run else {
            html.push_str("<p class=\"error\">This run cannot be read.</p></section>\n");
            continue;
        };
        if let Some((commit, branch)) =
            run.ci.as_ref().and_then(|ci| Some((ci.commit.as_deref()?, ci.branch.as_deref())))
        {
            let _ = writeln!(
                html,
                "<p class=\"source\">commit {}{}</p>",
                escape(commit),
                branch.map(|b| format!(" on {}", escape(b))).unwrap_or_default()
            );
        }
        if let Some(s) = &run.summary {
            let _ = writeln!(
                html,
                "<p>{} tests: {} passed, {} failed, {} skipped</p>",
                s.tests, s.passed, s.failed, s.skipped
            );
        }
        let notable: Vec<_> = detail.tests.iter().filter(|t| t.status == Status::Failed || t.flaky).collect();
        if notable.is_empty() {
            html.push_str("<p class=\"note\">No failed or flaky test.</p></section>\n");
            continue;
        }
        html.push_str(
            "<table class=\"tests\"><thead><tr><th>suite</th><th>test</th><th>status</th></tr></thead><tbody>\n",
        );
        for t in notable {
            let classes: String =
                t.classes.iter().map(|c| format!("<span class=\"badge\">{}</span>", c.class.name())).collect();
            let _ = write!(html, "<tr><td>{}</td><td>{}{classes}", escape(&t.suite), escape(&t.name));
            if let Some(message) = &t.message {
                let _ = write!(html, "<pre class=\"message\">{}</pre>", escape(message));
            }
            if let Some(trace) = &t.detail.trace {
                let _ = write!(
                    html,
                    "<details class=\"text\"><summary>trace</summary><pre>{}</pre></details>",
                    escape(trace)
                );
            }
            let _ = writeln!(html, "</td><td>{}</td></tr>", t.status.name());
        }
        html.push_str("</tbody></table></section>\n");
    }
    html.push_str("</main>\n</body>\n</html>\n");
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_escapes() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_795_000_000_000), "2026-11-18 11:06 UTC", "as Python's datetime has it");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(
            escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }
}
