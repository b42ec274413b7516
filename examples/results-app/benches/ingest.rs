//! Ingest benchmark: hostile report shapes posted with `objstore-results post`, each in a
//! process of its own, for its peak resident memory and its speed.
//!
//! `cargo bench -p objstore-results --bench ingest` prints the figures and writes
//! `target/bench/ingest.json`; under `cargo test` it runs a small smoke version (every shape is
//! taken, and nothing is measured).
//!
//! - long_suite_name: one 512 KiB `<testsuite>` name over 26,000 cases (each case used to carry
//!   its own copy of it);
//! - deep_nesting: `<testsuite>`s 60 deep, each named with 1,000 bytes, over 10,000 cases;
//! - tiny_cases: 200,000 `<testcase name="tN"/>`, the most a report may hold;
//! - big_system_out: one case with 10 MB of `<system-out>`;
//! - tap_comments: a 1 MB TAP stream of 100,000 comment lines after a failing test.
//!
//! Target: a peak of at most 8 × the file's size + 64 MB, and at least 20 MB/s. The speed is
//! the file's size over the time a post takes beyond what a post of one test takes (measured
//! in the same run: starting the process, opening the writer, one write to the bucket), so
//! that a small file is not judged by the process's start. The baseline, measured in the same
//! run, is an ordinary report of the same size as the largest shape (pytest's shape: modules,
//! classes, a failure in ten): each ratio is the shape's MB/s over the ordinary report's.

#[path = "../../../core/benches/common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::measuring;
use serde_json::{json, Map, Value};

const MB: f64 = 1024.0 * 1024.0;

/// A shape's file, written to `dir` at `scale` (1 in a measuring run, smaller in the smoke one).
fn write_shape(dir: &Path, shape: &str, scale: usize) -> PathBuf {
    let mut text = String::new();
    let (file, ext) = match shape {
        "long_suite_name" => {
            let _ = write!(text, "<testsuites><testsuite name=\"{}\">", "s".repeat(512 * 1024 / scale));
            for i in 0..26_000 / scale {
                let _ = write!(text, "<testcase name=\"t{i}\" classname=\"c\"/>");
            }
            text.push_str("</testsuite></testsuites>");
            (shape, "xml")
        }
        "deep_nesting" => {
            text.push_str("<testsuites>");
            for depth in 0..60 {
                let _ = write!(text, "<testsuite name=\"d{depth}{}\">", "n".repeat(1000));
            }
            for i in 0..10_000 / scale {
                let _ = write!(text, "<testcase name=\"t{i}\" classname=\"c\"/>");
            }
            text.push_str(&"</testsuite>".repeat(60));
            text.push_str("</testsuites>");
            (shape, "xml")
        }
        "tiny_cases" => {
            text.push_str("<testsuite name=\"tiny\">");
            for i in 0..200_000 / scale {
                let _ = write!(text, "<testcase name=\"t{i}\"/>");
            }
            text.push_str("</testsuite>");
            (shape, "xml")
        }
        "big_system_out" => {
            text.push_str("<testsuite name=\"out\"><testcase name=\"loud\"><failure message=\"boom\"/><system-out>");
            let line = "a line of output that a test printed, over and over\n";
            while text.len() < 10 * 1024 * 1024 / scale {
                text.push_str(line);
            }
            text.push_str("</system-out></testcase></testsuite>");
            (shape, "xml")
        }
        "tap_comments" => {
            text.push_str("TAP version 13\n1..2\nnot ok 1 - fails loudly\n");
            for i in 0..100_000 / scale {
                let _ = writeln!(text, "# note {i}");
            }
            text.push_str("ok 2 - quiet\n");
            (shape, "tap")
        }
        "one_test" => {
            text.push_str("<testsuite name=\"one\"><testcase name=\"t\"/></testsuite>");
            (shape, "xml")
        }
        "ordinary" => {
            // As large as the largest shape: pytest's modules and classes, a failure in ten.
            text.push_str("<testsuites><testsuite name=\"pytest\">");
            let mut i = 0;
            while text.len() < 10 * 1024 * 1024 / scale {
                let module = i / 200;
                let _ = write!(
                    text,
                    "<testcase classname=\"tests.test_m{module}.TestThing\" name=\"test_case_{i}[param-{i}]\" time=\"0.012\">"
                );
                if i % 10 == 0 {
                    text.push_str("<failure message=\"assert 1 == 2\">tests/test_m.py:12: in test_case\n    assert 1 == 2\nE   assert 1 == 2</failure>");
                }
                text.push_str("</testcase>");
                i += 1;
            }
            text.push_str("</testsuite></testsuites>");
            (shape, "xml")
        }
        other => panic!("no shape {other}"),
    };
    let path = dir.join(format!("{file}.{ext}"));
    std::fs::write(&path, text).unwrap();
    path
}

const SHAPES: [&str; 5] = ["long_suite_name", "deep_nesting", "tiny_cases", "big_system_out", "tap_comments"];

