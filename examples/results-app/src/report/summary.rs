//! `objstore-results summary`: a CI run's or a commit's results where CI already looks, as
//! Markdown (a job summary, a pull request's comment) or plain text (a terminal): counts per
//! pair, a run's failures with their first lines and classes (new, divergent, broken, flaky),
//! its flaky passes, a commit's new failures, fixed, flaky and divergent tests against a base
//! commit, a link to the page, and what the summary cost in bucket requests.
//! Built from the views' own answers (`Viewer::ci_run`, `Viewer::commit`), by `summary` on a
//! bucket and by the collector's `/api/summary` for a job that reads through it.

use serde::Serialize;

use crate::analysis::classes::Verdict;
use crate::analysis::fingerprint::PairTest;
use crate::model::quarantine::Quarantine;
use crate::model::Status;
use crate::views::shapes::{CommitView, Cost, Costed, RunRow, RunsView};
use crate::views::{View, Viewer};

/// What a summary is of: a CI run, or a commit (against a base commit).
pub enum Subject {
    Run(String),
    Commit { commit: String, base: Option<String> },
}

/// A summary as text, with what it cost (the collector's `/api/summary` answer).
#[derive(Serialize)]
pub struct Summary {
    pub text: String,
}

/// The summary of `subject`, its failures weighed against today's quarantine.
pub fn summarize(viewer: &Viewer, subject: &Subject, now_ms: u64, page: Option<&str>, format: Format) -> View<Summary> {
    let (quarantine, requests) = viewer.quarantine_entries()?;
    // The quarantine's GET is counted before the text says what the summary cost.
    let (text, cost) = match subject {
        Subject::Run(run) => {
            let mut view = viewer.ci_run(run)?;
            view.add_requests(requests);
            (of_run(&view, &quarantine, now_ms, page, format), view.cost)
        }
        Subject::Commit { commit, base } => {
            let mut view = viewer.commit(commit, base.as_deref())?;
            view.add_requests(requests);
            (of_commit(&view, &quarantine, now_ms, page, format), view.cost)
        }
    };
    Ok(Costed { view: Summary { text }, cost })
}

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
    /// How many of the failures listed the quarantine holds.
    quarantined: usize,
    cost: String,
}

impl Parts {
    /// The summary in one line, before anything else: what a reviewer reads first.
    fn verdict(&self) -> Option<String> {
        if self.pairs.is_empty() {
            return None;
        }
        let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let sum = |i: usize| self.pairs.iter().map(|(_, _, c)| c[i]).fold(0u64, u64::saturating_add);
        let pairs = self.pairs.len() as u64;
        let failing = self.pairs.iter().filter(|(_, _, c)| c[1] > 0).count() as u64;
        Some(match sum(1) {
            0 => format!(
                "Passed: {} on {}, none failed.",
                plural(sum(0), "test", "tests"),
                plural(pairs, "pair", "pairs")
            ),
            failed => {
                let held = match self.quarantined as u64 {
                    0 => String::new(),
                    q if q == failed => ", all of them quarantined".into(),
                    q => format!(", {q} of them quarantined"),
                };
                format!(
                    "Failed: {} on {failing} of {}{held}.",
                    plural(failed, "test", "tests"),
                    plural(pairs, "pair", "pairs")
                )
            }
        })
    }
}

