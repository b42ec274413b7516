/* Quickstart in C: open a database file, write test results, read the newest run of each
 * platform/runtime pair through a compound index, and print them.
 *
 *   cc -std=c99 quickstart.c $(pkg-config --cflags --libs objstore_db) -o quickstart
 *   ./quickstart [file.sqlite3]
 *
 * Every call completes through a callback on the database's worker thread; this program
 * waits for each one with a mutex and a condition variable. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore_db.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    objstore_status status;
    char *result;
} reply;

static void on_reply(void *user_data, objstore_status status, const char *result, size_t len) {
    reply *r = user_data;
    pthread_mutex_lock(&r->lock);
    free(r->result);
    r->result = malloc(len + 1);
    memcpy(r->result, result, len + 1);
    r->status = status;
    r->done = 1;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/* Waits for the reply to a call that returned `started`; exits on any error. */
static const char *await(reply *r, objstore_status started, char *error) {
    if (started != OBJSTORE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", objstore_status_name(started), error ? error : "");
        objstore_string_free(error);
        exit(1);
    }
    pthread_mutex_lock(&r->lock);
    while (!r->done) pthread_cond_wait(&r->cond, &r->lock);
    r->done = 0;
    pthread_mutex_unlock(&r->lock);
    if (r->status != OBJSTORE_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", objstore_status_name(r->status), r->result);
        exit(1);
    }
    return r->result;
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
    reply r = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, OBJSTORE_STATUS_OK, NULL};
    char *error = NULL;
    objstore_db *db = NULL;

    printf("objstore-db %s\n", objstore_db_version());
    await(&r, objstore_db_open(path, schema, NULL, on_reply, &r, &db, &error), error);
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        await(&r, objstore_db_put(db, 0, "results", runs[i], strlen(runs[i]), NULL, 0, on_reply, &r, &error), error);
    }

    /* The home view: one newest run per pair (keys sort newest first within a pair). */
    const char *pairs = "{\"index\": \"platform, browser\", \"unique\": true, \"limit\": 50}";
    const char *keys = await(&r, objstore_db_read(db, 0, "results", OBJSTORE_READ_KEYS, pairs, strlen(pairs), on_reply, &r, &error), error);
    char *keys_copy = strdup(keys);
    printf("newest run per pair: %s\n", keys_copy);
    printf("%s\n", await(&r, objstore_db_values_of(db, 0, "results", keys_copy, strlen(keys_copy), on_reply, &r, &error), error));
    free(keys_copy);

    const char *sql = "SELECT COUNT(*) AS runs FROM results WHERE platform = ?";
    const char *params = "[\"linux-x86_64\"]";
    printf("%s\n", await(&r, objstore_db_sql(db, 0, "results", sql, params, strlen(params), on_reply, &r, &error), error));

    await(&r, objstore_db_close(db, on_reply, &r, &error), error);
    objstore_db_free(db);
    free(r.result);
    return 0;
}
