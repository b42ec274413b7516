//! The `extern "C"` layer over `rsapi`: argument checks, handles, status codes and callbacks.
//!
//! Conventions (repeated in the header): a function that returns a status other than
//! `OBJSTORE_STATUS_OK` has done nothing and will not call its callback; one that returns
//! `OBJSTORE_STATUS_OK` calls its callback exactly once, from the database's worker thread (or, for a
//! request made after close, from a short-lived thread of the library), also on error, cancel
//! and close. The `result` a callback receives is UTF-8 JSON on success and an error message
//! otherwise, owned by the library and valid only during the call. No Rust panic crosses this
//! boundary: it becomes `OBJSTORE_STATUS_INTERNAL`.

// C signatures carry a callback, its user data and an error out-parameter besides the arguments.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use objstore_db_core::{Error, ErrorCode, Mode, Result};

use crate::rsapi::{stores_from, CursorReply, Db, JsonTx, QueryHandle, Within};

/// Status of a call or of a completed request.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreStatus {
    Ok = 0,
    /// An unknown store or index.
    NotFound = 1,
    /// A key that is not valid, or a record without its key.
    InvalidKey = 2,
    /// A bad argument: NULL, invalid UTF-8 or JSON, an unknown option.
    InvalidArgument = 3,
    /// A duplicate key or a unique-index clash; nothing was written.
    Constraint = 4,
    /// A write in a readonly transaction.
    ReadOnly = 5,
    /// The transaction has ended (committed, aborted, timed out).
    TransactionInactive = 6,
    /// The schema is invalid or changed without a higher version.
    Schema = 7,
    /// The database is closed.
    Closed = 8,
    /// The request was still queued when the database closed.
    Cancelled = 9,
    /// The storage (SQLite) failed.
    Storage = 10,
    /// A bug in objstore-db (a caught panic).
    Internal = 11,
    /// The bucket holds another version than a write assumed (HTTP 412); nothing was
    /// overwritten.
    Conflict = 12,
    /// The bucket could not be reached (refused, reset, timed out, 5xx after retries).
    Network = 13,
    /// The bucket refused the request (4xx other than 412).
    Remote = 14,
    /// The bucket answered with something unusable (malformed XML, not JSON, oversized).
    RemoteData = 15,
}

/// Transaction mode for `objstore_db_begin` and `objstore_db_transaction`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreMode {
    Readonly = 0,
    Readwrite = 1,
}

/// What a cursor visitor answers for the record it was shown.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreCursorStep {
    Continue = 0,
    Stop = 1,
    /// Delete this record, then continue.
    Delete = 2,
    /// Replace this record with the JSON the visitor put in `*update`, then continue.
    Update = 3,
}

/// Completion of a request: `result` is JSON (status OK) or an error message, `result_len`
/// bytes, NUL-terminated, valid only during the call.
pub type ObjstoreCallback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, status: ObjstoreStatus, result: *const c_char, result_len: usize),
>;

/// An event as JSON `{"kind", "store", "key", "value", "message"}`, valid during the call.
pub type ObjstoreEventFn = Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const c_char, event_len: usize)>;

/// A cursor visitor: `item` is `{"key", "primaryKey", "value"}` JSON. To update, set `*update`
/// and `*update_len` to the new record's JSON (copied before the visitor's next call) and
/// return `OBJSTORE_CURSOR_STEP_UPDATE`.
pub type ObjstoreCursorFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        item: *const c_char,
        item_len: usize,
        update: *mut *const c_char,
        update_len: *mut usize,
    ) -> ObjstoreCursorStep,
>;

/// The body of `objstore_db_transaction`, run on the worker with a transaction handle valid
/// only during the call. Returning anything but `OBJSTORE_STATUS_OK` rolls everything back.
pub type ObjstoreTxFn = Option<unsafe extern "C" fn(user_data: *mut c_void, tx: *mut ObjstoreTx) -> ObjstoreStatus>;

/// An open database (opaque). Valid from `objstore_db_open` until `objstore_db_free`; after
/// `objstore_db_close` requests complete with `OBJSTORE_STATUS_CLOSED`.
pub struct ObjstoreDb {
    db: Db,
}

