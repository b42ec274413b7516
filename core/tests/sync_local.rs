//! The sync layer on a `file://` bucket (no server needed): validators, immutable caching,
//! conflicts, prefetch, objstore-meta records, request accounting and the local bucket's own
//! rules. Two databases on one bucket stand for two clients.
//! Over 800 lines: the sync area's suite on a directory, one file as each area has in every
//! language.

mod sync_support;

use std::path::Path;

use objstore_db_core::bucket::{list_all, open_bucket, ListRequest, ListVersion, PutMode, PutOptions};
use objstore_db_core::sync::{SyncConfig, Token};
use objstore_db_core::{Change, ErrorCode, EventKind, Key, KeyRange, Resolution, ScanOptions, SyncStatus};
use serde_json::{json, Value};
use sync_support::*;
use tempfile::TempDir;

fn file_sync(bucket_dir: &Path, extra: Value) -> Value {
    let mut block = json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": format!("file://{}", bucket_dir.display())}});
    for (k, v) in extra.as_object().unwrap() {
        if k == "Options" {
            for (ok, ov) in v.as_object().unwrap() {
                block["Options"][ok] = ov.clone();
            }
        } else {
            block[k] = v.clone();
        }
    }
    block
}

fn key(s: &str) -> Key {
    Key::String(s.to_string())
}

struct Clients {
    dir: TempDir,
}

impl Clients {
    fn new() -> Clients {
        Clients { dir: TempDir::new().unwrap() }
    }
    fn bucket_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("bucket")
    }
    /// Client `n` with the given stores (their Sync blocks made to point at the shared bucket).
    fn client(&self, n: u32, stores: &[(&str, Value)]) -> Client {
        let stores: Vec<(&str, Value)> =
            stores.iter().map(|(name, extra)| (*name, file_sync(&self.bucket_dir(), extra.clone()))).collect();
        open(&self.dir.path().join(format!("client{n}.sqlite3")), schema_with(&stores))
    }
}

#[test]
fn a_put_becomes_an_object_with_an_md5_etag() {
    let c = Clients::new();
    let mut db = c.client(1, &[("docs", json!({}))]);
    db.put("docs", json!({"title": "hello"}), Some(key("a/1"))).unwrap();
    let body = std::fs::read(c.bucket_dir().join("b/a/1")).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), json!({"title": "hello"}));
    let stats = db.take_sync_stats();
    assert_eq!(stats.count("PUT"), 1);
    assert_eq!(stats.total(), 1);
    assert_eq!(db.outbox_len().unwrap(), 0);
}

#[test]
fn an_immutable_store_serves_its_cache_with_no_request() {
    let c = Clients::new();
    let immutable = json!({"immutable": true});
    let mut writer = c.client(1, &[("results", immutable.clone())]);
    writer.put("results", json!({"ok": true}), Some(key("r1"))).unwrap();
    let mut reader = c.client(2, &[("results", immutable)]);
    assert_eq!(reader.get("results", &key("r1")).unwrap(), Some(json!({"ok": true})));
    assert_eq!(reader.take_sync_stats().count("GET"), 1);
    for _ in 0..3 {
        assert_eq!(reader.get("results", &key("r1")).unwrap(), Some(json!({"ok": true})));
    }
    assert_eq!(reader.take_sync_stats().total(), 0, "a cached immutable record costs nothing");
}

#[test]
fn a_mutable_store_validates_with_if_none_match_and_follows_changes_and_removals() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 1}), Some(key("d"))).unwrap();
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": 1})));
    b.take_sync_stats();
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": 1})));
    let stats = b.take_sync_stats();
    assert_eq!(stats.requests["GET"].get(&304), Some(&1), "{stats:?}");
    assert_eq!(stats.bytes_received, 0);

    a.put("docs", json!({"v": 2}), Some(key("d"))).unwrap();
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": 2})));
    a.remove("docs", &KeyRange::only("d")).unwrap();
    assert!(!c.bucket_dir().join("b/d").exists());
    assert_eq!(b.get("docs", &key("d")).unwrap(), None, "a 404 removes the local copy");
    assert_eq!(b.count("docs", &ScanOptions::new()).unwrap(), 0);
}

#[test]
fn creating_into_an_immutable_store_never_overwrites() {
    let c = Clients::new();
    let immutable = json!({"immutable": true});
    let mut a = c.client(1, &[("results", immutable.clone())]);
    let mut b = c.client(2, &[("results", immutable)]);
    a.add("results", json!({"by": "a"}), Some(key("same"))).unwrap();
    let conflicts = record_events(&mut b, &[EventKind::Conflict]);
    // The commit reports the local outcome; the bucket's refusal is a status, an event and a
    // durable refused write, and b's data is kept until b resolves it.
    b.add("results", json!({"by": "b"}), Some(key("same"))).unwrap();
    assert_eq!(conflicts.lock().unwrap().len(), 1);
    assert_eq!(conflicts.lock().unwrap()[0].value, Some(json!({"by": "b"})));
    assert_eq!(b.outbox_len().unwrap(), 0);
    let refused = b.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].code, "Conflict");
    assert!(refused[0].message.contains("\"same\""), "{}", refused[0].message);
    assert_eq!(refused[0].entry.record(), Some(json!({"by": "b"})));
    assert_eq!(b.sync_status("results", &key("same")).unwrap(), SyncStatus::Refused);
    assert_eq!(b.get("results", &key("same")).unwrap(), Some(json!({"by": "b"})), "nothing is deleted silently");
    // Discarding it lets the bucket's version in: a's object, which b now reads.
    b.resolve_refused(refused[0].sequence, Resolution::Discard).unwrap();
    assert!(b.refused_writes().unwrap().is_empty());
    assert_eq!(b.get("results", &key("same")).unwrap(), Some(json!({"by": "a"})));
    assert_eq!(b.sync_status("results", &key("same")).unwrap(), SyncStatus::Synced);
    // Replacing a known object of an immutable store is refused before anything is sent.
    let err = b.put("results", json!({"by": "b"}), Some(key("same"))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Constraint, "{err}");
}

