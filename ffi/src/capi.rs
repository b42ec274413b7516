//! The `extern "C"` layer over `rsapi`: argument checks, handles, status codes and callbacks.
//! Every entry point goes through `call` (the guard: no panic crosses the boundary, errors
//! become a status and a message) and reads its arguments with the helpers below; JSON is
//! parsed once into values for `rsapi`, and results are written as JSON text once.
//!
//! Conventions (repeated in the header): a function that returns a status other than
//! `OBJSTORE_STATUS_OK` has done nothing and will not call its callback; one that returns
//! `OBJSTORE_STATUS_OK` calls its callback exactly once, from a thread of the library (the
//! database's worker, or its sync agent's), also on error, cancel and close, and the close
//! callback is the last one. Enumerations cross the boundary as integers and are checked.

// C signatures carry a callback, its user data, a request id and an error out-parameter.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use objstore_db_core::{Error, ErrorCode, Mode, Result};
use serde_json::Value;

use crate::rsapi::{Cursor, Db, Freshness, OpenOptions, QueryHandle, ReadKind, RequestId, TxOps, Within};

/// Status of a call or of a completed request.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjstoreStatus {
    Ok = 0,
    /// An unknown store or index.
    NotFound = 1,
    /// A key that is not valid, or a record without its key.
    InvalidKey = 2,
    /// A bad argument: NULL, invalid UTF-8 or JSON, an unknown option or enumeration value.
    InvalidArgument = 3,
    /// A duplicate key or a unique-index clash; nothing was written.
    Constraint = 4,
    /// A write in a readonly transaction or cursor.
    ReadOnly = 5,
    /// The transaction has ended (committed, aborted, timed out).
    TransactionInactive = 6,
    /// The schema is invalid or changed without a higher version.
    Schema = 7,
    /// The database is closed.
    Closed = 8,
    /// The request was cancelled (`objstore_db_cancel`) or the database closed first.
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
    /// Retired, never returned: requests now wait for an open transaction. Kept so that the
    /// number is not given to another status and code naming it still compiles.
    Busy = 16,
    /// `objstore_waiter_wait` timed out; the request is still running.
    Timeout = 17,
}

/// Transaction or cursor mode (an `int` argument; other values are INVALID_ARGUMENT).
pub const OBJSTORE_MODE_READONLY: u32 = 0;
pub const OBJSTORE_MODE_READWRITE: u32 = 1;

/// What `objstore_db_read` returns: how many, the primary keys, or the records.
pub const OBJSTORE_READ_COUNT: u32 = 0;
pub const OBJSTORE_READ_KEYS: u32 = 1;
pub const OBJSTORE_READ_VALUES: u32 = 2;

/// Read flags: ask the bucket before answering (a read of a synced store otherwise serves the
/// cache, fetching only what is not held, and revalidates in the background).
pub const OBJSTORE_READ_FRESH: u32 = 1;

/// What a push-cursor visitor returns for the record it was shown.
pub const OBJSTORE_CURSOR_CONTINUE: i32 = 0;
pub const OBJSTORE_CURSOR_STOP: i32 = 1;
/// Delete this record, then continue.
pub const OBJSTORE_CURSOR_DELETE: i32 = 2;
/// Replace this record with the JSON the visitor put in `*update`, then continue.
pub const OBJSTORE_CURSOR_UPDATE: i32 = 3;

/// Completion of a request: `result` is JSON (status OK) or an error message, `result_len`
/// bytes, NUL-terminated, valid only during the call.
pub type ObjstoreCallback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, status: ObjstoreStatus, result: *const c_char, result_len: usize),
>;

/// An event as JSON `{"kind", "store", "key", "value", "message"}`, valid during the call.
pub type ObjstoreEventFn = Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const c_char, event_len: usize)>;

