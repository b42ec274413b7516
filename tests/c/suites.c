/* Over 800 lines: every area's suite in one program, so that each build of it (shared, static,
 * sanitizers, valgrind) runs them all.
 * The conformance suites through the C API: crud, cursor, event, transaction, query and sql,
 * plus misuse (NULLs, bad UTF-8 and JSON, use after close, slow callbacks) and sync (against
 * moto: the MOTO_* variables of target/servers/moto.env). Every completion
 * is waited for, and each test checks that no callback fired more than once.
 *
 * Usage: suites <scratch directory> */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define J(text) text, strlen(text)

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}
#define OK OBJSTORE_STATUS_OK

static const char *scratch;
static int db_counter;

static const char *SCHEMA =
    "{\"stores\": ["
    " {\"name\": \"people\", \"keyPath\": \"id\", \"indexes\": ["
    "   {\"keyPath\": \"city\"}, {\"keyPath\": \"email\", \"unique\": true}, {\"keyPath\": [\"city\", \"age\"]}]},"
    " {\"name\": \"notes\", \"autoIncrement\": true}]}";

static const char *PEOPLE[] = {
    "{\"id\": 1, \"name\": \"ada\", \"city\": \"paris\", \"age\": 36, \"email\": \"ada@x\"}",
    "{\"id\": 2, \"name\": \"bob\", \"city\": \"oslo\", \"age\": 25, \"email\": \"bob@x\"}",
    "{\"id\": 3, \"name\": \"cy\", \"city\": \"paris\", \"age\": 25, \"email\": \"cy@x\"}",
    "{\"id\": 4, \"name\": \"dee\", \"city\": \"oslo\", \"age\": 41, \"email\": \"dee@x\"}",
};

/* Opens a fresh database file with `schema`, waits for the open. */
static objstore_db *open_with(waiter *w, const char *schema) {
    char path[512];
    snprintf(path, sizeof path, "%s/c-%d.sqlite3", scratch, ++db_counter);
    const char *suffixes[] = {"", "-wal", "-shm", "-lock"};
    for (int i = 0; i < 4; i++) { /* a fresh file even in a reused scratch directory */
        char stale[600];
        snprintf(stale, sizeof stale, "%s%s", path, suffixes[i]);
        remove(stale);
    }
    objstore_db *db = NULL;
    char *error = NULL;
    objstore_status status = objstore_db_open(path, schema, NULL, on_done, w, &db, &error);
    CHECK(status == OK && db != NULL && error == NULL);
    CHECK(wait_for(w) == OK);
    return db;
}

static objstore_db *open_db(waiter *w) { return open_with(w, SCHEMA); }

static objstore_db *open_seeded(waiter *w) {
    objstore_db *db = open_db(w);
    for (size_t i = 0; i < sizeof PEOPLE / sizeof *PEOPLE; i++) {
        CHECK(objstore_db_put(db, 0, "people", J(PEOPLE[i]), NULL, 0, on_done, w, NULL, NULL) == OK);
        CHECK(wait_for(w) == OK);
    }
    return db;
}

/* Closes and frees, checking that every completion was waited for (none fired twice). */
static void close_db(objstore_db *db, waiter *w) {
    CHECK(objstore_db_close(db, on_done, w, NULL) == OK);
    CHECK(wait_for(w) == OK);
    objstore_db_free(db);
    sleep_ms(20);
    CHECK(w->pending == 0);
}

/* ----- crud ------------------------------------------------------------------------------ */

