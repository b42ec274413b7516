//! Where the local bucket keeps its records: in each body's attribute, small enough for the
//! inode; in sidecar files where attributes are refused; and a bucket kept with sidecars
//! (written before attributes) read and moved over as it is written.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::bucket::{list_all, ListRequest};

const KEY: &str = "linux-x86_64/python-3.11/8209473486622-0000000000000443/0000000000000443.json";

fn open(dir: &Path, keeping: Keeping) -> LocalBucket {
    let mut bucket = LocalBucket::open(dir, "b", 4 << 20, Arc::default()).unwrap();
    if keeping == Keeping::Sidecar {
        // As on a file system that refuses user attributes.
        fs::create_dir_all(dir.join("b/.objstore/meta")).unwrap();
        (bucket.keeping, bucket.sidecars) = (Keeping::Sidecar, true);
    }
    bucket
}

/// The labels the results app sends with each run.
fn labels() -> Metadata {
    [("platform", "linux-x86_64"), ("browser", "python-3.11"), ("version", "0.4.0")]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn put(bucket: &LocalBucket, key: &str, body: &[u8], metadata: Metadata) -> String {
    bucket.put(key, body, &PutOptions { metadata, ..PutOptions::default() }, &Token::default()).unwrap().unwrap()
}

fn attribute_bytes(path: &Path) -> isize {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a size query (no buffer) on NUL-terminated strings.
    unsafe { libc::lgetxattr(path.as_ptr(), c"user.objstore".as_ptr(), std::ptr::null_mut(), 0) }
}

fn described(bucket: &LocalBucket, key: &str) -> (String, u64, Metadata) {
    let (info, metadata) = bucket.head(key, &Token::default()).unwrap().unwrap();
    (info.etag, info.size, metadata)
}

#[test]
fn a_record_is_an_attribute_of_its_body_that_fits_the_inode() {
    let dir = tempfile::tempdir().unwrap();
    let etag = put(&open(dir.path(), Keeping::Attribute), KEY, br#"{"v":1}"#, labels());
    assert_eq!(etag, etag_of(br#"{"v":1}"#));
    // Another process's view: the record is on the disk, with the body.
    let bucket = open(dir.path(), Keeping::Attribute);
    assert_eq!(bucket.keeping, Keeping::Attribute, "this file system takes user attributes");
    assert_eq!(described(&bucket, KEY), (etag.clone(), 7, labels()));
    let Fetched::Found(object) = bucket.get(KEY, &Validators::default(), &Token::default()).unwrap() else {
        panic!("the object is there")
    };
    assert_eq!((object.etag, object.metadata), (Some(etag.clone()), labels()));
    let listed = list_all(&bucket, &ListRequest::default(), &Token::default()).unwrap().objects;
    assert_eq!((listed.len(), listed[0].etag.as_str(), listed[0].size), (1, etag.as_str(), 7));
    assert!(!dir.path().join("b/.objstore/meta").exists(), "no sidecar tree");
    // 24 bytes of etag and time, 1 of size, 33 of labels (two of them segments of the key):
    // within the 64 bytes an ext4 inode of 256 bytes keeps for an attribute of this name.
    assert_eq!(attribute_bytes(&dir.path().join("b").join(KEY)), 58);
    let refused = bucket.put(
        "k",
        b"1",
        &PutOptions { metadata: [("n".into(), "v".repeat(2048))].into(), ..Default::default() },
        &Token::default(),
    );
    assert!(refused.unwrap_err().to_string().contains("takes at most 2048"));
}

/// A large body's etag is worked out beside its write: it is the body's MD5 all the same, in
/// its record and in what a read answers, kept either way.
#[test]
fn a_large_bodys_etag_worked_out_beside_its_write_is_its_md5() {
    let body: Vec<u8> = (0..ETAG_BESIDE_WRITE + 7).map(|i| (i % 251) as u8).collect();
    for keeping in [Keeping::Attribute, Keeping::Sidecar] {
        let dir = tempfile::tempdir().unwrap();
        let bucket = open(dir.path(), keeping);
        let etag = put(&bucket, KEY, &body, labels());
        assert_eq!(etag, etag_of(&body), "{keeping:?}");
        let reopened = open(dir.path(), keeping);
        assert_eq!(described(&reopened, KEY), (etag.clone(), body.len() as u64, labels()), "{keeping:?}");
        match reopened.get(KEY, &Validators::default(), &Token::default()).unwrap() {
            Fetched::Found(object) => {
                assert_eq!((object.etag.as_deref(), object.body.len()), (Some(etag.as_str()), body.len()))
            }
            other => panic!("{keeping:?}: {other:?}"),
        }
    }
}

#[test]
fn where_attributes_are_refused_records_are_sidecar_files() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = open(dir.path(), Keeping::Sidecar);
    let etag = put(&bucket, KEY, br#"{"v":1}"#, labels());
    put(&bucket, "gone/k", b"2", Metadata::new());
    assert!(attribute_bytes(&dir.path().join("b").join(KEY)) < 0, "no attribute");
    let sidecar = fs::read_to_string(dir.path().join("b/.objstore/meta").join(KEY)).unwrap();
    assert!(sidecar.contains("python-3.11"), "{sidecar}");
    assert_eq!(described(&open(dir.path(), Keeping::Sidecar), KEY), (etag, 7, labels()));
    bucket.delete("gone/k", &Token::default()).unwrap();
    assert!(!dir.path().join("b/.objstore/meta/gone").exists(), "the sidecar went with its body");
}

#[test]
fn a_bucket_kept_with_sidecars_is_read_and_moves_to_attributes_as_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let before = open(dir.path(), Keeping::Sidecar);
    let etag = put(&before, KEY, br#"{"v":1}"#, labels());
    put(&before, "gone/k", b"2", labels());
    put(&before, "rewritten/k", b"3", labels());
    let after = open(dir.path(), Keeping::Attribute);
    assert_eq!((after.keeping, after.sidecars), (Keeping::Attribute, true));
    assert_eq!(described(&after, KEY), (etag, 7, labels()), "read from its sidecar");
    put(&after, "rewritten/k", b"4", Metadata::new());
    after.delete("gone/k", &Token::default()).unwrap();
    let meta = dir.path().join("b/.objstore/meta");
    assert!(!meta.join("rewritten").exists() && !meta.join("gone").exists());
    assert!(described(&open(dir.path(), Keeping::Attribute), "rewritten/k").2.is_empty(), "the new record won");
}

#[test]
fn a_body_put_in_place_without_its_record_is_recomputed_and_a_resent_write_records_it() {
    for keeping in [Keeping::Attribute, Keeping::Sidecar] {
        let dir = tempfile::tempdir().unwrap();
        let bucket = open(dir.path(), keeping);
        put(&bucket, "k", br#"{"v":1}"#, labels());
        // A writer killed between a sidecar's two renames, or a file copied in by hand.
        let staged = dir.path().join("b/.objstore/tmp/new-body");
        fs::write(&staged, br#"{"v":2}"#).unwrap();
        fs::rename(&staged, dir.path().join("b/k")).unwrap();
        let new = etag_of(br#"{"v":2}"#);
        assert_eq!(described(&bucket, "k").0, new, "{keeping:?}: not the previous body's etag");
        let again = PutOptions { mode: PutMode::Update(etag_of(br#"{"v":1}"#)), ..PutOptions::default() };
        assert_eq!(bucket.put("k", br#"{"v":2}"#, &again, &Token::default()).unwrap(), Some(new.clone()));
        let reopened = open(dir.path(), keeping);
        assert!(!reopened.described("k", &dir.path().join("b/k")).unwrap().unwrap().stale, "{keeping:?}: recorded");
    }
}

#[test]
fn a_body_rewritten_in_place_is_recomputed_even_with_its_mtime_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let bucket = open(dir.path(), Keeping::Attribute);
    put(&bucket, "k", br#"{"v":1}"#, labels());
    let path = dir.path().join("b/k");
    let recorded = fs::metadata(&path).unwrap().modified().unwrap();
    // Edited in place by a tool that keeps the time (the record stays on the inode).
    fs::write(&path, br#"{"v":22}"#).unwrap();
    File::options().write(true).open(&path).unwrap().set_modified(recorded).unwrap();
    assert_eq!(described(&bucket, "k").0, etag_of(br#"{"v":22}"#), "not the recorded etag");
}
