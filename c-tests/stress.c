#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
/* Thread stress: 8 threads answer reads (out of order, some failing), invalidate and move the
 * window concurrently on one loader, for a bounded number of answers, while 2 more pin views
 * and read the items behind them. Checks exactly-once release with a counter per acquisition,
 * that nothing deadlocks (a watchdog alarm), and the header's threading contract:
 * - an acquisition is marked as the loader's before loader_settle, since its release may run
 *   on another thread before loader_settle returns;
 * - a pinned view's items stay readable until the view is released: each acquisition's
 *   "items" are a plain (non-atomic) word the answerer writes before loader_settle and
 *   `release` clears, and readers check it for every page they list. Under ThreadSanitizer
 *   a release that overlapped a read would be a data race, and a reader sees a cleared word;
 * - loader_free with a view pinned leaves its acquisitions to the view's release;
 * - every callback runs on a thread inside a loader call (the calling thread, before the call
 *   returns): the host marks each call with a thread-local flag, and the callbacks check it. */
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
#include "thread_source.h"

#define ANSWERERS 6
#define READERS 2
#define THREADS (ANSWERERS + 2 + READERS)
#define MAX_ACQ (1u << 20)
#define QCAP 4096
#define SOURCE_LEN 100000u

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
/* The "items" behind each acquisition: written before it is handed over, cleared by release. */
static uint64_t items[MAX_ACQ];
static atomic_ulong views_read, pages_read, torn_reads;

/* Set on this thread while it is inside a loader call; callbacks found outside one. */
static _Thread_local int inside_call;
static atomic_uint outside_callbacks;

static int enter_call(void) {
    inside_call = 1;
    return 0;
}

static loader_result leave_call(loader_result r) {
    inside_call = 0;
    return r;
}

/* A marked loader call: the comma sequences enter_call() before the call. */
#define CALL(expr) (enter_call(), leave_call(expr))

static void check_inside(void) {
    if (!inside_call) atomic_fetch_add(&outside_callbacks, 1);
}

static void on_issue(void *ud, const loader_read *r) {
    (void)ud;
    check_inside();
    job j = job_of(r);
    atomic_fetch_add(&issued, 1);
    pthread_mutex_lock(&qlock);
    if (qlen < QCAP) queue[qlen++] = j;
    pthread_mutex_unlock(&qlock);
}

static void on_release(void *ud, loader_acquisition acq) {
    (void)ud;
    check_inside();
    if (acq >= MAX_ACQ || atomic_load(&accepted[acq]) == 0) {
        atomic_fetch_add(&bad_releases, 1);
        return;
    }
    items[acq] = 0; /* the host frees what the token names */
    atomic_fetch_add(&released[acq], 1);
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

static int settle_job(job j);

static void *answerer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
    while (atomic_load(&answers_left) > 0) {
        job j;
        if (!pop(&j, &seed)) {
            bool started;
            CALL(loader_retry(handle, &started));
            sched_yield();
            continue;
        }
        atomic_fetch_sub(&answers_left, 1);
        if (rnd(&seed) % 10 == 0) {
            if (CALL(loader_fail(handle, j.read_id, 5, NULL)) == LOADER_RESULT_OK) atomic_fetch_add(&failed_ok, 1);
            continue;
        }
        if (!settle_job(j)) break;
    }
    return NULL;
}

/* Answers `j` from the source; false when the acquisition counters ran out. */
static int settle_job(job j) {
    span s = span_of(j, SOURCE_LEN);
    unsigned long acq = atomic_fetch_add(&next_acq, 1);
    if (acq >= MAX_ACQ) return 0;
    items[acq] = item_of(acq);
    atomic_store(&accepted[acq], 1);
    loader_answer a;
    loader_result r = CALL(loader_settle(handle, j.read_id, (loader_acquisition)acq, (uint32_t)(s.end - s.from),
                                         s.next, s.next_len, s.reached, &a));
    if (r == LOADER_RESULT_OK) {
        atomic_fetch_add(&settled_ok, 1);
    } else {
        atomic_store(&accepted[acq], 0);
        atomic_fetch_add(&refused, 1);
    }
    return 1;
}

