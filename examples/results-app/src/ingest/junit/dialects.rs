//! What each producer's JUnit means beyond the common shape, one named rule per producer:
//! pytest's reruns and teardown errors, jest-junit's load failure written twice, node's todo,
//! ctest's status and labels, GoogleTest's `result`, gotestsum's and Surefire's attempts, and
//! the class and suite rules (ctest, jest-junit, mocha, doctest, Catch2) that name a test.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::model::{cap_name, CappedText, Status};

use super::super::googletest;
use super::super::naming::{
    cap_suite, file_name, is_generic, is_path, is_python_test_module, is_test_file, suite_name, without_class_kind,
};

use super::suites::{Around, Suite};
use super::{same_test, Case, CaseAttempt};

/// JUnit 5's console launcher (its legacy XML report) names its suite after the engine and
/// writes each case's unique id and display name as the case's output: that is no output.
pub(super) fn without_platform_ids(path: &Option<Rc<Suite>>, out: String) -> Option<String> {
    if !path.as_ref().is_some_and(|suite| suite.around().junit_platform) {
        return Some(out);
    }
    let kept: Vec<&str> =
        out.lines().filter(|l| !l.starts_with("unique-id: ") && !l.starts_with("display-name: ")).collect();
    Some(kept.join("\n")).filter(|k| !k.trim().is_empty())
}

/// A Java class's column: its own name without its package, an enclosing class's nesting and
/// the `Test` it ends with (`com.example.LedgerTest$Totals` → `Ledger`), as its file is named.
fn java_class_column(classname: &str) -> &str {
    let class = classname.rsplit('.').next().unwrap_or(classname);
    let outer = class.split('$').next().unwrap_or(class);
    without_class_kind(outer)
}

/// A report's suite properties, as build-variant labels. A JVM's reports (Surefire's, JUnit 5's
/// launcher's) carry every system property of the JVM as the suite's: the JVM's own
/// (`java.*`, `jdk.*`, `sun.*`) are never kept, and once one was seen, neither are the system's
/// (`os.*`, `user.*`, `file.*`, ...) that it writes beside them: every machine's paths and user
/// would be a new variant. Another tool's `os.name` stays a label.
#[derive(Default)]
pub(super) struct Properties {
    kept: Map<String, Value>,
    from_a_jvm: bool,
}

impl Properties {
    pub(super) fn len(&self) -> usize {
        self.kept.len()
    }

    pub(super) fn add(&mut self, name: String, value: String) {
        match name.split_once('.').map(|(first, _)| first) {
            Some("java" | "javax" | "jdk" | "sun") => self.from_a_jvm = true,
            _ => drop(self.kept.entry(name).or_insert(Value::String(value))),
        }
    }

    pub(super) fn labels(mut self) -> Map<String, Value> {
        if self.from_a_jvm {
            self.kept.retain(|name, _| !is_jvm_system_property(name));
        }
        self.kept
    }
}

fn is_jvm_system_property(name: &str) -> bool {
    let first = name.split_once('.').map(|(first, _)| first);
    matches!(first, Some("os" | "user" | "file" | "line" | "path" | "native" | "stdout" | "stderr" | "awt"))
}

/// pytest: a report of pytest's (its suite is named so).
pub(super) fn is_pytest(case: &Case) -> bool {
    case.path.as_ref().is_some_and(|suite| suite.around().pytest)
}

/// pytest writes a second `<testcase>` for an error in teardown after a failure: one test, both
/// messages. It follows the first at once and says so.
pub(super) fn is_pytest_teardown(case: &Case) -> bool {
    case.message.as_ref().is_some_and(|m| m.as_str().contains("failed on teardown"))
}

/// pytest-rerunfailures writes each failed attempt as a `<testcase>` of the same name, with no
/// failure in it, just before the next: `case` is then `last`'s next attempt. Only in pytest's
/// reports: elsewhere two such cases are two tests (two files' top-level tests of one name, in
/// node's).
pub(super) fn is_pytest_rerun(last: &Case, case: &Case) -> bool {
    is_pytest(case) && !is_pytest_teardown(case) && same_test(last, case) && last.status != Status::Skipped
}

/// jest-junit writes a test file that fails to load twice, as an `<error>` with the console's
/// text and then as a `<failure>` with the error's JSON: one failure, told by the first.
pub(super) fn is_jest_load_failure(case: &Case) -> bool {
    case.classname == "Test suite failed to run"
}

/// ctest says a disabled or not-run test with `status` alone; GoogleTest says a skipped or
/// disabled test with `result` (or, before 1.10, `status="notrun"`).
pub(super) fn is_skipped_by_attribute(status: Option<&str>, result: Option<&str>) -> bool {
    matches!(status, Some("disabled" | "notrun" | "skipped")) || matches!(result, Some("skipped" | "suppressed"))
}

/// ctest writes a test's labels as its `cmake_labels` property (`a;b`): the first is its suite.
/// `None` when the property is not that one; `Some(None)` when it names no label.
pub(super) fn ctest_label(property: Option<&str>, value: Option<&str>) -> Option<Option<String>> {
    match (property, value) {
        (Some("cmake_labels"), Some(labels)) => {
            Some(labels.split(';').map(str::trim).find(|l| !l.is_empty()).map(str::to_string))
        }
        _ => None,
    }
}

/// node's todo tests (`<skipped type="todo">`) are CTRF's pending ones, whatever their body did.
pub(super) fn is_node_todo(kind: &[u8], skipped_type: Option<&str>) -> bool {
    kind == b"skipped" && skipped_type == Some("todo")
}

/// Surefire's and nextest's earlier attempts, inside the test's `<testcase>`.
pub(super) fn is_attempt_element(element: &[u8]) -> bool {
    matches!(element, b"flakyFailure" | b"flakyError" | b"rerunFailure" | b"rerunError")
}

