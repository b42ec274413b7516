//! What the results app's home view costs against a real S3 server (Garage, started by
//! `tests/servers/garage`): requests by kind, bytes received and the price at S3 Standard rates,
//! for the library's view (cold, warm with nothing new, warm after 5 new results) and, in the
//! same run, the two ways without it: list everything and get everything (naive), and the seed's
//! three-step delimiter enumeration. Writes `target/bench/sync_cost.json`.
//!
//! `cargo bench -p objstore-db-core --bench sync_cost` measures N = 10,000 results over P = 50
//! platform/runtime pairs; under `cargo test` the same runs small (N = 300, P = 10) and its
//! request-count targets are asserted.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use objstore_db_core::sync::{
    list_all, open_bucket, parallel, Accounting, Bucket, ListRequest, Metadata, Precondition, Stats, SyncConfig, Token,
    Validators,
};
use objstore_db_core::{Key, ScanOptions, Schema};
use serde_json::{json, Map, Value};

// The sync suites' server start-up (it runs tests/servers/<name> and reads its settings).
#[path = "../tests/sync_support/mod.rs"]
mod sync_support;
use sync_support::{server, Client};

const PLATFORMS: [&str; 10] = [
    "linux-x64",
    "linux-arm64",
    "macos-arm64",
    "macos-x64",
    "windows-x64",
    "freebsd-x64",
    "android-arm64",
    "ios-arm64",
    "linux-riscv64",
    "windows-arm64",
];
const RUNTIMES: [&str; 5] = ["rust", "c", "python-3.11", "node-20", "cpp"];
/// A far-future epoch in milliseconds: `FAR - now` sorts newest first.
const FAR: u64 = 9_999_999_999_999;
const REFRACTORY_MS: u64 = 1500;

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (n, pairs) = if measuring { (10_000, 50) } else { (300, 10) };
    let env = server("garage");
    let prefix = format!("bench-{}/", now_ms());
    let options = json!({"bucket": env["GARAGE_BUCKET"], "prefix": prefix, "endpoint": env["GARAGE_ENDPOINT"],
        "region": env["GARAGE_REGION"], "accessKeyId": env["GARAGE_ACCESS_KEY_ID"],
        "secretAccessKey": env["GARAGE_SECRET_ACCESS_KEY"], "concurrency": 16});
    let direct = bucket(&options);
    let pair_list: Vec<(&str, &str)> =
        PLATFORMS.iter().flat_map(|p| RUNTIMES.iter().map(move |r| (*p, *r))).take(pairs).collect();
    let started = Instant::now();
    populate(&*direct, &prefix, &pair_list, n);
    eprintln!(
        "sync_cost: {n} results over {pairs} pairs written to Garage in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap();
    let mut db = open_view_db(&dir.path().join("view.sqlite3"), &options);
    let mut figures = Map::new();
    let (rows, cold, cold_s) = measure(&mut db, home_view);
    assert_eq!(rows.len(), pairs, "one row per pair");
    figures.insert("cold".into(), figure(&cold));
    let (_, within, _) = measure(&mut db, home_view);
    figures.insert("warm_within_refractory".into(), figure(&within));
    std::thread::sleep(Duration::from_millis(REFRACTORY_MS + 100));
    let (again, nothing_new, _) = measure(&mut db, home_view);
    assert_eq!(again, rows);
    figures.insert("warm_nothing_new".into(), figure(&nothing_new));
    let fresh = add_new_results(&*direct, &prefix, &pair_list, 5);
    std::thread::sleep(Duration::from_millis(REFRACTORY_MS + 100));
    let (after, five_new, _) = measure(&mut db, home_view);
    assert!(fresh.iter().all(|name| after.iter().any(|r| r["name"] == *name)), "the 5 new results are shown");
    figures.insert("warm_5_new".into(), figure(&five_new));

    let (naive_rows, naive, naive_s) = measure_bucket(&options, |b| naive_view(b, &prefix));
    let (enum_rows, enumeration, enum_s) = measure_bucket(&options, |b| enumeration_view(b, &prefix));
    assert_eq!(naive_rows, enum_rows, "both baselines show the same rows");
    let shown: Vec<String> = after.iter().map(|r| r["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(naive_rows, shown, "the library shows the rows the baselines show");
    figures.insert("naive_cold".into(), figure(&naive));
    figures.insert("enumeration_cold".into(), figure(&enumeration));

    let lists = n.div_ceil(1000) as u64;
    let targets = [
        ("cold", cold.total() <= lists + pairs as u64 + 1 && cold.count("GET") == pairs as u64),
        ("warm_within_refractory", within.total() == 0),
        ("warm_nothing_new", nothing_new.total() <= lists && nothing_new.count("GET") == 0),
        ("warm_5_new", five_new.count("GET") <= 5 && five_new.total() <= (n + 5).div_ceil(1000) as u64 + 5),
    ];
    let mut out = Map::new();
    out.insert("N".into(), json!(n));
    out.insert("P".into(), json!(pairs));
    out.extend(figures);
    out.insert(
        "targets_met".into(),
        json!(targets.iter().map(|(name, met)| (name.to_string(), json!(met))).collect::<Map<_, _>>()),
    );
    out.insert(
        "seconds".into(),
        json!({"cold": cold_s, "naive_cold": naive_s, "enumeration_cold": enum_s, "cold_vs_naive": cold_s / naive_s}),
    );
    print_table(&out, n, pairs);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench/sync_cost.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&Value::Object(out)).unwrap()).unwrap();
    eprintln!("sync_cost: figures in {}", path.display());
    for (name, met) in targets {
        assert!(met, "target missed: {name}");
    }
}

