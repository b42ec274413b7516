//! A bucket's own write rate, the collector benchmark's baseline
//! (`examples/results-app/bench/run`):
//!   cargo run --release -p objstore-db-core --example bucket_rate -- SECONDS THREADS
//! THREADS threads write new objects of a run's typical size (about 1 KB) for SECONDS, with
//! nothing of a collector or of sync around them: on `file://` a file created, written,
//! fsync'ed and renamed into the bucket's directory; on S3 one bare PUT (signed, no condition)
//! through the library's bucket layer. The bucket is the results app's: `OBJSTORE_RESULTS`,
//! `OBJSTORE_RESULTS_BUCKET`, `OBJSTORE_RESULTS_PREFIX` and the AWS variables. Prints
//! `{"writes", "seconds", "writes_per_s"}` as JSON.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use objstore_db_core::bucket::{open_bucket, Accounting, PutOptions};
use objstore_db_core::sync::{SyncConfig, Token};
use serde_json::{json, Value};

/// Writes one new object under the given name.
type WriteObject = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

fn body() -> Vec<u8> {
    let tests: Vec<Value> =
        (0..12).map(|i| json!({"name": format!("test_{i:03}"), "status": "pass", "ms": i})).collect();
    serde_json::to_vec(&json!({"platform": "linux-x86_64", "browser": "bench", "tests": tests})).unwrap()
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn writer() -> Result<WriteObject, String> {
    let endpoint = var("OBJSTORE_RESULTS").ok_or("set OBJSTORE_RESULTS to the bucket's endpoint")?;
    let bucket = var("OBJSTORE_RESULTS_BUCKET").unwrap_or_else(|| "results".into());
    let body = body();
    if let Some(dir) = endpoint.strip_prefix("file://") {
        let root = std::path::Path::new(dir).join(&bucket).join("bucket-rate");
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        return Ok(Arc::new(move |name| {
            let fail = |e: std::io::Error| format!("writing {name}: {e}");
            let staged = root.join(format!(".{name}.tmp"));
            let mut file = std::fs::File::create(&staged).map_err(fail)?;
            file.write_all(&body).map_err(fail)?;
            file.sync_all().map_err(fail)?;
            std::fs::rename(&staged, root.join(name)).map_err(fail)
        }));
    }
    let prefix = var("OBJSTORE_RESULTS_PREFIX").unwrap_or_default();
    let block = json!({"format": "objstore", "Options": {"bucket": bucket, "endpoint": endpoint}});
    let config =
        SyncConfig::from_json("bucket-rate", &block, &|name| std::env::var(name).ok()).map_err(|e| e.to_string())?;
    let bucket = open_bucket(&config.connection, Arc::new(Accounting::default())).map_err(|e| e.to_string())?;
    Ok(Arc::new(move |name| {
        // The bucket layer takes keys as given: the prefix is ours to add.
        let key = format!("{prefix}bucket-rate/{name}");
        bucket.put(&key, &body, &PutOptions::default(), &Token::default()).map(drop).map_err(|e| e.to_string())
    }))
}

fn main() -> Result<(), String> {
    let usage = "bucket_rate SECONDS THREADS: how long to write, and with how many threads";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seconds, threads] = args.as_slice() else { return Err(usage.into()) };
    let seconds: f64 = seconds.parse().ok().filter(|s: &f64| *s > 0.0).ok_or(usage)?;
    let threads: usize = threads.parse().ok().filter(|t| *t > 0).ok_or(usage)?;
    let write = writer()?;
    let writes = Arc::new(AtomicU64::new(0));
    let (started, until) = (Instant::now(), Instant::now() + Duration::from_secs_f64(seconds));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (write, writes) = (write.clone(), writes.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut n = 0u64;
                while Instant::now() < until {
                    write(&format!("t{t:03}-{n:08}"))?;
                    writes.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.join().map_err(|_| "a writer thread panicked".to_string())??;
    }
    let (elapsed, writes) = (started.elapsed().as_secs_f64(), writes.load(Ordering::Relaxed));
    println!("{}", json!({"writes": writes, "seconds": elapsed, "writes_per_s": writes as f64 / elapsed}));
    Ok(())
}
