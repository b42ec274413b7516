//! S3's XML answers, read with quick-xml: `ListBucketResult` (V1 and V2 listings) and `Error`
//! bodies. What comes from a bucket is untrusted: anything malformed or missing is an error
//! that says what, never a partial page.

use quick_xml::events::Event;
use quick_xml::Reader;

use super::{ListPage, ListVersion, Metadata, ObjectInfo};

/// Why a body could not be read; the caller adds which request it answered.
pub type ParseError = String;

/// Parses one listing page. `version` decides where the next page starts: V2 needs
/// `NextContinuationToken`; V1 takes `NextMarker`, or the last key when the server leaves it out.
pub fn parse_list(xml: &[u8], version: ListVersion) -> Result<ListPage, ParseError> {
    let doc = Document::parse(xml)?;
    if doc.root != "ListBucketResult" {
        return Err(format!("expected a ListBucketResult, got <{}>", doc.root));
    }
    let mut page = ListPage::default();
    let mut truncated = false;
    // With `encoding-type=url` honoured, names (keys, prefixes, markers) are URL-encoded.
    let encoded = doc.elements.iter().any(|e| e.path.len() == 2 && e.path[1] == "EncodingType" && e.text == "url");
    let name = |text: &str| if encoded { url_decoded(text) } else { Ok(text.to_string()) };
    let (mut next_marker, mut next_token) = (None, None);
    for element in &doc.elements {
        match element.path.as_slice() {
            [_, field] if field == "IsTruncated" => {
                truncated = match element.text.as_str() {
                    "true" => true,
                    "false" => false,
                    other => return Err(format!("IsTruncated is {other:?}, not true or false")),
                }
            }
            [_, field] if field == "NextMarker" => next_marker = Some(name(&element.text)?),
            [_, field] if field == "NextContinuationToken" => next_token = Some(element.text.clone()),
            [_, group, field] if group == "CommonPrefixes" && field == "Prefix" => {
                page.common_prefixes.push(name(&element.text)?)
            }
            [_, group] if group == "Contents" => {
                let mut object = object_of(element)?;
                object.key = name(&object.key)?;
                page.objects.push(object)
            }
            _ => {}
        }
    }
    if truncated {
        page.next = match version {
            ListVersion::V2 => Some(next_token.ok_or("a truncated V2 listing has no NextContinuationToken")?),
            ListVersion::V1 => {
                let last_key = page.objects.last().map(|o| o.key.clone());
                let last = last_key.max(page.common_prefixes.last().cloned());
                Some(next_marker.or(last).ok_or("a truncated V1 listing has neither NextMarker nor keys")?)
            }
        };
    }
    Ok(page)
}

/// A name as `encoding-type=url` sends it, decoded: `%XX` escapes, and `+` for a space (as
/// AWS writes it; a `+` of the name itself comes as `%2B`).
fn url_decoded(text: &str) -> Result<String, ParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3).filter(|h| h.len() == 2);
                let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(byte.ok_or_else(|| format!("the URL-encoded name {text:?} has a bad escape"))?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("the URL-encoded name {text:?} is not UTF-8"))
}

/// The `Code` and `Message` of an S3 error body, when it is one.
pub fn parse_error(xml: &[u8]) -> Option<(String, String)> {
    let doc = Document::parse(xml).ok()?;
    if doc.root != "Error" {
        return None;
    }
    let field = |name: &str| doc.elements.iter().find(|e| e.path.len() == 2 && e.path[1] == name);
    let code = field("Code")?.text.clone();
    Some((code, field("Message").map(|e| e.text.clone()).unwrap_or_default()))
}

fn object_of(contents: &Element) -> Result<ObjectInfo, ParseError> {
    let child = |name: &str| contents.children.iter().find(|c| c.path.len() == 1 && c.path[0] == name);
    let key = child("Key").ok_or("a Contents entry has no Key")?.text.clone();
    let size = match child("Size") {
        Some(size) => size.text.parse().map_err(|_| format!("object {key:?} has Size {:?}", size.text))?,
        None => return Err(format!("object {key:?} has no Size")),
    };
    let mut metadata: Option<Metadata> = None;
    for c in &contents.children {
        if let [group, name] = c.path.as_slice() {
            if group == "UserMetadata" {
                let name = name.to_ascii_lowercase();
                let name = name.strip_prefix("x-amz-meta-").unwrap_or(&name).to_string();
                metadata.get_or_insert_with(Metadata::new).insert(name, super::mime_words::decode(&c.text));
            }
        }
    }
    Ok(ObjectInfo {
        etag: child("ETag").map(|e| e.text.clone()).unwrap_or_default(),
        last_modified: child("LastModified").map(|e| e.text.clone()).unwrap_or_default(),
        key,
        size,
        metadata,
    })
}