#[test]
fn an_update_carries_if_match_and_a_stale_one_is_a_conflict() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 1}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.put("docs", json!({"v": "a"}), Some(key("d"))).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "the stale write was refused: {refused:?}");
    assert_eq!(refused[0].code, "Conflict");
    assert_eq!(a.get("docs", &key("d")).unwrap(), Some(json!({"v": "a"})), "a's data is kept until resolved");
    a.resolve_refused(refused[0].sequence, Resolution::Discard).unwrap();
    assert_eq!(a.get("docs", &key("d")).unwrap(), Some(json!({"v": "b"})), "discarded: the bucket's version wins");
}

#[test]
fn a_refused_write_resolved_by_overwrite_replaces_the_buckets_version() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 1}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.put("docs", json!({"v": "a"}), Some(key("d"))).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(a.sync_status("docs", &key("d")).unwrap(), SyncStatus::Refused);
    a.resolve_refused(refused[0].sequence, Resolution::Overwrite).unwrap();
    assert_eq!(a.sync_status("docs", &key("d")).unwrap(), SyncStatus::Pending);
    assert_eq!(a.flush().unwrap().sent, 1);
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": "a"})), "the overwrite reached the bucket");
    assert_eq!(a.sync_status("docs", &key("d")).unwrap(), SyncStatus::Synced);
    let err = a.resolve_refused(refused[0].sequence, Resolution::Discard).unwrap_err();
    assert!(err.to_string().contains(&format!("sequence number {}", refused[0].sequence)), "{err}");
}

/// Two offline edits of one object refused together: an overwrite of either sends the local
/// copy (the later edit) over the bucket's version, and resolves both (review N9).
#[test]
fn an_overwrite_of_one_of_an_objects_refusals_resolves_them_all() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 0}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.set_offline(true);
    a.put("docs", json!({"v": "a1"}), Some(key("d"))).unwrap();
    a.put("docs", json!({"v": "a2"}), Some(key("d"))).unwrap();
    a.set_offline(false);
    assert_eq!(a.flush().unwrap().rejected.len(), 2);
    let refused = a.refused_writes().unwrap();
    a.resolve_refused(refused[0].sequence, Resolution::Overwrite).unwrap();
    let report = a.flush().unwrap();
    assert_eq!((report.sent, report.rejected.len()), (1, 0), "{report:?}");
    assert_eq!(a.refused_writes().unwrap(), vec![]);
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": "a2"})), "the local copy won");
    assert_eq!(a.sync_status("docs", &key("d")).unwrap(), SyncStatus::Synced);
}

/// A refused remove resolved by overwrite removes the bucket's newer version (review N9).
#[test]
fn an_overwritten_refused_remove_removes_the_object() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 0}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.remove("docs", &KeyRange::only("d")).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "the remove of a version a never saw is refused");
    a.resolve_refused(refused[0].sequence, Resolution::Overwrite).unwrap();
    assert_eq!(a.flush().unwrap().sent, 1);
    assert_eq!(a.refused_writes().unwrap(), vec![]);
    assert!(!c.bucket_dir().join("b/d").exists());
    assert_eq!(b.get("docs", &key("d")).unwrap(), None);
}

/// A refused write of a store that no longer syncs can still be discarded (review residual of
/// the first review's #1), and says why it cannot be overwritten.
#[test]
fn a_refused_write_of_a_store_that_no_longer_syncs_can_be_discarded() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 0}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.put("docs", json!({"v": "a"}), Some(key("d"))).unwrap();
    let sequence = a.refused_writes().unwrap()[0].sequence;
    drop(a);
    let mut local = schema_with(&[("docs", Value::Null)]);
    local.version = 2;
    let mut a = open(&c.dir.path().join("client1.sqlite3"), local);
    assert_eq!(a.refused_writes().unwrap().len(), 1, "kept through the change");
    let err = a.resolve_refused(sequence, Resolution::Overwrite).unwrap_err();
    assert!(err.to_string().contains("no longer syncs"), "{err}");
    a.resolve_refused(sequence, Resolution::Discard).unwrap();
    assert_eq!(a.refused_writes().unwrap(), vec![]);
}

#[test]
fn values_of_fetches_only_what_is_not_cached() {
    let c = Clients::new();
    let immutable = json!({"immutable": true, "Options": {"concurrency": 4}});
    let mut writer = c.client(1, &[("results", immutable.clone())]);
    for i in 0..20 {
        writer.put("results", json!({"i": i}), Some(key(&format!("r{i:02}")))).unwrap();
    }
    let mut reader = c.client(2, &[("results", immutable)]);
    let first: Vec<Key> = (0..10).map(|i| key(&format!("r{i:02}"))).collect();
    let values = reader.values_of("results", &first).unwrap();
    assert_eq!(values[3], Some(json!({"i": 3})));
    assert_eq!(reader.take_sync_stats().count("GET"), 10);
    let all: Vec<Key> = (0..20).map(|i| key(&format!("r{i:02}"))).chain([key("missing")]).collect();
    let values = reader.values_of("results", &all).unwrap();
    assert_eq!(values[19], Some(json!({"i": 19})));
    assert_eq!(values[20], None);
    assert_eq!(reader.take_sync_stats().count("GET"), 11, "10 new and the missing one");
}

