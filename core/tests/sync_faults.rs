//! Faults on the wire, from a misbehaving peer on loopback: a server that is down, 5xx (retried
//! with backoff, then a clear error), a reset connection, a slow server, truncated or malformed
//! XML, a body that is not JSON, an oversized or cut-short body. Every one ends in an error that
//! says what was wrong, with the local copy as it was. The same peer shows what goes on the
//! wire where no S3 server can: vendor metadata headers and the rest format's POST.

mod sync_support;

use std::net::TcpListener;
use std::time::Duration;

use objstore_db_core::{ErrorCode, EventKind, Key, ScanOptions};
use serde_json::{json, Value};
use sync_support::*;
use tempfile::TempDir;

use Misbehaviour::*;

fn key(s: &str) -> Key {
    Key::String(s.to_string())
}

const CACHED: &[u8] = br#"{"v": "cached"}"#;

/// A client of `endpoint` with a mutable store `docs` and an objstore-meta store `meta`.
fn client(endpoint: &str, options: Value) -> (TempDir, Client) {
    let dir = TempDir::new().unwrap();
    // The peer answers as scripted: it is declared to honour conditions, so no probe is sent.
    let mut base = json!({"bucket": "b", "endpoint": endpoint, "retries": 2, "retryBaseMs": 1, "timeoutMs": 2000,
        "conditionalWrites": true});
    for (k, v) in options.as_object().unwrap() {
        base[k] = v.clone();
    }
    let mut meta = base.clone();
    meta.as_object_mut().unwrap().remove("metadata");
    let schema = schema_with(&[
        ("docs", json!({"format": "objstore", "Options": base})),
        (
            "meta",
            json!({"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": 0, "Options": meta}),
        ),
    ]);
    let db = open(&dir.path().join("c.sqlite3"), schema);
    (dir, db)
}

/// A client whose `docs` holds a cached copy of `d` (the peer's first answer), then meets
/// `fault` on the next read of it.
fn cached_then(fault: Vec<Misbehaviour>, options: Value) -> (Peer, TempDir, Client) {
    let mut script = vec![Answer(200, CACHED.to_vec())];
    script.extend(fault);
    let peer = Peer::start(script);
    let (dir, mut db) = client(&peer.endpoint(), options);
    assert_eq!(db.get("docs", &key("d")).unwrap(), Some(json!({"v": "cached"})));
    (peer, dir, db)
}

fn assert_cache_unchanged(db: &mut Client) {
    let local = db.run(&["docs"], objstore_db_core::Mode::ReadOnly, |tx| tx.get("docs", &key("d"))).unwrap();
    assert_eq!(local, Some(json!({"v": "cached"})));
    assert_eq!(db.count("docs", &ScanOptions::new()).unwrap(), 1);
}

#[test]
fn a_server_that_is_down() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_dir, mut db) = client(&format!("http://127.0.0.1:{port}"), json!({}));
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}/b/d")), "{err}");
    let stats = db.sync_stats();
    assert_eq!(stats.requests["GET"][&0], 3, "tried once and retried twice: {stats:?}");
}

#[test]
fn server_errors_are_retried_with_backoff_then_reported() {
    let (peer, _dir, mut db) = cached_then(
        vec![
            Answer(500, b"oops".to_vec()),
            Answer(503, b"<Error><Code>SlowDown</Code><Message>busy</Message></Error>".to_vec()),
        ],
        json!({}),
    );
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert!(err.to_string().contains("HTTP 503") && err.to_string().contains("SlowDown: busy"), "{err}");
    assert_eq!(peer.count(), 1 + 3);
    assert_cache_unchanged(&mut db);
}

#[test]
fn a_server_error_that_passes_is_absorbed_by_a_retry() {
    let fresh = br#"{"v": "fresh"}"#.to_vec();
    let (peer, _dir, mut db) = cached_then(vec![Answer(503, vec![]), Answer(200, fresh)], json!({}));
    assert_eq!(db.get("docs", &key("d")).unwrap(), Some(json!({"v": "fresh"})));
    assert_eq!(peer.count(), 3);
}

