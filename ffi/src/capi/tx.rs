//! Transactions: explicit ones (begin, commit, abort: their id is the `tx` argument of every
//! request) and transaction bodies (`objstore_db_transaction`) with the synchronous
//! `objstore_tx_*` operations inside them.

use super::*;

/// Starts an explicit transaction over `stores_json` (a JSON array of store names, or one
/// name) in `mode_` (OBJSTORE_MODE_READONLY or OBJSTORE_MODE_READWRITE; another value is
/// OBJSTORE_STATUS_INVALID_ARGUMENT); the result is its id (a JSON number), to pass as `tx` to
/// requests and to objstore_db_commit or objstore_db_abort. It starts when the transaction
/// open now (if any) ends. While it is open, requests outside it wait for it to end; one left
/// without a request for the idle timeout (option idleTransactionTimeoutMs, 30 s by default)
/// is aborted.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A thread that holds the transaction must not wait for a request made outside it.
/// A NULL `db`, `stores_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `stores_json` is `stores_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_begin(
    db: *const ObjstoreDb,
    stores_json: *const c_char,
    stores_len: usize,
    mode_: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let db = db_ref(db)?;
        let (stores, mode) = (json::stores(&json(stores_json, stores_len, "stores_json")?)?, mode(mode_)?);
        let done = completion(done, user_data)?;
        db.begin(stores, mode, move |r| done.deliver(r))
    })
}

/// Commits transaction `tx` (an id from objstore_db_begin); the result is `null`.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_commit(
    db: *const ObjstoreDb,
    tx: u64,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.commit(tx, move |r| done.deliver(r))
    })
}

/// Rolls back transaction `tx` (an id from objstore_db_begin); the result is `null`.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_abort(
    db: *const ObjstoreDb,
    tx: u64,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.abort(tx, move |r| done.deliver(r))
    })
}

/// Runs `body` inside one transaction over `stores_json` (a JSON array of store names, or one
/// name) in `mode_` (OBJSTORE_MODE_READONLY or OBJSTORE_MODE_READWRITE; another value is
/// OBJSTORE_STATUS_INVALID_ARGUMENT); inside it the objstore_tx_* functions work
/// synchronously. The transaction commits when `body` returns 0 (OBJSTORE_STATUS_OK) and rolls
/// back otherwise. `done` gets `null`, or the error: for a body that returned a status, that
/// status, with the message of the last objstore_tx_* call when it failed with the same status
/// (a number that is no status gives OBJSTORE_STATUS_ABORTED, the message naming it;
/// OBJSTORE_STATUS_INVALID_ARGUMENT is kept for what the caller passed).
/// `stores_json` is read during the call and not kept; the `tx` handle given to `body` and the
/// callback's `result` are owned by the library and valid only during that call.
/// If this returns OBJSTORE_STATUS_OK, `body` runs at most once (not when the request fails or
/// is cancelled before it runs), then `done` exactly once; never otherwise. Both run on the
/// database's worker thread, never inside this call.
/// Other requests of this database wait while `body` runs: it must not wait for one of them,
/// nor free the database.
/// A NULL `db`, `stores_json`, `body` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `stores_json` is `stores_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_transaction(
    db: *const ObjstoreDb,
    stores_json: *const c_char,
    stores_len: usize,
    mode_: u32,
    body: ObjstoreTxFn,
    body_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    struct Body(unsafe extern "C" fn(*mut c_void, *mut ObjstoreTx) -> i32, *mut c_void);
    unsafe impl Send for Body {}
    request(error_out, request_out, || {
        let db = db_ref(db)?;
        let (stores, mode) = (json::stores(&json(stores_json, stores_len, "stores_json")?)?, mode(mode_)?);
        let body = Body(body.ok_or_else(|| Error::InvalidArgument("the transaction body is NULL".into()))?, body_data);
        let done = completion(done, user_data)?;
        let run = move |ops: &mut TxOps| {
            let body = body;
            // The handle lives only during the call; the lifetimes are erased for C.
            let mut handle = ObjstoreTx { ops: (ops as *mut TxOps).cast(), failed: None };
            let status = (body.0)(body.1, &mut handle);
            if status == 0 {
                return Ok(());
            }
            // The body's status is the outcome: with the error of the operation that gave it,
            // when one did.
            let name = CStr::from_ptr(objstore_status_name(status)).to_string_lossy();
            let message = match handle.failed {
                Some((failed, why)) if failed == status => {
                    format!("{why}; the transaction body returned {name}, so everything it did was rolled back")
                }
                _ => format!("the transaction body returned {name} ({status}); everything it did was rolled back"),
            };
            // A number that is no error code is the body's own: its code says only that it
            // was cancelled (the C status, ABORTED or the number it names, is `status`).
            Err(Error::Aborted { code: code_of_status(status).unwrap_or(ErrorCode::Cancelled), status, message })
        };
        db.run_body(stores, mode, run, move |r| done.deliver(r))
    })
}

/// Runs one synchronous operation inside a transaction body; its result (JSON) goes to
/// `*result_out` when that is not NULL (free it with objstore_string_free).
unsafe fn tx_op<T: IntoJson>(
    tx: *mut ObjstoreTx,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
    op: impl FnOnce(&mut TxOps) -> Result<T>,
) -> ObjstoreStatus {
    if !result_out.is_null() {
        *result_out = std::ptr::null_mut();
    }
    call(error_out, || {
        let tx = tx.as_mut().ok_or_else(|| Error::InvalidArgument("the transaction handle is NULL".into()))?;
        let result =
            json::text(op(&mut *tx.ops).inspect_err(|e| tx.failed = Some((status_of(e) as i32, e.to_string())))?);
        if !result_out.is_null() {
            if !result_len.is_null() {
                *result_len = result.len();
            }
            *result_out = c_string(result).into_raw();
        }
        Ok(())
    })
}

