//! `objstore-results summary`: a CI run's or a commit's results where CI already looks, as
//! Markdown (a job summary, a pull request's comment) or plain text (a terminal): counts per
//! pair, a run's failures with their first lines and classes (new, divergent, broken, flaky),
//! its flaky passes, a commit's new failures, fixed, flaky and divergent tests against a base
//! commit, a link to the page, and what the summary cost in bucket requests.
//! Built from the views' own answers (`Viewer::ci_run`, `Viewer::commit`).

use serde_json::Value;

use crate::model::quarantine::Quarantine;

/// How the summary is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Markdown,
    Text,
}

/// The most tests a section lists (the rest are counted).
const LISTED: usize = 25;
/// The longest first line of a failure a summary quotes.
const LINE: usize = 160;

/// One test in a section: its pair, suite and name, and the first line of its failure.
struct Listed {
    pair: String,
    suite: String,
    name: String,
    line: Option<String>,
}

/// A summary's parts, whichever view they come from.
struct Parts {
    title: String,
    /// Per pair: its name, its run's key and passed, failed and skipped counts.
    pairs: Vec<(String, String, [u64; 3])>,
    sections: Vec<(&'static str, Vec<Listed>)>,
    cost: String,
}

/// The summary of a CI run (the answer of `Viewer::ci_run`); a failure `quarantine` holds
/// for its pair at `now_ms` is marked so.
pub fn of_run(view: &Value, quarantine: &Quarantine, now_ms: u64, page: Option<&str>, format: Format) -> String {
    let runs = view["runs"].as_array().cloned().unwrap_or_default();
    // Every failure, its classes beside it (new, divergent, broken, flaky); then the tests
    // that passed but are flaky.
    let (mut failed, mut flaky) = (Vec::new(), Vec::new());
    for run in &runs {
        let (platform, browser) = (text(&run["platform"]), text(&run["browser"]));
        let pair = format!("{platform} / {browser}");
        for test in run["tests"].as_array().into_iter().flatten() {
            let mut classes: Vec<&str> =
                test["classes"].as_array().into_iter().flatten().filter_map(|c| c["class"].as_str()).collect();
            let (suite, name) = (text(&test["suite"]), text(&test["name"]));
            if test["status"] == "failed" && quarantine.covering(&suite, &name, &platform, &browser, now_ms).is_some() {
                classes.push("quarantined");
            }
            let mut entry = listed(&pair, test);
            if test["status"] == "failed" {
                if !classes.is_empty() {
                    entry.name = format!("{} [{}]", entry.name, classes.join(", "));
                }
                failed.push(entry);
            } else if classes.contains(&"flaky") {
                flaky.push(entry);
            }
        }
    }
    let sections = vec![("Failures", failed), ("Flaky", flaky)];
    let parts = Parts {
        title: format!("Test results of run {}", text(&view["run"])),
        pairs: runs.iter().map(pair_counts).collect(),
        sections,
        cost: cost(&view["cost"]),
    };
    render(&parts, page, format)
}

/// The summary of a commit, or of a commit against a base (the answer of `Viewer::commit`); a
/// new failure `quarantine` holds for its pair is marked so.
pub fn of_commit(view: &Value, quarantine: &Quarantine, now_ms: u64, page: Option<&str>, format: Format) -> String {
    let entries = |field: &str| -> Vec<Listed> {
        view[field]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let (pair, suite, name) = (text(&e["pair"]), text(&e["suite"]), text(&e["name"]));
                let (platform, browser) = pair.split_once('/').unwrap_or((&pair, ""));
                let held =
                    field == "newlyFailing" && quarantine.covering(&suite, &name, platform, browser, now_ms).is_some();
                Listed {
                    pair: pair.replace('/', " / "),
                    name: if held { format!("{name} [quarantined]") } else { name.clone() },
                    suite,
                    line: e["message"].as_str().map(first_line),
                }
            })
            .collect()
    };
    let divergent = view["divergent"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| Listed {
            pair: format!("failed on {}", names(&d["failed"])),
            suite: text(&d["suite"]),
            name: text(&d["name"]),
            line: Some(format!("passed on {}", names(&d["passed"]))),
        })
        .collect();
    let short = |c: &Value| text(c).chars().take(12).collect::<String>();
    let title = match view["base"].as_str() {
        Some(_) => format!("Test results of commit {} against {}", short(&view["commit"]), short(&view["base"])),
        None => format!("Test results of commit {}", short(&view["commit"])),
    };
    let parts = Parts {
        title,
        pairs: view["runs"].as_array().into_iter().flatten().map(pair_counts).collect(),
        sections: vec![
            ("New failures", entries("newlyFailing")),
            ("Fixed", entries("fixed")),
            ("Flaky", entries("flaky")),
            ("Divergent", divergent),
        ],
        cost: cost(&view["cost"]),
    };
    render(&parts, page, format)
}

