//! A test across runs: its suite, its name and which occurrence of that name it is, since
//! suites run twice (once per mechanism) repeat names.

use std::collections::HashMap;

use super::run::Test;

/// A test across runs: its suite, its name and which occurrence of that name it is.
pub type TestId = (String, String, usize);

/// Tests with their identity: suite, name, and which occurrence of that name (suites run twice,
/// once per mechanism, repeat names).
pub fn identified<'a, X>(tests: impl Iterator<Item = (X, &'a Test)>) -> impl Iterator<Item = (TestId, (X, &'a Test))> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    tests.map(move |(x, t)| {
        let n = seen.entry((&t.suite, &t.name)).or_default();
        *n += 1;
        ((t.suite.clone(), t.name.clone(), *n), (x, t))
    })
}