/// The summary of a CI run (the answer of `Viewer::ci_run`); a failure `quarantine` holds
/// for its pair at `now_ms` is marked so.
pub fn of_run(
    view: &Costed<RunsView>,
    quarantine: &Quarantine,
    now_ms: u64,
    page: Option<&str>,
    format: Format,
) -> String {
    let runs = &view.view.runs;
    // Every failure, its classes beside it (new, divergent, broken, flaky); then the tests
    // that passed but are flaky.
    let (mut failed, mut flaky, mut quarantined) = (Vec::new(), Vec::new(), 0);
    for run in runs {
        let (platform, browser) = (&run.row.platform, &run.row.browser);
        let pair = format!("{platform} / {browser}");
        for test in run.detail.iter().flat_map(|d| &d.tests) {
            let is_flaky = test.classes.iter().any(|c| c.class == Verdict::Flaky);
            let mut classes: Vec<&str> = test.classes.iter().map(|c| c.class.name()).collect();
            let (suite, name) = (&test.suite, &test.name);
            let is_failed = test.status == Status::Failed;
            if is_failed && quarantine.covering(suite, name, platform, browser, now_ms).is_some() {
                classes.push("quarantined");
                quarantined += 1;
            }
            let line = test.message.as_deref().map(first_line);
            let mut entry = Listed { pair: pair.clone(), suite: suite.clone(), name: name.clone(), line };
            if is_failed {
                if !classes.is_empty() {
                    entry.name = format!("{} [{}]", entry.name, classes.join(", "));
                }
                failed.push(entry);
            } else if is_flaky {
                flaky.push(entry);
            }
        }
    }
    let parts = Parts {
        title: format!("Test results of run {}", view.view.run.as_deref().unwrap_or_default()),
        pairs: runs.iter().map(|run| pair_counts(&run.row)).collect(),
        sections: vec![("Failures", failed), ("Flaky", flaky)],
        quarantined,
        cost: cost(&view.cost),
    };
    render(&parts, page, format)
}

