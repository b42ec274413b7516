//! One version, declared once: the workspace's `Cargo.toml` (`[workspace.package] version`).
//! Every package says it: the crates inherit it, the wheel takes it from Cargo (pyproject's
//! `dynamic = ["version"]`), `scripts/gen-header` writes it into the header's macros, the C
//! library answers it, and `package.json` repeats it (npm reads nothing else), for itself and
//! for its platform package, as this test checks; the CHANGELOG has a section for it.

use std::ffi::CStr;
use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_package_says_the_workspace_version() {
    let version = env!("CARGO_PKG_VERSION");
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();

    let package: serde_json::Value = serde_json::from_str(&read("bindings/node/package.json")).unwrap();
    assert_eq!(package["version"], version, "bindings/node/package.json");
    // The platform package (scripts/package makes it with this version) is pinned exactly.
    let platform = &package["optionalDependencies"]["objstore-db-linux-x64-gnu"];
    assert_eq!(platform, version, "bindings/node/package.json's optional dependency on its platform package");

    let pyproject = read("bindings/python/pyproject.toml");
    assert!(pyproject.contains("dynamic = [\"version\"]"), "the wheel's version comes from Cargo");
    assert!(
        !pyproject.lines().any(|l| l.trim_start().starts_with("version =")),
        "pyproject declares no version of its own"
    );

    let header = read("include/objstore_db.h");
    assert!(header.contains(&format!("#define OBJSTORE_DB_VERSION \"{version}\"")), "the header's version macro");
    let number = parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2];
    assert!(header.contains(&format!("#define OBJSTORE_DB_VERSION_NUMBER {number}")), "the header's version number");

    let answered = unsafe { CStr::from_ptr(objstore_db::capi::objstore_db_version()) };
    assert_eq!(answered.to_str().unwrap(), version, "objstore_db_version()");
    assert_eq!(objstore_db::capi::objstore_db_version_number(), number, "objstore_db_version_number()");

    let changelog = read("CHANGELOG.md");
    assert!(changelog.contains(&format!("\n## {version}")), "CHANGELOG.md has a section for {version}");
}