#[test]
fn objstore_meta_records_come_from_the_listing_and_the_key_layout() {
    let c = Clients::new();
    let layout = json!({"Options": {"keyLayout": "{platform}/{browser}/{run}"}});
    let results = json!({"immutable": true, "Options": {"metadata": ["version"]}});
    let mut writer = c.client(1, &[("results", results.clone())]);
    for (platform, browser, run) in
        [("linux", "node-20", "0002"), ("linux", "node-20", "0001"), ("linux", "c", "0001"), ("mac", "python", "0001")]
    {
        writer.put("results", json!({"version": "1.0"}), Some(key(&format!("{platform}/{browser}/{run}")))).unwrap();
    }
    let mut meta = json!({"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 60000});
    meta["Options"] = layout["Options"].clone();
    let mut reader = c.client(2, &[("results", results), ("results-meta", meta)]);
    let newest =
        reader.keys("results-meta", &ScanOptions::new().index("platform, browser").unique().limit(50)).unwrap();
    assert_eq!(newest, vec![key("linux/c/0001"), key("linux/node-20/0001"), key("mac/python/0001")]);
    let stats = reader.take_sync_stats();
    // The store fits one listing page: that page is the whole listing.
    assert_eq!((stats.count("LIST"), stats.total()), (1, 1), "{stats:?}");
    let record = reader.get("results-meta", &key("linux/node-20/0002")).unwrap().unwrap();
    assert_eq!(record["metadata"], json!({"platform": "linux", "browser": "node-20", "run": "0002", "version": "1.0"}));
    assert_eq!(record["name"], "linux/node-20/0002");
    assert!(record["etag"].as_str().unwrap().starts_with('"'));
    assert_eq!(reader.take_sync_stats().total(), 0, "inside the refractory period nothing is asked");
    let err = reader.put("results-meta", json!({"name": "x"}), Some(key("x"))).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

/// A cold listing of more objects than one batch (20,000) writes a batch while it goes on and the
/// rest at its end, and holds every record after it, whether it read the first name per pair
/// first or everything at once; a later listing that finds nothing new writes nothing.
#[test]
fn a_cold_listing_larger_than_a_batch_holds_every_object() {
    let c = Clients::new();
    // Objects written as a bucket's files directly (the local bucket lists plain files, their
    // etags computed): 24,000 runs over 6 platforms, 2 runtimes each, so that a listing by
    // platform crosses the batch before its last platform arrives.
    let root = c.bucket_dir().join("b");
    for i in 0..24_000 {
        let dir = root.join(format!("p{}", i % 6)).join(format!("r{}", (i / 6) % 2));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{i:05}")), format!("{{\"i\": {i}}}")).unwrap();
    }
    let meta = json!({"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 60000,
        "Options": {"keyLayout": "{platform}/{browser}/{run}"}});
    let mut newest_first = c.client(1, &[("results-meta", meta.clone())]);
    let pairs =
        newest_first.keys("results-meta", &ScanOptions::new().index("platform, browser").unique().limit(50)).unwrap();
    let firsts = [0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11];
    assert_eq!(pairs, firsts.map(|i| key(&format!("p{}/r{}/{i:05}", i % 6, (i / 6) % 2))));
    assert_eq!(newest_first.count("results-meta", &ScanOptions::new()).unwrap(), 24_000);
    let record = newest_first.get("results-meta", &key("p5/r1/23999")).unwrap().unwrap();
    assert_eq!(record["metadata"], json!({"platform": "p5", "browser": "r1", "run": "23999"}));
    let mut everything = c.client(2, &[("results-meta", meta)]);
    everything.prefetch("results-meta").unwrap();
    assert_eq!(everything.count("results-meta", &ScanOptions::new()).unwrap(), 24_000);
    let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = created.clone();
    everything.db.subscribe(
        objstore_db_core::EventFilter::default(),
        Box::new(move |e: &objstore_db_core::Event| {
            if matches!(e.kind, EventKind::Created | EventKind::Updated) {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }),
    );
    everything.prefetch("results-meta").unwrap();
    assert_eq!(
        created.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "a listing that finds nothing new writes nothing"
    );
}

#[test]
fn prefetch_full_fetches_only_what_is_new_and_removes_what_vanished() {
    let c = Clients::new();
    let docs = json!({"prefetch": "full", "prefetchRefractoryPeriod": 0});
    let mut a = c.client(1, &[("docs", json!({}))]);
    for i in 0..5 {
        a.put("docs", json!({"i": i}), Some(key(&format!("d{i}")))).unwrap();
    }
    let mut b = c.client(2, &[("docs", docs)]);
    assert_eq!(b.count("docs", &ScanOptions::new()).unwrap(), 5);
    let stats = b.take_sync_stats();
    assert_eq!((stats.count("LIST"), stats.count("GET")), (1, 5));
    a.put("docs", json!({"i": 5}), Some(key("d5"))).unwrap();
    a.put("docs", json!({"i": "changed"}), Some(key("d0"))).unwrap();
    a.remove("docs", &KeyRange::only("d1")).unwrap();
    let values = b.values("docs", &ScanOptions::new()).unwrap();
    let stats = b.take_sync_stats();
    assert_eq!((stats.count("LIST"), stats.count("GET")), (1, 2), "{stats:?}");
    assert_eq!(values.len(), 5);
    assert_eq!(values[0], json!({"i": "changed"}));
    assert_eq!(b.get("docs", &key("d1")).unwrap(), None);
}

#[test]
fn synced_stores_take_string_keys_and_the_local_bucket_refuses_escaping_ones() {
    let c = Clients::new();
    let mut db = c.client(1, &[("docs", json!({}))]);
    let err = db.put("docs", json!({}), Some(Key::Number(1.0))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidKey, "{err}");
    for bad in ["", "../escape", "/etc/passwd", "a\0b", "a//b", "a/./b", "a/..", "trailing/"] {
        let err = db.put("docs", json!({"v": 1}), Some(key(bad))).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidKey, "{bad:?}: {err}");
        assert!(err.to_string().contains("cannot be used in a ") || bad.is_empty(), "{bad:?}: {err}");
        if bad.contains("//") || bad.starts_with('/') {
            assert!(err.to_string().contains("directory bucket (file://)"), "{bad:?}: {err}");
        }
        assert_eq!(db.count("docs", &ScanOptions::new()).unwrap(), 0, "{bad:?} left a local record");
    }
    assert_eq!(db.outbox_len().unwrap(), 0);
    // A name only the local bucket cannot hold (its own folder) is refused when sent,
    // kept locally as a refused write, and does not hold up the outbox.
    db.put("docs", json!({"v": 1}), Some(key(".objstore/meta/x"))).unwrap();
    let refused = db.refused_writes().unwrap();
    assert_eq!(refused.len(), 1);
    assert!(refused[0].message.contains("cannot be used in the local bucket"), "{}", refused[0].message);
    assert!(!c.dir.path().join("escape").exists());
}

#[test]
fn the_local_bucket_lists_like_s3() {
    let dir = TempDir::new().unwrap();
    let block = json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": format!("file://{}", dir.path().display())}});
    let config = SyncConfig::from_json("s", &block, &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let keys = ["a/1", "a/2", "a/b/3", "b/1", "b/2/x", "c", "é", "z/"];
    for k in keys.iter().filter(|k| !k.ends_with('/')) {
        bucket.put(k, b"{}", &PutOptions::default(), &Token::default()).unwrap();
    }
    let page_of = |prefix: &str, delimiter: Option<&str>, max: Option<u32>, version| {
        let request = ListRequest {
            prefix: prefix.into(),
            delimiter: delimiter.map(Into::into),
            max_keys: max,
            version,
            ..Default::default()
        };
        list_all(&*bucket, &request, &Token::default()).unwrap()
    };
    for version in [ListVersion::V1, ListVersion::V2] {
        let all = page_of("", None, Some(2), version);
        let names: Vec<&str> = all.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(names, ["a/1", "a/2", "a/b/3", "b/1", "b/2/x", "c", "é"]);
        let top = page_of("", Some("/"), Some(1), version);
        assert_eq!(top.common_prefixes, ["a/", "b/"]);
        assert_eq!(top.objects.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), ["c", "é"]);
        let under_a = page_of("a/", Some("/"), None, version);
        assert_eq!(under_a.common_prefixes, ["a/b/"]);
        assert_eq!(under_a.objects.len(), 2);
    }
    let after = ListRequest { start_after: Some("b/1".into()), ..Default::default() };
    assert_eq!(list_all(&*bucket, &after, &Token::default()).unwrap().objects[0].key, "b/2/x");
}

#[test]
fn offline_reads_serve_the_cache_and_writes_wait_until_back_online() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 1}), Some(key("d"))).unwrap();
    a.take_sync_stats();
    a.set_offline(true);
    assert_eq!(a.get("docs", &key("d")).unwrap(), Some(json!({"v": 1})));
    a.put("docs", json!({"v": 2}), Some(key("d"))).unwrap();
    assert_eq!(a.outbox_len().unwrap(), 1);
    assert_eq!(a.flush().unwrap_err().code(), ErrorCode::Network);
    assert_eq!(a.take_sync_stats().total(), 0, "offline means no request at all");
    a.set_offline(false);
    let flushed = record_events(&mut a, &[EventKind::Flushed]);
    assert_eq!(a.flush().unwrap().sent, 1);
    assert_eq!(flushed.lock().unwrap()[0].key, Some(key("d")));
    let mut b = c.client(2, &[("docs", json!({}))]);
    let fetched = record_events(&mut b, &[EventKind::Fetched]);
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": 2})));
    assert_eq!(fetched.lock().unwrap().len(), 1);
}

