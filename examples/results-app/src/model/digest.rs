//! A report file's digest, carried in its object name so that a listing alone draws the matrix:
//! the version, commit, branch, start and labels, and per suite its counts and the ids of its failed,
//! not-run and retried tests. S3 listings carry no user metadata, so the name is the only place
//! a listing can bring it from.
//!
//! A file's name is `<file id>.<digest>`, the digest fields joined by `.`:
//! `2.<version>.<commit>.<branch>.<start>.<labels>.<suite>.<suite>...`, where `<labels>` is
//! `key-value-key-value...`, and each `<suite>` is `name-passed-failed-skipped-failed ids-skipped
//! ids-retried ids`. Texts keep ASCII letters and digits and write any other byte as `_` and two
//! hex digits; the commit is its first 12 characters, the branch its first 32 bytes; counts and the start (ms, 0 when unknown)
//! are decimal; each ids field is 8 hex digits per test. A test's id is FNV-1a (32 bits) of
//! `suite \0 name \0 n`, n its occurrence of that suite and name in its file (1 first).
//!
//! A name segment longer than a file system takes (255 bytes), or a name longer than a bucket
//! takes (1,024 bytes with the prefix), carries no digest, and a reader GETs that file instead;
//! so does one with a digest it cannot read. The pytest plugin and the node reporter write the
//! same digest. A version 1 digest (written before branches) has no `<branch>`, and is read as
//! a run of no branch.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use serde_json::Value;

use crate::model::{check_label, Run, Status, Test, MAX_LABEL};

/// The digest format's version, its first field; [`BEFORE_BRANCHES`] is still read.
const FORMAT: &str = "2";
const BEFORE_BRANCHES: &str = "1";
/// The longest object name a bucket takes, its prefix included.
pub const MAX_KEY: usize = 1024;
/// The longest name segment a file system takes (a `file://` bucket's objects are files).
pub const MAX_SEGMENT: usize = 255;
/// How much of a commit a digest carries.
pub const COMMIT_CHARS: usize = 12;
/// How much of a branch a digest carries (bytes, cut at a character's boundary): branches are
/// told apart by this much of their names.
pub const BRANCH_BYTES: usize = 32;

/// The part of `branch` a digest carries, by which views match branches.
pub fn branch_key(branch: &str) -> &str {
    let mut end = branch.len().min(BRANCH_BYTES);
    while !branch.is_char_boundary(end) {
        end -= 1;
    }
    &branch[..end]
}

