//! Pull cursors: batches handed out by `objstore_cursor_next`, each step an ordinary request,
//! with updates and deletes of the records shown.

use super::*;

/// Opens a pull cursor over the query's matches from the start (the query's own paging is
/// untouched) and stores it in `*cursor_out`. `mode_` OBJSTORE_MODE_READWRITE lets it update
/// and delete, OBJSTORE_MODE_READONLY does not; another value is
/// OBJSTORE_STATUS_INVALID_ARGUMENT. `tx`: 0 for each batch to read on its own, or an id from
/// objstore_db_begin. Synchronous: no callback, no request.
/// The cursor is the caller's: free it with objstore_cursor_free. The query may be freed
/// before it.
/// A NULL `query` or `cursor_out` is OBJSTORE_STATUS_INVALID_ARGUMENT. On failure
/// `*cursor_out` is NULL. `error_out` (gets NULL, or on failure a message to free with
/// objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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

/// Frees a cursor, closing it. NULL is a harmless no-op. Requests already made with it still
/// complete. The handle must not be used afterwards.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_cursor_free(cursor: *mut ObjstoreCursor) {
    if !cursor.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(cursor))));
    }
}

pub(super) unsafe fn cursor_ref<'a>(cursor: *const ObjstoreCursor) -> Result<&'a Cursor> {
    handle(cursor, "cursor").map(|c| &c.cursor)
}

/// Reads the cursor's next batch of at most `n` matches; the result is a JSON array of
/// `{"key", "primaryKey", "value"}`, empty at the end. Each batch is a request of its own:
/// other requests may be made between two batches. `n` 0 is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// The callback's `result` is owned by the library and valid only during the callback. The
/// cursor may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// A NULL `cursor` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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

/// Replaces the record under `primary_key_json` (a primary key the cursor returned) with
/// `value_json`; the key must stay the same. The result is `null`. A cursor opened
/// OBJSTORE_MODE_READONLY returns OBJSTORE_STATUS_READ_ONLY.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback. The cursor may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `cursor`, `primary_key_json`, `value_json` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// JSON arguments are `*_len` bytes, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let key = json::key(&json(primary_key_json, primary_key_len, "primary_key_json")?)?;
        let value = json(value_json, value_len, "value_json")?;
        let done = completion(done, user_data)?;
        c.update(key, value, move |r| done.deliver(r))
    })
}

/// Removes the record under `primary_key_json` (a primary key the cursor returned); the result
/// is how many were removed (0 or 1). A cursor opened OBJSTORE_MODE_READONLY returns
/// OBJSTORE_STATUS_READ_ONLY.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback. The cursor may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `cursor`, `primary_key_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `primary_key_json` is `primary_key_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let key = json::key(&json(primary_key_json, primary_key_len, "primary_key_json")?)?;
        let done = completion(done, user_data)?;
        c.delete(key, move |r| done.deliver(r))
    })
}
