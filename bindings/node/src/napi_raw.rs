//! The few Node-API calls the binding makes directly, each wrapped once: promises from napi
//! deferreds (settled on the JS thread with `JSON.parse` of the result text), one threadsafe
//! function per JS thread (ref'd only while requests are pending), and references.
//!
//! napi-rs's own deferred makes a threadsafe function per promise so that any thread may settle
//! it; here only the JS thread settles (a batch at a time, woken by one threadsafe function), so
//! a bare `napi_deferred` is enough.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Status};

use super::Shared;

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(Status::from(status), format!("Node-API call failed: {what}")))
    }
}

fn string(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: env is the current JS thread's; text is valid UTF-8 of the given length.
    check(
        unsafe { sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value) },
        "string",
    )?;
    Ok(value)
}

/// The engine's `JSON.parse`, looked up once per batch of completions.
pub struct JsonParse {
    json: sys::napi_value,
    parse: sys::napi_value,
}

impl JsonParse {
    pub fn new(env: sys::napi_env) -> napi::Result<JsonParse> {
        // SAFETY: on the JS thread of `env`; the values live for the current scope (a batch).
        unsafe {
            let (mut global, mut json, mut parse) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
            check(sys::napi_get_global(env, &mut global), "global")?;
            check(sys::napi_get_named_property(env, global, c"JSON".as_ptr(), &mut json), "JSON")?;
            check(sys::napi_get_named_property(env, json, c"parse".as_ptr(), &mut parse), "JSON.parse")?;
            Ok(JsonParse { json, parse })
        }
    }

    /// `JSON.parse(text)`, or the exception it threw (taken, so that none stays pending).
    fn call(&self, env: sys::napi_env, text: &str) -> napi::Result<Result<sys::napi_value, sys::napi_value>> {
        let argument = string(env, text)?;
        let mut result = ptr::null_mut();
        // SAFETY: on the JS thread, with values made in the current scope.
        unsafe {
            let status = sys::napi_call_function(env, self.json, self.parse, 1, &argument, &mut result);
            if status == sys::Status::napi_pending_exception {
                let mut exception = ptr::null_mut();
                check(sys::napi_get_and_clear_last_exception(env, &mut exception), "exception")?;
                return Ok(Err(exception));
            }
            check(status, "JSON.parse call")?;
        }
        Ok(Ok(result))
    }
}

/// A JS `Error` with `code` set (Node's convention), as rejections carry.
fn error(env: sys::napi_env, code: &str, message: &str) -> napi::Result<sys::napi_value> {
    let (code, message) = (string(env, code)?, string(env, message)?);
    let mut value = ptr::null_mut();
    // SAFETY: on the JS thread, with two strings made just above.
    check(unsafe { sys::napi_create_error(env, code, message, &mut value) }, "error")?;
    Ok(value)
}

/// A promise's resolving half. Made and settled on the JS thread only; between the two it
/// travels through the library's threads untouched, hence `Send`.
pub struct Deferred(sys::napi_deferred);

// SAFETY: the pointer is only dereferenced (by Node) on the JS thread that made it.
unsafe impl Send for Deferred {}

impl Deferred {
    pub fn new(env: sys::napi_env) -> napi::Result<(Deferred, sys::napi_value)> {
        let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: on the JS thread of `env`.
        check(unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) }, "promise")?;
        Ok((Deferred(deferred), promise))
    }

    /// Resolves with `JSON.parse(text)`; a JSON `null` (no record, or a request with nothing to
    /// return) resolves as `undefined`, as JS APIs (YDN-DB's among them) say "nothing".
    pub fn resolve_json(self, env: sys::napi_env, parse: &JsonParse, text: &str) -> napi::Result<()> {
        if text == "null" {
            let mut undefined = ptr::null_mut();
            // SAFETY: on the JS thread; the deferred is unsettled.
            check(unsafe { sys::napi_get_undefined(env, &mut undefined) }, "undefined")?;
            return check(unsafe { sys::napi_resolve_deferred(env, self.0, undefined) }, "resolve");
        }
        match parse.call(env, text)? {
            // SAFETY: the deferred is unsettled (settling consumes it) and on its own thread.
            Ok(value) => check(unsafe { sys::napi_resolve_deferred(env, self.0, value) }, "resolve"),
            Err(exception) => check(unsafe { sys::napi_reject_deferred(env, self.0, exception) }, "reject"),
        }
    }

    pub fn reject(self, env: sys::napi_env, code: &str, message: &str) -> napi::Result<()> {
        let error = error(env, code, message)?;
        // SAFETY: as in resolve_json.
        check(unsafe { sys::napi_reject_deferred(env, self.0, error) }, "reject")
    }
}