/// A push-cursor visitor: `item` is `{"key", "primaryKey", "value"}` JSON. It returns one of
/// the OBJSTORE_CURSOR_* values; to update, it sets `*update` and `*update_len` to the new
/// record's JSON (copied before the visitor returns... to the library) and returns
/// OBJSTORE_CURSOR_UPDATE. Any other value stops the cursor with INVALID_ARGUMENT.
pub type ObjstoreCursorFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        item: *const c_char,
        item_len: usize,
        update: *mut *const c_char,
        update_len: *mut usize,
    ) -> i32,
>;

/// The body of `objstore_db_transaction`, run on the worker with a transaction handle valid
/// only during the call. Returning anything but 0 (OBJSTORE_STATUS_OK) rolls everything back.
pub type ObjstoreTxFn = Option<unsafe extern "C" fn(user_data: *mut c_void, tx: *mut ObjstoreTx) -> i32>;

/// An open database (opaque). Valid from `objstore_db_open` until `objstore_db_free`; after
/// `objstore_db_close` calls are refused with OBJSTORE_STATUS_CLOSED.
pub struct ObjstoreDb {
    db: Db,
}

/// A query whose `list` pages continue from call to call (opaque).
pub struct ObjstoreQuery {
    query: QueryHandle,
}

/// A pull cursor (opaque): `objstore_cursor_next` hands out batches.
pub struct ObjstoreCursor {
    cursor: Cursor,
}

/// The transaction inside an `objstore_db_transaction` body (opaque).
pub struct ObjstoreTx {
    ops: *mut TxOps<'static, 'static>,
    /// The last operation that failed, so that a body returning its status ends with its error.
    failed: Option<(i32, String)>,
}

/// Turns a completion callback into a blocking step for test harnesses (opaque): pass
/// `objstore_waiter_callback` and the waiter as callback and user data, then wait.
pub struct ObjstoreWaiter {
    state: Mutex<Option<(ObjstoreStatus, String)>>,
    ready: Condvar,
}

pub(crate) fn status_of(error: &Error) -> ObjstoreStatus {
    status_of_code(error.code())
}

const CODES: [ErrorCode; 15] = [
    ErrorCode::NotFound,
    ErrorCode::InvalidKey,
    ErrorCode::InvalidArgument,
    ErrorCode::Constraint,
    ErrorCode::ReadOnly,
    ErrorCode::TransactionInactive,
    ErrorCode::Schema,
    ErrorCode::Closed,
    ErrorCode::Cancelled,
    ErrorCode::Storage,
    ErrorCode::Internal,
    ErrorCode::Conflict,
    ErrorCode::Network,
    ErrorCode::Remote,
    ErrorCode::RemoteData,
];

/// The error code a status a caller returned stands for (a status it made up: none).
fn code_of_status(status: i32) -> Option<ErrorCode> {
    CODES.into_iter().find(|code| status_of_code(*code) as i32 == status)
}

fn status_of_code(code: ErrorCode) -> ObjstoreStatus {
    match code {
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

// ----- the guard and the argument readers ---------------------------------------------------------

/// Text for C: a NUL inside (never in JSON we write) is dropped rather than cut there.
pub(crate) fn c_string(text: String) -> CString {
    CString::new(text).unwrap_or_else(|e| {
        let bytes: Vec<u8> = e.into_vec().into_iter().filter(|b| *b != 0).collect();
        CString::new(bytes).expect("NULs removed")
    })
}

/// A callback and its user data, carried to the thread that completes the request.
struct Completion {
    callback: unsafe extern "C" fn(*mut c_void, ObjstoreStatus, *const c_char, usize),
    user_data: *mut c_void,
}

// The caller promises, by passing user_data to an asynchronous call, that it may be used from
// the library's threads.
unsafe impl Send for Completion {}

impl Completion {
    fn deliver<T: Into<Value>>(self, result: Result<T>) {
        self.deliver_text(result.map(|value| value.into().to_string()))
    }

    /// A result that is JSON text already.
    fn deliver_text(self, result: Result<String>) {
        let (status, text) = match result {
            Ok(text) => (ObjstoreStatus::Ok, text),
            Err(e) => (status_of(&e), e.to_string()),
        };
        let text = c_string(text);
        // A C callback cannot unwind into Rust; catch_unwind covers Rust code around it.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
            (self.callback)(self.user_data, status, text.as_ptr(), text.as_bytes().len())
        }));
    }
}