/// gotestsum's `--rerun-fails` writes a failed test's rerun as a second `<testcase>` of the same
/// name and class: where the class tells tests apart (go's package, a file), a case of a test
/// that failed earlier is its next attempt. Node's top-level tests of two files share a generic
/// class, and stay two.
pub(super) fn may_be_rerun(case: &Case) -> bool {
    !is_generic(&case.classname)
}

/// ctest's `<failure>` says nothing (`message=""`) and its output holds the reason: a GoogleTest
/// test's is its failure block there.
pub(super) fn ctest_googletest_message(
    status: Status,
    class: &str,
    name: &str,
    out: &Option<String>,
) -> Option<String> {
    (status == Status::Failed && class == name).then_some(out.as_deref()?).and_then(googletest::failures)
}

/// A case's suite (the outermost telling `<testsuite>`, else the classname) and its name with
/// the suites inside that one (`nested > deep`), after its class where the class tells more.
pub(super) fn suite_and_name(c: &Case) -> (String, String) {
    let none = Around::default();
    let around = c.path.as_ref().map_or(&none, Suite::around);
    // ctest names each test's class after the test: that is no suite (its first label is, else
    // a GoogleTest name's suite, else the file's name). So does jest-junit, with the describe
    // blocks in both.
    let class_is_name = c.classname == c.name;
    let googletest = (class_is_name && around.inner.is_empty()).then(|| googletest::names_in_ctest(&c.name)).flatten();
    if let (Some((column, name)), None) = (&googletest, &c.label) {
        return (cap_suite(column.clone()), cap_name(name.clone()));
    }
    let classname = if class_is_name { c.label.as_deref().unwrap_or_default() } else { c.classname.as_str() };
    let classname = if around.junit_platform { java_class_column(classname) } else { classname };
    // A suite that names its test file is that file's column: mocha-junit-reporter writes
    // nested describe blocks as suites side by side, each with the file.
    let suite = around.column(classname, || match &around.file {
        Some(file) => cap_suite(suite_name(Some(file), "")),
        None => cap_suite(suite_name(around.telling.as_deref(), classname)),
    });
    // Joined by hand, once per case: `format!` showed in a 200,000-case report's profile.
    let mut within = String::with_capacity(around.inner.len() + c.name.len());
    within.push_str(&around.inner);
    within.push_str(&c.name);
    let name = match c.classname.as_str() {
        // pytest's class is its node id's path and classes, dotted: the test is named by its node
        // id, as pytest, its plugins and this app's plugin name it.
        class if around.pytest && !class.is_empty() => pytest_node_id(class, &within),
        // mocha-junit-reporter's class is the test's own title, the last word of its full name.
        _ if class_is_name => googletest.map_or(within, |(_, name)| name),
        _ if is_title_of(&c.classname, &c.name) => within,
        "" => within,
        // A classname that is a source file's path (doctest's) is named by the file.
        path if is_path(path) => format!("{}::{within}", file_name(path)),
        // A test file's name (vitest's, Playwright's, bats') is the suite already.
        file if is_test_file(file) => within,
        // Catch2's `global` class says nothing.
        generic if is_generic(generic) => within,
        class => format!("{class}::{within}"),
    };
    (suite, cap_name(name))
}

/// pytest's node id (`tests/unit/test_crud.py::TestPut::test_one[a]`) from the classname its JUnit
/// writes for it (`tests.unit.test_crud.TestPut`): the module is the last step named as pytest
/// finds test files (`test_*`, `*_test`), else the steps before the first class (a capital).
fn pytest_node_id(class: &str, name: &str) -> String {
    let steps: Vec<&str> = class.split('.').collect();
    let module_end = match steps.iter().rposition(|s| is_python_test_module(s)) {
        Some(i) => i + 1,
        None => {
            steps.iter().position(|s| s.starts_with(|c: char| c.is_ascii_uppercase())).unwrap_or(steps.len()).max(1)
        }
    };
    let mut id = steps[..module_end].join("/");
    id.push_str(".py");
    for step in steps[module_end..].iter().chain([&name]) {
        id.push_str("::");
        id.push_str(step);
    }
    id
}

/// Whether `class` is the title at the end of the full name `name` (`cart totals sums`, `sums`).
fn is_title_of(class: &str, name: &str) -> bool {
    !class.is_empty() && name.strip_suffix(class).is_some_and(|rest| rest.ends_with(' '))
}

/// `later`, with `earlier` (a failure) as its attempt before its own; the time is the last
/// attempt's.
pub(super) fn with_attempt(earlier: Box<Case>, later: Box<Case>) -> Box<Case> {
    let mut attempts = earlier.attempts;
    let message = earlier.message.and_then(CappedText::finish);
    attempts.push(CaseAttempt { status: Status::Failed, message, trace: earlier.trace });
    attempts.extend(later.attempts);
    Box::new(Case { attempts, ..*later })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Java class is its file's column; a JVM's properties are no labels, another tool's are.
    #[test]
    fn java_classes_and_the_jvms_properties() {
        assert_eq!(java_class_column("com.example.LedgerTest$Totals"), "Ledger");
        assert_eq!(java_class_column("LedgerTests"), "Ledger");
        assert_eq!(java_class_column("Test"), "Test");
        let mut jvm = Properties::default();
        for name in ["build", "file.encoding", "java.home", "os.arch", "user.dir"] {
            jvm.add(name.into(), "x".into());
        }
        assert_eq!(jvm.labels().keys().collect::<Vec<_>>(), ["build"]);
        let mut other = Properties::default();
        other.add("os.name".into(), "linux".into());
        assert_eq!(other.labels().keys().collect::<Vec<_>>(), ["os.name"]);
    }
}
