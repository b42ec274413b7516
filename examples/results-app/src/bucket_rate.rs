//! `objstore-results bucket-rate SECONDS THREADS`: the bucket's own write rate, the collector
//! benchmark's baseline. THREADS threads write new objects of a run's typical size for
//! SECONDS, with nothing of the collector or the library's sync around them: on `file://` a
//! file created, written, fsync'ed and renamed into the bucket's directory; on S3 one bare PUT
//! through the library's bucket layer (signed, no condition). Prints `{"writes", "seconds",
//! "writes_per_s"}` as JSON.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use objstore_db_core::bucket::{open_bucket, Accounting, PutOptions};
use objstore_db_core::sync::{SyncConfig, Token};
use serde_json::{json, Value};

use crate::error::{AppError, AppResult};
use crate::post::Target;

/// A run's body as the collector stores it: about 1 KB.
fn body() -> Vec<u8> {
    let tests: Vec<Value> =
        (0..12).map(|i| json!({"name": format!("test_{i:03}"), "status": "pass", "ms": i})).collect();
    serde_json::to_vec(&json!({"platform": "linux-x86_64", "browser": "bench", "tests": tests})).unwrap_or_default()
}

/// Writes one new object under the given name.
type WriteObject = Arc<dyn Fn(&str) -> AppResult<()> + Send + Sync>;

pub fn measure(target: &Target, seconds: f64, threads: usize) -> AppResult<Value> {
    let write: WriteObject = match target.endpoint.strip_prefix("file://") {
        Some(dir) => {
            let root = std::path::Path::new(dir).join(&target.bucket).join("bucket-rate");
            std::fs::create_dir_all(&root).map_err(|e| AppError::internal(format!("{}: {e}", root.display())))?;
            let body = body();
            Arc::new(move |name| {
                let fail = |e: std::io::Error| AppError::internal(format!("writing {name}: {e}"));
                let staged = root.join(format!(".{name}.tmp"));
                let mut file = std::fs::File::create(&staged).map_err(fail)?;
                file.write_all(&body).map_err(fail)?;
                file.sync_all().map_err(fail)?;
                std::fs::rename(&staged, root.join(name)).map_err(fail)
            })
        }
        None => {
            let block = json!({"format": "objstore", "Options": target.options()});
            let env = |name: &str| std::env::var(name).ok();
            let config =
                SyncConfig::from_json("bucket-rate", &block, &env).map_err(|e| AppError::bad(e.to_string()))?;
            let bucket = open_bucket(&config.connection, Arc::new(Accounting::default()))
                .map_err(|e| AppError::internal(e.to_string()))?;
            let (body, prefix) = (body(), config.connection.location.prefix.clone());
            Arc::new(move |name| {
                // The bucket layer takes keys as given: the target's prefix is ours to add.
                let key = format!("{prefix}bucket-rate/{name}");
                bucket.put(&key, &body, &PutOptions::default(), &Token::default()).map(drop).map_err(AppError::from)
            })
        }
    };
    let writes = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..threads.max(1))
        .map(|t| {
            let (write, writes) = (write.clone(), writes.clone());
            std::thread::spawn(move || -> AppResult<()> {
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
        worker.join().map_err(|_| AppError::internal("a writer thread panicked"))??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let writes = writes.load(Ordering::Relaxed);
    Ok(json!({"writes": writes, "seconds": elapsed, "writes_per_s": writes as f64 / elapsed}))
}
