//! The views' answers as types: each view's JSON is declared once here and serialized once,
//! by [`super::Viewer`], with what it cost. Maps keyed by data (labels, cells, classes, rules)
//! stay maps.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::analysis::classes::{Class, Rules};
use crate::analysis::fingerprint::{FailureGroup, PairTest, RuleRef};
use crate::analysis::history::History;
use crate::analysis::impact::Impact;
use crate::analysis::novelty::Novelty;
use crate::model::failure_rules::FailureRule;
use crate::model::quarantine::{Change, Entry};
use crate::model::{run_title, Ci, Detail, Status, Tool};
use crate::store::cache::Spent;

/// A view with what it cost, as the page gets it.
#[derive(Serialize)]
pub struct Costed<T> {
    #[serde(flatten)]
    pub view: T,
    pub cost: Cost,
}

impl<T> Costed<T> {
    /// Adds `requests` made outside the view's database (the quarantine's GET) to what it cost.
    pub fn add_requests(&mut self, requests: u64) {
        if requests > 0 {
            self.cost.requests += requests;
            *self.cost.by_kind.entry("GET".into()).or_default() += requests;
        }
    }
}

/// What a view cost in bucket requests, bytes and dollars (the library's `sync_stats`).
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub requests: u64,
    pub by_kind: BTreeMap<String, u64>,
    pub bytes_in: u64,
    pub usd: f64,
    /// By price list, in the library's order: `{list: usd}`.
    #[serde(serialize_with = "in_order")]
    pub usd_by: Vec<(&'static str, f64)>,
    /// Another view was built at the same time: the count may hold some of its requests.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// How long the view took to build (ms), and how much of it was spent waiting on the
    /// bucket (a request in flight): the rest is local work.
    pub ms: f64,
    pub bucket_ms: u64,
}

impl Cost {
    /// What the library counted, in dollars as it reports them.
    pub fn of(spent: Spent) -> Cost {
        Cost {
            requests: spent.requests,
            by_kind: spent.by_kind,
            bytes_in: spent.bytes_in,
            // The first price list is S3 Standard's, the `costUsd` of the library's report.
            usd: spent.usd_by.first().map_or(0.0, |(_, usd)| *usd),
            usd_by: spent.usd_by,
            shared: false,
            ms: 0.0,
            bucket_ms: spent.busy_ms,
        }
    }
}

