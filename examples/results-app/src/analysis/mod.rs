//! Runs and digests in, verdicts out: what a test's outcome means beside its other runs, a
//! test's history, failures grouped, two runs or commits compared and what the quarantine
//! decides. Pure: no bucket, no web, types of its own.

pub mod classes;
pub mod fingerprint;
pub mod history;
pub mod quarantine;
pub mod rules;
