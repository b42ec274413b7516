//! The triage lifecycle's state, as the bucket's `.lifecycle` object holds it: the proposals
//! active now (quarantine a flaky test, release a quiet one, close a quiet rule's issue, reopen
//! a closed rule whose failures came back) and the history of their changes. A proposal is a
//! suggestion until a person confirms it (or the team turns on `serve --auto-apply`); what
//! activates and deactivates one is `analysis/lifecycle.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The lifecycle's name in the bucket (beside `.quarantine` and `.rules`).
pub const KEY: &str = ".lifecycle";
/// Events kept in the history (the newest).
const HISTORY: usize = 500;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lifecycle {
    pub active: Vec<Proposal>,
    #[serde(default)]
    pub history: Vec<Event>,
}

/// What a proposal would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Quarantine,
    Release,
    CloseRule,
    ReopenRule,
}

/// A proposal: what it would do to which test or rule, why (its rule and the measures that
/// crossed it, per window), and since when it is active.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// `<action> <suite>::<name>` or `<action> <rule id>`: one proposal per action and subject.
    pub id: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The rule it follows, in words.
    pub why: String,
    /// Each window (`3d`, `7d`, ...) and its measure when it activated.
    pub measures: BTreeMap<String, f64>,
    pub since: u64,
}

/// One change: `activated`, `deactivated` or `applied` (confirmed, or applied by itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub event: String,
    pub at: u64,
    pub proposal: Proposal,
}

impl Lifecycle {
    /// Notes `event` of `proposal` at `at` in the history, and answers it.
    pub fn note(&mut self, event: &str, at: u64, proposal: Proposal) -> Event {
        let happened = Event { event: event.to_string(), at, proposal };
        self.history.push(happened.clone());
        let over = self.history.len().saturating_sub(HISTORY);
        self.history.drain(..over);
        happened
    }
}