/* Pins views, holds each a moment, and reads every page's items meanwhile. */
static void *reader(void *arg) {
    (void)arg;
    loader_view_snapshot *held = NULL; /* one view held across two rounds */
    while (atomic_load(&answers_left) > 0) {
        loader_view_snapshot *v = NULL;
        if (CALL(loader_view_acquire(handle, &v)) != LOADER_RESULT_OK) break;
        const loader_page *pages;
        size_t n;
        bool reval;
        if (loader_view_pages(v, &pages, &n, &reval) != LOADER_RESULT_OK) break;
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < n; i++) {
                loader_acquisition acq = pages[i].acquisition;
                if (acq >= MAX_ACQ || items[acq] != item_of(acq)) atomic_fetch_add(&torn_reads, 1);
            }
            if (pass == 0) sched_yield();
        }
        atomic_fetch_add(&views_read, 1);
        atomic_fetch_add(&pages_read, n);
        CALL(loader_view_release(held));
        held = v;
    }
    CALL(loader_view_release(held));
    return NULL;
}

static void *invalidator(void *arg) {
    (void)arg;
    while (atomic_load(&answers_left) > 0) {
        CALL(loader_invalidate(handle));
        usleep(200);
    }
    return NULL;
}

static void *mover(void *arg) {
    unsigned seed = 4242;
    uint64_t now = 0;
    (void)arg;
    while (atomic_load(&answers_left) > 0) {
        CALL(loader_set_window(handle, rnd(&seed) % 500, 1 + rnd(&seed) % 200));
        now += 50;
        CALL(loader_tick(handle, now));
        loader_snapshot s = {.struct_size = sizeof s};
        CALL(loader_state(handle, &s));
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
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 16;
    cfg.prefetch_distance = 32;
    cfg.drop_margin = 64;
    cfg.backoff_initial_ms = 10;
    loader_callbacks cb = {sizeof cb, NULL, on_issue, on_release, NULL, NULL, NULL, NULL};
    if (loader_new(&cfg, &cb, &handle) != LOADER_RESULT_OK) return 2;
    CALL(loader_set_window(handle, 0, 100));

    pthread_t t[THREADS];
    for (int i = 0; i < ANSWERERS; i++) pthread_create(&t[i], NULL, answerer, (void *)(uintptr_t)i);
    pthread_create(&t[ANSWERERS], NULL, invalidator, NULL);
    pthread_create(&t[ANSWERERS + 1], NULL, mover, NULL);
    for (int i = 0; i < READERS; i++) pthread_create(&t[ANSWERERS + 2 + i], NULL, reader, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

    loader_snapshot s = {.struct_size = sizeof s};
    CALL(loader_state(handle, &s));
    /* Free with a view pinned: what it lists outlives the free, until the view goes. Answer
     * what is left first, so the view has pages. */
    int failures = 0;
    unsigned seed = 99;
    for (int round = 0; round < 1000; round++) {
        job j;
        bool started;
        CALL(loader_retry(handle, &started));
        if (!pop(&j, &seed)) break;
        if (!settle_job(j)) break;
    }
    loader_view_snapshot *last = NULL;
    const loader_page *pages = NULL;
    size_t npinned = 0;
    if (CALL(loader_view_acquire(handle, &last)) != LOADER_RESULT_OK ||
        loader_view_pages(last, &pages, &npinned, NULL) != LOADER_RESULT_OK)
        return 2;
    if (CALL(loader_free(handle)) != LOADER_RESULT_OK) return 2;
    unsigned long early = 0;
    for (size_t i = 0; i < npinned; i++) {
        loader_acquisition acq = pages[i].acquisition;
        if (acq >= MAX_ACQ || atomic_load(&released[acq]) != 0 || items[acq] != item_of(acq)) early++;
    }
    if (CALL(loader_view_release(last)) != LOADER_RESULT_OK) return 2;
    printf("stress: free with a view of %zu pages pinned; released before the view: %lu\n", npinned, early);
    if (early) failures++;

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
    printf("stress: %d readers pinned %lu views, read %lu pages; items gone while pinned: %lu\n", READERS,
           atomic_load(&views_read), atomic_load(&pages_read), atomic_load(&torn_reads));
    if (atomic_load(&torn_reads) || atomic_load(&views_read) == 0) failures++;
    printf("stress: callbacks run outside a loader call on their thread: %u\n", atomic_load(&outside_callbacks));
    if (atomic_load(&outside_callbacks)) failures++;
    printf("%d passed, %d failed\n", failures ? 0 : 1, failures);
    return failures ? 1 : 0;
}
