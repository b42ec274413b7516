//! The change log (`Options.changeLog`): a warm refresh with nothing new is one LIST whatever
//! the number of objects, new objects cost one request each, writers without the log are
//! caught by the periodic full listing, and a write whose marker could not be written is
//! finished later without losing or repeating anything. Each scenario runs on the `file://`
//! bucket, moto and Garage.

mod sync_support;

use std::path::Path;
use std::time::Duration;

use objstore_db_core::bucket::{list_all, open_bucket, ListRequest, PutOptions};
use objstore_db_core::sync::{SyncConfig, Token};
use objstore_db_core::{Key, KeyRange, ScanOptions};
use serde_json::{json, Value};
use sync_support::*;
use tempfile::TempDir;

fn key(s: &str) -> Key {
    Key::String(s.to_string())
}

/// A store syncing with `options` plus `extra`, under `sync` (format, prefetch, …).
fn store(name: &str, options: &Value, extra: Value, sync: Value) -> (String, Value) {
    let mut block = sync;
    block["Options"] = with(options, extra);
    (name.to_string(), block)
}

/// A reader of results with the change log: the `results` store, and `results-meta` over it
/// (the key layout `{platform}/{browser}/{run}`, prefetched as metadata on every read).
fn results_readers(options: &Value) -> [(String, Value); 2] {
    let layout = json!({"changeLog": true, "keyLayout": "{platform}/{browser}/{run}"});
    [
        store("results", options, json!({"changeLog": true}), json!({"format": "objstore", "immutable": true})),
        store(
            "results-meta",
            options,
            layout,
            json!({"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 0}),
        ),
    ]
}

fn client(path: &Path, stores: &[(String, Value)]) -> Client {
    let stores: Vec<(&str, Value)> = stores.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    open(path, schema_with(&stores))
}

fn objects_under(options: &Value) -> Vec<String> {
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let prefix = options["prefix"].as_str().unwrap_or("").to_string();
    let listing = list_all(&*bucket, &ListRequest { prefix: prefix.clone(), ..Default::default() }, &Token::default());
    listing.unwrap().objects.into_iter().map(|o| o.key[prefix.len()..].to_string()).collect()
}

#[test]
fn a_warm_refresh_with_nothing_new_is_one_list_and_new_objects_one_get_each() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-warm", dir.path()) {
        let log = json!({"changeLog": true});
        let writes = [store("docs", &options, log.clone(), json!({"format": "objstore"}))];
        let reads = [store(
            "docs",
            &options,
            log.clone(),
            json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0}),
        )];
        let mut writer = client(&dir.path().join(format!("{place}-w.sqlite3")), &writes);
        for i in 0..25 {
            writer.put("docs", json!({"i": i}), Some(key(&format!("d{i:02}")))).unwrap();
        }
        let reader_path = dir.path().join(format!("{place}-r.sqlite3"));
        let mut reader = client(&reader_path, &reads);
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 25, "{place}");
        let cold = reader.take_sync_stats();
        // One LIST of a key for names sorting before the log, one of everything after it.
        assert_eq!((cold.count("LIST"), cold.count("GET")), (2, 25), "{place}: {cold:?}");

        for round in 0..2 {
            assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 25);
            let warm = reader.take_sync_stats();
            assert_eq!((warm.total(), warm.count("LIST")), (1, 1), "{place}, round {round}: {warm:?}");
        }

        writer.put("docs", json!({"i": "new"}), Some(key("new"))).unwrap();
        writer.put("docs", json!({"i": "changed"}), Some(key("d03"))).unwrap();
        writer.remove("docs", &KeyRange::only("d07")).unwrap();
        let values = reader.values("docs", &ScanOptions::new()).unwrap();
        let warm = reader.take_sync_stats();
        assert_eq!((warm.count("LIST"), warm.count("GET"), warm.total()), (1, 2, 3), "{place}: {warm:?}");
        assert_eq!(values.len(), 25, "{place}: one new, one gone");
        assert!(values.contains(&json!({"i": "changed"})) && values.contains(&json!({"i": "new"})), "{place}");
        assert!(!values.contains(&json!({"i": 7})), "{place}: the removal is followed");

        // A reopened database reads the log from where it left off.
        drop(reader);
        let mut reader = client(&reader_path, &reads);
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 25);
        let reopened = reader.take_sync_stats();
        assert_eq!((reopened.total(), reopened.count("LIST")), (1, 1), "{place}: {reopened:?}");

        // The log is not part of the store: a client without it lists only the records.
        let plain = [store("docs", &options, json!({}), json!({"format": "objstore", "prefetch": "full"}))];
        let mut other = client(&dir.path().join(format!("{place}-plain.sqlite3")), &plain);
        assert_eq!(other.count("docs", &ScanOptions::new()).unwrap(), 25, "{place}");
        let names = objects_under(&options);
        assert_eq!(
            names.iter().filter(|n| n.starts_with(".objstore-changes/")).count(),
            28,
            "{place}: one marker per write"
        );
    }
}