/// The seed's home view: the newest result per platform/runtime pair from the meta store's
/// compound index, then those results from the results store.
fn home_view(db: &mut Client) -> Vec<Value> {
    let scan = ScanOptions::new().index("platform, browser").unique().limit(50);
    let keys = db.keys("results-meta", &scan).unwrap();
    let values = db.values_of("results", &keys).unwrap();
    keys.iter()
        .zip(values)
        .map(|(k, v)| {
            let Key::String(name) = k else { panic!("object names are strings") };
            json!({"name": name, "result": v.expect("a listed result exists")})
        })
        .collect()
}

/// List everything, get everything, keep the newest per pair.
fn naive_view(bucket: &dyn Bucket, prefix: &str) -> Vec<String> {
    let listing =
        list_all(bucket, &ListRequest { prefix: prefix.into(), ..Default::default() }, &Token::default()).unwrap();
    let names: Vec<String> = listing.objects.iter().map(|o| o.key.clone()).collect();
    let bodies = parallel(&names, 16, |name| fetch(bucket, name));
    let mut newest: BTreeMap<(String, String), String> = BTreeMap::new();
    for (name, body) in names.iter().zip(bodies) {
        let result: Value = serde_json::from_slice(&body).unwrap();
        let pair = (result["platform"].as_str().unwrap().to_string(), result["browser"].as_str().unwrap().to_string());
        let id = name[prefix.len()..].to_string();
        newest.entry(pair).and_modify(|n| *n = (*n).clone().min(id.clone())).or_insert(id);
    }
    newest.into_values().collect()
}

/// The seed's enumeration: platforms by delimiter, runtimes by delimiter per platform, the
/// newest key per pair (max-keys 1), then one GET per pair.
fn enumeration_view(bucket: &dyn Bucket, prefix: &str) -> Vec<String> {
    let list = |prefix: &str, delimiter: bool, max: Option<u32>| {
        let request = ListRequest {
            prefix: prefix.into(),
            delimiter: delimiter.then(|| "/".into()),
            max_keys: max,
            ..Default::default()
        };
        if max.is_some() {
            bucket.list_page(&request, &Token::default()).unwrap()
        } else {
            list_all(bucket, &request, &Token::default()).unwrap()
        }
    };
    let mut newest = Vec::new();
    for platform in list(prefix, true, None).common_prefixes {
        for pair in list(&platform, true, None).common_prefixes {
            newest.push(list(&pair, false, Some(1)).objects[0].key.clone());
        }
    }
    parallel(&newest, 16, |name| fetch(bucket, name));
    let mut rows: Vec<String> = newest.iter().map(|n| n[prefix.len()..].to_string()).collect();
    rows.sort();
    rows
}

fn fetch(bucket: &dyn Bucket, name: &str) -> Vec<u8> {
    match bucket.get(name, &Validators::default(), &Token::default()).unwrap() {
        objstore_db_core::sync::Fetched::Found(object) => object.body,
        other => panic!("{name}: {other:?}"),
    }
}

fn measure<T>(db: &mut Client, view: impl FnOnce(&mut Client) -> T) -> (T, Stats, f64) {
    db.take_sync_stats();
    let started = Instant::now();
    let out = view(db);
    (out, db.take_sync_stats(), started.elapsed().as_secs_f64())
}

fn measure_bucket<T>(options: &Value, view: impl FnOnce(&dyn Bucket) -> T) -> (T, Stats, f64) {
    let accounting = Arc::new(Accounting::default());
    let bucket = open_bucket(&config(options), accounting.clone()).unwrap();
    let started = Instant::now();
    let out = view(&*bucket);
    (out, accounting.take(), started.elapsed().as_secs_f64())
}

