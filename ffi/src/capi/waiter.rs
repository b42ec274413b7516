//! Waiting for a request, for test harnesses: a waiter turns a completion callback into a
//! blocking step.

use super::*;

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
