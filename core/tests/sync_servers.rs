//! The sync layer against real S3 servers, started by `tests/servers/*` on 127.0.0.1: moto
//! (signed, and anonymous on a bucket with a public policy) and Garage (strict SigV4). Each test
//! works under a prefix of its own.

mod sync_support;

use objstore_db_core::bucket::{list_all, open_bucket, ListRequest, ListVersion, PutOptions};
use objstore_db_core::sync::{SyncConfig, Token};
use objstore_db_core::{ErrorCode, EventKind, Key, KeyRange, Resolution, ScanOptions};
use serde_json::{json, Value};
use sync_support::*;
use tempfile::TempDir;

fn key(s: &str) -> Key {
    Key::String(s.to_string())
}

fn moto_signed(prefix: &str) -> Value {
    signed_options(&server("moto"), "moto", "MOTO_SIGNED_BUCKET", prefix)
}

fn garage(prefix: &str) -> Value {
    signed_options(&server("garage"), "garage", "GARAGE_BUCKET", prefix)
}

fn block(format: &str, options: Value, extra: Value) -> Value {
    let mut block = json!({"format": format, "Options": options});
    for (k, v) in extra.as_object().unwrap() {
        block[k] = v.clone();
    }
    block
}

/// Two clients' databases on the same bucket and prefix.
fn two_clients(options: &Value, extra: Value) -> (TempDir, Client, Client) {
    let dir = TempDir::new().unwrap();
    let schema = || schema_with(&[("docs", block("objstore", options.clone(), extra.clone()))]);
    let a = open(&dir.path().join("a.sqlite3"), schema());
    let b = open(&dir.path().join("b.sqlite3"), schema());
    (dir, a, b)
}

/// The round trip every server must get right: write, read on another client, 304 on a
/// repeat, a change followed, a removal followed.
fn round_trip(options: Value) {
    let (_dir, mut a, mut b) = two_clients(&options, json!({}));
    a.put("docs", json!({"v": 1, "text": "ünïcode & <xml>"}), Some(key("x/1 a+b"))).unwrap();
    assert_eq!(b.get("docs", &key("x/1 a+b")).unwrap(), Some(json!({"v": 1, "text": "ünïcode & <xml>"})));
    b.take_sync_stats();
    b.get("docs", &key("x/1 a+b")).unwrap();
    let stats = b.take_sync_stats();
    assert_eq!(stats.requests["GET"].get(&304), Some(&1), "{stats:?}");
    a.put("docs", json!({"v": 2}), Some(key("x/1 a+b"))).unwrap();
    assert_eq!(b.get("docs", &key("x/1 a+b")).unwrap(), Some(json!({"v": 2})));
    a.remove("docs", &KeyRange::only("x/1 a+b")).unwrap();
    assert_eq!(b.get("docs", &key("x/1 a+b")).unwrap(), None);
    assert_eq!(b.count("docs", &ScanOptions::new()).unwrap(), 0);
    assert_eq!(a.outbox_len().unwrap(), 0);
}

#[test]
fn moto_signed_round_trip() {
    round_trip(moto_signed(&unique_prefix("rt")));
}

#[test]
fn garage_sigv4_round_trip() {
    round_trip(garage(&unique_prefix("rt")));
}

#[test]
fn moto_anonymous_on_a_public_bucket() {
    let env = server("moto");
    let options = json!({"bucket": env["MOTO_PUBLIC_BUCKET"], "prefix": unique_prefix("anon"),
        "endpoint": env["MOTO_ENDPOINT"], "anonymous": true});
    round_trip(options);
}

#[test]
fn garage_refuses_a_wrong_secret_with_a_clear_error() {
    let mut options = garage(&unique_prefix("badkey"));
    options["secretAccessKey"] = json!("not-the-secret");
    let (_dir, mut a, _b) = two_clients(&options, json!({}));
    let err = a.get("docs", &key("anything")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Remote, "{err}");
    assert!(err.to_string().contains("403"), "{err}");
    assert_eq!(a.count("docs", &ScanOptions::new()).unwrap(), 0);
}

