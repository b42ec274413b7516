//! The fault matrix: a real server (moto) behind a relay that breaks every request on purpose
//! (resets before and after the request, answers cut short, broken listings, 503 storms with
//! and without Retry-After, 500s, a 2-second spike, a black hole), and a bucket whose host does
//! not resolve. Under each, a writer puts and removes and flushes, a reader prefetches, and a
//! third client refreshes from the change log; then the fault ends. Every acknowledged write
//! must be in the bucket once the writer drains, nothing else may be, the caches must hold what
//! they held while the fault lasted and what the bucket holds after, and each client's
//! accounting must count every request its relay saw exactly once. A bucket whose host does
//! not resolve keeps every write waiting. Then the local disk filling during a prefetch, and a
//! three-node cluster losing a node. The figures go to `target/bench/faults.json`, a row per
//! fault and scenario.

mod sync_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use objstore_db_core::sync::Token;
use objstore_db_core::{Key, KeyRange, Mode, ScanOptions, SyncStatus};
use serde_json::{json, Value};
use sync_support::faults::{every_fault, record, Fault, FaultRelay, Row, Targets};
use sync_support::*;
use tempfile::TempDir;

/// Objects written before the fault (`d00`..`d09`); under it, five are overwritten, five
/// removed and twenty new ones written.
const BEFORE: usize = 10;
const NEW: usize = 20;
/// The longest a writer may take to drain once the fault is over.
const RECOVERY_BOUND: Duration = Duration::from_secs(30);

fn key(i: usize) -> Key {
    Key::String(format!("d{i:02}"))
}

fn options(endpoint: &str, prefix: &str) -> Value {
    let mut options = signed_options(&server("moto"), "moto", "MOTO_SIGNED_BUCKET", prefix);
    options["endpoint"] = json!(endpoint);
    for (k, v) in
        [("retries", json!(1)), ("retryBaseMs", json!(20)), ("timeoutMs", json!(1500)), ("changeLog", json!(true))]
    {
        options[k] = v;
    }
    options
}

fn client(dir: &TempDir, name: &str, endpoint: &str, prefix: &str) -> Client {
    let block = json!({"format": "objstore", "Options": options(endpoint, prefix)});
    open(&dir.path().join(format!("{name}.sqlite3")), schema_with(&[("docs", block)]))
}

/// Every record of `docs` in a client's cache, by key.
fn cached(db: &mut Client) -> BTreeMap<String, Value> {
    cached_in(db, "docs")
}

/// Every record of `store` in a client's cache, by key.
fn cached_in(db: &mut Client, store: &str) -> BTreeMap<String, Value> {
    let keys = db.run(&[store], objstore_db_core::Mode::ReadOnly, |tx| tx.keys(store, &ScanOptions::new())).unwrap();
    let values = db.run(&[store], objstore_db_core::Mode::ReadOnly, |tx| tx.values_of(store, &keys)).unwrap();
    keys.into_iter().zip(values).filter_map(|(k, v)| Some((k.to_json().as_str()?.to_string(), v?))).collect()
}

/// A client whose reads refresh `docs` from the change log (a store that prefetches, with no
/// refractory period: every read refreshes).
fn refreshing_client(dir: &TempDir, name: &str, endpoint: &str, prefix: &str) -> Client {
    let block = json!({"format": "objstore", "prefetch": "full", "prefetchRefractoryPeriod": 0,
        "Options": options(endpoint, prefix)});
    open(&dir.path().join(format!("{name}.sqlite3")), schema_with(&[("docs", block)]))
}

/// A read of every record, which refreshes the store first: what it said.
fn refresh(db: &mut Client) -> String {
    match db.count("docs", &ScanOptions::new()) {
        Ok(_) => "refreshed".into(),
        Err(e) => e.to_string(),
    }
}