#[test]
fn writes_made_on_top_of_a_refused_one_are_not_sent_blind() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 0}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.set_offline(true);
    a.put("docs", json!({"v": "a1"}), Some(key("d"))).unwrap();
    a.put("docs", json!({"v": "a2"}), Some(key("d"))).unwrap();
    a.set_offline(false);
    let report = a.flush().unwrap();
    assert_eq!((report.sent, report.rejected.len()), (0, 2), "{report:?}");
    assert!(report.rejected.iter().all(|(_, e)| e.code() == ErrorCode::Conflict));
    assert_eq!(b.get("docs", &key("d")).unwrap(), Some(json!({"v": "b"})), "b's version stands");
    assert_eq!(a.get("docs", &key("d")).unwrap(), Some(json!({"v": "a2"})), "a keeps its data until resolved");
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 2);
    // The second was made on top of the first: discarding the first discards both.
    a.resolve_refused(refused[0].sequence, Resolution::Discard).unwrap();
    assert_eq!(a.refused_writes().unwrap(), vec![]);
    assert_eq!(a.get("docs", &key("d")).unwrap(), Some(json!({"v": "b"})));
}

#[test]
fn a_put_and_remove_in_one_transaction_leave_no_stale_version() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.run(&["docs"], objstore_db_core::Mode::ReadWrite, |tx| {
        tx.put("docs", json!({"v": 1}), Some(key("k")))?;
        tx.remove("docs", &KeyRange::only("k")).map(|_| ())
    })
    .unwrap();
    a.put("docs", json!({"v": 2}), Some(key("k"))).unwrap();
    assert_eq!(a.outbox_len().unwrap(), 0);
}

#[test]
fn a_write_refused_inside_a_transaction_never_reaches_the_bucket() {
    let c = Clients::new();
    let sync = file_sync(&c.bucket_dir(), json!({}));
    let schema = objstore_db_core::Schema::from_json(
        &json!({"stores": [{"name": "people", "keyPath": "id", "indexes": [{"keyPath": "email", "unique": true}], "Sync": sync}]})
            .to_string(),
    )
    .unwrap();
    let mut db = open(&c.dir.path().join("u.sqlite3"), schema);
    let tx = db.begin(&["people"], objstore_db_core::Mode::ReadWrite).unwrap();
    db.transaction(tx).unwrap().put("people", json!({"id": "a", "email": "x@y"}), None).unwrap();
    let clash = db.transaction(tx).unwrap().put("people", json!({"id": "b", "email": "x@y"}), None);
    assert_eq!(clash.unwrap_err().code(), ErrorCode::Constraint);
    db.commit(tx).unwrap();
    db.flush().unwrap();
    assert!(c.bucket_dir().join("b/a").exists());
    assert!(!c.bucket_dir().join("b/b").exists(), "the refused write was not sent");
}

