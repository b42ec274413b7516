//! Queries: a handle whose `list` pages continue from call to call, and the one-shot runs
//! (count, explain, delete) and patches over what a query matches.

use super::*;

pub(super) unsafe fn query_ref<'a>(query: *const ObjstoreQuery) -> Result<&'a QueryHandle> {
    handle(query, "query").map(|q| &q.query)
}

/// Makes a query on the database from `spec_json`, `{"from": store, "where"?: [[field, op,
/// value], ...], "order"?, "reverse"?, "unique"?, "select"?}`, and stores its handle in
/// `*query_out`. Synchronous: no callback, no request.
/// `spec_json` is read during the call and not kept. The query is the caller's: free it with
/// objstore_query_free (it may outlive objstore_db_free; its requests are then refused with
/// OBJSTORE_STATUS_CLOSED).
/// A NULL `db`, `spec_json` or `query_out` is OBJSTORE_STATUS_INVALID_ARGUMENT. On failure
/// `*query_out` is NULL. `error_out` (gets NULL, or on failure a message to free with
/// objstore_string_free) may be NULL.
/// `spec_json` is `spec_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_new(
    db: *const ObjstoreDb,
    spec_json: *const c_char,
    spec_len: usize,
    query_out: *mut *mut ObjstoreQuery,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    call(error_out, || {
        if query_out.is_null() {
            return Err(Error::InvalidArgument("query_out is NULL".into()));
        }
        *query_out = std::ptr::null_mut();
        let query = db_ref(db)?.query(Query::from_json(&json(spec_json, spec_len, "spec_json")?)?)?;
        *query_out = Box::into_raw(Box::new(ObjstoreQuery { query }));
        Ok(())
    })
}

/// Frees a query. NULL is a harmless no-op. Requests already made with it still complete, and
/// cursors opened from it stay valid. The handle must not be used afterwards.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_free(query: *mut ObjstoreQuery) {
    if !query.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(query))));
    }
}

/// Reads the query's next `n` matches; the result is a JSON array (empty at the end). Each
/// call continues after the last match of the one before (keyset paging). `tx`: 0 for a
/// transaction of its own, or an id from objstore_db_begin.
/// `flags`: 0, or OBJSTORE_READ_FRESH to ask the bucket before answering (synced stores;
/// ignored when `tx` is not 0: a transaction reads the local copy), with OBJSTORE_READ_INLINE
/// to let it complete inside this call when it can (`*request_out` is then 0).
/// The callback's `result` is owned by the library and valid only during the callback. The
/// query may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), inside this call only with OBJSTORE_READ_INLINE.
/// A NULL `query` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_list(
    query: *const ObjstoreQuery,
    tx: u64,
    n: usize,
    flags: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (q, flags, done) = (query_ref(query)?, read_flags(flags)?, completion(done, user_data)?);
        read_now_or_later(
            q.db(),
            &flags,
            tx,
            done,
            || q.list_now(n, flags.freshness, AsText),
            |done| q.list(within(tx), n, flags.freshness, AsText, move |r| done.deliver_text(r)),
        )
    })
}

/// What `objstore_query_run` does.
pub const OBJSTORE_QUERY_COUNT: u32 = 0;
pub const OBJSTORE_QUERY_EXPLAIN: u32 = 1;
pub const OBJSTORE_QUERY_DELETE: u32 = 2;

/// By `action`: counts the query's matches (OBJSTORE_QUERY_COUNT: a number, paging aside),
/// explains its plan (OBJSTORE_QUERY_EXPLAIN: a string) or deletes the matches
/// (OBJSTORE_QUERY_DELETE: how many); another `action` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `tx`: 0 for a transaction of its own, or an id from objstore_db_begin.
/// The callback's `result` is owned by the library and valid only during the callback. The
/// query may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// A NULL `query` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_run(
    query: *const ObjstoreQuery,
    tx: u64,
    action: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (q, done) = (query_ref(query)?, completion(done, user_data)?);
        match action {
            OBJSTORE_QUERY_COUNT => q.count(within(tx), Freshness::Cached, move |r| done.deliver(r)),
            OBJSTORE_QUERY_EXPLAIN => q.explain(within(tx), move |r| done.deliver(r)),
            OBJSTORE_QUERY_DELETE => q.delete(within(tx), move |r| done.deliver(r)),
            other => Err(Error::InvalidArgument(format!("query action {other} is not one of OBJSTORE_QUERY_*"))),
        }
    })
}

/// Merges `patch_json`, a JSON merge patch (RFC 7396), into every match of the query; the
/// result is how many records changed. `tx`: 0 for a transaction of its own, or an id from
/// objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback. The query may be freed once this returns.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `query`, `patch_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `patch_json` is `patch_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_patch(
    query: *const ObjstoreQuery,
    tx: u64,
    patch_json: *const c_char,
    patch_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (q, patch) = (query_ref(query)?, json(patch_json, patch_len, "patch_json")?);
        let done = completion(done, user_data)?;
        q.patch(within(tx), patch, move |r| done.deliver(r))
    })
}