/// A query whose `list` pages continue from call to call (opaque).
pub struct ObjstoreQuery {
    query: QueryHandle,
}

/// The transaction inside an `objstore_db_transaction` body (opaque).
pub struct ObjstoreTx {
    ops: *mut JsonTx<'static, 'static>,
}

pub(crate) fn status_of(error: &Error) -> ObjstoreStatus {
    match error.code() {
        ErrorCode::NotFound => ObjstoreStatus::NotFound,
        ErrorCode::InvalidKey => ObjstoreStatus::InvalidKey,
        ErrorCode::InvalidArgument => ObjstoreStatus::InvalidArgument,
        ErrorCode::Constraint => ObjstoreStatus::Constraint,
        ErrorCode::ReadOnly => ObjstoreStatus::ReadOnly,
        ErrorCode::TransactionInactive => ObjstoreStatus::TransactionInactive,
        ErrorCode::Schema => ObjstoreStatus::Schema,
        ErrorCode::Closed => ObjstoreStatus::Closed,
        ErrorCode::Cancelled => ObjstoreStatus::Cancelled,
        ErrorCode::Storage => ObjstoreStatus::Storage,
        ErrorCode::Internal => ObjstoreStatus::Internal,
        ErrorCode::Conflict => ObjstoreStatus::Conflict,
        ErrorCode::Network => ObjstoreStatus::Network,
        ErrorCode::Remote => ObjstoreStatus::Remote,
        ErrorCode::RemoteData => ObjstoreStatus::RemoteData,
    }
}

/// A callback and its user data, carried to the worker thread.
struct Completion {
    callback: unsafe extern "C" fn(*mut c_void, ObjstoreStatus, *const c_char, usize),
    user_data: *mut c_void,
}

// The caller promises, by passing user_data to an asynchronous call, that it may be used from
// the worker thread.
unsafe impl Send for Completion {}

impl Completion {
    fn deliver(self, result: Result<String>) {
        let (status, text) = match result {
            Ok(json) => (ObjstoreStatus::Ok, json),
            Err(e) => (status_of(&e), e.to_string()),
        };
        let text = CString::new(text).unwrap_or_else(|e| {
            let bytes: Vec<u8> = e.into_vec().into_iter().filter(|b| *b != 0).collect();
            CString::new(bytes).expect("NULs removed")
        });
        let len = text.as_bytes().len();
        // A C callback cannot unwind into Rust; catch_unwind covers Rust code around it.
        let _ =
            catch_unwind(AssertUnwindSafe(|| unsafe { (self.callback)(self.user_data, status, text.as_ptr(), len) }));
    }

    fn deliver_unit(self, result: Result<()>) {
        self.deliver(result.map(|()| "null".to_string()));
    }
}

fn completion(callback: ObjstoreCallback, user_data: *mut c_void) -> Result<Completion> {
    let callback = callback.ok_or_else(|| Error::InvalidArgument("the completion callback is NULL".into()))?;
    Ok(Completion { callback, user_data })
}

/// Writes an error message for a synchronous failure, if the caller asked for one.
fn fail(error: Error, error_out: *mut *mut c_char) -> ObjstoreStatus {
    if !error_out.is_null() {
        let text = CString::new(error.to_string().replace('\0', "")).expect("NULs removed");
        unsafe { *error_out = text.into_raw() };
    }
    status_of(&error)
}

/// Runs an entry point's body, turning errors and panics into a status (and message).
fn guard(error_out: *mut *mut c_char, body: impl FnOnce() -> Result<()>) -> ObjstoreStatus {
    if !error_out.is_null() {
        unsafe { *error_out = std::ptr::null_mut() };
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => ObjstoreStatus::Ok,
        Ok(Err(e)) => fail(e, error_out),
        Err(_) => fail(Error::Internal("a panic was caught at the C boundary".into()), error_out),
    }
}

unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    CStr::from_ptr(ptr).to_str().map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

unsafe fn optional_text<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        text(ptr, what).map(Some)
    }
}