#[test]
fn a_bad_sync_block_is_refused_before_the_schema_is_stored() {
    let c = Clients::new();
    let path = c.dir.path().join("typo.sqlite3");
    let typo = json!({"stores": [{"name": "docs", "Sync": {"format": "objstore", "Options": {"bukket": "b"}}}]});
    let err = objstore_db_core::Database::open(
        path.to_str().unwrap(),
        Some(objstore_db_core::Schema::from_json(&typo.to_string()).unwrap()),
        &Default::default(),
    )
    .map(|_| ())
    .unwrap_err();
    assert!(err.to_string().contains("bukket"), "{err}");
    open(&path, schema_with(&[("docs", file_sync(&c.bucket_dir(), json!({})))]));
}

#[test]
fn the_local_bucket_refuses_keys_it_cannot_hold_without_blocking_the_outbox() {
    let c = Clients::new();
    let mut db = c.client(1, &[("docs", json!({}))]);
    db.put("docs", json!({"v": 1}), Some(key("a"))).unwrap();
    db.put("docs", json!({"v": 2}), Some(key("a/b"))).unwrap();
    let refused = db.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "a file cannot also be a folder in the local bucket");
    assert_eq!(refused[0].code, "InvalidArgument");
    assert_eq!(db.outbox_len().unwrap(), 0, "the refused write does not block the ones after it");
    db.put("docs", json!({"v": 3}), Some(key("c"))).unwrap();
    db.put("docs", json!({"v": 4}), Some(key("d/e"))).unwrap();
    let mut other = c.client(2, &[("docs", json!({}))]);
    assert_eq!(other.get("docs", &key("d")).unwrap(), None, "a folder is not an object");
    std::fs::remove_file(c.bucket_dir().join("b/c")).unwrap();
    assert_eq!(other.get("docs", &key("c")).unwrap(), None, "a removed file is a missing object");
    other.add("docs", json!({"v": 5}), Some(key("c"))).unwrap();
}

#[test]
fn a_put_or_remove_of_an_object_never_read_does_not_overwrite_it() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    b.put("docs", json!({"by": "b"}), Some(key("k"))).unwrap();
    b.put("docs", json!({"by": "b"}), Some(key("gone"))).unwrap();
    // a never read k: its put must find no object there.
    a.put("docs", json!({"by": "a"}), Some(key("k"))).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].code, "Conflict");
    assert_eq!(a.db.get("docs", &key("k")).unwrap(), Some(json!({"by": "a"})), "a keeps its data");
    let body: Value = serde_json::from_slice(&std::fs::read(c.bucket_dir().join("b/k")).unwrap()).unwrap();
    assert_eq!(body, json!({"by": "b"}), "b's object stands");
    // Nor does a remove of an object a never read delete it.
    a.db.put("docs", json!({"local": true}), Some(key("gone"))).unwrap();
    a.db.remove("docs", &KeyRange::only("gone")).unwrap();
    a.flush().unwrap();
    assert!(c.bucket_dir().join("b/gone").exists(), "b's object was not deleted blind");
    assert_eq!(a.refused_writes().unwrap().len(), 3, "k's put, and gone's put and remove");
    // A remove of an object that is not there is done without a DELETE.
    a.db.put("docs", json!({"v": 1}), Some(key("never-sent"))).unwrap();
    a.db.remove("docs", &KeyRange::only("never-sent")).unwrap();
    a.take_sync_stats();
    assert_eq!(a.flush().unwrap().rejected.len(), 0);
    assert_eq!(a.outbox_len().unwrap(), 0);
}

#[test]
fn a_remove_of_an_object_another_client_changed_is_a_conflict() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    a.put("docs", json!({"v": 1}), Some(key("d"))).unwrap();
    b.get("docs", &key("d")).unwrap();
    b.put("docs", json!({"v": "b"}), Some(key("d"))).unwrap();
    a.remove("docs", &KeyRange::only("d")).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].code, "Conflict");
    assert!(refused[0].message.contains("last saw"), "{}", refused[0].message);
    assert!(c.bucket_dir().join("b/d").exists(), "b's version stands");
    // Writes queued one after another on the same object each build on the last one sent.
    a.set_offline(true);
    a.put("docs", json!({"v": 1}), Some(key("e"))).unwrap();
    a.put("docs", json!({"v": 2}), Some(key("e"))).unwrap();
    a.remove("docs", &KeyRange::only("e")).unwrap();
    a.set_offline(false);
    let report = a.flush().unwrap();
    assert_eq!((report.sent, report.rejected.len()), (3, 0), "{report:?}");
    assert!(!c.bucket_dir().join("b/e").exists());
}

/// The store "docs" at `version`, syncing to the shared bucket with the given Options.
fn versioned(c: &Clients, version: u64, options: Value) -> objstore_db_core::Schema {
    let sync = file_sync(&c.bucket_dir(), json!({ "Options": options }));
    objstore_db_core::Schema::from_json(
        &json!({"version": version, "stores": [{"name": "docs", "Sync": sync}]}).to_string(),
    )
    .unwrap()
}