static void put_then_get_returns_the_record(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    CHECK(objstore_db_put(db, 0, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "1");
    CHECK(objstore_db_get(db, 0, "people", J("1"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"name\":\"ada\"");
    CHECK(objstore_db_get(db, 0, "people", J("99"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "null");
    CHECK(objstore_db_put(db, 0, "notes", J("{\"text\": \"hi\"}"), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "1");
    close_db(db, &w);
    waiter_done(&w);
}

/* A read with OBJSTORE_READ_INLINE completes inside the call when the database is idle
 * (request id 0), and still sees a put made just before it and not awaited. */
static void an_inline_read_completes_inside_the_call_and_sees_earlier_writes(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    uint64_t request = 99;
    int calls = w.calls;
    CHECK(objstore_db_get(db, 0, "people", J("2"), OBJSTORE_READ_INLINE, on_done, &w, &request, NULL) == OK);
    CHECK(w.calls == calls + 1 && request == 0);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"name\":\"bob\"");
    CHECK(objstore_db_put(db, 0, "people", J("{\"id\": 9, \"name\": \"eve\", \"email\": \"eve@x\"}"), NULL, 0,
                          on_done, &w, NULL, NULL) == OK);
    CHECK(objstore_db_get(db, 0, "people", J("9"), OBJSTORE_READ_INLINE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK); /* the put */
    CHECK(wait_for(&w) == OK); /* the get, behind it */
    CHECK_CONTAINS(w.result, "\"name\":\"eve\"");
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, OBJSTORE_READ_INLINE, on_done, &w, NULL,
                           NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "5");
    CHECK(objstore_db_get(db, 0, "people", J("2"), 0, on_done, &w, &request, NULL) == OK);
    CHECK(request != 0); /* without the flag: a request, completed on a library thread */
    CHECK(wait_for(&w) == OK);
    char *error = NULL;
    CHECK(objstore_db_get(db, 0, "people", J("2"), 4, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "OBJSTORE_READ_INLINE");
    objstore_string_free(error);
    close_db(db, &w);
    waiter_done(&w);
}

static void add_of_an_existing_key_is_a_constraint_error(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_add(db, 0, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_CONSTRAINT);
    CHECK_CONTAINS(w.result, "already exists");
    close_db(db, &w);
    waiter_done(&w);
}

static void remove_count_keys_and_values_of(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_remove(db, 0, "people", J("{\"lower\": 2, \"upper\": 3}"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_KEYS, J("{\"index\": \"city\", \"reverse\": true}"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[1,4]");
    CHECK(objstore_db_values_of(db, 0, "people", J("[4, 99]"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"name\":\"dee\"");
    CHECK_CONTAINS(w.result, ",null]");
    CHECK(objstore_db_clear(db, 0, "people", on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    close_db(db, &w);
    waiter_done(&w);
}

/* The open says the version before it (null: new); the schema is readable at any time. */
static void the_schema_and_its_versions_are_readable(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    CHECK_CONTAINS(w.result, "\"previousVersion\":null");
    CHECK(objstore_db_schema(db, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"version\":1");
    CHECK_CONTAINS(w.result, "\"name\":\"people\"");
    close_db(db, &w);
    waiter_done(&w);
}

static void unique_index_keys_give_one_record_per_value(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_KEYS, J("{\"index\": \"city\", \"unique\": true, \"limit\": 50}"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[2,1]");
    close_db(db, &w);
    waiter_done(&w);
}

/* ----- cursor ------------------------------------------------------------------------------ */

typedef struct {
    int seen;
    char update[256];
} cursor_state;

static int32_t raise_ages(void *data, const char *item, size_t len, const char **update, size_t *update_len) {
    cursor_state *state = data;
    state->seen++;
    (void)len;
    if (strstr(item, "\"primaryKey\":3")) {
        snprintf(state->update, sizeof state->update, "%s", "{\"id\": 3, \"name\": \"cy\", \"city\": \"paris\", \"age\": 26, \"email\": \"cy@x\"}");
        *update = state->update;
        *update_len = strlen(state->update);
        return OBJSTORE_CURSOR_UPDATE;
    }
    if (strstr(item, "\"primaryKey\":4")) return OBJSTORE_CURSOR_DELETE;
    return OBJSTORE_CURSOR_CONTINUE;
}

static int32_t stop_at_second(void *data, const char *item, size_t len, const char **update, size_t *update_len) {
    cursor_state *state = data;
    (void)item, (void)len, (void)update, (void)update_len;
    return ++state->seen == 2 ? OBJSTORE_CURSOR_STOP : OBJSTORE_CURSOR_CONTINUE;
}

static void a_cursor_streams_updates_deletes_and_stops(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    objstore_query *q = NULL;
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"order\": \"age\"}"), &q, NULL) == OK);
    cursor_state state = {0, {0}};
    CHECK(objstore_query_open(q, 0, OBJSTORE_MODE_READWRITE, raise_ages, &state, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "4");
    CHECK(state.seen == 4);
    CHECK(objstore_db_get(db, 0, "people", J("3"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"age\":26");
    CHECK(objstore_db_get(db, 0, "people", J("4"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "null");
    cursor_state stop = {0, {0}};
    CHECK(objstore_query_open(q, 0, OBJSTORE_MODE_READONLY, stop_at_second, &stop, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    cursor_state readonly = {0, {0}};
    CHECK(objstore_query_open(q, 0, OBJSTORE_MODE_READONLY, raise_ages, &readonly, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_READ_ONLY);
    objstore_query_free(q);
    close_db(db, &w);
    waiter_done(&w);
}

/* ----- event ------------------------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t lock;
    char log[2048];
} event_log;

static void record_event(void *data, const char *event, size_t len) {
    event_log *log = data;
    pthread_mutex_lock(&log->lock);
    if (strlen(log->log) + len + 2 < sizeof log->log) {
        strcat(log->log, event);
        strcat(log->log, "\n");
    }
    pthread_mutex_unlock(&log->lock);
}

static void events_arrive_after_commit_and_stop_after_unsubscribe(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    event_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    CHECK(objstore_db_subscribe(db, J("{\"kinds\": [\"created\", \"updated\"], \"store\": \"people\"}"), record_event, &log, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    char id[32];
    snprintf(id, sizeof id, "%s", w.result);
    CHECK(objstore_db_put(db, 0, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_put(db, 0, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_unsubscribe(db, strtoull(id, NULL, 10), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "true");
    CHECK(objstore_db_put(db, 0, "people", J(PEOPLE[1]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    pthread_mutex_lock(&log.lock);
    CHECK_CONTAINS(log.log, "\"kind\":\"created\"");
    CHECK_CONTAINS(log.log, "\"kind\":\"updated\"");
    CHECK(strstr(log.log, "\"id\":2") == NULL);
    pthread_mutex_unlock(&log.lock);
    close_db(db, &w);
    pthread_mutex_destroy(&log.lock);
    waiter_done(&w);
}

/* ----- transaction ------------------------------------------------------------------------- */

static int32_t put_two(void *data, objstore_tx *tx) {
    int *fail_after = data;
    char *key = NULL;
    size_t key_len = 0;
    if (objstore_tx_put(tx, "people", J(PEOPLE[0]), NULL, 0, false, &key, &key_len, NULL) != OK) return OBJSTORE_STATUS_INTERNAL;
    int ok = key != NULL && strcmp(key, "1") == 0 && key_len == 1;
    objstore_string_free(key);
    if (!ok) return OBJSTORE_STATUS_INTERNAL;
    if (*fail_after == 1) return OBJSTORE_STATUS_CONSTRAINT;
    char *error = NULL;
    objstore_status clash = objstore_tx_put(tx, "people", J("{\"id\": 9, \"email\": \"ada@x\"}"), NULL, 0, false, NULL, NULL, &error);
    ok = clash == OBJSTORE_STATUS_CONSTRAINT && error != NULL && strstr(error, "unique index") != NULL;
    objstore_string_free(error);
    if (!ok) return OBJSTORE_STATUS_INTERNAL;
    if (*fail_after == 2) return clash; /* gives up with the failed operation's own status */
    return objstore_tx_put(tx, "people", J(PEOPLE[1]), NULL, 0, false, NULL, NULL, NULL);
}

/* Returns the status `data` points at, after one write. */
static int32_t put_then_return(void *data, objstore_tx *tx) {
    if (objstore_tx_put(tx, "people", J(PEOPLE[0]), NULL, 0, false, NULL, NULL, NULL) != OK) return OBJSTORE_STATUS_INTERNAL;
    return *(int32_t *)data;
}

static void a_transaction_body_commits_or_rolls_back_whole(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    int fail_after = 1;
    CHECK(objstore_db_transaction(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, put_two, &fail_after, on_done, &w, NULL, NULL) == OK);
    /* The body's status is the outcome, not INVALID_ARGUMENT. */
    CHECK(wait_for(&w) == OBJSTORE_STATUS_CONSTRAINT);
    CHECK_CONTAINS(w.result, "returned OBJSTORE_STATUS_CONSTRAINT");
    fail_after = 2;
    CHECK(objstore_db_transaction(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, put_two, &fail_after, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_CONSTRAINT);
    CHECK_CONTAINS(w.result, "unique index");
    CHECK_CONTAINS(w.result, "rolled back");
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "0");
    /* A number of the body's own is ABORTED, named in the message (INVALID_ARGUMENT is kept for
       what the caller passed); a C-only status comes back as it was returned. */
    int32_t own = 42;
    CHECK(objstore_db_transaction(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, put_then_return, &own, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_ABORTED);
    CHECK_CONTAINS(w.result, "(42)");
    CHECK_STR(objstore_status_name(OBJSTORE_STATUS_ABORTED), "OBJSTORE_STATUS_ABORTED");
    own = OBJSTORE_STATUS_TIMEOUT;
    CHECK(objstore_db_transaction(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, put_then_return, &own, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_TIMEOUT);
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "0");
    fail_after = 0;
    CHECK(objstore_db_transaction(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, put_two, &fail_after, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    close_db(db, &w);
    waiter_done(&w);
}

/* add, values_of and clear are as complete inside a transaction as outside: in an explicit one
   and in a body. */
static int32_t add_read_and_clear(void *data, objstore_tx *tx) {
    (void)data;
    if (objstore_tx_put(tx, "notes", J("{\"text\": \"kept\"}"), J("\"k\""), true, NULL, NULL, NULL) != OK) return OBJSTORE_STATUS_INTERNAL;
    if (objstore_tx_put(tx, "notes", J("{\"text\": \"again\"}"), J("\"k\""), true, NULL, NULL, NULL) != OBJSTORE_STATUS_CONSTRAINT) return OBJSTORE_STATUS_INTERNAL;
    char *found = NULL;
    size_t found_len = 0;
    if (objstore_tx_values_of(tx, "notes", J("[\"k\", \"none\"]"), &found, &found_len, NULL) != OK) return OBJSTORE_STATUS_INTERNAL;
    int ok = found != NULL && strcmp(found, "[{\"text\":\"kept\"},null]") == 0;
    objstore_string_free(found);
    if (!ok) return OBJSTORE_STATUS_INTERNAL;
    return objstore_tx_clear(tx, "people", NULL);
}

static void add_values_of_and_clear_inside_transactions(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_begin(db, J("[\"people\", \"notes\"]"), OBJSTORE_MODE_READWRITE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    uint64_t tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_add(db, tx, "notes", J("{\"text\": \"one\"}"), J("\"a\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_add(db, tx, "notes", J("{\"text\": \"two\"}"), J("\"a\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_CONSTRAINT);
    CHECK(objstore_db_values_of(db, tx, "notes", J("[\"a\"]"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[{\"text\":\"one\"}]");
    CHECK(objstore_db_clear(db, tx, "notes", on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_commit(db, tx, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_read(db, 0, "notes", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "0");
    CHECK(objstore_db_transaction(db, J("[\"people\", \"notes\"]"), OBJSTORE_MODE_READWRITE, add_read_and_clear, NULL, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_read(db, 0, "people", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "0");
    CHECK(objstore_db_get(db, 0, "notes", J("\"k\""), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"text\":\"kept\"}");
    close_db(db, &w);
    waiter_done(&w);
}

static void explicit_begin_commit_and_abort(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    CHECK(objstore_db_begin(db, J("[\"people\", \"notes\"]"), OBJSTORE_MODE_READWRITE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    uint64_t tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_put(db, tx, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_abort(db, tx, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_get(db, 0, "people", J("1"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "null");
    CHECK(objstore_db_put(db, tx, "people", J(PEOPLE[0]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_TRANSACTION_INACTIVE);
    CHECK_CONTAINS(w.result, "it was aborted");

    CHECK(objstore_db_begin(db, J("[\"people\"]"), OBJSTORE_MODE_READWRITE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_put(db, tx, "people", J(PEOPLE[1]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_commit(db, tx, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_get(db, 0, "people", J("2"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "bob");

    CHECK(objstore_db_begin(db, J("[\"people\"]"), OBJSTORE_MODE_READONLY, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_put(db, tx, "people", J(PEOPLE[2]), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_READ_ONLY);
    CHECK(objstore_db_commit(db, tx, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    close_db(db, &w);
    waiter_done(&w);
}

/* ----- query ------------------------------------------------------------------------------- */

static void list_pages_continue_and_explain_shows_the_plan(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    objstore_query *q = NULL;
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"where\": [[\"city\", \"=\", \"paris\"], [\"age\", \">=\", 20]], \"order\": \"age\", \"select\": [\"id\"]}"), &q, NULL) == OK);
    CHECK(objstore_query_list(q, 0, 1, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[{\"id\":3}]");
    CHECK(objstore_query_list(q, 0, 1, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[{\"id\":1}]");
    CHECK(objstore_query_list(q, 0, 1, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[]");
    CHECK(objstore_query_run(q, 0, OBJSTORE_QUERY_EXPLAIN, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "scan index \\\"city, age\\\"");
    CHECK(objstore_query_run(q, 0, OBJSTORE_QUERY_COUNT, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    CHECK(objstore_query_patch(q, 0, J("{\"city\": \"lyon\"}"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    objstore_query_free(q);
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"where\": [[\"city\", \"=\", \"lyon\"]]}"), &q, NULL) == OK);
    CHECK(objstore_query_run(q, 0, OBJSTORE_QUERY_DELETE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "2");
    objstore_query_free(q);
    char *error = NULL;
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"where\": [[\"age\", \"!=\", 1]]}"), &q, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK(q == NULL);
    CHECK_CONTAINS(error, "unknown comparison \"!=\"");
    objstore_string_free(error);
    close_db(db, &w);
    waiter_done(&w);
}

/* ----- sql --------------------------------------------------------------------------------- */

static void sql_runs_with_bound_parameters(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_sql(db, 0, "SELECT name, age FROM people WHERE city = ? ORDER BY age DESC", J("[\"oslo\"]"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"rows\":[{\"name\":\"dee\",\"age\":41},{\"name\":\"bob\",\"age\":25}],\"columns\":[\"name\",\"age\"],\"aggregate\":false}");
    CHECK(objstore_db_sql(db, 0, "UPDATE people SET city = ? WHERE age < 30", J("[\"x' OR '1'='1\"]"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"changed\":2}");
    CHECK(objstore_db_sql(db, 0, "SELECT COUNT(*) AS n FROM people WHERE city = 'x'' OR ''1''=''1'", NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"rows\":[{\"n\":2}],\"columns\":[\"n\"],\"aggregate\":true}");
    /* A statement outside the subset is refused at the call, with no callback. */
    char *error = NULL;
    CHECK(objstore_db_sql(db, 0, "SELECT * FROM people WHERE id = 1 OR id = 2", NULL, 0, on_done, &w, NULL, &error) ==
          OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "the operator OR");
    objstore_string_free(error);
    close_db(db, &w);
    waiter_done(&w);
}

/* The statement decides the mode: a SELECT runs in a read-only transaction, a DELETE there is
   READ_ONLY. A query's unique needs no order: one record per key of the index it reads. */
static void sql_takes_its_mode_from_the_statement_and_unique_needs_no_order(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    CHECK(objstore_db_begin(db, J("[\"people\"]"), OBJSTORE_MODE_READONLY, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    uint64_t tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_sql(db, tx, "SELECT COUNT(*) AS n FROM people WHERE city = ?", J("[\"oslo\"]"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"rows\":[{\"n\":2}],\"columns\":[\"n\"],\"aggregate\":true}");
    CHECK(objstore_db_sql(db, tx, "DELETE FROM people", NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_READ_ONLY);
    CHECK(objstore_db_abort(db, tx, on_done, &w, NULL, NULL) == OK);
    objstore_status ended = wait_for(&w);
    CHECK(ended == OK || ended == OBJSTORE_STATUS_TRANSACTION_INACTIVE);
    objstore_query *q = NULL;
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"where\": [[\"city\", \"=\", \"oslo\"]], \"unique\": true, \"select\": [\"city\"]}"), &q, NULL) == OK);
    CHECK(objstore_query_list(q, 0, 10, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[{\"city\":\"oslo\"}]");
    objstore_query_free(q);
    close_db(db, &w);
    waiter_done(&w);
}

/* ----- misuse ------------------------------------------------------------------------------ */

static void nulls_are_refused_with_a_message_and_no_callback(void) {
    waiter w;
    waiter_init(&w);
    char *error = NULL;
    CHECK(objstore_db_put(NULL, 0, "people", J("{}"), NULL, 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "database handle is NULL");
    objstore_string_free(error);
    objstore_db *db = open_db(&w);
    CHECK(objstore_db_get(db, 0, NULL, J("1"), 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "store is NULL");
    objstore_string_free(error);
    CHECK(objstore_db_get(db, 0, "people", J("1"), 0, NULL, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "callback is NULL");
    objstore_string_free(error);
    CHECK(objstore_db_put(db, 0, "people", NULL, 4, NULL, 0, on_done, &w, NULL, NULL) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK(objstore_db_open("x", NULL, NULL, on_done, &w, NULL, NULL) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    objstore_db_free(NULL);
    objstore_query_free(NULL);
    objstore_string_free(NULL);
    sleep_ms(20);
    CHECK(w.pending == 0);
    close_db(db, &w);
    waiter_done(&w);
}

static void bad_utf8_and_bad_json_are_named(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    char *error = NULL;
    const char bad_utf8[] = {'{', '"', 'a', '"', ':', '"', (char)0xff, '"', '}'};
    CHECK(objstore_db_put(db, 0, "people", bad_utf8, sizeof bad_utf8, NULL, 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "value_json is not valid UTF-8");
    objstore_string_free(error);
    CHECK(objstore_db_put(db, 0, "people", J("{\"id\": 1,"), NULL, 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "bad JSON in value_json");
    objstore_string_free(error);
    /* A string key without its quotes: the message shows how to write it in C. */
    CHECK(objstore_db_get(db, 0, "people", J("r4"), 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "bad JSON in key_json");
    CHECK_CONTAINS(error, "(in C source \"\\\"r4\\\"\")");
    objstore_string_free(error);
    CHECK(objstore_db_put(db, 0, "people", J("{\"id\": null}"), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_INVALID_KEY);
    CHECK_CONTAINS(w.result, "null is not a valid key");
    objstore_db *bad = NULL;
    CHECK(objstore_db_open("unused", "{\"stores\": 5}", NULL, on_done, &w, &bad, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    CHECK_CONTAINS(error, "bad JSON in schema");
    objstore_string_free(error);
    CHECK(objstore_db_open("unused", NULL, "{\"mechanism\": \"tape\"}", on_done, &w, &bad, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "unknown mechanism \"tape\"");
    objstore_string_free(error);
    CHECK(objstore_db_open("unused", NULL, "{\"durability\": \"eventual\"}", on_done, &w, &bad, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "unknown durability \"eventual\" (known: normal, full)");
    objstore_string_free(error);
    close_db(db, &w);
    waiter_done(&w);
}

/* One process per file: a second open of a file in use fails (after a short wait for a holder
   that is closing) and names the file; once closed, the file opens again. */
static void a_second_open_of_a_file_in_use_names_the_file(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *first = open_db(&w);
    char path[512];
    snprintf(path, sizeof path, "%s/c-%d.sqlite3", scratch, db_counter);
    objstore_db *second = NULL;
    CHECK(objstore_db_open(path, NULL, "{\"durability\": \"full\"}", on_done, &w, &second, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_STORAGE);
    CHECK_CONTAINS(w.result, "is open in another process");
    CHECK_CONTAINS(w.result, path);
    CHECK(objstore_db_close(second, on_done, &w, NULL) == OK);
    wait_for(&w);
    objstore_db_free(second);
    close_db(first, &w);
    objstore_db *again = NULL;
    CHECK(objstore_db_open(path, NULL, "{\"durability\": \"full\"}", on_done, &w, &again, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    close_db(again, &w);
    waiter_done(&w);
}

static void use_after_close_and_double_close_report_closed(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_db(&w);
    CHECK(objstore_db_close(db, on_done, &w, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    /* Refused by the call itself, with a message and no callback. */
    char *error = NULL;
    CHECK(objstore_db_get(db, 0, "people", J("1"), 0, on_done, &w, NULL, &error) == OBJSTORE_STATUS_CLOSED);
    CHECK_CONTAINS(error, "is closed");
    objstore_string_free(error);
    CHECK(objstore_db_close(db, on_done, &w, &error) == OBJSTORE_STATUS_CLOSED);
    objstore_string_free(error);
    objstore_db_free(db);
    sleep_ms(20);
    CHECK(w.pending == 0);
    waiter_done(&w);
}

static void slow_on_done(void *user_data, objstore_status status, const char *result, size_t len) {
    sleep_ms(100);
    on_done(user_data, status, result, len);
}

static void a_slow_callback_delays_but_loses_nothing(void) {
    waiter w, slow;
    waiter_init(&w);
    waiter_init(&slow);
    objstore_db *db = open_db(&w);
    for (int i = 0; i < 3; i++) CHECK(objstore_db_get(db, 0, "people", J("1"), 0, slow_on_done, &slow, NULL, NULL) == OK);
    CHECK(objstore_db_put(db, 0, "notes", J("\"after the slow ones\""), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(slow.calls == 3);
    for (int i = 0; i < 3; i++) CHECK(wait_for(&slow) == OK);
    close_db(db, &w);
    waiter_done(&slow);
    waiter_done(&w);
}

static void queued_requests_are_cancelled_by_close(void) {
    waiter w, queued;
    waiter_init(&w);
    waiter_init(&queued);
    objstore_db *db = open_db(&w);
    for (int i = 0; i < 3; i++) CHECK(objstore_db_get(db, 0, "people", J("1"), 0, slow_on_done, &queued, NULL, NULL) == OK);
    for (int i = 0; i < 20; i++) CHECK(objstore_db_put(db, 0, "notes", J("1"), NULL, 0, on_done, &queued, NULL, NULL) == OK);
    CHECK(objstore_db_close(db, on_done, &w, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    int cancelled = 0;
    for (int i = 0; i < 23; i++) cancelled += wait_for(&queued) == OBJSTORE_STATUS_CANCELLED;
    CHECK(cancelled >= 20);
    CHECK(queued.calls == 23);
    objstore_db_free(db);
    waiter_done(&queued);
    waiter_done(&w);
}


/* A pull cursor: each batch is a request of its own, so other requests run between two
 * batches (here a write to another store and an update through the cursor). */
static void a_pull_cursor_lets_other_requests_run_between_batches(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    objstore_query *q = NULL;
    CHECK(objstore_query_new(db, J("{\"from\": \"people\", \"order\": \"age\"}"), &q, NULL) == OK);
    objstore_cursor *c = NULL;
    CHECK(objstore_cursor_open(q, 0, OBJSTORE_MODE_READWRITE, &c, NULL) == OK);
    CHECK(objstore_cursor_next(c, 2, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"primaryKey\":2");
    CHECK_CONTAINS(w.result, "\"primaryKey\":3");
    CHECK(objstore_db_put(db, 0, "notes", J("\"between batches\""), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_cursor_update(c, J("3"), J("{\"id\": 3, \"name\": \"cy\", \"city\": \"rome\", \"age\": 25, \"email\": \"cy@x\"}"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_cursor_update(c, J("3"), J("{\"id\": 7}"), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(w.result, "would change its key");
    CHECK(objstore_cursor_next(c, 10, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"primaryKey\":1");
    CHECK_CONTAINS(w.result, "\"primaryKey\":4");
    CHECK(objstore_cursor_next(c, 10, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[]");
    objstore_cursor_free(c);
    CHECK(objstore_cursor_open(q, 0, OBJSTORE_MODE_READONLY, &c, NULL) == OK);
    char *error = NULL;
    CHECK(objstore_cursor_delete(c, J("1"), on_done, &w, NULL, &error) == OBJSTORE_STATUS_READ_ONLY);
    objstore_string_free(error);
    objstore_cursor_free(c);
    CHECK(objstore_cursor_open(q, 0, 7, &c, &error) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(error, "mode 7");
    objstore_string_free(error);
    CHECK(c == NULL);
    CHECK(objstore_db_get(db, 0, "people", J("3"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "rome");
    objstore_query_free(q);
    close_db(db, &w);
    waiter_done(&w);
}

/* The library's waiter blocks on a request with a timeout; a queued request can be
 * cancelled; a request outside an open transaction waits for it. */
static void waiter_cancel_and_waiting(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_seeded(&w);
    objstore_waiter *lw = objstore_waiter_new();
    char *result = NULL;
    CHECK(objstore_waiter_wait(lw, 10, &result) == OBJSTORE_STATUS_TIMEOUT);
    CHECK(objstore_db_get(db, 0, "people", J("1"), 0, objstore_waiter_callback, lw, NULL, NULL) == OK);
    CHECK(objstore_waiter_wait(lw, 10000, &result) == OK);
    CHECK_CONTAINS(result, "\"ada\"");
    objstore_string_free(result);
    /* UINT64_MAX means "wait for as long as it takes", not an overflow. */
    CHECK(objstore_db_get(db, 0, "people", J("2"), 0, objstore_waiter_callback, lw, NULL, NULL) == OK);
    CHECK(objstore_waiter_wait(lw, UINT64_MAX, &result) == OK);
    CHECK_CONTAINS(result, "\"bob\"");
    objstore_string_free(result);
    /* Hold the worker with slow callbacks, queue a request behind them and cancel it. */
    waiter slow;
    waiter_init(&slow);
    for (int i = 0; i < 3; i++) CHECK(objstore_db_get(db, 0, "people", J("1"), 0, slow_on_done, &slow, NULL, NULL) == OK);
    uint64_t id = 0;
    CHECK(objstore_db_put(db, 0, "notes", J("\"cancelled\""), NULL, 0, objstore_waiter_callback, lw, &id, NULL) == OK);
    CHECK(id != 0);
    CHECK(objstore_db_cancel(db, id));
    CHECK(objstore_waiter_wait(lw, 10000, &result) == OBJSTORE_STATUS_CANCELLED);
    objstore_string_free(result);
    CHECK(!objstore_db_cancel(db, id));
    for (int i = 0; i < 3; i++) CHECK(wait_for(&slow) == OK);
    CHECK(objstore_db_read(db, 0, "notes", OBJSTORE_READ_COUNT, NULL, 0, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "0");
    /* An open transaction: a request outside it waits for it to end, while the
     * transaction's own requests run; after the commit it runs and sees the write. */
    CHECK(objstore_db_begin(db, J("\"people\""), OBJSTORE_MODE_READWRITE, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    uint64_t tx = strtoull(w.result, NULL, 10);
    CHECK(objstore_db_get(db, 0, "people", J("9"), 0, objstore_waiter_callback, lw, NULL, NULL) == OK);
    CHECK(objstore_waiter_wait(lw, 300, &result) == OBJSTORE_STATUS_TIMEOUT);
    CHECK(objstore_db_put(db, tx, "people", J("{\"id\": 9, \"name\": \"ida\", \"email\": \"i@x\"}"), NULL, 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_begin(db, J("\"people\""), 9, on_done, &w, NULL, &result) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    objstore_string_free(result);
    CHECK(objstore_db_commit(db, tx, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_waiter_wait(lw, 10000, &result) == OK);
    CHECK_CONTAINS(result, "\"ida\"");
    objstore_string_free(result);
    CHECK_STR(objstore_status_name(1234), "OBJSTORE_STATUS_UNKNOWN");
    objstore_waiter_free(lw);
    close_db(db, &w);
    waiter_done(&slow);
    waiter_done(&w);
}

/* ----- sync (against moto, started by tests/servers/moto; settings in MOTO_* variables) ---- */

static char sync_schema[2048];

/* A schema with an immutable synced store `results` under a prefix of its own on `endpoint`. */
static const char *results_schema(const char *endpoint, int retries) {
    static int run;
    static long started; /* once, so that the two clients of a test share their prefix */
    if (!started) started = (long)time(NULL);
    const char *bucket = getenv("MOTO_SIGNED_BUCKET"), *id = getenv("MOTO_ACCESS_KEY_ID");
    const char *secret = getenv("MOTO_SECRET_ACCESS_KEY");
    CHECK(bucket && id && secret);
    snprintf(sync_schema, sizeof sync_schema,
             "{\"stores\": [{\"name\": \"results\", \"Sync\": {\"format\": \"objstore\", \"immutable\": true,"
             " \"Options\": {\"bucket\": \"%s\", \"prefix\": \"c-%ld-%ld-%d/\", \"endpoint\": \"%s\", \"region\": \"us-east-1\","
             " \"accessKeyId\": \"%s\", \"secretAccessKey\": \"%s\", \"retries\": %d, \"timeoutMs\": 30000}}}]}",
             bucket ? bucket : "", started, (long)getpid(), run++ / 2, endpoint, id ? id : "", secret ? secret : "", retries);
    return sync_schema;
}

static void a_put_reaches_moto_and_another_client_reads_it(void) {
    waiter w;
    waiter_init(&w);
    const char *endpoint = getenv("MOTO_ENDPOINT");
    CHECK(endpoint != NULL);
    if (!endpoint) endpoint = "http://127.0.0.1:1";
    objstore_db *writer = open_with(&w, results_schema(endpoint, 2));
    objstore_db *reader = open_with(&w, results_schema(endpoint, 2));
    CHECK(objstore_db_put(writer, 0, "results", J("{\"ok\": true}"), J("\"linux/c/1\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    /* The put reported the local outcome; the agent sends it (a flush waits for that). */
    CHECK(objstore_db_flush(writer, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"pending\":0,\"refused\":0,\"rejected\":[],\"held\":[]}");
    CHECK(objstore_db_values_of(reader, 0, "results", J("[\"linux/c/1\", \"linux/c/none\"]"), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "[{\"ok\":true},null]");
    char *stats = NULL;
    CHECK(objstore_db_sync_stats(reader, true, &stats, NULL) == OK);
    CHECK_CONTAINS(stats, "\"GET\":{\"200\":1,\"404\":1}");
    /* The keys as the header documents them, as every binding spells them. */
    CHECK_CONTAINS(stats, "\"bytesReceived\":");
    CHECK_CONTAINS(stats, "\"busyMs\":");
    CHECK_CONTAINS(stats, "\"costUsd\":");
    CHECK_CONTAINS(stats, "\"conditionalWrites\":");
    objstore_string_free(stats);
    /* A store that keeps no checkpoints says so, through the callback. */
    CHECK(objstore_db_checkpoint(writer, "results", on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(w.result, "keeps no checkpoints");
    /* Cached and immutable: read again with no request. */
    CHECK(objstore_db_get(reader, 0, "results", J("\"linux/c/1\""), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_sync_stats(reader, false, &stats, NULL) == OK);
    CHECK_CONTAINS(stats, "\"total\":0");
    objstore_string_free(stats);
    /* Creating over an object the writer made (and the reader never read) is a conflict. */
    CHECK(objstore_db_put(writer, 0, "results", J("{\"ok\": true}"), J("\"linux/c/2\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_flush(writer, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"pending\":0,\"refused\":0,\"rejected\":[],\"held\":[]}");
    /* The commit is the local outcome; the bucket's refusal is a refused write, data kept. */
    CHECK(objstore_db_add(reader, 0, "results", J("{\"ok\": false}"), J("\"linux/c/2\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_flush(reader, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    /* Whether this flush or the background sender met the refusal, the report counts it. */
    CHECK_CONTAINS(w.result, "\"pending\":0,\"refused\":1,");
    CHECK(objstore_db_refused_writes(reader, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"code\":\"Conflict\"");
    CHECK_CONTAINS(w.result, "nothing was overwritten");
    CHECK(objstore_db_sync_status(reader, "results", J("\"linux/c/2\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "\"refused\"");
    close_db(writer, &w);
    close_db(reader, &w);
    waiter_done(&w);
}

static void an_unreachable_bucket_reports_network_and_keeps_writes(void) {
    waiter w;
    waiter_init(&w);
    objstore_db *db = open_with(&w, results_schema("http://127.0.0.1:1", 0));
    CHECK(objstore_db_get(db, 0, "results", J("\"x\""), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_NETWORK);
    CHECK_CONTAINS(w.result, "cannot reach the bucket");
    CHECK(objstore_db_put(db, 0, "results", J("{\"n\": 1}"), J("\"x\""), on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK(objstore_db_flush(db, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_CONTAINS(w.result, "\"pending\":1");
    CHECK_CONTAINS(w.result, "\"offline\":");
    /* With a cached copy, a bucket that is down does not fail a read. */
    CHECK(objstore_db_get(db, 0, "results", J("\"x\""), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"n\":1}");
    /* A write not yet sent is the freshest copy there is: a fresh read serves it... */
    CHECK(objstore_db_get(db, 0, "results", J("\"x\""), OBJSTORE_READ_FRESH, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"n\":1}");
    /* ...while a fresh read of anything else must ask the bucket, and says it cannot. */
    CHECK(objstore_db_get(db, 0, "results", J("\"y\""), OBJSTORE_READ_FRESH, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OBJSTORE_STATUS_NETWORK);
    CHECK(objstore_db_set_offline(db, true, NULL) == OK);
    CHECK(objstore_db_get(db, 0, "results", J("\"x\""), 0, on_done, &w, NULL, NULL) == OK);
    CHECK(wait_for(&w) == OK);
    CHECK_STR(w.result, "{\"n\":1}");
    CHECK_STR(objstore_status_name(OBJSTORE_STATUS_REMOTE_DATA), "OBJSTORE_STATUS_REMOTE_DATA");
    close_db(db, &w);
    waiter_done(&w);
}

static void versions_agree(void) {
    CHECK_STR(objstore_db_version(), OBJSTORE_DB_VERSION);
    CHECK(objstore_db_version_number() == OBJSTORE_DB_VERSION_NUMBER);
    CHECK_STR(objstore_status_name(OBJSTORE_STATUS_CONSTRAINT), "OBJSTORE_STATUS_CONSTRAINT");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <scratch directory>\n", argv[0]);
        return 2;
    }
    scratch = argv[1];
    RUN("crud", put_then_get_returns_the_record);
    RUN("crud", an_inline_read_completes_inside_the_call_and_sees_earlier_writes);
    RUN("crud", the_schema_and_its_versions_are_readable);
    RUN("crud", add_of_an_existing_key_is_a_constraint_error);
    RUN("crud", remove_count_keys_and_values_of);
    RUN("crud", unique_index_keys_give_one_record_per_value);
    RUN("cursor", a_cursor_streams_updates_deletes_and_stops);
    RUN("event", events_arrive_after_commit_and_stop_after_unsubscribe);
    RUN("transaction", a_transaction_body_commits_or_rolls_back_whole);
    RUN("transaction", add_values_of_and_clear_inside_transactions);
    RUN("transaction", explicit_begin_commit_and_abort);
    RUN("query", list_pages_continue_and_explain_shows_the_plan);
    RUN("sql", sql_runs_with_bound_parameters);
    RUN("sql", sql_takes_its_mode_from_the_statement_and_unique_needs_no_order);
    RUN("misuse", nulls_are_refused_with_a_message_and_no_callback);
    RUN("misuse", bad_utf8_and_bad_json_are_named);
    RUN("misuse", use_after_close_and_double_close_report_closed);
    RUN("misuse", a_slow_callback_delays_but_loses_nothing);
    RUN("misuse", queued_requests_are_cancelled_by_close);
    RUN("misuse", versions_agree);
    RUN("misuse", a_second_open_of_a_file_in_use_names_the_file);
    RUN("cursor", a_pull_cursor_lets_other_requests_run_between_batches);
    RUN("misuse", waiter_cancel_and_waiting);
    RUN("sync", a_put_reaches_moto_and_another_client_reads_it);
    RUN("sync", an_unreachable_bucket_reports_network_and_keeps_writes);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}
