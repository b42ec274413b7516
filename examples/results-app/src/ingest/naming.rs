//! A test's suite in the matrix's words, whichever producer wrote it: JUnit's testsuite and
//! classname, CTRF's suite path, TAP's file. The rules hold across producers, so that one test
//! file is one column however it was run:
//!
//! - a test file's name drops its folders' `tests`, its extension and its kind
//!   (`basket.test.js`, `api.spec.ts`, `backup.bats`, `ledger_test.go` → `basket`, `api`,
//!   `backup`, `ledger`);
//! - a Go package's import path drops its domain (`example.com/ledger` → `ledger`);
//! - a run-unique token at the end of a suite's name is no part of it
//!   (unittest-xml-reporting's `LedgerTest-20261201185112`);
//! - a Python test class is no column (`tests.test_api.TestUser` → `api`).

/// The suite a test belongs to: the outermost testsuite with a telling name (node's describe
/// block, nextest's test binary, GoogleTest's test suite, jest's and vitest's test file), else
/// the classname (pytest's module, doctest's source file, ctest's label). Empty when neither
/// tells (node's top-level tests, ctest without labels): the caller names it.
///
/// - Rust's `crate::file` is the file: `objstore-db-core::crud` → `crud`.
/// - GoogleTest's parameter numbers (`TypedTest/0`) name no suite.
/// - Below the last `tests` folder, a module keeps its path, as `/`-separated words
///   (`tests.unit.test_crud` → `unit/crud`): the page groups many columns by the first word.
pub fn suite_name(testsuite: Option<&str>, classname: &str) -> String {
    // A testsuite named by its binary's path (doctest's) is that binary.
    let from_suite =
        testsuite.map(without_run_token).filter(|s| !is_generic(s)).map(|s| if is_path(s) { file_name(s) } else { s });
    let Some(source) = from_suite.or(Some(classname).filter(|c| !is_generic(c))) else {
        return String::new();
    };
    if let Some((_, file)) = source.rsplit_once("::") {
        return word(file);
    }
    let source = below_domain(source);
    let (folders, stem) = match test_file_stem(source) {
        Some(stem) => (source.rsplit_once(['/', '\\']).map_or("", |(folders, _)| folders), stem),
        None => (source, ""),
    };
    let ignored = |s: &&str| {
        s.is_empty() || EXTENSIONS.contains(&s.to_ascii_lowercase().as_str()) || s.bytes().all(|b| b.is_ascii_digit())
    };
    let mut segments: Vec<&str> = folders.split(['.', '/', '\\']).filter(|s| !ignored(s)).collect();
    // A module path's classes (`tests.test_api.TestUser`) are no column: the module is.
    let module_path = !source.contains(['/', '\\']) && stem.is_empty();
    if module_path && (from_suite.is_none() || segments.iter().any(|s| is_python_test_module(s))) {
        while segments.len() > 1 && segments.last().is_some_and(|s| s.starts_with(|c: char| c.is_ascii_uppercase())) {
            segments.pop();
        }
    }
    if !stem.is_empty() {
        segments.push(stem);
    }
    if let Some(last_folder) = segments.iter().rposition(|s| TEST_FOLDERS.contains(&s.to_ascii_lowercase().as_str())) {
        if last_folder + 1 < segments.len() {
            segments.drain(..=last_folder);
        }
    }
    let mut words: Vec<String> = segments.iter().map(|s| word(s)).filter(|w| !w.is_empty()).collect();
    // A word said twice in a row is one: behave's `ledger.Ledger` (the file, then its feature).
    words.dedup();
    words.join("/")
}

/// `name` without a token at its end that only this run has (unittest-xml-reporting's
/// `-20261201185112`, a `_1f3a9c0d2b4e` of hex): such a name would be a new column every run.
pub fn without_run_token(name: &str) -> &str {
    let mut name = name;
    while let Some(at) = name.rfind(['-', '_']) {
        let token = &name[at + 1..];
        let digits = token.bytes().filter(u8::is_ascii_digit).count();
        let run_unique = (token.len() >= 8 && digits == token.len())
            || (token.len() >= 12 && digits > 0 && token.bytes().all(|b| b.is_ascii_hexdigit()));
        if at == 0 || !run_unique {
            break;
        }
        name = &name[..at];
    }
    name
}

/// A Go package's import path below its domain (`example.com/ledger` → `ledger`); other names
/// as they are.
fn below_domain(name: &str) -> &str {
    match name.split_once('/') {
        Some((domain, rest)) if domain.contains('.') && !rest.is_empty() && !is_path(name) => rest,
        _ => name,
    }
}