#[test]
fn writes_wait_while_the_bucket_refuses_every_request() {
    let mut options = garage(&unique_prefix("blocked"));
    options["secretAccessKey"] = json!("not-the-secret");
    let (_dir, mut a, _b) = two_clients(&options, json!({}));
    let errors = record_events(&mut a, &[EventKind::Error]);
    a.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    assert_eq!(a.outbox_len().unwrap(), 1, "a credentials problem loses no write");
    assert!(errors.lock().unwrap()[0].message.as_deref().unwrap_or_default().contains("403"));
    let err = a.flush().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Remote, "{err}");
    assert_eq!(a.outbox_len().unwrap(), 1);
}

#[test]
fn garage_refuses_anonymous_requests_with_a_clear_error() {
    let mut options = garage(&unique_prefix("anon"));
    options["anonymous"] = json!(true);
    let (_dir, mut a, _b) = two_clients(&options, json!({}));
    let err = a.get("docs", &key("anything")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Remote, "{err}");
    assert!(err.to_string().contains("403"), "{err}");
    assert!(!err.to_string().contains("no credentials were found"), "unsigned as asked: {err}");
}

/// With no credentials anywhere (run-all's environment sets no AWS_* keys and has no ~/.aws),
/// the request goes unsigned; Garage's 403 then says none were found and where they were looked
/// for, not only "HTTP 403".
#[test]
fn a_refusal_of_a_request_sent_with_no_credentials_found_says_so() {
    let env = server("garage");
    let options = json!({"bucket": env["GARAGE_BUCKET"], "prefix": unique_prefix("nocreds"),
        "endpoint": env["GARAGE_ENDPOINT"], "region": env["GARAGE_REGION"]});
    let (_dir, mut a, _b) = two_clients(&options, json!({}));
    let err = a.get("docs", &key("anything")).unwrap_err().to_string();
    assert!(err.contains("403") && err.contains("no credentials were found"), "{err}");
    assert!(err.contains("AWS_ACCESS_KEY_ID") && err.contains("~/.aws/credentials"), "{err}");
}

#[test]
fn moto_refuses_a_create_over_an_existing_object() {
    let options = moto_signed(&unique_prefix("create"));
    let (_dir, mut a, mut b) = two_clients(&options, json!({"immutable": true}));
    a.add("docs", json!({"by": "a"}), Some(key("r"))).unwrap();
    let conflicts = record_events(&mut b, &[EventKind::Conflict]);
    // The commit is local; moto's 412 on If-None-Match becomes a refused write and an event.
    b.add("docs", json!({"by": "b"}), Some(key("r"))).unwrap();
    assert_eq!(conflicts.lock().unwrap().len(), 1);
    let refused = b.refused_writes().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].code, "Conflict", "{refused:?}");
    b.resolve_refused(refused[0].sequence, Resolution::Discard).unwrap();
    assert_eq!(b.get("docs", &key("r")).unwrap(), Some(json!({"by": "a"})), "nothing was overwritten");
}

