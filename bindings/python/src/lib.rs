//! The native half of the Python package: a thin layer over `objstore_db::rsapi`. Arguments
//! arrive as JSON text (the Python half encodes them with the stdlib's `json`), results leave as
//! JSON text, decoded once on the event loop's thread. Every request completes into a `Waker`,
//! one per event loop: completions queue there and the loop is woken once per batch (a byte
//! on a pipe the loop watches) rather than once per completion. The library's threads never
//! take the GIL, and the GIL is released around every call into the library (which may wait
//! for room in its queue).

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use objstore_db::json::{self, IntoJson};
use objstore_db::rsapi::{AsText, Cursor, Db, Freshness, Opened, QueryHandle, ReadKind, RequestId};
use objstore_db_core::{Error, ErrorCode, Key, Mode, Resolution, Result};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyType;
use serde_json::Value;

create_exception!(_native, ObjstoreError, PyException, "Base class of every objstore-db error.");

/// The exception class of each error code, made at import from core's table of codes.
static ERROR_CLASSES: GILOnceCell<Vec<(ErrorCode, Py<PyType>)>> = GILOnceCell::new();

/// One subclass of `ObjstoreError` per error code, named and documented by the table.
fn error_classes(py: Python<'_>) -> PyResult<Vec<(ErrorCode, Py<PyType>)>> {
    let base = py.get_type::<ObjstoreError>();
    let text = |s: String| CString::new(s).map_err(|e| PyValueError::new_err(e.to_string()));
    ErrorCode::ALL
        .iter()
        .map(|code| {
            let name = text(format!("objstore_db._native.{}", code.python_class()))?;
            let doc = text(code.meaning().to_string())?;
            Ok((*code, PyErr::new_type(py, &name, Some(&doc), Some(&base), None)?))
        })
        .collect()
}

fn py_err(error: &Error) -> PyErr {
    let message = error.to_string();
    Python::with_gil(|py| {
        let classes = ERROR_CLASSES.get(py).map(Vec::as_slice).unwrap_or_default();
        match classes.iter().find(|(code, _)| *code == error.code()) {
            Some((_, class)) => PyErr::from_type(class.bind(py).clone(), message),
            None => ObjstoreError::new_err(message),
        }
    })
}

fn to_py<T>(result: Result<T>) -> PyResult<T> {
    result.map_err(|e| py_err(&e))
}

fn parse(what: &str, text: &str) -> PyResult<Value> {
    to_py(json::parse(what, text))
}

/// A key given as JSON text, or none.
fn optional_key(text: Option<&str>) -> PyResult<Option<Key>> {
    to_py(json::optional_key(parse_opt("key", text)?.as_ref()))
}

fn parse_opt(what: &str, text: Option<&str>) -> PyResult<Option<Value>> {
    text.map(|t| parse(what, t)).transpose()
}

fn mode(name: &str) -> PyResult<Mode> {
    match name {
        "readonly" => Ok(Mode::ReadOnly),
        "readwrite" => Ok(Mode::ReadWrite),
        other => Err(py_err(&Error::InvalidArgument(format!(
            "mode {other:?} is not understood (known: \"readonly\", \"readwrite\")"
        )))),
    }
}

// ----- the waker: completions back to an event loop ----------------------------------------------

/// What a completion carries to the loop.
enum Delivery {
    /// A request's result as JSON text, or its error.
    Result(Result<String>),
    /// An event for a listener, as JSON text.
    Event(String),
}

/// Whom a delivery is for: a request's future, or an event listener (shared, so that the
/// library's threads never need the GIL to address it).
enum Target {
    Future(Py<PyAny>),
    Listener(Arc<Py<PyAny>>),
}

/// Set at interpreter exit: from then on completions are dropped, never handed to Python.
static LEAVING: AtomicBool = AtomicBool::new(false);

/// Called by the package's atexit hook.
#[pyfunction]
fn leaving() {
    LEAVING.store(true, Ordering::Release);
}

/// The queue of one event loop's deliveries, and the pipe that wakes the loop: the loop watches
/// its read end (`add_reader`), and a delivery into an empty queue writes one byte to it. The
/// library's threads never take the GIL, so they never wait for a Python thread (and a Python
/// thread that releases the GIL for a moment does not hand it to them).
struct WakerInner {
    pending: Mutex<Vec<(Target, Delivery)>>,
    read_fd: libc::c_int,
    write_fd: libc::c_int,
}