/// What the matrix needs of one report file.
#[derive(Debug, Clone, PartialEq)]
pub struct Digest {
    pub version: String,
    pub commit: Option<String>,
    /// The branch's first [`BRANCH_BYTES`] bytes; none when the run names none.
    pub branch: Option<String>,
    /// When the report says it started (ms), 0 when it does not.
    pub start: u64,
    pub labels: BTreeMap<String, String>,
    pub suites: Vec<SuiteDigest>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SuiteDigest {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
    /// Skipped, pending and other.
    pub skipped: u64,
    pub failed_ids: Vec<u32>,
    pub skipped_ids: Vec<u32>,
    /// Passed on a retry after failing.
    pub retried_ids: Vec<u32>,
}

/// A test's id in digests: FNV-1a (32 bits) of its suite, name and occurrence in its file,
/// as `<suite>\0<name>\0<occurrence in decimal>`.
pub fn test_id(suite: &str, name: &str, occurrence: usize) -> u32 {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = occurrence;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    [suite.as_bytes(), b"\0", name.as_bytes(), b"\0", &digits[at..]].iter().fold(FNV_OFFSET, |h, part| fnv(h, part))
}

const FNV_OFFSET: u32 = 0x811c_9dc5;

fn fnv(h: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(h, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// Each test of `run` with its digest id, in the file's order.
pub fn ids(run: &Run) -> Vec<u32> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    run.results
        .tests
        .iter()
        .map(|t| {
            let n = seen.entry((&t.suite, &t.name)).or_default();
            *n += 1;
            test_id(&t.suite, &t.name, *n)
        })
        .collect()
}

/// Whether a digest names the test by its id: it failed, was skipped or passed on a retry.
fn is_named(t: &Test) -> bool {
    t.status != Status::Passed || t.passed_on_retry()
}

fn key_of(t: &Test) -> (&str, &str) {
    (&t.suite, &t.name)
}

/// The build-variant labels of a report: its environment's texts, booleans and whole numbers
/// within ±2^53 (which every language writes alike; other numbers are no label), but for those
/// that repeat the run's own platform, runtime or version (`osPlatform`, `runtime`, `version`,
/// as the reporters write them): they say nothing the name does not.
pub fn labels(run: &Run) -> BTreeMap<String, String> {
    let repeats = |key: &str, value: &Value| {
        let own = match key {
            "osPlatform" => &run.platform,
            "runtime" => &run.browser,
            "version" => &run.version,
            _ => return false,
        };
        value.as_str() == Some(own.as_str())
    };
    run.results
        .environment
        .iter()
        .filter(|(key, value)| !repeats(key, value))
        .filter_map(|(key, value)| match value {
            Value::String(s) => Some((key.clone(), s.clone())),
            Value::Bool(b) => Some((key.clone(), b.to_string())),
            Value::Number(n) => {
                n.as_i64().filter(|i| i.unsigned_abs() <= 1 << 53).map(|i| (key.clone(), i.to_string()))
            }
            _ => None,
        })
        .collect()
}

/// The largest count a digest is believed to hold (a name is untrusted: sums must not overflow).
const MAX_COUNT: u64 = 1_000_000_000;

/// A count or time written in decimal digits only (no sign).
fn decimal(field: &str) -> Option<u64> {
    (!field.is_empty() && field.bytes().all(|b| b.is_ascii_digit())).then(|| field.parse().ok()).flatten()
}

/// Two hex digits, exactly.
fn hex_byte(text: &[u8]) -> Option<u8> {
    let hex = std::str::from_utf8(text).ok().filter(|h| h.len() == 2 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    u8::from_str_radix(hex, 16).ok()
}

impl Digest {
    /// A digest of version 1 at `commit` holding `suites` (for tests that weigh runs).
    #[cfg(test)]
    pub fn at_commit(commit: &str, suites: Vec<SuiteDigest>) -> Digest {
        Digest {
            version: "1".into(),
            commit: Some(commit.into()),
            branch: None,
            start: 0,
            labels: Default::default(),
            suites,
        }
    }

    /// The digest of a report file.
    pub fn of<'r>(run: &'r Run) -> Digest {
        let tests = &run.results.tests;
        // Only the tests a digest names need ids (their occurrences are counted, nobody
        // else's): a report that all passed hashes no name.
        let wanted: HashSet<(&str, &str)> = tests.iter().filter(|t| is_named(t)).map(key_of).collect();
        let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
        let mut id_of = |t: &'r Test| {
            let key = key_of(t);
            (!wanted.is_empty() && wanted.contains(&key)).then(|| {
                let n = seen.entry(key).or_default();
                *n += 1;
                test_id(key.0, key.1, *n)
            })
        };
        // By name; a suite's tests come together, so the last one's is looked up first.
        let mut order: BTreeMap<&str, usize> = BTreeMap::new();
        let mut digests: Vec<SuiteDigest> = Vec::new();
        let mut last: Option<(&str, usize)> = None;
        for t in tests {
            let at = match last {
                Some((name, at)) if name == t.suite => at,
                _ => {
                    let at = *order.entry(&t.suite).or_insert_with(|| {
                        digests.push(SuiteDigest { name: t.suite.clone(), ..Default::default() });
                        digests.len() - 1
                    });
                    last = Some((&t.suite, at));
                    at
                }
            };
            let (suite, id) = (&mut digests[at], id_of(t));
            match t.status {
                Status::Passed => suite.passed += 1,
                Status::Failed => {
                    suite.failed += 1;
                    suite.failed_ids.extend(id);
                }
                _ => {
                    suite.skipped += 1;
                    suite.skipped_ids.extend(id);
                }
            }
            if t.passed_on_retry() {
                suite.retried_ids.extend(id);
            }
        }
        Digest {
            version: run.version.clone(),
            commit: run.ci.commit.as_ref().map(|c| c.chars().take(COMMIT_CHARS).collect()),
            branch: run.ci.branch.as_deref().map(|b| branch_key(b).to_string()),
            start: run.results.summary.start,
            labels: labels(run),
            suites: order.into_values().map(|at| std::mem::take(&mut digests[at])).collect(),
        }
    }

    /// The encoded digest of `run` for its object name, unless it names more tests than a
    /// name's segment could hold (8 hex digits each), or is a rerun: then none is worked out.
    pub fn for_name(run: &Run) -> Option<String> {
        // A rerun's counts are attempts of its run's tests: only its run's bodies can fold them.
        if run.ci.rerun {
            return None;
        }
        let named = run.results.tests.iter().filter(|t| is_named(t)).count();
        (named * 8 <= MAX_SEGMENT).then(|| Digest::of(run).encode())
    }

    /// The digest as a name segment's text.
    pub fn encode(&self) -> String {
        let mut fields = vec![FORMAT.to_string(), escape(&self.version), escape(self.commit.as_deref().unwrap_or(""))];
        fields.push(escape(self.branch.as_deref().unwrap_or("")));
        fields.push(self.start.to_string());
        fields.push(self.labels.iter().flat_map(|(k, v)| [escape(k), escape(v)]).collect::<Vec<_>>().join("-"));
        for s in &self.suites {
            let hex = |ids: &[u32]| {
                ids.iter().fold(String::new(), |mut out, id| {
                    let _ = write!(out, "{id:08x}");
                    out
                })
            };
            fields.push(
                [escape(&s.name), s.passed.to_string(), s.failed.to_string(), s.skipped.to_string()]
                    .into_iter()
                    .chain([hex(&s.failed_ids), hex(&s.skipped_ids), hex(&s.retried_ids)])
                    .collect::<Vec<_>>()
                    .join("-"),
            );
        }
        fields.join(".")
    }

    /// The digest a name segment carries; `None` when it carries none or one this reader cannot
    /// trust (names are written by anyone who may write the bucket).
    pub fn decode(text: &str) -> Option<Digest> {
        if text.len() > MAX_KEY {
            return None;
        }
        let mut fields = text.split('.');
        let has_branch = match fields.next()? {
            FORMAT => true,
            BEFORE_BRANCHES => false,
            _ => return None,
        };
        let version = unescape(fields.next()?).filter(|v| check_label("version", v).is_ok())?;
        let commit = match unescape(fields.next()?)? {
            c if c.is_empty() => None,
            c => Some(Some(c).filter(|c| c.len() <= COMMIT_CHARS && check_label("commit", c).is_ok())?),
        };
        let branch = match has_branch {
            false => None,
            true => match unescape(fields.next()?)? {
                b if b.is_empty() => None,
                b => Some(Some(b).filter(|b| b.len() <= BRANCH_BYTES && !b.contains(char::is_control))?),
            },
        };
        let start = decimal(fields.next()?)?;
        let labels = fields.next()?;
        let labels: Vec<String> =
            if labels.is_empty() { Vec::new() } else { labels.split('-').map(unescape).collect::<Option<_>>()? };
        if !labels.len().is_multiple_of(2) {
            return None;
        }
        let labels = labels.chunks(2).map(|kv| (kv[0].clone(), kv[1].clone())).collect();
        let suites = fields.map(suite_of).collect::<Option<Vec<_>>>()?;
        Some(Digest { version, commit, branch, start, labels, suites })
    }
}

/// A text as a digest field: ASCII letters and digits as they are, any other byte `_XX`.
fn escape(text: &str) -> String {
    text.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02X}");
        }
        out
    })
}

