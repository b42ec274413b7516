//! libobjstore_db.so and libobjstore_db.a: objstore-db-ffi's C ABI (`capi`, declared in
//! include/objstore_db.h), linked as C libraries. Its functions are `#[no_mangle]` in that
//! crate; this one only makes the linker keep them.

pub use ffi::capi::*;
