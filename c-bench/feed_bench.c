/* Loads per second through the feed (loader_feed_*), against the same loads run by a host's
 * own pool over the plain C ABI, in the same run (docs/BENCHMARKS.md, "The feed").
 *
 * The load is trivial (it names `limit` items after its cursor, no buffer, no I/O), so what
 * is measured is what each side adds per read: the feed's queue, worker hand-off, answer and
 * clock, against a minimal host pool (a mutex-and-condition queue that `issue` appends to,
 * `workers` threads that take a read, run the load and call loader_settle, and a waiter on
 * `changed`). Both run one workload on the same loader settings: a window of ITEMS items,
 * PAGE to a page, opened at once, so the loader issues ITEMS / PAGE finite reads one after
 * another (each answer issues the next) and the run ends when the loader is quiescent. Each
 * repetition runs both, alternating which goes first; the ratio is per repetition (feed loads/s
 * over pool loads/s), and the median is reported.
 *
 *   make bench-feed       (or: target/c-tests/feed_bench [--quick] [--workers N])
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loader.h"

#define PAGE 10

static uint64_t items = 200000;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t get_pos(const uint8_t *c, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v << 8 | c[i];
    return v;
}

static void put_pos(uint8_t *c, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) c[i] = (uint8_t)v;
}

/* The load both sides run: `limit` items after the cursor; the acquisition is a position. */
static uint32_t trivial(const uint8_t *cursor, size_t len, uint32_t limit, uint8_t *next,
                        bool *end) {
    uint64_t at = get_pos(cursor, len);
    uint64_t n = items - at < limit ? items - at : limit;
    put_pos(next, at + n);
    *end = at + n == items;
    return (uint32_t)n;
}

static atomic_long released;
static void on_release(void *u, loader_acquisition a) {
    (void)u, (void)a;
    atomic_fetch_add(&released, 1);
}

static loader_config config(void) {
    loader_config c = {.struct_size = sizeof c};
    loader_config_default(&c);
    c.page_size = PAGE;
    c.prefetch_distance = 0;
    return c;
}

/* ---- the feed ---- */

static int32_t feed_load(void *u, const loader_read *r, loader_load_result *out) {
    static _Thread_local uint8_t next[8];
    (void)u;
    out->count = trivial(r->cursor, r->cursor_len, r->limit, next, &out->end_of_source);
    out->acquisition = (loader_acquisition)get_pos(next, 8);
    out->next_cursor = next;
    out->next_cursor_len = 8;
    return 0;
}

static double run_feed(uint32_t workers, uint64_t *loads) {
    loader_config lc = config();
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = workers, .load = feed_load,
                             .release = on_release, .loader = &lc};
    loader_feed_handle f;
    loader_handle l;
    if (loader_feed_new(&fc, &f) || loader_feed_loader(f, &l)) exit(2);
    double t0 = now_s();
    loader_feed_set_window(f, 0, items);
    if (loader_feed_wait_quiescent(f, 600000) != LOADER_RESULT_OK) exit(3);
    double t = now_s() - t0;
    loader_counts c = {.struct_size = sizeof c};
    loader_stats(l, &c);
    *loads = c.answered_current + c.answered_stale;
    loader_feed_free(f, -1, NULL);
    return t;
}

/* ---- a host's own pool over the C ABI ---- */

typedef struct {
    uint64_t read_id;
    uint8_t cursor[8];
    size_t cursor_len;
    uint32_t limit;
} job;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work, changed;
    job *jobs;
    size_t head, tail, cap;
    bool stop;
    loader_handle loader;
} pool;

