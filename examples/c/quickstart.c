/* Quickstart in C: open a database file, listen for changes, write test results, read the
 * newest run of each platform/runtime pair through a compound index, count with SQL, write in
 * a transaction body, page through a query and walk it with a pull cursor.
 *
 *   cc -std=c99 quickstart.c $(pkg-config --cflags --libs objstore_db) -o quickstart
 *   ./quickstart [file.sqlite3]
 *
 * Every call completes through a callback on a library thread. This program waits for each
 * one with an objstore_waiter: pass objstore_waiter_callback and the waiter as the callback
 * and its user data, then objstore_waiter_wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore_db.h"

static objstore_waiter *waiter;

/* A listener runs on the database's worker thread; this one counts what it was told. */
static int created_events = 0;
static void on_event(void *user_data, const char *event, size_t event_len) {
    (void)user_data;
    (void)event;
    (void)event_len;
    created_events++;
}

/* A transaction body runs on the worker too, with synchronous objstore_tx_* calls; returning
 * anything but 0 rolls back all it did. */
static int32_t add_python_run(void *user_data, struct objstore_tx *tx) {
    (void)user_data;
    const char *run = "{\"id\": \"linux-x86_64/python/9998\", \"platform\": \"linux-x86_64\", \"browser\": \"python\", \"crud\": true}";
    char *key = NULL;
    size_t key_len = 0;
    objstore_status status = objstore_tx_put(tx, "results", run, strlen(run), NULL, 0, true, &key, &key_len, NULL);
    objstore_string_free(key);
    return status;
}

/* Checks a call's own status (its message is in `error`, set by the call); exits on failure. */
static void must(objstore_status status, char *error) {
    if (status != OBJSTORE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", objstore_status_name(status), error ? error : "");
        objstore_string_free(error);
        exit(1);
    }
}

/* Checks the call's own status, then waits for the request and returns its result (JSON; the
 * caller frees it). Exits on any error. */
static char *await(objstore_status started, char *error) {
    must(started, error);
    char *result = NULL;
    objstore_status status = objstore_waiter_wait(waiter, 10000, &result);
    if (status != OBJSTORE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", objstore_status_name(status), result ? result : "");
        exit(1);
    }
    return result;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "quickstart-c.sqlite3";
    const char *schema =
        "{\"stores\": [{\"name\": \"results\", \"keyPath\": \"id\", \"indexes\": ["
        "{\"keyPath\": \"platform\"}, {\"keyPath\": [\"platform\", \"browser\"]}]}]}";
    const char *runs[] = {
        "{\"id\": \"linux-x86_64/c/9998\", \"platform\": \"linux-x86_64\", \"browser\": \"c\", \"crud\": true, \"sql\": true}",
        "{\"id\": \"linux-x86_64/c/9999\", \"platform\": \"linux-x86_64\", \"browser\": \"c\", \"crud\": true, \"sql\": false}",
        "{\"id\": \"linux-x86_64/rust/9998\", \"platform\": \"linux-x86_64\", \"browser\": \"rust\", \"crud\": true, \"sql\": true}",
        "{\"id\": \"macos-arm64/c/9998\", \"platform\": \"macos-arm64\", \"browser\": \"c\", \"crud\": false, \"sql\": true}",
    };
    objstore_db *db = NULL;
    char *error = NULL;
    objstore_status started;
    waiter = objstore_waiter_new();

    printf("objstore-db %s\n", objstore_db_version());
    /* The call runs first and sets `error`; only then is `error` read. */
    started = objstore_db_open(path, schema, NULL, objstore_waiter_callback, waiter, &db, &error);
    objstore_string_free(await(started, error));
    const char *created = "{\"kinds\": [\"created\"]}";
    started = objstore_db_subscribe(db, created, strlen(created), on_event, NULL, objstore_waiter_callback, waiter, NULL, &error);
    objstore_string_free(await(started, error));
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        started = objstore_db_put(db, 0, "results", runs[i], strlen(runs[i]), NULL, 0, objstore_waiter_callback, waiter, NULL, &error);
        objstore_string_free(await(started, error));
    }

    /* The home view: one newest run per pair (keys sort newest first within a pair). */
    const char *pairs = "{\"index\": \"platform, browser\", \"unique\": true, \"limit\": 50}";
    started = objstore_db_read(db, 0, "results", OBJSTORE_READ_KEYS, pairs, strlen(pairs), 0, objstore_waiter_callback, waiter, NULL, &error);
    char *keys = await(started, error);
    printf("newest run per pair: %s\n", keys);
    started = objstore_db_values_of(db, 0, "results", keys, strlen(keys), 0, objstore_waiter_callback, waiter, NULL, &error);
    char *values = await(started, error);
    printf("%s\n", values);
    objstore_string_free(values);
    objstore_string_free(keys);

    const char *sql = "SELECT COUNT(*) AS runs FROM results WHERE platform = ?";
    const char *params = "[\"linux-x86_64\"]";
    started = objstore_db_sql(db, 0, sql, params, strlen(params), objstore_waiter_callback, waiter, NULL, &error);
    char *count = await(started, error);
    printf("%s\n", count);
    objstore_string_free(count);

    /* A transaction body: all of it or nothing. */
    started = objstore_db_transaction(db, "[\"results\"]", strlen("[\"results\"]"), OBJSTORE_MODE_READWRITE, add_python_run, NULL,
                                      objstore_waiter_callback, waiter, NULL, &error);
    objstore_string_free(await(started, error));

    /* A query pages on from call to call; a pull cursor walks every match in batches. */
    const char *spec = "{\"from\": \"results\", \"where\": [[\"platform\", \"=\", \"linux-x86_64\"]], \"select\": [\"id\"]}";
    objstore_query *query = NULL;
    started = objstore_query_new(db, spec, strlen(spec), &query, &error);
    must(started, error);
    for (int page = 1; page <= 2; page++) {
        started = objstore_query_list(query, 0, 2, 0, objstore_waiter_callback, waiter, NULL, &error);
        char *rows = await(started, error);
        printf("linux page %d: %s\n", page, rows);
        objstore_string_free(rows);
    }
    objstore_cursor *cursor = NULL;
    started = objstore_cursor_open(query, 0, OBJSTORE_MODE_READONLY, &cursor, &error);
    must(started, error);
    started = objstore_cursor_next(cursor, 100, objstore_waiter_callback, waiter, NULL, &error);
    char *batch = await(started, error);
    printf("cursor batch: %s\n", batch);
    objstore_string_free(batch);
    objstore_cursor_free(cursor);
    objstore_query_free(query);

    started = objstore_db_close(db, objstore_waiter_callback, waiter, &error);
    objstore_string_free(await(started, error));
    printf("created events: %d\n", created_events);
    objstore_db_free(db);
    objstore_waiter_free(waiter);
    return 0;
}
