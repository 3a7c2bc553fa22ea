#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
/* Thread stress: 8 threads answer reads (out of order, some failing), invalidate and move the
 * window concurrently on one loader, for a bounded number of answers. Checks exactly-once
 * release with a counter per acquisition, and that nothing deadlocks (a watchdog alarm). */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"

#define THREADS 8
#define ANSWERERS 6
#define MAX_ACQ (1u << 20)
#define QCAP 4096
#define SOURCE_LEN 100000u

typedef struct {
    uint64_t read_id;
    uint64_t at;
    uint32_t limit;
} job;

static loader_handle handle;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static job queue[QCAP];
static size_t qlen;
static atomic_uint accepted[MAX_ACQ];
static atomic_uint released[MAX_ACQ];
static atomic_uint bad_releases;
static atomic_ulong next_acq = 1;
static atomic_long answers_left;
static atomic_ulong issued, settled_ok, failed_ok, refused;

static uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static void on_issue(void *ud, const loader_read *r) {
    (void)ud;
    job j = {r->read_id, r->cursor_len == 8 ? be64(r->cursor) : 0, r->limit};
    atomic_fetch_add(&issued, 1);
    pthread_mutex_lock(&qlock);
    if (qlen < QCAP) queue[qlen++] = j;
    pthread_mutex_unlock(&qlock);
}

static void on_release(void *ud, loader_acquisition acq) {
    (void)ud;
    if (acq >= MAX_ACQ || atomic_load(&accepted[acq]) == 0) {
        atomic_fetch_add(&bad_releases, 1);
        return;
    }
    atomic_fetch_add(&released[acq], 1);
}

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static int pop(job *out, unsigned *seed) {
    pthread_mutex_lock(&qlock);
    int ok = qlen > 0;
    if (ok) {
        size_t i = rnd(seed) % qlen; /* out of order */
        *out = queue[i];
        queue[i] = queue[--qlen];
    }
    pthread_mutex_unlock(&qlock);
    return ok;
}

static void *answerer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
    while (atomic_load(&answers_left) > 0) {
        job j;
        if (!pop(&j, &seed)) {
            bool started;
            loader_retry(handle, &started);
            sched_yield();
            continue;
        }
        atomic_fetch_sub(&answers_left, 1);
        if (rnd(&seed) % 10 == 0) {
            if (loader_fail(handle, j.read_id, 5, NULL) == LOADER_RESULT_OK) atomic_fetch_add(&failed_ok, 1);
            continue;
        }
        uint64_t end = j.at + j.limit < SOURCE_LEN ? j.at + j.limit : SOURCE_LEN;
        uint8_t next[8];
        for (int i = 7, v = 0; i >= 0; i--, v++) next[i] = (uint8_t)(end >> (8 * v));
        unsigned long acq = atomic_fetch_add(&next_acq, 1);
        if (acq >= MAX_ACQ) break;
        atomic_store(&accepted[acq], 1);
        loader_answer a;
        loader_result r = loader_settle(handle, j.read_id, (loader_acquisition)acq, (uint32_t)(end - j.at), next, 8,
                                        end == SOURCE_LEN, &a);
        if (r == LOADER_RESULT_OK) {
            atomic_fetch_add(&settled_ok, 1);
        } else {
            atomic_store(&accepted[acq], 0);
            atomic_fetch_add(&refused, 1);
        }
    }
    return NULL;
}

static void *invalidator(void *arg) {
    (void)arg;
    while (atomic_load(&answers_left) > 0) {
        loader_invalidate(handle);
        usleep(200);
    }
    return NULL;
}

static void *mover(void *arg) {
    unsigned seed = 4242;
    uint64_t now = 0;
    (void)arg;
    while (atomic_load(&answers_left) > 0) {
        loader_set_window(handle, rnd(&seed) % 500, 1 + rnd(&seed) % 200);
        now += 50;
        loader_tick(handle, now);
        loader_snapshot s;
        loader_state(handle, &s);
        usleep(100);
    }
    return NULL;
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "stress: deadlock or livelock: the watchdog fired\n0 passed, 1 failed\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

int main(int argc, char **argv) {
    long answers = argc > 1 ? atol(argv[1]) : 20000;
    signal(SIGALRM, watchdog);
    alarm(300);
    atomic_store(&answers_left, answers);
    loader_config cfg;
    loader_config_default(&cfg);
    cfg.page_size = 16;
    cfg.prefetch_distance = 32;
    cfg.drop_margin = 64;
    cfg.backoff_initial_ms = 10;
    loader_callbacks cb = {NULL, on_issue, on_release, NULL, NULL};
    if (loader_new(&cfg, &cb, &handle) != LOADER_RESULT_OK) return 2;
    loader_set_window(handle, 0, 100);

    pthread_t t[THREADS];
    for (int i = 0; i < ANSWERERS; i++) pthread_create(&t[i], NULL, answerer, (void *)(uintptr_t)i);
    pthread_create(&t[ANSWERERS], NULL, invalidator, NULL);
    pthread_create(&t[ANSWERERS + 1], NULL, mover, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

    loader_snapshot s;
    loader_state(handle, &s);
    if (loader_free(handle) != LOADER_RESULT_OK) return 2;

    int failures = 0;
    unsigned long top = atomic_load(&next_acq);
    unsigned long accepted_n = 0, twice = 0, missing = 0;
    for (unsigned long i = 1; i < top && i < MAX_ACQ; i++) {
        unsigned a = atomic_load(&accepted[i]), r = atomic_load(&released[i]);
        accepted_n += a;
        if (r > 1) twice++;
        if (a != r) missing++;
    }
    printf("stress: %d threads, %lu reads issued, %lu settled, %lu failed, %lu refused, epoch %llu\n", THREADS,
           atomic_load(&issued), atomic_load(&settled_ok), atomic_load(&failed_ok), atomic_load(&refused),
           (unsigned long long)s.epoch);
    printf("stress: %lu acquisitions accepted; released twice: %lu; not released exactly once: %lu; bad: %u\n",
           accepted_n, twice, missing, atomic_load(&bad_releases));
    if (twice || missing || atomic_load(&bad_releases)) failures++;
    if (atomic_load(&settled_ok) == 0) failures++;
    printf("%d passed, %d failed\n", failures ? 0 : 1, failures);
    return failures ? 1 : 0;
}