unsafe fn json<'a>(ptr: *const c_char, len: usize, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    std::str::from_utf8(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
        .map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

unsafe fn optional_json<'a>(ptr: *const c_char, len: usize, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        json(ptr, len, what).map(Some)
    }
}

unsafe fn db_ref<'a>(db: *const ObjstoreDb) -> Result<&'a Db> {
    db.as_ref().map(|d| &d.db).ok_or_else(|| Error::InvalidArgument("the database handle is NULL".into()))
}

fn within(tx: u64) -> Within {
    (tx != 0).then_some(tx)
}

fn mode(mode: ObjstoreMode) -> Mode {
    match mode {
        ObjstoreMode::Readonly => Mode::ReadOnly,
        ObjstoreMode::Readwrite => Mode::ReadWrite,
    }
}

// ----- versions and strings ---------------------------------------------------------------------

/// The library version, e.g. "0.1.0" (static; do not free).
#[no_mangle]
pub extern "C" fn objstore_db_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library version as major * 1000000 + minor * 1000 + patch.
#[no_mangle]
pub extern "C" fn objstore_db_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 1_000_000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 1_000
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// Frees a string the library returned through an out parameter. Accepts NULL.
///
/// # Safety
/// `s` is NULL or a string from this library, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn objstore_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

/// A short, static name for a status, e.g. "OBJSTORE_STATUS_CONSTRAINT" (do not free).
#[no_mangle]
pub extern "C" fn objstore_status_name(status: ObjstoreStatus) -> *const c_char {
    let name: &'static str = match status {
        ObjstoreStatus::Ok => "OBJSTORE_STATUS_OK\0",
        ObjstoreStatus::NotFound => "OBJSTORE_STATUS_NOT_FOUND\0",
        ObjstoreStatus::InvalidKey => "OBJSTORE_STATUS_INVALID_KEY\0",
        ObjstoreStatus::InvalidArgument => "OBJSTORE_STATUS_INVALID_ARGUMENT\0",
        ObjstoreStatus::Constraint => "OBJSTORE_STATUS_CONSTRAINT\0",
        ObjstoreStatus::ReadOnly => "OBJSTORE_STATUS_READ_ONLY\0",
        ObjstoreStatus::TransactionInactive => "OBJSTORE_STATUS_TRANSACTION_INACTIVE\0",
        ObjstoreStatus::Schema => "OBJSTORE_STATUS_SCHEMA\0",
        ObjstoreStatus::Closed => "OBJSTORE_STATUS_CLOSED\0",
        ObjstoreStatus::Cancelled => "OBJSTORE_STATUS_CANCELLED\0",
        ObjstoreStatus::Storage => "OBJSTORE_STATUS_STORAGE\0",
        ObjstoreStatus::Internal => "OBJSTORE_STATUS_INTERNAL\0",
        ObjstoreStatus::Conflict => "OBJSTORE_STATUS_CONFLICT\0",
        ObjstoreStatus::Network => "OBJSTORE_STATUS_NETWORK\0",
        ObjstoreStatus::Remote => "OBJSTORE_STATUS_REMOTE\0",
        ObjstoreStatus::RemoteData => "OBJSTORE_STATUS_REMOTE_DATA\0",
    };
    name.as_ptr().cast()
}

// ----- open and close ---------------------------------------------------------------------------

/// Opens (creating if needed) the database `name` (a file path for the sqlite mechanism) and
/// stores its handle in `*db_out`. `schema_json` and `options_json` are NUL-terminated and may
/// be NULL; options: `{"mechanism": "sqlite"|"memory", "idleTransactionTimeoutMs": n}`.
/// `on_open` fires once with the outcome. Requests may be made at once: they run after the
/// open, or fail with its error. Free the handle with `objstore_db_free`.
///
/// # Safety
/// Pointers are NULL or valid NUL-terminated strings; `db_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_open(
    name: *const c_char,
    schema_json: *const c_char,
    options_json: *const c_char,
    on_open: ObjstoreCallback,
    user_data: *mut c_void,
    db_out: *mut *mut ObjstoreDb,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        if db_out.is_null() {
            return Err(Error::InvalidArgument("db_out is NULL".into()));
        }
        *db_out = std::ptr::null_mut();
        let name = text(name, "name")?;
        let schema = optional_text(schema_json, "schema_json")?;
        let options = optional_text(options_json, "options_json")?;
        let done = completion(on_open, user_data)?;
        let db = Db::open(name, schema, options, move |r| done.deliver_unit(r))?;
        *db_out = Box::into_raw(Box::new(ObjstoreDb { db }));
        Ok(())
    })
}