fn unescape(field: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(field.len());
    let mut rest = field.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match b {
            b'_' => {
                bytes.push(hex_byte(tail.get(..2)?)?);
                rest = &tail[2..];
            }
            b if b.is_ascii_alphanumeric() => {
                bytes.push(b);
                rest = tail;
            }
            _ => return None,
        }
    }
    String::from_utf8(bytes).ok()
}

fn suite_of(field: &str) -> Option<SuiteDigest> {
    let parts: Vec<&str> = field.split('-').collect();
    let [name, passed, failed, skipped, failed_ids, skipped_ids, retried_ids] = parts[..] else { return None };
    let name = unescape(name).filter(|n| !n.is_empty() && n.len() <= MAX_LABEL * 4)?;
    let ids = |hex: &str| -> Option<Vec<u32>> {
        if !hex.len().is_multiple_of(8) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        (0..hex.len()).step_by(8).map(|i| u32::from_str_radix(&hex[i..i + 8], 16).ok()).collect()
    };
    let suite = SuiteDigest {
        name,
        passed: decimal(passed).filter(|n| *n <= MAX_COUNT)?,
        failed: decimal(failed)?,
        skipped: decimal(skipped)?,
        failed_ids: ids(failed_ids)?,
        skipped_ids: ids(skipped_ids)?,
        retried_ids: ids(retried_ids)?,
    };
    // The ids are the counts' tests: a name that says otherwise is not believed.
    (suite.failed_ids.len() as u64 == suite.failed && suite.skipped_ids.len() as u64 == suite.skipped).then_some(suite)
}

