//! Tests down the side: the suites as a tree (their names' `/` parts, then a suite's tests),
//! the pairs across, each cell a node's passed and total counts with its classes. For big
//! projects, where a column per suite does not fit and most pairs run some suites only.

use super::*;

/// The most pairs the tree shows across.
const COLUMNS: usize = 100;

impl Viewer {
    /// The tree of every pair's newest run (on `branch`, as the matrix has it): its top level,
    /// and the children of each node in `open` (a suite's path opens its tests). Nodes and
    /// suites' cells come from the runs' digests; an open suite's tests from each pair's newest
    /// run, read whole (one GET a pair, cached for good).
    pub fn tree(&self, open: &[String], branch: Option<&str>) -> View<TreeView> {
        if open.len() > 200 || open.iter().any(|o| o.is_empty() || o.len() > 4096) {
            return Err(AppError::bad("open names up to 200 nodes, each 1 to 4096 bytes"));
        }
        self.view(|db| {
            let (_, branch, shown) = self.shown_newest(db, branch)?;
            let Newest { pairs, runs, seen, .. } = &*shown;
            let weighed = Pairs::new(seen);
            let mut columns: Vec<Column> = Vec::new();
            let mut suite_cells: Vec<BTreeMap<String, Cell>> = Vec::new();
            let mut more_pairs = 0;
            for (i, (platform, browser)) in pairs.iter().enumerate() {
                let Some(newest) = runs[i].first().filter(|d| !d.digests.is_empty()) else { continue };
                if columns.len() == COLUMNS {
                    more_pairs += 1;
                    continue;
                }
                let earlier = shown.before(db, i)?;
                suite_cells.push(cells(&newest.digests, &seen[i][0], &evidence(&earlier, &weighed)));
                let shown =
                    TreeColumn { platform: platform.clone(), browser: browser.clone(), key: newest.key.clone() };
                columns.push(Column { shown, at: i, earlier });
            }
            let mut suites: Vec<&String> = suite_cells.iter().flat_map(BTreeMap::keys).collect();
            // By their parts, so that `api/users` comes right after `api` (before `api-v2`).
            suites.sort_by(|a, b| a.split('/').cmp(b.split('/')));
            suites.dedup();
            let is_suite: std::collections::HashSet<&str> = suites.iter().map(|s| s.as_str()).collect();
            let is_open = |path: &str| open.iter().any(|o| o == path);
            let mut nodes = Vec::new();
            let mut listed = std::collections::HashSet::new();
            // Every column's newest run, read whole once if some suite's tests are shown.
            let mut loaded: Option<Vec<Loaded>> = None;
            for suite in &suites {
                // Each of the suite's path's prefixes, shown while every one above it is open.
                let parts: Vec<&str> = suite.split('/').collect();
                let mut shown = true;
                for depth in 0..parts.len() {
                    let path = parts[..=depth].join("/");
                    if depth > 0 && !is_open(&parts[..depth].join("/")) {
                        shown = false;
                        break;
                    }
                    if !listed.insert(path.clone()) {
                        continue;
                    }
                    nodes.push(TreeNode {
                        name: parts[depth].to_string(),
                        depth,
                        suite: is_suite.contains(path.as_str()).then(|| path.clone()),
                        opens: true,
                        cells: suite_cells.iter().map(|cells| sum_under(cells, &path)).collect(),
                        path,
                    });
                }
                if shown && is_open(suite) {
                    if loaded.is_none() {
                        let keys: Vec<String> = columns.iter().map(|c| c.shown.key.clone()).collect();
                        loaded = Some(load_runs(db, &keys)?);
                    }
                    let runs = loaded.as_deref().unwrap_or_default();
                    nodes.extend(tests_of(suite, parts.len(), &columns, runs, &weighed, seen));
                }
            }
            Ok(TreeView {
                pairs: columns.into_iter().map(|c| c.shown).collect(),
                nodes,
                more_pairs,
                branch: branch.map(|b| b.name),
                suites: suites.len(),
                rules: Rules,
            })
        })
    }
}

/// A pair across the tree: its column, its place among every pair's newest runs, and the runs
/// its newest is weighed against.
struct Column {
    shown: TreeColumn,
    at: usize,
    earlier: Arc<Vec<Seen>>,
}

/// Suite `suite`'s tests on each of `columns` (their newest runs, read whole), a node each,
/// with their classes as the run's page has them.
fn tests_of(
    suite: &str,
    depth: usize,
    columns: &[Column],
    loaded: &[Loaded],
    weighed: &Pairs,
    seen: &[Vec<Seen>],
) -> Vec<TreeNode> {
    let mut tests: BTreeMap<String, Vec<Option<Cell>>> = BTreeMap::new();
    for (column, run) in loaded.iter().enumerate() {
        let Column { at, earlier, .. } = &columns[column];
        let e = evidence(earlier, weighed);
        for (t, id) in run.tests_with_ids().filter(|(t, _)| t.suite == suite) {
            let weighed = Weighed { suite: &t.suite, id, outcome: Outcome::of(t) };
            let row = tests.entry(t.name.clone()).or_insert_with(|| vec![None; columns.len()]);
            let cell = row[column].get_or_insert_with(Cell::default);
            match t.status {
                Status::Passed => cell.passed += 1,
                Status::Failed => cell.failed += 1,
                _ => cell.skipped += 1,
            }
            for class in classify(&weighed, &seen[*at][0], &e) {
                *cell.classes.entry(class.class.name().to_string()).or_default() += 1;
            }
        }
    }
    tests
        .into_iter()
        .map(|(name, cells)| TreeNode {
            path: format!("{suite} › {name}"),
            name,
            depth,
            suite: Some(suite.to_string()),
            opens: false,
            cells,
        })
        .collect()
}

/// The counts and classes of the cells of suite `path` and the suites under it (`path/…`,
/// one stretch of the map's order), summed; `None` when there are none.
fn sum_under(cells: &BTreeMap<String, Cell>, path: &str) -> Option<Cell> {
    let below = format!("{path}/");
    let own = cells.get(path);
    let under = cells.range(below.clone()..).take_while(|(s, _)| s.starts_with(&below)).map(|(_, c)| c);
    let mut sum: Option<Cell> = None;
    for cell in own.into_iter().chain(under) {
        let total = sum.get_or_insert_with(Cell::default);
        total.passed += cell.passed;
        total.failed += cell.failed;
        total.skipped += cell.skipped;
        for (class, n) in &cell.classes {
            *total.classes.entry(class.clone()).or_default() += n;
        }
    }
    sum
}
