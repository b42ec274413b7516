//! What the results app's home view costs against a real S3 server (Garage, started by
//! `tests/servers/garage`) behind a loopback relay that adds 20 ms per request, as a real region
//! would: requests by kind, bytes received, the price at S3 Standard rates and wall time, for
//! the library's view (cold, warm with nothing new, warm after 5 new results written through the
//! library with its change log) and, in the same run, the ways without it: list everything and
//! get everything (naive, at the smaller N), and the seed's three-step delimiter enumeration.
//! The cold view is also read without the relay: the difference in wall time, over 20 ms, is
//! the number of round trips one after another. Writes `target/bench/sync_cost.json` (N =
//! 10,000 at the top level, N = 100,000 under `N100000`).
//!
//! `cargo bench -p objstore-db-core --bench sync_cost` measures N = 10,000 and N = 100,000
//! results over P = 50 platform/runtime pairs; under `cargo test` the same runs small (N = 300,
//! P = 10) and its targets are asserted.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use objstore_db_core::bucket::{
    list_all, open_bucket, Accounting, Bucket, ListRequest, Metadata, PutOptions, Validators,
};
use objstore_db_core::sync::{changelog, parallel, Stats, SyncConfig, Token};
use objstore_db_core::{Key, ScanOptions, Schema};
use serde_json::{json, Map, Value};

// The sync suites' server start-up (it runs tests/servers/<name> and reads its settings).
#[path = "../tests/sync_support/mod.rs"]
mod sync_support;
use sync_support::{server, Client, Relay};

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
/// Requests in flight at once, for the library and the baselines alike.
const CONCURRENCY: usize = 32;

/// What the relay adds per request, as a real region would.
const LATENCY_MS: u64 = 20;

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let sizes: &[(usize, usize)] = if measuring { &[(10_000, 50), (100_000, 50)] } else { &[(300, 10)] };
    let env = server("garage");
    let relay = Relay::with_latency(&env["GARAGE_ENDPOINT"], Duration::from_millis(LATENCY_MS));
    relay.up();
    let mut out = Map::new();
    let mut missed = Vec::new();
    for (i, &(n, pairs)) in sizes.iter().enumerate() {
        let (figures, targets) = scenarios(&env, &relay.endpoint(), n, pairs);
        missed.extend(targets.iter().filter(|(_, met)| !met).map(|(name, _)| format!("{name} at N = {n}")));
        match i {
            0 => out.extend(figures),
            _ => drop(out.insert(format!("N{n}"), Value::Object(figures))),
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench/sync_cost.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&Value::Object(out)).unwrap()).unwrap();
    eprintln!("sync_cost: figures in {}", path.display());
    assert!(missed.is_empty(), "targets missed: {missed:?}");
}