/// The writer's, the reader's and the refresher's rows under `fault`, set on a relay (one per
/// client) in front of moto.
fn under(name: &str, fault: Fault) -> [Row; 3] {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let prefix = unique_prefix(&format!("faults-{name}"));
    let dir = TempDir::new().unwrap();
    let relays = [(); 3].map(|()| FaultRelay::start(&moto));
    let [writer_relay, reader_relay, refresher_relay] = &relays;
    let mut writer = client(&dir, "writer", &writer_relay.endpoint(), &prefix);
    let mut reader = client(&dir, "reader", &reader_relay.endpoint(), &prefix);
    let mut refresher = refreshing_client(&dir, "refresher", &refresher_relay.endpoint(), &prefix);
    for i in 0..BEFORE {
        writer.put("docs", json!({"i": i, "v": 0}), Some(key(i))).unwrap();
    }
    assert_eq!(writer.flush().unwrap().pending, 0);
    reader.prefetch("docs").unwrap();
    let held_before = cached(&mut reader);
    assert_eq!(held_before.len(), BEFORE);
    assert_eq!(refresh(&mut refresher), "refreshed");
    assert_eq!(cached(&mut refresher), held_before);

    relays.iter().for_each(|relay| relay.set(fault.clone()));
    let mut expected: BTreeMap<String, Value> = held_before.clone();
    let mut tried = 0;
    let mut acknowledged = 0;
    for i in 0..BEFORE / 2 {
        tried += 1;
        if writer.put("docs", json!({"i": i, "v": 1}), Some(key(i))).is_ok() {
            acknowledged += 1;
            expected.insert(format!("d{i:02}"), json!({"i": i, "v": 1}));
        }
    }
    for i in BEFORE / 2..BEFORE {
        tried += 1;
        if writer.remove("docs", &KeyRange::only(format!("d{i:02}").as_str())).is_ok() {
            acknowledged += 1;
            expected.remove(&format!("d{i:02}"));
        }
    }
    for i in BEFORE..BEFORE + NEW {
        tried += 1;
        if writer.put("docs", json!({"i": i, "v": 1}), Some(key(i))).is_ok() {
            acknowledged += 1;
            expected.insert(format!("d{i:02}"), json!({"i": i, "v": 1}));
        }
    }
    let writer_said = match writer.flush() {
        Ok(report) if report.pending == 0 && report.refused == 0 => "drained".to_string(),
        Ok(report) => format!("{} pending, {} refused", report.pending, report.refused),
        Err(e) => e.to_string(),
    };
    let reader_said = match reader.prefetch("docs") {
        Ok(()) => "listed".to_string(),
        Err(e) => e.to_string(),
    };
    // The reader's cache while the fault lasts: what it held, or (a fault that lets a listing
    // through whole) what the bucket holds.
    let held_during = cached(&mut reader);
    let reader_corrupt_during = usize::from(held_during != held_before && reader_said != "listed");
    let refresher_said = refresh(&mut refresher);
    let refresher_corrupt_during = usize::from(cached(&mut refresher) != held_before && refresher_said != "refreshed");

    // The fault ends.
    relays.iter().for_each(|relay| relay.set(Fault::None));
    let ended = Instant::now();
    loop {
        match writer.flush() {
            Ok(report) if report.pending == 0 => break,
            _ if ended.elapsed() > RECOVERY_BOUND => break,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let writer_recovery = ended.elapsed().as_millis();
    let refused = writer.refused_writes().unwrap();
    let pending = writer.outbox_len().unwrap();
    let reader_ended = Instant::now();
    while reader.prefetch("docs").is_err() && reader_ended.elapsed() < RECOVERY_BOUND {
        std::thread::sleep(Duration::from_millis(50));
    }
    let reader_recovery = reader_ended.elapsed().as_millis();
    // Every change the writer made reaches the refresher's next refresh, from the log.
    let refresher_ended = Instant::now();
    while refresh(&mut refresher) != "refreshed" && refresher_ended.elapsed() < RECOVERY_BOUND {
        std::thread::sleep(Duration::from_millis(50));
    }
    let refresher_recovery = refresher_ended.elapsed().as_millis();

    // What the bucket holds, as a client that met no fault lists it.
    let mut fresh = client(&dir, "fresh", &moto, &prefix);
    fresh.prefetch("docs").unwrap();
    let bucket = cached(&mut fresh);
    let lost = expected.iter().filter(|(k, v)| bucket.get(*k) != Some(v)).count()
        + held_before.keys().filter(|k| !expected.contains_key(*k) && bucket.contains_key(*k)).count();
    let duplicated = bucket.keys().filter(|k| !expected.contains_key(*k) && !held_before.contains_key(*k)).count();
    let writer_corrupt = cached(&mut writer).iter().filter(|(k, v)| expected.get(*k) != Some(v)).count();
    let reader_after = cached(&mut reader);
    let reader_corrupt = reader_corrupt_during + usize::from(reader_after != bucket);
    let refreshed = cached(&mut refresher);
    let missed = bucket.iter().filter(|(k, v)| refreshed.get(*k) != Some(v)).count()
        + refreshed.keys().filter(|k| !bucket.contains_key(*k)).count();
    // What a refresh missed, said where a failure of this test is read.
    for k in bucket.keys().chain(refreshed.keys()).filter(|k| bucket.get(*k) != refreshed.get(*k)) {
        eprintln!(
            "{name}: the refresh missed {k}: the bucket holds {:?}, the cache {:?}",
            bucket.get(k),
            refreshed.get(k)
        );
    }
    assert!(refused.is_empty() && pending == 0, "{name}: after the fault, {pending} pending and refused {refused:?}");

    // Each request the relay saw is one the writer's accounting counted, retries included.
    assert_eq!(writer.sync_stats().total(), writer_relay.requests() as u64, "{name}: the writer's accounting");
    assert_eq!(reader.sync_stats().total(), reader_relay.requests() as u64, "{name}: the reader's accounting");
    assert_eq!(refresher.sync_stats().total(), refresher_relay.requests() as u64, "{name}: the refresher's accounting");
    let fault_name = name.to_string();
    [
        Row {
            fault: fault_name.clone(),
            scenario: "puts and removes, then a flush",
            tried,
            acknowledged,
            lost,
            duplicated,
            corrupt: writer_corrupt,
            recovery_ms: Some(writer_recovery),
            said: writer_said,
        },
        Row {
            fault: fault_name.clone(),
            scenario: "a change-log refresh (lost: changes it missed after)",
            tried: 1,
            acknowledged: usize::from(refresher_said == "refreshed"),
            lost: missed,
            duplicated: 0,
            corrupt: refresher_corrupt_during,
            recovery_ms: Some(refresher_recovery),
            said: refresher_said,
        },
        Row {
            fault: fault_name,
            scenario: "a prefetch",
            tried: 1,
            acknowledged: usize::from(reader_said == "listed"),
            lost: 0,
            duplicated: 0,
            corrupt: reader_corrupt,
            recovery_ms: Some(reader_recovery),
            said: reader_said,
        },
    ]
}

/// A bucket whose host does not resolve: writes wait in the outbox (none lost), the flush and
/// the prefetch say which host, and the cache stays as it was. It never recovers, so no
/// recovery time.
fn unresolvable_host() -> [Row; 2] {
    let dir = TempDir::new().unwrap();
    let host = "http://objstore-no-such-host.invalid:9000";
    let mut writer = client(&dir, "writer", host, "faults/");
    let tried = BEFORE + NEW;
    let acknowledged =
        (0..tried).filter(|i| writer.put("docs", json!({"i": i, "v": 1}), Some(key(*i))).is_ok()).count();
    let writer_said = writer.flush().expect_err("a flush to a host that does not resolve").to_string();
    let waiting = writer.outbox_len().unwrap() as usize;
    let reader_said = writer.prefetch("docs").expect_err("a prefetch from it").to_string();
    let kept = cached(&mut writer).len();
    assert!(writer_said.contains("objstore-no-such-host.invalid"), "{writer_said}");
    // The cache holds every acknowledged write, before and after the failed prefetch.
    let corrupt = usize::from(kept != acknowledged);
    let row = |scenario, tried, acknowledged, lost, said| Row {
        fault: "unresolvable host".into(),
        scenario,
        tried,
        acknowledged,
        lost,
        duplicated: 0,
        corrupt,
        recovery_ms: None,
        said,
    };
    [
        row("puts, then a flush (kept waiting)", tried, acknowledged, acknowledged - waiting, writer_said),
        row("a prefetch", 1, 0, 0, reader_said),
    ]
}

#[test]
fn every_fault_loses_nothing_and_corrupts_nothing() {
    let mut rows = Vec::from(unresolvable_host());
    // Every fault at once, each with its own relays, clients and prefix: a fault's time is mostly
    // waiting (timeouts, Retry-After, a latency spike), and one after another that was 45 s.
    let faulted: Vec<[Row; 3]> = std::thread::scope(|scope| {
        let runs: Vec<_> = every_fault()
            .into_iter()
            .map(|(name, fault)| {
                scope.spawn(move || {
                    let started = Instant::now();
                    let rows = under(name, fault);
                    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
                    rows
                })
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    rows.extend(faulted.into_iter().flatten());
    record(&rows);
    for row in &rows {
        eprintln!(
            "{:40} {:32} tried {:2} acknowledged {:2} lost {} duplicated {} corrupt {} recovery {:>5} ms  {}",
            row.fault,
            row.scenario,
            row.tried,
            row.acknowledged,
            row.lost,
            row.duplicated,
            row.corrupt,
            row.recovery_ms.map_or("-".into(), |ms| ms.to_string()),
            row.said.chars().take(100).collect::<String>()
        );
    }
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r.lost + r.duplicated + r.corrupt > 0)
        .map(|r| format!("{} / {}", r.fault, r.scenario))
        .collect();
    assert!(bad.is_empty(), "lost, duplicated or corrupt under: {bad:?}");
}

// ----- the local disk fills during a prefetch ----------------------------------------------------

/// A tmpfs of `size` mounted on a folder of its own, unmounted when dropped: a real filesystem
/// that fills up, and grows when told to.
struct SmallDisk {
    dir: TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = TempDir::new().unwrap();
        let path = dir.path().display().to_string();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", &path])
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "mounting a {size} tmpfs on {path} failed: the disk-full test needs to mount one (root, or CAP_SYS_ADMIN)"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    fn grow(&self, size: &str) {
        let path = self.path().display().to_string();
        let status = std::process::Command::new("mount").args(["-o", &format!("remount,size={size}"), &path]).status();
        assert!(status.is_ok_and(|s| s.success()), "growing the tmpfs on {path} to {size} failed");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let unmounted = std::process::Command::new("umount").arg(self.path()).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            // Busy: detached now, gone once nothing uses it.
            let _ = std::process::Command::new("umount").arg("-l").arg(self.path()).status();
        }
    }
}

const PREFETCHED: usize = 10_000;

/// Every value the bucket holds, `d00000`..: a few hundred bytes each.
/// One write of a wave failing offline-class (a 503 on its PUT alone) stops the bucket for
/// the flush, but the answers the wave already holds are all taken: the writes that landed are
/// acknowledged, and only the one that failed waits. (They were left queued, though the bucket
/// held them and the wave's marker named them: a withdrawal then dropped them locally, and a
/// collector answered 503 for runs it had stored.)
#[test]
fn a_wave_stopped_by_one_failing_write_acknowledges_every_write_that_landed() {
    let moto = server("moto")["MOTO_ENDPOINT"].clone();
    let prefix = unique_prefix("wave-answers");
    let dir = TempDir::new().unwrap();
    let relay = FaultRelay::start(&moto);
    let mut writer = client(&dir, "writer", &relay.endpoint(), &prefix);
    let fourth: Targets = Arc::new(|method, path| method == "PUT" && path.ends_with("/w3"));
    relay.set_for(Some((fourth, Fault::Status(503, None))));
    let keys: Vec<Key> = (0..8).map(|i| Key::String(format!("w{i}"))).collect();
    let records = (0..8).map(|i| json!({"i": i}));
    writer.db.run(&["docs"], Mode::ReadWrite, |tx| tx.write_many("docs", records, Some(keys.clone()), true)).unwrap();

    let report = writer.agent.flush(&mut writer.db, &Token::default()).unwrap();
    assert!(report.offline.is_some(), "the 503 stops the bucket: {report:?}");
    assert_eq!((report.sent, report.pending), (7, 1), "{report:?}");
    for (i, key) in keys.iter().enumerate() {
        let expected = if i == 3 { SyncStatus::Pending } else { SyncStatus::Synced };
        assert_eq!(writer.db.sync_status("docs", key).unwrap(), expected, "w{i}");
    }
    let mut reader = client(&dir, "reader", &moto, &prefix);
    reader.prefetch("docs").unwrap();
    let stored: Vec<String> = cached(&mut reader).into_keys().collect();
    assert_eq!(stored, ["w0", "w1", "w2", "w4", "w5", "w6", "w7"]);
    // A withdrawal (a collector taking back a post it could not store) finds only the write
    // that failed: a stored one stays, and is said to be stored.
    assert_eq!(writer.db.withdraw_pending("docs", &keys[5]).unwrap(), 0);
    assert_eq!(writer.db.sync_status("docs", &keys[5]).unwrap(), SyncStatus::Synced);
    assert_eq!(writer.db.withdraw_pending("docs", &keys[3]).unwrap(), 1);
    relay.set_for(None);
    let report = writer.flush().unwrap();
    assert_eq!((report.sent, report.pending), (0, 0), "nothing is sent twice: {report:?}");
}

fn prefetched_value(i: usize) -> Value {
    json!({"i": i, "text": format!("{i:06} {}", "x".repeat(300))})
}

#[test]
fn a_disk_that_fills_during_a_prefetch_loses_nothing_and_the_prefetch_completes_once_space_returns() {
    // The bucket on a tmpfs as well (its fsyncs cost nothing), the cache on one of 2 MB.
    let bucket = SmallDisk::mount("256m");
    let cache = SmallDisk::mount("2m");
    let block = json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": format!("file://{}", bucket.path().display())}});
    let schema = || schema_with(&[("docs", block.clone())]);
    let seeding = TempDir::new().unwrap();
    let mut writer = open(&seeding.path().join("writer.sqlite3"), schema());
    for chunk in (0..PREFETCHED).collect::<Vec<_>>().chunks(1000) {
        writer
            .run(&["docs"], objstore_db_core::Mode::ReadWrite, |tx| {
                chunk.iter().try_for_each(|i| {
                    tx.put("docs", prefetched_value(*i), Some(Key::String(format!("d{i:05}")))).map(drop)
                })
            })
            .unwrap();
        assert_eq!(writer.flush().unwrap().pending, 0);
    }
    drop(writer);

    let mut reader = open(&cache.path().join("reader.sqlite3"), schema());
    let started = Instant::now();
    let full = reader.prefetch("docs").expect_err("a prefetch of 10,000 objects into 2 MB");
    let said = full.to_string();
    assert!(said.contains("full"), "the error says the disk is full: {said}");
    // Consistent: what the cache holds is the bucket's, whole records only.
    let held = cached(&mut reader);
    let corrupt = held.iter().filter(|(k, v)| Some(*v) != k[1..].parse().ok().map(prefetched_value).as_ref()).count();
    assert_eq!(corrupt, 0, "records in the cache that are not the bucket's");
    assert!(held.len() < PREFETCHED, "the disk did fill: {} records held", held.len());

    cache.grow("64m");
    let space_back = Instant::now();
    reader.prefetch("docs").unwrap();
    let recovery_ms = space_back.elapsed().as_millis();
    let held_after = cached(&mut reader);
    let lost = (0..PREFETCHED).filter(|i| held_after.get(&format!("d{i:05}")) != Some(&prefetched_value(*i))).count();
    eprintln!(
        "disk full: {} records cached when the 2 MB filled ({:.1} s in), {} after it grew ({recovery_ms} ms); said: {said}",
        held.len(),
        space_back.duration_since(started).as_secs_f64(),
        held_after.len()
    );
    record(&[Row {
        fault: "local disk full (2 MB tmpfs, grown to 64 MB)".into(),
        scenario: "a prefetch of 10,000 objects",
        tried: PREFETCHED,
        acknowledged: held_after.len(),
        lost,
        duplicated: held_after.len().saturating_sub(PREFETCHED),
        corrupt,
        recovery_ms: Some(recovery_ms),
        said,
    }]);
    assert_eq!(lost, 0, "objects the prefetch did not bring once space returned");
}

// ----- a storage cluster losing a node ------------------------------------------------------------

/// Options for the three-node Garage cluster, through node `n`'s S3 API.
fn cluster_options(env: &std::collections::HashMap<String, String>, n: usize, prefix: &str) -> Value {
    json!({"bucket": env["GARAGE_CLUSTER_BUCKET"], "prefix": prefix, "endpoint": env[&format!("GARAGE_CLUSTER_ENDPOINT_{n}")],
        "region": env["GARAGE_CLUSTER_REGION"], "accessKeyId": env["GARAGE_CLUSTER_ACCESS_KEY_ID"],
        "secretAccessKey": env["GARAGE_CLUSTER_SECRET_ACCESS_KEY"], "retries": 1, "retryBaseMs": 20, "timeoutMs": 3000})
}

fn cluster_client(dir: &TempDir, name: &str, options: Value) -> Client {
    let block = json!({"format": "objstore", "Options": options});
    open(&dir.path().join(format!("{name}.sqlite3")), schema_with(&[("docs", block)]))
}

fn cluster(args: &[&str]) {
    let script = repo_root().join("tests/servers/garage-cluster");
    let status = std::process::Command::new(&script).args(args).stdout(std::process::Stdio::null()).status();
    assert!(status.is_ok_and(|s| s.success()), "tests/servers/garage-cluster {args:?} failed");
}

const CLUSTER_WRITES: usize = 200;

/// Writes `CLUSTER_WRITES` objects through node 1 and flushes them while node `killed` is killed
/// 50 ms into the flush; a reader on node 2 lists meanwhile. Then the node starts again, the
/// writer flushes until its outbox is empty, and a client on node 2 lists the bucket.
fn losing_node(killed: usize) -> Row {
    let env = server("garage-cluster");
    let prefix = unique_prefix(&format!("cluster-node{killed}"));
    let dir = TempDir::new().unwrap();
    let mut writer = cluster_client(&dir, "writer", cluster_options(&env, 1, &prefix));
    let mut reader = cluster_client(&dir, "reader", cluster_options(&env, 2, &prefix));
    reader.prefetch("docs").unwrap();
    let expected: BTreeMap<String, Value> =
        (0..CLUSTER_WRITES).map(|i| (format!("d{i:03}"), json!({"i": i, "text": "x".repeat(200)}))).collect();
    // Written in one transaction, none sent yet: the flush below sends them all.
    writer
        .run(&["docs"], objstore_db_core::Mode::ReadWrite, |tx| {
            expected.iter().try_for_each(|(k, v)| tx.put("docs", v.clone(), Some(Key::String(k.clone()))).map(drop))
        })
        .unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        cluster(&["stop", &killed.to_string()]);
    });
    let said = match writer.flush() {
        Ok(report) if report.pending == 0 => "drained".to_string(),
        Ok(report) => format!("{} pending, {} refused", report.pending, report.refused),
        Err(e) => e.to_string(),
    };
    killer.join().unwrap();
    // Meanwhile: reads of what the writer holds come from its cache, and the reader lists (its
    // node is up).
    let served =
        expected.keys().filter(|k| writer.get_cached("docs", &Key::String((*k).clone())).unwrap().is_some()).count();
    assert_eq!(served, CLUSTER_WRITES, "reads served from the writer's cache while node {killed} is down");
    let listed = reader.prefetch("docs");
    assert!(listed.is_ok(), "listing through node 2 while node {killed} is down: {listed:?}");

    cluster(&[]);
    let back = Instant::now();
    while writer.flush().map_or(true, |r| r.pending > 0) && back.elapsed() < RECOVERY_BOUND {
        std::thread::sleep(Duration::from_millis(100));
    }
    let recovery_ms = back.elapsed().as_millis();
    assert_eq!(writer.outbox_len().unwrap(), 0, "writes still waiting {recovery_ms} ms after node {killed} came back");
    let mut fresh = cluster_client(&dir, "fresh", cluster_options(&env, 2, &prefix));
    fresh.prefetch("docs").unwrap();
    let bucket = cached(&mut fresh);
    let lost = expected.iter().filter(|(k, v)| bucket.get(*k) != Some(v)).count();
    let duplicated = bucket.keys().filter(|k| !expected.contains_key(*k)).count();
    reader.prefetch("docs").unwrap();
    let corrupt = usize::from(cached(&mut reader) != bucket) + usize::from(cached(&mut writer) != expected);
    eprintln!("cluster, node {killed} killed: flush said {said}; {recovery_ms} ms to drain once it was back");
    Row {
        fault: match killed {
            1 => "cluster of 3: the writer's own node killed mid-flush".into(),
            n => format!("cluster of 3: node {n} (not the writer's) killed mid-flush"),
        },
        scenario: "200 puts, a flush, a listing through another node",
        tried: CLUSTER_WRITES,
        acknowledged: CLUSTER_WRITES,
        lost,
        duplicated,
        corrupt,
        recovery_ms: Some(recovery_ms),
        said,
    }
}

const LISTED: usize = 2_500;

/// A reader of an objstore-meta store (whose records the listing writes as its pages arrive)
/// lists `LISTED` objects through node 2, killed while its second page is asked for: what the
/// reader holds meanwhile is whole records of objects the bucket holds; once the node is back,
/// the next listing brings the rest.
fn losing_the_readers_node_mid_listing() -> Row {
    let env = server("garage-cluster");
    let prefix = unique_prefix("cluster-listing");
    let dir = TempDir::new().unwrap();
    let mut writer = cluster_client(&dir, "writer", cluster_options(&env, 1, &prefix));
    let names: Vec<String> = (0..LISTED).map(|i| format!("d{i:04}")).collect();
    writer
        .run(&["docs"], objstore_db_core::Mode::ReadWrite, |tx| {
            names.iter().try_for_each(|k| tx.put("docs", json!({"k": k}), Some(Key::String(k.clone()))).map(drop))
        })
        .unwrap();
    assert_eq!(writer.flush().unwrap().pending, 0);
    // The reader reaches node 2 through a relay, which holds the listing's second request while
    // the node is killed.
    let relay = FaultRelay::start(&env["GARAGE_CLUSTER_ENDPOINT_2"]);
    let mut options = cluster_options(&env, 2, &prefix);
    options["endpoint"] = json!(relay.endpoint());
    let meta = json!({"format": "objstore-meta", "prefetch": "meta", "Options": options});
    let mut reader = open(&dir.path().join("reader.sqlite3"), schema_with(&[("meta", meta)]));
    let said = std::thread::scope(|scope| {
        scope.spawn(|| {
            let wait_for = |requests: usize| {
                let asked = Instant::now();
                while relay.requests() < requests && asked.elapsed() < RECOVERY_BOUND {
                    std::thread::sleep(Duration::from_millis(1));
                }
            };
            // Once the first page is asked for, later requests are held a while: the second
            // page's request waits in the relay while the node is killed.
            wait_for(1);
            relay.set(Fault::Spike(Duration::from_millis(800)));
            wait_for(2);
            cluster(&["stop", "2"]);
            relay.set(Fault::None);
        });
        match reader.prefetch("meta") {
            Ok(()) => "listed before the node went".to_string(),
            Err(e) => e.to_string(),
        }
    });
    assert!(said.contains("cannot reach the bucket"), "the listing met the node's loss: {said}");
    let pages = reader.sync_stats().requests.get("LIST").and_then(|by| by.get(&200).copied()).unwrap_or(0);
    let said = format!("{said} (after {pages} of the listing's pages)");
    let held = cached_in(&mut reader, "meta");
    let corrupt = held.iter().filter(|(k, v)| !names.contains(k) || v["name"] != json!(k)).count();

    cluster(&[]);
    let back = Instant::now();
    while reader.prefetch("meta").is_err() && back.elapsed() < RECOVERY_BOUND {
        std::thread::sleep(Duration::from_millis(100));
    }
    let recovery_ms = back.elapsed().as_millis();
    let after = cached_in(&mut reader, "meta");
    let lost = names.iter().filter(|k| !after.contains_key(*k)).count();
    eprintln!(
        "cluster, the reader's node killed mid-listing: {} held meanwhile; said {said}; {recovery_ms} ms",
        held.len()
    );
    Row {
        fault: "cluster of 3: the reader's own node killed mid-listing".into(),
        scenario: "a listing of 2,500 objects into an objstore-meta store",
        tried: LISTED,
        acknowledged: after.len(),
        lost,
        duplicated: after.len().saturating_sub(LISTED),
        corrupt,
        recovery_ms: Some(recovery_ms),
        said,
    }
}

#[test]
fn a_cluster_losing_a_node_loses_nothing() {
    let rows = [losing_node(3), losing_node(1), losing_the_readers_node_mid_listing()];
    record(&rows);
    for row in &rows {
        assert_eq!((row.lost, row.duplicated, row.corrupt), (0, 0, 0), "{}", row.fault);
    }
}