/// The summary of a commit, or of a commit against a base (the answer of `Viewer::commit`); a
/// new failure `quarantine` holds for its pair is marked so.
pub fn of_commit(
    view: &Costed<CommitView>,
    quarantine: &Quarantine,
    now_ms: u64,
    page: Option<&str>,
    format: Format,
) -> String {
    let commit = &view.view;
    let is_held = |e: &PairTest| {
        let (platform, browser) = e.pair.split_once('/').unwrap_or((&e.pair, ""));
        quarantine.covering(&e.suite, &e.name, platform, browser, now_ms).is_some()
    };
    // `new`: the entries are new failures, which a quarantine may hold.
    let entries = |tests: &[PairTest], new: bool| -> Vec<Listed> {
        tests
            .iter()
            .map(|e| {
                let held = new && is_held(e);
                Listed {
                    pair: e.pair.replace('/', " / "),
                    name: if held { format!("{} [quarantined]", e.name) } else { e.name.clone() },
                    suite: e.suite.clone(),
                    line: e.message.as_deref().map(first_line),
                }
            })
            .collect()
    };
    let divergent = commit
        .divergent
        .iter()
        .map(|d| Listed {
            pair: format!("failed on {}", d.failed.join(", ")),
            suite: d.suite.clone(),
            name: d.name.clone(),
            line: Some(format!("passed on {}", d.passed.join(", "))),
        })
        .collect();
    let short = |c: &str| c.chars().take(12).collect::<String>();
    let title = match &commit.base {
        Some(base) => format!("Test results of commit {} against {}", short(&commit.commit), short(base)),
        None => format!("Test results of commit {}", short(&commit.commit)),
    };
    let parts = Parts {
        title,
        pairs: commit.runs.iter().map(pair_counts).collect(),
        quarantined: commit.failures.iter().filter(|e| is_held(e)).count(),
        // Without a base, every failure at the commit; with one, what the change broke.
        sections: vec![
            match commit.base {
                None => ("Failures", entries(&commit.failures, true)),
                Some(_) => ("New failures", entries(&commit.newly_failing, true)),
            },
            ("Fixed", entries(&commit.fixed, false)),
            ("Flaky", entries(&commit.flaky, false)),
            ("Divergent", divergent),
        ],
        cost: cost(&view.cost),
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
    if let Some(verdict) = parts.verdict() {
        let (word, rest) = verdict.split_once(':').unwrap_or((&verdict, ""));
        out.push_str(&format!("**{word}**:{rest}\n\n"));
    }
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
    if let Some(verdict) = parts.verdict() {
        out.push_str(&format!("{verdict}\n"));
    }
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

fn pair_counts(row: &RunRow) -> (String, String, [u64; 3]) {
    let counts = row.summary.as_ref().map_or([0; 3], |s| [s.passed, s.failed, s.skipped]);
    (format!("{} / {}", row.platform, row.browser), row.key.clone(), counts)
}

/// What a view cost, in words.
fn cost(cost: &Cost) -> String {
    let requests = cost.requests;
    let kinds: Vec<String> = cost.by_kind.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
    let shared = if cost.shared { " (some may be another view's, built at the same time)" } else { "" };
    format!("This summary cost {requests} bucket request{}{kinds}{shared}.", if requests == 1 { "" } else { "s" })
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

/// Text as Markdown shows it, not as markup: inline punctuation escaped; `<`, `>` and `&` as
/// entities (no HTML); a zero-width space after `@` and `#` (no mention of a person or team, no
/// issue link: GitHub looks for them after entities are decoded, so an entity would not do, and
/// bots write them so), and after `://` and `www.` (no link made of a test's text).
fn md(text: &str) -> String {
    let text = text.replace("://", ":\u{200B}//").replace("www.", "www\u{200B}.");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' | '#' => {
                out.push(c);
                out.push('\u{200B}');
            }
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
    use crate::analysis::classes::{Class, Rules};
    use crate::views::shapes::{Counts, Divergent, RunDetail, RunTest, RunView};

    fn cost(requests: u64, by_kind: &[(&str, u64)]) -> Cost {
        let by_kind = by_kind.iter().map(|(kind, n)| (kind.to_string(), *n)).collect();
        Cost { requests, by_kind, ..Cost::default() }
    }

    fn row(platform: &str, browser: &str, key: &str, [passed, failed, skipped]: [u64; 3]) -> RunRow {
        let summary = Some(Counts { tests: passed + failed + skipped, passed, failed, skipped });
        RunRow { key: key.into(), platform: platform.into(), browser: browser.into(), summary, ..RunRow::default() }
    }

    fn run(row: RunRow, tests: Vec<RunTest>) -> RunView {
        RunView { row, detail: Some(RunDetail { tests, rules: Rules, previous: None, base: None }) }
    }

    fn run_view() -> Costed<RunsView> {
        let failed = RunTest {
            name: "put | <b>x</b>".into(),
            suite: "crud".into(),
            status: Status::Failed,
            duration: 1.0,
            file: 0,
            message: Some("\n  expected 2\n  got 3".into()),
            detail: Default::default(),
            flaky: false,
            classes: vec![Class { class: Verdict::NewFailure, evidence: vec![] }],
        };
        let runs = vec![
            run(row("linux", "gcc", "linux/gcc/9-github-7-1", [5, 1, 0]), vec![failed]),
            run(row("mac", "clang", "mac/clang/9-github-7-1", [6, 0, 1]), vec![]),
        ];
        Costed { view: RunsView { run: Some("github-7-1".into()), runs }, cost: cost(3, &[("LIST", 1), ("GET", 2)]) }
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
        assert!(out.ends_with("<sub>This summary cost 3 bucket requests (2 GET, 1 LIST).</sub>\n"), "{out}");
    }

    /// Nothing a test's text holds becomes a mention, an issue link, a link or math.
    #[test]
    fn markdown_text_stays_text() {
        assert_eq!(md("@team/db #12 $x$"), "@\u{200B}team/db #\u{200B}12 &#36;x&#36;");
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
        let new_failure = PairTest {
            pair: "linux/gcc".into(),
            run: "linux/gcc/1-a".into(),
            suite: "sql".into(),
            name: "select".into(),
            message: Some("no such column".into()),
        };
        let divergent = Divergent {
            suite: "sql".into(),
            name: "select".into(),
            passed: vec!["mac/clang".into()],
            failed: vec!["linux/gcc".into()],
        };
        let commit = CommitView {
            commit: "0123456789abcdef".into(),
            base: Some("fedcba9876543210".into()),
            runs: vec![row("linux", "gcc", "linux/gcc/1-a", [1, 1, 0])],
            newly_failing: vec![new_failure],
            divergent: vec![divergent],
            ..CommitView::default()
        };
        let view = Costed { view: commit, cost: cost(0, &[]) };
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