fn completion(callback: ObjstoreCallback, user_data: *mut c_void) -> Result<Completion> {
    let callback = callback.ok_or_else(|| Error::InvalidArgument("the completion callback is NULL".into()))?;
    Ok(Completion { callback, user_data })
}

/// Runs an entry point's body: its error (or a caught panic) becomes the status and, when the
/// caller asked, a message in `*error_out` (set to NULL first, so it is never read unset).
fn call(error_out: *mut *mut c_char, body: impl FnOnce() -> Result<()>) -> ObjstoreStatus {
    if !error_out.is_null() {
        unsafe { *error_out = std::ptr::null_mut() };
    }
    let outcome = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(Error::Internal("a panic was caught at the C boundary".into())));
    match outcome {
        Ok(()) => ObjstoreStatus::Ok,
        Err(error) => {
            if !error_out.is_null() {
                unsafe { *error_out = c_string(error.to_string()).into_raw() };
            }
            status_of(&error)
        }
    }
}

/// `call` for an asynchronous request: the body submits it and returns its id, which goes to
/// `*request_out` when asked for.
fn request(
    error_out: *mut *mut c_char,
    request_out: *mut u64,
    body: impl FnOnce() -> Result<RequestId>,
) -> ObjstoreStatus {
    if !request_out.is_null() {
        unsafe { *request_out = 0 };
    }
    call(error_out, || {
        let id = body()?;
        if !request_out.is_null() {
            unsafe { *request_out = id };
        }
        Ok(())
    })
}

unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    CStr::from_ptr(ptr).to_str().map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// A JSON argument of `len` bytes (not NUL-terminated), parsed.
pub(crate) unsafe fn json_arg(ptr: *const c_char, len: usize, what: &str) -> Result<Value> {
    json(ptr, len, what)
}

unsafe fn json(ptr: *const c_char, len: usize, what: &str) -> Result<Value> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
    let text = std::str::from_utf8(bytes).map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))?;
    crate::rsapi::parse(what, text)
}

unsafe fn optional_json(ptr: *const c_char, len: usize, what: &str) -> Result<Option<Value>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        json(ptr, len, what).map(Some)
    }
}

/// A NUL-terminated JSON argument, parsed; NULL is none.
unsafe fn optional_json_text(ptr: *const c_char, what: &str) -> Result<Option<Value>> {
    if ptr.is_null() {
        return Ok(None);
    }
    crate::rsapi::parse(what, text(ptr, what)?).map(Some)
}

unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    ptr.as_ref().ok_or_else(|| Error::InvalidArgument(format!("the {what} handle is NULL")))
}

unsafe fn db_ref<'a>(db: *const ObjstoreDb) -> Result<&'a Db> {
    handle(db, "database").map(|d| &d.db)
}

fn within(tx: u64) -> Within {
    (tx != 0).then_some(tx)
}

fn mode(value: u32) -> Result<Mode> {
    match value {
        OBJSTORE_MODE_READONLY => Ok(Mode::ReadOnly),
        OBJSTORE_MODE_READWRITE => Ok(Mode::ReadWrite),
        other => Err(Error::InvalidArgument(format!(
            "mode {other} is not OBJSTORE_MODE_READONLY (0) or OBJSTORE_MODE_READWRITE (1)"
        ))),
    }
}

fn read_kind(value: u32) -> Result<ReadKind> {
    match value {
        OBJSTORE_READ_COUNT => Ok(ReadKind::Count),
        OBJSTORE_READ_KEYS => Ok(ReadKind::Keys),
        OBJSTORE_READ_VALUES => Ok(ReadKind::Values),
        other => {
            Err(Error::InvalidArgument(format!("read kind {other} is not one of OBJSTORE_READ_COUNT, _KEYS, _VALUES")))
        }
    }
}

