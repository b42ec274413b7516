//! What every entry point shares: the guard (no panic crosses the boundary; an error becomes a
//! status and a message), the completion that carries a callback to the library's threads, and
//! the readers of C arguments, each an early `Err` naming the argument.

use super::*;

/// Text for C: a NUL inside (never in JSON we write) is dropped rather than cut there.
pub(crate) fn c_string(text: String) -> CString {
    CString::new(text).unwrap_or_else(|e| {
        let bytes: Vec<u8> = e.into_vec().into_iter().filter(|b| *b != 0).collect();
        CString::new(bytes).expect("NULs removed")
    })
}

/// A callback and its user data, carried to the thread that completes the request.
pub(super) struct Completion {
    callback: unsafe extern "C" fn(*mut c_void, ObjstoreStatus, *const c_char, usize),
    user_data: *mut c_void,
}

// The caller promises, by passing user_data to an asynchronous call, that it may be used from
// the library's threads.
unsafe impl Send for Completion {}

impl Completion {
    /// A result in the engine's type, sent as its JSON (`crate::json`, as the bindings send it).
    pub(super) fn deliver<T: IntoJson>(self, result: Result<T>) {
        self.deliver_text(result.map(json::text))
    }

    /// A result that is JSON text already.
    pub(super) fn deliver_text(self, result: Result<String>) {
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

pub(super) fn completion(callback: ObjstoreCallback, user_data: *mut c_void) -> Result<Completion> {
    let callback = callback.ok_or_else(|| Error::InvalidArgument("the completion callback is NULL".into()))?;
    Ok(Completion { callback, user_data })
}

/// Runs an entry point's body: its error (or a caught panic) becomes the status and, when the
/// caller asked, a message in `*error_out` (set to NULL first, so it is never read unset).
pub(super) fn call(error_out: *mut *mut c_char, body: impl FnOnce() -> Result<()>) -> ObjstoreStatus {
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
pub(super) fn request(
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

pub(super) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    CStr::from_ptr(ptr).to_str().map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// A JSON argument of `len` bytes (not NUL-terminated), parsed.
pub(super) unsafe fn json(ptr: *const c_char, len: usize, what: &str) -> Result<Value> {
    crate::json::parse(what, json_text(ptr, len, what)?)
}

/// The UTF-8 text of a JSON argument of `len` bytes.
unsafe fn json_text<'a>(ptr: *const c_char, len: usize, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
    std::str::from_utf8(bytes).map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// A record argument: JSON text, kept as text (never read into a tree unless its store needs
/// one).
pub(super) unsafe fn record(ptr: *const c_char, len: usize, what: &str) -> Result<Record> {
    crate::json::record(what, json_text(ptr, len, what)?)
}

pub(super) unsafe fn optional_json(ptr: *const c_char, len: usize, what: &str) -> Result<Option<Value>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        json(ptr, len, what).map(Some)
    }
}

/// A NUL-terminated JSON argument, parsed; NULL is none.
pub(super) unsafe fn optional_json_text(ptr: *const c_char, what: &str) -> Result<Option<Value>> {
    if ptr.is_null() {
        return Ok(None);
    }
    crate::json::parse(what, text(ptr, what)?).map(Some)
}

pub(super) unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    ptr.as_ref().ok_or_else(|| Error::InvalidArgument(format!("the {what} handle is NULL")))
}

pub(super) unsafe fn db_ref<'a>(db: *const ObjstoreDb) -> Result<&'a Db> {
    handle(db, "database").map(|d| &d.db)
}

pub(super) fn within(tx: u64) -> Within {
    (tx != 0).then_some(tx)
}

pub(super) fn mode(value: u32) -> Result<Mode> {
    match value {
        OBJSTORE_MODE_READONLY => Ok(Mode::ReadOnly),
        OBJSTORE_MODE_READWRITE => Ok(Mode::ReadWrite),
        other => Err(Error::InvalidArgument(format!(
            "mode {other} is not OBJSTORE_MODE_READONLY (0) or OBJSTORE_MODE_READWRITE (1)"
        ))),
    }
}

pub(super) fn read_kind(value: u32) -> Result<ReadKind> {
    match value {
        OBJSTORE_READ_COUNT => Ok(ReadKind::Count),
        OBJSTORE_READ_KEYS => Ok(ReadKind::Keys),
        OBJSTORE_READ_VALUES => Ok(ReadKind::Values),
        other => {
            Err(Error::InvalidArgument(format!("read kind {other} is not one of OBJSTORE_READ_COUNT, _KEYS, _VALUES")))
        }
    }
}

/// What a read's `flags` ask for.
pub(super) struct ReadFlags {
    pub(super) freshness: Freshness,
    /// OBJSTORE_READ_INLINE: the read may complete inside the call.
    pub(super) inline: bool,
}

pub(super) fn read_flags(flags: u32) -> Result<ReadFlags> {
    let known = OBJSTORE_READ_FRESH | OBJSTORE_READ_INLINE;
    if flags & !known != 0 {
        return Err(Error::InvalidArgument(format!(
            "read flags {flags:#x} hold bits other than OBJSTORE_READ_FRESH and OBJSTORE_READ_INLINE"
        )));
    }
    let freshness = if flags & OBJSTORE_READ_FRESH != 0 { Freshness::Fresh } else { Freshness::Cached };
    Ok(ReadFlags { freshness, inline: flags & OBJSTORE_READ_INLINE != 0 })
}

/// A read with `flags`: answered inside the call when OBJSTORE_READ_INLINE asks for it and it
/// can be (`now`; the request id is then 0), made as a request (`later`) otherwise.
/// The answer and its callback both run under the close gate (`Db::holding_gate`): close's
/// callback stays the database's last.
pub(super) fn read_now_or_later(
    db: &Db,
    flags: &ReadFlags,
    tx: u64,
    done: Completion,
    now: impl FnOnce() -> Option<Result<String>>,
    later: impl FnOnce(Completion) -> Result<RequestId>,
) -> Result<RequestId> {
    if !flags.inline || tx != 0 {
        return later(done);
    }
    let mut waiting = Some(done);
    db.holding_gate(|| {
        if let Some(result) = now() {
            waiting.take().expect("one completion").deliver_text(result);
        }
    });
    match waiting {
        Some(done) => later(done),
        None => Ok(0),
    }
}
