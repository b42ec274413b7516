//! Runs and digests in, verdicts out: each verdict's rule (`rules.rs`), what a test's outcome
//! means beside its other runs (`classes.rs`), a test's history, failures grouped by
//! fingerprint and what the quarantine decides. Pure: no bucket, no web, types of its own.

pub mod classes;
pub mod fingerprint;
pub mod flaky;
pub mod history;
pub mod impact;
pub mod lifecycle;
pub mod novelty;
pub mod quarantine;
pub mod rules;