fn read_flags(flags: u32) -> Result<Freshness> {
    if flags & !OBJSTORE_READ_FRESH != 0 {
        return Err(Error::InvalidArgument(format!("read flags {flags:#x} hold bits other than OBJSTORE_READ_FRESH")));
    }
    Ok(if flags & OBJSTORE_READ_FRESH != 0 { Freshness::Fresh } else { Freshness::Cached })
}

// ----- versions, strings and statuses ---------------------------------------------------------------

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

/// A short, static name for a status, e.g. "OBJSTORE_STATUS_CONSTRAINT" (do not free); any
/// other integer gives "OBJSTORE_STATUS_UNKNOWN".
#[no_mangle]
pub extern "C" fn objstore_status_name(status: i32) -> *const c_char {
    let name: &'static str = match status {
        0 => "OBJSTORE_STATUS_OK\0",
        1 => "OBJSTORE_STATUS_NOT_FOUND\0",
        2 => "OBJSTORE_STATUS_INVALID_KEY\0",
        3 => "OBJSTORE_STATUS_INVALID_ARGUMENT\0",
        4 => "OBJSTORE_STATUS_CONSTRAINT\0",
        5 => "OBJSTORE_STATUS_READ_ONLY\0",
        6 => "OBJSTORE_STATUS_TRANSACTION_INACTIVE\0",
        7 => "OBJSTORE_STATUS_SCHEMA\0",
        8 => "OBJSTORE_STATUS_CLOSED\0",
        9 => "OBJSTORE_STATUS_CANCELLED\0",
        10 => "OBJSTORE_STATUS_STORAGE\0",
        11 => "OBJSTORE_STATUS_INTERNAL\0",
        12 => "OBJSTORE_STATUS_CONFLICT\0",
        13 => "OBJSTORE_STATUS_NETWORK\0",
        14 => "OBJSTORE_STATUS_REMOTE\0",
        15 => "OBJSTORE_STATUS_REMOTE_DATA\0",
        16 => "OBJSTORE_STATUS_BUSY\0",
        17 => "OBJSTORE_STATUS_TIMEOUT\0",
        _ => "OBJSTORE_STATUS_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

// ----- open, close, cancel ------------------------------------------------------------------------------

/// Opens (creating if needed) the database `name` (a file path for the sqlite mechanism) and
/// stores its handle in `*db_out`, before `on_open` can fire. `schema_json` and `options_json`
/// are NUL-terminated and may be NULL; options: `{"mechanism": "sqlite"|"memory",
/// "durability": "normal"|"full", "idleTransactionTimeoutMs": n, "queueCapacity": n,
/// "syncThreads": n}`. Durability "normal" (the default) keeps a commit through a crash of the
/// process, "full" (an fsync per commit) through a crash of the machine too. One process at a
/// time opens a file: a second open fails with OBJSTORE_STATUS_STORAGE naming the file.
/// `on_open` fires once with the schema as stored (`{"version", "stores", "previousVersion"}`:
/// the version before this open, null for a new database; plus `"warnings"`, a list of texts, when a
/// bucket is known to ignore conditional writes) or the error. A schema without a version
/// keeps the stored one, or takes the next one when it changed; a given version lower than the
/// stored one is OBJSTORE_STATUS_SCHEMA naming both. Sync credentials
/// (`accessKeyId`, `secretAccessKey`, `sessionToken` in a Sync block's Options) are used but
/// never stored in the file; without them the standard AWS variables and the shared AWS files
/// (`AWS_PROFILE`) are read. Requests may be made at once: they run after the open, or fail
/// with its error. Free the handle with `objstore_db_free`.
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
    call(error_out, || {
        if db_out.is_null() {
            return Err(Error::InvalidArgument("db_out is NULL".into()));
        }
        *db_out = std::ptr::null_mut();
        let name = text(name, "name")?;
        let schema = optional_json_text(schema_json, "schema_json")?;
        let options = OpenOptions::from_json(optional_json_text(options_json, "options_json")?.as_ref())?;
        let done = completion(on_open, user_data)?;
        // on_open waits until *db_out is stored, so that it may use the handle.
        let stored = Arc::new((Mutex::new(false), Condvar::new()));
        let latch = stored.clone();
        let db = Db::open(name, schema.as_ref(), &options, move |r| {
            let (lock, cond) = &*latch;
            let mut ready = lock.lock().unwrap_or_else(|p| p.into_inner());
            while !*ready {
                ready = cond.wait(ready).unwrap_or_else(|p| p.into_inner());
            }
            drop(ready);
            done.deliver(r)
        })?;
        *db_out = Box::into_raw(Box::new(ObjstoreDb { db }));
        *stored.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        stored.1.notify_all();
        Ok(())
    })
}

