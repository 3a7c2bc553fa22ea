#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
/* The header's threading contract (THREADS) with real threads, under ASan and TSan:
 * - where callbacks run: the host marks each loader call with a thread-local "inside a call
 *   on loader X" and every callback checks the mark, so a callback run on another thread, or
 *   after its call returned, is caught;
 * - several threads read one pinned view at the same time, while others settle, invalidate
 *   and move the window;
 * - loader_free racing with calls on other threads: a call that starts after loader_free
 *   returned gets LOADER_RESULT_STALE_HANDLE and makes no callback; no `issue` or `changed`
 *   starts after it returned but the one a thread was already delivering; every accepted
 *   acquisition is still released exactly once;
 * - calls on different handles do not wait for each other: two threads' `compare` callbacks,
 *   each inside its own loader's state change with that loader's lock held, meet, and then
 *   both threads drive their own loaders at once. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"
#include "thread_source.h"

#define MAX_ACQ (1u << 16)
#define QCAP 4096
#define SOURCE_LEN 20000u

static int failures;

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                          \
            fputc('\n', stderr);                                   \
            failures++;                                            \
        }                                                          \
    } while (0)

/* One loader and its host: a queue of reads (the one lock a host needs), a flag per
 * acquisition, and the "items" behind each acquisition (a plain word release clears). */
typedef struct feed {
    loader_handle handle;
    pthread_mutex_t qlock;
    job queue[QCAP];
    size_t qlen;
    atomic_uint accepted[MAX_ACQ];
    atomic_uint released[MAX_ACQ];
    uint64_t items[MAX_ACQ];
    atomic_ulong next_acq;
    atomic_uint bad_releases;
    /* Set once loader_free has returned. */
    atomic_int freed_returned;
    /* `issue` or `changed` callbacks that started after loader_free returned. */
    atomic_uint late_callbacks;
} feed;

/* ---- where callbacks run: the thread-local mark ---- */

/* The loader this thread is calling into, and whether that call began after its loader_free
 * returned; set around every loader call by CALL. */
static _Thread_local const feed *inside;
static _Thread_local int call_began_after_free;
/* Callbacks that ran on a thread with no call of their loader in progress. */
static atomic_uint foreign_callbacks;
/* Callbacks made by a call that began after loader_free returned. */
static atomic_uint callbacks_of_late_calls;

static int enter(feed *f) {
    inside = f;
    call_began_after_free = atomic_load(&f->freed_returned);
    return 0;
}

static loader_result leave(loader_result r) {
    inside = NULL;
    call_began_after_free = 0;
    return r;
}

/* A loader call on `f`'s loader, marked: the comma sequences enter() before the call. */
#define CALL(f, expr) (enter(f), leave(expr))

static void check_inside(const feed *f) {
    if (inside != f) atomic_fetch_add(&foreign_callbacks, 1);
    if (call_began_after_free) atomic_fetch_add(&callbacks_of_late_calls, 1);
}

static void f_issue(void *ud, const loader_read *r) {
    feed *f = ud;
    check_inside(f);
    if (atomic_load(&f->freed_returned)) atomic_fetch_add(&f->late_callbacks, 1);
    job j = job_of(r);
    pthread_mutex_lock(&f->qlock);
    if (f->qlen < QCAP) f->queue[f->qlen++] = j;
    pthread_mutex_unlock(&f->qlock);
}

static void f_release(void *ud, loader_acquisition acq) {
    feed *f = ud;
    check_inside(f);
    if (acq >= MAX_ACQ || atomic_load(&f->accepted[acq]) == 0) {
        atomic_fetch_add(&f->bad_releases, 1);
        return;
    }
    f->items[acq] = 0; /* the host frees what the token names */
    if (atomic_fetch_add(&f->released[acq], 1) != 0) atomic_fetch_add(&f->bad_releases, 1);
}

static void f_changed(void *ud) {
    feed *f = ud;
    check_inside(f);
    if (atomic_load(&f->freed_returned)) atomic_fetch_add(&f->late_callbacks, 1);
}

/* A hint, possibly for a read this host never saw: ignored. */
static void f_cancel(void *ud, uint64_t read_id) {
    (void)read_id;
    check_inside((feed *)ud);
}

