//! The database: version and status names, open, close, free and cancel, the single-request
//! operations (put, add, get, values_of, remove, clear, read, sql), the schema, and events.

use super::*;

/// Returns the library's version, e.g. "0.1.0", as a static NUL-terminated string; do not free
/// it.
#[no_mangle]
pub extern "C" fn objstore_db_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Returns the library's version as major * 1000000 + minor * 1000 + patch, the scheme of
/// OBJSTORE_DB_VERSION_NUMBER (the version this header was made for).
#[no_mangle]
pub extern "C" fn objstore_db_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 1_000_000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 1_000
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// Frees a string the library returned through an out parameter (`*error_out`, `*result_out`).
/// NULL is a harmless no-op.
/// Free each string once. Never pass it a callback's `result`, a listener's `event` or a
/// static string (from objstore_db_version or objstore_status_name).
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

/// Returns the name of a status, e.g. "OBJSTORE_STATUS_CONSTRAINT", as a static NUL-terminated
/// string; do not free it. Any other integer gives "OBJSTORE_STATUS_UNKNOWN".
#[no_mangle]
pub extern "C" fn objstore_status_name(status: i32) -> *const c_char {
    status_name(status).as_ptr()
}

/// Opens the database `name` (for the sqlite mechanism, a file path), creating it if needed,
/// and stores its handle in `*db_out`. `on_open` gets the schema as stored, `{"version",
/// "stores", "previousVersion"}` (`previousVersion`: the version before this open, null for a
/// new database; plus `"warnings"`, a list of texts, when a bucket is known to ignore
/// conditional writes), or the error. A schema without a version keeps the stored one, or
/// takes the next one when it changed; a version lower than the stored one is
/// OBJSTORE_STATUS_SCHEMA naming both.
/// Options: `{"mechanism": "sqlite"|"memory", "durability": "normal"|"full",
/// "idleTransactionTimeoutMs": n, "queueCapacity": n, "syncThreads": n}`, each optional.
/// Durability "normal" (the default) keeps a commit through a crash of the process, "full" (an
/// fsync per commit) through a crash of the machine too. One process at a time opens a file: a
/// second open's `on_open` gets OBJSTORE_STATUS_STORAGE naming the file. Sync credentials
/// (`accessKeyId`, `secretAccessKey`, `sessionToken` in a Sync block's Options) are used but
/// never stored in the file; without them the standard AWS variables and the shared AWS files
/// (`AWS_PROFILE`) are read. Requests may be made at once: they run after the open, or
/// complete with its error.
/// The strings are read during the call and not kept. The handle is the caller's, also when
/// `on_open` reports an error: free it with objstore_db_free. The callback's `result` is
/// owned by the library and valid only during the callback.
/// `on_open` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it
/// runs on the database's worker thread, never inside this call, after `*db_out` is set.
/// `schema_json` NULL: no schema given; `options_json` NULL: the defaults. A NULL `name`,
/// `db_out` or `on_open` is OBJSTORE_STATUS_INVALID_ARGUMENT. On failure `*db_out` is NULL.
/// `error_out` (gets NULL, or on failure a message to free with objstore_string_free) may be
/// NULL.
/// `name`, `schema_json` and `options_json` are NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let schema = json::schema(optional_json_text(schema_json, "schema_json")?.as_ref())?;
        let options = json::open_options(optional_json_text(options_json, "options_json")?.as_ref())?;
        let done = completion(on_open, user_data)?;
        // on_open waits until *db_out is stored, so that it may use the handle.
        let stored = Arc::new((Mutex::new(false), Condvar::new()));
        let latch = stored.clone();
        let db = Db::open(name, schema, &options, move |r| {
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
/// transaction rolls back, the file closes, and then `done` gets OBJSTORE_STATUS_OK and
/// `null`: the last callback this database makes. Later requests on it, and a second close,
/// are refused with OBJSTORE_STATUS_CLOSED. The handle stays allocated until objstore_db_free.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call. This function may be called from a
/// callback of this database.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT. `error_out` (gets NULL, or on
/// failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        db.close(move |r| done.deliver(r))
    })
}

/// Frees a database handle: closes the database first if needed (queued requests complete with
/// OBJSTORE_STATUS_CANCELLED) and waits until the library's threads for it have ended, so that
/// a program can exit clean. NULL is a harmless no-op.
/// Must not be called from a callback, listener, cursor visitor or transaction body of the
/// same database. The handle must not be used afterwards. Queries and cursors made from it are
/// still freed with their own free functions; their requests are refused with
/// OBJSTORE_STATUS_CLOSED.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_free(db: *mut ObjstoreDb) {
    if !db.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let db = Box::from_raw(db);
            db.db.close_and_join();
        }));
    }
}