/// Inside a transaction body: writes a record (JSON) into `store`, replacing any under the
/// same key (`add` false), or only a new one (`add` true: an existing key or a unique-index
/// clash is OBJSTORE_STATUS_CONSTRAINT). The result is the record's key.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `key_json` NULL (or JSON null): no key given, for stores with an inline key path or
/// generated keys. `result_out` and `result_len` may be NULL (not wanted). A NULL `tx`,
/// `store` or `value_json` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// JSON arguments are `*_len` bytes, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_put(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    value_json: *const c_char,
    value_len: usize,
    key_json: *const c_char,
    key_len: usize,
    add: bool,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        let store = text(store, "store")?;
        let value = record(value_json, value_len, "value_json")?;
        let key = json::optional_key(optional_json(key_json, key_len, "key_json")?.as_ref())?;
        if add {
            ops.add(store, value, key)
        } else {
            ops.put(store, value, key)
        }
    })
}

/// Inside a transaction body: reads the record under `key_json` in `store`; the result is the
/// record, or `null` if there is none.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `result_out` and `result_len` may be NULL (not wanted). A NULL `tx`, `store` or `key_json`
/// is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on failure a message to
/// free with objstore_string_free) may be NULL.
/// `key_json` is `key_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_get(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    key_json: *const c_char,
    key_len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        ops.get(text(store, "store")?, &json::key(&json(key_json, key_len, "key_json")?)?)
    })
}

/// Inside a transaction body: reads the records under `keys_json`, a JSON array of keys; the
/// result is an array of the records, `null` where there is none.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `result_out` and `result_len` may be NULL (not wanted). A NULL `tx`, `store` or `keys_json`
/// is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on failure a message to
/// free with objstore_string_free) may be NULL.
/// `keys_json` is `keys_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_values_of(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    keys_json: *const c_char,
    keys_len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        ops.values_of(text(store, "store")?, &json::keys(&json(keys_json, keys_len, "keys_json")?)?)
    })
}

/// Inside a transaction body: removes the record under a key, or the records in a key range
/// (`{"lower": .., "upper": .., "lowerOpen"?, "upperOpen"?}`, `{"only": k}`, `{"starts":
/// prefix}`), of `store`; the result is how many were removed.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `result_out` and `result_len` may be NULL (not wanted). A NULL `tx`, `store` or
/// `key_or_range_json` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// `key_or_range_json` is `len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_remove(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    key_or_range_json: *const c_char,
    len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        ops.remove(text(store, "store")?, &json::target(&json(key_or_range_json, len, "key_or_range_json")?)?)
    })
}

/// Inside a transaction body: removes every record of `store`.
/// Arguments are read during the call and not kept.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// A NULL `tx` or `store` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_clear(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, std::ptr::null_mut(), std::ptr::null_mut(), error_out, |ops| ops.clear(text(store, "store")?))
}

/// Inside a transaction body: counts the records of a store or index (`kind`
/// OBJSTORE_READ_COUNT: a number), lists their primary keys (OBJSTORE_READ_KEYS: an array) or
/// reads them (OBJSTORE_READ_VALUES: an array of records); another `kind` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT. `scan_json`: `{"index"?, "range"?, "limit"?, "offset"?,
/// "reverse"?, "unique"?}`, a range as objstore_db_read takes it.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `scan_json` NULL: the whole store. `result_out` and `result_len` may be NULL (not wanted).
/// A NULL `tx` or `store` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// `scan_json` is `scan_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_read(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    kind: u32,
    scan_json: *const c_char,
    scan_len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        let (store, kind) = (text(store, "store")?, read_kind(kind)?);
        ops.read(store, kind, &json::scan(optional_json(scan_json, scan_len, "scan_json")?.as_ref())?)
    })
}

/// Inside a transaction body: runs one SQL statement with bound parameters (`params_json`: a
/// JSON array). The result is `{"rows": [...]}` for a SELECT, with `"columns"` (the names it
/// selects, in order) and `"aggregate"` (true for COUNT/MIN/MAX/SUM/AVG: one row) unless it is
/// `SELECT *`, and `{"changed": n}` (records written) for INSERT, UPDATE and DELETE.
/// Arguments are read during the call and not kept. `*result_out` gets the result as
/// NUL-terminated JSON (NULL on failure), to free with objstore_string_free; `*result_len` its
/// length in bytes.
/// Synchronous: call it only inside an objstore_db_transaction body, on its thread, with the
/// handle it was given (invalid once the body returns).
/// `params_json` NULL: no parameters. `result_out` and `result_len` may be NULL (not wanted).
/// A NULL `tx` or `sql` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
/// `params_json` is `params_len` bytes of JSON, no NUL needed; `sql` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_sql(
    tx: *mut ObjstoreTx,
    sql: *const c_char,
    params_json: *const c_char,
    params_len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |ops| {
        ops.sql(text(sql, "sql")?, &json::sql_params(optional_json(params_json, params_len, "params_json")?.as_ref())?)
    })
}