/// The name of the test file at the end of `path`, without its extension and its test-kind
/// suffix (`basket.test.js` → `basket`); `None` when `path` ends in no test file.
fn test_file_stem(path: &str) -> Option<&str> {
    let file = file_name(path);
    let (stem, extension) = file.rsplit_once('.')?;
    if !FILE_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str()) || stem.is_empty() {
        return None;
    }
    if extension.eq_ignore_ascii_case("php") {
        return Some(without_class_kind(stem));
    }
    Some(without_kind(stem, &KINDS))
}

/// A test class's name without its kind (`LedgerTest` → `Ledger`), as its file names it.
pub fn without_class_kind(class: &str) -> &str {
    without_kind(class, &CLASS_KINDS)
}

/// `name` without the first of `kinds` it ends with, unless that is all of it.
fn without_kind<'n>(name: &'n str, kinds: &[&str]) -> &'n str {
    kinds.iter().find_map(|k| name.strip_suffix(k).filter(|s| !s.is_empty())).unwrap_or(name)
}

/// Whether `segment` is a Python test module (`test_api`, `api_test`).
pub fn is_python_test_module(segment: &str) -> bool {
    segment.starts_with("test_") || segment.ends_with("_test") || segment.ends_with("_tests")
}

/// Whether `name` is a file's path (`/tmp/build/unit_tests`, `./tests`, `C:\\ci\\a.exe`) rather than
/// a suite path (`Inst/ParamTest`).
pub fn is_path(name: &str) -> bool {
    name.starts_with(['/', '.']) || name.contains('\\') || name.as_bytes().get(1) == Some(&b':')
}

/// The last component of a path.
pub fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Whether `suite` is a test file's path (`tests/unit/test_crud.py`, `basket.test.js`), as CTRF
/// writers give it: its module is the suite.
pub fn is_test_file(suite: &str) -> bool {
    test_file_stem(suite).is_some()
}

/// Extensions that name no suite (`test_math.cpp`, `unit_tests.exe`, `a.out`).
const EXTENSIONS: [&str; 14] =
    ["py", "mjs", "js", "cjs", "ts", "rs", "c", "cc", "cpp", "cxx", "h", "hpp", "exe", "out"];
/// Extensions of test files: the part before them names the suite.
const FILE_EXTENSIONS: [&str; 19] = [
    "py", "mjs", "js", "cjs", "jsx", "ts", "mts", "cts", "tsx", "rs", "go", "bats", "rb", "c", "cc", "cpp", "cxx", "t",
    "php",
];
/// A test file's kind, after its name: `.test`, `.spec` (jest, vitest, Playwright), `_test` (Go).
const KINDS: [&str; 6] = [".test", ".spec", ".e2e", "_test", "-test", "_spec"];
/// A test class's kind (PHPUnit's `LedgerTest.php`, JUnit's `LedgerTest`): only where a class
/// names the file, since elsewhere a name may end so (`basketTest.js`).
const CLASS_KINDS: [&str; 2] = ["Tests", "Test"];
/// Folders that hold tests: what is below them is the suite.
const TEST_FOLDERS: [&str; 5] = ["test", "tests", "spec", "specs", "__tests__"];

/// `test_crud`, `crud_test`, `Crud_Tests` → `crud`.
fn word(segment: &str) -> String {
    let lower = segment.to_ascii_lowercase();
    let word = lower.strip_prefix("test_").unwrap_or(&lower);
    let word = word.strip_suffix("_tests").or_else(|| word.strip_suffix("_test")).unwrap_or(word);
    word.to_string()
}

/// A suite or class name that tells nothing (a tool's own, nose2's, JUnit 5's engines', Catch2's
/// `global`, jest-junit's "Test suite failed to run", or none).
pub fn is_generic(name: &str) -> bool {
    name.is_empty()
        || matches!(
            name,
            "pytest"
                | "test"
                | "tests"
                | "node"
                | "nextest-run"
                | "(empty)"
                | "global"
                | "AllTests"
                | "Test suite failed to run"
                | "nose2-junit"
        )
        || JUNIT_ENGINES.contains(&name)
        || name.ends_with(".global")
}

/// The suites JUnit 5's console launcher names after its engines.
pub const JUNIT_ENGINES: [&str; 3] = ["JUnit Jupiter", "JUnit Vintage", "JUnit Platform Suite"];

