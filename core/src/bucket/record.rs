//! The local bucket's record of one object — its etag, when it was written, its custom metadata
//! — and where it is kept. Normally in an extended attribute of the body's own file
//! (`user.objstore`), set on the staged file before its rename, so body and record arrive
//! together and cost no file of their own: a record of up to 64 bytes stays inside an ext4
//! inode. Where the file system refuses user attributes, in a sidecar file
//! `.objstore/meta/<key>` (JSON), the layout of buckets written before attributes, which are
//! still read.
//!
//! The attribute's value: the body's MD5 (16 bytes), then its file's mtime in nanoseconds when
//! the record was set (u64, little-endian; also the object's time) and its size (LEB128): the
//! record describes the body only while both hold. Then each metadata entry in name order: the
//! name's length (one byte) and the name, then the value as a length below 0x80 and that many
//! bytes, or `0x80 + i` for a value equal to the key's segment `i` (the `{platform}` a key
//! layout already holds), or 0xFF, a little-endian u16 length and the bytes.

use std::ffi::{CStr, CString};
use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::Metadata;
use crate::error::{Error, Result};

const ATTRIBUTE: &CStr = c"user.objstore";
const MD5_HEX: usize = 32;
const SEGMENT: u8 = 0x80;
const LONG: u8 = 0xFF;
/// The most a record may take: within the 4 KB block ext4 keeps a file's attributes in.
const MAX_RECORD_BYTES: usize = 4000;

/// Where a bucket keeps its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keeping {
    Attribute,
    Sidecar,
}

impl Keeping {
    /// Sidecars where the file system refuses a user attribute on a file made in `scratch`;
    /// attributes otherwise, also when the probe cannot be made (a read-only folder: what is
    /// there is read, attributes first).
    pub fn probe(scratch: &Path) -> Keeping {
        let probe = scratch.join(format!("{}-{:016x}-probe", std::process::id(), crate::random::number()));
        let refused = File::create(&probe).is_ok_and(|file| set(&file, b"").is_err_and(|e| unsupported(&e)));
        let _ = fs::remove_file(&probe);
        if refused {
            Keeping::Sidecar
        } else {
            Keeping::Attribute
        }
    }
}

/// The file system keeps no user attributes (here).
fn unsupported(e: &std::io::Error) -> bool {
    // One number on Linux, two elsewhere.
    matches!(e.raw_os_error(), Some(code) if code == libc::ENOTSUP || code == libc::EOPNOTSUPP)
}

/// An object's record as it was set: the body is trusted to match it only while its file does.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    /// Quoted hex MD5, as S3 gives for a single-part upload.
    pub etag: String,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: u64,
    pub metadata: Metadata,
    identity: Identity,
}

/// What the body's file was when its record was set.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Identity {
    /// An attribute travels with its inode: the mtime and size tell an edit in place.
    Attribute { size: u64, mtime_ns: u64 },
    /// A sidecar does not: a body renamed into place has a new inode.
    File { size: u64, inode: u64, mtime_ns: u64 },
}

impl Record {
    /// Whether the body's file is still the one this record was set on.
    pub fn describes(&self, file: &fs::Metadata) -> bool {
        match self.identity {
            Identity::Attribute { size, mtime_ns: ns } => (size, ns) == (file.len(), mtime_ns(file)),
            Identity::File { size, inode, mtime_ns: ns } => {
                (size, inode, ns) == (file.len(), file.ino(), mtime_ns(file))
            }
        }
    }