static void pool_issue(void *u, const loader_read *r) {
    pool *p = u;
    job j = {.read_id = r->read_id, .cursor_len = r->cursor_len, .limit = r->limit};
    if (r->cursor_len) memcpy(j.cursor, r->cursor, r->cursor_len);
    pthread_mutex_lock(&p->lock);
    if (p->tail - p->head == p->cap) exit(4);
    p->jobs[p->tail++ % p->cap] = j;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

static void pool_changed(void *u) {
    pool *p = u;
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

static void *pool_worker(void *arg) {
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (p->head == p->tail && !p->stop) pthread_cond_wait(&p->work, &p->lock);
        if (p->stop) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        job j = p->jobs[p->head++ % p->cap];
        pthread_mutex_unlock(&p->lock);
        uint8_t next[8];
        bool end;
        uint32_t n = trivial(j.cursor, j.cursor_len, j.limit, next, &end);
        loader_settle(p->loader, j.read_id, (loader_acquisition)get_pos(next, 8), n, next, 8, end,
                      NULL);
    }
}

static bool quiescent(loader_handle l) {
    loader_snapshot s = {.struct_size = sizeof s};
    loader_state(l, &s);
    return s.quiescent;
}

static double run_pool(uint32_t workers, uint64_t *loads) {
    pool p = {.cap = 1024};
    p.jobs = calloc(p.cap, sizeof(job));
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.work, NULL);
    pthread_cond_init(&p.changed, NULL);
    loader_config lc = config();
    loader_callbacks cb = {.struct_size = sizeof cb, .userdata = &p, .issue = pool_issue,
                           .release = on_release, .changed = pool_changed};
    if (loader_new(&lc, &cb, &p.loader)) exit(2);
    pthread_t *t = calloc(workers, sizeof(pthread_t));
    for (uint32_t i = 0; i < workers; i++) pthread_create(&t[i], NULL, pool_worker, &p);
    double t0 = now_s();
    loader_set_window(p.loader, 0, items);
    pthread_mutex_lock(&p.lock);
    while (!quiescent(p.loader)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50000000;
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&p.changed, &p.lock, &until);
    }
    pthread_mutex_unlock(&p.lock);
    double elapsed = now_s() - t0;
    loader_counts c = {.struct_size = sizeof c};
    loader_stats(p.loader, &c);
    *loads = c.answered_current + c.answered_stale;
    pthread_mutex_lock(&p.lock);
    p.stop = true;
    pthread_cond_broadcast(&p.work);
    pthread_mutex_unlock(&p.lock);
    for (uint32_t i = 0; i < workers; i++) pthread_join(t[i], NULL);
    loader_free(p.loader);
    free(t);
    free(p.jobs);
    return elapsed;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    uint32_t workers = 3;
    int reps = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) reps = 3, items = 20000;
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc) workers = (uint32_t)atoi(argv[++i]);
    }
    double feed_rate[16], pool_rate[16], ratio[16];
    for (int r = 0; r < reps; r++) {
        uint64_t fl = 0, pl = 0;
        double ft, pt;
        if (r % 2) {
            pt = run_pool(workers, &pl);
            ft = run_feed(workers, &fl);
        } else {
            ft = run_feed(workers, &fl);
            pt = run_pool(workers, &pl);
        }
        if (fl != items / PAGE || pl != items / PAGE) {
            fprintf(stderr, "feed_bench: %llu and %llu loads, expected %llu\n",
                    (unsigned long long)fl, (unsigned long long)pl,
                    (unsigned long long)(items / PAGE));
            return 1;
        }
        feed_rate[r] = (double)fl / ft;
        pool_rate[r] = (double)pl / pt;
        ratio[r] = feed_rate[r] / pool_rate[r];
    }
    qsort(feed_rate, (size_t)reps, sizeof(double), by_value);
    qsort(pool_rate, (size_t)reps, sizeof(double), by_value);
    qsort(ratio, (size_t)reps, sizeof(double), by_value);
    printf("feed, %u workers        %10.0f loads/s  (%llu loads x %d, median)\n", workers,
           feed_rate[reps / 2], (unsigned long long)(items / PAGE), reps);
    printf("host's own pool, %u     %10.0f loads/s\n", workers, pool_rate[reps / 2]);
    printf("feed / own pool           %10.2f x      (per-repetition ratios, median; %.2f..%.2f)\n",
           ratio[reps / 2], ratio[0], ratio[reps - 1]);
    return 0;
}
