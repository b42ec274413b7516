//! Failures grouped: under the team's failure rules where one matches, else by fingerprint, a
//! failure's text with what differs between machines and runs taken out
//! (paths, line numbers, addresses, numbers, temporary names, thread ids), so that the same assert
//! failing on Windows/MSVC and on Linux/gcc is one group.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::analysis::impact::Impact;
use crate::analysis::novelty::Novelty;
use crate::model::failure_rules::{failure_text, matched_text, FailureRule, FailureRules};
use crate::model::{short_hash, Test};

/// A failed test where it failed: its pair (`platform/browser`), its run's key, and the test.
pub struct Failure<'a> {
    pub pair: String,
    pub run: String,
    pub test: &'a Test,
}

/// Failures grouped: under the first failure rule that matches them, else by fingerprint; the
/// groups that hit most pairs first (then most tests), each with its normalised text and the
/// first one's own message.
pub fn group<'a>(failures: impl IntoIterator<Item = Failure<'a>>, rules: &FailureRules) -> Vec<FailureGroup> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, FailureGroup> = HashMap::new();
    for f in failures {
        let print = fingerprint(f.test);
        let rule = rules.matching(&f.test.suite, &f.test.name, matched_text(f.test));
        let key = group_key(rule, &print);
        let group = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            let message = f.test.message.clone().or_else(|| f.test.detail.trace.clone()).unwrap_or_default();
            FailureGroup {
                key,
                fingerprint: print,
                rule: rule.map(RuleRef::of),
                text: normalised(f.test),
                message,
                pairs: BTreeSet::new(),
                tests: Vec::new(),
                owners: Vec::new(),
                impact: Impact::default(),
                novelty: None,
            }
        });
        group.pairs.insert(f.pair.clone());
        group.tests.push(PairTest {
            pair: f.pair,
            run: f.run,
            suite: f.test.suite.clone(),
            name: f.test.name.clone(),
            message: None,
            novelty: None,
        });
    }
    let mut found: Vec<FailureGroup> = order.into_iter().filter_map(|key| groups.remove(&key)).collect();
    // Stable: groups hitting as many pairs and tests keep the order they were met in.
    found.sort_by_key(|g| std::cmp::Reverse((g.pairs.len(), g.tests.len())));
    found
}

/// A failure's group: `rule <id>` when a rule matches it, else its fingerprint.
pub fn group_key(rule: Option<&FailureRule>, fingerprint: &str) -> String {
    match rule {
        Some(rule) => format!("rule {}", rule.id),
        None => fingerprint.to_string(),
    }
}

/// How much of a failure's normalised text tells it apart.
const TELLING_BYTES: usize = 600;
/// How much of a failure's text is read at most (a test's text is capped at 8 KB anyway).
const READ_BYTES: usize = 64 * 1024;

/// The failure's text as it is grouped: its message, else its trace's first lines, normalised.
pub fn normalised(test: &Test) -> String {
    // Normalised first, then cut: a long Linux path and a short Windows one leave the same text.
    let normal = normalise(failure_text(test, READ_BYTES));
    let mut cut = normal.len().min(TELLING_BYTES);
    while !normal.is_char_boundary(cut) {
        cut -= 1;
    }
    normal[..cut].to_string()
}

/// The group of a failure: a short hash of its normalised text.
pub fn fingerprint(test: &Test) -> String {
    format!("{:016x}", short_hash(normalised(test).as_bytes()))
}

/// Paths become their file's name, numbers `N`, addresses `0xADDR`, long hex and random names
/// `HEX`, and runs of white space one space.
pub fn normalise(text: &str) -> String {
    text.split_whitespace().map(word).collect::<Vec<_>>().join(" ")
}