#[test]
fn a_full_listing_steps_over_the_log_however_long_it_is() {
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": format!("file://{}", dir.path().join("bucket").display())});
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    for name in ["!first", "-second", "a", "b/c"] {
        bucket.put(name, br#"{"v":1}"#, &PutOptions::default(), &Token::default()).unwrap();
    }
    for n in 0..1_100 {
        let marker = format!(".objstore-changes/{n:013}-00000000000000aa-00000000/d/gone{n}");
        bucket.put(&marker, b"", &PutOptions::default(), &Token::default()).unwrap();
    }
    let docs = [store("docs", &options, json!({"changeLog": true}), json!({"format": "objstore", "prefetch": "meta"}))];
    let mut reader = client(&dir.path().join("r.sqlite3"), &docs);
    reader.prefetch("docs").unwrap();
    let stats = reader.take_sync_stats();
    let keys = reader.keys("docs", &ScanOptions::new()).unwrap();
    assert_eq!(keys, ["!first", "-second", "a", "b/c"].map(key).to_vec());
    // Names before the log: a page of one key, then the rest of that range (it reaches the log);
    // everything after the log: one page. The 1,100 markers would have been two more.
    assert_eq!(stats.count("LIST"), 3, "{stats:?}");
}

#[test]
fn descriptions_come_from_the_markers_with_no_request_per_object() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-meta", dir.path()) {
        let log = json!({"changeLog": true});
        let writes = [store("results", &options, log, json!({"format": "objstore", "immutable": true}))];
        let reads = results_readers(&options);
        let mut writer = client(&dir.path().join(format!("{place}-w.sqlite3")), &writes);
        let pairs = [("linux", "node-20"), ("linux", "c"), ("mac", "python"), ("win", "rust")];
        for (n, (platform, browser)) in pairs.iter().cycle().take(12).enumerate() {
            let name = format!("{platform}/{browser}/{:04}", 100 - n);
            writer.put("results", json!({"n": n}), Some(key(&name))).unwrap();
        }
        let mut reader = client(&dir.path().join(format!("{place}-r.sqlite3")), &reads);
        let newest = ScanOptions::new().index("platform, browser").unique().limit(50);
        assert_eq!(reader.keys("results-meta", &newest).unwrap().len(), 4);
        let cold = reader.take_sync_stats();
        // The store fits one listing page: no fan-out by platform.
        assert_eq!((cold.count("LIST"), cold.total()), (1, 1), "{place}: one page: {cold:?}");

        let fresh: Vec<String> = pairs.iter().map(|(p, b)| format!("{p}/{b}/0001")).collect();
        for name in &fresh {
            writer.put("results", json!({"n": "new"}), Some(key(name))).unwrap();
        }
        let shown: Vec<Key> = reader.keys("results-meta", &newest).unwrap();
        let warm = reader.take_sync_stats();
        assert_eq!((warm.count("LIST"), warm.total()), (1, 1), "{place}: {warm:?}");
        let mut expected: Vec<Key> = fresh.iter().map(|n| key(n)).collect();
        expected.sort_by_key(|k| format!("{k:?}").replace('/', "\u{0}"));
        assert_eq!(shown, expected, "{place}: by platform, then browser");
        let record = reader.get("results-meta", &key("mac/python/0001")).unwrap().unwrap();
        assert_eq!(record["metadata"]["platform"], "mac", "{place}");
        assert_eq!(record["size"], json!(br#"{"n":"new"}"#.len()), "{place}");
        assert!(record["etag"].as_str().unwrap().starts_with('"'), "{place}: {record}");
        let values = reader.values_of("results", &shown).unwrap();
        assert!(values.iter().all(|v| v == &Some(json!({"n": "new"}))), "{place}");
        assert_eq!(reader.take_sync_stats().count("GET"), 4, "{place}");
    }
}

#[test]
fn writers_without_the_log_are_caught_by_the_full_listing_at_its_interval_and_on_demand() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-relist", dir.path()) {
        let reads = [store(
            "docs",
            &options,
            json!({"changeLog": true, "relistEveryMs": 3000}),
            json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0}),
        )];
        let plain = [store("docs", &options, json!({}), json!({"format": "objstore"}))];
        let mut quiet = client(&dir.path().join(format!("{place}-quiet.sqlite3")), &plain);
        quiet.put("docs", json!({"v": 1}), Some(key("a"))).unwrap();
        let mut reader = client(&dir.path().join(format!("{place}-r.sqlite3")), &reads);
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 1);
        quiet.put("docs", json!({"v": 2}), Some(key("b"))).unwrap();
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 1, "{place}: no marker, not seen yet");
        reader.prefetch("docs").unwrap();
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 2, "{place}: an explicit prefetch lists all");
        quiet.put("docs", json!({"v": 3}), Some(key("c"))).unwrap();
        reader.take_sync_stats();
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 2);
        std::thread::sleep(Duration::from_millis(3100));
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 3, "{place}: the interval's full listing");
    }
}

