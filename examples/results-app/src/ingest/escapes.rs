//! Terminal escapes out of the text a test keeps: jest, vitest and Playwright colour their
//! messages, and the page and the summaries show text as it is.

use crate::model::Test;

impl Test {
    /// Takes terminal escapes (colours, cursor moves) out of the test's text.
    pub fn strip_escapes(&mut self) {
        let d = &mut self.detail;
        let texts =
            self.message.iter_mut().chain(d.trace.iter_mut()).chain(d.stderr.iter_mut()).chain(d.stdout.iter_mut());
        let attempts = d.retry_attempts.iter_mut().flat_map(|a| a.message.iter_mut().chain(a.trace.iter_mut()));
        for text in texts.chain(attempts) {
            if text.contains('\x1b') {
                *text = without_escapes(text);
            }
        }
    }
}

/// `text` without its ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
/// `ESC \\`) and the two-byte ones (`ESC c`).
pub fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // Parameters and intermediates, up to the final byte (@ to ~).
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // Up to BEL or the string terminator ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Attempt, Detail, Status};

    #[test]
    fn terminal_escapes_are_taken_out_of_the_text_shown() {
        assert_eq!(without_escapes("\x1b[2mexpect(\x1b[22m\x1b[31mreceived\x1b[39m)"), "expect(received)");
        assert_eq!(without_escapes("a\x1b]8;;https://x\x07link\x1b]8;;\x1b\\b"), "alinkb");
        assert_eq!(without_escapes("plain ✓ text\n"), "plain ✓ text\n");
        assert_eq!(without_escapes("cut at the end \x1b[3"), "cut at the end ");
        let mut t = Test {
            suite: "crud".into(),
            name: "a".into(),
            status: Status::Failed,
            duration: 0.0,
            message: None,
            detail: Detail::default(),
        };
        t.message = Some("\x1b[31mboom\x1b[0m".into());
        t.detail.retry_attempts.push(Attempt {
            attempt: 1,
            status: Status::Failed,
            message: None,
            trace: Some("\x1b[1mfirst".into()),
        });
        t.strip_escapes();
        assert_eq!((t.message.as_deref(), t.detail.retry_attempts[0].trace.as_deref()), (Some("boom"), Some("first")));
    }
}