#[test]
fn metadata_headers_reach_the_meta_store_on_both_servers() {
    for options in [moto_signed(&unique_prefix("meta")), garage(&unique_prefix("meta"))] {
        let mut options = options;
        options["metadata"] = json!(["platform", "browser", "city"]);
        let dir = TempDir::new().unwrap();
        let mut meta_options = options.clone();
        meta_options.as_object_mut().unwrap().remove("metadata");
        meta_options["keyLayout"] = json!("{platform}/{browser}/{run}");
        let schema = schema_with(&[
            ("results", block("objstore", options.clone(), json!({"immutable": true}))),
            ("results-meta", block("objstore-meta", meta_options, json!({"prefetch": "meta"}))),
        ]);
        let mut writer = open(&dir.path().join("w.sqlite3"), schema.clone());
        writer
            .put(
                "results",
                json!({"platform": "linux", "browser": "rust", "city": "Zürich 東京", "ok": 1}),
                Some(key("linux/rust/0001")),
            )
            .unwrap();
        // Sent as RFC 2047 words (tests/python's boto3 test reads the raw form), read back as text.
        let config =
            SyncConfig::from_json("results", &block("objstore", options.clone(), json!({})), &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        let object = format!("{}linux/rust/0001", options["prefix"].as_str().unwrap());
        let (_, metadata) = bucket.head(&object, &Token::default()).unwrap().unwrap();
        assert_eq!(metadata["city"], "Zürich 東京");
        let mut reader = open(&dir.path().join("r.sqlite3"), schema);
        let keys = reader.keys("results-meta", &ScanOptions::new().index("platform, browser").unique()).unwrap();
        assert_eq!(keys, vec![key("linux/rust/0001")]);
        reader.values_of("results", &keys).unwrap();
        let record = reader.get("results-meta", &key("linux/rust/0001")).unwrap().unwrap();
        assert_eq!(record["metadata"]["platform"], "linux", "{record}");
        assert_eq!(record["metadata"]["run"], "0001", "{record}");
    }
}

/// The same objects listed by both servers (and the local bucket) give the same answers for
/// prefix, delimiter, max-keys and start-after, over V1 and V2 and across pages.
#[test]
fn listings_agree_between_servers_and_the_local_bucket() {
    let dir = TempDir::new().unwrap();
    let prefix = unique_prefix("list");
    let local = json!({"bucket": "b", "prefix": prefix, "endpoint": format!("file://{}", dir.path().display())});
    let keys = ["a/1", "a/2", "a/b/3", "b/1", "b/2/x", "c", "d/1", "é/1"];
    let mut answers = Vec::new();
    for (name, options) in [("local", local), ("moto", moto_signed(&prefix)), ("garage", garage(&prefix))] {
        let config = SyncConfig::from_json("s", &block("objstore", options, json!({})), &|_| None).unwrap();
        let bucket = open_bucket(&config.connection, Default::default()).unwrap();
        for k in keys {
            bucket.put(&format!("{prefix}{k}"), b"{}", &PutOptions::default(), &Token::default()).unwrap();
        }
        let mut seen = Vec::new();
        for version in [ListVersion::V2, ListVersion::V1] {
            for (delimiter, max) in [(None, Some(3)), (Some("/"), Some(2)), (Some("/"), None)] {
                // moto's V1 listing pages wrongly with a delimiter (README, "Known server quirks").
                if name == "moto" && version == ListVersion::V1 && delimiter.is_some() && max.is_some() {
                    continue;
                }
                let request = ListRequest {
                    prefix: prefix.clone(),
                    delimiter: delimiter.map(Into::into),
                    max_keys: max,
                    version,
                    ..Default::default()
                };
                let page = list_all(&*bucket, &request, &Token::default()).unwrap();
                let objects: Vec<String> = page.objects.iter().map(|o| o.key[prefix.len()..].to_string()).collect();
                let prefixes: Vec<String> =
                    page.common_prefixes.iter().map(|p| p[prefix.len()..].to_string()).collect();
                seen.push((format!("{version:?} {delimiter:?} {max:?}"), objects, prefixes));
            }
        }
        let after =
            ListRequest { prefix: prefix.clone(), start_after: Some(format!("{prefix}b/1")), ..Default::default() };
        let page = list_all(&*bucket, &after, &Token::default()).unwrap();
        seen.push((
            "start-after".into(),
            page.objects.iter().map(|o| o.key[prefix.len()..].to_string()).collect(),
            vec![],
        ));
        answers.push((name, seen));
    }
    let (_, reference) = &answers[0];
    assert_eq!(reference[1].2, vec!["a/", "b/", "d/", "é/"]);
    for (name, seen) in &answers[1..] {
        for (case, objects, prefixes) in seen {
            let (_, want_objects, want_prefixes) = reference.iter().find(|(c, _, _)| c == case).unwrap();
            assert_eq!((objects, prefixes), (want_objects, want_prefixes), "{name}, {case}");
        }
    }
}

/// Writes made while the server is away wait in the outbox, survive a restart, and are sent
/// once, in order, when it is back.
#[test]
fn the_outbox_keeps_writes_while_the_server_is_away() {
    let env = server("moto");
    let relay = Relay::new(&env["MOTO_ENDPOINT"]);
    let prefix = unique_prefix("outbox");
    let mut options = moto_signed(&prefix);
    options["endpoint"] = json!(relay.endpoint());
    options["retries"] = json!(0);
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("client.sqlite3");
    let schema = schema_with(&[("docs", block("objstore", options.clone(), json!({})))]);
    let mut db = open(&path, schema.clone());
    let offline = record_events(&mut db, &[EventKind::Offline]);
    db.put("docs", json!({"n": 1}), Some(key("k"))).unwrap();
    db.put("docs", json!({"n": 2}), Some(key("k"))).unwrap();
    db.put("docs", json!({"n": 1}), Some(key("other"))).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 3);
    assert!(!offline.lock().unwrap().is_empty());
    assert_eq!(db.flush().unwrap_err().code(), ErrorCode::Network);
    assert_eq!(db.db.get("docs", &key("k")).unwrap(), Some(json!({"n": 2})), "a pending write is read locally");
    drop(db);

    let mut db = open(&path, schema);
    assert_eq!(db.outbox_len().unwrap(), 3, "the outbox survived the restart");
    relay.up();
    let report = db.flush().unwrap();
    assert_eq!((report.sent, report.pending), (3, 0));
    assert_eq!(db.flush().unwrap().sent, 0, "nothing is sent twice");
    let direct = moto_signed(&prefix);
    let (_d, mut reader, _) = two_clients(&direct, json!({}));
    assert_eq!(reader.get("docs", &key("k")).unwrap(), Some(json!({"n": 2})), "sent in order");
    assert_eq!(reader.get("docs", &key("other")).unwrap(), Some(json!({"n": 1})));

    // The next successful contact sends what waits, too.
    relay.down();
    db.put("docs", json!({"n": 3}), Some(key("k"))).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 1);
    relay.up();
    // The failed send opened the circuit breaker for its first step of one second.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    db.get("docs", &key("other")).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 0);
    assert_eq!(reader.get("docs", &key("k")).unwrap(), Some(json!({"n": 3})));
}

