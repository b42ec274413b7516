//! `objstore-results summary`: a CI run's or a commit's results where CI already looks, as
//! Markdown (a job summary, a pull request's comment) or plain text (a terminal): counts per
//! pair, a run's failures with their first lines and classes (new, divergent, broken, flaky),
//! its flaky passes, a commit's regressed, fixed, flaky and divergent tests against a base
//! commit, a link to the page, and what the summary cost in bucket requests.
//! Built from the views' own answers (`Viewer::ci_run`, `Viewer::commit`), by `summary` on a
//! bucket and by the collector's `/api/summary` for a job that reads through it.

use serde::Serialize;

use crate::analysis::classes::Verdict;
use crate::analysis::fingerprint::PairTest;
use crate::analysis::novelty::Novelty;
use crate::model::codeowners::CodeOwners;
use crate::model::quarantine::Quarantine;
use crate::model::run_title;
use crate::model::Status;
use crate::report::render::{self, grouped, short, Listed, Parts, Section, Source};
use crate::views::rows::first_line;
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
    let (quarantine, quarantine_requests) = viewer.quarantine_entries()?;
    let (owners, owners_requests) = viewer.code_owners()?;
    let requests = quarantine_requests + owners_requests;
    // The quarantine's GET is counted before the text says what the summary cost.
    let (text, cost) = match subject {
        Subject::Run(run) => {
            let mut view = viewer.ci_run(run)?;
            view.add_requests(requests);
            (render(&owned(of_run_parts(&view, &quarantine, now_ms), &owners), page, format), view.cost)
        }
        Subject::Commit { commit, base } => {
            let mut view = viewer.commit(commit, base.as_deref())?;
            view.add_requests(requests);
            (render(&owned(of_commit_parts(&view, &quarantine, now_ms), &owners), page, format), view.cost)
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

/// The longest first line of a failure a summary quotes.
const LINE: usize = 160;

/// The summary of a CI run (the answer of `Viewer::ci_run`); a failure `quarantine` holds
/// for its pair at `now_ms` is listed apart, as quarantined.
fn of_run_parts(view: &Costed<RunsView>, quarantine: &Quarantine, now_ms: u64) -> Parts {
    let runs = &view.view.runs;
    // Every failure, its classes beside it (new, divergent, broken, flaky); then the tests
    // that passed but are flaky.
    let (mut failed, mut held, mut flaky) = (Vec::new(), Vec::new(), Vec::new());
    for run in runs {
        let (platform, browser) = (&run.row.platform, &run.row.browser);
        for test in run.detail.iter().flat_map(|d| &d.tests) {
            let is_flaky = test.classes.iter().any(|c| c.class == Verdict::Flaky);
            let mut marks: Vec<&'static str> = test.classes.iter().map(|c| c.class.name()).collect();
            marks.extend(novelty_mark(test.novelty.as_ref()));
            let entry = Listed {
                suite: test.suite.clone(),
                name: test.name.clone(),
                marks,
                pairs: vec![format!("{platform} / {browser}")],
                line: test.message.as_deref().map(|m| first_line(m, LINE)),
                owners: vec![],
                issue: known_issue(test.novelty.as_ref()),
            };
            if test.status != Status::Failed {
                if is_flaky {
                    flaky.push(Listed { marks: vec![], ..entry });
                }
            } else if quarantine.covering(&test.suite, &test.name, platform, browser, now_ms).is_some() {
                held.push(entry);
            } else {
                failed.push(entry);
            }
        }
    }
    let mut source = Source::default();
    for run in runs {
        let ci = run.row.ci.as_ref();
        source.add(
            ci.and_then(|c| c.commit.as_deref()),
            ci.and_then(|c| c.branch.as_deref()),
            ci.and_then(|c| c.url.as_deref()),
        );
    }
    Parts {
        title: format!("Test results of {}", run_title(view.view.run.as_deref().unwrap_or_default())),
        source,
        pairs: runs.iter().map(|run| pair_counts(&run.row)).collect(),
        quarantined: held.len(),
        sections: vec![
            section("Failures", failed, true),
            section("Quarantined failures", held, false),
            section("Flaky", flaky, false),
        ],
        cost: cost(&view.cost),
    }
}

/// A section of tests listed once each, with the pairs they were seen on.
fn section(title: &'static str, tests: Vec<Listed>, open: bool) -> Section {
    Section { title, tests: grouped(tests), open }
}

/// The summary of a commit, or of a commit against a base (the answer of `Viewer::commit`); a
/// failure `quarantine` holds for its pair is listed apart, as quarantined.
fn of_commit_parts(view: &Costed<CommitView>, quarantine: &Quarantine, now_ms: u64) -> Parts {
    let commit = &view.view;
    let is_held = |e: &PairTest| {
        let (platform, browser) = e.pair.split_once('/').unwrap_or((&e.pair, ""));
        quarantine.covering(&e.suite, &e.name, platform, browser, now_ms).is_some()
    };
    let listed = |e: &PairTest| Listed {
        suite: e.suite.clone(),
        name: e.name.clone(),
        marks: novelty_mark(e.novelty.as_ref()).into_iter().collect(),
        pairs: vec![e.pair.replace('/', " / ")],
        line: e.message.as_deref().map(|m| first_line(m, LINE)),
        owners: vec![],
        issue: known_issue(e.novelty.as_ref()),
    };
    let entries = |tests: &[PairTest]| tests.iter().map(listed).collect::<Vec<_>>();
    // Without a base, every failure at the commit; with one, what the change broke.
    let (title, failing) = match commit.base {
        None => ("Failures", &commit.failures),
        Some(_) => ("Regressed", &commit.newly_failing),
    };
    let (held, failed): (Vec<&PairTest>, Vec<&PairTest>) = failing.iter().partition(|e| is_held(e));
    let divergent = commit
        .divergent
        .iter()
        .map(|d| Listed {
            suite: d.suite.clone(),
            name: d.name.clone(),
            marks: vec![],
            pairs: d.failed.clone(),
            line: Some(format!("failed there, passed on {}", d.passed.join(", "))),
            owners: vec![],
            issue: None,
        })
        .collect();
    let mut source = Source::default();
    for row in &commit.runs {
        let ci = row.ci.as_ref();
        source.add(None, ci.and_then(|c| c.branch.as_deref()), ci.and_then(|c| c.url.as_deref()));
    }
    Parts {
        title: match &commit.base {
            Some(base) => format!("Test results of commit {} against {}", short(&commit.commit), short(base)),
            None => format!("Test results of commit {}", short(&commit.commit)),
        },
        source,
        pairs: commit.runs.iter().map(pair_counts).collect(),
        quarantined: commit.failures.iter().filter(|e| is_held(e)).count(),
        sections: vec![
            section(title, failed.into_iter().map(listed).collect(), true),
            section(
                if commit.base.is_some() { "Regressed, quarantined" } else { "Quarantined failures" },
                held.into_iter().map(listed).collect(),
                false,
            ),
            section("Fixed", entries(&commit.fixed), false),
            section("Flaky", entries(&commit.flaky), false),
            section("Divergent", divergent, true),
        ],
        cost: cost(&view.cost),
    }
}

/// A failure's mark for its novelty: `new` when it has not failed alike on the default branch
/// lately (a known one says so with its issue's link instead).
fn novelty_mark(novelty: Option<&Novelty>) -> Option<&'static str> {
    novelty.filter(|n| n.is_new()).map(|_| "new")
}

/// The title and address of the issue that tracks a known failure.
fn known_issue(novelty: Option<&Novelty>) -> Option<(String, String)> {
    novelty?.known().map(|(title, issue)| (title.to_string(), issue.to_string()))
}

/// `parts` with each listed test's owners, by the team's CODEOWNERS.
fn owned(mut parts: Parts, owners: &CodeOwners) -> Parts {
    for test in parts.sections.iter_mut().flat_map(|s| s.tests.iter_mut()) {
        test.owners = owners.of_test(&test.suite, &test.name);
    }
    parts
}

fn render(parts: &Parts, page: Option<&str>, format: Format) -> String {
    match format {
        Format::Markdown => render::markdown(parts, page),
        Format::Text => render::plain(parts, page),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::classes::{Class, Rules};
    use crate::views::shapes::{Counts, Divergent, RowCi, RunDetail, RunTest, RunView};

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

    fn failed(suite: &str, name: &str) -> RunTest {
        RunTest {
            name: name.into(),
            suite: suite.into(),
            status: Status::Failed,
            duration: 1.0,
            file: 0,
            message: Some("\n  expected 2\n  got 3".into()),
            detail: Default::default(),
            flaky: false,
            classes: vec![Class { class: Verdict::Regressed, evidence: vec![] }],
            novelty: None,
        }
    }

    fn run_view() -> Costed<RunsView> {
        let runs = vec![
            run(row("linux", "gcc", "linux/gcc/9-github-7-1", [5, 1, 0]), vec![failed("crud", "put | <b>x</b>")]),
            run(row("mac", "clang", "mac/clang/9-github-7-1", [6, 0, 1]), vec![]),
        ];
        Costed { view: RunsView { run: Some("github-7-1".into()), runs }, cost: cost(3, &[("LIST", 1), ("GET", 2)]) }
    }

    /// Markdown for a job summary: a row per pair, failures with their first line, the
    /// page linked, the cost; nothing in a name becomes markup.
    #[test]
    fn a_run_in_markdown() {
        let out = render(
            &of_run_parts(&run_view(), &Quarantine::default(), 0),
            Some("https://results.example/"),
            Format::Markdown,
        );
        assert!(out.starts_with("### Test results of GitHub run 7\n"), "{out}");
        assert!(
            out.contains(
                "| [linux / gcc](https://results.example/?view=run&key=linux%2Fgcc%2F9-github-7-1) | 5 | 1 | 0 |"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "**Failures** (1)\n\n- crud › put \\| &lt;b&gt;x&lt;/b&gt; \\[regressed\\] · linux / gcc: expected 2\n"
            ),
            "{out}"
        );
        assert!(!out.contains("Flaky"), "empty sections are left out: {out}");
        assert!(out.ends_with("<sub>This summary cost 3 bucket requests (2 GET, 1 LIST).</sub>\n"), "{out}");
    }

    /// A test failing on two pairs is listed once, its marks merged; a name that would begin a
    /// nested list or an ordered one stays text; a --page that is not http(s) is no link.
    #[test]
    fn one_entry_per_test_and_names_stay_text() {
        let mut view = failing_everywhere(2, 1);
        view.view.runs[1].detail.as_mut().unwrap().tests[0].classes.clear();
        view.view.runs[0].detail.as_mut().unwrap().tests[0].suite = "- 1. x".into();
        view.view.runs[1].detail.as_mut().unwrap().tests[0].suite = "- 1. x".into();
        let out = render(&of_run_parts(&view, &Quarantine::default(), 0), Some("file:///tmp/page"), Format::Markdown);
        assert!(
            out.contains("**Failures** (1)\n\n- \\- 1. x › test 0 \\[regressed\\] · os0 / gcc, os1 / gcc: "),
            "{out}"
        );
        assert!(!out.contains("results page]"), "{out}");
        assert_eq!(crate::report::render::list_item("12) a"), "12\\) a");
    }

    /// Nothing a test's text holds becomes a mention, an issue link, a link or math.
    #[test]
    fn markdown_text_stays_text() {
        use crate::report::render::md;
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
            by: None,
        });
        let out = render(&of_run_parts(&run_view(), &quarantine, 0), None, Format::Text);
        assert!(
            out.contains(
                "  linux / gcc  5 passed, 1 failed, 0 skipped\n  mac / clang  6 passed, 0 failed, 1 skipped\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "Quarantined failures (1):\n  crud › put | <b>x</b> [regressed]  on linux / gcc: expected 2\n"
            ),
            "{out}"
        );
    }

    /// A commit against a base: regressed, fixed and divergent tests, with the pairs.
    #[test]
    fn a_commit_against_a_base() {
        let new_failure = PairTest {
            pair: "linux/gcc".into(),
            run: "linux/gcc/1-a".into(),
            suite: "sql".into(),
            name: "select".into(),
            message: Some("no such column".into()),
            novelty: None,
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
            by: None,
        });
        let out = render(&of_commit_parts(&view, &quarantine, 0), None, Format::Text);
        assert!(out.starts_with("Test results of commit 0123456789ab against fedcba987654\n"), "{out}");
        assert!(out.contains("Regressed, quarantined (1):\n  sql › select  on linux / gcc: no such column\n"), "{out}");
        assert!(
            out.contains("Divergent (1):\n  sql › select  on linux/gcc: failed there, passed on mac/clang\n"),
            "{out}"
        );
        assert!(out.ends_with("This summary cost 0 bucket requests.\n"), "{out}");
    }

    /// A CI run of `pairs` pairs, each failing the same `tests` tests, from one commit.
    fn failing_everywhere(pairs: usize, tests: usize) -> Costed<RunsView> {
        let runs = (0..pairs)
            .map(|p| {
                let ci = RowCi {
                    commit: Some("0123456789abcdef".into()),
                    branch: Some("main".into()),
                    url: Some("https://ci.example/runs/7 (a)".into()),
                    ..RowCi::default()
                };
                let mut row = row(&format!("os{p}"), "gcc", &format!("os{p}/gcc/9-github-7-1"), [0, tests as u64, 0]);
                row.ci = Some(ci);
                run(row, (0..tests).map(|t| failed("suite", &format!("test {t}"))).collect())
            })
            .collect();
        Costed { view: RunsView { run: Some("github-7-1".into()), runs }, cost: cost(0, &[]) }
    }

    /// One test failing on three pairs is listed once with the three pairs, under the commit,
    /// branch and CI link the runs name; a link a report gave that is not http(s) is no link.
    #[test]
    fn failures_grouped_by_test_under_their_source() {
        let out = render(&of_run_parts(&failing_everywhere(3, 1), &Quarantine::default(), 0), None, Format::Markdown);
        assert!(
            out.contains("Commit 0123456789ab · branch main · [CI run](https://ci.example/runs/7%20%28a%29)\n"),
            "{out}"
        );
        assert!(
            out.contains(
                "**Failures** (1)\n\n- suite › test 0 \\[regressed\\] · os0 / gcc, os1 / gcc, os2 / gcc: expected 2\n"
            ),
            "{out}"
        );
        let mut view = failing_everywhere(1, 1);
        view.view.runs[0].row.ci.as_mut().unwrap().url = Some("javascript:alert(1)".into());
        let out = render(&of_run_parts(&view, &Quarantine::default(), 0), None, Format::Markdown);
        assert!(out.contains("Commit 0123456789ab · branch main\n") && !out.contains("javascript"), "{out}");
    }

    /// A run of 10,000 failing tests on 20 pairs fits a pull request's comment (65,536
    /// characters): its long parts fold into `<details>`, and what is left out is counted.
    #[test]
    fn ten_thousand_failures_fit_a_comment() {
        let view = failing_everywhere(20, 10_000);
        let out =
            render(&of_run_parts(&view, &Quarantine::default(), 0), Some("https://results.example/"), Format::Markdown);
        assert!(out.chars().count() < 65_536 && out.len() <= render::MARKDOWN_LIMIT, "{} bytes", out.len());
        assert!(out.contains("**Failed**: 200000 tests on 20 of 20 pairs."), "{}", &out[..400]);
        assert!(out.contains("<details><summary>20 pairs, 20 with failures</summary>"), "{}", &out[..600]);
        assert!(out.contains("<details><summary>9990 more</summary>"), "the rest folds");
        assert!(out.contains(" more on the results page\n"), "what does not fit is counted");
        assert_eq!(out.matches("<details>").count(), out.matches("</details>").count(), "every fold is closed");
        assert!(out.ends_with("<sub>This summary cost 0 bucket requests.</sub>\n"), "the tail is kept");
    }
}