impl WakerInner {
    fn new() -> std::io::Result<WakerInner> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for fd in fds {
            // Non-blocking both ways: a full pipe already holds a wake-up; an empty one is drained.
            // SAFETY: fd is one of the two descriptors pipe(2) just opened.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        Ok(WakerInner { pending: Mutex::default(), read_fd: fds[0], write_fd: fds[1] })
    }

    /// Queues a delivery and wakes the loop when the queue was empty: one wake-up carries every
    /// completion that arrives before the drain.
    fn deliver(&self, target: Target, delivery: Delivery) {
        if LEAVING.load(Ordering::Acquire) {
            // The interpreter is finalizing: a reference count must not be touched any more.
            std::mem::forget(target);
            return;
        }
        let first = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.push((target, delivery));
            pending.len() == 1
        };
        if first {
            // SAFETY: write_fd stays open while this WakerInner lives. A full pipe (EAGAIN)
            // means a wake-up is already on its way.
            unsafe { libc::write(self.write_fd, [1u8].as_ptr().cast(), 1) };
        }
    }

    /// Empties the pipe; wake-ups written after this are for deliveries not yet taken.
    fn clear_pipe(&self) {
        let mut buf = [0u8; 256];
        // SAFETY: read_fd stays open while this WakerInner lives; buf is writable for its length.
        while unsafe { libc::read(self.read_fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

impl Drop for WakerInner {
    fn drop(&mut self) {
        // SAFETY: the descriptors are this WakerInner's own, closed once, when no thread can
        // write to them any more.
        unsafe {
            libc::close(self.read_fd);
            libc::close(self.write_fd);
        }
    }
}

/// One per event loop.
#[pyclass(frozen, module = "objstore_db._native")]
struct Waker {
    inner: Arc<WakerInner>,
}

#[pymethods]
impl Waker {
    #[new]
    fn new() -> PyResult<Self> {
        let inner = WakerInner::new().map_err(|e| {
            py_err(&Error::Aborted {
                code: ErrorCode::Storage,
                status: ErrorCode::Storage.status(),
                message: format!("cannot make a wake-up pipe: {e}"),
            })
        })?;
        Ok(Waker { inner: Arc::new(inner) })
    }

    /// The descriptor the loop watches for readability (`loop.add_reader`).
    fn fileno(&self) -> i32 {
        self.inner.read_fd
    }

    /// The deliveries waiting, as `(target, kind, payload)`: kind 0 is a result (payload: JSON
    /// text), 1 an error (payload: the exception), 2 an event (payload: JSON text).
    fn take(&self, py: Python<'_>) -> Vec<(Py<PyAny>, u8, PyObject)> {
        self.inner.clear_pipe();
        let pending = std::mem::take(&mut *self.inner.pending.lock().unwrap_or_else(|p| p.into_inner()));
        pending
            .into_iter()
            .map(|(target, delivery)| {
                let target = match target {
                    Target::Future(future) => future,
                    Target::Listener(listener) => listener.clone_ref(py),
                };
                let (kind, payload) = match delivery {
                    Delivery::Result(Ok(text)) => (0, text.into_pyobject(py).unwrap().into_any().unbind()),
                    Delivery::Result(Err(e)) => (1, py_err(&e).into_value(py).into_any()),
                    Delivery::Event(text) => (2, text.into_pyobject(py).unwrap().into_any().unbind()),
                };
                (target, kind, payload)
            })
            .collect()
    }
}

type Done<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// A completion that resolves `future` through `waker` with the result as JSON text (the JSON
/// edge's, as the C API and Node send it).
fn done_json<T: IntoJson + Send + 'static>(waker: &Waker, future: Py<PyAny>) -> Done<T> {
    let inner = waker.inner.clone();
    Box::new(move |result: Result<T>| {
        inner.deliver(Target::Future(future), Delivery::Result(result.map(json::text)));
    })
}

/// Makes a request with the GIL released; an argument error is raised at once.
fn request<T: IntoJson + Send + 'static>(
    py: Python<'_>,
    waker: &Waker,
    future: Py<PyAny>,
    start: impl FnOnce(Done<T>) -> Result<RequestId> + Send,
) -> PyResult<RequestId> {
    let done = done_json(waker, future);
    to_py(py.allow_threads(move || start(done)))
}

/// As `request`, for a request whose result is JSON text already.
fn request_text(
    py: Python<'_>,
    waker: &Waker,
    future: Py<PyAny>,
    start: impl FnOnce(Done<String>) -> Result<RequestId> + Send,
) -> PyResult<RequestId> {
    let inner = waker.inner.clone();
    let done: Done<String> = Box::new(move |r| inner.deliver(Target::Future(future), Delivery::Result(r)));
    to_py(py.allow_threads(move || start(done)))
}

/// A read's answer given inside the call, as the waker gives completions: `(0, JSON text)` or
/// `(1, exception)`; `None` when it could not be answered now (then the caller makes the
/// request).
type Now = Option<(u8, PyObject)>;

fn answer_now(py: Python<'_>, now: impl FnOnce() -> Option<Result<String>> + Send) -> PyResult<Now> {
    Ok(py.allow_threads(now).map(|answer| match answer {
        Ok(text) => (0, text.into_pyobject(py).unwrap().into_any().unbind()),
        Err(e) => (1, py_err(&e).into_value(py).into_any()),
    }))
}

fn scan_kind(kind: &str) -> PyResult<ReadKind> {
    match kind {
        "count" => Ok(ReadKind::Count),
        "keys" => Ok(ReadKind::Keys),
        "values" => Ok(ReadKind::Values),
        other => Err(py_err(&Error::InvalidArgument(format!("scan kind {other:?} is not understood")))),
    }
}

fn read(fresh: bool) -> Freshness {
    if fresh {
        Freshness::Fresh
    } else {
        Freshness::Cached
    }
}

// ----- the database ---------------------------------------------------------------------------

#[pyclass(frozen, module = "objstore_db._native")]
struct Database {
    db: Db,
}

/// Opens a database; `future` resolves with `{"version", "stores"}` once it is open.
#[pyfunction]
#[pyo3(signature = (waker, future, name, schema, options))]
fn open(
    py: Python<'_>,
    waker: &Waker,
    future: Py<PyAny>,
    name: &str,
    schema: Option<&str>,
    options: Option<&str>,
) -> PyResult<Database> {
    let schema = to_py(json::schema(parse_opt("schema", schema)?.as_ref()))?;
    let options = to_py(json::open_options(parse_opt("open options", options)?.as_ref()))?;
    let done = done_json::<Opened>(waker, future);
    let name = name.to_string();
    let db = to_py(py.allow_threads(move || Db::open(&name, schema, &options, done)))?;
    Ok(Database { db })
}

#[pymethods]
impl Database {
    #[pyo3(signature = (waker, future, store, value, key=None, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        value: &str,
        key: Option<&str>,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let (value, key) = (to_py(json::record("value", value))?, optional_key(key)?);
        request(py, waker, future, |done| self.db.put(tx, store, value, key, done))
    }

    #[pyo3(signature = (waker, future, store, value, key=None, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        value: &str,
        key: Option<&str>,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let (value, key) = (to_py(json::record("value", value))?, optional_key(key)?);
        request(py, waker, future, |done| self.db.add(tx, store, value, key, done))
    }

    #[pyo3(signature = (waker, future, store, values, tx=None))]
    fn put_many(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        values: &str,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let records = to_py(json::records("values", values))?;
        request(py, waker, future, |done| self.db.put_many(tx, store, records, done))
    }

    /// The record as the JSON text it is stored as (`null` when there is none).
    #[pyo3(signature = (waker, future, store, key, fresh=false, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn get(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        key: &str,
        fresh: bool,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let key = to_py(json::key(&parse("key", key)?))?;
        request_text(py, waker, future, |done| self.db.get(tx, store, key, read(fresh), AsText, done))
    }

    #[pyo3(signature = (waker, future, store, keys, fresh=false, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn values_of(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        keys: &str,
        fresh: bool,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let keys = to_py(json::keys(&parse("keys", keys)?))?;
        request_text(py, waker, future, |done| self.db.values_of(tx, store, keys, read(fresh), AsText, done))
    }

    #[pyo3(signature = (waker, future, store, target, tx=None))]
    fn remove(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        target: &str,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let target = to_py(json::target(&parse("key or range", target)?))?;
        request(py, waker, future, |done| self.db.remove(tx, store, target, done))
    }

    #[pyo3(signature = (waker, future, store, tx=None))]
    fn clear(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.clear(tx, store, done))
    }

    /// `kind`: "count", "keys" or "values"; `scan`: `{"index", "range", "limit", "offset",
    /// "reverse", "unique"}`.
    #[pyo3(signature = (waker, future, store, kind, scan=None, fresh=false, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        kind: &str,
        scan: Option<&str>,
        fresh: bool,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let kind = scan_kind(kind)?;
        let scan = to_py(json::scan(parse_opt("scan options", scan)?.as_ref()))?;
        request_text(py, waker, future, |done| self.db.read_scan(tx, store, kind, scan, read(fresh), AsText, done))
    }

    /// `get` answered inside the call when the database is idle and the store not synced
    /// (see `answer_now`).
    #[pyo3(signature = (store, key, fresh=false))]
    fn get_now(&self, py: Python<'_>, store: &str, key: &str, fresh: bool) -> PyResult<Now> {
        let key = to_py(json::key(&parse("key", key)?))?;
        answer_now(py, || self.db.get_now(store, &key, read(fresh), AsText))
    }

    #[pyo3(signature = (store, keys, fresh=false))]
    fn values_of_now(&self, py: Python<'_>, store: &str, keys: &str, fresh: bool) -> PyResult<Now> {
        let keys = to_py(json::keys(&parse("keys", keys)?))?;
        answer_now(py, || self.db.values_of_now(store, &keys, read(fresh), AsText))
    }

    #[pyo3(signature = (store, kind, scan=None, fresh=false))]
    fn scan_now(&self, py: Python<'_>, store: &str, kind: &str, scan: Option<&str>, fresh: bool) -> PyResult<Now> {
        let kind = scan_kind(kind)?;
        let scan = to_py(json::scan(parse_opt("scan options", scan)?.as_ref()))?;
        answer_now(py, || self.db.read_scan_now(store, kind, &scan, read(fresh), AsText))
    }

    #[pyo3(signature = (waker, future, text, params=None, tx=None))]
    fn sql(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        text: &str,
        params: Option<&str>,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let params = to_py(json::sql_params(parse_opt("SQL parameters", params)?.as_ref()))?;
        request(py, waker, future, |done| self.db.sql(tx, text, params, done))
    }

    fn begin(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        stores: &str,
        mode_: &str,
    ) -> PyResult<RequestId> {
        let (stores, mode) = (to_py(json::stores(&parse("stores", stores)?))?, mode(mode_)?);
        request(py, waker, future, |done| self.db.begin(stores, mode, done))
    }

    fn commit(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, tx: u64) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.commit(tx, done))
    }

    fn abort(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, tx: u64) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.abort(tx, done))
    }

    /// Calls `listener` on the loop of `waker` with each event's JSON text; the future
    /// resolves with the subscription's id.
    #[pyo3(signature = (waker, future, listener, filter=None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        listener: Py<PyAny>,
        filter: Option<&str>,
    ) -> PyResult<RequestId> {
        let filter = to_py(json::event_filter(parse_opt("event filter", filter)?.as_ref()))?;
        let (inner, listener) = (waker.inner.clone(), Arc::new(listener));
        let forward = move |event: &objstore_db_core::Event| {
            inner.deliver(Target::Listener(listener.clone()), Delivery::Event(json::event_json(event).to_string()))
        };
        request(py, waker, future, |done| self.db.subscribe(filter, forward, done))
    }

    fn unsubscribe(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, id: u64) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.unsubscribe(id, done))
    }

    fn schema(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.schema(done))
    }

    fn query(&self, spec: &str) -> PyResult<Query> {
        let spec = to_py(objstore_db_core::Query::from_json(&parse("query", spec)?))?;
        Ok(Query { query: to_py(self.db.query(spec))? })
    }

    // ----- sync -------------------------------------------------------------------------------

    fn flush(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.flush(done))
    }

    fn prefetch(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, store: &str) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.prefetch(store, done))
    }

    fn checkpoint(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, store: &str) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.checkpoint(store, done))
    }

    fn set_offline(&self, offline: bool) -> PyResult<()> {
        to_py(self.db.set_offline(offline))
    }

    fn sync_stats(&self, reset: bool) -> String {
        json::text(self.db.sync_stats(reset))
    }

    fn refused_writes(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.db.refused_writes(done))
    }

    fn resolve(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        sequence: u64,
        resolution: &str,
    ) -> PyResult<RequestId> {
        let resolution = to_py(Resolution::from_name(resolution))?;
        request(py, waker, future, |done| self.db.resolve(sequence, resolution, done))
    }

    fn sync_status(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        key: &str,
    ) -> PyResult<RequestId> {
        let key = to_py(json::key(&parse("key", key)?))?;
        request(py, waker, future, |done| self.db.sync_status(store, key, done))
    }

    fn withdraw_pending(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        store: &str,
        key: &str,
    ) -> PyResult<RequestId> {
        let key = to_py(json::key(&parse("key", key)?))?;
        request(py, waker, future, |done| self.db.withdraw_pending(store, key, done))
    }

    // ----- lifetime ---------------------------------------------------------------------------

    /// Whether request `id` was still pending (it then completes with RequestCancelledError).
    fn cancel(&self, id: RequestId) -> bool {
        self.db.cancel(id)
    }

    /// Closes; the future resolves last of all this database's completions.
    fn close(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>) -> PyResult<()> {
        let done = done_json::<()>(waker, future);
        to_py(py.allow_threads(|| self.db.close(done)))
    }

    /// Closes with no completion to deliver (at interpreter exit); never waits.
    fn close_quietly(&self) {
        let _ = self.db.close(|_| {});
    }

    fn is_closed(&self) -> bool {
        self.db.is_closed()
    }
}