/// A document flattened to what a listing needs: the root's name, and every element below it
/// with its path from the root and its text. `Contents` elements carry their descendants.
struct Document {
    root: String,
    elements: Vec<Element>,
}

struct Element {
    /// Names from the root (excluded) down to this element; for a child of `Contents`,
    /// relative to the `Contents`.
    path: Vec<String>,
    text: String,
    children: Vec<Element>,
}

impl Document {
    fn parse(xml: &[u8]) -> Result<Document, ParseError> {
        let mut reader = Reader::from_reader(xml);
        let mut stack: Vec<String> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        let mut root = None;
        let mut elements = Vec::new();
        let mut contents: Option<Element> = None;
        let mut buf = Vec::new();
        loop {
            let event = reader.read_event_into(&mut buf).map_err(|e| format!("malformed XML: {e}"))?;
            match event {
                Event::Start(start) => {
                    let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
                    if root.is_some() && stack.is_empty() {
                        return Err("malformed XML: more than one root element".into());
                    }
                    root.get_or_insert_with(|| name.clone());
                    if stack.len() == 1 && name == "Contents" {
                        contents = Some(Element { path: vec![], text: String::new(), children: vec![] });
                    }
                    stack.push(name);
                    texts.push(String::new());
                }
                Event::Empty(_) => {}
                Event::Text(text) => {
                    let decoded = text.decode().map_err(|e| format!("malformed XML text: {e}"))?;
                    if let Some(t) = texts.last_mut() {
                        t.push_str(&decoded);
                    }
                }
                Event::CData(data) => {
                    if let Some(t) = texts.last_mut() {
                        t.push_str(&String::from_utf8_lossy(&data));
                    }
                }
                Event::GeneralRef(reference) => {
                    let resolved = match reference.resolve_char_ref().map_err(|e| format!("malformed XML: {e}"))? {
                        Some(c) => c.to_string(),
                        None => {
                            let name = reference.decode().map_err(|e| format!("malformed XML: {e}"))?;
                            quick_xml::escape::resolve_predefined_entity(&name)
                                .ok_or_else(|| format!("malformed XML: unknown entity &{name};"))?
                                .to_string()
                        }
                    };
                    if let Some(t) = texts.last_mut() {
                        t.push_str(&resolved);
                    }
                }
                Event::End(_) => {
                    let name = stack.pop().ok_or("malformed XML: a closing tag without an opening one")?;
                    let text = texts.pop().unwrap_or_default();
                    let depth = stack.len();
                    if depth == 1 && name == "Contents" {
                        let mut done = contents.take().expect("opened with the Contents start tag");
                        done.path = vec![stack[0].clone(), name];
                        elements.push(done);
                    } else if let (Some(c), true) = (contents.as_mut(), depth >= 2) {
                        c.children.push(Element {
                            path: stack[2..].iter().cloned().chain([name]).collect(),
                            text,
                            children: vec![],
                        });
                    } else if depth >= 1 {
                        let path = stack.iter().cloned().chain([name]).collect();
                        elements.push(Element { path, text, children: vec![] });
                    }
                }
                Event::Eof => break,
                _ => {}
            }
            buf.clear();
        }
        if !stack.is_empty() {
            return Err(format!("truncated XML: <{}> is never closed", stack.last().unwrap()));
        }
        let root = root.ok_or("empty body where XML was expected")?;
        Ok(Document { root, elements })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoded_names_are_decoded() {
        let xml = br#"<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>
            <Contents><Key>a%2F%2Fb%09tab%0D+x%2B</Key><ETag>"e"</ETag><Size>1</Size><LastModified>2026-11-22T00:00:00.000Z</LastModified></Contents>
            <CommonPrefixes><Prefix>%C3%BC%2F</Prefix></CommonPrefixes></ListBucketResult>"#;
        let page = parse_list(xml, ListVersion::V2).unwrap();
        assert_eq!(page.objects[0].key, "a//b\ttab\r x+");
        assert_eq!(page.common_prefixes, ["ü/"]);
        let raw = br#"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a+b%20</Key><ETag>"e"</ETag><Size>1</Size><LastModified>2026-11-22T00:00:00.000Z</LastModified></Contents></ListBucketResult>"#;
        assert_eq!(parse_list(raw, ListVersion::V2).unwrap().objects[0].key, "a+b%20", "not encoded: kept as sent");
        let bad = br#"<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated><Contents><Key>a%ZZ</Key><ETag>"e"</ETag><Size>1</Size><LastModified>x</LastModified></Contents></ListBucketResult>"#;
        assert!(parse_list(bad, ListVersion::V2).unwrap_err().contains("bad escape"));
    }

    const V2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>p/a&amp;b</Key><LastModified>2026-11-22T04:00:00.000Z</LastModified><ETag>&quot;e1&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>p/c&#x2F;d</Key><LastModified>2026-11-22T04:00:01.000Z</LastModified><ETag>"e2"</ETag><Size>3</Size>
<UserMetadata><X-Amz-Meta-Platform>linux</X-Amz-Meta-Platform></UserMetadata></Contents>
<CommonPrefixes><Prefix>p/x/</Prefix></CommonPrefixes>
<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>"#;

    #[test]
    fn reads_a_v2_page_with_entities_and_metadata() {
        let page = parse_list(V2.as_bytes(), ListVersion::V2).unwrap();
        assert_eq!(page.objects.len(), 2);
        assert_eq!(page.objects[0].key, "p/a&b");
        assert_eq!(page.objects[0].etag, "\"e1\"");
        assert_eq!(page.objects[0].size, 12);
        assert_eq!(page.objects[1].key, "p/c/d");
        assert_eq!(page.objects[1].metadata.as_ref().unwrap()["platform"], "linux");
        assert_eq!(page.common_prefixes, vec!["p/x/"]);
        assert_eq!(page.next.as_deref(), Some("tok"));
    }

    #[test]
    fn v1_without_next_marker_continues_after_the_last_key() {
        let xml = "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>k1</Key><Size>1</Size></Contents></ListBucketResult>";
        assert_eq!(parse_list(xml.as_bytes(), ListVersion::V1).unwrap().next.as_deref(), Some("k1"));
        let end = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(parse_list(end.as_bytes(), ListVersion::V1).unwrap().next, None);
    }

    #[test]
    fn rejects_what_is_not_a_listing() {
        for (xml, expect) in [
            ("<ListBucketResult><Contents><Key>a</Key>", "never closed"),
            ("<ListBucketResult><Contents><Key>a</Key></Contents>", "never closed"),
            ("not xml at all", "empty body"),
            ("<Error><Code>NoSuchBucket</Code></Error>", "expected a ListBucketResult"),
            ("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "no Key"),
            ("<ListBucketResult><Contents><Key>a</Key><Size>x</Size></Contents></ListBucketResult>", "Size"),
            ("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", "IsTruncated"),
            ("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "NextContinuationToken"),
            ("<ListBucketResult><Contents><Key>a&bogus;</Key></Contents></ListBucketResult>", "entity"),
            ("", "empty body"),
        ] {
            let err = parse_list(xml.as_bytes(), ListVersion::V2).unwrap_err();
            assert!(err.contains(expect), "{xml:?}: {err}");
        }
    }

    #[test]
    fn reads_error_bodies() {
        let xml = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>";
        assert_eq!(parse_error(xml.as_bytes()), Some(("AccessDenied".into(), "no".into())));
        assert_eq!(parse_error(b"<html/>"), None);
    }
}

/// Fuzzed listings (issue 12): bytes from a bucket are untrusted, so any body, and any mangling
/// of a valid one, is a page or an error that says why, never a panic or a hang. Cases:
/// `PROPTEST_CASES` (256 by default; set it higher to fuzz longer).
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::*;

    const VALID: &str = r#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><IsTruncated>true</IsTruncated><NextContinuationToken>t&amp;1</NextContinuationToken><Contents><Key>a/b&lt;1&gt;</Key><ETag>&quot;e1&quot;</ETag><Size>12</Size><LastModified>2026-11-22T00:00:00.000Z</LastModified></Contents><CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>"#;

    fn parse_both(xml: &[u8]) {
        for version in [ListVersion::V1, ListVersion::V2] {
            match parse_list(xml, version) {
                Ok(page) => assert!(page.objects.iter().all(|o| !o.key.is_empty() || o.key.is_empty())),
                Err(why) => assert!(!why.is_empty()),
            }
        }
        let _ = parse_error(xml);
    }

    proptest! {
        #[test]
        fn any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            parse_both(&bytes);
        }

        #[test]
        fn a_valid_listing_mangled(cut in 0..VALID.len(), at in 0..VALID.len(), insert in "[<>&;/\"a-z0-9 ]{0,12}") {
            parse_both(&VALID.as_bytes()[..cut]);
            let mut mangled = VALID.as_bytes().to_vec();
            let at = at.min(mangled.len());
            mangled.splice(at..at, insert.bytes());
            parse_both(&mangled);
        }

        #[test]
        fn deep_or_wide_documents(depth in 0usize..300, wide in 0usize..300) {
            let nested = format!("<ListBucketResult>{}{}</ListBucketResult>", "<a>".repeat(depth), "</a>".repeat(depth));
            parse_both(nested.as_bytes());
            let many = format!("<ListBucketResult>{}</ListBucketResult>", "<Contents><Key>k</Key></Contents>".repeat(wide));
            parse_both(many.as_bytes());
        }
    }
}
