//! The `<testsuite>`s around a case: each held once however many cases it has, and what its
//! cases' suite and names take from it, worked out once per suite.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use super::super::naming::{file_name, is_generic, JUNIT_ENGINES};
use crate::model::{cap_at, MAX_INHERITED};

/// A `<testsuite>` within those around it, shared by its cases: a suite's name is held once,
/// however many tests it has and however deep it is.
pub(super) struct Suite {
    pub(super) name: String,
    /// The test file it ran (mocha-junit-reporter's and unittest-xml-reporting's `file`).
    pub(super) file: Option<String>,
    pub(super) parent: Option<Rc<Suite>>,
    /// What its cases' names take from the suites around them, worked out for its first case
    /// and shared by the rest (60 suites deep, it is the same 60 names for every case).
    around: OnceCell<Around>,
}

/// What the suites around a case give its suite and its name (see `dialects::suite_and_name`).
#[derive(Default)]
pub(super) struct Around {
    /// The outermost telling suite's name.
    pub(super) telling: Option<String>,
    /// The test file the innermost suite that names one ran.
    pub(super) file: Option<String>,
    /// Whether a suite around is named `pytest` (a report of pytest's).
    pub(super) pytest: bool,
    /// Whether a suite around is a JUnit Platform engine's (`JUnit Jupiter`: JUnit 5's console
    /// launcher).
    pub(super) junit_platform: bool,
    /// The telling suites inside the outermost one, as the start of a name (`nested > deep > `),
    /// capped at [`MAX_INHERITED`]: a case's name is this and its own.
    pub(super) inner: String,
    /// The column of the last case named here, by that case's class: a suite's cases share
    /// one class, so the column is worked out once.
    column: RefCell<Option<(String, String)>>,
}

impl Around {
    /// The column of a case of class `classname`, made by `make` unless the last case's class
    /// was the same.
    pub(super) fn column(&self, classname: &str, make: impl FnOnce() -> String) -> String {
        let mut last = self.column.borrow_mut();
        match &*last {
            Some((class, column)) if same_text(class, classname) => column.clone(),
            _ => {
                let column = make();
                *last = Some((classname.to_string(), column.clone()));
                column
            }
        }
    }
}

/// `a == b`, without calling `memcmp` for two empty texts: an empty `String` points at no
/// memory, and glibc's AVX-512 `memcmp` still reads there under an empty mask, which the CPU
/// answers with a fault assist of ~100 ns. Every case of a report without classes compares two
/// empty classes: 200,000 of them spent a quarter of their parse here.
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

impl Suite {
    pub(super) fn new(name: String, file: Option<String>, parent: Option<Rc<Suite>>) -> Suite {
        Suite { name, file, parent, around: OnceCell::new() }
    }

    pub(super) fn around(self: &Rc<Suite>) -> &Around {
        self.around.get_or_init(|| {
            let suites = chain_of(self);
            let path: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
            let telling = path.iter().position(|s| !is_generic(s));
            let inner: String = match telling {
                Some(i) => path[i + 1..]
                    .iter()
                    .zip(&suites[i + 1..])
                    .filter(|(name, suite)| !is_generic(name) && !names_no_level(suite))
                    .map(|(name, _)| format!("{name} > "))
                    .collect(),
                None => String::new(),
            };
            Around {
                telling: telling.map(|i| path[i].to_string()),
                // The innermost suite that names its test file.
                file: suites.iter().rev().find_map(|s| s.file.clone()),
                pytest: path.contains(&"pytest"),
                junit_platform: path.iter().any(|s| JUNIT_ENGINES.contains(s)),
                // Capped, it still ends as a level does, before the case's own name.
                inner: match inner.len() > MAX_INHERITED {
                    true => cap_at(inner, MAX_INHERITED - 3) + " > ",
                    false => inner,
                },
                column: RefCell::default(),
            }
        })
    }
}

/// Whether an inner suite is no level of its cases' names. PHPUnit writes its class as a suite
/// named as its file (`LedgerTest` of `LedgerTest.php`: the class is each case's class already,
/// and the file its column), and a data provider's sets as a suite `Class::method` inside it
/// (each case's name starts with the method).
fn names_no_level(suite: &Suite) -> bool {
    // A namespaced class (`App\\Tests\\LedgerTest`) is named so, its file by the class alone.
    let class = suite.name.rsplit('\\').next().unwrap_or(&suite.name);
    let is_its_file = suite.file.as_deref().is_some_and(|f| file_name(f).split('.').next() == Some(class));
    let is_provider =
        suite.name.split_once("::").is_some_and(|(class, _)| suite.parent.as_ref().is_some_and(|p| p.name == class));
    is_its_file || is_provider
}

/// `suite` and those around it, from the root.
fn chain_of(suite: &Rc<Suite>) -> Vec<&Suite> {
    let mut chain = Vec::new();
    let mut at = Some(&**suite);
    while let Some(s) = at {
        chain.push(s);
        at = s.parent.as_deref();
    }
    chain.reverse();
    chain
}