/// A writer whose clock is minutes off names its markers by the bucket's clock (from the
/// `Date` of its answers): a reader's warm refresh, one LIST, finds its change at once, however
/// far outside the window its own clock is.
#[test]
fn a_writer_whose_clock_is_minutes_off_loses_no_change() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("clock-off", dir.path()).into_iter().filter(|(place, _)| *place != "file") {
        let docs = [store(
            "docs",
            &options,
            json!({"changeLog": true}),
            json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0}),
        )];
        for skew_minutes in [-7i64, 7] {
            let mut writer = client(&dir.path().join(format!("{place}{skew_minutes}-w.sqlite3")), &docs);
            writer.agent.skew_clock_for_tests(skew_minutes * 60_000);
            let first = format!("first{skew_minutes}");
            writer.put("docs", json!({"v": 1}), Some(key(&first))).unwrap();
            let mut reader = client(&dir.path().join(format!("{place}{skew_minutes}-r.sqlite3")), &docs);
            let before = reader.count("docs", &ScanOptions::new()).unwrap();
            reader.take_sync_stats();
            let later = format!("later{skew_minutes}");
            writer.put("docs", json!({"v": 2}), Some(key(&later))).unwrap();
            assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), before + 1, "{place}, {skew_minutes} min");
            let stats = reader.take_sync_stats();
            assert_eq!(stats.count("LIST"), 1, "{place}: a warm refresh from the log: {stats:?}");
        }
    }
}

/// Two writers whose clocks differ by fourteen minutes (one seven behind, one seven ahead) write
/// new objects and overwrite each other's, in turns: a third client's warm refreshes, one LIST
/// each, follow every change, and end holding what the bucket holds.
#[test]
fn two_writers_whose_clocks_differ_by_minutes_lose_no_change() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("clocks-apart", dir.path()).into_iter().filter(|(place, _)| *place != "file") {
        let docs = [store(
            "docs",
            &options,
            json!({"changeLog": true}),
            json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0}),
        )];
        let mut behind = client(&dir.path().join(format!("{place}-behind.sqlite3")), &docs);
        behind.agent.skew_clock_for_tests(-7 * 60_000);
        let mut ahead = client(&dir.path().join(format!("{place}-ahead.sqlite3")), &docs);
        ahead.agent.skew_clock_for_tests(7 * 60_000);
        let mut reader = client(&dir.path().join(format!("{place}-reader.sqlite3")), &docs);
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 0);
        let mut expected = std::collections::BTreeMap::new();
        for round in 0..3 {
            for (name, writer) in [("behind", &mut behind), ("ahead", &mut ahead)] {
                let own = json!({"by": name, "round": round});
                writer.put("docs", own.clone(), Some(key(&format!("{name}-{round}")))).unwrap();
                expected.insert(format!("{name}-{round}"), own);
                // Each overwrites the object both share, on the version it read (a blind write
                // over the other's would be refused as a conflict, by design).
                writer.get("docs", &key("shared")).unwrap();
                writer.put("docs", json!({"shared": name, "round": round}), Some(key("shared"))).unwrap();
                expected.insert("shared".to_string(), json!({"shared": name, "round": round}));
                assert_eq!(writer.refused_writes().unwrap().len(), 0, "{place}: {name}'s writes, round {round}");
                assert_eq!(writer.outbox_len().unwrap(), 0, "{place}: {name}'s writes, round {round}");
                reader.take_sync_stats();
                let count = reader.count("docs", &ScanOptions::new()).unwrap();
                assert_eq!(count, expected.len() as u64, "{place}: round {round}, after the writer {name}");
                let stats = reader.take_sync_stats();
                assert_eq!(stats.count("LIST"), 1, "{place}: a warm refresh from the log: {stats:?}");
                let held = reader.values("docs", &ScanOptions::new()).unwrap();
                assert_eq!(held, expected.values().cloned().collect::<Vec<_>>(), "{place}: round {round}, {name}");
            }
        }
    }
}

