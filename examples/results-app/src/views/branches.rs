//! Branches: which branch's runs a view shows. The matrix shows each pair's newest run on one
//! branch: the default one unless asked (`branch=NAME`, or `branch=*` for any). The default is
//! the configured one (`OBJSTORE_RESULTS_DEFAULT_BRANCH`), else `main` or `master` where some
//! pair's newest runs are on it, else any branch. A run of no branch (posted outside CI, or
//! before runs named theirs) counts as the default branch's. A run on another branch (a pull
//! request's) is weighed against its own branch's runs and its base's (the default branch), and
//! compared with its base's run before it.

use super::*;

/// How far back a pair's runs are looked through for a branch's, when its newest are not on it.
const BRANCH_WINDOW: usize = PAGE;

/// The branch a view shows, whether it is the default one (which holds the runs of no branch
/// too), and the default branch, its base, when it is another.
pub(crate) struct OnBranch {
    pub(crate) name: String,
    pub(crate) default: bool,
    pub(crate) base: Option<String>,
}

impl OnBranch {
    /// Whether a run of `branch` (as its digests carry it) is on this branch.
    pub(crate) fn holds(&self, branch: Option<&str>) -> bool {
        match branch {
            Some(branch) => branch == digest::branch_key(&self.name),
            None => self.default,
        }
    }

    /// Whether a run of `branch` is one this branch's runs are weighed against: its own, or
    /// its base's (a pull request's runs are weighed against the default branch's too).
    fn weighs(&self, branch: Option<&str>) -> bool {
        self.holds(branch) || self.base.as_deref().is_some_and(|base| branch.is_none_or(|b| b == base))
    }

    /// A pair's runs as the matrix weighs them on this branch: its newest on it, then the
    /// runs it is weighed against; none when no run is on it.
    fn pick(&self, runs: &[Digested]) -> Vec<Digested> {
        let Some(first) = runs.iter().position(|d| self.holds(d.branch())) else { return Vec::new() };
        let before = runs[first + 1..].iter().filter(|d| self.weighs(d.branch())).take(BROKEN_RUNS - 1);
        std::iter::once(&runs[first]).chain(before).cloned().collect()
    }
}

impl Viewer {
    /// The default branch: the configured one, else `main` or `master` where some pair's newest
    /// runs are on it, looked for further back where they are not; `None` (any branch) when
    /// neither is anywhere. Worked out with every pair's newest runs, and kept with them.
    pub(super) fn find_default_branch(
        &self,
        db: &Cache,
        pairs: &[(String, String)],
        runs: &[Vec<Digested>],
    ) -> AppResult<Option<String>> {
        if let Some(configured) = &self.default_branch {
            return Ok(Some(configured.clone()));
        }
        let named = |runs: &[Vec<Digested>]| {
            ["main", "master"].into_iter().find(|name| runs.iter().flatten().any(|d| d.branch() == Some(*name)))
        };
        if let Some(name) = named(runs) {
            return Ok(Some(name.to_string()));
        }
        let deeper: Vec<(String, String)> =
            pairs.iter().zip(runs).filter(|(_, runs)| runs.len() == BROKEN_RUNS).map(|(p, _)| p.clone()).collect();
        if deeper.is_empty() {
            return Ok(None);
        }
        Ok(named(&newest_digested(db, &deeper, BRANCH_WINDOW)?).map(str::to_string))
    }

    /// The branch `asked` names (`*`: any, none: the default) as an [`OnBranch`]; `None` for any.
    pub(super) fn on_branch(&self, asked: Option<&str>, newest: &Newest) -> AppResult<Option<OnBranch>> {
        let default = newest.default_branch.clone();
        Ok(match asked {
            Some("*") => None,
            Some(name) => {
                check_text("branch", name, MAX_BRANCH)?;
                let is_default = default.as_deref().is_some_and(|d| digest::branch_key(d) == digest::branch_key(name));
                let base = default.filter(|_| !is_default).map(|d| digest::branch_key(&d).to_string());
                Some(OnBranch { name: name.to_string(), default: is_default, base })
            }
            None => default.map(|name| OnBranch { name, default: true, base: None }),
        })
    }

    /// Every pair's newest runs on `branch` ([`BROKEN_RUNS`] of them, newest first, those after
    /// the first on it or its base: [`OnBranch::pick`]): from the pairs' newest runs, and for a
    /// pair with fewer of them, from its [`BRANCH_WINDOW`] newest (names only: a GET only for a
    /// run whose names carry no digest).
    pub(super) fn newest_on(&self, db: &Cache, newest: &Newest, branch: &OnBranch) -> AppResult<Newest> {
        let mut runs: Vec<Vec<Digested>> = Vec::with_capacity(newest.runs.len());
        let mut further = Vec::new();
        for (i, pair_runs) in newest.runs.iter().enumerate() {
            let found = branch.pick(pair_runs);
            // A pair that has more runs than were looked at may have older ones on the branch.
            if found.len() < BROKEN_RUNS && pair_runs.len() == BROKEN_RUNS {
                further.push(i);
            }
            runs.push(found);
        }
        if !further.is_empty() {
            let pairs: Vec<(String, String)> = further.iter().map(|i| newest.pairs[*i].clone()).collect();
            for (i, found) in further.into_iter().zip(newest_digested(db, &pairs, BRANCH_WINDOW)?) {
                runs[i] = branch.pick(&found);
            }
        }
        Ok(Newest::new(newest.pairs.clone(), runs, newest.default_branch.clone()))
    }
}

/// The branches among every pair's newest runs, and the default one, in name order.
pub(super) fn branches(newest: &Newest, default: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> =
        newest.runs.iter().flatten().filter_map(|d| d.branch()).chain(default).map(str::to_string).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Of a pair's runs before `this` (newest first), those it is weighed against: its own
/// branch's and its base's (the default branch, and runs of no branch); all of them when no
/// branch is the default. And the one it is compared with: its base's newest for a run of
/// another branch, else the newest of them.
pub(crate) fn earlier_runs(
    this: &Digested,
    earlier: Vec<Digested>,
    default: Option<&str>,
) -> (Vec<Digested>, Option<PreviousRun>) {
    let Some(default) = default.map(digest::branch_key) else {
        let previous = earlier.first().map(|d| PreviousRun { key: d.key.clone(), base: None });
        return (earlier, previous);
    };
    let branch = this.branch();
    let on_base = |d: &Digested| d.branch().is_none_or(|b| b == default);
    let kept: Vec<Digested> = earlier.into_iter().filter(|d| on_base(d) || d.branch() == branch).collect();
    let previous = match branch {
        Some(branch) if branch != default => kept
            .iter()
            .find(|d| on_base(d))
            .map(|d| PreviousRun { key: d.key.clone(), base: Some(default.to_string()) }),
        _ => kept.first().map(|d| PreviousRun { key: d.key.clone(), base: None }),
    };
    (kept, previous)
}

/// The run a run is compared with, and the base branch when it is that branch's run (for a
/// pull request's run).
pub(crate) struct PreviousRun {
    pub(crate) key: String,
    pub(crate) base: Option<String>,
}

/// The longest branch name asked for (as `ci.branch` is kept).
const MAX_BRANCH: usize = 256;