/// Cancels request `request` of this database (an id from a `request_out` parameter): a queued
/// request completes with OBJSTORE_STATUS_CANCELLED without running; a running fetch, prefetch
/// or flush stops at its next batch or HTTP request. Returns true if the request had not
/// completed yet (one already running may still finish normally), false otherwise or when `db`
/// is NULL.
/// The request's own callback reports the outcome; this function calls nothing back.
///
/// # Safety
/// The pointers are NULL or valid as described above.
#[no_mangle]
pub unsafe extern "C" fn objstore_db_cancel(db: *const ObjstoreDb, request: u64) -> bool {
    catch_unwind(AssertUnwindSafe(|| db_ref(db).map(|db| db.cancel(request)).unwrap_or(false))).unwrap_or(false)
}

// ----- single requests (each function's comment stands alone) ----------------------------

/// Writes a record (JSON) into `store`, replacing any under the same key; the result is its
/// key (JSON). `tx`: 0 for a transaction of its own, or an id from objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// `key_json` NULL (or JSON null): no key given, for stores with an inline key path or
/// generated keys. A NULL `db`, `store`, `value_json` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// JSON arguments are `*_len` bytes, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let value = record(value_json, value_len, "value_json")?;
        let key = json::optional_key(optional_json(key_json, key_len, "key_json")?.as_ref())?;
        let done = completion(done, user_data)?;
        db.put(within(tx), store, value, key, move |r| done.deliver(r))
    })
}

/// Writes a new record (JSON) into `store`: an existing key or a unique-index clash completes
/// with OBJSTORE_STATUS_CONSTRAINT and writes nothing. The result is its key (JSON). `tx`: 0
/// for a transaction of its own, or an id from objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// `key_json` NULL (or JSON null): no key given, for stores with an inline key path or
/// generated keys. A NULL `db`, `store`, `value_json` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// JSON arguments are `*_len` bytes, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let value = record(value_json, value_len, "value_json")?;
        let key = json::optional_key(optional_json(key_json, key_len, "key_json")?.as_ref())?;
        let done = completion(done, user_data)?;
        db.add(within(tx), store, value, key, move |r| done.deliver(r))
    })
}

/// Reads the record under `key_json` in `store`; the result is the record, or `null` if there
/// is none. `tx`: 0 for a transaction of its own, or an id from objstore_db_begin.
/// `flags`: 0, or OBJSTORE_READ_FRESH to ask the bucket before answering (synced stores;
/// ignored when `tx` is not 0: a transaction reads the local copy), with OBJSTORE_READ_INLINE
/// to let it complete inside this call when it can (`*request_out` is then 0).
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), inside this call only with OBJSTORE_READ_INLINE.
/// A NULL `db`, `store`, `key_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `key_json` is `key_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let key = json::key(&json(key_json, key_len, "key_json")?)?;
        let (flags, done) = (read_flags(flags)?, completion(done, user_data)?);
        read_now_or_later(
            db,
            &flags,
            tx,
            done,
            || db.get_now(store, &key, flags.freshness, AsText),
            |done| db.get(within(tx), store, key.clone(), flags.freshness, AsText, move |r| done.deliver_text(r)),
        )
    })
}

/// Reads the records under `keys_json`, a JSON array of keys; the result is an array of the
/// records, `null` where there is none. For a synced store, what the cache lacks is fetched in
/// parallel. `tx`: 0 for a transaction of its own, or an id from objstore_db_begin.
/// `flags`: 0, or OBJSTORE_READ_FRESH to ask the bucket before answering (synced stores;
/// ignored when `tx` is not 0: a transaction reads the local copy), with OBJSTORE_READ_INLINE
/// to let it complete inside this call when it can (`*request_out` is then 0).
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), inside this call only with OBJSTORE_READ_INLINE.
/// A NULL `db`, `store`, `keys_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `keys_json` is `keys_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let keys = json::keys(&json(keys_json, keys_len, "keys_json")?)?;
        let (flags, done) = (read_flags(flags)?, completion(done, user_data)?);
        read_now_or_later(
            db,
            &flags,
            tx,
            done,
            || db.values_of_now(store, &keys, flags.freshness, AsText),
            |done| {
                db.values_of(within(tx), store, keys.clone(), flags.freshness, AsText, move |r| done.deliver_text(r))
            },
        )
    })
}

/// Removes the record under a key, or the records in a key range (`{"lower": .., "upper": ..,
/// "lowerOpen"?, "upperOpen"?}`, `{"only": k}`, `{"starts": prefix}`), of `store`; the result
/// is how many were removed. `tx`: 0 for a transaction of its own, or an id from
/// objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db`, `store`, `key_or_range_json` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `key_or_range_json` is `len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let target = json::target(&json(key_or_range_json, len, "key_or_range_json")?)?;
        let done = completion(done, user_data)?;
        db.remove(within(tx), store, target, move |r| done.deliver(r))
    })
}

/// Removes every record of `store`; the result is `null`. `tx`: 0 for a transaction of its
/// own, or an id from objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db`, `store` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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