/// A conditional-write probe that could not reach the bucket says nothing of its conditions:
/// once the bucket is back (and the breaker's first second is over), the next flush probes and
/// sends, rather than holding every write for the 30 s a failed probe is otherwise left.
#[test]
fn a_probe_that_found_the_bucket_away_is_made_again_once_it_is_back() {
    let env = server("moto");
    let relay = Relay::new(&env["MOTO_ENDPOINT"]);
    let mut options = moto_signed(&unique_prefix("probe-away"));
    options["endpoint"] = json!(relay.endpoint());
    options["retries"] = json!(0);
    let dir = TempDir::new().unwrap();
    let schema = schema_with(&[("docs", block("objstore", options, json!({})))]);
    let mut db = open(&dir.path().join("client.sqlite3"), schema);
    db.put("docs", json!({"n": 1}), Some(key("k"))).unwrap();
    assert_eq!(db.outbox_len().unwrap(), 1, "the bucket is away: the write waits");
    relay.up();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let report = db.flush().unwrap();
    assert_eq!((report.sent, report.pending), (1, 0));
}

/// HTTPS with certificate checks, against moto behind a certificate from a CA of our own.
#[test]
fn https_with_a_private_certificate_authority() {
    let env = server("moto");
    let mut options = moto_signed(&unique_prefix("tls"));
    options["endpoint"] = json!(env["MOTO_TLS_ENDPOINT"]);
    options["caFile"] = json!(env["MOTO_TLS_CA"]);
    round_trip(options.clone());

    // Without the CA the certificate is not trusted, and the error says so.
    options.as_object_mut().unwrap().remove("caFile");
    options["retries"] = json!(0);
    let (_dir, mut a, _b) = two_clients(&options, json!({}));
    let err = a.get("docs", &key("x")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Network, "{err}");
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
}