    /// The record in the attribute of the file at `path` (the object `key`): `None` when there is
    /// none, it cannot be read as one, or the file system keeps no attributes there.
    pub fn read_attribute(path: &Path, key: &str) -> std::io::Result<Option<Record>> {
        let path = c_path(path)?;
        let mut value = vec![0u8; 256];
        loop {
            // SAFETY: `path` and `ATTRIBUTE` are NUL-terminated; the buffer is `value.len()` bytes.
            let n =
                unsafe { libc::lgetxattr(path.as_ptr(), ATTRIBUTE.as_ptr(), value.as_mut_ptr().cast(), value.len()) };
            if n >= 0 {
                value.truncate(n as usize);
                return Ok(decode(&value, key));
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::ERANGE) if value.len() < 1 << 16 => value.resize(value.len() * 16, 0),
                Some(libc::ENODATA) => return Ok(None),
                _ if unsupported(&error) => return Ok(None),
                _ => return Err(error),
            }
        }
    }

    /// Sets the record of the body just written to `file` (the object `key`, whose etag is
    /// `etag`), before the file is synced.
    pub fn set_attribute(file: &File, key: &str, etag: &str, metadata: &Metadata) -> Result<()> {
        let found = file
            .metadata()
            .map_err(|e| Error::Unreachable { what: format!("writing {key:?}"), reason: e.to_string() })?;
        let value = encode(etag, (found.len(), mtime_ns(&found)), metadata, key)?;
        set(file, &value).map_err(|e| refused(key, value.len(), e))
    }

    /// Sets the record of the body in place at `path` (a write killed before it recorded one).
    pub fn set_attribute_in_place(path: &Path, key: &str, etag: &str, metadata: &Metadata) -> Result<()> {
        let file = File::open(path)
            .map_err(|e| Error::Unreachable { what: format!("writing {key:?}"), reason: e.to_string() })?;
        Record::set_attribute(&file, key, etag, metadata)?;
        file.sync_all().map_err(|e| Error::Unreachable { what: format!("writing {key:?}"), reason: e.to_string() })
    }

    /// The record in a sidecar file's bytes, `None` when they are not one.
    pub fn from_sidecar(bytes: &[u8]) -> Option<Record> {
        let s: Sidecar = serde_json::from_slice(bytes).ok()?;
        let identity = Identity::File { size: s.size, inode: s.inode, mtime_ns: s.mtime_ns };
        Some(Record { etag: s.etag, modified_ms: s.modified_ms, metadata: s.metadata, identity })
    }

    /// A sidecar file's bytes for the body in the file at `path`, written now.
    pub fn sidecar_for(path: &Path, etag: &str, metadata: &Metadata) -> Result<Vec<u8>> {
        let found = fs::metadata(path)
            .map_err(|e| Error::Unreachable { what: format!("writing {}", path.display()), reason: e.to_string() })?;
        let sidecar = Sidecar {
            etag: etag.to_string(),
            modified_ms: super::local::millis(SystemTime::now()),
            size: found.len(),
            inode: found.ino(),
            mtime_ns: mtime_ns(&found),
            metadata: metadata.clone(),
        };
        Ok(serde_json::to_vec(&sidecar).expect("a sidecar serialises"))
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sidecar {
    etag: String,
    modified_ms: u64,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    inode: u64,
    #[serde(default)]
    mtime_ns: u64,
    #[serde(default)]
    metadata: Metadata,
}

/// A file's modification time in nanoseconds since the Unix epoch.
pub(super) fn mtime_ns(file: &fs::Metadata) -> u64 {
    (file.mtime() as u64).wrapping_mul(1_000_000_000).wrapping_add(file.mtime_nsec() as u64)
}

fn encode(etag: &str, (size, mtime_ns): (u64, u64), metadata: &Metadata, key: &str) -> Result<Vec<u8>> {
    let digest = etag.strip_prefix('"').and_then(|e| e.strip_suffix('"')).filter(|hex| hex.len() == MD5_HEX);
    let digest = digest.and_then(|hex| {
        (0..16).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()).collect::<Option<Vec<u8>>>()
    });
    let Some(digest) = digest else {
        return Err(Error::InvalidArgument(format!("{etag} is not the MD5 etag the local bucket records for {key:?}")));
    };
    let mut value = digest;
    value.extend_from_slice(&mtime_ns.to_le_bytes());
    let mut rest = size;
    while rest >= 0x80 {
        value.push(rest as u8 | 0x80);
        rest >>= 7;
    }
    value.push(rest as u8);
    let segments: Vec<&str> = key.split('/').collect();
    for (name, text) in metadata {
        let Ok(length) = u8::try_from(name.len()) else {
            return Err(Error::InvalidArgument(format!("the metadata name {name:?} of {key:?} is over 255 bytes")));
        };
        value.push(length);
        value.extend_from_slice(name.as_bytes());
        match segments.iter().position(|s| s == text).filter(|&i| i < usize::from(LONG - SEGMENT)) {
            Some(i) => value.push(SEGMENT + i as u8),
            None => {
                if text.len() < usize::from(SEGMENT) {
                    value.push(text.len() as u8);
                } else {
                    let Ok(length) = u16::try_from(text.len()) else {
                        return Err(Error::InvalidArgument(format!(
                            "the metadata value {name:?} of {key:?} is over 64 KiB"
                        )));
                    };
                    value.push(LONG);
                    value.extend_from_slice(&length.to_le_bytes());
                }
                value.extend_from_slice(text.as_bytes());
            }
        }
    }
    if value.len() > MAX_RECORD_BYTES {
        return Err(Error::InvalidArgument(format!(
            "the local bucket cannot record {key:?}: its metadata takes {} bytes, over {MAX_RECORD_BYTES}",
            value.len()
        )));
    }
    Ok(value)
}

