//! Object names and what they say: a run's name segment, a file's object name, a run's key,
//! run ids, the label and pair-pattern checks every name is built from, the short hash and clip
//! that keep free text short in names and messages, and the caps on a test's and a suite's name.

use super::run::MAX_LABEL;
use crate::error::{AppError, AppResult};

/// Reverse timestamps count down from here, so the newest run sorts first within a pair.
pub const FAR_FUTURE_MS: u64 = 9_999_999_999_999;

/// A run's name segment: `<reverse timestamp>-<run id>`, so that runs sort newest first within
/// their pair and two runs of one millisecond stay apart by their ids.
pub fn run_segment(now_ms: u64, run_id: &str) -> String {
    format!("{:013}-{run_id}", FAR_FUTURE_MS.saturating_sub(now_ms))
}

/// Whether `segment` is a run's name segment for run id `run_id`.
pub fn is_run_segment(segment: &str, run_id: &str) -> bool {
    segment
        .split_once('-')
        .is_some_and(|(stamp, id)| stamp.len() == 13 && stamp.bytes().all(|b| b.is_ascii_digit()) && id == run_id)
}

/// The object name of one report file of a run: `<platform>/<browser>/<run>/<file id>`.
pub fn object_key(platform: &str, browser: &str, run: &str, file_id: &str) -> String {
    format!("{platform}/{browser}/{run}/{file_id}")
}

/// Where a run's files are: `<platform>/<browser>/<run>` (a run's key in the views); `None` for
/// a name outside the layout (a segment empty, `.` or `..`), which no view shows.
pub fn run_key(object_key: &str) -> Option<&str> {
    let (run, _) = object_key.rsplit_once('/')?;
    let segments: Vec<&str> = object_key.split('/').collect();
    (segments.len() == 4 && segments.iter().all(|s| !matches!(*s, "" | "." | ".."))).then_some(run)
}

/// A run id: 16 hex digits from the system's random source.
pub fn new_run_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_err() {
        // No random source: the clock's nanoseconds and the process id still keep runs apart.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        bytes = ((nanos as u64) ^ (u64::from(std::process::id()) << 40)).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a platform, browser or version label: 1 to 64 of `a-z A-Z 0-9 . _ + -`, starting with
/// a letter or digit, so that no label can make a name outside the layout.
pub fn check_label(field: &str, value: &str) -> AppResult<()> {
    if value.is_empty() || value.len() > MAX_LABEL {
        return Err(
            AppError::bad(format!("{field} must be 1 to {MAX_LABEL} characters, not {}", value.len())).at(field)
        );
    }
    if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(AppError::bad(format!("{field} {value:?} must start with a letter or digit")).at(field));
    }
    match value.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))) {
        Some(c) => {
            Err(AppError::bad(format!("{field} {value:?} holds {c:?}; use letters, digits, '.', '_', '+' and '-'"))
                .at(field))
        }
        None => Ok(()),
    }
}

/// Whether pair `platform`/`browser` is one `pattern` (`platform/runtime`, `*` standing for any
/// run of characters within a segment) names.
pub fn pair_matches(pattern: &str, platform: &str, browser: &str) -> bool {
    let (p, b) = pattern.split_once('/').unwrap_or((pattern, ""));
    glob(p, platform) && glob(b, browser)
}

/// Whether `text` is `pattern`, where `*` stands for any run of characters: in time linear in
/// their lengths whatever the stars (a pattern is written by anyone who may edit the bucket).
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // The last star seen, and where in the text its run began.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((star_pi, star_ti)) = star {
            // The star takes one more character.
            pi = star_pi + 1;
            ti = star_ti + 1;
            star = Some((star_pi, star_ti + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether `text` is a web address a page may link and a server may call: `http://` or
/// `https://` (in any case) and something after it, with no white space.
pub fn is_web_address(text: &str) -> bool {
    let (scheme, rest) = text.split_once("://").unwrap_or_default();
    matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
        && !rest.is_empty()
        && !text.contains(char::is_whitespace)
}

/// Checks a pair pattern: two segments of label characters and `*`.
pub fn check_pair_pattern(pattern: &str) -> AppResult<()> {
    let segments: Vec<&str> = pattern.split('/').collect();
    let fits = segments.len() == 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.len() <= MAX_LABEL
                && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-' | '*'))
        });
    match fits {
        true => Ok(()),
        false => Err(AppError::bad(format!("{:?} is not a platform/runtime pattern", clip(pattern)))),
    }
}

/// The matrix's columns, in order: the six the library's suites are named after.
pub const KNOWN_SUITES: [&str; 6] = ["crud", "cursor", "event", "transaction", "query", "sql"];

/// Sorts suites in the matrix's order (the known six, then the others by name), without repeats.
pub fn sort_suites(suites: &mut Vec<String>) {
    suites.sort_unstable();
    suites.dedup();
    let rank = |s: &str| KNOWN_SUITES.iter().position(|k| *k == s).unwrap_or(KNOWN_SUITES.len());
    suites.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
}

