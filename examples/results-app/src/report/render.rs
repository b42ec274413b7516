//! A summary's parts written out: Markdown for a job summary or a pull request's comment, plain
//! text for a terminal. Markdown stays inside GitHub's smallest limit (a comment's 65,536
//! characters) however many tests failed: long parts fold into `<details>` and what does not fit
//! is counted, with the page named for the rest.

/// The most bytes a Markdown summary takes (a pull request comment holds 65,536 characters; a
/// job summary 1 MiB).
pub const MARKDOWN_LIMIT: usize = 60_000;
/// The most tests a section lists in a terminal (the rest are counted).
const LISTED_TEXT: usize = 25;
/// The most tests a Markdown section lists before the budget is even asked.
const LISTED_MARKDOWN: usize = 500;
/// Tests a Markdown section shows before the rest fold into `<details>`.
const OPEN: usize = 10;
/// Pairs a Markdown table shows unfolded.
const OPEN_PAIRS: usize = 12;
/// The longest suite or test name a summary quotes.
const NAME: usize = 200;

/// A summary's parts, whichever view they come from.
pub struct Parts {
    pub title: String,
    /// The commits, branches and CI links the runs name (each one once).
    pub source: Source,
    /// Per pair: its name, its run's key and passed, failed and skipped counts.
    pub pairs: Vec<(String, String, [u64; 3])>,
    pub sections: Vec<Section>,
    /// How many failures the quarantine holds.
    pub quarantined: usize,
    pub cost: String,
}

/// Where the runs came from.
#[derive(Default)]
pub struct Source {
    pub commits: Vec<String>,
    pub branches: Vec<String>,
    pub urls: Vec<String>,
}

impl Source {
    /// Adds one run's commit, branch and CI link, each kept once.
    pub fn add(&mut self, commit: Option<&str>, branch: Option<&str>, url: Option<&str>) {
        for (list, value) in [(&mut self.commits, commit), (&mut self.branches, branch), (&mut self.urls, url)] {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                if !list.iter().any(|v| v == value) {
                    list.push(value.to_string());
                }
            }
        }
    }
}

impl Source {
    /// The commits (short) and branches the runs name, as words: `("commit", "0123456789ab")`.
    fn named(&self) -> Vec<(&'static str, String)> {
        let commits: Vec<String> = self.commits.iter().map(|c| short(c)).collect();
        [("commit", commits), ("branch", self.branches.clone())]
            .into_iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(what, names)| (what, some_of(&names, 3)))
            .collect()
    }
}

/// A titled list of tests; `open` sections show their first tests unfolded.
pub struct Section {
    pub title: &'static str,
    pub tests: Vec<Listed>,
    pub open: bool,
}

/// One test in a section, with every pair it was listed on and the first line of its failure.
pub struct Listed {
    pub suite: String,
    pub name: String,
    pub marks: Vec<&'static str>,
    pub pairs: Vec<String>,
    pub line: Option<String>,
    /// Who owns it (the team's CODEOWNERS), written without notifying anyone.
    pub owners: Vec<String>,
    /// The issue of the failure rule that knows it: its title and address.
    pub issue: Option<(String, String)>,
}

/// Tests listed once each, with the pairs they were seen on (each once) and every mark they
/// had on any of them, in the order first met.
pub fn grouped(tests: Vec<Listed>) -> Vec<Listed> {
    let mut out: Vec<Listed> = Vec::new();
    let mut at = std::collections::HashMap::new();
    for test in tests {
        match at.get(&(test.suite.clone(), test.name.clone())) {
            Some(&i) => {
                let listed: &mut Listed = &mut out[i];
                for pair in test.pairs {
                    if !listed.pairs.contains(&pair) {
                        listed.pairs.push(pair);
                    }
                }
                for mark in test.marks {
                    if !listed.marks.contains(&mark) {
                        listed.marks.push(mark);
                    }
                }
                if listed.line.is_none() {
                    listed.line = test.line;
                }
            }
            None => {
                at.insert((test.suite.clone(), test.name.clone()), out.len());
                out.push(test);
            }
        }
    }
    out
}

