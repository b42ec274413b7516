/* Pipelined point gets through the C API: submits every get at once, counts completions in
 * the callback, and prints gets per second once the last one has arrived.
 * Usage: c_async_get <database file> <records> <gets> */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objstore_db.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long left;
    long failed;
} counter;

static void on_get(void *user_data, objstore_status status, const char *result, size_t len) {
    counter *c = user_data;
    (void)result;
    pthread_mutex_lock(&c->lock);
    if (status != OBJSTORE_STATUS_OK || len < 3) c->failed++;
    if (--c->left == 0) pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void on_open(void *user_data, objstore_status status, const char *result, size_t len) {
    on_get(user_data, status, "{}", status == OBJSTORE_STATUS_OK ? 3 : len), (void)result;
}

static void wait_all(counter *c) {
    pthread_mutex_lock(&c->lock);
    while (c->left > 0) pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

/* The same pseudo-random walk as the Rust side. */
static unsigned long long next_id(unsigned long long *x, long records) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x % (unsigned long long)records;
}

static void run_gets(objstore_db *db, counter *c, long records, long n) {
    unsigned long long x = 0x9E3779B97F4A7C15ULL;
    char key[32];
    c->left = n;
    for (long i = 0; i < n; i++) {
        int len = snprintf(key, sizeof key, "\"r%08llu\"", next_id(&x, records));
        if (objstore_db_get(db, 0, "bench", key, (size_t)len, 0, on_get, c, NULL, NULL) != OBJSTORE_STATUS_OK) exit(1);
    }
    wait_all(c);
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    long records = atol(argv[2]), n = atol(argv[3]);
    counter c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1, 0};
    objstore_db *db = NULL;
    if (objstore_db_open(argv[1], NULL, NULL, on_open, &c, &db, NULL) != OBJSTORE_STATUS_OK) return 1;
    wait_all(&c);
    run_gets(db, &c, records, n < 1000 ? n : 1000); /* warm-up, as the Rust side does */
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    run_gets(db, &c, records, n);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    objstore_db_free(db);
    if (c.failed) {
        fprintf(stderr, "%ld gets failed\n", c.failed);
        return 1;
    }
    printf("%f\n", (double)n / seconds);
    return 0;
}
