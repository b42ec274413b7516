//! Pull cursors: batches handed out by `objstore_cursor_next`, each step an ordinary request,
//! with updates and deletes of the records shown.

use super::*;

/// Opens a pull cursor over the query's matches from the start (the query's own paging is
/// untouched) into `*cursor_out`; `mode` OBJSTORE_MODE_READWRITE lets it update and delete.
/// Free it with `objstore_cursor_free`.
///
/// # Safety
/// `query` is a live query; `cursor_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_open(
    query: *const ObjstoreQuery,
    tx: u64,
    mode_: u32,
    cursor_out: *mut *mut ObjstoreCursor,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    call(error_out, || {
        if cursor_out.is_null() {
            return Err(Error::InvalidArgument("cursor_out is NULL".into()));
        }
        *cursor_out = std::ptr::null_mut();
        let cursor = query_ref(query)?.cursor(within(tx), mode(mode_)?);
        *cursor_out = Box::into_raw(Box::new(ObjstoreCursor { cursor }));
        Ok(())
    })
}

/// Frees a cursor (closing it). Accepts NULL. Requests already made with it still complete.
///
/// # Safety
/// `cursor` is NULL or a live cursor, not used again.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_free(cursor: *mut ObjstoreCursor) {
    if !cursor.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(cursor))));
    }
}

pub(super) unsafe fn cursor_ref<'a>(cursor: *const ObjstoreCursor) -> Result<&'a Cursor> {
    handle(cursor, "cursor").map(|c| &c.cursor)
}

/// The cursor's next batch of at most `n` items, a JSON array of `{"key", "primaryKey",
/// "value"}`; an empty array is the end. Each batch is a request of its own: other requests
/// may be made between two batches.
///
/// # Safety
/// `cursor` is a live cursor; other pointers as in `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_next(
    cursor: *const ObjstoreCursor,
    n: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (c, done) = (cursor_ref(cursor)?, completion(done, user_data)?);
        c.next(n, Freshness::Cached, move |r| done.deliver(r))
    })
}

/// Replaces the record under `primary_key_json` (one the cursor returned) with `value_json`;
/// the key must stay the same. The result is `null`.
///
/// # Safety
/// As `objstore_cursor_next`.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_update(
    cursor: *const ObjstoreCursor,
    primary_key_json: *const c_char,
    primary_key_len: usize,
    value_json: *const c_char,
    value_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let c = cursor_ref(cursor)?;
        let key = json(primary_key_json, primary_key_len, "primary_key_json")?;
        let value = json(value_json, value_len, "value_json")?;
        let done = completion(done, user_data)?;
        c.update(&key, value, move |r| done.deliver(r))
    })
}

/// Removes the record under `primary_key_json`; the result is how many went (0 or 1).
///
/// # Safety
/// As `objstore_cursor_next`.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_delete(
    cursor: *const ObjstoreCursor,
    primary_key_json: *const c_char,
    primary_key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let c = cursor_ref(cursor)?;
        let key = json(primary_key_json, primary_key_len, "primary_key_json")?;
        let done = completion(done, user_data)?;
        c.delete(&key, move |r| done.deliver(r))
    })
}