static feed *feed_new(loader_compare_fn compare) {
    feed *f = calloc(1, sizeof *f);
    if (f == NULL) abort();
    pthread_mutex_init(&f->qlock, NULL);
    atomic_store(&f->next_acq, 1);
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 16;
    cfg.prefetch_distance = 32;
    cfg.backoff_initial_ms = 5;
    loader_callbacks cb = {sizeof cb, f, f_issue, f_release, f_changed, f_cancel, compare, NULL};
    if (loader_new(&cfg, &cb, &f->handle) != LOADER_RESULT_OK) abort();
    return f;
}

static void feed_free(feed *f) {
    pthread_mutex_destroy(&f->qlock);
    free(f);
}

static int pop(feed *f, job *out, unsigned *seed) {
    pthread_mutex_lock(&f->qlock);
    int ok = f->qlen > 0;
    if (ok) {
        size_t i = rnd(seed) % f->qlen; /* out of order */
        *out = f->queue[i];
        f->queue[i] = f->queue[--f->qlen];
    }
    pthread_mutex_unlock(&f->qlock);
    return ok;
}

/* Answers `j` from the source (as stress.c does); returns loader_settle's result, or
 * LOADER_RESULT_ID_OVERFLOW when the host ran out of acquisition flags. */
static loader_result settle_job(feed *f, job j) {
    span s = span_of(j, SOURCE_LEN);
    unsigned long acq = atomic_fetch_add(&f->next_acq, 1);
    if (acq >= MAX_ACQ) return LOADER_RESULT_ID_OVERFLOW;
    f->items[acq] = item_of(acq);
    atomic_store(&f->accepted[acq], 1); /* the loader's before the call */
    loader_result r = CALL(f, loader_settle(f->handle, j.read_id, (loader_acquisition)acq,
                                            (uint32_t)(s.end - s.from), s.next, s.next_len, s.reached, NULL));
    if (r != LOADER_RESULT_OK) {
        if (atomic_load(&f->released[acq])) atomic_fetch_add(&f->bad_releases, 1);
        atomic_store(&f->accepted[acq], 0);
    }
    return r;
}

/* Every accepted acquisition released exactly once, nothing else released. */
static int released_exactly_once(feed *f) {
    unsigned long top = atomic_load(&f->next_acq);
    for (unsigned long i = 1; i < top && i < MAX_ACQ; i++)
        if (atomic_load(&f->accepted[i]) != atomic_load(&f->released[i])) return 0;
    return atomic_load(&f->bad_releases) == 0;
}

/* Answers everything queued, on this thread, until the loader asks for nothing more. */
static void drain(feed *f) {
    unsigned seed = 1;
    job j;
    for (int guard = 0; guard < 100000 && pop(f, &j, &seed); guard++) {
        bool started;
        (void)settle_job(f, j);
        CALL(f, loader_retry(f->handle, &started));
    }
}

/* ---- several threads read one pinned view at once ---- */

#define CO_READERS 3
#define ANSWERERS 3

static feed *shared;
static atomic_long answers_left;
static pthread_barrier_t view_ready, view_read;
/* Published by the coordinator before `view_ready`, read by the co-readers after it. */
static loader_view_snapshot *shared_view;
static size_t shared_pages;
static int shared_stop;
static atomic_ulong shared_rounds, shared_page_reads, torn_reads, mismatched_views;

static void *answerer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 3;
    while (atomic_load(&answers_left) > 0) {
        job j;
        if (!pop(shared, &j, &seed)) {
            bool started;
            CALL(shared, loader_retry(shared->handle, &started));
            sched_yield();
            continue;
        }
        atomic_fetch_sub(&answers_left, 1);
        if (rnd(&seed) % 10 == 0) {
            CALL(shared, loader_fail(shared->handle, j.read_id, 5, NULL));
            continue;
        }
        if (settle_job(shared, j) == LOADER_RESULT_ID_OVERFLOW) break;
    }
    return NULL;
}

static void *churner(void *arg) {
    unsigned seed = 4242;
    uint64_t now = 0;
    (void)arg;
    while (atomic_load(&answers_left) > 0) {
        CALL(shared, loader_invalidate(shared->handle));
        CALL(shared, loader_set_window(shared->handle, rnd(&seed) % 400, 1 + rnd(&seed) % 150));
        now += 20;
        CALL(shared, loader_tick(shared->handle, now));
        usleep(150);
    }
    return NULL;
}

