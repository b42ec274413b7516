//! The team's failure rules, as the bucket's `.rules` object holds them: a known problem, named
//! by a test pattern and/or a failure-text pattern, bound to an issue (its URL and title). Every
//! view groups the failures a rule matches under it instead of their fingerprints, and marks them
//! known rather than new; a change to a rule regroups every run the views read, since rules are
//! applied when a view is built, never stored with a run.
//!
//! Patterns: `*` stands for any run of characters, every other character for itself (case
//! counts). A test pattern matches a test's whole name or its whole `suite::name` (the pytest
//! plugin names a test by its node id, `tests/test_cart.py::test_total`, in the suite `cart`;
//! `crud::put` names node's `put` in the suite `crud`); a text pattern matches anywhere in the failure's message,
//! else its trace (their first 2,048 bytes). A rule with both matches failures that both match. The first rule that
//! matches a failure (in the order they were added) is its group.

use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::error::{AppError, AppResult};
use crate::model::{clip, glob, is_web_address, Test, MAX_LABEL};

/// The rules' name in the bucket (beside `.quarantine`).
pub const KEY: &str = ".rules";
/// The most rules kept (each failure of a view is tried against them all).
pub const MAX_RULES: usize = 500;
/// How much of a failure's text a text pattern is matched against (its message, else its trace).
pub const TEXT_MATCHED: usize = 2048;
/// The longest pattern, title and issue URL.
pub const MAX_PATTERN: usize = 1024;
const MAX_TITLE: usize = 300;
const MAX_URL: usize = 2048;
/// Changes kept in the history (the newest).
const HISTORY: usize = 500;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureRules {
    pub rules: Vec<FailureRule>,
    /// The number the next rule is given (`r<number>`): ids are never reused.
    #[serde(default)]
    pub next: u64,
    #[serde(default)]
    pub history: Vec<RuleChange>,
}

/// A known problem: which failures it is, and the issue that tracks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureRule {
    pub id: String,
    pub title: String,
    /// The issue's address (`http://` or `https://`).
    pub issue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// When it was added (ms since the epoch), and by whom.
    pub added: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When the issue was closed (its failures quiet), if it is; a closed rule still groups its
    /// failures, so that one coming back is seen to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<u64>,
}

/// One change: `add`, `edit`, `remove`, `close` or `reopen`, when, and the rule after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleChange {
    pub action: String,
    pub at: u64,
    pub rule: FailureRule,
}

/// What a rule is made of, as a person gives it (the command line, the page).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RuleFields {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub issue: Option<String>,
    #[serde(default)]
    pub test: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
}

/// The text of a failure that text patterns match: its message, else its trace, its first
/// [`TEXT_MATCHED`] bytes.
pub fn matched_text(test: &Test) -> &str {
    failure_text(test, TEXT_MATCHED)
}