/// Posts `file` into a file:// bucket under `dir`: (seconds, peak RSS in MB). The peak is the
/// post's own (wait4's), since this process stays small: the files were written by a child.
fn post(dir: &Path, file: &Path) -> (f64, f64) {
    let bucket = dir.join(format!("bucket-{}", file.file_stem().unwrap().to_string_lossy()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_objstore-results"));
    command
        .args(["post", "--runtime", "rust-1.95", "--platform", "linux-x86_64"])
        .arg(file)
        .env("OBJSTORE_RESULTS", format!("file://{}", bucket.display()))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdout(std::process::Stdio::null());
    for marker in
        ["GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "JENKINS_URL", "TF_BUILD", "OBJSTORE_RESULTS_RUN"]
    {
        command.env_remove(marker);
    }
    // The disk settles first: an earlier post's writes still in the page cache would otherwise
    // be flushed by this one's fsync, and timed as its own.
    unsafe { libc::sync() };
    let started = Instant::now();
    // Reaped by wait4 below, which also gives its peak memory.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "posting {} failed", file.display());
    (seconds, usage.ru_maxrss as f64 / 1024.0)
}

fn main() {
    let scale = if measuring() { 1 } else { 10 };
    if std::env::var_os("OBJSTORE_BENCH_WRITE").is_some() {
        let dir = PathBuf::from(std::env::var_os("OBJSTORE_BENCH_WRITE").unwrap());
        for shape in SHAPES.iter().chain(&["ordinary", "one_test"]) {
            write_shape(&dir, shape, scale);
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The files are written by a child, so that this process's own peak (which its children's
    // start from) stays small.
    let wrote = Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("OBJSTORE_BENCH_WRITE", dir)
        .status()
        .unwrap();
    assert!(wrote.success());
    let file_of = |shape: &str| {
        let ext = if shape == "tap_comments" { "tap" } else { "xml" };
        dir.join(format!("{shape}.{ext}"))
    };
    let rounds = if measuring() { 5 } else { 1 };
    // The fastest of a few rounds: the machine's noise only ever slows a round down.
    let measure = |shape: &str| {
        let file = file_of(shape);
        let size = std::fs::metadata(&file).unwrap().len() as f64 / MB;
        let (mut best, mut peak) = (f64::MAX, 0f64);
        for _ in 0..rounds {
            let (seconds, rss) = post(dir, &file);
            best = best.min(seconds);
            peak = peak.max(rss);
        }
        (size, best, peak)
    };
    let (_, fixed_s, _) = measure("one_test");
    let rate_of = |size: f64, seconds: f64| size / (seconds - fixed_s).max(1e-6);
    let (ordinary_mb, ordinary_s, ordinary_rss) = measure("ordinary");
    let ordinary_rate = rate_of(ordinary_mb, ordinary_s);
    println!("ingest benchmark ({} rounds, the fastest; peak RSS of `objstore-results post`)", rounds);
    println!("  a post of one test takes {:.1} ms: each rate is over the time beyond it", fixed_s * 1e3);
    println!(
        "  {:<16} {:>7.1} MB  {:>7.1} MB/s  peak {:>6.0} MB  (the baseline)",
        "ordinary", ordinary_mb, ordinary_rate, ordinary_rss
    );
    let mut out = Map::new();
    out.insert(
        "one_test".into(),
        json!({"ms": round(fixed_s * 1e3), "what": "a post of one test: each rate is over the time beyond it"}),
    );
    out.insert(
        "ordinary".into(),
        json!({"file_mb": round(ordinary_mb), "ms": round(ordinary_s * 1e3), "mb_per_s": round(ordinary_rate), "peak_rss_mb": round(ordinary_rss)}),
    );
    for shape in SHAPES {
        let (size, seconds, rss) = measure(shape);
        let budget = 8.0 * size + 64.0;
        let rate = rate_of(size, seconds);
        println!(
            "  {shape:<16} {size:>7.1} MB  {rate:>7.1} MB/s  peak {rss:>6.0} MB of {budget:.0}  ratio {:.2} (MB/s against the baseline's)",
            rate / ordinary_rate
        );
        out.insert(
            shape.into(),
            json!({
                "file_mb": round(size),
                "ms": round(seconds * 1e3),
                "mb_per_s": round(rate),
                "peak_rss_mb": round(rss),
                "rss_budget_mb": round(budget),
                "within_memory_target": rss <= budget,
                "within_speed_target": rate >= 20.0,
                "ratio": round(rate / ordinary_rate),
                "against": "MB/s of an ordinary report of the largest shape's size",
            }),
        );
    }
    if measuring() {
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
        std::fs::create_dir_all(&target).unwrap();
        let path = target.join("ingest.json");
        std::fs::write(&path, serde_json::to_string_pretty(&Value::Object(out)).unwrap()).unwrap();
        println!("wrote {}", path.display());
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
