//! The API the C ABI and the bindings sit on, measured. Two figures go to target/bench/ffi.json:
//! - `c_async_get`: 100,000 pipelined point gets through the C API (a C program built here with
//!   the system compiler against include/objstore_db.h and libobjstore_db) against the same
//!   through the Rust async API (`rsapi::Db::get`), each side in a process of its own;
//!   ratio = C / Rust, target >= 0.5.
//! - `local_get_p99_under_slow_bucket`: p99 latency of one-at-a-time gets on an unsynced store
//!   while a synced store's bucket takes 2 s per answer and reads of it keep 8 fetches waiting,
//!   against the p99 of the same gets with the bucket idle, in the same process; ratio =
//!   loaded / idle, target <= 2 (the worker never waits for the network).
//!
//! Under `cargo test` it runs in a small smoke form and writes nothing.

// The measuring helpers the core benchmarks use.
#[path = "../../core/benches/common/mod.rs"]
mod common;
// The slow bucket: the misbehaving peer of the core's sync suites.
#[path = "../../core/tests/sync_support/mod.rs"]
mod sync_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{measuring, median};
use objstore_db::rsapi::{self, AsValue, Db, Freshness};
use objstore_db_core::{Database, Key, Mode, OpenOptions, Schema};
use serde_json::json;
use sync_support::{Misbehaviour, Peer};

fn key(x: &mut u64, records: usize) -> Key {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    Key::from(format!("r{:08}", *x as usize % records))
}

/// Pipelined gets through the Rust async API, as the C program does them.
fn rust_gets(db: &Db, records: usize, n: usize) {
    let left = Arc::new((Mutex::new(n), Condvar::new()));
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..n {
        let left = left.clone();
        db.get(None, "bench", key(&mut x, records), Freshness::Cached, AsValue, move |r| {
            assert!(r.unwrap().is_object());
            let mut count = left.0.lock().unwrap();
            *count -= 1;
            if *count == 0 {
                left.1.notify_one();
            }
        })
        .unwrap();
    }
    let mut count = left.0.lock().unwrap();
    while *count > 0 {
        count = left.1.wait(count).unwrap();
    }
}

fn rust_side(path: &str, records: usize, n: usize) -> f64 {
    let (tx, rx) = std::sync::mpsc::channel();
    let db = Db::open(path, None, &rsapi::OpenOptions::default(), move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
    rust_gets(&db, records, n.min(1000));
    let start = Instant::now();
    rust_gets(&db, records, n);
    n as f64 / start.elapsed().as_secs_f64()
}

/// The 99th percentile, in microseconds, of `n` gets made one at a time (each waits for its
/// answer before the next is made).
fn p99_of_gets(db: &Db, records: usize, n: usize) -> f64 {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let (tx, rx) = mpsc::channel();
            let start = Instant::now();
            db.get(None, "bench", key(&mut x, records), Freshness::Cached, AsValue, move |r| tx.send(r).unwrap())
                .unwrap();
            assert!(rx.recv().unwrap().unwrap().is_object());
            start.elapsed()
        })
        .collect();
    times.sort();
    times[n * 99 / 100].as_secs_f64() * 1e6
}

/// Keeps `depth` reads of never-cached objects of the synced store waiting on the slow bucket
/// until `stop` is set.
fn keep_the_bucket_busy(db: Db, depth: usize, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let waiting = Arc::new(AtomicUsize::new(0));
        for i in 0.. {
            if stop.load(Ordering::Acquire) {
                return;
            }
            if waiting.load(Ordering::Acquire) >= depth {
                thread::sleep(Duration::from_millis(1));
                continue;
            }
            waiting.fetch_add(1, Ordering::AcqRel);
            let w = waiting.clone();
            let made = db.get(None, "remote", Key::from(format!("k{i}")), Freshness::Cached, AsValue, move |_| {
                w.fetch_sub(1, Ordering::AcqRel);
            });
            if made.is_err() {
                return;
            }
        }
    })
}

