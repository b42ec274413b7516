//! The `extern "C"` layer over `rsapi`, a file per C type: `db` (the database and its
//! single-request operations), `tx` (transactions), `query`, `cursor` and `push` (the push
//! cursor), `sync`, `waiter`; what they share (the guard, completions, argument readers) is
//! `args`, and the C vocabulary (statuses, constants, callback types, handles) is here. Every
//! entry point goes through `call` (the guard: no panic crosses the boundary, errors become a
//! status and a message); JSON is parsed once into values for `rsapi`, and results are written
//! as JSON text once.
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
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use objstore_db_core::{Error, ErrorCode, Mode, Query, Record, Resolution, Result};
use serde_json::Value;

use crate::json::{self, IntoJson};
use crate::rsapi::{AsText, Cursor, Db, Freshness, QueryHandle, ReadKind, RequestId, TxOps, Within};

mod args;
mod cursor;
mod db;
mod push;
mod query;
mod sync;
mod tx;
mod waiter;

use args::*;
pub use cursor::*;
pub use db::*;
pub use push::*;
pub use query::*;
pub use sync::*;
pub use tx::*;
pub use waiter::*;

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
    /// A transaction body returned a number that is no status (one of its own): everything it
    /// did was rolled back, and the message gives the number.
    Aborted = 18,
}

/// Transaction or cursor mode (a `uint32_t` argument; other values are INVALID_ARGUMENT).
pub const OBJSTORE_MODE_READONLY: u32 = 0;
pub const OBJSTORE_MODE_READWRITE: u32 = 1;

/// What `objstore_db_read` returns: how many, the primary keys, or the records.
pub const OBJSTORE_READ_COUNT: u32 = 0;
pub const OBJSTORE_READ_KEYS: u32 = 1;
pub const OBJSTORE_READ_VALUES: u32 = 2;

/// Read flags: ask the bucket before answering (a read of a synced store otherwise serves the
/// cache, fetching only what is not held, and revalidates in the background).
pub const OBJSTORE_READ_FRESH: u32 = 1;

/// Read flags: the read may complete inside the call. When the database has no request queued
/// or running, no transaction is open and the store is not synced, the read runs at once on the
/// calling thread (on a read-only connection of its own), `done` is called before the call
/// returns, and `*request_out` is 0; otherwise it is made as any request. It sees every write
/// made before it either way. This spares the two thread switches of a request.
pub const OBJSTORE_READ_INLINE: u32 = 2;

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
/// record's JSON and returns OBJSTORE_CURSOR_UPDATE. The library reads `*update` after the
/// visitor returns, so it must not point into the visitor's stack; it is not freed by the
/// library. Any other value stops the cursor with INVALID_ARGUMENT.
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
    match error {
        // A body's own outcome: the status it returned (BUSY and TIMEOUT too, which name no
        // error code), or ABORTED for a number that is no status.
        Error::Aborted { status, .. } => status_of_number(*status).unwrap_or(ObjstoreStatus::Aborted),
        _ => status_of_code(error.code()),
    }
}

/// The error code a status a caller returned stands for (a status it made up: none).
fn code_of_status(status: i32) -> Option<ErrorCode> {
    ErrorCode::ALL.iter().copied().find(|code| code.status() == status)
}

/// The C status of an error code: its number in core's table of codes.
fn status_of_code(code: ErrorCode) -> ObjstoreStatus {
    status_of_number(code.status()).unwrap_or(ObjstoreStatus::Internal)
}

/// The status with this number, if there is one.
fn status_of_number(number: i32) -> Option<ObjstoreStatus> {
    // The statuses are numbered 0 to ABORTED without gaps (the C enum is the header's).
    // SAFETY: `ObjstoreStatus` is a fieldless repr(C) enum (an int) and `number` is one of its
    // discriminants.
    (0..=ObjstoreStatus::Aborted as i32).contains(&number).then(|| unsafe { std::mem::transmute(number) })
}

/// The name of a status as a C string, e.g. "OBJSTORE_STATUS_CONSTRAINT": the error codes'
/// from core's table, and the statuses only C has.
fn status_name(number: i32) -> &'static CStr {
    static NAMES: OnceLock<Vec<(i32, CString)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let c_only = [
            (0, "OK"),
            (ObjstoreStatus::Busy as i32, "BUSY"),
            (ObjstoreStatus::Timeout as i32, "TIMEOUT"),
            (ObjstoreStatus::Aborted as i32, "ABORTED"),
        ];
        let codes = ErrorCode::ALL.iter().map(|code| (code.status(), code.name()));
        c_only
            .into_iter()
            .chain(codes)
            .map(|(number, name)| (number, CString::new(format!("OBJSTORE_STATUS_{name}")).expect("no NUL")))
            .collect()
    });
    names.iter().find(|(n, _)| *n == number).map_or(c"OBJSTORE_STATUS_UNKNOWN", |(_, name)| name.as_c_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_has_the_c_status_of_its_number_and_name() {
        for code in ErrorCode::ALL {
            let status = status_of_code(*code);
            assert_eq!(status as i32, code.status(), "{code:?}");
            let name = format!("OBJSTORE_STATUS_{}", code.name());
            assert_eq!(status_name(status as i32).to_str().unwrap(), name);
            assert_eq!(format!("{status:?}"), format!("{code:?}"), "the C enum names the code as core does");
            assert_eq!(code_of_status(status as i32), Some(*code));
        }
        assert_eq!(status_name(0).to_str().unwrap(), "OBJSTORE_STATUS_OK");
        assert_eq!(status_name(17).to_str().unwrap(), "OBJSTORE_STATUS_TIMEOUT");
        assert_eq!(status_name(18).to_str().unwrap(), "OBJSTORE_STATUS_ABORTED");
        assert_eq!(status_name(99).to_str().unwrap(), "OBJSTORE_STATUS_UNKNOWN");
        assert_eq!(status_of_number(18), Some(ObjstoreStatus::Aborted));
        assert_eq!(status_of_number(19), None);
        assert_eq!(code_of_status(0), None);
    }
}