/// Closes the database: queued requests complete with `OBJSTORE_STATUS_CANCELLED`, an open
/// transaction rolls back, and `done` fires once the file is closed. The handle stays valid
/// (requests on it complete with `OBJSTORE_STATUS_CLOSED`) until `objstore_db_free`.
///
/// # Safety
/// `db` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_close(
    db: *mut ObjstoreDb,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let db = db_ref(db)?;
        let done = completion(done, user_data)?;
        db.close(move |r| done.deliver_unit(r));
        Ok(())
    })
}

/// Frees a handle (closing the database first if needed, and waiting for that). Accepts NULL.
/// Must not be called from a callback of the same database.
///
/// # Safety
/// `db` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_free(db: *mut ObjstoreDb) {
    if !db.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(db))));
    }
}

// ----- operations ---------------------------------------------------------------------------------

/// Submits a JSON operation on one store, in transaction `tx` (0: a transaction of its own).
/// `prepare` reads the call's own arguments (inside the guard) and returns the operation.
unsafe fn submit_op<Op>(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    write: bool,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
    prepare: impl FnOnce() -> Result<Op>,
) -> ObjstoreStatus
where
    Op: FnOnce(&mut JsonTx, &str) -> Result<String> + Send + 'static,
{
    guard(error_out, || {
        let db = db_ref(db)?;
        let store = text(store, "store")?.to_string();
        let op = prepare()?;
        let done = completion(done, user_data)?;
        let mode = if write { Mode::ReadWrite } else { Mode::ReadOnly };
        let name = store.clone();
        db.run(within(tx), vec![store], mode, move |t| op(t, &name), move |r| done.deliver(r));
        Ok(())
    })
}

/// Writes a record (JSON, `value_len` bytes), replacing any with the same key; the result is
/// the key as JSON. `key_json` is NULL for stores with an inline key path or generated keys.
///
/// # Safety
/// Pointers are NULL or valid for the lengths given; strings are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_put(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    value_json: *const c_char,
    value_len: usize,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    put_or_add(db, tx, store, value_json, value_len, key_json, key_len, done, user_data, error_out, false)
}

/// Like `objstore_db_put`, but an existing key or unique-index clash completes with
/// `OBJSTORE_STATUS_CONSTRAINT` and writes nothing.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_add(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    value_json: *const c_char,
    value_len: usize,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    put_or_add(db, tx, store, value_json, value_len, key_json, key_len, done, user_data, error_out, true)
}

unsafe fn put_or_add(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    value_json: *const c_char,
    value_len: usize,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
    add: bool,
) -> ObjstoreStatus {
    submit_op(db, tx, store, true, done, user_data, error_out, || {
        let value = json(value_json, value_len, "value_json")?.to_string();
        let key = optional_json(key_json, key_len, "key_json")?.map(str::to_string);
        Ok(
            move |t: &mut JsonTx, s: &str| {
                if add {
                    t.add(s, &value, key.as_deref())
                } else {
                    t.put(s, &value, key.as_deref())
                }
            },
        )
    })
}

/// Reads the record under `key_json`; the result is the record, or `null`.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_get(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    key_json: *const c_char,
    key_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let store = text(store, "store")?.to_string();
        let key = json(key_json, key_len, "key_json")?.to_string();
        let done = completion(done, user_data)?;
        handle.get(within(tx), store, key, move |r| done.deliver(r));
        Ok(())
    })
}