/// Closes the database: queued requests complete with OBJSTORE_STATUS_CANCELLED, an open
/// transaction rolls back, the file closes, and then `done` fires: the last callback this
/// database makes. Later calls on the handle return OBJSTORE_STATUS_CLOSED (and never call
/// back) until `objstore_db_free`.
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
    call(error_out, || {
        let db = db_ref(db)?;
        let done = completion(done, user_data)?;
        db.close(move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// Frees a handle: closes the database first if needed and waits until the library's threads
/// for it have ended, so a program can exit clean. Accepts NULL. Must not be called from a
/// callback (or a listener) of the same database.
///
/// # Safety
/// `db` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_free(db: *mut ObjstoreDb) {
    if !db.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let db = Box::from_raw(db);
            db.db.close_and_join();
        }));
    }
}

/// Cancels request `request` (an id from a `request_out` parameter): a queued request
/// completes with OBJSTORE_STATUS_CANCELLED without running; a running fetch, prefetch or
/// flush stops at its next batch or HTTP request. Returns whether the request was pending.
///
/// # Safety
/// `db` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_cancel(db: *const ObjstoreDb, request: u64) -> bool {
    catch_unwind(AssertUnwindSafe(|| db_ref(db).map(|db| db.cancel(request)).unwrap_or(false))).unwrap_or(false)
}

// ----- operations ---------------------------------------------------------------------------------
//
// Every asynchronous entry point below takes `tx` (0: a transaction of its own, otherwise an
// id from objstore_db_begin), its arguments, then `done` and `user_data` (the completion),
// `request_out` (NULL, or where the request's id goes, for objstore_db_cancel) and
// `error_out` (NULL, or where a refusal's message goes; free it with objstore_string_free).
// JSON arguments are given with their length in bytes; store names are NUL-terminated.

/// Writes a record (JSON), replacing any with the same key; the result is the key as JSON.
/// `key_json` is NULL for stores with an inline key path or generated keys.
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let value = json(value_json, value_len, "value_json")?;
        let key = optional_json(key_json, key_len, "key_json")?;
        let done = completion(done, user_data)?;
        db.put(within(tx), store, value, key.as_ref(), move |r| done.deliver(r))
    })
}

/// Like `objstore_db_put`, but an existing key or unique-index clash completes with
/// OBJSTORE_STATUS_CONSTRAINT and writes nothing.
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let value = json(value_json, value_len, "value_json")?;
        let key = optional_json(key_json, key_len, "key_json")?;
        let done = completion(done, user_data)?;
        db.add(within(tx), store, value, key.as_ref(), move |r| done.deliver(r))
    })
}

/// Reads the record under `key_json`; the result is the record, or `null`. `flags`: 0 or
/// OBJSTORE_READ_FRESH.
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
    flags: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let key = json(key_json, key_len, "key_json")?;
        let (read, done) = (read_flags(flags)?, completion(done, user_data)?);
        db.get_text(within(tx), store, &key, read, move |r| done.deliver_text(r))
    })
}

