//! What the benchmarks share: timing, medians and writing `target/bench/<name>.json`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Map, Value};

/// Whether this is a measuring run (`cargo bench`) rather than the smoke run of `cargo test`.
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

/// Operations per second of `work`, which does `ops` operations once.
pub fn ops_per_s(ops: usize, work: impl FnOnce()) -> f64 {
    let start = Instant::now();
    work();
    ops as f64 / start.elapsed().as_secs_f64()
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