/// Removes the record under a key, or the records in a key range (`{"lower": .., "upper": ..,
/// "lowerOpen"?, "upperOpen"?}`, `{"only": k}`, `{"starts": prefix}`); the result is how many.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_remove(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    key_or_range_json: *const c_char,
    len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    submit_op(db, tx, store, true, done, user_data, error_out, || {
        let target = json(key_or_range_json, len, "key_or_range_json")?.to_string();
        Ok(move |t: &mut JsonTx, s: &str| t.remove(s, &target))
    })
}

/// Removes every record of the store; the result is `null`.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_clear(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    submit_op(db, tx, store, true, done, user_data, error_out, || Ok(|t: &mut JsonTx, s: &str| t.clear(s)))
}

/// The kinds of read that take scan options.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreRead {
    /// The number of records (or distinct index keys with `unique`).
    Count = 0,
    /// Primary keys, as a JSON array.
    Keys = 1,
    /// Records, as a JSON array.
    Values = 2,
}

/// Reads from a store with optional scan options `{"index", "range", "limit", "offset",
/// "reverse", "unique"}` (NULL: the whole store in key order).
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_read(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    read: ObjstoreRead,
    scan_json: *const c_char,
    scan_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    submit_op(db, tx, store, false, done, user_data, error_out, || {
        let scan = optional_json(scan_json, scan_len, "scan_json")?.map(str::to_string);
        Ok(move |t: &mut JsonTx, s: &str| read_with(t, s, read, scan.as_deref()))
    })
}

fn read_with(t: &mut JsonTx, store: &str, read: ObjstoreRead, scan: Option<&str>) -> Result<String> {
    match read {
        ObjstoreRead::Count => t.count(store, scan),
        ObjstoreRead::Keys => t.keys(store, scan),
        ObjstoreRead::Values => t.values(store, scan),
    }
}

/// The records under a JSON array of keys, in that order, `null` where missing. Outside a
/// transaction, a synced store fetches what its cache cannot serve, in parallel.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_values_of(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    keys_json: *const c_char,
    keys_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let store = text(store, "store")?.to_string();
        let keys = json(keys_json, keys_len, "keys_json")?.to_string();
        let done = completion(done, user_data)?;
        handle.values_of(within(tx), store, keys, move |r| done.deliver(r));
        Ok(())
    })
}

// ----- sync -------------------------------------------------------------------------------------

/// Sends the writes waiting in the outbox, in order. The result is `{"sent": n, "pending": n,
/// "rejected": [{"sequence", "status", "message"}]}`; an unreachable bucket completes with
/// `OBJSTORE_STATUS_NETWORK` and the writes keep waiting.
///
/// # Safety
/// `db` is a handle from `objstore_db_open` (or NULL); `error_out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_flush(
    db: *const ObjstoreDb,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let done = completion(done, user_data)?;
        handle.flush(move |r| done.deliver(r));
        Ok(())
    })
}

/// Requests made to buckets so far: `{"requests": {"GET": {"200": n, ...}, ...}, "total": n,
/// "bytesSent": n, "bytesReceived": n, "costUsd": x}` (status 0: no answer). With `reset`, the
/// counts start again from zero.
///
/// # Safety
/// As `objstore_db_flush`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_sync_stats(
    db: *const ObjstoreDb,
    reset: bool,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let done = completion(done, user_data)?;
        handle.sync_stats(reset, move |r| done.deliver(r));
        Ok(())
    })
}

/// Lists a synced store's objects now and brings its local copy in line; the result is `null`.
///
/// # Safety
/// As `objstore_db_flush`; `store` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_prefetch(
    db: *const ObjstoreDb,
    store: *const c_char,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let store = text(store, "store")?.to_string();
        let done = completion(done, user_data)?;
        handle.prefetch(store, move |r| done.deliver_unit(r));
        Ok(())
    })
}

/// Offline, the database makes no requests: reads of synced stores serve the cache and writes
/// wait in the outbox. The result is `null`.
///
/// # Safety
/// As `objstore_db_flush`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_set_offline(
    db: *const ObjstoreDb,
    offline: bool,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let handle = db_ref(db)?;
        let done = completion(done, user_data)?;
        handle.set_offline(offline, move |r| done.deliver_unit(r));
        Ok(())
    })
}

