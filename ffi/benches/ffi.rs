//! C API benchmark: 100,000 pipelined point gets through the C API (a C program built here
//! with the system compiler against include/objstore_db.h and libobjstore_db) against the same
//! through the Rust async API (`rsapi::Db::get`). Each side runs in a process of its own; the
//! figure `c_async_get` (ratio = C / Rust, target >= 0.5) goes to target/bench/ffi.json.
//! Under `cargo test` it runs in a small smoke form and writes nothing.

// The measuring helpers the core benchmarks use.
#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use common::{measuring, median};
use objstore_db::rsapi::{self, Db, Read};
use objstore_db_core::{Database, Mode, OpenOptions, Schema};
use serde_json::json;

fn key(x: &mut u64, records: usize) -> serde_json::Value {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    json!(format!("r{:08}", *x as usize % records))
}

/// Pipelined gets through the Rust async API, as the C program does them.
fn rust_gets(db: &Db, records: usize, n: usize) {
    let left = Arc::new((Mutex::new(n), Condvar::new()));
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..n {
        let left = left.clone();
        db.get(None, "bench", &key(&mut x, records), Read::default(), move |r| {
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
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "objstore-db-ffi", "--lib"]).current_dir(workspace());
    if measuring() {
        build.arg("--release");
    }
    assert!(build.status().unwrap().success(), "cargo could not build libobjstore_db");
    let program = out.join("c_async_get");
    let lib = library_dir();
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
    if measuring() {
        let out = workspace().join("target/bench");
        std::fs::create_dir_all(&out).unwrap();
        let json = json!({"c_async_get": {"ops_per_s": c.round(), "ratio": (ratio * 1000.0).round() / 1000.0, "against": "the Rust async API"}});
        std::fs::write(out.join("ffi.json"), serde_json::to_string_pretty(&json).unwrap()).unwrap();
        println!("wrote {}", out.join("ffi.json").display());
    }
}