/// The longest suite name (a matrix column) kept as written: every test holds its own.
pub const MAX_SUITE: usize = 128;

/// `suite`, or when over [`MAX_SUITE`] bytes its [`CAPPED`](crate::model::CAPPED) form.
pub fn cap_suite(suite: String) -> String {
    crate::model::cap_at(suite, MAX_SUITE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_names_are_shortened_to_the_matrix_words() {
        assert_eq!(suite_name(None, "tests.test_crud"), "crud");
        assert_eq!(suite_name(Some("objstore-db-core::transaction"), "x"), "transaction");
        assert_eq!(suite_name(Some("pytest"), "bindings.python.tests.test_sql"), "sql");
        assert_eq!(suite_name(Some("(empty)"), "test"), "");
        assert_eq!(suite_name(Some("TypedTest/0"), ""), "typedtest", "GoogleTest's parameter is no column");
        assert_eq!(suite_name(Some("Inst/ParamTest"), "Inst/ParamTest"), "inst/paramtest");
        assert_eq!(suite_name(None, "tests.test_api.TestUser"), "api", "pytest's class is no column");
        assert_eq!(suite_name(None, "tests.unit.test_crud"), "unit/crud", "a module below tests keeps its path");
        assert_eq!(suite_name(Some("tests"), "test_math.cpp"), "math", "doctest: the source file");
        assert_eq!(suite_name(Some("unit_tests.exe"), "global"), "unit", "Catch2: the binary, not global");
        assert_eq!(suite_name(Some("tests"), "tests.global"), "");
        assert_eq!(suite_name(Some("ledger.Ledger"), "ledger.Ledger"), "ledger", "behave: the file and its feature");
        assert_eq!(suite_name(Some("nose2-junit"), "tests.test_ledger.LedgerTest"), "ledger", "nose2's own name");
    }

    /// One test file is one column, whichever runner wrote its name.
    #[test]
    fn a_test_files_name_drops_its_extension_and_kind() {
        for (given, column) in [
            ("basket.test.js", "basket"),
            ("api.spec.ts", "api"),
            ("backup.bats", "backup"),
            ("ledger_test.go", "ledger"),
            ("checkout.e2e.tsx", "checkout"),
            ("tests/unit/test_crud.py", "unit/crud"),
            ("src/cart/basket.test.mjs", "src/cart/basket"),
            ("__tests__/basket.test.js", "basket"),
            ("/ci/tests/LedgerTest.php", "ledger"),
            ("LedgerTests.php", "ledger"),
            ("Test.php", "test"),
            ("basketTest.js", "baskettest"),
        ] {
            assert_eq!(suite_name(Some(given), ""), column, "{given}");
        }
        assert!(is_test_file("basket.test.js") && is_test_file("backup.bats") && !is_test_file("crud"));
    }

    /// The pytest plugin names a test file's suite by this rule too (its `suite_of`, tested on
    /// the same paths): the two must agree for one test to be one history.
    #[test]
    fn a_pytest_files_suite_as_the_plugin_names_it() {
        for (path, column) in [
            ("tests/unit/test_crud.py", "unit/crud"),
            ("tests/test_api.py", "api"),
            ("test_api.py", "api"),
            ("src/pkg/tests/test_x.py", "x"),
            ("pkg/crud_test.py", "pkg/crud"),
            ("a/b.v2/test_d.py", "a/b/v2/d"),
        ] {
            assert_eq!(suite_name(None, path), column, "{path}");
        }
    }

    #[test]
    fn a_go_package_is_named_below_its_domain() {
        assert_eq!(suite_name(Some("example.com/ledger"), "example.com/ledger"), "ledger");
        assert_eq!(suite_name(Some("github.com/acme/shop/internal/cart"), ""), "acme/shop/internal/cart");
    }

    /// unittest-xml-reporting stamps every suite with the time of the run.
    #[test]
    fn run_unique_tokens_are_no_part_of_a_suite() {
        assert_eq!(without_run_token("LedgerTest-20261201185112"), "LedgerTest");
        assert_eq!(without_run_token("crud_1f3a9c0d2b4e"), "crud");
        assert_eq!(without_run_token("crud-v2"), "crud-v2");
        assert_eq!(without_run_token("ipv6_test"), "ipv6_test");
        let suite = suite_name(Some("tests.test_ledger.LedgerTest-20261202053056"), "tests.test_ledger.LedgerTest");
        assert_eq!(suite, "ledger");
        assert_eq!(without_run_token("20261202053056"), "20261202053056", "a name that is only a token stays");
    }
}