/// Runs one SQL statement with a JSON array of parameters (NULL: none). The result is
/// `{"rows": [...]}` for SELECT and `{"changed": n}` otherwise. `store` names the store the
/// statement touches (its transaction scope).
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_sql(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    sql: *const c_char,
    params_json: *const c_char,
    params_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    submit_op(db, tx, store, true, done, user_data, error_out, || {
        let sql = text(sql, "sql")?.to_string();
        let params = optional_json(params_json, params_len, "params_json")?.map(str::to_string);
        Ok(move |t: &mut JsonTx, _: &str| t.sql(&sql, params.as_deref()))
    })
}

// ----- transactions ---------------------------------------------------------------------------------

/// Starts an explicit transaction over a JSON array of store names; the result is its id (a
/// JSON number) to pass as `tx` to operations, then to `objstore_db_commit` or
/// `objstore_db_abort`. Other requests wait while it is open; one idle longer than the
/// database's timeout is aborted.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_begin(
    db: *const ObjstoreDb,
    stores_json: *const c_char,
    stores_len: usize,
    mode_: ObjstoreMode,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let db = db_ref(db)?;
        let stores = stores_from(json(stores_json, stores_len, "stores_json")?)?;
        let done = completion(done, user_data)?;
        db.begin(stores, mode(mode_), move |r| done.deliver(r.map(|id| id.to_string())));
        Ok(())
    })
}

/// Commits transaction `tx`; change events follow.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_commit(
    db: *const ObjstoreDb,
    tx: u64,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let done = completion(done, user_data)?;
        db_ref(db)?.commit(tx, move |r| done.deliver_unit(r));
        Ok(())
    })
}

/// Rolls back transaction `tx`.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_abort(
    db: *const ObjstoreDb,
    tx: u64,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let done = completion(done, user_data)?;
        db_ref(db)?.abort(tx, move |r| done.deliver_unit(r));
        Ok(())
    })
}

/// Runs `body` on the worker thread inside one transaction over the stores named (a JSON
/// array); within it, the `objstore_tx_*` functions work synchronously. The transaction
/// commits when `body` returns `OBJSTORE_STATUS_OK` and rolls back otherwise; `done` gets `null` or
/// the error.
///
/// # Safety
/// As `objstore_db_put`; `body_data` is passed to `body` on the worker thread.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_transaction(
    db: *const ObjstoreDb,
    stores_json: *const c_char,
    stores_len: usize,
    mode_: ObjstoreMode,
    body: ObjstoreTxFn,
    body_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    struct Body(unsafe extern "C" fn(*mut c_void, *mut ObjstoreTx) -> ObjstoreStatus, *mut c_void);
    unsafe impl Send for Body {}
    guard(error_out, || {
        let db = db_ref(db)?;
        let stores = stores_from(json(stores_json, stores_len, "stores_json")?)?;
        let body = Body(body.ok_or_else(|| Error::InvalidArgument("the transaction body is NULL".into()))?, body_data);
        let done = completion(done, user_data)?;
        db.run(
            None,
            stores,
            mode(mode_),
            move |t| {
                let body = body;
                // The handle lives only during the call; the lifetimes are erased for C.
                let mut handle = ObjstoreTx { ops: (t as *mut JsonTx).cast() };
                match (body.0)(body.1, &mut handle) {
                    ObjstoreStatus::Ok => Ok("null".to_string()),
                    status => Err(Error::InvalidArgument(format!(
                        "the transaction body returned {}; everything it did was rolled back",
                        CStr::from_ptr(objstore_status_name(status)).to_string_lossy()
                    ))),
                }
            },
            move |r| done.deliver(r),
        );
        Ok(())
    })
}

/// Runs one synchronous operation inside a transaction body.
unsafe fn tx_op(
    tx: *mut ObjstoreTx,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
    op: impl FnOnce(&mut JsonTx) -> Result<String>,
) -> ObjstoreStatus {
    if !result_out.is_null() {
        *result_out = std::ptr::null_mut();
    }
    guard(error_out, || {
        let tx = tx.as_mut().ok_or_else(|| Error::InvalidArgument("the transaction handle is NULL".into()))?;
        let ops = &mut *tx.ops;
        let result = op(ops)?;
        if !result_out.is_null() {
            if !result_len.is_null() {
                *result_len = result.len();
            }
            *result_out =
                CString::new(result).map_err(|_| Error::Internal("a result held a NUL byte".into()))?.into_raw();
        }
        Ok(())
    })
}

