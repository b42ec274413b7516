//! Sync: flush, prefetch, offline, request accounting, refused writes and their resolution,
//! a record's sync status, and withdrawing writes still waiting.

use super::*;

/// Sends the outbox of synced stores now; the result is `{"sent", "pending", "refused",
/// "rejected": [{"sequence", "code", "message"}], "held": [...], "offline"?, "blocked"?}`.
/// Writes are also sent in the background after each commit, so `sent`, `rejected` and `held`
/// are what this call did, while `pending` (writes still waiting) and `refused` (refused
/// writes awaiting objstore_db_resolve, whoever met the refusal) count every write.
/// `rejected`: writes the bucket refused (kept, see objstore_db_refused_writes); `held`:
/// writes the server failed on (5xx) while it took others, which stay queued and do not block
/// writes to other objects; `offline`: why the bucket could not be reached; `blocked`: why it
/// refused every request (credentials, a wrong region); offline or blocked, the writes wait.
/// Returns OBJSTORE_STATUS_INVALID_ARGUMENT for a database without synced stores.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `request_out` (gets the id for
/// objstore_db_cancel, 0 on failure) and `error_out` (gets NULL, or on failure a message to
/// free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_flush(
    db: *const ObjstoreDb,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.flush(move |r| done.deliver(r))
    })
}

/// Lists the synced store `store` now and brings its local copy in line (new and changed
/// objects fetched, vanished ones removed), whatever its prefetch setting; the result is
/// `null`. Returns OBJSTORE_STATUS_INVALID_ARGUMENT for a database without synced stores.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// A NULL `db`, `store` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `request_out` (gets the
/// id for objstore_db_cancel, 0 on failure) and `error_out` (gets NULL, or on failure a
/// message to free with objstore_string_free) may be NULL.
/// `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_prefetch(
    db: *const ObjstoreDb,
    store: *const c_char,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store, done) = (db_ref(db)?, text(store, "store")?, completion(done, user_data)?);
        db.prefetch(store, move |r| done.deliver(r))
    })
}

/// Writes a checkpoint of the synced store `store`, which must keep them
/// (`Options.checkpoints: true`): its every name as of now, so that a cold reader starts there
/// (a handful of requests) instead of listing every name. The result is `{"manifest",
/// "positionMs", "objects", "shards", "bytes"}`: the manifest's name, the bucket's clock when
/// the listing began, the names held, the shards written and their bytes.
/// Returns OBJSTORE_STATUS_INVALID_ARGUMENT for a database without synced stores.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// A NULL `db`, `store` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `request_out` (gets the
/// id for objstore_db_cancel, 0 on failure) and `error_out` (gets NULL, or on failure a
/// message to free with objstore_string_free) may be NULL.
/// `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_checkpoint(
    db: *const ObjstoreDb,
    store: *const c_char,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store, done) = (db_ref(db)?, text(store, "store")?, completion(done, user_data)?);
        db.checkpoint(store, move |r| done.deliver(r))
    })
}

/// Sets the database offline (`offline` true) or back online. Offline, the library makes no
/// requests to buckets: reads serve the cache and writes wait; back online, the waiting writes
/// are sent. Takes effect at once; no callback. A database without synced stores ignores it.
/// A NULL `db` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on failure a
/// message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_set_offline(
    db: *const ObjstoreDb,
    offline: bool,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    call(error_out, || db_ref(db)?.set_offline(offline))
}

/// Reports the requests made to buckets so far: `{"requests": {kind: {status: n}}, "total",
/// "bytesSent", "bytesReceived", "busyMs" (milliseconds with a request in flight), "costUsd"
/// (S3 Standard), "costsUsd": {"s3Standard", "r2",
/// "s3ExpressOneZone"}, "conditionalWrites": {bucket: bool}}`. `reset` true starts the count
/// again after this report. Synchronous: no callback.
/// On OBJSTORE_STATUS_OK `*result_out` gets the report as NUL-terminated JSON, to free with
/// objstore_string_free; on failure it is NULL.
/// A NULL `db` or `result_out` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or
/// on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_sync_stats(
    db: *const ObjstoreDb,
    reset: bool,
    result_out: *mut *mut c_char,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    call(error_out, || {
        if result_out.is_null() {
            return Err(Error::InvalidArgument("result_out is NULL".into()));
        }
        *result_out = std::ptr::null_mut();
        *result_out = c_string(json::text(db_ref(db)?.sync_stats(reset))).into_raw();
        Ok(())
    })
}

/// Lists the writes the bucket refused, kept until resolved: the result is a JSON array of
/// `{"sequence", "store", "key", "op", "value", "code", "message"}`.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `request_out` (gets the id for
/// objstore_db_cancel, 0 on failure) and `error_out` (gets NULL, or on failure a message to
/// free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_refused_writes(
    db: *const ObjstoreDb,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.refused_writes(move |r| done.deliver(r))
    })
}

/// Resolves refused write `sequence` (from objstore_db_refused_writes), and every other
/// refused write of the same object with it: `resolution` "discard" (the bucket's version
/// wins) or "overwrite" (the local copy is sent over whatever the bucket holds; a refused
/// remove removes it); another word is OBJSTORE_STATUS_INVALID_ARGUMENT. The result is `null`.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db`, `resolution` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `request_out`
/// (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// `resolution` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_resolve(
    db: *const ObjstoreDb,
    sequence: u64,
    resolution: *const c_char,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, resolution) = (db_ref(db)?, Resolution::from_name(text(resolution, "resolution")?)?);
        let done = completion(done, user_data)?;
        db.resolve(sequence, resolution, move |r| done.deliver(r))
    })
}

/// Gets the sync state of the record under `key_json` in `store`, as a JSON string: "local"
/// (not a synced store), "pending", "refused", "synced", "unusable" (the bucket's version is
/// over the size cap or not JSON; an error event said so) or "unknown".
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db`, `store`, `key_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `key_json` is `key_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_sync_status(
    db: *const ObjstoreDb,
    store: *const c_char,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let key = json::key(&json(key_json, key_len, "key_json")?)?;
        let done = completion(done, user_data)?;
        db.sync_status(store, key, move |r| done.deliver(r))
    })
}

/// Takes back the writes to the record under `key_json` in `store` still waiting for the
/// bucket, and the local record with them (no delete is queued); the result is how many, as
/// JSON. For a caller that told its own client the write failed: it does not land later (a
/// send already under way may).
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db`, `store`, `key_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `key_json` is `key_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_withdraw_pending(
    db: *const ObjstoreDb,
    store: *const c_char,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let key = json::key(&json(key_json, key_len, "key_json")?)?;
        let done = completion(done, user_data)?;
        db.withdraw_pending(store, key, move |r| done.deliver(r))
    })
}
