//! Whether a failure is new (Treeherder's NEW): a failure no rule knows, of a test that has not
//! failed alike (the same fingerprint) on the default branch within a window before it. Most
//! intermittent failures have failed alike before and are not new; a regression is. Keyed on the
//! test and its fingerprint, not the fingerprint alone: normalised texts are short ("expected N,
//! got N"), and another test's old failure must not hide this one's regression.

use serde::Serialize;

use crate::analysis::impact::{FailedTest, RunFacts};
use crate::model::failure_rules::FailureRule;

/// The window a failure is looked for in, by default.
pub const NEW_DAYS: u64 = 21;
/// The most earlier failures of a test read to find one alike (newest first).
pub const LOOKED: usize = 10;

/// What a failure is beside what came before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Novelty {
    /// A failure rule knows it: its issue tracks it.
    Known { rule: String, title: String, issue: String },
    /// Not seen alike on `branch` in the `days` before it: `failed` earlier failures of the test
    /// there (with other texts), of which the newest [`LOOKED`] were read.
    New { branch: String, days: u64, failed: usize },
    /// Seen alike before: the newest such run, and when it started.
    Seen {
        run: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
    },
}

impl Novelty {
    pub fn is_new(&self) -> bool {
        matches!(self, Novelty::New { .. })
    }

    /// The rule that knows it.
    pub fn known(&self) -> Option<(&str, &str)> {
        match self {
            Novelty::Known { title, issue, .. } => Some((title, issue)),
            _ => None,
        }
    }
}

/// The rule of [`Novelty::New`], as the page and the summaries show it.
pub fn new_rule(branch: &str, days: u64) -> String {
    format!(
        "no rule knows it, and it has not failed alike (the same fingerprint) on {branch} in the {days} days before"
    )
}

/// Whether `failure` is new, given the rule that matches it (if one does) and the runs on the
/// default branch `branch` in the window before it where its test failed (newest first;
/// `failed` of them in all, the first [`LOOKED`] read).
pub fn novelty(
    rule: Option<&FailureRule>,
    failure: &FailedTest,
    earlier: &[&RunFacts],
    failed: usize,
    branch: &str,
    days: u64,
) -> Novelty {
    if let Some(rule) = rule {
        return Novelty::Known { rule: rule.id.clone(), title: rule.title.clone(), issue: rule.issue.clone() };
    }
    let alike = earlier.iter().take(LOOKED).find(|run| {
        run.failures.iter().any(|f| {
            f.failed && f.suite == failure.suite && f.name == failure.name && f.fingerprint == failure.fingerprint
        })
    });
    match alike {
        Some(run) => Novelty::Seen { run: run.key.clone(), at: run.started },
        None => Novelty::New { branch: branch.to_string(), days, failed },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_rules::{FailureRules, RuleFields};

    fn failure(print: &str) -> FailedTest {
        FailedTest {
            suite: "crud".into(),
            name: "put".into(),
            id: 1,
            failed: true,
            quarantined: false,
            duration_ms: 1.0,
            fingerprint: print.into(),
            text: format!("text {print}"),
        }
    }

    fn run(key: &str, failures: Vec<FailedTest>) -> RunFacts {
        RunFacts { key: key.into(), pair: "linux/c".into(), commit: None, started: Some(5), duration_ms: 1.0, failures }
    }

    /// Failed alike before: seen, with the run; another text before, or none: new; a rule: known.
    #[test]
    fn new_seen_and_known() {
        let mut rules = FailureRules::default();
        let (alike, other) = (run("old", vec![failure("f1")]), run("older", vec![failure("f2")]));
        let seen = novelty(None, &failure("f1"), &[&other, &alike], 2, "main", NEW_DAYS);
        assert_eq!(seen, Novelty::Seen { run: "old".into(), at: Some(5) });
        let new = novelty(None, &failure("f3"), &[&other, &alike], 2, "main", NEW_DAYS);
        assert_eq!(new, Novelty::New { branch: "main".into(), days: 21, failed: 2 });
        assert!(new.is_new() && !seen.is_new());
        rules
            .add(RuleFields {
                title: Some("t".into()),
                issue: Some("https://x/1".into()),
                text: Some("f3".into()),
                ..RuleFields::default()
            })
            .unwrap();
        let f3 = failure("f3");
        let known = novelty(rules.matching(&f3.suite, &f3.name, &f3.text), &f3, &[], 0, "main", NEW_DAYS);
        assert_eq!(known.known(), Some(("t", "https://x/1")));
    }
}
