/* Quickstart in C: open a database file, write test results, read the newest run of each
 * platform/runtime pair through a compound index, and print them.
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

/* Checks the call's own status (its message is in `error`, set by the call), then waits for
 * the request and returns its result (JSON; the caller frees it). Exits on any error. */
static char *await(objstore_status started, char *error) {
    if (started != OBJSTORE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", objstore_status_name(started), error ? error : "");
        objstore_string_free(error);
        exit(1);
    }
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

    started = objstore_db_close(db, objstore_waiter_callback, waiter, &error);
    objstore_string_free(await(started, error));
    objstore_db_free(db);
    objstore_waiter_free(waiter);
    return 0;
}