/* Reads every page of `v` twice, with a yield between: the items must be there each time. */
static void read_view(loader_view_snapshot *v, size_t want) {
    const loader_page *pages = NULL;
    size_t n = 0;
    bool reval;
    if (loader_view_pages(v, &pages, &n, &reval) != LOADER_RESULT_OK || n != want) {
        atomic_fetch_add(&mismatched_views, 1);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            loader_acquisition acq = pages[i].acquisition;
            if (acq >= MAX_ACQ || shared->items[acq] != item_of(acq)) atomic_fetch_add(&torn_reads, 1);
        }
        if (pass == 0) sched_yield();
    }
    loader_snapshot s = {.struct_size = sizeof s};
    if (loader_view_state(v, &s) != LOADER_RESULT_OK || s.pages != n) atomic_fetch_add(&mismatched_views, 1);
    atomic_fetch_add(&shared_page_reads, n);
}

/* Pins a view, lets every co-reader read it at the same time as itself, then releases it. */
static void *coordinator(void *arg) {
    (void)arg;
    for (;;) {
        loader_view_snapshot *v = NULL;
        const loader_page *pages;
        size_t n = 0;
        int stop = atomic_load(&answers_left) <= 0;
        if (!stop && (CALL(shared, loader_view_acquire(shared->handle, &v)) != LOADER_RESULT_OK ||
                      loader_view_pages(v, &pages, &n, NULL) != LOADER_RESULT_OK))
            stop = 1;
        shared_view = v;
        shared_pages = n;
        shared_stop = stop;
        pthread_barrier_wait(&view_ready);
        if (stop) {
            if (v) CALL(shared, loader_view_release(v));
            return NULL;
        }
        read_view(v, n);
        pthread_barrier_wait(&view_read); /* no read of v overlaps its release */
        CALL(shared, loader_view_release(v));
        atomic_fetch_add(&shared_rounds, 1);
    }
}

static void *co_reader(void *arg) {
    (void)arg;
    for (;;) {
        pthread_barrier_wait(&view_ready);
        if (shared_stop) return NULL;
        read_view(shared_view, shared_pages);
        pthread_barrier_wait(&view_read);
    }
}

static void one_pinned_view_read_by_several_threads(long answers) {
    shared = feed_new(NULL);
    atomic_store(&answers_left, answers);
    pthread_barrier_init(&view_ready, NULL, CO_READERS + 1);
    pthread_barrier_init(&view_read, NULL, CO_READERS + 1);
    CALL(shared, loader_set_window(shared->handle, 0, 100));
    pthread_t t[ANSWERERS + 2 + CO_READERS];
    int nt = 0;
    for (int i = 0; i < ANSWERERS; i++) pthread_create(&t[nt++], NULL, answerer, (void *)(uintptr_t)i);
    pthread_create(&t[nt++], NULL, churner, NULL);
    pthread_create(&t[nt++], NULL, coordinator, NULL);
    for (int i = 0; i < CO_READERS; i++) pthread_create(&t[nt++], NULL, co_reader, NULL);
    for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
    drain(shared);
    EXPECT(CALL(shared, loader_free(shared->handle)) == LOADER_RESULT_OK, "loader_free failed");
    printf("     %lu views each read by %d threads at once (%lu page reads); items gone: %lu\n",
           atomic_load(&shared_rounds), CO_READERS + 1, atomic_load(&shared_page_reads), atomic_load(&torn_reads));
    EXPECT(atomic_load(&shared_rounds) > 0 && atomic_load(&shared_page_reads) > 0, "no view was shared");
    EXPECT(atomic_load(&torn_reads) == 0, "%lu items released while a pinned view listed them",
           atomic_load(&torn_reads));
    EXPECT(atomic_load(&mismatched_views) == 0, "%lu reads of a shared view disagreed",
           atomic_load(&mismatched_views));
    EXPECT(released_exactly_once(shared), "an acquisition was not released exactly once");
    pthread_barrier_destroy(&view_ready);
    pthread_barrier_destroy(&view_read);
    feed_free(shared);
}

/* ---- loader_free racing with calls on other threads ---- */

#define RACERS 2