/// Counts the records of a store or index (`kind` OBJSTORE_READ_COUNT: a number), lists their
/// primary keys (OBJSTORE_READ_KEYS: an array) or reads them (OBJSTORE_READ_VALUES: an array
/// of records); another `kind` is OBJSTORE_STATUS_INVALID_ARGUMENT. `scan_json`: `{"index"?,
/// "range"?, "limit"?, "offset"?, "reverse"?, "unique"?}`, a range being `{"lower": k,
/// "upper": k, "lowerOpen"?, "upperOpen"?}` (either bound may be left out), `{"only": k}` or
/// `{"starts": prefix}`, and a key plain JSON, `{"$date": ms}` or `{"$binary": hex}`. `tx`: 0 for a transaction of its
/// own, or an id from objstore_db_begin.
/// `flags`: 0, or OBJSTORE_READ_FRESH to ask the bucket before answering (synced stores;
/// ignored when `tx` is not 0: a transaction reads the local copy), with OBJSTORE_READ_INLINE
/// to let it complete inside this call when it can (`*request_out` is then 0).
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), inside this call only with OBJSTORE_READ_INLINE.
/// `scan_json` NULL: the whole store. A NULL `db`, `store` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `scan_json` is `scan_len` bytes of JSON, no NUL needed; `store` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let scan = json::scan(optional_json(scan_json, scan_len, "scan_json")?.as_ref())?;
        let (flags, done) = (read_flags(flags)?, completion(done, user_data)?);
        read_now_or_later(
            db,
            &flags,
            tx,
            done,
            || db.read_scan_now(store, kind, &scan, flags.freshness, AsText),
            |done| {
                let scan = scan.clone();
                db.read_scan(within(tx), store, kind, scan, flags.freshness, AsText, move |r| done.deliver_text(r))
            },
        )
    })
}

/// Runs one SQL statement with bound parameters (`params_json`: a JSON array); the store and
/// whether it writes come from the statement. The result is `{"rows": [...]}` for a SELECT,
/// with `"columns"` (the names it selects, in order) and `"aggregate"` (true for
/// COUNT/MIN/MAX/SUM/AVG: one row) unless it is `SELECT *`, and `{"changed": n}` (records
/// written) for INSERT, UPDATE and DELETE. `tx`: 0 for a transaction of its own, or an id from
/// objstore_db_begin.
/// Arguments are read during the call and not kept; the callback's `result` is owned by the
/// library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on a library thread (the database's worker or its sync agent's), never inside this call.
/// `params_json` NULL: no parameters. A NULL `db`, `sql` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `params_json` is `params_len` bytes of JSON, no NUL needed; `sql` is NUL-terminated UTF-8.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let params = json::sql_params(optional_json(params_json, params_len, "params_json")?.as_ref())?;
        let done = completion(done, user_data)?;
        db.sql(within(tx), sql, params, move |r| done.deliver(r))
    })
}

/// Gets the schema as the database has it now: the result is `{"version", "stores"}` (default
/// index names filled in, no credentials).
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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

/// Subscribes `listener` to the database's events, each `{"kind", "store", "key", "value",
/// "message"}` as JSON, chosen by `filter_json` (`{"kinds"?: [...], "store"?: name}`). The
/// result is the subscription's id (a JSON number) for objstore_db_unsubscribe.
/// The filter is read during the call and not kept; the callback's `result` and the listener's
/// `event` are owned by the library and valid only during that call.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call. `listener` runs on the worker
/// thread, with `listener_data`, for each event until unsubscribed or the database closes.
/// `filter_json` NULL: every event. A NULL `db`, `listener` or `done` is
/// OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
/// `filter_json` is `filter_len` bytes of JSON, no NUL needed.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
        let filter = json::event_filter(optional_json(filter_json, filter_len, "filter_json")?.as_ref())?;
        let listener =
            Listener(listener.ok_or_else(|| Error::InvalidArgument("the listener is NULL".into()))?, listener_data);
        let done = completion(done, user_data)?;
        db.subscribe(
            filter,
            move |event| {
                let listener = &listener;
                let event = c_string(json::event_json(event).to_string());
                let _ =
                    catch_unwind(AssertUnwindSafe(|| (listener.0)(listener.1, event.as_ptr(), event.as_bytes().len())));
            },
            move |r| done.deliver(r),
        )
    })
}

/// Ends subscription `subscription` (an id from objstore_db_subscribe); the result is `true`,
/// or `false` if there was none with that id.
/// The callback's `result` is owned by the library and valid only during the callback.
/// `done` is called exactly once if this returns OBJSTORE_STATUS_OK, never otherwise; it runs
/// on the database's worker thread, never inside this call.
/// A NULL `db` or `done` is OBJSTORE_STATUS_INVALID_ARGUMENT.
/// `request_out` (gets the id for objstore_db_cancel, 0 on failure) and `error_out` (gets
/// NULL, or on failure a message to free with objstore_string_free) may be NULL.
///
/// # Safety
/// The pointers are NULL or valid as described above.
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
