//! Which pairs the matrix shows: the filters a page's URL gives, checked against a matrix row.

use serde_json::Value;

use crate::views::shapes::{Cell, RunRow};

/// Which pairs the matrix shows: by platform, runtime, commit (a prefix), a build-variant label
/// (`key=value`), a suite present, a test status or class in the suites shown; and after which
/// pair (`platform/browser`). The branch (`branch`) chooses which run is a pair's newest.
#[derive(Debug, Default)]
pub struct MatrixFilter {
    pub after: Option<String>,
    pub platform: Option<String>,
    pub browser: Option<String>,
    pub suite: Option<String>,
    pub status: Option<String>,
    pub class: Option<String>,
    pub commit: Option<String>,
    /// `key=value`: the newest run's files carry that label.
    pub label: Option<String>,
    /// Whose newest runs are shown: a branch, `*` for any; none, the default branch.
    pub branch: Option<String>,
}

impl MatrixFilter {
    /// Whether [`MatrixFilter::passes`] reads a row's cells (a suite, status or class is asked
    /// for): when not, only the rows shown need theirs.
    pub fn reads_cells(&self) -> bool {
        self.suite.is_some() || self.status.is_some() || self.class.is_some()
    }

    /// Whether a matrix row passes: a row whose run cannot be read counts as failed, in any
    /// suite (it is a red flag whatever it held).
    pub fn passes(&self, row: &RunRow) -> bool {
        if self.platform.as_ref().is_some_and(|p| *p != row.platform)
            || self.browser.as_ref().is_some_and(|b| *b != row.browser)
            || self.commit.as_ref().is_some_and(|c| {
                // A matrix row carries the commit's first 12 characters (a run's digest).
                let commit = row.ci.as_ref().and_then(|ci| ci.commit.as_deref()).unwrap_or_default();
                commit.is_empty()
                    || !(commit.starts_with(c.as_str())
                        || (commit.len() == crate::model::digest::COMMIT_CHARS && c.starts_with(commit)))
            })
            || self.label.as_ref().is_some_and(|l| {
                let (key, value) = l.split_once('=').unwrap_or((l, ""));
                row.labels.as_ref().and_then(|labels| labels.get(key)).and_then(Value::as_str) != Some(value)
            })
        {
            return false;
        }
        let Some(cells) = &row.cells else {
            return self.class.is_none() && self.status.as_deref().is_none_or(|s| s == "failed");
        };
        // Unfiltered, every pair shows, a run of no tests too.
        if self.suite.is_none() && self.status.is_none() && self.class.is_none() {
            return true;
        }
        let shown: Vec<&Cell> =
            cells.iter().filter(|(s, _)| self.suite.as_ref().is_none_or(|w| w == *s)).map(|(_, c)| c).collect();
        let count = |c: &Cell, status: &str| match status {
            "passed" => c.passed,
            "failed" => c.failed,
            "skipped" => c.skipped,
            _ => 0,
        };
        !shown.is_empty()
            && self.status.as_ref().is_none_or(|s| shown.iter().any(|c| count(c, s) > 0))
            && self.class.as_ref().is_none_or(|k| shown.iter().any(|c| c.classes.get(k).is_some_and(|n| *n > 0)))
    }
}