static feed *racing;
static atomic_ulong late_calls, late_not_stale, late_callbacks_total, racer_calls;

/* Calls into `racing` until it has made a few calls after loader_free returned. */
static void *racer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 131u + 7;
    int after_free = 0;
    for (int i = 0; i < 100000 && after_free < 4; i++) {
        int late = atomic_load(&racing->freed_returned);
        loader_result r;
        job j;
        switch (rnd(&seed) % 4) {
        case 0: r = CALL(racing, loader_set_window(racing->handle, rnd(&seed) % 200, 1 + rnd(&seed) % 100)); break;
        case 1: r = CALL(racing, loader_invalidate(racing->handle)); break;
        default:
            if (pop(racing, &j, &seed)) {
                r = settle_job(racing, j);
                if (r == LOADER_RESULT_ID_OVERFLOW) return NULL;
            } else {
                r = CALL(racing, loader_tick(racing->handle, (uint64_t)i));
            }
        }
        atomic_fetch_add(&racer_calls, 1);
        if (late) {
            after_free++;
            atomic_fetch_add(&late_calls, 1);
            if (r != LOADER_RESULT_STALE_HANDLE) atomic_fetch_add(&late_not_stale, 1);
        }
    }
    return NULL;
}

static void loader_free_races_calls_on_other_threads(int rounds) {
    unsigned seed = 77;
    unsigned long lost = 0, unreleased = 0;
    for (int round = 0; round < rounds; round++) {
        racing = feed_new(NULL);
        CALL(racing, loader_set_window(racing->handle, 0, 64));
        pthread_t t[RACERS];
        for (int i = 0; i < RACERS; i++) pthread_create(&t[i], NULL, racer, (void *)(uintptr_t)(round * RACERS + i));
        usleep(rnd(&seed) % 400);
        loader_result r = CALL(racing, loader_free(racing->handle));
        atomic_store(&racing->freed_returned, 1);
        if (r != LOADER_RESULT_OK) lost++;
        for (int i = 0; i < RACERS; i++) pthread_join(t[i], NULL);
        /* Everything accepted went back, before or after the free (calls that took effect
         * before it still deliver their releases). */
        if (!released_exactly_once(racing)) unreleased++;
        /* At most the one callback each thread was already delivering when the free began. */
        unsigned late = atomic_load(&racing->late_callbacks);
        atomic_fetch_add(&late_callbacks_total, late);
        EXPECT(late <= RACERS, "round %d: %u issue/changed callbacks started after loader_free returned", round,
               late);
        feed_free(racing);
    }
    printf("     %d rounds: %lu calls, %lu after loader_free returned (%lu not stale); "
           "%lu callbacks already being delivered started after it\n",
           rounds, atomic_load(&racer_calls), atomic_load(&late_calls), atomic_load(&late_not_stale),
           atomic_load(&late_callbacks_total));
    EXPECT(lost == 0, "loader_free failed in %lu rounds", lost);
    EXPECT(atomic_load(&late_calls) > 0, "no call came after loader_free: the race was not exercised");
    EXPECT(atomic_load(&late_not_stale) == 0, "%lu calls after loader_free did not return STALE_HANDLE",
           atomic_load(&late_not_stale));
    EXPECT(atomic_load(&callbacks_of_late_calls) == 0, "%u callbacks came from calls made after loader_free",
           atomic_load(&callbacks_of_late_calls));
    EXPECT(unreleased == 0, "%lu rounds did not release every acquisition exactly once", unreleased);
}

/* ---- calls on different handles proceed at once ---- */

#define MEET_ROUNDS 20
#define MEET_TIMEOUT_S 10

static atomic_uint met;
static atomic_uint meet_timeouts;
static pthread_barrier_t meet_round;
static _Thread_local unsigned meet_target; /* 0: this call does not wait */

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs inside loader_invalidate_range's state change, with its loader's lock held. On the
 * first call of a round it waits for the other thread's `compare`, which runs inside the other
 * loader's state change: they meet only if neither call waits for the other. */