/// A 64-bit FNV-1a hash: names made of free text stay short and apart, ETags change with bodies.
pub fn short_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The longest name of a test or a suite kept as written. A longer one (no runner writes one;
/// a hostile report does, once per test) becomes its [`CAPPED`] form, so that names stay apart
/// and a report's memory stays in proportion to its size.
pub const MAX_NAME: usize = 1024;

/// The longest start a test's name takes from the suites around it (`nested > deep > `): past
/// it, its [`CAPPED`] form. Every case of a suite 60 deep repeats it, so it is what bounds a
/// case's name by its own size rather than its suites' (no runner nests titles past it; a
/// hostile report's 60 suites of 1 KB made each case's name 60 KB, then 1 KB).
pub const MAX_INHERITED: usize = 256;

/// The size of a name past its cap: its first bytes, `…#` and a hash of all of it. It is
/// fixed, not the cap: what a name past its cap keeps is only there to recognise it by (the
/// hash keeps it apart), and every test of a hostile report repeats it, so the cap's size per
/// test made the stored run ten times the report (a suite 60 deep over 10,000 cases: 4.4 MB
/// stored of 0.4 MB posted, 2 MB now).
pub const CAPPED: usize = 64;

/// `name`, or when over [`MAX_NAME`] bytes its [`CAPPED`] form.
pub fn cap_name(name: String) -> String {
    cap_at(name, MAX_NAME)
}

/// `name`, or when over `max` bytes its [`CAPPED`] form: its start, `…#` and a hash of all of
/// it.
pub fn cap_at(name: String, max: usize) -> String {
    if name.len() <= max {
        return name;
    }
    let hash = format!("…#{:016x}", short_hash(name.as_bytes()));
    let mut end = CAPPED.min(max) - hash.len();
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{hash}", &name[..end])
}

/// `text` for an error message: whole when short, else its first 60 characters and its length.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(60) {
        None => text.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
    }
}

/// When a run was first stored, from the reverse timestamp of its name (a run's or one of its
/// files'; `None` for a name outside the layout).
pub fn stored_at(name: &str) -> Option<u64> {
    let run = name.split('/').nth(2)?;
    let digits = run.split('-').next()?;
    let reverse: u64 = digits.parse().ok().filter(|_| digits.len() == 13)?;
    FAR_FUTURE_MS.checked_sub(reverse)
}

/// The platform and browser a run's key (`<platform>/<browser>/<run>`) carries.
pub fn pair_of(key: &str) -> Result<(String, String), AppError> {
    match key.split('/').collect::<Vec<_>>()[..] {
        [platform, browser, run] if [platform, browser, run].iter().all(|s| !matches!(*s, "" | "." | "..")) => {
            Ok((platform.to_string(), browser.to_string()))
        }
        _ => Err(AppError::bad(format!("{:?} is not a run's name (platform/browser/run)", clip(key)))),
    }
}

/// The run segment of a run's key (checked by [`pair_of`]).
pub fn run_segment_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or_default()
}

/// Checks that a platform and browser can be name segments. Any segment the bucket holds is a
/// pair, even one our writers would refuse to make, so only the layout's shape is checked.
pub fn pair_prefix(platform: &str, browser: &str) -> AppResult<()> {
    for (field, value) in [("platform", platform), ("browser", browser)] {
        if value.is_empty() || value.contains('/') {
            return Err(AppError::bad(format!("{field} {:?} is not a name segment", clip(value))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair pattern's stars match any run of characters, quickly even when many.
    #[test]
    fn globs_match_in_linear_time() {
        assert!(pair_matches("linux-*/python-*", "linux-x86_64", "python-3.11"));
        assert!(pair_matches("*/*", "a", "b") && pair_matches("*-x86_64/*1*", "linux-x86_64", "c-gcc-13"));
        assert!(!pair_matches("linux-*/python-*", "windows-x86_64", "python-3.11"));
        assert!(!pair_matches("linux/*", "linux-x86_64", "python-3.11"), "no star, whole segment");
        assert!(pair_matches("a*b*c/*", "aXXbYYc", "r") && !pair_matches("a*b*c/*", "aXXbYY", "r"));
        // 63 stars against 64 characters: a backtracking match would not finish.
        let many = format!("{}b", "*".repeat(63));
        assert!(!pair_matches(&format!("{many}/*"), &"a".repeat(64), "r"));
    }

    #[test]
    fn keys_sort_newest_first_and_keep_one_millisecond_apart() {
        let older = object_key("linux-x86_64", "c", &run_segment(1_000, "aa"), "f1");
        let newer = object_key("linux-x86_64", "c", &run_segment(2_000, "aa"), "f1");
        assert!(newer < older);
        assert_eq!(newer, "linux-x86_64/c/9999999997999-aa/f1");
        assert_eq!(run_key(&newer), Some("linux-x86_64/c/9999999997999-aa"));
        assert_eq!((stored_at(&newer), stored_at("linux-x86_64/c/9999999997999-aa")), (Some(2_000), Some(2_000)));
        assert!(is_run_segment("9999999997999-aa", "aa") && !is_run_segment("99-aa", "aa"));
        assert_eq!(run_key("a/b/c"), None);
        for outside in ["linux/c//x", "linux/c/../x", "linux/c/r/", "./c/r/f"] {
            assert_eq!(run_key(outside), None, "{outside}");
        }
        assert_ne!(new_run_id(), new_run_id());
        assert_eq!(new_run_id().len(), 16);
    }

    #[test]
    fn labels_cannot_leave_the_layout() {
        for bad in ["", "a/b", "..", ".hidden", "a b", "ü", "a\n", &"x".repeat(65)] {
            assert!(check_label("platform", bad).is_err(), "{bad:?}");
        }
        for good in ["linux-x86_64", "python-3.11", "c-gcc-12", "1.2.3+build_4"] {
            check_label("platform", good).unwrap();
        }
    }
}