#[test]
fn a_marker_landing_late_with_an_older_time_is_still_read() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-skew", dir.path()) {
        let log = json!({"changeLog": true});
        let docs = [store(
            "docs",
            &options,
            log.clone(),
            json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0}),
        )];
        let mut writer = client(&dir.path().join(format!("{place}-w.sqlite3")), &docs);
        writer.put("docs", json!({"v": 1}), Some(key("now"))).unwrap();
        let mut reader = client(&dir.path().join(format!("{place}-r.sqlite3")), &docs);
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 1);
        writer.put("docs", json!({"v": 2}), Some(key("newer"))).unwrap();
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 2);
        // A writer whose clock is half a minute behind: its object and marker land now.
        let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        let prefix = options["prefix"].as_str().unwrap_or("");
        let body = br#"{"v":3}"#;
        let etag = bucket.put(&format!("{prefix}late"), body, &PutOptions::default(), &Token::default());
        let etag = etag.unwrap().unwrap_or_default();
        let behind =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64 - 30_000;
        let marker = format!(
            "{prefix}.objstore-changes/{behind:013}-00000000000000ff-00000000/p{}.{}/late",
            body.len(),
            etag.trim_matches('"')
        );
        bucket.put(&marker, b"", &PutOptions::default(), &Token::default()).unwrap();
        reader.take_sync_stats();
        assert_eq!(reader.count("docs", &ScanOptions::new()).unwrap(), 3, "{place}");
        let stats = reader.take_sync_stats();
        assert_eq!(
            (stats.count("LIST"), stats.count("GET")),
            (1, 1),
            "{place}: markers acted on cost nothing: {stats:?}"
        );
    }
}

/// A write whose body landed while its marker did not owes only the marker: the retry sends
/// that alone, and the write cannot be taken back meanwhile (it is in the bucket: review N16).
#[test]
fn a_write_whose_marker_did_not_land_is_finished_later_once() {
    use Misbehaviour::*;
    let peer = Peer::start(vec![
        Answer(200, vec![]), // the object
        Reset,               // its marker: the connection drops
        Answer(200, vec![]), // the marker, sent alone
    ]);
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": peer.endpoint(), "accessKeyId": "id", "secretAccessKey": "s",
        "region": "us-east-1", "retries": 0, "conditionalWrites": true, "changeLog": true});
    let docs = [store("docs", &options, json!({}), json!({"format": "objstore"}))];
    let mut writer = client(&dir.path().join("w.sqlite3"), &docs);
    writer.db.put("docs", json!({"v": 1}), Some(key("doc"))).unwrap();
    let report = writer.agent.flush(&mut writer.db, &Token::default()).unwrap();
    assert_eq!((report.sent, report.pending), (0, 1), "{report:?}");
    assert!(report.offline.is_some(), "{report:?}");
    // A caller giving up on the write (the collector) cannot take back what the bucket holds.
    assert_eq!(writer.db.withdraw_pending("docs", &key("doc")).unwrap(), 0);
    assert_eq!(writer.db.sync_status("docs", &key("doc")).unwrap(), objstore_db_core::SyncStatus::Pending);
    assert!(writer.db.get("docs", &key("doc")).unwrap().is_some(), "the record stays");
    writer.set_offline(false); // no backoff left: the test goes on at once
    let report = writer.agent.flush(&mut writer.db, &Token::default()).unwrap();
    assert_eq!((report.sent, report.pending, report.rejected.len()), (1, 0, 0), "{report:?}");
    let seen = peer.seen.lock().unwrap().clone();
    let lines: Vec<&str> = seen.iter().map(|h| h.lines().next().unwrap()).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("PUT /b/doc "), "{lines:?}");
    assert!(lines[1].contains("/b/.objstore-changes/") && lines[2].contains("/b/.objstore-changes/"), "{lines:?}");
    assert_eq!(writer.db.sync_status("docs", &key("doc")).unwrap(), objstore_db_core::SyncStatus::Synced);
    assert_eq!(writer.agent.flush(&mut writer.db, &Token::default()).unwrap().sent, 0, "nothing is sent twice");
    assert_eq!(peer.count(), 3);
}

/// The same for a wave: three bodies land, their one marker does not; the retry sends that
/// marker alone, once, for all three.
#[test]
fn a_wave_whose_marker_did_not_land_owes_only_that_marker() {
    use Misbehaviour::*;
    let peer = Peer::start(vec![
        Answer(200, vec![]), // the three objects, side by side
        Answer(200, vec![]),
        Answer(200, vec![]),
        Reset,               // their marker
        Answer(200, vec![]), // the marker again
    ]);
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": peer.endpoint(), "accessKeyId": "id", "secretAccessKey": "s",
        "region": "us-east-1", "retries": 0, "conditionalWrites": true, "changeLog": true});
    let docs = [store("docs", &options, json!({}), json!({"format": "objstore"}))];
    let mut writer = client(&dir.path().join("w.sqlite3"), &docs);
    for name in ["a", "b", "c"] {
        writer.db.put("docs", json!({"v": name}), Some(key(name))).unwrap();
    }
    let report = writer.agent.flush(&mut writer.db, &Token::default()).unwrap();
    assert_eq!((report.sent, report.pending), (0, 3), "{report:?}");
    writer.set_offline(false);
    let report = writer.agent.flush(&mut writer.db, &Token::default()).unwrap();
    assert_eq!((report.sent, report.pending, report.rejected.len()), (3, 0, 0), "{report:?}");
    let seen = peer.seen.lock().unwrap().clone();
    let lines: Vec<&str> = seen.iter().map(|h| h.lines().next().unwrap()).collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(lines[..3].iter().all(|l| !l.contains(".objstore-changes/")), "{lines:?}");
    assert!(lines[3..].iter().all(|l| l.contains(".objstore-changes/") && l.contains("/w3 ")), "{lines:?}");
    for name in ["a", "b", "c"] {
        assert_eq!(writer.db.sync_status("docs", &key(name)).unwrap(), objstore_db_core::SyncStatus::Synced);
    }
    assert_eq!(peer.count(), 5, "nothing is sent twice");
}

