//! Queries: a handle whose `list` pages continue from call to call, and the one-shot runs
//! (count, explain, delete) and patches over what a query matches.

use super::*;

pub(super) unsafe fn query_ref<'a>(query: *const ObjstoreQuery) -> Result<&'a QueryHandle> {
    handle(query, "query").map(|q| &q.query)
}

/// Makes a query from JSON `{"from": store, "where"?: [[field, op, value], ...], "order"?,
/// "reverse"?, "unique"?, "select"?}` into `*query_out` (free with `objstore_query_free`).
///
/// # Safety
/// `db` is a live handle; `spec_json` is valid for `spec_len` bytes; `query_out` for a write.
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
        let query = db_ref(db)?.query(&json(spec_json, spec_len, "spec_json")?)?;
        *query_out = Box::into_raw(Box::new(ObjstoreQuery { query }));
        Ok(())
    })
}

/// Frees a query. Accepts NULL. Requests already made with it still complete.
///
/// # Safety
/// `query` is NULL or a live query, not used again.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_free(query: *mut ObjstoreQuery) {
    if !query.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(query))));
    }
}

/// The next `n` records as a JSON array (empty at the end): each call continues after the
/// last record of the one before (keyset paging).
///
/// # Safety
/// `query` is a live query; other pointers as in `objstore_db_put`.
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
        let (q, read, done) = (query_ref(query)?, read_flags(flags)?, completion(done, user_data)?);
        q.list_text(within(tx), n, read, move |r| done.deliver_text(r))
    })
}

/// What `objstore_query_run` does.
pub const OBJSTORE_QUERY_COUNT: u32 = 0;
pub const OBJSTORE_QUERY_EXPLAIN: u32 = 1;
pub const OBJSTORE_QUERY_DELETE: u32 = 2;

/// Counts the matches (a number), explains the plan (a string), or deletes the matches (how
/// many), by `action` (OBJSTORE_QUERY_*).
///
/// # Safety
/// As `objstore_query_list`.
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
        let deliver = move |r| done.deliver(r);
        match action {
            OBJSTORE_QUERY_COUNT => q.count(within(tx), Freshness::Cached, deliver),
            OBJSTORE_QUERY_EXPLAIN => q.explain(within(tx), deliver),
            OBJSTORE_QUERY_DELETE => q.delete(within(tx), deliver),
            other => Err(Error::InvalidArgument(format!("query action {other} is not one of OBJSTORE_QUERY_*"))),
        }
    })
}

/// Merges a JSON merge patch (RFC 7396) into every match; the result is how many changed.
///
/// # Safety
/// As `objstore_query_list`.
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