#[test]
fn a_connection_reset() {
    let (_peer, _dir, mut db) = cached_then(vec![Reset], json!({}));
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert_cache_unchanged(&mut db);
}

/// A 503 that asks to be tried again later (`Retry-After`) is tried again no sooner; one that
/// asks for longer than a request may take (the timeout) is not tried again within the request,
/// and the error says what the bucket asked.
#[test]
fn a_retry_after_is_honoured() {
    let slow_down = br#"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"#;
    let asking = |after: &str| StatusWithHeaders(503, vec![format!("retry-after: {after}")], slow_down.to_vec());
    let (peer, _dir, mut db) = cached_then(vec![asking("1"), Answer(200, br#"{"v": "new"}"#.to_vec())], json!({}));
    assert_eq!(db.get("docs", &key("d")).unwrap(), Some(json!({"v": "new"})));
    assert_eq!(peer.count(), 3, "the cached read, the 503, the retry");

    let (peer, _dir, mut db) = cached_then(vec![asking("3600")], json!({}));
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(peer.count(), 2, "not tried again within the request: {err}");
    assert!(err.to_string().contains("it asks to be tried again in 3600 s"), "{err}");
    assert_cache_unchanged(&mut db);
}

#[test]
fn a_slow_server_times_out() {
    let slow = Slow(Duration::from_secs(3), br#"{"v": "late"}"#.to_vec());
    let (_peer, _dir, mut db) = cached_then(vec![slow], json!({"timeoutMs": 300, "retries": 0}));
    let started = std::time::Instant::now();
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert!(err.to_string().to_lowercase().contains("timeout") || err.to_string().contains("timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "the timeout did not cut the wait");
    assert_cache_unchanged(&mut db);
}

#[test]
fn a_body_that_is_not_json() {
    let (_peer, _dir, mut db) = cached_then(vec![Answer(200, b"<html>gateway</html>".to_vec())], json!({}));
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RemoteData, "{err}");
    assert!(err.to_string().contains("not JSON") && err.to_string().contains("\"d\""), "{err}");
    assert_cache_unchanged(&mut db);
}

#[test]
fn an_oversized_body() {
    let big = format!("{{\"v\": \"{}\"}}", "x".repeat(5000)).into_bytes();
    let (_peer, _dir, mut db) = cached_then(vec![Answer(200, big)], json!({"maxObjectBytes": 1000}));
    db.take_sync_stats();
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RemoteData, "{err}");
    assert!(err.to_string().contains("1000-byte limit"), "{err}");
    assert_eq!(db.take_sync_stats().bytes_received, 1001, "what was read before the cap is counted");
    assert_cache_unchanged(&mut db);
}

#[test]
fn a_body_cut_short() {
    let (_peer, _dir, mut db) = cached_then(vec![ShortBody(100, br#"{"v": "#.to_vec())], json!({"retries": 0}));
    db.take_sync_stats();
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert_eq!(db.take_sync_stats().bytes_received, 6, "the bytes before the cut are counted");
    assert_cache_unchanged(&mut db);
}

const LISTING: &str = r#"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>one</Key><ETag>"e1"</ETag><Size>2</Size><LastModified>2026-11-22T00:00:00.000Z</LastModified></Contents></ListBucketResult>"#;

fn listed_then(fault: &[u8]) -> (TempDir, Client) {
    let peer = Peer::start(vec![Answer(200, LISTING.as_bytes().to_vec()), Answer(200, fault.to_vec())]);
    let (dir, mut db) = client(&peer.endpoint(), json!({}));
    assert_eq!(db.count("meta", &ScanOptions::new()).unwrap(), 1);
    let err = db.count("meta", &ScanOptions::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RemoteData, "{err}");
    (dir, db)
}

#[test]
fn truncated_or_malformed_listings() {
    for bad in [
        &LISTING.as_bytes()[..LISTING.len() - 30],
        b"<ListBucketResult><Contents><Key>a</Key></Wrong></ListBucketResult>",
        b"{\"json\": true}",
    ] {
        let (_dir, mut db) = listed_then(bad);
        db.set_offline(true);
        let kept =
            db.run(&["meta"], objstore_db_core::Mode::ReadOnly, |tx| tx.count("meta", &ScanOptions::new())).unwrap();
        assert_eq!(kept, 1, "the meta store kept its record");
    }
}

/// One object that is not JSON does not keep the others out: values_of serves them, reports
/// the bad one in an error event, and a read of it alone is its error — answered from a 304,
/// not by downloading it again.
#[test]
fn values_of_serves_the_others_when_one_object_cannot_be_used() {
    let peer = Peer::start(vec![
        Answer(200, br#"{"v": 1}"#.to_vec()),
        WithHeaders(vec!["etag: \"e-b\"".into()], b"not json".to_vec()),
        Answer(304, vec![]),
    ]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({"concurrency": 1, "retries": 0}));
    let errors = record_events(&mut db, &[EventKind::Error]);
    let values = db.values_of("docs", &[key("a"), key("b")]).unwrap();
    assert_eq!(values, vec![Some(json!({"v": 1})), None]);
    let events = errors.lock().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].key, Some(key("b")));
    let message = events[0].message.clone().unwrap_or_default();
    assert!(message.contains("not JSON") && message.contains("\"e-b\""), "{message}");
    assert_eq!(db.sync_status("docs", &key("b")).unwrap(), objstore_db_core::SyncStatus::Unusable);
    let err = db.get("docs", &key("b")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RemoteData, "{err}");
    assert!(err.to_string().contains("not JSON"), "{err}");
    let last = peer.seen.lock().unwrap().last().cloned().unwrap().to_ascii_lowercase();
    assert!(last.contains("if-none-match: \"e-b\""), "asked with the version it knows: {last}");
    assert_eq!(peer.count(), 3, "not downloaded again");
}

/// In an immutable store a name is never reused, so an object that cannot be used stays so: a
/// later read of it is its error again with no request at all (a page showing it costs nothing).
#[test]
fn an_immutable_stores_unusable_object_is_not_asked_for_again() {
    let peer = Peer::start(vec![
        WithHeaders(vec!["etag: \"e-b\"".into()], b"not json".to_vec()),
        Answer(200, br#"{"v": 1}"#.to_vec()),
    ]);
    let dir = TempDir::new().unwrap();
    let options = json!({"bucket": "b", "endpoint": peer.endpoint(), "retries": 0, "conditionalWrites": true});
    let schema = schema_with(&[("docs", json!({"format": "objstore", "immutable": true, "Options": options}))]);
    let mut db = open(&dir.path().join("c.sqlite3"), schema);
    let err = db.values_of("docs", &[key("b")]).unwrap_err();
    assert!(err.to_string().contains("not JSON"), "{err}");
    for _ in 0..3 {
        assert_eq!(db.values_of("docs", &[key("a"), key("b")]).unwrap(), vec![Some(json!({"v": 1})), None]);
        let err = db.get("docs", &key("b")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::RemoteData, "{err}");
        assert!(err.to_string().contains("not JSON"), "{err}");
    }
    assert_eq!(peer.count(), 2, "one GET of b, one of a; nothing asked again");
}

#[test]
fn a_vendor_metadata_prefix_goes_out_and_comes_back() {
    let peer = Peer::start(vec![
        Answer(200, vec![]),
        WithHeaders(
            vec!["x-vendor-meta-platform: linux".into(), "x-amz-meta-ignored: yes".into()],
            br#"{"v": 2}"#.to_vec(),
        ),
    ]);
    let (_dir, mut db) =
        client(&peer.endpoint(), json!({"metadataPrefix": "x-vendor-meta-", "metadata": ["platform"]}));
    db.put("docs", json!({"platform": "linux"}), Some(key("r"))).unwrap();
    let head = peer.seen.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.starts_with("put /b/r "), "{head}");
    assert!(head.contains("x-vendor-meta-platform: linux") && !head.contains("x-amz-meta"), "{head}");
    // The meta store (same bucket and prefix) learns metadata from a fetched object's headers.
    assert_eq!(db.get("docs", &key("r")).unwrap(), Some(json!({"v": 2})));
    db.set_offline(true);
    let record = db.run(&["meta"], objstore_db_core::Mode::ReadOnly, |tx| tx.get("meta", &key("r"))).unwrap().unwrap();
    assert_eq!(record["metadata"], json!({"platform": "linux"}), "{record}");
}

#[test]
fn the_rest_format_creates_with_post_and_replaces_with_put() {
    let peer = Peer::start(vec![Answer(201, vec![]), Answer(200, vec![])]);
    let dir = TempDir::new().unwrap();
    let schema = schema_with(&[(
        "runs",
        json!({"format": "rest", "Options": {"endpoint": peer.endpoint(), "prefix": "api/runs/"}}),
    )]);
    let mut db = open(&dir.path().join("c.sqlite3"), schema);
    db.add("runs", json!({"ok": true}), Some(key("r1"))).unwrap();
    db.put("runs", json!({"ok": false}), Some(key("r1"))).unwrap();
    let seen = peer.seen.lock().unwrap().clone();
    assert!(seen[0].starts_with("POST /api/runs/r1 ") && seen[0].contains("if-none-match: *"), "{}", seen[0]);
    assert!(seen[1].starts_with("PUT /api/runs/r1 ") && seen[1].contains("if-match: \"peer\""), "{}", seen[1]);
    assert_eq!(db.prefetch("runs").unwrap_err().code(), ErrorCode::InvalidArgument);
}

#[test]
fn a_missing_bucket_is_an_error_not_a_missing_object() {
    let no_bucket = b"<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
    let (_peer, _dir, mut db) = cached_then(vec![Answer(404, no_bucket.to_vec())], json!({}));
    let err = db.get("docs", &key("d")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Remote, "{err}");
    assert!(err.to_string().contains("NoSuchBucket"), "{err}");
    assert_cache_unchanged(&mut db);
}

#[test]
fn a_post_that_may_have_arrived_is_not_sent_again() {
    let peer = Peer::start(vec![Answer(502, vec![]), Answer(201, vec![])]);
    let dir = TempDir::new().unwrap();
    let options = json!({"endpoint": peer.endpoint(), "retries": 3, "retryBaseMs": 1});
    let mut db =
        open(&dir.path().join("c.sqlite3"), schema_with(&[("runs", json!({"format": "rest", "Options": options}))]));
    db.add("runs", json!({"ok": true}), Some(key("r1"))).unwrap();
    assert_eq!(peer.count(), 1, "a 502 after a POST is not retried at once");
    assert_eq!(db.outbox_len().unwrap(), 1, "the write waits for a flush");
}

#[test]
fn without_an_etag_the_cache_is_validated_by_last_modified() {
    let date = "Sun, 22 Nov 2026 05:00:00 GMT";
    let peer =
        Peer::start(vec![WithHeaders(vec![format!("last-modified: {date}")], CACHED.to_vec()), Answer(304, vec![])]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({}));
    assert_eq!(db.get("docs", &key("d")).unwrap(), Some(json!({"v": "cached"})));
    assert_eq!(db.get("docs", &key("d")).unwrap(), Some(json!({"v": "cached"})));
    let second = peer.seen.lock().unwrap()[1].to_ascii_lowercase();
    assert!(second.contains(&format!("if-modified-since: {}", date.to_ascii_lowercase())), "{second}");
    assert!(!second.contains("if-none-match"), "{second}");
}

#[test]
fn a_write_the_server_fails_on_does_not_block_the_writes_after_it() {
    let internal = b"<Error><Code>InternalError</Code><Message>this one object</Message></Error>".to_vec();
    // a/1 fails, b goes through, a/2 (on top of a/1) is not sent; then c fails and d too: two
    // failures in a row are a failing server, and the flush stops.
    let peer = Peer::start(vec![
        Answer(500, internal.clone()),
        Answer(200, vec![]),
        Answer(500, internal.clone()),
        Answer(500, internal.clone()),
    ]);
    // One at a time: the peer answers in the order requests arrive.
    let (_dir, mut db) = client(&peer.endpoint(), json!({"retries": 0, "concurrency": 1}));
    let errors = record_events(&mut db, &[EventKind::Error]);
    for (k, v) in [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("d", 1)] {
        db.db.put("docs", json!({"v": v}), Some(key(k))).unwrap();
    }
    let report = db.agent.flush(&mut db.db, &objstore_db_core::sync::Token::default()).unwrap();
    assert_eq!(report.sent, 1, "{report:?}");
    assert_eq!(report.held.len(), 2, "a/1 and c: {report:?}");
    assert!(report.held[0].1.to_string().contains("InternalError: this one object"), "{report:?}");
    assert_eq!(report.offline.as_ref().map(|e| e.code()), Some(ErrorCode::Network), "d stopped the flush");
    assert_eq!(report.pending, 4, "nothing is lost: a/1, a/2, c and d wait");
    assert_eq!(peer.count(), 4, "a/2 was not sent on top of a write that did not land");
    assert!(db.refused_writes().unwrap().is_empty());
    assert_eq!(errors.lock().unwrap().len(), 2, "one error event per held write");
}

/// The methods of the requests the peer saw, in order.
fn methods(peer: &Peer) -> Vec<String> {
    peer.seen.lock().unwrap().iter().map(|h| h.split(' ').next().unwrap_or_default().to_string()).collect()
}

/// The probe asks about both conditions a write may carry: a server that honours
/// `If-None-Match` but ignores `If-Match` is found out, and writes to it are checked by reading
/// first (review N2).
#[test]
fn a_server_ignoring_if_match_is_found_out_by_the_probe() {
    let peer = Peer::start(vec![
        Answer(200, vec![]), // the probe object
        Answer(412, vec![]), // If-None-Match: * honoured
        Answer(200, vec![]), // If-Match on a version it never had: ignored
        Answer(204, vec![]), // the probe removed
        Answer(404, vec![]), // the write, checked by reading: nothing there
        Answer(200, vec![]), // the write
    ]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({"conditionalWrites": null, "retries": 0}));
    db.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 0);
    assert_eq!(db.sync_stats().conditional_writes.values().collect::<Vec<_>>(), vec![&false]);
    assert_eq!(methods(&peer), ["PUT", "PUT", "PUT", "DELETE", "GET", "PUT"]);
    let seen = peer.seen.lock().unwrap();
    assert!(seen[2].to_ascii_lowercase().contains("if-match:"), "{}", seen[2]);
}

/// A server that answers 501 to a conditional header is settled as one that does not honour
/// it: writes are checked by reading and sent, and it is not probed again (review N8).
#[test]
fn a_server_refusing_conditional_headers_is_settled_not_probed_forever() {
    let not_implemented = b"<Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>";
    let peer = Peer::start(vec![
        Answer(200, vec![]),                   // the probe object
        Answer(501, not_implemented.to_vec()), // If-None-Match: * refused outright
        Answer(204, vec![]),                   // the probe removed
        Answer(404, vec![]),                   // k1 checked by reading
        Answer(200, vec![]),                   // k1, sent without the header
        Answer(404, vec![]),                   // k2 checked
        Answer(200, vec![]),                   // k2
    ]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({"conditionalWrites": null, "retries": 0}));
    let errors = record_events(&mut db, &[EventKind::Error]);
    db.put("docs", json!({"v": 1}), Some(key("k1"))).unwrap();
    db.put("docs", json!({"v": 2}), Some(key("k2"))).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 0, "both writes sent");
    assert_eq!(methods(&peer), ["PUT", "PUT", "DELETE", "GET", "PUT", "GET", "PUT"], "one probe");
    assert!(!peer.seen.lock().unwrap()[4].to_ascii_lowercase().contains("if-none-match"));
    let said = errors.lock().unwrap().iter().filter_map(|e| e.message.clone()).collect::<Vec<_>>();
    assert!(said.iter().any(|m| m.contains("ignores conditional writes")), "{said:?}");
}

/// A probe that fails for another reason (a 500) is not asked again at every write: the writes
/// wait, and the bucket is probed again after a while (review N8).
#[test]
fn a_failing_probe_is_not_repeated_at_every_flush() {
    let peer =
        Peer::start(vec![Answer(500, b"<Error><Code>InternalError</Code><Message>down</Message></Error>".to_vec())]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({"conditionalWrites": null, "retries": 0}));
    db.put("docs", json!({"v": 1}), Some(key("k1"))).unwrap();
    db.put("docs", json!({"v": 2}), Some(key("k2"))).unwrap();
    db.put("docs", json!({"v": 3}), Some(key("k3"))).unwrap();
    assert_eq!(peer.count(), 1, "{:?}", methods(&peer));
    assert_eq!(db.outbox_len().unwrap(), 3, "every write waits");
    assert!(db.refused_writes().unwrap().is_empty());
}

/// One bucket down, or refusing every request, stops neither the writes nor the reads of a
/// store on another bucket: breakers and flush stops are per bucket (review N4).
#[test]
fn one_bucket_failing_stops_nothing_of_another() {
    let refusing =
        Peer::start(vec![Answer(403, b"<Error><Code>InvalidAccessKeyId</Code><Message>no</Message></Error>".to_vec())]);
    let down = format!("http://127.0.0.1:{}", TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    for far in [down, refusing.endpoint()] {
        let dir = TempDir::new().unwrap();
        let near = json!({"bucket": "b", "endpoint": format!("file://{}", dir.path().join("bucket").display())});
        let far = json!({"bucket": "b", "endpoint": far, "retries": 0, "conditionalWrites": true});
        let schema = |stores: &[&str]| {
            let all = [
                ("far", json!({"format": "objstore", "Options": far})),
                ("near", json!({"format": "objstore", "Options": near})),
            ];
            schema_with(&all.into_iter().filter(|(n, _)| stores.contains(n)).collect::<Vec<_>>())
        };
        let mut db = open(&dir.path().join("c.sqlite3"), schema(&["far", "near"]));
        db.put("far", json!({"v": 1}), Some(key("k"))).unwrap(); // first in the outbox, and failing
        db.put("near", json!({"v": 1}), Some(key("k"))).unwrap();
        db.put("far", json!({"v": 2}), Some(key("k2"))).unwrap();
        db.put("near", json!({"v": 2}), Some(key("k2"))).unwrap();
        assert_eq!(db.outbox_len().unwrap(), 2, "only the far bucket's writes wait");
        assert!(db.refused_writes().unwrap().is_empty(), "and they are not refused");
        assert_eq!(db.sync_status("near", &key("k2")).unwrap(), objstore_db_core::SyncStatus::Synced);
        // Another client writes to the near bucket: this one reads it though the far one fails.
        let mut other = open(&dir.path().join("other.sqlite3"), schema(&["near"]));
        other.put("near", json!({"by": "other"}), Some(key("k3"))).unwrap();
        assert_eq!(db.get("near", &key("k3")).unwrap(), Some(json!({"by": "other"})));
        assert!(db.get("far", &key("k3")).is_err(), "the far bucket still fails");
    }
}

/// More than a page of writes held at the outbox's head (one object the server failed on)
/// does not stop the writes behind them (review N11).
#[test]
fn writes_held_at_the_head_do_not_starve_the_rest() {
    // The first write fails with a 500 (held, with the writes after it to the same object);
    // every later request succeeds.
    let peer = Peer::start(vec![
        Answer(500, b"<Error><Code>InternalError</Code><Message>no</Message></Error>".to_vec()),
        Answer(200, vec![]),
    ]);
    let (_dir, mut db) = client(&peer.endpoint(), json!({"retries": 0}));
    db.set_offline(true);
    for i in 0..150 {
        db.db.put("docs", json!({"i": i}), Some(key("counter"))).unwrap();
    }
    db.db.put("docs", json!({"i": 0}), Some(key("other"))).unwrap();
    db.set_offline(false);
    let report = db.agent.flush(&mut db.db, &objstore_db_core::sync::Token::default()).unwrap();
    assert_eq!((report.held.len(), report.sent, report.pending), (1, 1, 150), "{:?}", (report.held, report.sent));
    assert_eq!(methods(&peer), ["PUT", "PUT"], "the held write, then the one behind the page");
    assert_eq!(db.sync_status("docs", &key("other")).unwrap(), objstore_db_core::SyncStatus::Synced);
}