#[test]
fn a_refused_marker_leaves_the_write_standing_and_says_so() {
    use Misbehaviour::*;
    // A policy that lets this writer put objects but not markers.
    let denied = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".to_vec();
    let peer = Peer::start(vec![Answer(200, vec![]), Answer(403, denied)]);
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": peer.endpoint(), "accessKeyId": "id", "secretAccessKey": "s",
        "region": "us-east-1", "retries": 0, "conditionalWrites": true, "changeLog": true});
    let docs = [store("docs", &options, json!({}), json!({"format": "objstore"}))];
    let mut writer = client(&dir.path().join("w.sqlite3"), &docs);
    let errors = record_events(&mut writer.db, &[objstore_db_core::EventKind::Error]);
    writer.db.put("docs", json!({"v": 1}), Some(key("doc"))).unwrap();
    let report = writer.flush().unwrap();
    assert_eq!((report.sent, report.pending, report.rejected.len()), (1, 0, 0), "{report:?}");
    let events = errors.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    let message = events[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("\"doc\"") && message.contains("change-log marker") && message.contains("403"),
        "{message}"
    );
    assert_eq!(writer.db.refused_writes().unwrap().len(), 0);
    assert_eq!(peer.count(), 2);
}

#[test]
fn the_newest_per_pair_of_a_cold_store_costs_requests_by_pairs_not_by_objects() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("first-per-pair", dir.path()) {
        let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        let prefix = options["prefix"].as_str().unwrap_or("").to_string();
        // linux: two pairs of more than a page each; mac: three pairs of less than a page, more
        // than a page together.
        let pairs = [
            ("linux", "node", 1_100),
            ("linux", "python", 1_100),
            ("mac", "a", 400),
            ("mac", "b", 400),
            ("mac", "c", 400),
        ];
        let names: Vec<String> =
            pairs.iter().flat_map(|(p, b, count)| (0..*count).map(move |n| format!("{p}/{b}/{n:04}"))).collect();
        objstore_db_core::sync::parallel(&names, 16, |name| {
            let body = br#"{"v":1}"#;
            bucket.put(&format!("{prefix}{name}"), body, &PutOptions::default(), &Token::default())
        })
        .into_iter()
        .for_each(|put| drop(put.unwrap()));
        let layout = json!({"keyLayout": "{platform}/{browser}/{run}", "changeLog": true});
        let meta = [store("meta", &options, layout, json!({"format": "objstore-meta", "prefetch": "meta"}))];
        let reader_path = dir.path().join(format!("{place}-r.sqlite3"));
        let mut reader = client(&reader_path, &meta);
        let newest = ScanOptions::new().index("platform, browser").unique().limit(50);
        let firsts = reader.keys("meta", &newest).unwrap();
        let expected = ["linux/node/0000", "linux/python/0000", "mac/a/0000", "mac/b/0000", "mac/c/0000"];
        assert_eq!(firsts, expected.map(key).to_vec());
        let stats = reader.take_sync_stats();
        // The store's first page (more follow); the platforms; each one's first page; linux's
        // pairs after its first page and the first name of the one that page did not reach (a
        // request per pair: they are long); mac's second page (its pairs are short: going on
        // costs less than a request each).
        assert_eq!((stats.count("LIST"), stats.total()), (7, 7), "{place}: {stats:?}");
        assert!(reader.db.count("meta", &ScanOptions::new()).unwrap() < 3_400, "{place}: only part is listed");
        assert_eq!(reader.keys("meta", &newest).unwrap().len(), 5);
        assert_eq!(reader.take_sync_stats().total(), 0, "{place}: the same view again is served");
        // Reopened, the view goes on from the change log: one LIST.
        drop(reader);
        let mut reader = client(&reader_path, &meta);
        assert_eq!(reader.keys("meta", &newest).unwrap(), expected.map(key).to_vec());
        let reopened = reader.take_sync_stats();
        assert_eq!((reopened.count("LIST"), reopened.total()), (1, 1), "{place}: {reopened:?}");
        // Any other read wants every object.
        assert_eq!(reader.count("meta", &ScanOptions::new()).unwrap(), 3_400, "{place}");
        let stats = reader.take_sync_stats();
        assert!(stats.count("LIST") >= 2, "{place}: {stats:?}");
    }
}