/// Inside a transaction body: writes a record; `*result_out` (free with
/// `objstore_string_free`; may be NULL to ignore) receives the key as JSON.
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
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |t| {
        t.put(
            text(store, "store")?,
            json(value_json, value_len, "value_json")?,
            optional_json(key_json, key_len, "key_json")?,
        )
    })
}

/// Inside a transaction body: reads the record under a key (`null` if none).
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
    tx_op(tx, result_out, result_len, error_out, |t| t.get(text(store, "store")?, json(key_json, key_len, "key_json")?))
}

/// Inside a transaction body: removes by key or key range; the result is how many.
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
    tx_op(tx, result_out, result_len, error_out, |t| {
        t.remove(text(store, "store")?, json(key_or_range_json, len, "key_or_range_json")?)
    })
}

/// Inside a transaction body: count, keys or values with optional scan options.
///
/// # Safety
/// As `objstore_tx_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_tx_read(
    tx: *mut ObjstoreTx,
    store: *const c_char,
    read: ObjstoreRead,
    scan_json: *const c_char,
    scan_len: usize,
    result_out: *mut *mut c_char,
    result_len: *mut usize,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    tx_op(tx, result_out, result_len, error_out, |t| {
        read_with(t, text(store, "store")?, read, optional_json(scan_json, scan_len, "scan_json")?)
    })
}

/// Inside a transaction body: one SQL statement with JSON parameters (NULL: none).
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
    tx_op(tx, result_out, result_len, error_out, |t| {
        t.sql(text(sql, "sql")?, optional_json(params_json, params_len, "params_json")?)
    })
}

// ----- queries and cursors ------------------------------------------------------------------------

/// Makes a query from its JSON spec `{"from": store, "where"?: [[field, op, value], ...],
/// "order"?: field or [fields], "reverse"?, "unique"?, "select"?: [fields]}` (ops: =, <, <=,
/// >, >=, starts). Spec errors are reported here. Free with `objstore_query_free`.
///
/// # Safety
/// As `objstore_db_put`; `query_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_new(
    db: *const ObjstoreDb,
    spec_json: *const c_char,
    spec_len: usize,
    query_out: *mut *mut ObjstoreQuery,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        if query_out.is_null() {
            return Err(Error::InvalidArgument("query_out is NULL".into()));
        }
        *query_out = std::ptr::null_mut();
        let query = db_ref(db)?.query(json(spec_json, spec_len, "spec_json")?)?;
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

unsafe fn query_ref<'a>(query: *const ObjstoreQuery) -> Result<&'a QueryHandle> {
    query.as_ref().map(|q| &q.query).ok_or_else(|| Error::InvalidArgument("the query handle is NULL".into()))
}

/// The next `n` matching records as a JSON array: each call resumes after the last record the
/// previous one returned; an empty array means the end.
///
/// # Safety
/// `query` is a live query; other pointers as in `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_list(
    query: *const ObjstoreQuery,
    tx: u64,
    n: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let done = completion(done, user_data)?;
        query_ref(query)?.list(within(tx), n, move |r| done.deliver(r));
        Ok(())
    })
}

/// What `objstore_query_run` does with a query.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreQueryAction {
    /// How many records match (a JSON number).
    Count = 0,
    /// The plan, as a JSON string.
    Explain = 1,
    /// Removes every match; how many (a JSON number).
    Delete = 2,
}

