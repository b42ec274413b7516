//! Listing a `file://` bucket page by page stays linear in its size: the time per listed key
//! for 100,000 objects against 10,000, in one folder and spread over folders, measured in the
//! same run. Writes `target/bench/local_listing.json`; the ratio should stay near 1 (it was
//! 4.0-4.4 when every page walked and sorted the whole tree). Under `cargo test` it runs small
//! and checks that every key is listed once, in order.

use std::sync::Arc;
use std::time::Instant;

use objstore_db_core::bucket::{list_all, open_bucket, Accounting, ListRequest};
use objstore_db_core::sync::{SyncConfig, Token};
use serde_json::json;

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (small, large) = if measuring { (10_000, 100_000) } else { (500, 5_000) };
    let mut figures = serde_json::Map::new();
    for (layout, folders) in [("flat", 1), ("nested", 100)] {
        let per_key = |n: usize| -> f64 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("b");
            for i in 0..n {
                let folder = root.join(format!("f{:03}", i % folders));
                std::fs::create_dir_all(&folder).unwrap();
                std::fs::write(folder.join(format!("k{i:07}")), b"{}").unwrap();
            }
            // Directories change-free for a second are the ones whose listing is kept.
            std::thread::sleep(std::time::Duration::from_millis(1100));
            let endpoint = format!("file://{}", dir.path().display());
            let block = json!({"format": "objstore", "Options": {"bucket": "b", "endpoint": endpoint}});
            let config = SyncConfig::from_json("bench", &block, &|_| None).unwrap();
            let bucket = open_bucket(&config.connection, Arc::new(Accounting::default())).unwrap();
            let started = Instant::now();
            let listed = list_all(&*bucket, &ListRequest::default(), &Token::default()).unwrap();
            let elapsed = started.elapsed().as_secs_f64();
            assert_eq!(listed.objects.len(), n);
            assert!(listed.objects.windows(2).all(|w| w[0].key < w[1].key), "in byte order, once each");
            elapsed / n as f64
        };
        let (a, b) = (per_key(small), per_key(large));
        let ratio = b / a;
        println!(
            "local_listing {layout}: {:.2} µs/key at {small}, {:.2} µs/key at {large}: ratio {ratio:.2} (linear ≈ 1)",
            a * 1e6,
            b * 1e6
        );
        figures.insert(
            layout.into(),
            json!({"small": small, "large": large, "us_per_key_small": a * 1e6, "us_per_key_large": b * 1e6, "ratio": ratio}),
        );
    }
    if measuring {
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench/local_listing.json");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::fs::write(&out, serde_json::to_string_pretty(&figures).unwrap()).unwrap();
    }
}