/// A store that fits one listing page costs that page: 60 runs over 12 pairs, cold, are one
/// LIST for the newest per pair and for the whole store alike.
#[test]
fn a_small_store_is_listed_with_one_page() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("small", dir.path()) {
        let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        let prefix = options["prefix"].as_str().unwrap_or("").to_string();
        let names: Vec<String> = ["linux", "mac", "windows"]
            .iter()
            .flat_map(|p| ["c", "node", "python", "rust"].map(move |b| (p, b)))
            .flat_map(|(p, b)| (0..5).map(move |n| format!("{p}/{b}/{n:04}")))
            .collect();
        assert_eq!(names.len(), 60);
        for name in &names {
            let put = bucket.put(&format!("{prefix}{name}"), b"{}", &PutOptions::default(), &Token::default());
            put.unwrap();
        }
        let layout = json!({"keyLayout": "{platform}/{browser}/{run}", "changeLog": true});
        let meta = [store("meta", &options, layout, json!({"format": "objstore-meta", "prefetch": "meta"}))];
        let mut reader = client(&dir.path().join(format!("{place}-small.sqlite3")), &meta);
        let newest = ScanOptions::new().index("platform, browser").unique().limit(50);
        assert_eq!(reader.keys("meta", &newest).unwrap().len(), 12, "{place}");
        let stats = reader.take_sync_stats();
        assert_eq!((stats.count("LIST"), stats.total()), (1, 1), "{place}: {stats:?}");
        assert_eq!(reader.count("meta", &ScanOptions::new()).unwrap(), 60, "{place}: the page was the whole store");
        assert_eq!(reader.take_sync_stats().count("LIST"), 0, "{place}");
    }
}

#[test]
fn the_outbox_sends_objects_side_by_side_and_each_objects_writes_in_order() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-waves", dir.path()) {
        let docs =
            [store("docs", &options, json!({"changeLog": true, "concurrency": 8}), json!({"format": "objstore"}))];
        let mut writer = client(&dir.path().join(format!("{place}-w.sqlite3")), &docs);
        writer.set_offline(true);
        for round in 0..3 {
            for i in 0..20 {
                writer.db.put("docs", json!({"i": i, "round": round}), Some(key(&format!("k{i}")))).unwrap();
            }
        }
        writer.db.remove("docs", &KeyRange::only("k7")).unwrap();
        writer.set_offline(false);
        let report = writer.flush().unwrap();
        assert_eq!((report.sent, report.rejected.len(), report.pending), (61, 0, 0), "{place}: {report:?}");
        let reads =
            [store("docs", &options, json!({"changeLog": true}), json!({"format": "objstore", "prefetch": "full"}))];
        let mut reader = client(&dir.path().join(format!("{place}-r.sqlite3")), &reads);
        let values = reader.values("docs", &ScanOptions::new()).unwrap();
        assert_eq!(values.len(), 19, "{place}");
        assert!(values.iter().all(|v| v["round"] == 2), "{place}: every object's last write is the one kept");
        let markers: Vec<String> =
            objects_under(&options).into_iter().filter(|n| n.starts_with(".objstore-changes/")).collect();
        // Each round's 20 writes went out together under one marker; the removal, alone, has
        // a marker of its own.
        let waves = markers.iter().filter(|n| n.ends_with("/w20")).count();
        assert_eq!((markers.len(), waves), (4, 3), "{place}: a marker per wave: {markers:?}");
    }
}

