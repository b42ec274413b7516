//! Checkpoints (`Options.checkpoints`): a cold reader starts from the newest checkpoint and the
//! change log after it, in a handful of requests whatever the store's history, and ends with
//! the records a full listing gives, with writes, overwrites and removes racing the checkpoint;
//! a checkpoint that cannot be read is stepped over. Each scenario runs on the `file://`
//! bucket, moto and Garage.

mod sync_support;

use std::path::Path;

use objstore_db_core::bucket::{list_all, open_bucket, ListRequest};
use objstore_db_core::sync::{SyncConfig, Token};
use objstore_db_core::{Key, KeyRange, ScanOptions};
use serde_json::{json, Value};
use sync_support::*;
use tempfile::TempDir;

const PAIRS: usize = 5;
const PER_PAIR: usize = 12;

/// A writer's mutable store, each record under `{platform}/{runtime}/{run}`.
fn writer(path: &Path, options: &Value) -> Client {
    let o = with(
        options,
        json!({"changeLog": true, "checkpoints": true, "checkpointHeads": 3,
        "checkpointRangeObjects": 20}),
    );
    open(path, schema_with(&[("docs", json!({"format": "objstore", "Options": o}))]))
}

/// A reader's descriptions of the same objects, with the pair index a view of every pair's
/// newest names scans; `checkpoints`: whether it starts from them.
fn reader(path: &Path, options: &Value, checkpoints: bool) -> Client {
    let mut o = with(options, json!({"changeLog": true, "keyLayout": "{platform}/{runtime}/{run}"}));
    if checkpoints {
        o["checkpoints"] = json!(true);
    }
    let block = json!({"name": "meta", "keyPath": "name",
        "indexes": [{"name": "pair", "keyPath": ["metadata.platform", "metadata.runtime"]}],
        "Sync": {"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 0, "Options": o}});
    let schema = objstore_db_core::Schema::from_json(&json!({"version": 1, "stores": [block]}).to_string()).unwrap();
    open(path, schema)
}

fn name(pair: usize, run: usize) -> String {
    format!("p{}/rt{pair}/{run:04}", pair % 2)
}

/// Each record as (name, etag, size): what a listing says of it.
fn described(client: &mut Client, scan: &ScanOptions) -> Vec<(String, String, u64)> {
    let values = client.values("meta", scan).unwrap();
    values
        .iter()
        .map(|v| (v["name"].as_str().unwrap().into(), v["etag"].as_str().unwrap().into(), v["size"].as_u64().unwrap()))
        .collect()
}

fn pair_scan(pair: &str, after: Option<&str>, limit: usize) -> ScanOptions {
    let lower = after.map_or_else(|| format!("{pair}/"), |a| format!("{a}0"));
    ScanOptions::new().range(KeyRange::bound(lower, format!("{pair}0"), false, true)).limit(limit)
}

#[test]
fn a_cold_reader_through_a_checkpoint_ends_with_the_records_a_full_listing_gives() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("checkpoint-cold", dir.path()) {
        let mut w = writer(&dir.path().join(format!("{place}-w.sqlite3")), &options);
        for pair in 0..PAIRS {
            for run in 0..PER_PAIR {
                w.db.put("docs", json!({"run": run}), Some(Key::String(name(pair, run)))).unwrap();
            }
        }
        w.flush().unwrap();

        // Writes racing the checkpoint: a second writer's, between the listing and the
        // manifest, can land either side of its position; the change log has them all.
        let racing = {
            let (path, options) = (dir.path().join(format!("{place}-w2.sqlite3")), options.clone());
            std::thread::spawn(move || {
                let mut w2 = writer(&path, &options);
                for i in 0..10 {
                    w2.put("docs", json!({"racing": i}), Some(Key::String(name(i % PAIRS, 100 + i)))).unwrap();
                }
                w2.remove("docs", &KeyRange::only(name(0, 100))).unwrap();
            })
        };
        let report = w.checkpoint("docs").unwrap();
        racing.join().unwrap();
        assert!(report.objects >= (PAIRS * PER_PAIR) as u64, "{place}: {report:?}");
        assert!(report.shards >= 3, "{place}: several range shards and the heads: {report:?}");

        // After the checkpoint: an overwrite, removes in and beyond a pair's heads, a new
        // newest name, a new pair.
        w.put("docs", json!({"run": "again"}), Some(Key::String(name(0, 0)))).unwrap();
        w.remove("docs", &KeyRange::only(name(2, 1))).unwrap();
        w.remove("docs", &KeyRange::only(name(3, 9))).unwrap();
        w.put("docs", json!({"new": true}), Some(Key::String(name(4, 0).replace("0000", "0000a")))).unwrap();
        w.put("docs", json!({"new": "pair"}), Some(Key::String(name(PAIRS, 0)))).unwrap();

        let mut listed = reader(&dir.path().join(format!("{place}-listed.sqlite3")), &options, false);
        let everything = described(&mut listed, &ScanOptions::new());
        assert_eq!(everything.len(), PAIRS * PER_PAIR + 10 - 1 - 2 + 2, "{place}");

        // Every pair's newest names: the manifest and the heads, then the log (which names every
        // write here: the log's word on the head removed since needs no page of its pair).
        let mut cold = reader(&dir.path().join(format!("{place}-cold.sqlite3")), &options, true);
        let firsts = ScanOptions::new().index("pair").unique();
        let newest = cold.keys("meta", &firsts).unwrap();
        assert_eq!(newest, listed.keys("meta", &firsts).unwrap(), "{place}");
        let stats = cold.take_sync_stats();
        // The wave markers of the log's window before the checkpoint came with it, in a shard of
        // their own: one GET for all of them.
        assert!(waves(&options) >= 1, "{place}: the first writes went in a wave");
        assert_eq!((stats.count("LIST"), stats.count("GET")), (2, 3), "{place}: {stats:?}");
        // A pair's newest names past its heads: the tail shard, read once for every pair in it;
        // further back, its range shard (the change log's word since the checkpoint kept over
        // it: a name removed since stays removed), and the log's refresh (the refractory period
        // is 0 here).
        for (i, pair) in (0..=PAIRS).enumerate() {
            let pair = name(pair, 0);
            let pair = &pair[..pair.rfind('/').unwrap()];
            assert_eq!(
                described(&mut cold, &pair_scan(pair, None, 2)),
                described(&mut listed, &pair_scan(pair, None, 2))
            );
            // The refresh a scan of a prefetching store makes after it answered: one LIST.
            let stats = cold.take_sync_stats();
            let tail = u64::from(i == 0);
            assert_eq!((stats.count("GET"), stats.total()), (tail, 1 + tail), "{place}: {pair}: {stats:?}");
        }
        let deep = pair_scan("p1/rt3", Some(&name(3, 2)), 20);
        assert_eq!(described(&mut cold, &deep), described(&mut listed, &deep), "{place}");
        let stats = cold.take_sync_stats();
        assert_eq!((stats.count("GET"), stats.count("LIST")), (1, 1), "{place}: {stats:?}");
        // Read once: the same scan again reads no shard.
        assert_eq!(described(&mut cold, &deep), described(&mut listed, &deep), "{place}");
        assert_eq!(cold.take_sync_stats().count("GET"), 0, "{place}: the range shard is held");
        // The whole store: every range shard, then the log.
        assert_eq!(described(&mut cold, &ScanOptions::new()), everything, "{place}");

        // A cold reader of the whole store at once.
        let mut whole = reader(&dir.path().join(format!("{place}-whole.sqlite3")), &options, true);
        assert_eq!(described(&mut whole, &ScanOptions::new()), everything, "{place}");
        let stats = whole.take_sync_stats();
        assert_eq!(stats.count("LIST"), 2, "{place}: the checkpoints' one key and the log: {stats:?}");
        // The manifest, the range shards and the waves' (not the heads and tails).
        assert_eq!(stats.count("GET"), 1 + report.shards as u64 - 2, "{place}: {stats:?}");
    }
}

/// A cold view of every pair's newest names reads the heads, a quarter of each pair's first
/// names (at least one); a scan past them, or a keyed read of a name further back, reads the tail
/// shard over its pair (a GET for a page of pairs), and the change log's word since the
/// checkpoint is kept over it.
#[test]
fn a_pairs_tail_is_read_when_a_read_goes_past_its_heads() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("checkpoint-held", dir.path()).into_iter().take(2) {
        let options = with(&options, json!({"changeLogWindowMs": 1000}));
        let mut w = writer(&dir.path().join(format!("{place}-w.sqlite3")), &options);
        for run in 0..16 {
            w.db.put("docs", json!({"run": run}), Some(Key::String(name(run % 2, run)))).unwrap();
        }
        w.flush().unwrap();
        // Past the log's window (a bucket's clock has whole seconds): the checkpoint alone
        // names these. Three heads a pair: one in the heads shard, two in the tail shard.
        std::thread::sleep(std::time::Duration::from_millis(2_500));
        let report = w.checkpoint("docs").unwrap();
        w.remove("docs", &KeyRange::only(name(0, 4))).unwrap();

        let mut listed = reader(&dir.path().join(format!("{place}-listed.sqlite3")), &options, false);
        let mut cold = reader(&dir.path().join(format!("{place}-cold.sqlite3")), &options, true);
        let firsts = ScanOptions::new().index("pair").unique();
        assert_eq!(cold.keys("meta", &firsts).unwrap(), listed.keys("meta", &firsts).unwrap(), "{place}");
        cold.take_sync_stats();
        assert_eq!(cold.db.count("meta", &ScanOptions::new()).unwrap(), 2, "{place}: one head of each pair applied");
        // Offline, a scan past pair 0's head answers what is held: the tail needs a request.
        cold.set_offline(true);
        let scan = pair_scan("p0/rt0", None, 2);
        assert_eq!(described(&mut cold, &scan).len(), 1, "{place}: offline");
        cold.set_offline(false);
        assert_eq!(cold.take_sync_stats().total(), 0, "{place}");
        // A keyed read of a name in pair 1's tail: the tail shard is read, both pairs' tails in
        // it, but for the name the log removed since.
        let held = cold.get_cached("meta", &Key::String(name(1, 3))).unwrap();
        assert_eq!(held.map(|v| v["name"].clone()), Some(json!(name(1, 3))), "{place}");
        assert_eq!(cold.db.count("meta", &ScanOptions::new()).unwrap(), 5, "{place}");
        assert_eq!(cold.take_sync_stats().count("GET"), 1, "{place}: the tail shard");
        let scan = pair_scan("p0/rt0", None, 2);
        assert_eq!(described(&mut cold, &scan), described(&mut listed, &scan), "{place}: from the tail");
        // Three names: the heads and tail are short of them, so its range shard too.
        let scan = pair_scan("p0/rt0", None, 3);
        let expected = described(&mut listed, &scan);
        assert_eq!(expected.iter().map(|d| d.0.clone()).collect::<Vec<_>>(), [name(0, 0), name(0, 2), name(0, 6)]);
        assert_eq!(described(&mut cold, &scan), expected, "{place}");
        assert_eq!(cold.take_sync_stats().count("GET"), 1, "{place}: the range shard");
        // Pair 1, read with the tail: no shard read.
        let scan = pair_scan("p1/rt1", None, 3);
        assert_eq!(described(&mut cold, &scan), described(&mut listed, &scan), "{place}");
        assert_eq!(cold.take_sync_stats().count("GET"), 0, "{place}: from the heads and tail");

        // A tail shard that cannot be read gives way to a listing, with the same answer.
        let stamp = report.manifest.rsplit('/').next().unwrap().trim_end_matches(".json");
        put_raw(&options, &format!(".objstore-checkpoints/{stamp}/t00000.json"), b"not a shard");
        let mut broken = reader(&dir.path().join(format!("{place}-broken.sqlite3")), &options, true);
        assert_eq!(broken.keys("meta", &firsts).unwrap(), listed.keys("meta", &firsts).unwrap(), "{place}");
        let scan = pair_scan("p1/rt1", None, 3);
        assert_eq!(described(&mut broken, &scan), described(&mut listed, &scan), "{place}: listed instead");
    }
}

/// A name no record can be written under (a `.` segment: S3 takes it, the library does not)
/// still counts in its pair's tail, as the writer wrote it: the pair is held to its tail's last
/// name, not taken for whole, so a scan past it reads the range shard. (A file system takes no
/// such name: moto only.)
#[test]
fn a_tail_name_no_record_can_hold_still_counts_in_its_pair() {
    let dir = TempDir::new().unwrap();
    let (place, options) = places("checkpoint-unholdable", dir.path()).remove(1);
    let options = with(&options, json!({"changeLogWindowMs": 1000}));
    let mut w = writer(&dir.path().join(format!("{place}-w.sqlite3")), &options);
    for run in [1, 3, 5] {
        w.db.put("docs", json!({"run": run}), Some(Key::String(name(1, run)))).unwrap();
    }
    w.flush().unwrap();
    // One head a pair, two tails: 0003 and this one; 0005 is in the range shard only.
    put_raw(&options, &format!("{}/./x", name(1, 3)), b"{}");
    // Past the log's window: the checkpoint alone names these.
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    w.checkpoint("docs").unwrap();

    let mut listed = reader(&dir.path().join(format!("{place}-listed.sqlite3")), &options, false);
    let mut cold = reader(&dir.path().join(format!("{place}-cold.sqlite3")), &options, true);
    let firsts = ScanOptions::new().index("pair").unique();
    assert_eq!(cold.keys("meta", &firsts).unwrap(), listed.keys("meta", &firsts).unwrap(), "{place}");
    let scan = pair_scan("p1/rt1", None, 3);
    let expected = described(&mut listed, &scan);
    assert_eq!(expected.iter().map(|d| d.0.clone()).collect::<Vec<_>>(), [name(1, 1), name(1, 3), name(1, 5)]);
    assert_eq!(described(&mut cold, &scan), expected, "{place}");
}

/// The wave markers in the store's change log (a flush of several writes leaves one; a cold
/// reader reads each once).
fn waves(options: &Value) -> u64 {
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let log = format!("{}.objstore-changes/", options["prefix"].as_str().unwrap_or(""));
    let listing = list_all(&*bucket, &ListRequest { prefix: log, ..Default::default() }, &Token::default()).unwrap();
    listing.objects.iter().filter(|o| o.key.rsplit('/').next().is_some_and(|n| n.starts_with('w'))).count() as u64
}

/// The object `name` under the store's prefix, written or replaced as is (a crashed writer's
/// leftovers, a corrupted shard).
fn put_raw(options: &Value, name: &str, body: &[u8]) {
    // The bucket's settings only: the change log's belong to a store that keeps one.
    let mut options = options.clone();
    for log_setting in ["changeLogWindowMs", "relistEveryMs"] {
        options.as_object_mut().unwrap().remove(log_setting);
    }
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let key = format!("{}{name}", options["prefix"].as_str().unwrap_or(""));
    bucket.put(&key, body, &Default::default(), &Token::default()).unwrap();
}

#[test]
fn a_checkpoint_that_cannot_be_read_is_stepped_over_and_an_old_one_is_not_taken() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("checkpoint-unreadable", dir.path()).into_iter().take(2) {
        let mut w = writer(&dir.path().join(format!("{place}-w.sqlite3")), &options);
        for run in 0..30 {
            w.db.put("docs", json!({"run": run}), Some(Key::String(name(run % 3, run)))).unwrap();
        }
        w.flush().unwrap();
        let older = w.checkpoint("docs").unwrap();
        // A bucket's clock is read from its `Date`, in whole seconds.
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        w.put("docs", json!({"late": true}), Some(Key::String(name(0, 99)))).unwrap();
        let newer = w.checkpoint("docs").unwrap();
        assert!(newer.manifest < older.manifest, "{place}: the newest sorts first");
        // The newer one's first range shard is not a shard; a crashed writer left a shard of a
        // still newer one, and no manifest.
        let stamp = newer.manifest.rsplit('/').next().unwrap().trim_end_matches(".json");
        put_raw(&options, &format!(".objstore-checkpoints/{stamp}/r00000.json"), b"not a shard");
        let crashed = format!("{}-{}", "0".repeat(13), &stamp[14..]);
        put_raw(&options, &format!(".objstore-checkpoints/{crashed}/r00000.json"), b"{}");
        // A manifest from a clock far ahead would have the log read from the future.
        let ahead = format!("{}-{}", "0".repeat(12) + "1", &stamp[14..]);
        put_raw(&options, &format!(".objstore-checkpoints/{ahead}.json"), b"{}");

        let mut listed = reader(&dir.path().join(format!("{place}-listed.sqlite3")), &options, false);
        let everything = described(&mut listed, &ScanOptions::new());
        assert_eq!(everything.len(), 31, "{place}");
        let mut cold = reader(&dir.path().join(format!("{place}-cold.sqlite3")), &options, true);
        assert_eq!(described(&mut cold, &ScanOptions::new()), everything, "{place}: from the older one and the log");
        let stats = cold.take_sync_stats();
        // The crashed one's key, the one from ahead, the newer manifest's, the older's; the log.
        assert_eq!(stats.count("LIST"), 5, "{place}: {stats:?}");

        // A reader that lists in full every millisecond takes no checkpoint (the log may be
        // pruned past it): a listing, not a GET. (Its reading of the bucket's clock may be up to
        // a second behind the writer's.)
        std::thread::sleep(std::time::Duration::from_millis(2_000));
        let mut o = with(
            &options,
            json!({"changeLog": true, "keyLayout": "{platform}/{runtime}/{run}",
            "checkpoints": true, "relistEveryMs": 1}),
        );
        o["prefix"] = options.get("prefix").cloned().unwrap_or(json!(""));
        let block = json!({"name": "meta", "keyPath": "name",
            "Sync": {"format": "objstore-meta", "prefetch": "meta", "Options": o}});
        let schema =
            objstore_db_core::Schema::from_json(&json!({"version": 1, "stores": [block]}).to_string()).unwrap();
        let mut strict = open(&dir.path().join(format!("{place}-strict.sqlite3")), schema);
        assert_eq!(described(&mut strict, &ScanOptions::new()), everything, "{place}");
        assert_eq!(strict.take_sync_stats().count("GET"), 0, "{place}");
    }
}

