//! GoogleTest as ctest runs it (`gtest_discover_tests`): ctest names each test `Suite.Test` and
//! shows its whole output, GoogleTest's banner first. Both ctest readers (its console and its
//! JUnit) give such a test the suite, name and message GoogleTest's own XML would.

use super::naming::suite_name;

/// A GoogleTest test as ctest names it (`gtest_discover_tests`: `Vector.Length`, `Inst/Param.Positive/0`)
/// → its suite's column and the name GoogleTest's own XML gives it (`vector`, `Vector::Length`),
/// so that one test is one history whether its ctest or its GoogleTest report was posted. `None`
/// for a name of another shape.
pub fn names_in_ctest(name: &str) -> Option<(String, String)> {
    let (suite, test) = name.split_once('.')?;
    let identifier = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'/')
    };
    (identifier(suite) && identifier(test)).then(|| (suite_name(Some(suite), suite), format!("{suite}::{test}")))
}

/// The failures of GoogleTest's output: each failed test's blocks from its first
/// `file:line: Failure` (MSVC's `file(line): error: …`) to its `[  FAILED  ]` line, as its XML
/// words them (`file:line` then the report). Each block is headed by its test's name when more
/// than one failed. `None` when the output is not GoogleTest's or shows no failure block (a crash).
pub fn failures(output: &str) -> Option<String> {
    let mut failed: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut running: Option<(&str, Vec<&str>)> = None;
    for line in output.lines() {
        if let Some(name) = line.strip_prefix("[ RUN      ] ") {
            running = Some((name.trim(), Vec::new()));
        } else if line.starts_with("[  FAILED  ] ") || line.starts_with("[       OK ] ") {
            if let Some((name, block)) = running.take().filter(|(_, block)| !block.is_empty()) {
                failed.push((name, block));
            }
        } else if let Some((_, block)) = running.as_mut() {
            match line.strip_suffix(": Failure") {
                Some(place) => block.push(place),
                None if !block.is_empty() || line.contains("): error: ") => block.push(line),
                None => {}
            }
        }
    }
    let one = failed.len() == 1;
    let blocks: Vec<String> = failed
        .into_iter()
        .map(|(name, block)| {
            let block = block.join("\n").trim().to_string();
            if one {
                block
            } else {
                format!("{name}\n{block}")
            }
        })
        .collect();
    (!blocks.is_empty()).then(|| blocks.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ctest's name of a GoogleTest test is the one GoogleTest's XML gives; another is no such.
    #[test]
    fn a_googletest_test_as_ctest_names_it() {
        let named = |n| names_in_ctest(n);
        assert_eq!(named("Vector.LengthOfNegative"), Some(("vector".into(), "Vector::LengthOfNegative".into())));
        assert_eq!(
            named("Inst/ParamTest.Positive/0"),
            Some(("inst/paramtest".into(), "Inst/ParamTest::Positive/0".into()))
        );
        for other in ["put", "crud-test", "a.b.c", "v1.2", ".hidden", "parser.basic case"] {
            assert_eq!(named(other), None, "{other}");
        }
    }

    /// The failure block in GoogleTest's XML words; each block named when two tests failed; a
    /// crash (no block) and a pass give none.
    #[test]
    fn a_failures_message_is_its_block() {
        let one = "Running main() from gtest_main.cc\nNote: Google Test filter = Vector.Length\n\
                   [ RUN      ] Vector.Length\n/src/v.cpp:11: Failure\nExpected equality of these values:\n  -3\n\
                   [  FAILED  ] Vector.Length (0 ms)\n[  FAILED  ] 1 test, listed below:\n[  FAILED  ] Vector.Length\n";
        assert_eq!(failures(one).as_deref(), Some("/src/v.cpp:11\nExpected equality of these values:\n  -3"));
        let two = "[ RUN      ] A.x\nv.cpp(3): error: Value of: ok\n[  FAILED  ] A.x (0 ms)\n\
                   [ RUN      ] A.y\n[       OK ] A.y (0 ms)\n[ RUN      ] A.z\nv.cpp:9: Failure\nFailed\n[  FAILED  ] A.z (1 ms)\n";
        assert_eq!(failures(two).as_deref(), Some("A.x\nv.cpp(3): error: Value of: ok\n\nA.z\nv.cpp:9\nFailed"));
        assert_eq!(failures("[ RUN      ] A.x\nSegmentation fault\n"), None);
        assert_eq!(failures("crud.c:12: expected 2, got 3"), None);
    }
}