fn render(parts: &Parts, page: Option<&str>, format: Format) -> String {
    match format {
        Format::Markdown => markdown(parts, page),
        Format::Text => plain(parts, page),
    }
}

fn markdown(parts: &Parts, page: Option<&str>) -> String {
    let mut out = format!("### {}\n\n", md(&parts.title));
    if parts.pairs.is_empty() {
        out.push_str("No run of it is in the bucket.\n\n");
    } else {
        out.push_str("| platform / runtime | passed | failed | skipped |\n|---|--:|--:|--:|\n");
        for (pair, key, [p, f, s]) in &parts.pairs {
            let name = match page {
                Some(page) => format!("[{}]({})", md(pair), link(page, key)),
                None => md(pair),
            };
            out.push_str(&format!("| {name} | {p} | {f} | {s} |\n"));
        }
        out.push('\n');
    }
    for (title, tests) in parts.sections.iter().filter(|(_, tests)| !tests.is_empty()) {
        out.push_str(&format!("**{title}** ({})\n\n", tests.len()));
        for t in tests.iter().take(LISTED) {
            out.push_str(&format!("- {} · {} › {}", md(&t.pair), md(&t.suite), md(&t.name)));
            if let Some(line) = &t.line {
                out.push_str(&format!(": {}", md(line)));
            }
            out.push('\n');
        }
        if tests.len() > LISTED {
            out.push_str(&format!("- and {} more\n", tests.len() - LISTED));
        }
        out.push('\n');
    }
    if let Some(page) = page {
        out.push_str(&format!("[The results page]({})\n\n", page.replace(' ', "%20")));
    }
    // The cost line is the app's own words: no text from the bucket in it.
    out.push_str(&format!("<sub>{}</sub>\n", parts.cost));
    out
}

fn plain(parts: &Parts, page: Option<&str>) -> String {
    let mut out = format!("{}\n", parts.title);
    if parts.pairs.is_empty() {
        out.push_str("  No run of it is in the bucket.\n");
    }
    let width = parts.pairs.iter().map(|(pair, ..)| pair.chars().count()).max().unwrap_or(0);
    for (pair, _, [p, f, s]) in &parts.pairs {
        out.push_str(&format!("  {pair:width$}  {p} passed, {f} failed, {s} skipped\n"));
    }
    for (title, tests) in parts.sections.iter().filter(|(_, tests)| !tests.is_empty()) {
        out.push_str(&format!("{title} ({}):\n", tests.len()));
        for t in tests.iter().take(LISTED) {
            out.push_str(&format!("  {}  {} › {}", t.pair, t.suite, t.name));
            if let Some(line) = &t.line {
                out.push_str(&format!(": {line}"));
            }
            out.push('\n');
        }
        if tests.len() > LISTED {
            out.push_str(&format!("  and {} more\n", tests.len() - LISTED));
        }
    }
    if let Some(page) = page {
        out.push_str(&format!("The results page: {page}\n"));
    }
    out.push_str(&format!("{}\n", parts.cost));
    out
}

fn pair_counts(run: &Value) -> (String, String, [u64; 3]) {
    let count = |field: &str| run["summary"][field].as_u64().unwrap_or(0);
    (
        format!("{} / {}", text(&run["platform"]), text(&run["browser"])),
        text(&run["key"]),
        [count("passed"), count("failed"), count("skipped")],
    )
}

fn listed(pair: &str, test: &Value) -> Listed {
    Listed {
        pair: pair.to_string(),
        suite: text(&test["suite"]),
        name: text(&test["name"]),
        line: test["message"].as_str().map(first_line),
    }
}