#[test]
fn a_flush_of_many_writes_leaves_one_marker_and_a_reader_learns_them_with_one_get() {
    let dir = TempDir::new().unwrap();
    for (place, options) in places("changelog-wave-read", dir.path()) {
        let writes = [store(
            "results",
            &options,
            json!({"changeLog": true, "metadata": ["version"]}),
            json!({"format": "objstore", "immutable": true}),
        )];
        let reads = results_readers(&options);
        let mut writer = client(&dir.path().join(format!("{place}-w.sqlite3")), &writes);
        writer.put("results", json!({"version": "1.0"}), Some(key("linux/c/0001"))).unwrap();
        let mut reader = client(&dir.path().join(format!("{place}-r.sqlite3")), &reads);
        // Each pair's newest run: every pair here has one.
        let all = ScanOptions::new().index("platform, browser").unique().limit(50);
        assert_eq!(reader.keys("results-meta", &all).unwrap().len(), 1, "{place}");
        reader.take_sync_stats();

        writer.set_offline(true);
        let names: Vec<String> = (2..8).map(|n| format!("linux/node-{n}/{n:04}")).collect();
        for (n, name) in names.iter().enumerate() {
            writer.db.put("results", json!({"version": format!("2.{n}")}), Some(key(name))).unwrap();
        }
        writer.set_offline(false);
        assert_eq!(writer.flush().unwrap().sent, 6, "{place}");
        let markers: Vec<String> =
            objects_under(&options).into_iter().filter(|n| n.starts_with(".objstore-changes/")).collect();
        // By name, not by place in the listing: a marker's time is the writer's clock corrected
        // by the bucket's (Date headers of a second's resolution), so the wave's may sort first.
        assert_eq!(markers.len(), 2, "{place}: the first write's marker, then one for the six: {markers:?}");
        assert_eq!(markers.iter().filter(|n| n.ends_with("/w6")).count(), 1, "{place}: {markers:?}");

        // The warm refresh: the log's listing, and the wave marker's body for all six, with
        // their metadata (a name cannot carry it): no request per object.
        assert_eq!(reader.keys("results-meta", &all).unwrap().len(), 7, "{place}");
        let warm = reader.take_sync_stats();
        assert_eq!((warm.count("LIST"), warm.count("GET"), warm.total()), (1, 1, 2), "{place}: {warm:?}");
        let record = reader.get("results-meta", &key("linux/node-4/0004")).unwrap().unwrap();
        assert_eq!(record["metadata"]["version"], "2.2", "{place}: {record}");
        assert_eq!(record["metadata"]["browser"], "node-4", "{place}: {record}");
        // The marker is still in the window, and is not read again.
        reader.take_sync_stats();
        assert_eq!(reader.keys("results-meta", &all).unwrap().len(), 7, "{place}");
        let again = reader.take_sync_stats();
        assert_eq!((again.count("LIST"), again.total()), (1, 1), "{place}: {again:?}");
    }
}