/// (idle p99, loaded p99) of local gets, in microseconds.
fn local_gets_under_a_slow_bucket(records: usize, n: usize) -> (f64, f64) {
    let peer = Peer::start(vec![Misbehaviour::Slow(Duration::from_secs(2), br#"{"v": 1}"#.to_vec())]);
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"stores": [
        {"name": "bench", "keyPath": "id"},
        {"name": "remote", "Sync": {"format": "rest", "Options": {"endpoint": peer.endpoint(), "retries": 0}}}
    ]});
    let path = dir.path().join("slow.sqlite3");
    let (tx, rx) = mpsc::channel();
    let db = Db::open(
        path.to_str().unwrap(),
        Some(Schema::from_json(&schema.to_string()).unwrap()),
        &rsapi::OpenOptions::default(),
        move |r| tx.send(r).unwrap(),
    )
    .unwrap();
    rx.recv().unwrap().unwrap();
    let values: Vec<serde_json::Value> =
        (0..records).map(|i| json!({"id": format!("r{i:08}"), "n": i, "payload": "x".repeat(64)})).collect();
    let (tx, rx) = mpsc::channel();
    db.put_many(None, "bench", values, move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap().unwrap();
    p99_of_gets(&db, records, n.min(1000));
    let idle = p99_of_gets(&db, records, n);
    let stop = Arc::new(AtomicBool::new(false));
    let load = keep_the_bucket_busy(db.clone(), 8, stop.clone());
    while peer.count() < 2 {
        thread::sleep(Duration::from_millis(1));
    }
    let loaded = p99_of_gets(&db, records, n);
    stop.store(true, Ordering::Release);
    load.join().unwrap();
    (idle, loaded)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The directory holding libobjstore_db for this build (release for benches, debug for tests).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf() // target/<profile>/deps/<bench> -> target/<profile>
}

fn build_c_program(out: &Path) -> PathBuf {
    // cargo builds this bench against the rlib; the C side needs the shared library itself.
    // tests/run-all names the one its cargo test built (OBJSTORE_C_LIBRARY_DIR): a one-package
    // `cargo build` resolves features apart from the workspace's and rebuilt half the tree.
    let given = std::env::var_os("OBJSTORE_C_LIBRARY_DIR").map(PathBuf::from).filter(|_| !measuring());
    let lib = match given {
        Some(dir) => dir,
        None => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build.args(["build", "--quiet", "-p", "objstore-db-c", "--lib"]).current_dir(workspace());
            if measuring() {
                build.arg("--release");
            }
            assert!(build.status().unwrap().success(), "cargo could not build libobjstore_db");
            library_dir()
        }
    };
    let program = out.join("c_async_get");
    let status = Command::new("cc")
        .args(["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(format!("-I{}", workspace().join("include").display()))
        .arg(workspace().join("ffi/benches/c_async_get.c"))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lobjstore_db", "-o"])
        .arg(&program)
        .status()
        .unwrap();
    assert!(status.success(), "cc failed to build the C benchmark");
    program
}

fn main() {
    let (records, gets, rounds) = if measuring() { (100_000, 100_000, 5) } else { (2_000, 2_000, 1) };
    if let Ok(path) = std::env::var("OBJSTORE_BENCH_RUST_SIDE") {
        println!("{}", rust_side(&path, records, gets));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ffi.sqlite3");
    let schema = Schema::from_json(r#"{"stores": [{"name": "bench", "keyPath": "id"}]}"#).unwrap();
    let mut db = Database::open(path.to_str().unwrap(), Some(schema), &OpenOptions::default()).unwrap();
    db.run(&["bench"], Mode::ReadWrite, |tx| {
        for i in 0..records {
            tx.put("bench", json!({"id": format!("r{i:08}"), "n": i, "payload": "x".repeat(64)}), None)?;
        }
        Ok(())
    })
    .unwrap();
    drop(db);
    let program = build_c_program(dir.path());

    let number = |out: std::process::Output| -> f64 {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
    };
    let (mut c, mut rust) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        c.push(number(
            Command::new(&program).arg(&path).arg(records.to_string()).arg(gets.to_string()).output().unwrap(),
        ));
        let mut me = Command::new(std::env::current_exe().unwrap());
        if measuring() {
            me.arg("--bench");
        }
        rust.push(number(me.env("OBJSTORE_BENCH_RUST_SIDE", &path).output().unwrap()));
    }
    let (c, rust) = (median(&mut c), median(&mut rust));
    let ratio = c / rust;
    println!("C API benchmark ({gets} pipelined gets over {records} records, median of {rounds} rounds, each side in its own process)");
    println!("  c_async_get   {c:>12.0} ops/s   ratio {ratio:.2}   (the Rust async API: {rust:.0} ops/s)");

    let one_at_a_time = if measuring() { 20_000 } else { 200 };
    let (idle, loaded) = local_gets_under_a_slow_bucket(records, one_at_a_time);
    let slow_ratio = loaded / idle;
    println!("Local gets while a synced store's bucket takes 2 s per answer ({one_at_a_time} gets, one at a time)");
    println!("  local_get_p99_under_slow_bucket   {loaded:>8.1} us   ratio {slow_ratio:.2}   (idle p99: {idle:.1} us; target <= 2)");
    if measuring() {
        let out = workspace().join("target/bench");
        std::fs::create_dir_all(&out).unwrap();
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        let json = json!({
            "c_async_get": {"ops_per_s": c.round(), "ratio": round(ratio), "against": "the Rust async API"},
            "local_get_p99_under_slow_bucket": {
                "p99_us": round(loaded), "ratio": round(slow_ratio), "target": "<= 2",
                "against": "the p99 of the same gets with the bucket idle"
            }
        });
        std::fs::write(out.join("ffi.json"), serde_json::to_string_pretty(&json).unwrap()).unwrap();
        println!("wrote {}", out.join("ffi.json").display());
    }
}
