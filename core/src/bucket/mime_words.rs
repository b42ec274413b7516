//! Metadata values that are not plain ASCII travel as RFC 2047 encoded words, as S3 itself
//! returns them (`=?UTF-8?B?…?=`): raw UTF-8 in a header is read as mojibake by other clients.
//! Values read back are decoded (B and Q words, UTF-8, US-ASCII or ISO-8859-1).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Bytes of UTF-8 per encoded word: 45 bytes are 60 base64 characters, within the 75 a word
/// may have.
const WORD_BYTES: usize = 45;

/// The header form of a metadata value: itself when it is printable ASCII that does not look
/// like an encoded word, encoded words otherwise.
pub fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b)) && !value.contains("=?");
    if plain {
        return value.to_string();
    }
    let mut words = Vec::new();
    let mut rest = value;
    while !rest.is_empty() {
        let mut end = rest.len().min(WORD_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        words.push(format!("=?UTF-8?B?{}?=", STANDARD.encode(&rest.as_bytes()[..end])));
        rest = &rest[end..];
    }
    words.join(" ")
}

/// A header value with its encoded words decoded; text around them is kept, and whitespace
/// between two words dropped (RFC 2047 §6.2). A word that does not decode stays as it was.
pub fn decode(value: &str) -> String {
    if !value.contains("=?") {
        return value.to_string();
    }
    let mut out = String::new();
    let mut rest = value;
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let (before, candidate) = rest.split_at(start);
        match word(candidate) {
            Some((text, used)) => {
                if !(after_word && before.chars().all(char::is_whitespace)) {
                    out.push_str(before);
                }
                out.push_str(&text);
                rest = &candidate[used..];
                after_word = true;
            }
            None => {
                out.push_str(before);
                out.push_str("=?");
                rest = &candidate[2..];
                after_word = false;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The text of the encoded word at the start of `s`, and its length.
fn word(s: &str) -> Option<(String, usize)> {
    let inner = s.strip_prefix("=?")?;
    let (charset, inner) = inner.split_once('?')?;
    let (encoding, inner) = inner.split_once('?')?;
    let end = inner.find("?=")?;
    let payload = &inner[..end];
    let used = 2 + charset.len() + 1 + encoding.len() + 1 + end + 2;
    let bytes = match encoding {
        "B" | "b" => STANDARD.decode(payload).ok()?,
        "Q" | "q" => quoted(payload)?,
        _ => return None,
    };
    let text = match charset.split('*').next()?.to_ascii_uppercase().as_str() {
        "UTF-8" | "US-ASCII" => String::from_utf8(bytes).ok()?,
        "ISO-8859-1" | "LATIN1" => bytes.iter().map(|&b| b as char).collect(),
        _ => return None,
    };
    Some((text, used))
}

/// RFC 2047's Q encoding: `_` is a space, `=XX` a byte.
fn quoted(payload: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chars = payload.bytes();
    while let Some(b) = chars.next() {
        match b {
            b'_' => bytes.push(b' '),
            b'=' => {
                let hex = [chars.next()?, chars.next()?];
                bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            other => bytes.push(other),
        }
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ascii_goes_as_it_is() {
        assert_eq!(encode("linux-x64 / node 20"), "linux-x64 / node 20");
        assert_eq!(decode("linux-x64 / node 20"), "linux-x64 / node 20");
    }

    #[test]
    fn other_text_round_trips_through_encoded_words() {
        for value in ["Zürich", "東京 — テスト", "tab\there", "looks like =?x?=", &"é".repeat(100), ""] {
            let header = encode(value);
            assert!(header.bytes().all(|b| (0x20..0x7f).contains(&b)), "{header}");
            assert!(header.split(' ').all(|w| w.len() <= 75), "{header}");
            assert_eq!(decode(&header), value);
        }
        assert_eq!(encode("Zürich"), "=?UTF-8?B?WsO8cmljaA==?=");
    }

    #[test]
    fn decodes_what_other_clients_send() {
        assert_eq!(decode("=?utf-8?q?Z=C3=BCrich_Nord?="), "Zürich Nord");
        assert_eq!(decode("=?ISO-8859-1?Q?caf=E9?= au lait"), "café au lait");
        assert_eq!(decode("=?UTF-8?B?WsO8?= =?UTF-8?B?cmljaA==?="), "Zürich", "space between words dropped");
        assert_eq!(decode("=?UTF-8?X?nope?="), "=?UTF-8?X?nope?=", "not a word: kept");
        assert_eq!(decode("a =?broken"), "a =?broken");
    }
}