#[test]
fn a_pairs_first_name_removed_gives_way_to_the_next_with_and_without_the_log() {
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": format!("file://{}", dir.path().join("bucket").display())});
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    // Two pairs longer than a page: the first-per-pair listing enumerates them.
    let names: Vec<String> =
        ["node", "python"].iter().flat_map(|b| (0..1_100).map(move |n| format!("linux/{b}/{n:04}"))).collect();
    objstore_db_core::sync::parallel(&names, 16, |name| {
        bucket.put(name, br#"{"v":1}"#, &PutOptions::default(), &Token::default())
    })
    .into_iter()
    .for_each(|put| drop(put.unwrap()));
    let newest = ScanOptions::new().index("platform, browser").unique();
    for (n, log) in [(0, true), (1, false)] {
        let layout = json!({"keyLayout": "{platform}/{browser}/{run}", "changeLog": log});
        let sync = json!({"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 0});
        let meta = [store("meta", &options, layout, sync)];
        let mut reader = client(&dir.path().join(format!("r{n}.sqlite3")), &meta);
        let before = reader.keys("meta", &newest).unwrap();
        assert_eq!(
            before,
            [format!("linux/node/{:04}", n), format!("linux/python/{:04}", n)].map(|k| key(&k)).to_vec()
        );
        // Another client removes the first of each pair, with the log.
        let writes = [store("docs", &options, json!({"changeLog": true}), json!({"format": "objstore"}))];
        let mut writer = client(&dir.path().join(format!("w{n}.sqlite3")), &writes);
        for pair in ["node", "python"] {
            let first = format!("linux/{pair}/{n:04}");
            writer.get("docs", &key(&first)).unwrap();
            writer.remove("docs", &KeyRange::only(first.as_str())).unwrap();
        }
        reader.take_sync_stats();
        let after = reader.keys("meta", &newest).unwrap();
        let next = [format!("linux/node/{:04}", n + 1), format!("linux/python/{:04}", n + 1)];
        assert_eq!(after, next.map(|k| key(&k)).to_vec(), "log: {log}");
        let stats = reader.take_sync_stats();
        if log {
            // The log, and each pair's new first name.
            assert_eq!((stats.count("LIST"), stats.total()), (3, 3), "{stats:?}");
        }
    }
}

/// A server that answers a first page with no names but says there is more: the listing goes
/// on, and nothing held under that value is taken for gone.
#[test]
fn a_first_page_with_no_names_that_goes_on_is_followed() {
    use Misbehaviour::*;
    let page = |body: &str| Answer(200, format!("<ListBucketResult>{body}</ListBucketResult>").into_bytes());
    let name = |key: &str| {
        format!("<Contents><Key>{key}</Key><ETag>\"e\"</ETag><Size>2</Size><LastModified>2026-11-22T00:00:00.000Z</LastModified></Contents>")
    };
    let peer = Peer::start(vec![
        // The store's first page says more follow: the listing fans out by platform.
        page("<IsTruncated>true</IsTruncated><NextContinuationToken>t0</NextContinuationToken>"),
        page("<IsTruncated>false</IsTruncated><CommonPrefixes><Prefix>linux/</Prefix></CommonPrefixes>"),
        page("<IsTruncated>true</IsTruncated><NextContinuationToken>t1</NextContinuationToken>"),
        page(&format!("<IsTruncated>false</IsTruncated>{}{}", name("linux/node/0001"), name("linux/node/0002"))),
    ]);
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": peer.endpoint(), "accessKeyId": "id", "secretAccessKey": "s",
        "region": "us-east-1", "retries": 0, "keyLayout": "{platform}/{browser}/{run}"});
    let meta = [store("meta", &options, json!({}), json!({"format": "objstore-meta", "prefetch": "meta"}))];
    let mut reader = client(&dir.path().join("r.sqlite3"), &meta);
    let newest = ScanOptions::new().index("platform, browser").unique();
    assert_eq!(reader.keys("meta", &newest).unwrap(), vec![key("linux/node/0001")]);
    assert_eq!(peer.count(), 4, "the page after the empty one was asked for");
    assert_eq!(reader.db.count("meta", &ScanOptions::new()).unwrap(), 2, "listed in full");
}

/// A directory bucket has no lifecycle rule: a writer removes the markers no reader reads any
/// more (older than twice the relist interval and the window), and keeps the rest (review N17).
#[test]
fn a_directory_buckets_log_is_pruned_by_its_writers() {
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": format!("file://{}", dir.path().join("bucket").display()), "prefix": "runs/"});
    let docs = [store("docs", &options, json!({"changeLog": true}), json!({"format": "objstore"}))];
    let config = SyncConfig::from_json("x", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap();
    let bucket = open_bucket(&config.connection, Default::default()).unwrap();
    let old = "runs/.objstore-changes/0000000000001-00000000000000ff-00000000/d/gone";
    bucket.put(old, b"", &PutOptions::default(), &Token::default()).unwrap();
    let log = dir.path().join("bucket/b/runs/.objstore-changes");
    assert!(log.join("0000000000001-00000000000000ff-00000000").is_dir());
    let mut writer = client(&dir.path().join("w.sqlite3"), &docs);
    writer.put("docs", json!({"v": 1}), Some(key("new"))).unwrap();
    let left: Vec<String> =
        std::fs::read_dir(&log).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(left.len(), 1, "the old marker went, the new one stays: {left:?}");
    assert!(!left[0].starts_with("0000000000001-"), "{left:?}");
    // A reader still finds the write through the log.
    let mut reader = client(&dir.path().join("r.sqlite3"), &docs);
    assert_eq!(reader.get("docs", &key("new")).unwrap(), Some(json!({"v": 1})));
}

/// A wave marker larger than a reader's `maxObjectBytes` (100 writes with 1 KB of metadata
/// each) cannot be read, and is never taken as naming nothing: the reader lists instead, and
/// learns every write of the wave.
#[test]
fn a_wave_marker_over_the_readers_cap_is_left_to_a_listing() {
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": format!("file://{}", dir.path().join("bucket").display())});
    let writes = [store(
        "results",
        &options,
        json!({"changeLog": true, "metadata": ["version"]}),
        json!({"format": "objstore"}),
    )];
    let capped = with(&options, json!({"maxObjectBytes": 65_536}));
    let reads = results_readers(&capped);
    let mut writer = client(&dir.path().join("w.sqlite3"), &writes);
    writer.put("results", json!({"version": "1.0"}), Some(key("linux/c/0001"))).unwrap();
    let mut reader = client(&dir.path().join("r.sqlite3"), &reads);
    let all = ScanOptions::new().limit(1_000);
    assert_eq!(reader.keys("results-meta", &all).unwrap().len(), 1);

    writer.set_offline(true);
    let long = "v".repeat(1_000);
    for n in 0..100 {
        writer
            .db
            .put("results", json!({"version": format!("{long}{n}")}), Some(key(&format!("linux/node/{n:04}"))))
            .unwrap();
    }
    writer.set_offline(false);
    assert_eq!(writer.flush().unwrap().sent, 100);
    let wave =
        objects_under(&options).into_iter().find(|n| n.starts_with(".objstore-changes/") && n.ends_with("/w100"));
    assert!(wave.is_some(), "one marker names the hundred writes");

    reader.take_sync_stats();
    assert_eq!(reader.keys("results-meta", &all).unwrap().len(), 101, "every write of the wave is learnt");
    let record = reader.get("results-meta", &key("linux/node/0042")).unwrap().unwrap();
    assert_eq!(record["metadata"]["version"], format!("{long}42"));
}
