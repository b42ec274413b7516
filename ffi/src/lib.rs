//! libobjstore_db: the C ABI of objstore-db (`capi`, declared in include/objstore_db.h) over the
//! safe Rust API (`rsapi`) that the Python and Node wrappers call too.

pub mod capi;
pub mod json;
pub mod rsapi;

#[cfg(test)]
mod tests {
    use super::capi::*;

    #[test]
    fn version_string_matches_the_core_and_the_number() {
        let text = unsafe { std::ffi::CStr::from_ptr(objstore_db_version()) }.to_str().unwrap();
        assert_eq!(text, objstore_db_core::VERSION);
        let parts: Vec<u32> = text.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(objstore_db_version_number(), parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]);
    }
}