/// Reads the records under a JSON array of keys; the result is an array with `null` where
/// there is none. For a synced store, what the cache lacks is fetched in parallel.
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
    flags: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let keys = json(keys_json, keys_len, "keys_json")?;
        let (read, done) = (read_flags(flags)?, completion(done, user_data)?);
        db.values_of_text(within(tx), store, &keys, read, move |r| done.deliver_text(r))
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let target = json(key_or_range_json, len, "key_or_range_json")?;
        let done = completion(done, user_data)?;
        db.remove(within(tx), store, &target, move |r| done.deliver(r))
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store) = (db_ref(db)?, text(store, "store")?);
        let done = completion(done, user_data)?;
        db.clear(within(tx), store, move |r| done.deliver(r))
    })
}

/// Counts (OBJSTORE_READ_COUNT), lists primary keys (OBJSTORE_READ_KEYS) or reads records
/// (OBJSTORE_READ_VALUES) of a store or index; `scan_json` (may be NULL): `{"index"?,
/// "range"?, "limit"?, "offset"?, "reverse"?, "unique"?}`. `flags`: 0 or OBJSTORE_READ_FRESH.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_read(
    db: *const ObjstoreDb,
    tx: u64,
    store: *const c_char,
    kind: u32,
    scan_json: *const c_char,
    scan_len: usize,
    flags: u32,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, store, kind) = (db_ref(db)?, text(store, "store")?, read_kind(kind)?);
        let scan = optional_json(scan_json, scan_len, "scan_json")?;
        let (read, done) = (read_flags(flags)?, completion(done, user_data)?);
        db.read_scan_text(within(tx), store, kind, scan.as_ref(), read, move |r| done.deliver_text(r))
    })
}

/// Runs one SQL statement with bound parameters (`params_json`: a JSON array, or NULL); the
/// store and whether it writes come from the statement. The result is `{"rows": [...]}` for a
/// SELECT, with `"columns"` (the names it selects, in order) and `"aggregate"` (true for
/// COUNT/MIN/MAX/SUM/AVG: one row) unless it is `SELECT *`, and `{"changed": n}` (records
/// written) for INSERT, UPDATE and DELETE.
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_sql(
    db: *const ObjstoreDb,
    tx: u64,
    sql: *const c_char,
    params_json: *const c_char,
    params_len: usize,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, sql) = (db_ref(db)?, text(sql, "sql")?);
        let params = optional_json(params_json, params_len, "params_json")?;
        let done = completion(done, user_data)?;
        db.sql(within(tx), sql, params.as_ref(), move |r| done.deliver(r))
    })
}

// ----- transactions -------------------------------------------------------------------------------

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

// ----- queries and cursors ---------------------------------------------------------------------------