/// The home view over `n` results in `pairs` pairs, read through the relay: its figures, and
/// whether each target was met.
fn scenarios(
    env: &HashMap<String, String>,
    relayed: &str,
    n: usize,
    pairs: usize,
) -> (Map<String, Value>, Vec<(&'static str, bool)>) {
    let prefix = format!("bench-{}/", now_ms());
    let direct_options = json!({"bucket": env["GARAGE_BUCKET"], "prefix": prefix, "endpoint": env["GARAGE_ENDPOINT"],
        "region": env["GARAGE_REGION"], "accessKeyId": env["GARAGE_ACCESS_KEY_ID"],
        "secretAccessKey": env["GARAGE_SECRET_ACCESS_KEY"], "concurrency": CONCURRENCY});
    let mut options = direct_options.clone();
    options["endpoint"] = json!(relayed);
    let direct = bucket(&direct_options);
    let pair_list: Vec<(&str, &str)> =
        PLATFORMS.iter().flat_map(|p| RUNTIMES.iter().map(move |r| (*p, *r))).take(pairs).collect();
    let started = Instant::now();
    populate(&*direct, &prefix, &pair_list, n);
    eprintln!(
        "sync_cost: {n} results over {pairs} pairs written to Garage in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap();
    // The same cold view without the added latency, on a database of its own: what is left is
    // transfer, the server and the local work. Read before (the server's first reads of these
    // names pay for its caches) and after; the later one is compared.
    let nearby_view = |name: &str| measure(&mut open_view_db(&dir.path().join(name), &direct_options), home_view).2;
    nearby_view("nearby-first.sqlite3");
    let mut db = open_view_db(&dir.path().join("view.sqlite3"), &options);
    let mut figures = Map::new();
    let (rows, cold, cold_s) = measure(&mut db, home_view);
    let nearby_s = nearby_view("nearby.sqlite3");
    assert_eq!(rows.len(), pairs, "one row per pair");
    let round_trips = (cold_s - nearby_s) * 1000.0 / LATENCY_MS as f64;
    figures.insert("cold".into(), figure(&cold, cold_s));
    let (_, within, within_s) = measure(&mut db, home_view);
    figures.insert("warm_within_refractory".into(), figure(&within, within_s));
    std::thread::sleep(Duration::from_millis(REFRACTORY_MS + 100));
    let (again, nothing_new, nothing_s) = measure(&mut db, home_view);
    assert_eq!(again, rows);
    figures.insert("warm_nothing_new".into(), figure(&nothing_new, nothing_s));
    let fresh = add_new_results(dir.path(), &direct_options, &pair_list, 5);
    std::thread::sleep(Duration::from_millis(REFRACTORY_MS + 100));
    let (after, five_new, five_s) = measure(&mut db, home_view);
    assert!(fresh.iter().all(|name| after.iter().any(|r| r["name"] == *name)), "the 5 new results are shown");
    figures.insert("warm_5_new".into(), figure(&five_new, five_s));

    let shown: Vec<String> = after.iter().map(|r| r["name"].as_str().unwrap().to_string()).collect();
    let (enum_rows, enumeration, enum_s) = measure_bucket(&options, |b| enumeration_view(b, &prefix));
    assert_eq!(enum_rows, shown, "the library shows the rows the enumeration shows");
    figures.insert("enumeration_cold".into(), figure(&enumeration, enum_s));
    let mut seconds = json!({"cold": cold_s, "cold_without_latency": nearby_s, "enumeration_cold": enum_s});
    // Getting every object takes long at 100k objects over 20 ms: measured at the smaller N only.
    if n <= 10_000 {
        let (naive_rows, naive, naive_s) = measure_bucket(&options, |b| naive_view(b, &prefix));
        assert_eq!(naive_rows, shown, "the library shows the rows the naive view shows");
        figures.insert("naive_cold".into(), figure(&naive, naive_s));
        seconds["naive_cold"] = json!(naive_s);
        seconds["cold_vs_naive"] = json!(cold_s / naive_s);
    }

    // A page per 1,000 names, or one listing per platform where platforms outnumber pages (the
    // platforms are listed side by side), one delimiter listing, a GET per pair.
    let platforms = pair_list.iter().map(|(p, _)| p).collect::<std::collections::HashSet<_>>().len();
    let lists = n.div_ceil(1000).max(platforms) as u64;
    let targets = vec![
        ("cold", cold.total() <= lists + pairs as u64 + 1 && cold.count("GET") == pairs as u64),
        ("cold_round_trips", n < 100_000 || round_trips < 10.0),
        ("warm_within_refractory", within.total() == 0),
        ("warm_nothing_new", nothing_new.total() == 1),
        ("warm_5_new", five_new.count("LIST") <= 1 && five_new.count("GET") <= 5 && five_new.total() <= 6),
    ];
    figures.insert("N".into(), json!(n));
    figures.insert("P".into(), json!(pairs));
    figures.insert("latency_ms_per_request".into(), json!(LATENCY_MS));
    figures.insert("cold_round_trips".into(), json!((round_trips * 10.0).round() / 10.0));
    figures.insert(
        "targets_met".into(),
        json!(targets.iter().map(|(name, met)| (name.to_string(), json!(met))).collect::<Map<_, _>>()),
    );
    figures.insert("seconds".into(), seconds);
    print_table(&figures, n, pairs);
    (figures, targets)
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
    let log = format!("{prefix}{}", changelog::DIR);
    let names: Vec<String> =
        listing.objects.iter().map(|o| o.key.clone()).filter(|key| !key.starts_with(&log)).collect();
    let bodies = parallel(&names, CONCURRENCY, |name| fetch(bucket, name));
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
    let log = format!("{prefix}{}", changelog::DIR);
    for platform in list(prefix, true, None).common_prefixes.into_iter().filter(|p| *p != log) {
        for pair in list(&platform, true, None).common_prefixes {
            newest.push(list(&pair, false, Some(1)).objects[0].key.clone());
        }
    }
    parallel(&newest, CONCURRENCY, |name| fetch(bucket, name));
    let mut rows: Vec<String> = newest.iter().map(|n| n[prefix.len()..].to_string()).collect();
    rows.sort();
    rows
}

fn fetch(bucket: &dyn Bucket, name: &str) -> Vec<u8> {
    match bucket.get(name, &Validators::default(), &Token::default()).unwrap() {
        objstore_db_core::bucket::Fetched::Found(object) => object.body,
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
    let bucket = open_bucket(&config(options).connection, accounting.clone()).unwrap();
    let started = Instant::now();
    let out = view(&*bucket);
    (out, accounting.take(), started.elapsed().as_secs_f64())
}

fn figure(stats: &Stats, seconds: f64) -> Value {
    json!({"requests": stats.total(), "lists": stats.count("LIST"), "gets": stats.count("GET"),
        "heads": stats.count("HEAD"), "bytes_in": stats.bytes_received, "cost_usd": stats.cost_usd(),
        "wall_ms": (seconds * 1000.0).round()})
}

fn print_table(out: &Map<String, Value>, n: usize, pairs: usize) {
    eprintln!(
        "\nsync_cost: the home view over N = {n} results, P = {pairs} pairs (Garage on loopback, {LATENCY_MS} ms added per request)"
    );
    eprintln!(
        "{:<24} {:>8} {:>6} {:>6} {:>10} {:>12} {:>8}",
        "scenario", "requests", "lists", "gets", "bytes in", "cost (USD)", "wall ms"
    );
    for name in ["cold", "warm_within_refractory", "warm_nothing_new", "warm_5_new", "naive_cold", "enumeration_cold"] {
        let Some(f) = out.get(name) else { continue };
        eprintln!(
            "{name:<24} {:>8} {:>6} {:>6} {:>10} {:>12.7} {:>8}",
            f["requests"].as_u64().unwrap(),
            f["lists"].as_u64().unwrap(),
            f["gets"].as_u64().unwrap(),
            f["bytes_in"].as_u64().unwrap(),
            f["cost_usd"].as_f64().unwrap(),
            f["wall_ms"]
        );
    }
    eprintln!("seconds: {}", out["seconds"]);
    eprintln!("cold round trips beyond the same view without latency: {}", out["cold_round_trips"]);
    eprintln!("targets met: {}\n", out["targets_met"]);
}

fn open_view_db(path: &Path, options: &Value) -> Client {
    let mut options = options.clone();
    options["changeLog"] = json!(true);
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
        bucket
            .put(name, body, &PutOptions { metadata: metadata.clone(), ..PutOptions::default() }, &Token::default())
            .unwrap()
    });
}

/// `count` new results, each for a different pair, newer than everything before, stored the
/// way the results app's writers store them: through the library, with the change log.
fn add_new_results(dir: &Path, options: &Value, pairs: &[(&str, &str)], count: usize) -> Vec<String> {
    let prefix = options["prefix"].as_str().unwrap().to_string();
    let mut writer_options = options.clone();
    writer_options["changeLog"] = json!(true);
    let schema = json!({"version": 1, "stores": [
        {"name": "results", "Sync": {"format": "objstore", "immutable": true, "Options": writer_options}}]});
    let mut writer = sync_support::open(&dir.join("writer.sqlite3"), Schema::from_json(&schema.to_string()).unwrap());
    let now = now_ms() + 10_000_000;
    (0..count)
        .map(|i| {
            let (platform, browser) = pairs[i * 3 % pairs.len()];
            let (name, body, _) = result_object(&prefix, platform, browser, FAR - now - i as u64);
            let id = name[prefix.len()..].to_string();
            let value: Value = serde_json::from_slice(&body).unwrap();
            writer.add("results", value, Some(Key::String(id.clone()))).unwrap();
            id
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
    open_bucket(&config(options).connection, Arc::default()).unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}