/// A wrong region is wrong for every request, like a wrong secret: the write waits in the
/// outbox (it is not refused on its own), and a migration that mends the region sends it.
/// (moto takes any region, so this is Garage's 400 AuthorizationHeaderMalformed.)
#[test]
fn a_wrong_region_keeps_writes_waiting_like_a_wrong_secret() {
    let mut options = garage(&unique_prefix("region"));
    let right = options["region"].clone();
    options["region"] = json!("xx-nowhere-1");
    let (dir, mut a, _b) = two_clients(&options, json!({}));
    a.put("docs", json!({"v": 1}), Some(key("k"))).unwrap();
    let err = a.flush().unwrap_err();
    assert!(err.to_string().contains("AuthorizationHeaderMalformed"), "{err}");
    assert_eq!(a.outbox_len().unwrap(), 1, "the write waits");
    assert!(a.refused_writes().unwrap().is_empty(), "and is not refused on its own");
    drop(a);
    options["region"] = right;
    let mut mended = schema_with(&[("docs", block("objstore", options.clone(), json!({})))]);
    mended.version = 2;
    let mut a = open(&dir.path().join("a.sqlite3"), mended);
    assert_eq!(a.flush().unwrap().sent, 1);
    let (_d, mut reader, _) = two_clients(&options, json!({}));
    assert_eq!(reader.get("docs", &key("k")).unwrap(), Some(json!({"v": 1})));
}

/// Garage answers 200 to a PUT whose If-None-Match or If-Match fails. The first conditional
/// write finds that out with a probe; from then on writes are checked with a GET first, the
/// sync stats say so, and a database reopened warns at once. moto honours the conditions.
#[test]
fn a_server_that_ignores_conditional_writes_is_found_out_and_writes_are_checked_first() {
    for (options, honours) in [(garage(&unique_prefix("cond")), false), (moto_signed(&unique_prefix("cond")), true)] {
        let (dir, mut a, mut b) = two_clients(&options, json!({}));
        let errors = record_events(&mut a, &[EventKind::Error]);
        a.put("docs", json!({"by": "a"}), Some(key("k"))).unwrap();
        let stats = a.sync_stats();
        assert_eq!(stats.conditional_writes.values().collect::<Vec<_>>(), vec![&honours], "{stats:?}");
        let warned = errors.lock().unwrap().iter().any(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.contains("ignores conditional writes") && m.contains("checked by reading first"))
        });
        assert_eq!(warned, !honours);
        // b never read k: its put must not replace a's object, whichever server.
        b.put("docs", json!({"by": "b"}), Some(key("k"))).unwrap();
        let refused = b.refused_writes().unwrap();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].code, "Conflict");
        let (_d, mut reader, _) = two_clients(&options, json!({}));
        assert_eq!(reader.get("docs", &key("k")).unwrap(), Some(json!({"by": "a"})), "a's object stands");
        // An edit on top of a stale version is refused too.
        reader.put("docs", json!({"by": "reader"}), Some(key("k"))).unwrap();
        a.put("docs", json!({"by": "a", "v": 2}), Some(key("k"))).unwrap();
        assert_eq!(a.refused_writes().unwrap().len(), 1);
        drop(a);
        let mut again = sync_support::open(
            &dir.path().join("a.sqlite3"),
            schema_with(&[("docs", block("objstore", options.clone(), json!({})))]),
        );
        let warnings = again.agent.warnings();
        assert_eq!(warnings.len(), usize::from(!honours), "{warnings:?}");
        assert_eq!(
            again.sync_stats().conditional_writes.values().collect::<Vec<_>>(),
            vec![&honours],
            "kept in the file"
        );
        again.take_sync_stats();
        again.put("docs", json!({"new": true}), Some(key("k3"))).unwrap();
        assert_eq!(again.take_sync_stats().count("PUT"), 1, "no probe again");
    }
}