unsafe fn query_ref<'a>(query: *const ObjstoreQuery) -> Result<&'a QueryHandle> {
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

unsafe fn cursor_ref<'a>(cursor: *const ObjstoreCursor) -> Result<&'a Cursor> {
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

/// A convenience over the pull cursor: streams every match to `visit`, batch by batch on a
/// library thread, applying what it answers (OBJSTORE_CURSOR_*) before the next batch; `done`
/// gets the number visited. Memory stays flat when an index or the primary key gives the order.
///
/// # Safety
/// As `objstore_query_list`; `visit_data` is passed to `visit` on a library thread.
#[no_mangle]
pub unsafe extern "C" fn objstore_query_open(
    query: *const ObjstoreQuery,
    tx: u64,
    mode_: u32,
    visit: ObjstoreCursorFn,
    visit_data: *mut c_void,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (q, mode) = (query_ref(query)?, mode(mode_)?);
        let visit = visit.ok_or_else(|| Error::InvalidArgument("the cursor visitor is NULL".into()))?;
        let done = completion(done, user_data)?;
        let visitor = crate::push::Visitor { visit, data: visit_data };
        crate::push::start(q.db().clone(), q.clone(), within(tx), mode, visitor, move |r| done.deliver(r))
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    struct Listener(unsafe extern "C" fn(*mut c_void, *const c_char, usize), *mut c_void);
    unsafe impl Send for Listener {}
    request(error_out, request_out, || {
        let db = db_ref(db)?;
        let filter = optional_json(filter_json, filter_len, "filter_json")?;
        let listener =
            Listener(listener.ok_or_else(|| Error::InvalidArgument("the listener is NULL".into()))?, listener_data);
        let done = completion(done, user_data)?;
        db.subscribe(
            filter.as_ref(),
            move |event| {
                let listener = &listener;
                let event = c_string(event.to_string());
                let _ =
                    catch_unwind(AssertUnwindSafe(|| (listener.0)(listener.1, event.as_ptr(), event.as_bytes().len())));
            },
            move |r| done.deliver(r),
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
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.unsubscribe(subscription, move |r| done.deliver(r))
    })
}

// ----- sync -------------------------------------------------------------------------------------

/// Sends the outbox of synced stores now; the result is `{"sent", "pending", "refused",
/// "rejected": [{"sequence", "code", "message"}], "held": [...], "offline"?, "blocked"?}`.
/// Writes are also sent in the background after each commit, so `sent`, `rejected` and `held`
/// are what this call did, while `pending` (writes still waiting) and `refused` (refused writes
/// awaiting `objstore_db_resolve`, whoever met the refusal) count every write. `rejected`
/// writes the bucket refused (kept, see `objstore_db_refused_writes`), `held` writes the server
/// failed on (5xx) while it took others — they stay queued and do not block writes to other
/// objects; `offline` why the bucket could not be reached, `blocked` why it refused every
/// request (credentials, a wrong region): those writes wait.
///
/// # Safety
/// As `objstore_db_put`.
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

/// Lists a synced store now and brings its local copy in line (new and changed objects
/// fetched, vanished ones removed), whatever its prefetch setting; the result is `null`.
///
/// # Safety
/// As `objstore_db_put`.
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
        db.prefetch(store, move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// Offline, the library makes no requests to buckets: reads serve the cache and writes wait.
/// Takes effect at once (no callback).
///
/// # Safety
/// `db` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_set_offline(
    db: *const ObjstoreDb,
    offline: bool,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    call(error_out, || db_ref(db)?.set_offline(offline))
}

/// Requests made to buckets so far: `{"requests": {kind: {status: n}}, "total",
/// "bytesSent", "bytesReceived", "costUsd" (S3 Standard), "costsUsd": {"s3Standard", "r2",
/// "s3ExpressOneZone"}, "conditionalWrites": {bucket: bool}}` into `*result_out` (free with
/// objstore_string_free); `reset` starts the count again. Synchronous.
///
/// # Safety
/// `db` is NULL or a live handle; `result_out` is valid for a write.
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
        *result_out = c_string(db_ref(db)?.sync_stats(reset).to_string()).into_raw();
        Ok(())
    })
}

/// The schema as the database has it now: `{"version", "stores"}` (default index names filled
/// in, no credentials).
///
/// # Safety
/// As `objstore_db_put`.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_schema(
    db: *const ObjstoreDb,
    done: ObjstoreCallback,
    user_data: *mut c_void,
    request_out: *mut u64,
    error_out: *mut *mut c_char,
) -> ObjstoreStatus {
    request(error_out, request_out, || {
        let (db, done) = (db_ref(db)?, completion(done, user_data)?);
        db.schema(move |r| done.deliver(r))
    })
}

/// The writes the bucket refused, kept until resolved: a JSON array of `{"sequence", "store",
/// "key", "op", "value", "code", "message"}`.
///
/// # Safety
/// As `objstore_db_put`.
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

/// Resolves refused write `sequence`, and every other refused write of the same object with
/// it: `resolution` "discard" (the bucket's version wins) or "overwrite" (the local copy is
/// sent over whatever the bucket holds; a refused remove removes it). The result is `null`.
///
/// # Safety
/// As `objstore_db_put`.
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
        let (db, resolution) = (db_ref(db)?, text(resolution, "resolution")?);
        let done = completion(done, user_data)?;
        db.resolve(sequence, resolution, move |r| done.deliver(r.map(|()| Value::Null)))
    })
}