impl Parts {
    /// The summary in one line, before anything else: what a reviewer reads first.
    fn verdict(&self) -> Option<String> {
        if self.pairs.is_empty() {
            return None;
        }
        let sum = |i: usize| self.pairs.iter().map(|(_, _, c)| c[i]).fold(0u64, u64::saturating_add);
        let pairs = self.pairs.len() as u64;
        let failing = self.pairs.iter().filter(|(_, _, c)| c[1] > 0).count() as u64;
        Some(match sum(1) {
            0 => format!("Passed: {} on {}, none failed.", plural(sum(0), "test"), plural(pairs, "pair")),
            failed => {
                let held = match self.quarantined as u64 {
                    0 => String::new(),
                    q if q == failed => ", all of them quarantined".into(),
                    q => format!(", {q} of them quarantined"),
                };
                format!("Failed: {} on {failing} of {}{held}.", plural(failed, "test"), plural(pairs, "pair"))
            }
        })
    }
}

fn plural(n: u64, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `items` joined, at most `most` of them named.
fn some_of(items: &[String], most: usize) -> String {
    let mut out = items.iter().take(most).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > most {
        out.push_str(&format!(" and {} more", items.len() - most));
    }
    out
}

fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

impl Listed {
    /// `suite › name [marks]`, clipped.
    fn label(&self) -> String {
        let mut label = format!("{} › {}", clip(&self.suite, NAME), clip(&self.name, NAME));
        if !self.marks.is_empty() {
            label.push_str(&format!(" [{}]", self.marks.join(", ")));
        }
        label
    }
}

pub fn markdown(parts: &Parts, page: Option<&str>) -> String {
    let mut out = format!("### {}\n\n", md(&parts.title));
    if let Some(verdict) = parts.verdict() {
        let (word, rest) = verdict.split_once(':').unwrap_or((&verdict, ""));
        out.push_str(&format!("**{word}**:{rest}\n\n"));
    }
    let source = markdown_source(&parts.source);
    if !source.is_empty() {
        out.push_str(&format!("{source}\n\n"));
    }
    // The tail is written last but its room is kept from the start.
    let mut tail = String::new();
    if let Some(link) = page.and_then(url) {
        tail.push_str(&format!("[The results page]({link})\n\n"));
    }
    // The cost line is the app's own words: no text from the bucket in it.
    tail.push_str(&format!("<sub>{}</sub>\n", parts.cost));
    let mut budget = Budget { out, limit: MARKDOWN_LIMIT.saturating_sub(tail.len()) };
    pairs_table(&mut budget, parts, page);
    for section in parts.sections.iter().filter(|s| !s.tests.is_empty()) {
        markdown_section(&mut budget, section);
    }
    let mut out = budget.out;
    out.push_str(&tail);
    out
}

/// Text written while it stays under a limit.
struct Budget {
    out: String,
    limit: usize,
}

impl Budget {
    /// Writes `text` if it fits with `keep` bytes to spare; says whether it did.
    fn push(&mut self, text: &str, keep: usize) -> bool {
        let fits = self.out.len() + text.len() + keep <= self.limit;
        if fits {
            self.out.push_str(text);
        }
        fits
    }
}

/// Room kept for a section's closing lines ("and N more", `</details>`).
const CLOSING: usize = 200;

fn pairs_table(budget: &mut Budget, parts: &Parts, page: Option<&str>) {
    if parts.pairs.is_empty() {
        budget.push("No run of it is in the bucket.\n\n", 0);
        return;
    }
    let folded = parts.pairs.len() > OPEN_PAIRS;
    if folded {
        let failing = parts.pairs.iter().filter(|(_, _, c)| c[1] > 0).count();
        let summary = format!("{}, {failing} with failures", plural(parts.pairs.len() as u64, "pair"));
        budget.push(&format!("<details><summary>{summary}</summary>\n\n"), CLOSING);
    }
    budget.push("| platform / runtime | passed | failed | skipped |\n|---|--:|--:|--:|\n", CLOSING);
    for (i, (pair, key, [p, f, s])) in parts.pairs.iter().enumerate() {
        let name = match page.and_then(|page| url(&run_link(page, key))) {
            Some(link) => format!("[{}]({link})", md(pair)),
            None => md(pair),
        };
        if !budget.push(&format!("| {name} | {p} | {f} | {s} |\n"), CLOSING) {
            budget.push(&format!("\nand {} more pairs on the results page\n", parts.pairs.len() - i), 0);
            break;
        }
    }
    budget.push(if folded { "\n</details>\n\n" } else { "\n" }, 0);
}

fn markdown_section(budget: &mut Budget, section: &Section) {
    let tests = &section.tests;
    let heading = format!("**{}** ({})\n\n", section.title, tests.len());
    if !budget.push(&heading, CLOSING) {
        return;
    }
    let open = if section.open { OPEN.min(tests.len()) } else { 0 };
    let mut folded = false;
    for (i, test) in tests.iter().enumerate().take(LISTED_MARKDOWN) {
        if i == open {
            let what = if open == 0 { "The list".to_string() } else { format!("{} more", tests.len() - open) };
            folded = budget.push(&format!("<details><summary>{what}</summary>\n\n"), CLOSING);
            if !folded {
                budget.push(&format!("- and {} more on the results page\n", tests.len() - i), 0);
                break;
            }
        }
        let mut line = format!("- {}", list_item(&md(&test.label())));
        if !test.pairs.is_empty() {
            line.push_str(&format!(" · {}", md(&some_of(&test.pairs, 20))));
        }
        if !test.owners.is_empty() {
            line.push_str(&format!(" ({})", md(&format!("owners {}", some_of(&test.owners, 5)))));
        }
        if let Some((title, issue)) = &test.issue {
            let title = md(&clip(title, NAME));
            match url(issue) {
                Some(issue) => line.push_str(&format!(" · known: [{title}]({issue})")),
                None => line.push_str(&format!(" · known: {title}")),
            }
        }
        if let Some(first) = &test.line {
            line.push_str(&format!(": {}", md(first)));
        }
        line.push('\n');
        if !budget.push(&line, CLOSING) {
            budget.push(&format!("- and {} more on the results page\n", tests.len() - i), 0);
            break;
        }
        if i + 1 == LISTED_MARKDOWN && tests.len() > LISTED_MARKDOWN {
            budget.push(&format!("- and {} more on the results page\n", tests.len() - LISTED_MARKDOWN), 0);
        }
    }
    budget.push(if folded { "\n</details>\n\n" } else { "\n" }, 0);
}

/// Text that begins a list item kept as text: a leading `-`, `+` or `=` (a nested list, a rule
/// or a heading's underline) or `1.`/`1)` (an ordered list) escaped.
pub(crate) fn list_item(text: &str) -> String {
    if text.starts_with(['-', '+', '=']) {
        return format!("\\{text}");
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    match text.as_bytes().get(digits) {
        Some(b'.' | b')') if digits > 0 => format!("{}\\{}", &text[..digits], &text[digits..]),
        _ => text.to_string(),
    }
}

/// "Commit 0123456789ab on main · [CI run](…)", from what the runs name.
fn markdown_source(source: &Source) -> String {
    let mut parts: Vec<String> = source
        .named()
        .into_iter()
        .map(|(what, names)| match what {
            "commit" => format!("Commit {}", md(&names)),
            _ => format!("{what} {}", md(&names)),
        })
        .collect();
    let links: Vec<String> = source.urls.iter().filter_map(|u| url(u)).take(3).collect();
    let links: Vec<String> = match links.len() {
        1 => vec![format!("[CI run]({})", links[0])],
        _ => links.iter().enumerate().map(|(i, link)| format!("[CI run {}]({link})", i + 1)).collect(),
    };
    parts.extend(links);
    parts.join(" · ")
}

pub fn plain(parts: &Parts, page: Option<&str>) -> String {
    let mut out = format!("{}\n", parts.title);
    if let Some(verdict) = parts.verdict() {
        out.push_str(&format!("{verdict}\n"));
    }
    let source = &parts.source;
    let mut said: Vec<String> = source.named().into_iter().map(|(what, names)| format!("{what} {names}")).collect();
    said.extend(source.urls.iter().take(3).cloned());
    if !said.is_empty() {
        out.push_str(&format!("  {}\n", said.join(" · ")));
    }
    if parts.pairs.is_empty() {
        out.push_str("  No run of it is in the bucket.\n");
    }
    let width = parts.pairs.iter().map(|(pair, ..)| pair.chars().count()).max().unwrap_or(0);
    for (pair, _, [p, f, s]) in &parts.pairs {
        out.push_str(&format!("  {pair:width$}  {p} passed, {f} failed, {s} skipped\n"));
    }
    for section in parts.sections.iter().filter(|s| !s.tests.is_empty()) {
        let tests = &section.tests;
        out.push_str(&format!("{} ({}):\n", section.title, tests.len()));
        for test in tests.iter().take(LISTED_TEXT) {
            out.push_str(&format!("  {}", test.label()));
            if !test.pairs.is_empty() {
                out.push_str(&format!("  on {}", some_of(&test.pairs, 20)));
            }
            if !test.owners.is_empty() {
                out.push_str(&format!(" (owners {})", some_of(&test.owners, 5)));
            }
            if let Some((title, issue)) = &test.issue {
                out.push_str(&format!(" (known: {} {issue})", clip(title, NAME)));
            }
            if let Some(line) = &test.line {
                out.push_str(&format!(": {line}"));
            }
            out.push('\n');
        }
        if tests.len() > LISTED_TEXT {
            out.push_str(&format!("  and {} more\n", tests.len() - LISTED_TEXT));
        }
    }
    if let Some(page) = page {
        out.push_str(&format!("The results page: {page}\n"));
    }
    out.push_str(&format!("{}\n", parts.cost));
    out
}

pub fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}

/// The page's link to a run.
fn run_link(page: &str, key: &str) -> String {
    let escaped: String = key
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{page}?view=run&key={escaped}")
}

/// A web address a Markdown link can hold: http(s) only, with what would end or break the link
/// percent-encoded; `None` for anything else (a `javascript:` address from a report).
fn url(address: &str) -> Option<String> {
    let lower = address.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) || address.len() > 2048 {
        return None;
    }
    Some(
        address
            .bytes()
            .map(|b| match b {
                b' ' | b'(' | b')' | b'<' | b'>' | b'"' | b'\'' | b'`' | b'[' | b']' | b'\\' | b'|' => {
                    format!("%{b:02X}")
                }
                b if !(0x20..0x7f).contains(&b) => format!("%{b:02X}"),
                b => (b as char).to_string(),
            })
            .collect(),
    )
}

/// Text as Markdown shows it, not as markup: inline punctuation escaped; `<`, `>` and `&` as
/// entities (no HTML); a zero-width space after `@` and `#` (no mention of a person or team, no
/// issue link: GitHub looks for them after entities are decoded, so an entity would not do, and
/// bots write them so), and after `://` and `www.` (no link made of a test's text).
pub fn md(text: &str) -> String {
    let text = text.replace("://", ":\u{200B}//").replace("www.", "www\u{200B}.");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' | '#' => {
                out.push(c);
                out.push('\u{200B}');
            }
            '$' => out.push_str("&#36;"),
            '\n' | '\r' => out.push(' '),
            // Never at a line's start (a row or a list item comes first): only what marks up
            // text inside a line.
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}
