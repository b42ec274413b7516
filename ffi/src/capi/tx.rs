//! Transactions: explicit ones (begin, commit, abort: their id is the `tx` argument of every
//! request) and transaction bodies (`objstore_db_transaction`) with the synchronous
//! `objstore_tx_*` operations inside them.

use super::*;

/// Starts an explicit transaction over the stores named (a JSON array or one name) in `mode`
/// (OBJSTORE_MODE_*); the result is its id (a JSON number) to pass as `tx`. It starts when
/// the transaction open now (if any) ends. While it is open, requests outside it wait for it
/// to end (so a thread holding it must not wait on one of those); one left without a request
/// for the idle timeout is aborted.
///
/// # Safety
/// As `objstore_db_put`.
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
        let (stores, mode) = (json(stores_json, stores_len, "stores_json")?, mode(mode_)?);
        let done = completion(done, user_data)?;
        db.begin(&stores, mode, move |r| done.deliver(r))
    })
}

/// Commits transaction `tx`; the result is `null`.
///
/// # Safety
/// As `objstore_db_put`.
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
        db.commit(tx, move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// Rolls back transaction `tx`; the result is `null`.
///
/// # Safety
/// As `objstore_db_put`.
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
        db.abort(tx, move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// Runs `body` on the worker thread inside one transaction over the stores named (a JSON
/// array); within it, the `objstore_tx_*` functions work synchronously. The transaction
/// commits when `body` returns 0 and rolls back otherwise; `done` gets `null` or the error.
///
/// # Safety
/// As `objstore_db_put`; `body_data` is passed to `body` on the worker thread.
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
        let (stores, mode) = (json(stores_json, stores_len, "stores_json")?, mode(mode_)?);
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
            Err(Error::Aborted { code: code_of_status(status).unwrap_or(ErrorCode::InvalidArgument), message })
        };
        db.run_body(&stores, mode, run, move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// Runs one synchronous operation inside a transaction body; its result (JSON) goes to
/// `*result_out` when that is not NULL (free it with objstore_string_free).
unsafe fn tx_op(
    tx: *mut ObjstoreTx,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
    op: impl FnOnce(&mut TxOps) -> Result<Value>,
) -> ObjstoreStatus {
    if !result_out.is_null() {
        *result_out = std::ptr::null_mut();
    }
    call(error_out, || {
        let tx = tx.as_mut().ok_or_else(|| Error::InvalidArgument("the transaction handle is NULL".into()))?;
        let result =
            op(&mut *tx.ops).inspect_err(|e| tx.failed = Some((status_of(e) as i32, e.to_string())))?.to_string();
        if !result_out.is_null() {
            if !result_len.is_null() {
                *result_len = result.len();
            }
            *result_out = c_string(result).into_raw();
        }
        Ok(())
    })
}

/// Inside a transaction body: writes a record (`add` nonzero: only a new one); the key goes to
/// `*result_out`.
///
/// # Safety
/// `tx` is the handle passed to the body; other pointers as in `objstore_db_put`.
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
        let value = json(value_json, value_len, "value_json")?;
        let key = optional_json(key_json, key_len, "key_json")?;
        if add {
            ops.add(store, value, key.as_ref())
        } else {
            ops.put(store, value, key.as_ref())
        }
    })
}

/// Inside a transaction body: the record under a key (`null` if none).
///
/// # Safety
/// As `objstore_tx_put`.
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
        ops.get(text(store, "store")?, &json(key_json, key_len, "key_json")?)
    })
}

/// Inside a transaction body: the records under a JSON array of keys.
///
/// # Safety
/// As `objstore_tx_put`.
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
        ops.values_of(text(store, "store")?, &json(keys_json, keys_len, "keys_json")?)
    })
}

/// Inside a transaction body: removes by key or key range; the count goes to `*result_out`.
///
/// # Safety
/// As `objstore_tx_put`.
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
        ops.remove(text(store, "store")?, &json(key_or_range_json, len, "key_or_range_json")?)
    })
}

/// Inside a transaction body: removes every record of the store.
///
/// # Safety
/// As `objstore_tx_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_clear(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, std::ptr::null_mut(), std::ptr::null_mut(), error_out, |ops| ops.clear(text(store, "store")?))
}

/// Inside a transaction body: as `objstore_db_read`.
///
/// # Safety
/// As `objstore_tx_put`.
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
        ops.read(store, kind, optional_json(scan_json, scan_len, "scan_json")?.as_ref())
    })
}

/// Inside a transaction body: runs SQL as `objstore_db_sql`.
///
/// # Safety
/// As `objstore_tx_put`.
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
        ops.sql(text(sql, "sql")?, optional_json(params_json, params_len, "params_json")?.as_ref())
    })
}