#[test]
fn a_migration_keeps_pending_writes_or_is_refused_while_they_wait() {
    let c = Clients::new();
    let path = c.dir.path().join("m.sqlite3");
    let mut db = open(&path, versioned(&c, 1, json!({})));
    db.set_offline(true);
    db.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    drop(db);
    // Timeouts and retries are not where the store syncs: the write stays queued.
    let mut db = open(&path, versioned(&c, 2, json!({"timeoutMs": 5000, "retries": 1})));
    assert_eq!(db.outbox_len().unwrap(), 1, "the pending write survived the migration");
    drop(db);
    // Another prefix is: the migration is refused while the write waits, and nothing is lost.
    let moved = objstore_db_core::Database::open(
        path.to_str().unwrap(),
        Some(versioned(&c, 3, json!({"prefix": "elsewhere/"}))),
        &Default::default(),
    )
    .map(|_| ())
    .unwrap_err();
    assert_eq!(moved.code(), ErrorCode::Schema);
    assert!(moved.to_string().contains("1 write(s) waiting"), "{moved}");
    let mut db = open(&path, versioned(&c, 2, json!({"timeoutMs": 5000, "retries": 1})));
    assert_eq!(db.flush().unwrap().sent, 1);
    drop(db);
    open(&path, versioned(&c, 3, json!({"prefix": "elsewhere/"})));
}

#[test]
fn credentials_are_never_stored_and_rotating_them_changes_no_schema() {
    let c = Clients::new();
    let path = c.dir.path().join("creds.sqlite3");
    let creds =
        |secret: &str| json!({"accessKeyId": "AKIDEXAMPLE", "secretAccessKey": secret, "sessionToken": "tok-123"});
    let mut db = open(&path, versioned(&c, 1, creds("s3cr3t-one")));
    db.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    let stored = db.schema().to_json();
    assert!(!stored.contains("s3cr3t") && !stored.contains("AKIDEXAMPLE"), "{stored}");
    drop(db);
    for file in std::fs::read_dir(c.dir.path()).unwrap() {
        let file = file.unwrap().path();
        if file.is_file() {
            let bytes = std::fs::read(&file).unwrap();
            for secret in ["s3cr3t-one", "AKIDEXAMPLE", "tok-123"] {
                assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} is in {file:?}");
            }
        }
    }
    // The same version with a rotated secret opens: credentials are not part of the schema.
    let mut db = open(&path, versioned(&c, 1, creds("s3cr3t-two")));
    assert_eq!(db.get("docs", &key("k")).unwrap(), Some(json!({"v": 1})));
}

fn local_bucket(dir: &Path) -> std::sync::Arc<dyn objstore_db_core::bucket::Bucket> {
    let block =
        json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": format!("file://{}", dir.display())}});
    open_bucket(&SyncConfig::from_json("s", &block, &|_| None).unwrap().connection, Default::default()).unwrap()
}

