//! The shared library cargo built next to this test exports every function the header declares.

use std::ffi::CString;
use std::path::Path;

/// The names of the functions `include/objstore_db.h` declares.
fn declared() -> Vec<String> {
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/objstore_db.h");
    let text = std::fs::read_to_string(header).unwrap();
    let mut names: Vec<String> = text
        .lines()
        .filter(|line| !line.starts_with([' ', '/', '*', '#']) && line.contains('('))
        .filter_map(|line| line.split('(').next()?.rsplit([' ', '*']).next().map(str::to_string))
        .filter(|name| name.starts_with("objstore_"))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_shared_library_exports_every_function_of_the_header() {
    let names = declared();
    assert!(names.len() > 40 && names.contains(&"objstore_db_open".to_string()), "{names:?}");
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let library = CString::new(deps.join("libobjstore_db.so").to_str().unwrap()).unwrap();
    let handle = unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen {library:?} failed");
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| unsafe { libc::dlsym(handle, CString::new(name.as_str()).unwrap().as_ptr()) }.is_null())
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
}