fn decode(value: &[u8], key: &str) -> Option<Record> {
    let (digest, rest) = value.split_at_checked(16)?;
    let (mtime, mut rest) = rest.split_at_checked(8)?;
    let mtime_ns = u64::from_le_bytes(mtime.try_into().ok()?);
    let mut size = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, after) = rest.split_first()?;
        rest = after;
        size |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            break;
        }
    }
    let etag = format!("\"{}\"", digest.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let mut metadata = Metadata::new();
    let take = |rest: &mut &[u8], n: usize| -> Option<String> {
        let (text, after) = rest.split_at_checked(n)?;
        *rest = after;
        String::from_utf8(text.to_vec()).ok()
    };
    while let Some((&length, after)) = rest.split_first() {
        rest = after;
        let name = take(&mut rest, usize::from(length))?;
        let (&tag, after) = rest.split_first()?;
        rest = after;
        let text = match tag {
            LONG => {
                let (length, after) = rest.split_at_checked(2)?;
                rest = after;
                take(&mut rest, usize::from(u16::from_le_bytes(length.try_into().ok()?)))?
            }
            t if t >= SEGMENT => key.split('/').nth(usize::from(t - SEGMENT))?.to_string(),
            t => take(&mut rest, usize::from(t))?,
        };
        metadata.insert(name, text);
    }
    Some(Record { etag, modified_ms: mtime_ns / 1_000_000, metadata, identity: Identity::Attribute { size, mtime_ns } })
}

fn set(file: &File, value: &[u8]) -> std::io::Result<()> {
    // SAFETY: the descriptor is open; `ATTRIBUTE` is NUL-terminated; the value is `value.len()` bytes.
    let status =
        unsafe { libc::fsetxattr(file.as_raw_fd(), ATTRIBUTE.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    if status == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A record the file system would not keep: too large for it (a refusal of the write, not a
/// bucket out of reach to wait for), or the disk out of room.
fn refused(key: &str, bytes: usize, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::E2BIG | libc::ERANGE) => Error::InvalidArgument(format!(
            "the local bucket cannot record {key:?}: its record ({bytes} bytes with the metadata) is more than this file system keeps beside a file ({e})"
        )),
        _ => Error::Unreachable { what: format!("recording {key:?} ({bytes} bytes) in a file attribute"), reason: e.to_string() },
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "a path with NUL"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(entries: &[(&str, &str)]) -> Metadata {
        entries.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_record_reads_back_as_it_was_set_and_values_from_the_key_cost_a_byte() {
        let key = "linux-x86_64/python-3.11/8209-run/0001.json";
        let etag = "\"de51a84bd277e335dceef8a777021f2f\"";
        let long = "x".repeat(300);
        let given = metadata(&[
            ("platform", "linux-x86_64"),
            ("browser", "python-3.11"),
            ("version", "0.4.0"),
            ("note", &long),
        ]);
        let value = encode(etag, (300_000, 1_796_461_052_742_972_763), &given, key).unwrap();
        let record = decode(&value, key).unwrap();
        assert_eq!((record.etag.as_str(), record.modified_ms, &record.metadata), (etag, 1_796_461_052_742, &given));
        // The app's three labels, two of them in the key: the record fits in an ext4 inode.
        let app = metadata(&[("platform", "linux-x86_64"), ("browser", "python-3.11"), ("version", "0.4.0")]);
        assert_eq!(encode(etag, (2870, 1), &app, key).unwrap().len(), 24 + 2 + 10 + 9 + 14);
    }

    #[test]
    fn what_is_not_a_record_is_none_and_what_cannot_be_one_is_refused() {
        let key = "a/b";
        let value = encode("\"00112233445566778899aabbccddeeff\"", (7, 7), &metadata(&[("n", "v")]), key).unwrap();
        for cut in 0..value.len() {
            if cut != 25 {
                assert_eq!(decode(&value[..cut], key), None, "cut at {cut}");
            }
        }
        assert!(decode(&value[..25], key).is_some_and(|r| r.metadata.is_empty()));
        // A reference to a segment the key does not have is no record.
        let mut wrong = value[..25].to_vec();
        wrong.extend_from_slice(&[1, b'n', SEGMENT + 5]);
        assert_eq!(decode(&wrong, key), None);
        let refused = encode("\"not-md5\"", (7, 7), &Metadata::new(), key).unwrap_err().to_string();
        assert!(refused.contains("not-md5"), "{refused}");
        let md5 = "\"00112233445566778899aabbccddeeff\"";
        let refused = encode(md5, (7, 7), &metadata(&[(&"n".repeat(256), "v")]), key);
        assert!(refused.unwrap_err().to_string().contains("over 255 bytes"));
        // 1,000 two-byte names with empty values: S3's 2 KB, but 4 KB encoded.
        let letters = b"abcdefghijklmnopqrstuvwxyz0123456789-_";
        let name = |i: usize| String::from_utf8(vec![letters[i / letters.len()], letters[i % letters.len()]]).unwrap();
        let many: Metadata = (0..1000).map(|i| (name(i), String::new())).collect();
        assert!(encode(md5, (7, 7), &many, key).unwrap_err().to_string().contains("over 4000"));
    }
}