#[test]
fn a_directory_keeps_the_two_newest_checkpoints() {
    let dir = TempDir::new().unwrap();
    let (_, options) = places("checkpoint-prune", dir.path()).remove(0);
    let mut w = writer(&dir.path().join("w.sqlite3"), &options);
    let mut written = Vec::new();
    for round in 0..4 {
        w.put("docs", json!({"round": round}), Some(Key::String(name(0, round)))).unwrap();
        written.push(w.checkpoint("docs").unwrap().manifest);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // A crashed writer's shards, older than what is kept.
    let stamp = written[0].rsplit('/').next().unwrap().trim_end_matches(".json");
    put_raw(&options, &format!(".objstore-checkpoints/{}9/r00000.json", &stamp[..stamp.len() - 1]), b"{}");
    w.checkpoint("docs").unwrap();
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let request = ListRequest { prefix: ".objstore-checkpoints/".into(), ..Default::default() };
    let left = list_all(&*bucket, &request, &Token::default()).unwrap().objects;
    let manifests: Vec<&str> = left.iter().map(|o| o.key.as_str()).filter(|k| k.matches('/').count() == 1).collect();
    assert_eq!(manifests.len(), 2, "{left:?}");
    assert_eq!(manifests[1], written[3], "the newest two: the fifth and the fourth");
    assert_eq!(left.len(), 2 * 4, "each with its heads, tail and range shard: {left:?}");
}

#[test]
fn a_range_shard_read_after_leaves_this_processs_own_writes_alone() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("checkpoint-own-writes", dir.path()).into_iter().take(2) {
        let mut w = writer(&dir.path().join(format!("{place}-w.sqlite3")), &options);
        for run in 0..PER_PAIR {
            w.db.put("docs", json!({"run": run}), Some(Key::String(name(1, run)))).unwrap();
        }
        w.flush().unwrap();
        w.checkpoint("docs").unwrap();
        // A reader that writes too, its refresh at most every five seconds: the writes it sends
        // reach its descriptions before any log read says so.
        let o = with(&options, json!({"changeLog": true, "checkpoints": true}));
        let meta = with(&o, json!({"keyLayout": "{platform}/{runtime}/{run}"}));
        let schema = json!({"version": 1, "stores": [
            {"name": "docs", "Sync": {"format": "objstore", "Options": o}},
            {"name": "meta", "keyPath": "name", "Sync": {"format": "objstore-meta", "prefetch": "meta",
                "prefetchRefractoryPeriod": 5000, "Options": meta}}]});
        let schema = objstore_db_core::Schema::from_json(&schema.to_string()).unwrap();
        let mut both = open(&dir.path().join(format!("{place}-both.sqlite3")), schema);
        assert_eq!(both.keys("meta", &pair_scan("p1/rt1", None, 2)).unwrap().len(), 2, "{place}: from the heads");
        both.put("docs", json!({"mine": true}), Some(Key::String(name(1, 50)))).unwrap();
        let mut listed = reader(&dir.path().join(format!("{place}-listed.sqlite3")), &options, false);
        let deep = pair_scan("p1/rt1", Some(&name(1, 2)), 20);
        let expected = described(&mut listed, &deep);
        assert!(expected.iter().any(|(id, _, _)| *id == name(1, 50)), "{place}");
        assert_eq!(described(&mut both, &deep), expected, "{place}: the range shard did not undo the write");
    }
}