static int32_t meet_compare(void *ud, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len) {
    check_inside((const feed *)ud);
    if (meet_target) {
        unsigned target = meet_target;
        meet_target = 0;
        atomic_fetch_add(&met, 1);
        double deadline = seconds_now() + MEET_TIMEOUT_S;
        while (atomic_load(&met) < target) {
            if (seconds_now() > deadline) {
                atomic_fetch_add(&meet_timeouts, 1);
                break;
            }
            sched_yield();
        }
    }
    size_t n = a_len < b_len ? a_len : b_len;
    int c = memcmp(a, b, n);
    return c != 0 ? c : a_len < b_len ? -1 : a_len > b_len;
}

static void *meet_and_drive(void *arg) {
    feed *f = arg;
    const uint8_t from[8] = {0, 0, 0, 0, 0, 0, 0, 16}, to[8] = {0, 0, 0, 0, 0, 0, 0, 48};
    for (unsigned round = 0; round < MEET_ROUNDS; round++) {
        pthread_barrier_wait(&meet_round);
        meet_target = 2 * (round + 1);
        if (CALL(f, loader_invalidate_range(f->handle, from, 8, to, 8)) != LOADER_RESULT_OK)
            atomic_fetch_add(&meet_timeouts, 1000);
        meet_target = 0;
        /* Then this loader's own work, while the other thread does its own. */
        CALL(f, loader_set_window(f->handle, round * 8, 64));
        drain(f);
    }
    return NULL;
}

static void calls_on_different_handles_proceed_at_once(void) {
    feed *a = feed_new(meet_compare), *b = feed_new(meet_compare);
    atomic_store(&met, 0);
    pthread_barrier_init(&meet_round, NULL, 2);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, meet_and_drive, a);
    pthread_create(&tb, NULL, meet_and_drive, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&meet_round);
    loader_snapshot sa = {.struct_size = sizeof sa}, sb = {.struct_size = sizeof sb};
    EXPECT(CALL(a, loader_state(a->handle, &sa)) == LOADER_RESULT_OK && sa.quiescent, "loader a not quiescent");
    EXPECT(CALL(b, loader_state(b->handle, &sb)) == LOADER_RESULT_OK && sb.quiescent, "loader b not quiescent");
    EXPECT(CALL(a, loader_free(a->handle)) == LOADER_RESULT_OK, "loader_free a");
    EXPECT(CALL(b, loader_free(b->handle)) == LOADER_RESULT_OK, "loader_free b");
    printf("     %d rounds: the two compare callbacks met inside their loaders' state changes %u times\n",
           MEET_ROUNDS, atomic_load(&met) / 2);
    EXPECT(atomic_load(&meet_timeouts) == 0 && atomic_load(&met) == 2 * MEET_ROUNDS,
           "calls on different handles waited for each other (%u timeouts)", atomic_load(&meet_timeouts));
    EXPECT(released_exactly_once(a) && released_exactly_once(b), "an acquisition was not released exactly once");
    feed_free(a);
    feed_free(b);
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "threads: deadlock: the watchdog fired\n0 passed, 1 failed\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

#define RUN(name, call)                                          \
    do {                                                         \
        int before = failures;                                   \
        call;                                                    \
        if (failures == before) {                                \
            passed++;                                            \
            printf("ok   %s\n", name);                           \
        } else {                                                 \
            failed++;                                            \
            fprintf(stderr, "FAIL %s\n", name);                  \
        }                                                        \
    } while (0)

/*   threads [ANSWERS [RACE_ROUNDS]]   the shared-view run's answers (default 20000) and the
 *                                     free race's rounds (default 300) */
int main(int argc, char **argv) {
    long answers = argc > 1 ? atol(argv[1]) : 20000;
    int rounds = argc > 2 ? atoi(argv[2]) : 300;
    int passed = 0, failed = 0;
    signal(SIGALRM, watchdog);
    alarm(300);
    RUN("one_pinned_view_read_by_several_threads", one_pinned_view_read_by_several_threads(answers));
    RUN("loader_free_races_calls_on_other_threads", loader_free_races_calls_on_other_threads(rounds));
    RUN("calls_on_different_handles_proceed_at_once", calls_on_different_handles_proceed_at_once());
    /* Every callback of every test ran on a thread inside a call on its own loader. */
    RUN("every_callback_ran_inside_its_call", EXPECT(atomic_load(&foreign_callbacks) == 0,
                                                     "%u callbacks ran outside a call on their loader",
                                                     atomic_load(&foreign_callbacks)));
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
