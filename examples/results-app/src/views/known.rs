//! The failure rules as a view: each rule with what it matched over the impact window (its
//! impact, and its newest failures), so that a team sees which known problems cost the most
//! and which have gone quiet.

use super::*;
use crate::analysis::impact::impacts;
use crate::model::failure_rules::FailureRules;

/// The newest failures a rule lists.
const LISTED: usize = 20;

impl Viewer {
    /// Every failure rule (one GET of `.rules`), each with its impact over each pair's newest
    /// runs and the newest failures it matched there.
    pub fn rules(&self) -> View<RulesView> {
        let (rules, requests) = self.failure_rules()?;
        let mut view = self.view(|db| {
            let window = self.impact_window(db)?;
            let mut impacts = impacts(window.iter().map(Arc::as_ref), |f| f.group(&rules));
            let mut newest: Vec<&crate::analysis::impact::RunFacts> = window.iter().map(Arc::as_ref).collect();
            newest.sort_by_key(|r| std::cmp::Reverse(r.started));
            let mut by_rule: HashMap<String, Vec<PairTest>> = HashMap::new();
            for run in newest {
                for f in run.failures.iter().filter(|f| f.failed) {
                    let Some(rule) = rules.matching(&f.suite, &f.name, &f.text) else { continue };
                    let listed = by_rule.entry(rule.id.clone()).or_default();
                    if listed.len() < LISTED {
                        listed.push(PairTest {
                            pair: run.pair.clone(),
                            run: run.key.clone(),
                            suite: f.suite.clone(),
                            name: f.name.clone(),
                            message: Some(first_line(&f.text, 200)),
                            novelty: None,
                        });
                    }
                }
            }
            let listed = rules
                .rules
                .iter()
                .map(|rule| {
                    let key = fingerprint::group_key(Some(rule), "");
                    let failures = by_rule.remove(&rule.id).unwrap_or_default();
                    RuleListed { rule: rule.clone(), impact: impacts.remove(&key).unwrap_or_default(), failures }
                })
                .collect();
            Ok(RulesView { rules: listed, triage: TriageRules::new(self.new_days, &*self.newest(db)?) })
        })?;
        view.add_requests(requests);
        Ok(view)
    }

    /// Changes the failure rules with `change`, written back with `If-Match` (another editor's
    /// change is read and `change` made again on it); answers what `change` said.
    pub fn edit_rules(&self, change: impl Fn(&mut FailureRules) -> AppResult<String>) -> AppResult<String> {
        Ok(crate::store::documents::edit(&self.target, change)?.1)
    }
}
