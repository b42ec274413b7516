//! Waiting for a request, for test harnesses: a waiter turns a completion callback into a
//! blocking step.

use super::*;

/// Returns a new waiter, to free with objstore_waiter_free. Pass objstore_waiter_callback as a
/// request's callback and the waiter as its `user_data`, then call objstore_waiter_wait. One
/// waiter serves one request at a time.
#[no_mangle]
pub extern "C" fn objstore_waiter_new() -> *mut ObjstoreWaiter {
    Box::into_raw(Box::new(ObjstoreWaiter { state: Mutex::new(None), ready: Condvar::new() }))
}

/// The completion callback that fills a waiter: `user_data` is the waiter. It copies `result`
/// (`result_len` bytes) and wakes objstore_waiter_wait; it keeps no pointer it was given. The
/// library calls it on one of its threads. A NULL `user_data` is ignored; a NULL `result` is
/// taken as empty.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
/// the request's status, and readies the waiter for another request. On timeout, returns
/// OBJSTORE_STATUS_TIMEOUT and the request goes on (wait again for it). A timeout too long to
/// reach (UINT64_MAX, say) waits for as long as it takes.
/// On completion `*result_out` gets the request's result (JSON, or the error message) as a
/// NUL-terminated string to free with objstore_string_free; otherwise NULL.
/// `result_out` NULL: the result is not wanted. A NULL `waiter` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// Never call it from a callback, listener, visitor or transaction body: it would block a
/// library thread.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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

/// Frees a waiter. NULL is a harmless no-op. Its request must have completed (or never been
/// made), and the waiter must not be used afterwards.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_waiter_free(waiter: *mut ObjstoreWaiter) {
    if !waiter.is_null() {
        drop(Box::from_raw(waiter));
    }
}