/// Pairs as a map, in their order.
fn in_order<S: Serializer>(pairs: &[(&'static str, f64)], out: S) -> Result<S::Ok, S::Error> {
    out.collect_map(pairs.iter().copied())
}

/// A run in a list (see [`crate::views::rows::brief`]); the matrix adds its labels and cells.
#[derive(Serialize, Default)]
pub struct RunRow {
    pub key: String,
    pub platform: String,
    pub browser: String,
    pub time: Option<u64>,
    pub stored: Option<u64>,
    pub files: RunFiles,
    /// Why no file of it could be read (the row then has nothing else).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<RowCi>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Counts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<usize>,
    /// Build-variant labels, the first file's where two differ (in the order met).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells: Option<BTreeMap<String, Cell>>,
}

/// A run's files: how many in a list, each one on the run's own page.
#[derive(Serialize)]
#[serde(untagged)]
pub enum RunFiles {
    Count(usize),
    Each(Vec<RunFile>),
}

impl Default for RunFiles {
    fn default() -> RunFiles {
        RunFiles::Count(0)
    }
}

/// One file of a run on its page: what it holds, or why it cannot be read.
#[derive(Serialize)]
#[serde(untagged)]
pub enum RunFile {
    Read {
        key: String,
        file: Option<String>,
        job: Option<String>,
        tool: Tool,
        version: String,
        /// Its own tests: a rerun's are those its run did not have (the others are attempts).
        tests: usize,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        rerun: bool,
    },
    Unreadable {
        key: String,
        error: String,
    },
}

/// Where a run came from, as a row shows it (a report's `ci` but its file and job).
#[derive(Serialize, Default)]
pub struct RowCi {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The run's id for people (`GitHub run 9876543210`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl RowCi {
    /// `ci` without its file and job; `None` when nothing is left.
    pub fn of(ci: &Ci) -> Option<RowCi> {
        let row = RowCi {
            run: ci.run.clone(),
            commit: ci.commit.clone(),
            branch: ci.branch.clone(),
            url: ci.url.clone(),
            title: ci.run.as_deref().map(run_title),
        };
        (row.run.is_some() || row.commit.is_some() || row.branch.is_some() || row.url.is_some()).then_some(row)
    }
}

/// A CI run's page: its title, each pair's run (a job) and its failures, each test once with
/// the pairs it failed on.
#[derive(Serialize)]
pub struct CiRunView {
    pub run: String,
    pub title: String,
    pub rows: Vec<RunRow>,
    pub failures: Vec<FailingTest>,
    pub flaky: Vec<FailingTest>,
}

/// A test across a CI run's pairs: where it failed (or was flaky), its classes there, and the
/// first line of its first failure.
#[derive(Serialize)]
pub struct FailingTest {
    pub suite: String,
    pub name: String,
    /// Each pair with its run's key.
    pub pairs: Vec<(String, String)>,
    pub classes: BTreeSet<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The flaky tests across every pair, ranked by the CI minutes they cost, then flake rate.
#[derive(Serialize)]
pub struct FlakyListView {
    /// The runs of each pair looked at (its newest and those before it).
    pub window: usize,
    pub tests: Vec<FlakyListed>,
    /// More were flaky than are listed.
    pub more: bool,
    pub triage: TriageRules,
}

/// A flaky test: the runs that ran it and those that show it flaky, over every pair, and the
/// oldest of those (when it started).
#[derive(Serialize)]
pub struct FlakyListed {
    pub suite: String,
    pub name: String,
    #[serde(skip)]
    pub id: u32,
    pub rate: f64,
    pub flaky: usize,
    pub ran: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    pub pairs: Vec<FlakyOnPair>,
    /// Who owns it (the team's CODEOWNERS).
    pub owners: Vec<String>,
    /// What it cost over the window.
    pub impact: Impact,
}

/// A flaky test on one pair: runs that ran it, runs where it flaked, and the newest run whose
/// page marks it flaky.
#[derive(Serialize)]
pub struct FlakyOnPair {
    pub pair: String,
    pub ran: usize,
    pub flaky: usize,
    pub run: String,
}

/// A run's counts over every file (skipped with pending and other).
#[derive(Serialize, Default)]
pub struct Counts {
    pub tests: u64,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

/// A matrix cell: one suite's counts in a run, and how many of its tests fall in each class.
#[derive(Serialize, Default, Clone)]
pub struct Cell {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub classes: BTreeMap<String, u64>,
}

/// One run's page: its row, and for a run that could be read, its tests.
#[derive(Serialize)]
pub struct RunView {
    #[serde(flatten)]
    pub row: RunRow,
    #[serde(flatten)]
    pub detail: Option<RunDetail>,
}

/// What a readable run's page adds to its row.
#[derive(Serialize)]
pub struct RunDetail {
    pub tests: Vec<RunTest>,
    pub rules: Rules,
    /// The pair's run before it, to diff against: for a run of a branch other than the
    /// default, the default branch's run before it.
    pub previous: Option<String>,
    /// The default branch, when `previous` is its run (this run is another branch's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// A test on its run's page, with its trace, output, attempts and classes.
#[derive(Serialize)]
pub struct RunTest {
    pub name: String,
    pub suite: String,
    pub status: Status,
    pub duration: f64,
    /// Which of the run's files holds it.
    pub file: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Under CTRF's names; its own `flaky` left out for the one below.
    #[serde(flatten)]
    pub detail: Detail,
    pub flaky: bool,
    pub classes: Vec<Class>,
    /// A failure's word beside what came before it: new, known to a rule, or seen before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub novelty: Option<Novelty>,
}

/// The matrix: a page of pairs' newest runs, and what the filters offer.
#[derive(Serialize, Default)]
pub struct MatrixView {
    pub suites: Vec<String>,
    pub rows: Vec<RunRow>,
    /// The pair to continue after.
    pub next: Option<String>,
    /// The pairs that pass the filter, and all pairs.
    pub matching: usize,
    pub pairs: usize,
    pub platforms: Vec<String>,
    pub browsers: Vec<String>,
    /// Build variants (`key=value`).
    pub labels: BTreeSet<String>,
    /// Per suite of the rows shown, the runtimes whose newest runs (on any pair) have it: a
    /// runtime without it has no such suite, rather than a run that did not run it.
    pub runtimes: BTreeMap<String, BTreeSet<String>>,
    /// The branch whose runs are shown (none: any branch's newest), and the branches among
    /// every pair's newest runs with the default one.
    pub branch: Option<String>,
    pub branches: Vec<String>,
    /// The default branch, if there is one.
    #[serde(rename = "defaultBranch")]
    pub default_branch: Option<String>,
    pub rules: Rules,
}

/// Tests down the side: the pairs across, the suite tree's shown nodes down.
#[derive(Serialize)]
pub struct TreeView {
    pub pairs: Vec<TreeColumn>,
    pub nodes: Vec<TreeNode>,
    /// Pairs with runs beyond the most the tree shows across.
    #[serde(rename = "morePairs")]
    pub more_pairs: usize,
    pub branch: Option<String>,
    /// Suites in all.
    pub suites: usize,
    pub rules: Rules,
}

/// A pair across the tree, with its newest run.
#[derive(Serialize)]
pub struct TreeColumn {
    pub platform: String,
    pub browser: String,
    pub key: String,
}

/// A row of the tree: a part of suites' names (`unit`, then `unit/crud`), a suite, or a test
/// of an open suite; its cell on each pair (none where the pair runs nothing under it).
#[derive(Serialize)]
pub struct TreeNode {
    /// The node's path: a suite's name or a part of it; a test's is `suite › name`.
    pub path: String,
    pub name: String,
    pub depth: usize,
    /// The suite it is, or whose test it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    pub opens: bool,
    pub cells: Vec<Option<Cell>>,
}

/// A pair's runs, a page of them, with the tests flaky among them.
#[derive(Serialize)]
pub struct PairHistoryView {
    pub platform: String,
    pub browser: String,
    pub runs: Vec<RunRow>,
    pub next: Option<String>,
    pub flaky: Vec<FlakyTest>,
}

/// A test flaky at one commit (or version), `basis`: it passed on a retry there, or passed and
/// failed.
#[derive(Serialize)]
pub struct FlakyTest {
    pub basis: String,
    pub suite: String,
    pub name: String,
}

/// The latest runs across pairs, a page of them.
#[derive(Serialize)]
pub struct LatestView {
    pub runs: Vec<RunRow>,
    pub next: Option<String>,
}

/// Runs' pages: every pair's newest run's, or (with `run`) every pair's part of a CI run.
#[derive(Serialize)]
pub struct RunsView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub runs: Vec<RunView>,
}

/// What changed between two runs.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffView {
    pub from: RunRow,
    pub to: RunRow,
    pub newly_failing: Vec<DiffTest>,
    pub newly_passing: Vec<DiffTest>,
    pub added: Vec<DiffTest>,
    pub removed: Vec<DiffTest>,
}

/// A test in a diff, as the later run has it (the earlier for a removed one).
#[derive(Serialize)]
pub struct DiffTest {
    pub suite: String,
    pub name: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The quarantine, each entry with how it fares on the pairs it covers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuarantineView {
    pub entries: Vec<QuarantineEntry>,
    pub release_after: usize,
    /// The newest changes first.
    pub history: Vec<Change>,
}

/// A quarantine entry, its outcomes on each pair it covers, and whether it can go.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuarantineEntry {
    #[serde(flatten)]
    pub entry: Entry,
    pub pairs_covered: Vec<Covered>,
    pub releasable: bool,
    pub expired: bool,
}

/// A pair a quarantine entry covers, and its test's outcome in the pair's last runs (`null`
/// where it did not run).
#[derive(Serialize)]
pub struct Covered {
    pub pair: String,
    pub outcomes: Vec<Option<Status>>,
}

/// A test's page (see [`super::Viewer::test_page`]).
#[derive(Serialize)]
pub struct TestPageView {
    pub suite: String,
    pub name: String,
    /// The pair asked for; none: every pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair: Option<String>,
    /// The runs of each pair looked at.
    pub window: usize,
    pub pairs: Vec<TestOnPair>,
    /// Who owns it (the team's CODEOWNERS).
    pub owners: Vec<String>,
    pub rows: Vec<TestRunRow>,
    pub groups: Vec<TestFailureGroup>,
    /// On one pair: its outcomes run after run, since when it fails, its durations.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub history: Option<History>,
}

/// A test on one pair, over the runs looked at.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestOnPair {
    pub pair: String,
    pub ran: usize,
    pub failed: usize,
    pub flaky: usize,
    pub rate: f64,
    /// The newest run it passed in, and the oldest it failed in, with when they ran.
    pub last_passed: Option<String>,
    pub last_passed_at: Option<u64>,
    pub first_failed: Option<String>,
    pub first_failed_at: Option<u64>,
}

/// A test in one run, as its table shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestRunRow {
    pub run: String,
    pub pair: String,
    pub time: Option<u64>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub status: Status,
    pub attempts: u64,
    pub passed_on_retry: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub duration: f64,
}

/// A failure group (the top failures' rule or fingerprint) a test's failures fall in.
#[derive(Serialize)]
pub struct TestFailureGroup {
    pub key: String,
    pub fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    pub text: String,
    pub runs: usize,
}

/// Tests found by name or suite in each pair's newest run.
#[derive(Serialize)]
pub struct SearchView {
    pub query: String,
    pub tests: Vec<FoundTest>,
    /// Whether more were found than shown.
    pub more: bool,
}

/// A test found, where.
#[derive(Serialize)]
pub struct FoundTest {
    pub platform: String,
    pub browser: String,
    pub run: String,
    pub suite: String,
    pub name: String,
    pub status: Status,
}

/// Failures across pairs grouped by rule or fingerprint, with their impact.
#[derive(Serialize)]
pub struct FailuresView {
    pub groups: Vec<FailureGroup>,
    pub triage: TriageRules,
}

/// Every pair at one commit, or against a base.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CommitView {
    pub commit: String,
    pub base: Option<String>,
    pub runs: Vec<RunRow>,
    /// Every test that failed in a pair's newest run at the commit.
    pub failures: Vec<PairTest>,
    pub newly_failing: Vec<PairTest>,
    pub fixed: Vec<PairTest>,
    pub divergent: Vec<Divergent>,
    pub flaky: Vec<PairTest>,
}

impl CommitView {
    /// No run at the commit.
    pub fn empty(commit: &str, base: Option<&str>) -> CommitView {
        CommitView { commit: commit.to_string(), base: base.map(str::to_string), ..CommitView::default() }
    }
}

/// A test that passed on some pairs and failed on others at one commit.
#[derive(Serialize)]
pub struct Divergent {
    pub suite: String,
    pub name: String,
    pub passed: Vec<String>,
    pub failed: Vec<String>,
}

/// The rules of triage's figures, shown beside them: impact's, and new's.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TriageRules {
    /// Each impact figure's name and rule.
    pub impact: Vec<(&'static str, &'static str)>,
    /// The window impact is counted over.
    pub window: String,
    pub new: String,
}

/// The failure rules, each with its impact and newest failures.
#[derive(Serialize)]
pub struct RulesView {
    pub rules: Vec<RuleListed>,
    pub triage: TriageRules,
}

/// A failure rule with what it matched over the impact window.
#[derive(Serialize)]
pub struct RuleListed {
    #[serde(flatten)]
    pub rule: FailureRule,
    pub impact: Impact,
    pub failures: Vec<PairTest>,
}
