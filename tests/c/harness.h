/* A minimal test harness for the C API: a waiter that turns a completion callback into a
 * blocking step (and counts how often the callback fired), and CHECK macros that count
 * failures. The program ends with the plain line "N passed, N failed". */
#ifndef OBJSTORE_TEST_HARNESS_H
#define OBJSTORE_TEST_HARNESS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objstore_db.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int pending; /* completions not yet waited for */
    int calls;   /* completions in all */
    objstore_status status;
    char *result;
    size_t len;
} waiter;

static void waiter_init(waiter *w) {
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
}

static void waiter_done(waiter *w) {
    free(w->result);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
}

/* The completion callback: keeps a copy of the result. */
static void on_done(void *user_data, objstore_status status, const char *result, size_t len) {
    waiter *w = user_data;
    pthread_mutex_lock(&w->lock);
    free(w->result);
    w->result = malloc(len + 1);
    memcpy(w->result, result, len + 1);
    w->len = len;
    w->status = status;
    w->calls++;
    w->pending++;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static int tests_passed, tests_failed, current_failed;

/* A status no call returns: the completion did not come within WAIT_SECONDS. */
#define WAIT_TIMED_OUT ((objstore_status)-1)
#define WAIT_SECONDS 60

/* Blocks until the next completion and returns its status; a completion that never comes
 * fails the test with its line instead of hanging the run. */
#define wait_for(w) wait_for_at((w), __FILE__, __LINE__)
static objstore_status wait_for_at(waiter *w, const char *file, int line) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WAIT_SECONDS;
    pthread_mutex_lock(&w->lock);
    while (w->pending == 0) {
        if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline) != 0 && w->pending == 0) {
            pthread_mutex_unlock(&w->lock);
            fprintf(stderr, "  %s:%d: no completion within %d s\n", file, line, WAIT_SECONDS);
            current_failed = 1;
            return WAIT_TIMED_OUT;
        }
    }
    w->pending--;
    objstore_status status = w->status;
    pthread_mutex_unlock(&w->lock);
    return status;
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            current_failed = 1;                                                       \
        }                                                                             \
    } while (0)

#define CHECK_STR(actual, expected)                                                              \
    do {                                                                                         \
        const char *a_ = (actual), *e_ = (expected);                                             \
        if (a_ == NULL || strcmp(a_, e_) != 0) {                                                 \
            fprintf(stderr, "  %s:%d: got %s, expected %s\n", __FILE__, __LINE__, a_ ? a_ : "NULL", e_); \
            current_failed = 1;                                                                  \
        }                                                                                        \
    } while (0)

#define CHECK_CONTAINS(actual, part)                                                             \
    do {                                                                                         \
        const char *a_ = (actual), *p_ = (part);                                                 \
        if (a_ == NULL || strstr(a_, p_) == NULL) {                                              \
            fprintf(stderr, "  %s:%d: %s does not contain %s\n", __FILE__, __LINE__, a_ ? a_ : "NULL", p_); \
            current_failed = 1;                                                                  \
        }                                                                                        \
    } while (0)

#define RUN(suite, test)                                              \
    do {                                                              \
        current_failed = 0;                                           \
        test();                                                       \
        printf("%s %s: %s\n", current_failed ? "FAIL" : "ok  ", suite, #test); \
        if (current_failed) tests_failed++; else tests_passed++;      \
    } while (0)

#endif
