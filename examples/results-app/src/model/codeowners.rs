//! A CODEOWNERS file (GitHub's and GitLab's syntax), and the owners it gives a test. Each line
//! is a path pattern and its owners; the last pattern that matches a path decides (a pattern
//! with no owners leaves the path unowned). GitLab's sections (`[Docs]`, `^[Optional]`, with
//! default owners after the heading) each decide for themselves, and the owners of every section
//! are joined. A test's path is its suite's name (`tests/test_cart.py`, `src/cart/cart.test.ts`),
//! else what its name gives before `::` (pytest's node ids).

use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};

/// The bucket's own copy, beside the runs (as `.quarantine` is).
pub const KEY: &str = ".codeowners";
/// The largest CODEOWNERS taken (GitHub reads the first 3 MB).
pub const MAX_BYTES: usize = 3 * 1024 * 1024;

/// The file as the bucket keeps it: its text, and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub text: String,
    /// The file's name as it was given, and when (ms since the epoch).
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub at: u64,
}

impl Stored {
    /// Whether two copies hold the same rules, wherever and whenever each was kept (a runner's
    /// checkout path differs from machine to machine: it must not rewrite the copy every run).
    pub fn same_file(a: &Stored, b: &Stored) -> bool {
        a.text == b.text
    }
}

/// Parsed rules, by section (the unnamed one first).
#[derive(Debug, Default)]
pub struct CodeOwners {
    sections: Vec<Vec<Rule>>,
}

#[derive(Debug)]
struct Rule {
    segments: Vec<String>,
    /// Whether a directory it names owns what is under it (`docs/*` owns docs' own files only).
    owns_below: bool,
    dir_only: bool,
    owners: Vec<String>,
}

impl CodeOwners {
    /// Parses `text`; a line that is not a pattern and owners is named in the error.
    pub fn parse(text: &str) -> AppResult<CodeOwners> {
        if text.len() > MAX_BYTES {
            return Err(AppError::bad(format!("a CODEOWNERS file holds at most {MAX_BYTES} bytes")));
        }
        let mut sections = vec![Vec::new()];
        let mut defaults: Vec<String> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(heading) = section_heading(line) {
                sections.push(Vec::new());
                defaults = heading;
                continue;
            }
            let mut words = line.split_whitespace();
            let pattern = words.next().unwrap_or_default().replace("\\#", "#");
            let mut owners: Vec<String> = words.take_while(|w| !w.starts_with('#')).map(str::to_string).collect();
            if owners.is_empty() {
                owners = defaults.clone();
            }
            let rule = Rule::of(&pattern).ok_or_else(|| {
                AppError::bad(format!(
                    "CODEOWNERS line {}: {pattern:?} is not a pattern (no `!`, no `[...]`, at most 8 `*`, 1,024 bytes)",
                    number + 1
                ))
            })?;
            sections.last_mut().expect("one section at least").push(Rule { owners, ..rule });
        }
        Ok(CodeOwners { sections })
    }

    /// The owners of `path` (a file's path from the repository's root), each once.
    pub fn of_path(&self, path: &str) -> Vec<String> {
        let segments: Vec<&str> = path.trim_start_matches("./").trim_start_matches('/').split('/').collect();
        let mut owners: Vec<String> = Vec::new();
        for section in &self.sections {
            if let Some(rule) = section.iter().rev().find(|rule| rule.matches(&segments)) {
                for owner in &rule.owners {
                    if !owners.contains(owner) {
                        owners.push(owner.clone());
                    }
                }
            }
        }
        owners
    }

    /// The owners of a test: by its suite's path, else by its name's part before `::`.
    pub fn of_test(&self, suite: &str, name: &str) -> Vec<String> {
        let from_name = name.split_once("::").map(|(path, _)| path);
        [Some(suite), from_name]
            .into_iter()
            .flatten()
            .map(|path| self.of_path(path))
            .find(|owners| !owners.is_empty())
            .unwrap_or_default()
    }
}

/// A GitLab section's heading (`[Docs]`, `^[Optional][2] @owner`): its default owners.
fn section_heading(line: &str) -> Option<Vec<String>> {
    let rest = line.strip_prefix('^').unwrap_or(line).strip_prefix('[')?;
    let (_, after) = rest.split_once(']')?;
    // An approvals count may follow: `[Docs][2]`.
    let after = match after.strip_prefix('[') {
        Some(count) => count.split_once(']')?.1,
        None => after,
    };
    Some(after.split_whitespace().take_while(|w| !w.starts_with('#')).map(str::to_string).collect())
}