/// One word of a failure's text, normalised.
fn word(word: &str) -> String {
    // A path (`/tmp/tmp.Ab12/crud.c:12:`, `tests/crud.c:12`, `C:\work\crud.c(12)`) is its
    // file's name.
    let word = match word.rfind(['/', '\\']) {
        Some(i) => &word[i + 1..],
        None => word,
    };
    let mut out = String::with_capacity(word.len());
    let chars: Vec<char> = word.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '0' && chars.get(i + 1).is_some_and(|x| *x == 'x' || *x == 'X') {
            let hex = chars[i + 2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            if hex > 0 {
                out.push_str("0xADDR");
                i += 2 + hex;
                continue;
            }
        }
        if c.is_ascii_alphanumeric() {
            // A run of letters and digits: a number, a long hex id or a random name, or a word.
            let run = chars[i..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
            let token: String = chars[i..i + run].iter().collect();
            let digits = token.bytes().filter(u8::is_ascii_digit).count();
            if digits == token.len() {
                out.push('N');
            } else if token.len() >= 8 && token.bytes().all(|b| b.is_ascii_hexdigit()) && digits > 0 {
                out.push_str("HEX");
            } else if out.ends_with("tmp.") && digits > 0 {
                // mktemp's name (`tmp.WFgXvsN3UE`): a temporary one.
                out.push_str("TMP");
            } else {
                out.push_str(&token);
            }
            i += run;
            continue;
        }
        out.push(c);
        i += 1;
    }
    // A place as compilers write it: `crud.c(12,5)` (MSVC) and `crud.c:12:5` (gcc) are `crud.c:N`.
    let mut place = out.replace("(N,N)", ":N").replace("(N)", ":N");
    while place.contains(":N:N") {
        place = place.replace(":N:N", ":N");
    }
    place
}

/// Failures alike: the rule that groups them or their fingerprint, the normalised text and
/// message of the first, where they failed, and what they cost.
#[derive(Serialize)]
pub struct FailureGroup {
    /// `rule <id>`, else the fingerprint.
    pub key: String,
    pub fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    pub text: String,
    pub message: String,
    pub pairs: BTreeSet<String>,
    pub tests: Vec<PairTest>,
    /// Who owns its tests (the team's CODEOWNERS, by the views).
    pub owners: Vec<String>,
    /// What it cost over the impact window (by the views).
    pub impact: Impact,
    /// Known, new or seen before (by the views): new when every failure of it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub novelty: Option<Novelty>,
}

/// A failure rule as a view names it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RuleRef {
    pub id: String,
    pub title: String,
    pub issue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed: Option<u64>,
}

impl RuleRef {
    pub fn of(rule: &FailureRule) -> RuleRef {
        RuleRef { id: rule.id.clone(), title: rule.title.clone(), issue: rule.issue.clone(), closed: rule.closed }
    }
}

/// A test of a run of a pair (`platform/browser`).
#[derive(Serialize)]
pub struct PairTest {
    pub pair: String,
    pub run: String,
    pub suite: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub novelty: Option<Novelty>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Detail, Status};

    fn failed(message: &str) -> Test {
        Test {
            name: "t".into(),
            status: Status::Failed,
            duration: 0.0,
            suite: "s".into(),
            message: Some(message.into()),
            detail: Detail::default(),
        }
    }

    /// The same assert on two machines is one group; another assert is another.
    #[test]
    fn what_differs_between_machines_is_taken_out() {
        let linux = failed("/home/ci/work/db/tests/crud.c:12: expected 2, got 3 (thread 140234, at 0x7ff540243d50)");
        let windows = failed("C:\\a\\db\\tests\\crud.c(14): expected 2, got 3 (thread 9, at 0x00401000)");
        let with_column = failed("tests/crud.c:14:7: expected 2, got 3 (thread 9, at 0x00401000)");
        assert_eq!(fingerprint(&linux), fingerprint(&with_column), "{}", normalised(&with_column));
        assert_eq!(fingerprint(&linux), fingerprint(&windows), "{} / {}", normalised(&linux), normalised(&windows));
        assert_eq!(normalised(&linux), "crud.c:N: expected N, got N (thread N, at 0xADDR)");
        let other = failed("/home/ci/work/db/tests/crud.c:12: expected a record, got none");
        assert_ne!(fingerprint(&linux), fingerprint(&other));
        let tmp = failed("cannot open /tmp/tmp.WFgXvsN3UE/state: no such file; run 4f3c2a1b9d");
        assert_eq!(normalised(&tmp), "cannot open state: no such file; run HEX");
        assert_eq!(normalise("tmp.WFgXvsN3UE failed"), "tmp.TMP failed");
        // Names with digits are words, not temporary names.
        assert_ne!(normalise("Int64Overflow"), normalise("Utf8Error"));
        // A long message over the cut groups alike whatever the length of its paths.
        let long = |path: &str| failed(&format!("{path}/crud.c:12: {}", "expected a record ".repeat(60)));
        assert_eq!(fingerprint(&long("/home/runner/work/project/project/tests")), fingerprint(&long("C:\\a")));
    }
}