/// Counts, explains or deletes the query's matches.
///
/// # Safety
/// As `objstore_query_list`.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_run(
    query: *const ObjstoreQuery,
    tx: u64,
    action: ObjstoreQueryAction,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let q = query_ref(query)?;
        let done = completion(done, user_data)?;
        let deliver = move |r| done.deliver(r);
        match action {
            ObjstoreQueryAction::Count => q.count(within(tx), deliver),
            ObjstoreQueryAction::Explain => q.explain(within(tx), deliver),
            ObjstoreQueryAction::Delete => q.delete(within(tx), deliver),
        }
        Ok(())
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
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let q = query_ref(query)?;
        let patch = json(patch_json, patch_len, "patch_json")?.to_string();
        let done = completion(done, user_data)?;
        q.patch(within(tx), patch, move |r| done.deliver(r));
        Ok(())
    })
}

/// Streams every match, one at a time, to `visit` on the worker thread, which may update or
/// delete it (in a readwrite transaction) or stop. `done` gets the number visited. Memory
/// stays flat when an index or the primary key gives the order.
///
/// # Safety
/// As `objstore_query_list`; `visit_data` is passed to `visit` on the worker thread.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_open(
    query: *const ObjstoreQuery,
    tx: u64,
    mode_: ObjstoreMode,
    visit: ObjstoreCursorFn,
    visit_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    struct Visitor(
        unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut *const c_char, *mut usize) -> ObjstoreCursorStep,
        *mut c_void,
    );
    unsafe impl Send for Visitor {}
    guard(error_out, || {
        let q = query_ref(query)?;
        let visitor =
            Visitor(visit.ok_or_else(|| Error::InvalidArgument("the cursor visitor is NULL".into()))?, visit_data);
        let done = completion(done, user_data)?;
        q.open_cursor(
            within(tx),
            mode(mode_),
            move |item| {
                let visitor = &visitor;
                let item = CString::new(item).expect("JSON holds no NUL byte");
                let (mut update, mut update_len): (*const c_char, usize) = (std::ptr::null(), 0);
                match (visitor.0)(visitor.1, item.as_ptr(), item.as_bytes().len(), &mut update, &mut update_len) {
                    ObjstoreCursorStep::Continue => CursorReply::Continue,
                    ObjstoreCursorStep::Stop => CursorReply::Stop,
                    ObjstoreCursorStep::Delete => CursorReply::Delete,
                    ObjstoreCursorStep::Update => match json(update, update_len, "cursor update") {
                        Ok(value) => CursorReply::Update(value.to_string()),
                        Err(e) => CursorReply::Fail(e.to_string()),
                    },
                }
            },
            move |r| done.deliver(r),
        );
        Ok(())
    })
}

// ----- events ---------------------------------------------------------------------------------------

/// Subscribes `listener` to events (filter JSON `{"kinds"?: [...], "store"?: name}`, NULL:
/// all). The listener runs on the worker thread until unsubscribed or the database closes;
/// `done` gets the subscription id (a JSON number).
///
/// # Safety
/// As `objstore_db_put`; `listener_data` is passed to `listener` on the worker thread.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_subscribe(
    db: *const ObjstoreDb,
    filter_json: *const c_char,
    filter_len: usize,
    listener: ObjstoreEventFn,
    listener_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    struct Listener(unsafe extern "C" fn(*mut c_void, *const c_char, usize), *mut c_void);
    unsafe impl Send for Listener {}
    guard(error_out, || {
        let db = db_ref(db)?;
        let filter = optional_json(filter_json, filter_len, "filter_json")?;
        let listener =
            Listener(listener.ok_or_else(|| Error::InvalidArgument("the listener is NULL".into()))?, listener_data);
        let done = completion(done, user_data)?;
        db.subscribe(
            filter,
            move |event| {
                let listener = &listener;
                let event = CString::new(event).expect("JSON holds no NUL byte");
                (listener.0)(listener.1, event.as_ptr(), event.as_bytes().len());
            },
            move |r| done.deliver(r.map(|id| id.to_string())),
        )
    })
}

/// Ends a subscription; the result is `true`, or `false` if there was none with that id.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_unsubscribe(
    db: *const ObjstoreDb,
    subscription: u64,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    guard(error_out, || {
        let done = completion(done, user_data)?;
        db_ref(db)?.unsubscribe(subscription, move |r| done.deliver(r.map(|b| b.to_string())));
        Ok(())
    })
}