// ----- queries and cursors ----------------------------------------------------------------------

#[pyclass(frozen, module = "objstore_db._native")]
struct Query {
    query: QueryHandle,
}

#[pymethods]
impl Query {
    #[pyo3(signature = (waker, future, n, fresh=false, tx=None))]
    fn list(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        n: usize,
        fresh: bool,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        request_text(py, waker, future, |done| self.query.list(tx, n, read(fresh), AsText, done))
    }

    #[pyo3(signature = (waker, future, fresh=false, tx=None))]
    fn count(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        fresh: bool,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.query.count(tx, read(fresh), done))
    }

    #[pyo3(signature = (n, fresh=false))]
    fn list_now(&self, py: Python<'_>, n: usize, fresh: bool) -> PyResult<Now> {
        answer_now(py, || self.query.list_now(n, read(fresh), AsText))
    }

    #[pyo3(signature = (fresh=false))]
    fn count_now(&self, py: Python<'_>, fresh: bool) -> PyResult<Now> {
        answer_now(py, || self.query.count_now(read(fresh)).map(|r| r.map(|n| n.to_string())))
    }

    #[pyo3(signature = (waker, future, tx=None))]
    fn explain(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, tx: Option<u64>) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.query.explain(tx, done))
    }

    #[pyo3(signature = (waker, future, patch, tx=None))]
    fn patch(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        patch: &str,
        tx: Option<u64>,
    ) -> PyResult<RequestId> {
        let patch = parse("patch", patch)?;
        request(py, waker, future, |done| self.query.patch(tx, patch, done))
    }

    #[pyo3(signature = (waker, future, tx=None))]
    fn delete(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, tx: Option<u64>) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.query.delete(tx, done))
    }

    #[pyo3(signature = (mode_, tx=None))]
    fn cursor(&self, mode_: &str, tx: Option<u64>) -> PyResult<QueryCursor> {
        Ok(QueryCursor { cursor: self.query.cursor(tx, mode(mode_)?) })
    }
}