/// The file segment of a report's object name: `<file id>.<digest>` (`digest` encoded), or the
/// id alone when the whole name (`<prefix><run key>/<segment>`, `fixed` bytes besides the
/// segment) would not fit.
pub fn file_segment(file_id: &str, digest: Option<&str>, fixed: usize) -> String {
    match digest.map(|digest| format!("{file_id}.{digest}")) {
        Some(with) if with.len() <= MAX_SEGMENT && fixed + with.len() <= MAX_KEY => with,
        _ => file_id.to_string(),
    }
}

/// The digest a report's object name carries, if any (see [`Digest::decode`]).
pub fn of_key(key: &str) -> Option<Digest> {
    let file = key.rsplit('/').next()?;
    Digest::decode(file.split_once('.')?.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run() -> Run {
        let run: Run = serde_json::from_value(json!({"platform": "linux", "browser": "gcc", "version": "1.2",
            "ci": {"commit": "0123456789abcdef0123456789abcdef01234567"},
            "results": {"tool": {"name": "ctest"}, "environment": {"build": "debug", "cores": 2, "x": [1]},
                "summary": {"tests": 5, "passed": 2, "failed": 2, "skipped": 1, "pending": 0, "other": 0,
                    "start": 1700000000000u64, "stop": 1700000000100u64},
                "tests": [
                    {"name": "a", "suite": "crud", "status": "passed", "duration": 1},
                    {"name": "a", "suite": "crud", "status": "failed", "duration": 1},
                    {"name": "b", "suite": "crud", "status": "passed", "duration": 1, "flaky": true, "retries": 1},
                    {"name": "c", "suite": "sql", "status": "skipped", "duration": 0},
                    {"name": "d", "suite": "sql", "status": "failed", "duration": 1}]}}))
        .unwrap();
        run.check().unwrap();
        run
    }

    /// What a digest holds comes back from its name segment, and ids count occurrences.
    #[test]
    fn a_digest_comes_back_from_its_name() {
        let run = run();
        let digest = Digest::of(&run);
        assert_eq!(digest.suites.len(), 2);
        let crud = &digest.suites[0];
        assert_eq!((crud.passed, crud.failed, crud.skipped), (2, 1, 0));
        assert_eq!(crud.failed_ids, [test_id("crud", "a", 2)]);
        assert_eq!(crud.retried_ids, [test_id("crud", "b", 1)]);
        assert_ne!(test_id("crud", "a", 1), test_id("crud", "a", 2));
        assert_eq!(digest.labels, BTreeMap::from([("build".into(), "debug".into()), ("cores".into(), "2".into())]));
        let key = format!("linux/gcc/9999-aa/{}", file_segment("f1", Some(&digest.encode()), 20));
        assert!(key.len() < 200, "{key}: {} bytes", key.len());
        assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b)), "{key}");
        assert_eq!(of_key(&key), Some(digest));
        // Pinned: the Python and Node writers' tests pin the same id.
        assert_eq!(test_id("crud", "a", 1), 0xc6ef_12d9);
    }

    /// A name with no digest, a digest that does not parse, lies about its counts, or names a
    /// wrong commit, is none: the reader reads the body instead.
    #[test]
    fn a_digest_that_cannot_be_trusted_is_none() {
        assert_eq!(of_key("linux/gcc/9999-aa/0123456789abcdef"), None);
        assert_eq!(of_key("linux/gcc/9999-aa/f1.!!!"), None);
        assert_eq!(of_key("linux/gcc/9999-aa/f1.1.1_2E0..0..crud-1-0-0"), None, "a suite missing its ids");
        assert!(of_key("linux/gcc/9999-aa/f1.1.1_2E0..0..crud-1-0-0---").is_some());
        for odd in [
            "f1.1.1_2E0..+0..crud-1-0-0---",
            "f1.1.1_+E0..0..crud-1-0-0---",
            "f1.1.1_2E0..0..crud-+1-0-0---",
            "f1.1.1_2E0..0..crud-18446744073709551615-0-0---",
            "f1.1.1_2E0..0..crud-1-1-0-+0000001--",
        ] {
            assert_eq!(of_key(&format!("linux/gcc/9999-aa/{odd}")), None, "{odd}");
        }
        let mut digest = Digest::of(&run());
        digest.suites[0].failed = 5;
        assert_eq!(Digest::decode(&digest.encode()), None);
        let mut digest = Digest::of(&run());
        digest.commit = Some("<script>".into());
        assert_eq!(Digest::decode(&digest.encode()), None);
        let mut digest = Digest::of(&run());
        digest.branch = Some("x".repeat(BRANCH_BYTES + 1));
        assert_eq!(Digest::decode(&digest.encode()), None, "a branch longer than digests carry");
    }

    /// A branch is carried by its first 32 bytes, cut at a character; a digest written before
    /// branches (version 1) is read as a run of no branch.
    #[test]
    fn a_branch_is_carried_and_a_digest_before_branches_still_read() {
        let mut run = run();
        run.ci.branch = Some(format!("feature/{}é-fix", "x".repeat(23)));
        let digest = Digest::of(&run);
        assert_eq!(digest.branch.as_deref(), Some(format!("feature/{}", "x".repeat(23)).as_str()), "é cut whole");
        assert_eq!(Digest::decode(&digest.encode()), Some(digest.clone()));
        assert!(digest.encode().starts_with("2."), "{}", digest.encode());
        let before = of_key("linux/gcc/9999-aa/f1.1.1_2E0.0123456789ab.7..crud-1-0-0---").unwrap();
        assert_eq!((before.branch, before.commit.as_deref(), before.start), (None, Some("0123456789ab"), 7));
        assert_eq!(branch_key("main"), "main");
    }

    /// The digest the Python and Node writers check they make too (tests/fixtures/digest.json).
    #[test]
    fn the_pinned_digest() {
        let fixture: Value = serde_json::from_str(include_str!("../../tests/fixtures/digest.json")).unwrap();
        let run: Run = serde_json::from_value(fixture["report"].clone()).unwrap();
        run.check().unwrap();
        let digest = Digest::of(&run);
        assert_eq!(digest.encode(), fixture["digest"].as_str().unwrap());
        assert_eq!(Digest::decode(&digest.encode()), Some(digest));
    }

    /// A digest that would make the name too long is left out.
    #[test]
    fn a_name_too_long_carries_no_digest() {
        let run = run();
        assert_eq!(file_segment("f1", Digest::for_name(&run).as_deref(), MAX_KEY - 10), "f1");
        let mut many = run.clone();
        for i in 0..40 {
            many.results.tests.push(crate::model::Test { name: format!("t{i}"), ..many.results.tests[1].clone() });
        }
        many.results.summary = crate::model::Summary::of(&many.results.tests, 1, 2);
        assert_eq!(file_segment("f1", Digest::for_name(&many).as_deref(), 20), "f1", "a segment over 255 bytes");
    }
}