impl Rule {
    /// A pattern: anchored at the root when it begins with `/` or holds one before its end; a
    /// directory only when it ends with `/`.
    fn of(pattern: &str) -> Option<Rule> {
        // Wildcards make matching search: a pattern holds a few (no file needs more). GitHub
        // takes no negation (`!`) and no character range (`[a-z]`).
        if pattern.len() > 1024 || pattern.matches('*').count() > 8 || pattern.starts_with('!') || pattern.contains('[')
        {
            return None;
        }
        let dir_only = pattern.ends_with('/') && pattern.len() > 1;
        let body = pattern.trim_end_matches('/');
        let anchored = body.starts_with('/') || body.trim_start_matches('/').contains('/');
        let body = body.trim_start_matches('/');
        if body.is_empty() && pattern != "/" {
            return None;
        }
        let mut segments: Vec<String> = if anchored { Vec::new() } else { vec!["**".into()] };
        segments.extend(body.split('/').filter(|s| !s.is_empty()).map(str::to_string));
        let owns_below = segments.last().is_none_or(|last| last != "*");
        Some(Rule { segments, owns_below, dir_only, owners: Vec::new() })
    }

    /// Whether the rule matches `path` itself (a file), or a directory it is under.
    fn matches(&self, path: &[&str]) -> bool {
        (1..=path.len()).any(|end| {
            let is_file = end == path.len();
            if is_file && self.dir_only {
                return false;
            }
            if !is_file && !self.owns_below {
                return false;
            }
            segments_match(&self.segments, &path[..end])
        })
    }
}

/// Pattern segments against path segments, `**` standing for any number of them.
fn segments_match(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => (0..=path.len()).any(|skip| segments_match(rest, &path[skip..])),
        Some((first, rest)) => path
            .split_first()
            .is_some_and(|(segment, left)| glob(first.as_bytes(), segment.as_bytes()) && segments_match(rest, left)),
    }
}

/// One segment against a pattern of `*` (any run) and `?` (any one character).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GITHUB: &str = "\
# The whole repository, then narrower rules, the last that matches winning.
*       @org/everyone
*.js    @js-owner
/build/logs/ @doctocat
docs/*  docs@example.com
apps/   @octocat
/scripts/ @doctocat @octocat
/apps/github
";

    #[test]
    fn the_last_matching_pattern_decides() {
        let owners = CodeOwners::parse(GITHUB).unwrap();
        let of = |path: &str| owners.of_path(path);
        assert_eq!(of("README.md"), ["@org/everyone"]);
        assert_eq!(of("src/cart.js"), ["@js-owner"]);
        assert_eq!(of("build/logs/today.txt"), ["@doctocat"]);
        assert_eq!(of("docs/getting-started.md"), ["docs@example.com"]);
        assert_eq!(of("docs/build-app/troubleshooting.md"), ["@org/everyone"], "docs/* owns docs' own files only");
        assert_eq!(of("src/apps/main.rs"), ["@octocat"], "apps/ anywhere");
        assert_eq!(of("scripts/deploy.sh"), ["@doctocat", "@octocat"]);
        assert_eq!(of("apps/github/x.rb"), Vec::<String>::new(), "a pattern without owners leaves it unowned");
    }

    #[test]
    fn gitlab_sections_each_decide_and_join() {
        let text = "* @all\n[Docs] @docs-team\ndocs/\n^[Database][2] @dba\n*.sql\n";
        let owners = CodeOwners::parse(text).unwrap();
        assert_eq!(owners.of_path("docs/a.md"), ["@all", "@docs-team"]);
        assert_eq!(owners.of_path("db/schema.sql"), ["@all", "@dba"]);
    }

    #[test]
    fn a_test_is_owned_by_its_suite_or_its_node_id() {
        let owners = CodeOwners::parse("tests/cart/ @cart\n").unwrap();
        assert_eq!(owners.of_test("tests/cart/test_total.py", "test_sum"), ["@cart"]);
        assert_eq!(owners.of_test("cart", "tests/cart/test_total.py::test_sum"), ["@cart"]);
        assert!(owners.of_test("crud", "put").is_empty());
        let everyone = CodeOwners::parse("* @all\ncursor @cursor-team\n").unwrap();
        assert_eq!(everyone.of_test("cursor", "walk"), ["@cursor-team"], "a suite's name is a path at the root");
    }
}