/// On a server that ignores conditions, creates a flush sends together are checked with one
/// listing of the range their names span, not a GET each: a name the listing shows (another
/// client's object) is still checked by reading, and refused, and nothing is overwritten.
#[test]
fn creates_sent_together_where_conditions_are_ignored_are_checked_with_one_listing() {
    let options = garage(&unique_prefix("listcheck"));
    let (_dir, mut a, mut b) = two_clients(&options, json!({}));
    b.put("docs", json!({"by": "b"}), Some(key("run/03"))).unwrap();
    a.put("docs", json!({"first": true}), Some(key("first"))).unwrap(); // a learns the server's ways
    assert_eq!(a.sync_stats().conditional_writes.values().collect::<Vec<_>>(), vec![&false]);
    a.set_offline(true);
    for n in 0..6 {
        a.db.put("docs", json!({"by": "a", "n": n}), Some(key(&format!("run/{n:02}")))).unwrap();
    }
    a.set_offline(false);
    a.take_sync_stats();
    let report = a.flush().unwrap();
    assert_eq!((report.sent, report.rejected.len()), (5, 1), "{report:?}");
    assert_eq!(report.rejected[0].1.code(), ErrorCode::Conflict, "{report:?}");
    let stats = a.take_sync_stats();
    // One listing for the six, a GET for the one it showed taken, a PUT for each of the others.
    assert_eq!((stats.count("LIST"), stats.count("GET"), stats.count("PUT")), (1, 1, 5), "{stats:?}");
    let (_d, mut reader, _) = two_clients(&options, json!({}));
    assert_eq!(reader.get("docs", &key("run/03")).unwrap(), Some(json!({"by": "b"})), "b's object stands");
    assert_eq!(reader.get("docs", &key("run/05")).unwrap(), Some(json!({"by": "a", "n": 5})));
}

/// A write whose answer was lost (it landed, its acknowledgement never came) meets its own
/// body at the retry: it counts as sent, whether the server refuses the retry with a 412 (moto)
/// or the library checks with a GET because the server ignores conditions (Garage) (review N3).
#[test]
fn a_write_that_landed_unacknowledged_is_sent_not_a_conflict_with_itself() {
    for options in [garage(&unique_prefix("own")), moto_signed(&unique_prefix("own"))] {
        let (_dir, mut a, mut b) = two_clients(&options, json!({}));
        a.put("docs", json!({"probe": "first"}), Some(key("first"))).unwrap(); // learns the server
                                                                               // The body a's next write will send is already in the bucket, put there as a's lost
                                                                               // attempt would have.
        b.put("docs", json!({"run": 7}), Some(key("k"))).unwrap();
        let conflicts = record_events(&mut a, &[EventKind::Conflict]);
        a.put("docs", json!({"run": 7}), Some(key("k"))).unwrap();
        assert_eq!(a.refused_writes().unwrap(), vec![], "no conflict with its own copy");
        assert!(conflicts.lock().unwrap().is_empty());
        assert_eq!(a.outbox_len().unwrap(), 0);
        // The version it holds is the bucket's: its next edit is conditional on it and lands.
        a.put("docs", json!({"run": 8}), Some(key("k"))).unwrap();
        assert_eq!(a.refused_writes().unwrap(), vec![]);
        assert_eq!(b.get("docs", &key("k")).unwrap(), Some(json!({"run": 8})));
    }
}

/// Every name S3 takes round-trips on an S3 bucket: empty segments, a leading '/', tabs,
/// carriage returns and other control characters, '+' and spaces (listed with
/// `encoding-type=url`, which XML needs for most control characters).
#[test]
fn every_name_s3_takes_round_trips() {
    let names = ["a//b", "/leading", "tab\there", "cr\rhere", "bell\u{7}x", "plus+and space", "ünï/cödé"];
    for options in [moto_signed(&unique_prefix("names")), garage(&unique_prefix("names"))] {
        let (_dir, mut a, mut b) = two_clients(&options, json!({}));
        for (n, name) in names.iter().enumerate() {
            a.put("docs", json!({"n": n}), Some(key(name))).unwrap();
        }
        assert_eq!(a.outbox_len().unwrap(), 0, "{:?}", a.refused_writes().unwrap());
        for (n, name) in names.iter().enumerate() {
            assert_eq!(b.get("docs", &key(name)).unwrap(), Some(json!({"n": n})), "{name:?}");
        }
        let endpoint = options["endpoint"].clone();
        let (_d, mut lister, _) = two_clients(&options, json!({"prefetch": "full", "prefetchRefractoryPeriod": 0}));
        let mut listed: Vec<String> = lister
            .keys("docs", &ScanOptions::new())
            .unwrap()
            .into_iter()
            .map(|k| match k {
                Key::String(s) => s,
                other => panic!("{other:?}"),
            })
            .collect();
        listed.sort();
        let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(listed, expected, "{endpoint}");
    }
}