/// A failure's text: its message, else its trace, its first `most` bytes (at a character's
/// boundary). What rules match and what fingerprints are made of.
pub fn failure_text(test: &Test, most: usize) -> &str {
    let text = match (&test.message, &test.detail.trace) {
        (Some(m), _) if !m.trim().is_empty() => m.as_str(),
        (_, Some(t)) => t.as_str(),
        _ => "",
    };
    let mut end = text.len().min(most);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl FailureRule {
    /// Whether the rule matches a failure of test `suite`/`name` whose text is `text`.
    pub fn matches(&self, suite: &str, name: &str, text: &str) -> bool {
        let test = self.test.as_deref().is_none_or(|p| glob(p, name) || glob(p, &format!("{suite}::{name}")));
        test && self.text.as_deref().is_none_or(|p| glob(&format!("*{p}*"), text))
    }

    /// Checks what a rule must be: a title, an issue's address, and at least one pattern, each
    /// of bounded length and free of control characters.
    pub fn check(&self) -> AppResult<()> {
        let fields = [("--title", Some(&self.title), MAX_TITLE), ("--issue", Some(&self.issue), MAX_URL)];
        let patterns = [("--test", self.test.as_ref(), MAX_PATTERN), ("--text", self.text.as_ref(), MAX_PATTERN)];
        for (field, value, most) in fields.into_iter().chain(patterns) {
            let Some(value) = value else { continue };
            if value.trim().is_empty() || value.len() > most || value.chars().any(char::is_control) {
                return Err(AppError::bad(format!("{field} must be 1 to {most} bytes, no control character"))
                    .at(field.trim_start_matches('-')));
            }
        }
        if self.test.is_none() && self.text.is_none() {
            return Err(AppError::bad("a rule needs a test pattern (--test) or a text pattern (--text), or both"));
        }
        if !is_web_address(&self.issue) {
            return Err(AppError::bad(format!("--issue {:?} is not an http(s) address", clip(&self.issue))).at("issue"));
        }
        if let Some(by) = &self.by {
            if by.trim().is_empty() || by.len() > MAX_LABEL || by.chars().any(char::is_control) {
                return Err(AppError::bad(format!("--by must be 1 to {MAX_LABEL} characters, no control character")));
            }
        }
        Ok(())
    }
}

impl FailureRules {
    /// The rules as the bucket holds them, made safe to apply: at most [`MAX_RULES`], each one
    /// that passes [`FailureRule::check`] (a hand-edited object may hold anything: an issue
    /// address the page would link, a pattern of any length).
    pub fn checked(mut self) -> FailureRules {
        self.rules.retain(|r| r.check().is_ok());
        self.rules.truncate(MAX_RULES);
        self
    }

    /// The first rule matching a failure of `suite`/`name` with text `text`.
    pub fn matching(&self, suite: &str, name: &str, text: &str) -> Option<&FailureRule> {
        self.rules.iter().find(|r| r.matches(suite, name, text))
    }

    /// Adds a rule made of `fields` (a title, an issue and a pattern needed); answers its id.
    pub fn add(&mut self, fields: RuleFields) -> AppResult<String> {
        if self.rules.len() >= MAX_RULES {
            return Err(AppError::bad(format!("the bucket keeps at most {MAX_RULES} rules: remove one first")));
        }
        let needed = |field: &str, value: Option<String>| {
            value.ok_or_else(|| AppError::bad(format!("a rule needs {field}")).at(field.trim_start_matches('-')))
        };
        // Never an id given before (nor a removed one's), even where a hand-written file has no
        // `next`.
        let ids = self.rules.iter().chain(self.history.iter().map(|c| &c.rule));
        let highest = ids.filter_map(|r| r.id.strip_prefix('r')?.parse::<u64>().ok()).max();
        self.next = self.next.max(1).max(highest.map_or(1, |h| h.saturating_add(1)));
        let rule = FailureRule {
            id: format!("r{}", self.next),
            title: needed("--title", fields.title)?,
            issue: needed("--issue", fields.issue)?,
            test: fields.test,
            text: fields.text,
            added: now_ms(),
            by: fields.by,
            closed: None,
        };
        rule.check()?;
        self.next += 1;
        self.rules.push(rule.clone());
        self.note("add", rule.clone());
        Ok(rule.id)
    }

    /// Changes rule `id`'s fields that `fields` gives (an empty pattern removes it).
    pub fn edit(&mut self, id: &str, fields: RuleFields) -> AppResult<()> {
        let rule = self.find(id)?;
        let mut edited = rule.clone();
        let pattern = |given: Option<String>, was: Option<String>| match given {
            Some(p) if p.is_empty() => None,
            Some(p) => Some(p),
            None => was,
        };
        edited.title = fields.title.unwrap_or(edited.title);
        edited.issue = fields.issue.unwrap_or(edited.issue);
        edited.test = pattern(fields.test, edited.test);
        edited.text = pattern(fields.text, edited.text);
        edited.check()?;
        *self.find(id)? = edited.clone();
        self.note("edit", edited);
        Ok(())
    }

    /// Removes rule `id`.
    pub fn remove(&mut self, id: &str) -> AppResult<()> {
        let rule = self.find(id)?.clone();
        self.rules.retain(|r| r.id != id);
        self.note("remove", rule);
        Ok(())
    }

    /// Closes rule `id` (`close`) at `at`, or reopens it (`reopen`).
    pub fn set_closed(&mut self, id: &str, closed: Option<u64>) -> AppResult<()> {
        let rule = self.find(id)?;
        rule.closed = closed;
        let rule = rule.clone();
        self.note(if closed.is_some() { "close" } else { "reopen" }, rule);
        Ok(())
    }

    fn find(&mut self, id: &str) -> AppResult<&mut FailureRule> {
        self.rules
            .iter_mut()
            .find(|r| r.id == id)
            .ok_or_else(|| AppError::not_found(format!("no rule {:?} (see `objstore-results rules list`)", clip(id))))
    }

    fn note(&mut self, action: &str, rule: FailureRule) {
        self.history.push(RuleChange { action: action.to_string(), at: now_ms(), rule });
        let over = self.history.len().saturating_sub(HISTORY);
        self.history.drain(..over);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(test: Option<&str>, text: Option<&str>) -> RuleFields {
        RuleFields {
            title: Some("crud.c's count is off by one".into()),
            issue: Some("https://github.com/o/r/issues/7".into()),
            test: test.map(str::to_string),
            text: text.map(str::to_string),
            by: None,
        }
    }

    /// A test pattern matches the whole `suite::name`, a text pattern anywhere; both, both.
    #[test]
    fn patterns_match_tests_and_texts() {
        let mut rules = FailureRules::default();
        let by_test = rules.add(fields(Some("tests/test_cart.py::test_*"), None)).unwrap();
        let by_text = rules.add(fields(None, Some("expected * got 3"))).unwrap();
        let both = rules.add(fields(Some("crud::*"), Some("AddressSanitizer"))).unwrap();
        assert_eq!((by_test.as_str(), by_text.as_str(), both.as_str()), ("r1", "r2", "r3"));
        let id = |suite: &str, name: &str, text: &str| rules.matching(suite, name, text).map(|r| r.id.clone());
        assert_eq!(id("tests/test_cart.py", "test_total", "boom").as_deref(), Some("r1"));
        assert_eq!(id("cart", "tests/test_cart.py::test_total", "boom").as_deref(), Some("r1"), "a node id");
        assert_eq!(id("tests/test_cart.py", "total", "boom"), None, "the whole name");
        assert_eq!(id("crud", "put", "crud.c:12: expected 2, got 3 (x)").as_deref(), Some("r2"));
        assert_eq!(id("crud", "put", "==1==ERROR: AddressSanitizer: heap-use-after-free").as_deref(), Some("r3"));
        assert_eq!(id("sql", "put", "==1==ERROR: AddressSanitizer: heap-use-after-free"), None);
        // Removed, a rule's id is not given again; an edit that empties both patterns is refused.
        rules.remove("r1").unwrap();
        assert_eq!(rules.add(fields(Some("a::b"), None)).unwrap(), "r4");
        let emptied = RuleFields { test: Some(String::new()), ..RuleFields::default() };
        assert!(rules.edit("r4", emptied).unwrap_err().to_string().contains("a test pattern"));
        assert!(rules.edit("r9", RuleFields::default()).is_err());
        let actions: Vec<&str> = rules.history.iter().map(|c| c.action.as_str()).collect();
        assert_eq!(actions, ["add", "add", "add", "remove", "add"]);
    }

    /// Bad fields are refused with what was wrong.
    #[test]
    fn a_rule_names_what_is_wrong() {
        let mut rules = FailureRules::default();
        let refused = |f: RuleFields| FailureRules::default().add(f).unwrap_err().to_string();
        assert!(refused(fields(None, None)).contains("--test"));
        assert!(refused(RuleFields { issue: Some("javascript:alert(1)".into()), ..fields(Some("a"), None) })
            .contains("not an http(s) address"));
        assert!(refused(RuleFields { title: None, ..fields(Some("a"), None) }).contains("--title"));
        assert!(refused(fields(Some("a\nb"), None)).contains("--test"));
        assert!(refused(fields(Some(&"*".repeat(MAX_PATTERN + 1)), None)).contains("1 to 1024"));
        rules.add(fields(Some("a"), None)).unwrap();
        assert!(rules.rules.len() == 1 && rules.next == 2);
        // A hand-written file: no `next`, and a rule whose issue the page must not link.
        let mut bad = rules.rules[0].clone();
        bad.issue = "javascript:alert(1)".into();
        let mut written = FailureRules { rules: vec![rules.rules[0].clone(), bad], next: 0, history: vec![] };
        assert_eq!(written.add(fields(Some("b"), None)).unwrap(), "r2", "after the highest id");
        let checked = written.checked();
        assert!(checked.rules.iter().all(|r| r.issue.starts_with("https://")) && checked.rules.len() == 2);
    }
}
