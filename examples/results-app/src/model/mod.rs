//! The stored result format and its names: what a run is, how its objects are named, a file's
//! digest in its name, whose a CI run is, reruns folded into their run, a test across runs, the quarantine's body and the failure rules. Every other room speaks
//! these words; this room imports only the error and the clock.

pub mod codeowners;
pub mod digest;
pub mod failure_rules;
pub mod lifecycle;
mod names;
pub mod quarantine;
mod rerun;
mod run;
mod run_title;
mod scope;
mod test_id;

pub use names::*;
pub use rerun::*;
pub use run::*;
pub use run_title::*;
pub use scope::*;
pub use test_id::*;