fn figure(stats: &Stats) -> Value {
    json!({"requests": stats.total(), "lists": stats.count("LIST"), "gets": stats.count("GET"),
        "heads": stats.count("HEAD"), "bytes_in": stats.bytes_received, "cost_usd": stats.cost_usd()})
}

fn print_table(out: &Map<String, Value>, n: usize, pairs: usize) {
    eprintln!("\nsync_cost: the home view over N = {n} results, P = {pairs} pairs (Garage on loopback)");
    eprintln!(
        "{:<24} {:>8} {:>6} {:>6} {:>10} {:>12}",
        "scenario", "requests", "lists", "gets", "bytes in", "cost (USD)"
    );
    for name in ["cold", "warm_within_refractory", "warm_nothing_new", "warm_5_new", "naive_cold", "enumeration_cold"] {
        let f = &out[name];
        eprintln!(
            "{name:<24} {:>8} {:>6} {:>6} {:>10} {:>12.7}",
            f["requests"].as_u64().unwrap(),
            f["lists"].as_u64().unwrap(),
            f["gets"].as_u64().unwrap(),
            f["bytes_in"].as_u64().unwrap(),
            f["cost_usd"].as_f64().unwrap()
        );
    }
    eprintln!("seconds: {}", out["seconds"]);
    eprintln!("targets met: {}\n", out["targets_met"]);
}

fn open_view_db(path: &Path, options: &Value) -> Client {
    let mut meta_options = options.clone();
    meta_options["keyLayout"] = json!("{platform}/{browser}/{run}");
    let schema = json!({"version": 1, "stores": [
        {"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": options}},
        {"name": "results-meta", "keyPath": "name", "indexes": [
            {"keyPath": "metadata.platform", "name": "platform"}, {"keyPath": "metadata.browser", "name": "browser"},
            {"keyPath": "metadata.version", "name": "version"}, {"keyPath": "etag"}, {"keyPath": "updated"},
            {"keyPath": ["metadata.platform", "metadata.browser"], "name": "platform, browser"},
            {"keyPath": ["metadata.platform", "metadata.browser", "metadata.version"], "name": "platform, browser, version"}],
         "Sync": {"format": "objstore-meta", "prefetch": "meta", "prefetchRefractoryPeriod": REFRACTORY_MS, "Options": meta_options}}
    ]});
    sync_support::open(path, Schema::from_json(&schema.to_string()).unwrap())
}

fn populate(bucket: &dyn Bucket, prefix: &str, pairs: &[(&str, &str)], n: usize) {
    let start = now_ms();
    let jobs: Vec<(String, Vec<u8>, Metadata)> = (0..n)
        .map(|i| {
            let (platform, browser) = pairs[i % pairs.len()];
            result_object(prefix, platform, browser, FAR - (start - (i as u64) * 1000))
        })
        .collect();
    parallel(&jobs, 32, |(name, body, metadata)| {
        bucket.put(name, body, metadata, &Precondition::None, false, &Token::default()).unwrap()
    });
}

/// `count` new results, each for a different pair, newer than everything before.
fn add_new_results(bucket: &dyn Bucket, prefix: &str, pairs: &[(&str, &str)], count: usize) -> Vec<String> {
    let now = now_ms() + 10_000_000;
    (0..count)
        .map(|i| {
            let (platform, browser) = pairs[i * 3 % pairs.len()];
            let (name, body, metadata) = result_object(prefix, platform, browser, FAR - now - i as u64);
            bucket.put(&name, &body, &metadata, &Precondition::None, false, &Token::default()).unwrap();
            name[prefix.len()..].to_string()
        })
        .collect()
}

fn result_object(prefix: &str, platform: &str, browser: &str, reverse: u64) -> (String, Vec<u8>, Metadata) {
    let name = format!("{prefix}{platform}/{browser}/{reverse:013}");
    let suites: HashMap<&str, Value> = ["crud", "cursor", "event", "transaction", "query", "sql"]
        .iter()
        .map(|s| (*s, json!({"passed": 12, "failed": u8::from(reverse.is_multiple_of(7))})))
        .collect();
    let body = json!({"platform": platform, "browser": browser, "version": "0.1.0", "suites": suites});
    let metadata = [("platform", platform), ("browser", browser), ("version", "0.1.0")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (name, serde_json::to_vec(&body).unwrap(), metadata)
}

fn config(options: &Value) -> SyncConfig {
    SyncConfig::from_json("bench", &json!({"format": "objstore", "Options": options}), &|_| None).unwrap()
}

fn bucket(options: &Value) -> Arc<dyn Bucket> {
    open_bucket(&config(options), Arc::default()).unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}
