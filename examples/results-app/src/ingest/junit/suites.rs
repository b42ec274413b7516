//! The `<testsuite>`s around a case: each held once however many cases it has, and what its
//! cases' suite and names take from it, worked out once per suite.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use super::super::naming::is_generic;
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
            Some((class, column)) if class == classname => column.clone(),
            _ => {
                let column = make();
                *last = Some((classname.to_string(), column.clone()));
                column
            }
        }
    }
}

impl Suite {
    pub(super) fn new(name: String, file: Option<String>, parent: Option<Rc<Suite>>) -> Suite {
        Suite { name, file, parent, around: OnceCell::new() }
    }

    pub(super) fn around(self: &Rc<Suite>) -> &Around {
        self.around.get_or_init(|| {
            let here = Some(self.clone());
            let path = path_of(&here);
            let telling = path.iter().position(|s| !is_generic(s));
            let inner: String = match telling {
                Some(i) => path[i + 1..].iter().filter(|s| !is_generic(s)).map(|s| format!("{s} > ")).collect(),
                None => String::new(),
            };
            Around {
                telling: telling.map(|i| path[i].to_string()),
                file: test_file_of(&here).map(str::to_string),
                pytest: path.contains(&"pytest"),
                inner: cap_at(inner, MAX_INHERITED),
                column: RefCell::default(),
            }
        })
    }
}

/// The names of `suite` and those around it, from the root.
fn path_of(suite: &Option<Rc<Suite>>) -> Vec<&str> {
    let mut names = Vec::new();
    let mut at = suite.as_deref();
    while let Some(s) = at {
        names.push(s.name.as_str());
        at = s.parent.as_deref();
    }
    names.reverse();
    names
}

/// The test file the innermost suite around a case that names one ran.
fn test_file_of(suite: &Option<Rc<Suite>>) -> Option<&str> {
    let mut at = suite.as_deref();
    while let Some(s) = at {
        if let Some(file) = &s.file {
            return Some(file);
        }
        at = s.parent.as_deref();
    }
    None
}
