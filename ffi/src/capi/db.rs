//! The database: version and status names, open, close, free and cancel, the single-request
//! operations (put, add, get, values_of, remove, clear, read, sql), the schema, and events.

use super::*;

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