fn metadata(pairs: &[(&str, &str)]) -> objstore_db_core::bucket::Metadata {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A body put in place without its record (a file copied in by hand, or a writer of a bucket
/// kept with sidecars killed between its two renames): the record there describes the previous
/// body, which has the same size.
fn killed_between_the_renames(dir: &Path, bucket: &dyn objstore_db_core::bucket::Bucket) {
    bucket
        .put(
            "k",
            br#"{"v":1}"#,
            &PutOptions { metadata: metadata(&[("run", "old")]), ..PutOptions::default() },
            &Token::default(),
        )
        .unwrap();
    let tmp = dir.join("b/.objstore/tmp/new-body");
    std::fs::write(&tmp, br#"{"v":2}"#).unwrap();
    std::fs::rename(&tmp, dir.join("b/k")).unwrap();
}

#[test]
fn the_local_bucket_notices_a_body_its_record_does_not_describe() {
    let dir = TempDir::new().unwrap();
    let bucket = local_bucket(dir.path());
    killed_between_the_renames(dir.path(), &*bucket);
    let (info, _) = bucket.head("k", &Token::default()).unwrap().unwrap();
    assert_eq!(info.etag, objstore_db_core::bucket::etag_of(br#"{"v":2}"#), "not the previous body's etag");
    let listed = list_all(&*bucket, &ListRequest::default(), &Token::default()).unwrap();
    assert_eq!(listed.objects[0].etag, info.etag);
}

#[test]
fn a_restart_flush_that_finds_its_own_body_finishes_the_record() {
    let dir = TempDir::new().unwrap();
    let bucket = local_bucket(dir.path());
    killed_between_the_renames(dir.path(), &*bucket);
    // The write is sent again after the restart, conditional on the version it was made on.
    let old = objstore_db_core::bucket::etag_of(br#"{"v":1}"#);
    let new = metadata(&[("run", "new")]);
    let etag = bucket
        .put(
            "k",
            br#"{"v":2}"#,
            &PutOptions { mode: PutMode::Update(old), metadata: new.clone(), ..PutOptions::default() },
            &Token::default(),
        )
        .unwrap();
    assert_eq!(etag, Some(objstore_db_core::bucket::etag_of(br#"{"v":2}"#)));
    assert_eq!(bucket.head("k", &Token::default()).unwrap().unwrap().1, new);
    assert_eq!(local_bucket(dir.path()).head("k", &Token::default()).unwrap().unwrap().1, new, "the record was set");
}

/// A link planted in the bucket's folder by anyone who may write it carries no write, and no
/// read, outside the bucket: an object under a linked folder, or an object that is a link, is
/// refused and names the link; a temporary file is made new, under a name no one can plant
/// ahead (the old one was the pid and the thread's number).
#[test]
fn links_in_the_local_bucket_carry_nothing_outside_it() {
    let dir = TempDir::new().unwrap();
    let bucket = local_bucket(dir.path());
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("b/linked")).unwrap();
    std::fs::write(outside.join("victim"), b"kept").unwrap();
    std::os::unix::fs::symlink(outside.join("victim"), dir.path().join("b/object")).unwrap();
    let put = |key: &str| bucket.put(key, br#"{"v":1}"#, &PutOptions::default(), &Token::default());
    for key in ["linked/run", "object"] {
        let refused = put(key).unwrap_err().to_string();
        assert!(refused.contains("is a symbolic link"), "{key}: {refused}");
        let read = bucket.head(key, &Token::default()).unwrap_err().to_string();
        assert!(read.contains("is a symbolic link"), "{key}: {read}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing was written outside");
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"kept");
    // Writes elsewhere go on, each through a temporary file of its own.
    put("fine/run").unwrap();
    let tmp = dir.path().join("b/.objstore/tmp");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "its temporary files are gone");
}

#[test]
fn temporary_files_of_killed_writers_are_removed_at_open() {
    let dir = TempDir::new().unwrap();
    local_bucket(dir.path());
    let tmp = dir.path().join("b/.objstore/tmp");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    std::fs::write(tmp.join(format!("{dead}-ThreadId(3)")), b"half a body").unwrap();
    let mine = tmp.join(format!("{}-ThreadId(99)", std::process::id()));
    std::fs::write(&mine, b"a live writer's").unwrap();
    local_bucket(dir.path());
    assert!(!tmp.join(format!("{dead}-ThreadId(3)")).exists(), "the killed writer's file is gone");
    assert!(mine.exists(), "a live process's file is left alone");
}

#[test]
fn a_full_prefetch_leaves_out_objects_it_cannot_use_and_does_not_fetch_them_again() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.put("docs", json!({"ok": true}), Some(key("good"))).unwrap();
    a.put("docs", json!({"text": "x".repeat(2000)}), Some(key("big"))).unwrap();
    std::fs::write(c.bucket_dir().join("b/bad"), b"<html>not json</html>").unwrap();
    let docs = json!({"prefetch": "full", "prefetchRefractoryPeriod": 0, "Options": {"maxObjectBytes": 1000}});
    let mut b = c.client(2, &[("docs", docs)]);
    let errors = record_events(&mut b, &[EventKind::Error]);
    assert_eq!(b.values("docs", &ScanOptions::new()).unwrap(), vec![json!({"ok": true})]);
    let mut reported: Vec<String> =
        errors.lock().unwrap().iter().map(|e| e.message.clone().unwrap_or_default()).collect();
    reported.sort();
    assert_eq!(reported.len(), 2, "{reported:?}");
    assert!(reported[0].contains("\"bad\"") && reported[0].contains("not JSON"), "{reported:?}");
    assert!(reported[1].contains("\"big\"") && reported[1].contains("1000-byte limit"), "{reported:?}");
    b.take_sync_stats();
    assert_eq!(b.count("docs", &ScanOptions::new()).unwrap(), 1);
    let stats = b.take_sync_stats();
    assert_eq!((stats.count("LIST"), stats.count("GET")), (1, 0), "nothing fetched again: {stats:?}");
    let err = b.get("docs", &key("big")).unwrap_err();
    assert!(err.to_string().contains("1000-byte limit"), "{err}");
    // Once it changes, it is fetched again.
    a.put("docs", json!({"text": "small now"}), Some(key("big"))).unwrap();
    assert_eq!(b.get("docs", &key("big")).unwrap(), Some(json!({"text": "small now"})));
}

/// The sync state (versions known, refused writes, unusable marks) lives beside the records in
/// whichever mechanism holds them: the rules hold alike on both.
#[test]
fn the_sync_rules_hold_on_both_mechanisms() {
    for mechanism in [objstore_db_core::MechanismKind::Sqlite, objstore_db_core::MechanismKind::Memory] {
        let c = Clients::new();
        let mut a = c.client(1, &[("docs", json!({}))]);
        a.put("docs", json!({"by": "a"}), Some(key("k"))).unwrap();
        std::fs::write(c.bucket_dir().join("b/bad"), b"not json").unwrap();
        let schema = schema_with(&[("docs", file_sync(&c.bucket_dir(), json!({})))]);
        let mut b = sync_support::open_on(&c.dir.path().join("b.sqlite3"), schema, mechanism);
        b.put("docs", json!({"by": "b"}), Some(key("k"))).unwrap();
        assert_eq!(b.refused_writes().unwrap()[0].code, "Conflict", "{mechanism:?}");
        assert_eq!(b.values_of("docs", &[key("bad"), key("none")]).unwrap(), vec![None, None]);
        assert_eq!(b.sync_status("docs", &key("bad")).unwrap(), SyncStatus::Unusable, "{mechanism:?}");
        b.take_sync_stats();
        assert!(b.get("docs", &key("bad")).is_err());
        assert_eq!(b.take_sync_stats().bytes_received, 0, "{mechanism:?}: not downloaded again");
    }
}

/// A prefetch: meta store drops a copy another writer changed; the application's edit of the
/// old record, put afterwards, must not replace the newer object.
#[test]
fn an_edit_of_a_copy_a_meta_prefetch_dropped_is_a_conflict() {
    let c = Clients::new();
    let meta = json!({"prefetch": "meta", "prefetchRefractoryPeriod": 0});
    let mut a = c.client(1, &[("docs", meta)]);
    let mut b = c.client(2, &[("docs", json!({}))]);
    b.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    let old = a.get("docs", &key("k")).unwrap().unwrap();
    b.get("docs", &key("k")).unwrap();
    b.put("docs", json!({"v": 2}), Some(key("k"))).unwrap();
    a.count("docs", &ScanOptions::new()).unwrap(); // the listing shows k changed: its copy goes
    let mut edited = old;
    edited["note"] = json!("edited from v1");
    a.put("docs", edited, Some(key("k"))).unwrap();
    let refused = a.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].code, "Conflict");
    let body: Value = serde_json::from_slice(&std::fs::read(c.bucket_dir().join("b/k")).unwrap()).unwrap();
    assert_eq!(body, json!({"v": 2}), "the other writer's newer object stands");
}

#[test]
fn a_withdrawn_pending_write_never_lands() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.set_offline(true);
    a.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    a.put("docs", json!({"v": 2}), Some(key("k"))).unwrap();
    a.put("docs", json!({"v": 1}), Some(key("other"))).unwrap();
    assert_eq!(a.withdraw_pending("docs", &key("k")).unwrap(), 2);
    assert_eq!(a.db.get("docs", &key("k")).unwrap(), None, "the local record went with them");
    assert_eq!(a.outbox_len().unwrap(), 1);
    a.set_offline(false);
    assert_eq!(a.flush().unwrap().sent, 1, "only the other write is sent");
    assert!(!c.bucket_dir().join("b/k").exists());
    assert_eq!(a.withdraw_pending("docs", &key("k")).unwrap(), 0);
    assert!(a.withdraw_pending("nope", &key("k")).is_err());
}

/// An answer still on its way for a withdrawn write never settles a later write: outbox
/// numbers are never given twice, and an answer names the write it is for (review N1).
#[test]
fn an_answer_for_a_withdrawn_write_never_settles_a_later_one() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.set_offline(true);
    a.put("docs", json!({"run": "A"}), Some(key("a"))).unwrap();
    let in_flight = a.db.outbox_batch(0, 10).unwrap().remove(0);
    assert_eq!(a.withdraw_pending("docs", &key("a")).unwrap(), 1);
    a.put("docs", json!({"run": "C"}), Some(key("c"))).unwrap();
    let waiting = a.db.outbox_batch(0, 10).unwrap();
    assert_ne!(waiting[0].sequence, in_flight.sequence, "a withdrawn write's number is not given again");
    // A's send lands late, with the number A had (and with C's, as a stale answer might).
    for sequence in [in_flight.sequence, waiting[0].sequence] {
        let late = Change::Sent { sequence, store: "docs".into(), id: "a".into(), etag: Some("\"a-etag\"".into()) };
        a.db.apply_sync(vec![late]).unwrap();
    }
    assert_eq!(a.outbox_len().unwrap(), 1, "C still waits");
    assert_eq!(a.sync_status("docs", &key("c")).unwrap(), SyncStatus::Pending);
    a.set_offline(false);
    assert_eq!(a.flush().unwrap().sent, 1);
    assert!(c.bucket_dir().join("b/c").exists(), "C reaches the bucket");
    assert_eq!(a.sync_status("docs", &key("c")).unwrap(), SyncStatus::Synced);
}

/// A flush sends the first write of each object together (several at a time), and still
/// applies every object's writes in order.
#[test]
fn a_flush_sends_writes_to_different_objects_together_and_each_objects_in_order() {
    let c = Clients::new();
    let mut a = c.client(1, &[("docs", json!({}))]);
    a.set_offline(true);
    for round in 0..3 {
        for i in 0..40 {
            a.put("docs", json!({"i": i, "round": round}), Some(key(&format!("k{i}")))).unwrap();
        }
    }
    a.remove("docs", &KeyRange::only("k7")).unwrap();
    a.set_offline(false);
    let report = a.flush().unwrap();
    assert_eq!((report.sent, report.rejected.len(), report.pending), (121, 0, 0), "{report:?}");
    let mut b = c.client(2, &[("docs", json!({}))]);
    for i in [0, 13, 39] {
        assert_eq!(b.get("docs", &key(&format!("k{i}"))).unwrap(), Some(json!({"i": i, "round": 2})));
    }
    assert_eq!(b.get("docs", &key("k7")).unwrap(), None);
}

#[test]
fn the_local_bucket_makes_folders_outside_its_lock_and_a_refused_write_leaves_none() {
    let dir = TempDir::new().unwrap();
    let bucket = local_bucket(dir.path());
    let (plain, create) = (PutOptions::default(), PutOptions { mode: PutMode::Create, ..PutOptions::default() });
    bucket.put("a/b/one", b"1", &plain, &Token::default()).unwrap();
    // A create-only write refused (412) into folders of its own leaves none of them behind.
    bucket.put("x/y/z", b"1", &plain, &Token::default()).unwrap();
    bucket.delete("x/y/z", &Token::default()).unwrap();
    let err = bucket.put("a/b/one", b"2", &create, &Token::default()).unwrap_err();
    assert!(err.to_string().contains("412"), "{err}");
    let update = PutOptions { mode: PutMode::Update("\"e\"".into()), ..PutOptions::default() };
    let err = bucket.put("new/deep/k", b"2", &update, &Token::default()).unwrap_err();
    assert!(err.to_string().contains("there is no object to match"), "{err}");
    assert!(!dir.path().join("b/new").exists());
    let err = bucket.put("a/b/one/under", b"2", &plain, &Token::default()).unwrap_err();
    assert!(err.to_string().contains("the object \"a/b/one\" is where its folder would be"), "{err}");
    assert!(!dir.path().join("b/a/b/one").is_dir());
    let err = bucket.put("a/b", b"2", &plain, &Token::default()).unwrap_err();
    assert!(err.to_string().contains("objects already live under \"a/b\"/"), "{err}");
    assert!(!dir.path().join("b/x").exists(), "the delete took its emptied folders");
    // An empty folder where an object goes (a write killed after making it) does not refuse it.
    std::fs::create_dir_all(dir.path().join("b/left/behind")).unwrap();
    std::fs::remove_dir(dir.path().join("b/left/behind")).unwrap();
    bucket.put("left", b"1", &plain, &Token::default()).unwrap();
    assert_eq!(bucket.head("left", &Token::default()).unwrap().unwrap().0.size, 1);
    // Folders emptied by a delete between a writer's making them and its rename are made again.
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let bucket = bucket.clone();
            std::thread::spawn(move || {
                for n in 0..25 {
                    let key = format!("shared/{}/{t}", n % 3);
                    bucket.put(&key, b"v", &PutOptions::default(), &Token::default()).unwrap();
                    bucket.delete(&key, &Token::default()).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    let listed = list_all(&*bucket, &ListRequest::default(), &Token::default()).unwrap();
    assert_eq!(listed.objects.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), ["a/b/one", "left"]);
}
