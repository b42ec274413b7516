//! libobjstore_db: the C ABI of objstore-db. For now it carries the version; the handles,
//! operations and completion callbacks arrive with the C ABI issue, over the core's executor.

use std::ffi::c_char;

/// The library version as a NUL-terminated string, e.g. "0.1.0". Static: do not free it.
#[no_mangle]
pub extern "C" fn objstore_db_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library version as a number: major * 1_000_000 + minor * 1_000 + patch.
#[no_mangle]
pub extern "C" fn objstore_db_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 1_000_000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 1_000
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_string_matches_the_core_and_the_number() {
        let text = unsafe { std::ffi::CStr::from_ptr(objstore_db_version()) }.to_str().unwrap();
        assert_eq!(text, objstore_db_core::VERSION);
        let parts: Vec<u32> = text.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(objstore_db_version_number(), parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]);
    }
}