/// A reference that keeps a JS value alive for the life of its thread.
pub struct Ref(sys::napi_ref);

impl Ref {
    pub fn new(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Ref> {
        let mut reference = ptr::null_mut();
        // SAFETY: on the JS thread; the reference is released with the environment.
        check(unsafe { sys::napi_create_reference(env, value, 1, &mut reference) }, "reference")?;
        Ok(Ref(reference))
    }

    fn get(&self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let mut value = ptr::null_mut();
        // SAFETY: a live reference made on this thread.
        check(unsafe { sys::napi_get_reference_value(env, self.0, &mut value) }, "reference value")?;
        Ok(value)
    }
}

/// Calls the function behind `function` with `(number, JSON.parse(text))`. Whatever it throws
/// is taken and dropped: the JS side catches a listener's failure before it gets here.
pub fn call_with_json(
    env: sys::napi_env,
    parse: &JsonParse,
    function: &Ref,
    number: f64,
    text: &str,
) -> napi::Result<()> {
    let Ok(parsed) = parse.call(env, text)? else { return Ok(()) };
    // SAFETY: on the JS thread, with values made in this scope.
    unsafe {
        let (mut first, mut undefined, mut result) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        check(sys::napi_create_double(env, number, &mut first), "number")?;
        check(sys::napi_get_undefined(env, &mut undefined), "undefined")?;
        let args = [first, parsed];
        let status = sys::napi_call_function(env, undefined, function.get(env)?, 2, args.as_ptr(), &mut result);
        if status == sys::Status::napi_pending_exception {
            let mut exception = ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env, &mut exception);
        }
    }
    Ok(())
}

/// `[instance, promise]`.
pub fn pair<T: ToNapiValue>(
    env: sys::napi_env,
    instance: T,
    promise: sys::napi_value,
) -> napi::Result<sys::napi_value> {
    // SAFETY: on the JS thread, with values made in this call.
    unsafe {
        let instance = T::to_napi_value(env, instance)?;
        let mut array = ptr::null_mut();
        check(sys::napi_create_array_with_length(env, 2, &mut array), "array")?;
        check(sys::napi_set_element(env, array, 0, instance), "array element")?;
        check(sys::napi_set_element(env, array, 1, promise), "array element")?;
        Ok(array)
    }
}

/// A threadsafe function that calls a JS function of no arguments on its thread. Starts
/// unref'd: it holds the event loop only between `refer` and `unref`.
#[derive(Clone, Copy)]
pub struct Tsfn(sys::napi_threadsafe_function);

// SAFETY: Node-API allows napi_call_threadsafe_function from any thread; the other calls
// (ref, unref) are made on the JS thread only. Calls stop before Node finalizes it (Shared).
unsafe impl Send for Tsfn {}
unsafe impl Sync for Tsfn {}

unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<Shared> leaked in Tsfn::new, reclaimed once, here.
    let shared = unsafe { Arc::from_raw(data as *const Shared) };
    shared.finalized();
}

impl Tsfn {
    pub fn new(env: sys::napi_env, function: sys::napi_value, shared: Arc<Shared>) -> napi::Result<Tsfn> {
        let name = string(env, "objstore-db completions")?;
        let data = Arc::into_raw(shared) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: on the JS thread; `finalize` reclaims `data`.
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                env,
                function,
                ptr::null_mut(),
                name,
                0,
                1,
                data,
                Some(finalize),
                ptr::null_mut(),
                None,
                &mut tsfn,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not handed to Node: reclaim it here.
            drop(unsafe { Arc::from_raw(data as *const Shared) });
            check(status, "threadsafe function")?;
        }
        let tsfn = Tsfn(tsfn);
        tsfn.unref(env)?;
        Ok(tsfn)
    }

    /// Asks the JS thread to run the function (from any thread; never blocks).
    pub fn call(&self) {
        // SAFETY: called only while Shared says the function is alive.
        unsafe {
            sys::napi_call_threadsafe_function(self.0, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking)
        };
    }

    pub fn refer(&self, env: sys::napi_env) -> napi::Result<()> {
        // SAFETY: on the JS thread that made it.
        check(unsafe { sys::napi_ref_threadsafe_function(env, self.0) }, "ref")
    }

    pub fn unref(&self, env: sys::napi_env) -> napi::Result<()> {
        // SAFETY: on the JS thread that made it.
        check(unsafe { sys::napi_unref_threadsafe_function(env, self.0) }, "unref")
    }
}
