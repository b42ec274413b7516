//! Checkpoints: `objstore-results checkpoint` writes one of the bucket's runs, and a cold page
//! (an empty cache) starts from it: the matrix, a pair's history and a test's page as a full
//! listing gives them, the matrix in a handful of requests.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{app, Page};

fn succeeded(output: Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// The views a cold page shows, each without its cost.
fn views(page: &Page) -> Vec<Value> {
    [
        "/api/matrix",
        "/api/history?platform=linux&browser=rust-1",
        "/api/test?platform=linux&browser=rust-1&suite=nextest&name=storage::put",
    ]
    .iter()
    .map(|path| {
        let mut view = page.get(path);
        view.as_object_mut().unwrap().remove("cost");
        view
    })
    .collect()
}

fn cold_page(dir: &Path, cache: &str) -> Page {
    Page::start_with(dir, &["--cache", dir.join(cache).to_str().unwrap(), "--checkpoint-every", "0"])
}

#[test]
fn a_cold_page_from_a_checkpoint_is_the_page_a_listing_gives() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nextest.xml");
    for run in 0..12 {
        for (platform, runtime) in [("linux", "rust-1"), ("linux", "rust-2"), ("macos", "rust-1")] {
            let id = format!("r{run}");
            let args = ["post", "--platform", platform, "--runtime", runtime, "--run", &id, report.to_str().unwrap()];
            succeeded(app(dir, &args).output().unwrap());
        }
    }
    let listed = views(&cold_page(dir, "listed.sqlite3"));
    assert_eq!(listed[0]["rows"].as_array().unwrap().len(), 3, "{}", listed[0]);

    let printed = succeeded(app(dir, &["checkpoint"]).output().unwrap());
    assert!(printed.contains(".objstore-checkpoints/") && printed.contains(" names as of "), "{printed}");
    let page = cold_page(dir, "cold.sqlite3");
    let matrix = page.get("/api/matrix");
    // The checkpoints' newest key and the log, the manifest and the heads, the quarantine.
    assert!(matrix["cost"]["requests"].as_u64().unwrap() <= 6, "{}", matrix["cost"]);
    assert_eq!(matrix["cost"]["byKind"]["LIST"], 2, "{}", matrix["cost"]);
    assert_eq!(views(&page), listed);
}