#[pyclass(frozen, module = "objstore_db._native")]
struct QueryCursor {
    cursor: Cursor,
}

#[pymethods]
impl QueryCursor {
    #[pyo3(signature = (waker, future, n, fresh=false))]
    fn next(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, n: usize, fresh: bool) -> PyResult<RequestId> {
        request(py, waker, future, |done| self.cursor.next(n, read(fresh), done))
    }

    fn update(
        &self,
        py: Python<'_>,
        waker: &Waker,
        future: Py<PyAny>,
        primary_key: &str,
        value: &str,
    ) -> PyResult<RequestId> {
        let (key, value) = (to_py(json::key(&parse("primary key", primary_key)?))?, parse("value", value)?);
        request(py, waker, future, |done| self.cursor.update(key, value, done))
    }

    fn delete(&self, py: Python<'_>, waker: &Waker, future: Py<PyAny>, primary_key: &str) -> PyResult<RequestId> {
        let key = to_py(json::key(&parse("primary key", primary_key)?))?;
        request(py, waker, future, |done| self.cursor.delete(key, done))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Waker>()?;
    m.add_class::<Database>()?;
    m.add_class::<Query>()?;
    m.add_class::<QueryCursor>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(leaving, m)?)?;
    m.add("__version__", objstore_db_core::VERSION)?;
    m.add("ObjstoreError", py.get_type::<ObjstoreError>())?;
    let classes = ERROR_CLASSES.get_or_try_init(py, || error_classes(py))?;
    for (code, class) in classes {
        m.add(code.python_class(), class.bind(py))?;
    }
    m.add("ERROR_CLASSES", ErrorCode::ALL.iter().map(|code| code.python_class()).collect::<Vec<_>>())?;
    Ok(())
}
