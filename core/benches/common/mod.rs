//! What the benchmarks share: timing, medians and writing `target/bench/<name>.json`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Map, Value};

/// Whether this is a measuring run (`cargo bench`) rather than the smoke run of `cargo test`.
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

const CHILD: &str = "OBJSTORE_BENCH_CHILD";

/// In a child process: the measurement it was started for (`figure:side`).
pub fn child_task() -> Option<String> {
    std::env::var(CHILD).ok()
}

/// Runs one measurement in a fresh process of this benchmark and returns the numbers it
/// printed. Every side is measured in its own process because the bundled SQLite is built with
/// SQLITE_ENABLE_MEMORY_MANAGEMENT, which makes all connections of a process share one page
/// cache: measured side by side, one connection's hits would depend on the other's work.
pub fn in_child(task: &str, dir: &Path) -> Vec<f64> {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    if measuring() {
        command.arg("--bench");
    }
    let out = command.env(CHILD, task).env("OBJSTORE_BENCH_DIR", dir).output().unwrap();
    assert!(out.status.success(), "{task} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(|n| n.parse().unwrap()).collect()
}

/// In a child process: the directory the parent prepared.
pub fn child_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("OBJSTORE_BENCH_DIR").expect("started by in_child"))
}

/// Peak resident memory of this process in MB. VmHWM belongs to the address space and starts
/// afresh at exec, unlike getrusage's ru_maxrss, which Linux carries over from the parent.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/self/status");
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

/// Operations per second of `work`, which does `ops` operations once.
pub fn ops_per_s(ops: usize, work: impl FnOnce()) -> f64 {
    ops as f64 / seconds(work)
}

/// Medians over rounds of (ours, baseline) pairs, each measured in its own child process, the
/// two sides alternating so that drifts in machine load fall on both.
pub fn paired_medians(rounds: usize, dir: &Path, ours: &str, baseline: &str) -> (f64, f64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(in_child(ours, dir)[0]);
        b.push(in_child(baseline, dir)[0]);
    }
    (median(&mut a), median(&mut b))
}

/// Seconds `work` takes.
pub fn seconds(work: impl FnOnce()) -> f64 {
    let start = Instant::now();
    work();
    start.elapsed().as_secs_f64()
}

pub struct Figure {
    pub name: &'static str,
    pub ops_per_s: f64,
    pub ratio: f64,
    /// What the ratio is against, in words.
    pub against: String,
}

/// Prints the figures and, in a measuring run, writes them to `target/bench/<file>.json` as
/// `{"<figure>": {"ops_per_s": N, "ratio": R, "against": "..."}, ...}` plus any extras.
pub fn report(title: &str, file: &str, figures: &[Figure], extra: Map<String, Value>) {
    println!("{title}");
    let mut out = Map::new();
    for f in figures {
        println!("  {:<14} {:>12.0} ops/s   ratio {:.2}   ({})", f.name, f.ops_per_s, f.ratio, f.against);
        out.insert(
            f.name.into(),
            json!({"ops_per_s": f.ops_per_s.round(), "ratio": (f.ratio * 1000.0).round() / 1000.0, "against": f.against}),
        );
    }
    for (k, v) in &extra {
        println!("  {k}: {v}");
    }
    out.extend(extra);
    if measuring() {
        let dir = target_dir().join("bench");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{file}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&Value::Object(out)).unwrap()).unwrap();
        println!("wrote {}", path.display());
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}