/// The sync state of the record under `key_json`: "local" (not a synced store), "pending",
/// "refused", "synced", "unusable" (the bucket's version is over the size cap or not JSON; an
/// error event said so) or "unknown", as a JSON string.
///
/// # Safety
/// As `objstore_db_put`.
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
        let key = json(key_json, key_len, "key_json")?;
        let done = completion(done, user_data)?;
        db.sync_status(store, &key, move |r| done.deliver(r))
    })
}

/// Takes back the writes to the record under `key_json` still waiting for the bucket, and the
/// local record with them (no delete is queued); the result is how many, as JSON. For a caller
/// that told its own client the write failed: it does not land later (a send already under way
/// may).
///
/// # Safety
/// As `objstore_db_put`.
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
        let key = json(key_json, key_len, "key_json")?;
        let done = completion(done, user_data)?;
        db.withdraw_pending(store, &key, move |r| done.deliver(r))
    })
}

// ----- waiting, for test harnesses ---------------------------------------------------------------

/// A new waiter (free with `objstore_waiter_free`). Pass `objstore_waiter_callback` as the
/// callback and the waiter as its user data, then `objstore_waiter_wait`. One waiter serves
/// one request at a time.
#[no_mangle]
pub extern "C" fn objstore_waiter_new() -> *mut ObjstoreWaiter {
    Box::into_raw(Box::new(ObjstoreWaiter { state: Mutex::new(None), ready: Condvar::new() }))
}

/// The completion callback that fills a waiter (`user_data` is the waiter).
///
/// # Safety
/// `user_data` is a live waiter; `result` is valid for `result_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn objstore_waiter_callback(
    user_data: *mut c_void,
    status: ObjstoreStatus,
    result: *const c_char,
    result_len: usize,
) {
    let Some(waiter) = user_data.cast::<ObjstoreWaiter>().as_ref() else { return };
    let bytes = if result.is_null() { &[][..] } else { std::slice::from_raw_parts(result.cast::<u8>(), result_len) };
    let text = String::from_utf8_lossy(bytes).into_owned();
    *waiter.state.lock().unwrap_or_else(|p| p.into_inner()) = Some((status, text));
    waiter.ready.notify_all();
}

/// Blocks until the waiter's request completes or `timeout_ms` passes. On completion, returns
/// the request's status and, when `result_out` is not NULL, its result (JSON or the error
/// message; free with objstore_string_free), and readies the waiter for another request. On
/// timeout returns OBJSTORE_STATUS_TIMEOUT and the request goes on. A timeout too long to
/// reach (UINT64_MAX, say) waits for as long as it takes. Never call it from a callback.
///
/// # Safety
/// `waiter` is a live waiter; `result_out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn objstore_waiter_wait(
    waiter: *mut ObjstoreWaiter,
    timeout_ms: u64,
    result_out: *mut *mut c_char,
) -> ObjstoreStatus {
    if !result_out.is_null() {
        *result_out = std::ptr::null_mut();
    }
    let Some(waiter) = waiter.as_ref() else {
        return ObjstoreStatus::InvalidArgument;
    };
    // No deadline when it would overflow: the caller meant "wait forever".
    let deadline = Instant::now().checked_add(Duration::from_millis(timeout_ms));
    let mut state = waiter.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some((status, text)) = state.take() {
            if !result_out.is_null() {
                *result_out = c_string(text).into_raw();
            }
            return status;
        }
        state = match deadline {
            None => waiter.ready.wait(state).unwrap_or_else(|p| p.into_inner()),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return ObjstoreStatus::Timeout;
                }
                waiter.ready.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0
            }
        };
    }
}

/// Frees a waiter. Accepts NULL. Its request must have completed (or never been made).
///
/// # Safety
/// `waiter` is NULL or a live waiter, not used again.
#[no_mangle]
pub unsafe extern "C" fn objstore_waiter_free(waiter: *mut ObjstoreWaiter) {
    if !waiter.is_null() {
        drop(Box::from_raw(waiter));
    }
}