/// What a view cost, in words.
fn cost(cost: &Value) -> String {
    let requests = cost["requests"].as_u64().unwrap_or(0);
    let kinds: Vec<String> = cost["byKind"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(kind, n)| format!("{} {kind}", n.as_u64().unwrap_or(0)))
        .collect();
    let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
    format!("This summary cost {requests} bucket request{}{kinds}.", if requests == 1 { "" } else { "s" })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

fn names(list: &Value) -> String {
    list.as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
}

/// A failure's first line that says something, clipped.
fn first_line(message: &str) -> String {
    let line = message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    match line.char_indices().nth(LINE) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

/// The page's link to a run.
fn link(page: &str, key: &str) -> String {
    let escaped: String = key
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{}?view=run&key={escaped}", page.replace(' ', "%20"))
}

/// Text as Markdown shows it, not as markup: inline punctuation escaped; `<`, `>`, `&`, `@`
/// and `#` as entities (no HTML, no mention of a person or team, no issue link); and a zero-width
/// space after `://` and `www.` (no link made of a test's text).
fn md(text: &str) -> String {
    let text = text.replace("://", ":\u{200B}//").replace("www.", "www\u{200B}.");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("&#64;"),
            '#' => out.push_str("&#35;"),
            '$' => out.push_str("&#36;"),
            '\n' | '\r' => out.push(' '),
            // Never at a line's start (a row or a list item comes first): only what marks up
            // text inside a line.
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_view() -> Value {
        json!({"run": "github-7-1", "cost": {"requests": 3, "byKind": {"LIST": 1, "GET": 2}}, "runs": [
            {"platform": "linux", "browser": "gcc", "key": "linux/gcc/9-github-7-1",
             "summary": {"passed": 5, "failed": 1, "skipped": 0},
             "tests": [{"suite": "crud", "name": "put | <b>x</b>", "status": "failed",
                        "message": "\n  expected 2\n  got 3", "classes": [{"class": "new failure"}]}]},
            {"platform": "mac", "browser": "clang", "key": "mac/clang/9-github-7-1",
             "summary": {"passed": 6, "failed": 0, "skipped": 1}, "tests": []}]})
    }

    /// Markdown for a job summary: a row per pair, new failures with their first line, the
    /// page linked, the cost; nothing in a name becomes markup.
    #[test]
    fn a_run_in_markdown() {
        let out = of_run(&run_view(), &Quarantine::default(), 0, Some("https://results.example/"), Format::Markdown);
        assert!(out.starts_with("### Test results of run github-7-1\n"), "{out}");
        assert!(
            out.contains(
                "| [linux / gcc](https://results.example/?view=run&key=linux%2Fgcc%2F9-github-7-1) | 5 | 1 | 0 |"
            ),
            "{out}"
        );
        assert!(out.contains("**Failures** (1)\n\n- linux / gcc · crud › put \\| &lt;b&gt;x&lt;/b&gt; \\[new failure\\]: expected 2\n"), "{out}");
        assert!(!out.contains("Flaky"), "empty sections are left out: {out}");
        assert!(out.ends_with("<sub>This summary cost 3 bucket requests (1 LIST, 2 GET).</sub>\n"), "{out}");
    }

    /// Nothing a test's text holds becomes a mention, an issue link, a link or math.
    #[test]
    fn markdown_text_stays_text() {
        assert_eq!(md("@team/db #12 $x$"), "&#64;team/db &#35;12 &#36;x&#36;");
        assert_eq!(
            md("see https://evil.example and www.evil.example"),
            "see https:\u{200B}//evil.example and www\u{200B}.evil.example"
        );
    }

    /// Plain text for a terminal; a quarantined failure marked so.
    #[test]
    fn a_run_in_text() {
        let mut quarantine = Quarantine::default();
        quarantine.add(crate::model::quarantine::Entry {
            suite: "crud".into(),
            name: "put | <b>x</b>".into(),
            pairs: "linux/*".into(),
            reason: "known".into(),
            until: None,
            added: 0,
        });
        let out = of_run(&run_view(), &quarantine, 0, None, Format::Text);
        assert!(
            out.contains(
                "  linux / gcc  5 passed, 1 failed, 0 skipped\n  mac / clang  6 passed, 0 failed, 1 skipped\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "Failures (1):\n  linux / gcc  crud › put | <b>x</b> [new failure, quarantined]: expected 2\n"
            ),
            "{out}"
        );
    }

    /// A commit against a base: new failures, fixed and divergent tests, with the pairs.
    #[test]
    fn a_commit_against_a_base() {
        let view = json!({"commit": "0123456789abcdef", "base": "fedcba9876543210", "cost": {"requests": 0, "byKind": {}},
            "runs": [{"platform": "linux", "browser": "gcc", "key": "linux/gcc/1-a", "summary": {"passed": 1, "failed": 1, "skipped": 0}}],
            "newlyFailing": [{"pair": "linux/gcc", "run": "linux/gcc/1-a", "suite": "sql", "name": "select", "message": "no such column"}],
            "fixed": [], "flaky": [],
            "divergent": [{"suite": "sql", "name": "select", "passed": ["mac/clang"], "failed": ["linux/gcc"]}]});
        let mut quarantine = Quarantine::default();
        quarantine.add(crate::model::quarantine::Entry {
            suite: "sql".into(),
            name: "select".into(),
            pairs: "linux/*".into(),
            reason: "known".into(),
            until: None,
            added: 0,
        });
        let out = of_commit(&view, &quarantine, 0, None, Format::Text);
        assert!(out.starts_with("Test results of commit 0123456789ab against fedcba987654\n"), "{out}");
        assert!(
            out.contains("New failures (1):\n  linux / gcc  sql › select [quarantined]: no such column\n"),
            "{out}"
        );
        assert!(out.contains("Divergent (1):\n  failed on linux/gcc  sql › select: passed on mac/clang\n"), "{out}");
        assert!(out.ends_with("This summary cost 0 bucket requests.\n"), "{out}");
    }
}
