/* The feed (loader_feed_*): the library runs a synchronous load on threads of its own.
 * An in-memory source of numbered items; a cursor is the 8-byte big-endian index of the next
 * item. Each page is a malloc'd buffer whose pointer is the acquisition, freed by `release`,
 * so a page released twice is a double free under ASan/valgrind, and one never released a
 * leak; counters check exactly-once besides. Checks: bad input gets its code; the view equals
 * the source after failures, jumps with cancel hints, and a thread ended inside a load; a load
 * returning more than its limit, a stalled cursor and spent retries are reported; free while
 * loads run waits for them, and a stuck load is let go at free's timeout and at the read
 * timeout; follow mode keeps the window on a growing source's end and reads only what was
 * appended. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loader.h"

static int failed;
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failed = 1;                                                           \
        }                                                                         \
    } while (0)
#define CHECK_CODE(e, want)                                                              \
    do {                                                                                 \
        int got_ = (int)(e);                                                             \
        if (got_ != (int)(want)) {                                                       \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), wanted %s\n", __FILE__, __LINE__, \
                    #e, got_, loader_result_str(got_), #want);                           \
            failed = 1;                                                                  \
        }                                                                                \
    } while (0)

typedef struct {
    uint64_t first;
    uint32_t count;
    uint8_t cursor[8];
} page;

typedef struct {
    _Atomic uint64_t items; /* the source's length: a follow test appends while loads run */
    _Atomic uint64_t items_loaded; /* the items every load returned, summed */
    atomic_int made, released, loads, failed_loads;
    atomic_int fail_pct;  /* each load fails with this chance */
    atomic_int over_limit; /* loads return limit + 1 items */
    atomic_int stall;      /* loads return the cursor they were given */
    atomic_int exit_next;  /* the next load ends its thread */
    atomic_int delay_ms;   /* each load sleeps this long */
    atomic_int block;      /* loads wait while this is set */
    atomic_int block_once; /* 1: the next load waits until this is set to 0 */
    atomic_uint seed;
    atomic_ullong free_me; /* a feed handle the next load frees, from inside the load */
    atomic_uint freed_left; /* what that free reported left running, plus one */
    atomic_ullong free_in_release; /* a feed handle the next release frees, from inside it */
    atomic_int free_timeout_ms;    /* that free's timeout (-1: as long as it takes) */
    atomic_int fail_rc;            /* what a failing load returns (0: 1) */
    atomic_int null_cursor;        /* loads return a NULL next_cursor with a length */
} source;

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static uint64_t get_pos(const uint8_t *c, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++) v = v << 8 | c[i];
    return v;
}

static void put_pos(uint8_t *c, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) c[i] = (uint8_t)v;
}

static int32_t load(void *ud, const loader_read *r, loader_load_result *out) {
    source *s = ud;
    atomic_fetch_add(&s->loads, 1);
    while (atomic_load(&s->block)) sleep_ms(1);
    int one = 1;
    if (atomic_compare_exchange_strong(&s->block_once, &one, 2))
        while (atomic_load(&s->block_once) == 2) sleep_ms(1);
    if (atomic_load(&s->delay_ms)) sleep_ms(atomic_load(&s->delay_ms));
    if (atomic_exchange(&s->exit_next, 0)) pthread_exit(NULL);
    loader_feed_handle own = atomic_exchange(&s->free_me, 0);
    if (own) {
        uint32_t left = 0;
        /* It does not wait for this very load: it counts it as left running. */
        if (loader_feed_free(own, -1, &left) == LOADER_RESULT_OK) atomic_store(&s->freed_left, left + 1);
    }
    unsigned x = atomic_fetch_add(&s->seed, 2654435761u) * 2246822519u;
    if ((int)(x >> 8) % 100 < atomic_load(&s->fail_pct)) {
        atomic_fetch_add(&s->failed_loads, 1);
        return atomic_load(&s->fail_rc) ? atomic_load(&s->fail_rc) : 1;
    }
    uint64_t at = r->cursor_len ? get_pos(r->cursor, r->cursor_len) : 0;
    uint64_t items = atomic_load(&s->items); /* read once: it may grow meanwhile */
    page *p = calloc(1, sizeof *p);
    if (r->direction == LOADER_DIRECTION_FORWARD) {
        uint64_t n = items - at < r->limit ? items - at : r->limit;
        p->first = at;
        p->count = (uint32_t)n;
        put_pos(p->cursor, at + n);
        out->end_of_source = at + n == items;
    } else {
        uint64_t n = at < r->limit ? at : r->limit;
        p->first = at - n;
        p->count = (uint32_t)n;
        put_pos(p->cursor, at - n);
        out->end_of_source = at - n == 0;
    }
    if (atomic_load(&s->over_limit)) p->count = r->limit + 1;
    if (atomic_load(&s->stall)) {
        put_pos(p->cursor, at);
        out->end_of_source = false;
    }
    atomic_fetch_add(&s->made, 1);
    atomic_fetch_add(&s->items_loaded, p->count);
    out->acquisition = (loader_acquisition)p;
    out->count = p->count;
    out->next_cursor = p->cursor;
    out->next_cursor_len = get_pos(p->cursor, 8) == 0 ? 0 : 8; /* position 0: the start */
    if (atomic_load(&s->null_cursor)) {
        out->next_cursor = NULL;
        out->next_cursor_len = 8;
    }
    return 0;
}

static void release(void *ud, loader_acquisition a) {
    source *s = ud;
    free((page *)a);
    loader_feed_handle own = atomic_exchange(&s->free_in_release, 0);
    if (own) {
        uint32_t left = 0;
        /* Called on a feed worker answering a read, or on the clock thread: free cannot wait
         * for that very thread, and does not. */
        if (loader_feed_free(own, atomic_load(&s->free_timeout_ms), &left) == LOADER_RESULT_OK)
            atomic_store(&s->freed_left, left + 1);
    }
    /* The last touch of the source: a test that sees every page released may let it go. */
    atomic_fetch_add(&s->released, 1);
}

/* The threads of this process, from /proc/self/task. */
static int threads_alive(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static loader_config loader_cfg(void) {
    loader_config c = {.struct_size = sizeof c};
    loader_config_default(&c);
    c.page_size = 10;
    c.prefetch_distance = 10;
    c.backoff_initial_ms = 1;
    c.backoff_max_ms = 4;
    c.max_auto_retries = 1000;
    return c;
}

static loader_feed_handle make(source *s, loader_config *lc, uint32_t workers) {
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = workers, .userdata = s,
                             .load = load, .release = release, .loader = lc};
    loader_feed_handle f = 0;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_OK);
    return f;
}

/* The pinned view holds items [start, start + len) of the source, in order, and only those.
 * Returns where the view ends: one past its last item. */
static uint64_t check_view(loader_feed_handle f, uint64_t start, uint64_t len) {
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    loader_view_snapshot *v = NULL;
    CHECK_CODE(loader_view_acquire(l, &v), LOADER_RESULT_OK);
    const loader_page *pages = NULL;
    size_t n = 0;
    bool reval = false;
    CHECK_CODE(loader_view_pages(v, &pages, &n, &reval), LOADER_RESULT_OK);
    uint64_t next = pages && n ? pages[0].start : 0;
    uint64_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        const page *p = (const page *)pages[i].acquisition;
        CHECK(p->first == pages[i].start && pages[i].start == next && p->count == pages[i].count);
        next += p->count;
        covered += p->count;
    }
    CHECK(!reval);
    CHECK(n > 0 && pages[0].start <= start && next >= start + len);
    (void)covered;
    loader_view_release(v);
    return next;
}

static void finish(loader_feed_handle f, source *s) {
    uint32_t left = 99;
    CHECK_CODE(loader_feed_free(f, -1, &left), LOADER_RESULT_OK);
    CHECK(left == 0);
    CHECK(atomic_load(&s->made) == atomic_load(&s->released));
    CHECK_CODE(loader_feed_free(f, -1, NULL), LOADER_RESULT_STALE_HANDLE);
}

static void bad_input_gets_its_code(void) {
    source s = {.items = 100};
    loader_feed_handle f = 0;
    CHECK_CODE(loader_feed_new(NULL, &f), LOADER_RESULT_NULL_POINTER);
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = 2, .userdata = &s,
                             .load = load, .release = release};
    CHECK_CODE(loader_feed_new(&fc, NULL), LOADER_RESULT_NULL_POINTER);
    fc.load = NULL;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_MISSING_CALLBACK);
    fc.load = load;
    fc.release = NULL;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_MISSING_CALLBACK);
    fc.release = release;
    fc.workers = 0;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_INVALID_WORKERS);
    fc.workers = LOADER_FEED_MAX_WORKERS + 1;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_INVALID_WORKERS);
    fc.workers = 1;
    fc.struct_size = 0;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_INVALID_STRUCT_SIZE);
    fc.struct_size = sizeof fc;
    loader_config bad = loader_cfg();
    bad.page_size = 0;
    fc.loader = &bad;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_INVALID_PAGE_SIZE);
    CHECK(f == 0);
    CHECK_CODE(loader_feed_set_window(0, 0, 10), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_feed_wait_quiescent(12345, 0), LOADER_RESULT_INVALID_HANDLE);
    CHECK(atomic_load(&s.loads) == 0);
}

static void loads_under_failures_jumps_and_cancels(void) {
    source s = {.items = 5000, .fail_pct = 20};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 3);
    CHECK_CODE(loader_feed_wait_quiescent(f, 0), LOADER_RESULT_OK); /* nothing to do yet */
    for (uint64_t at = 0; at < 400; at += 37) {
        CHECK_CODE(loader_feed_set_window(f, at, 40), LOADER_RESULT_OK);
        if (at % 3 == 0) CHECK_CODE(loader_feed_invalidate(f), LOADER_RESULT_OK);
    }
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 370, 40);
    /* Slow loads and jumps while they run: the loads of the view jumped away from are
     * hinted, let go of at once, and their pages released when they return. */
    atomic_store(&s.fail_pct, 0);
    atomic_store(&s.block, 1);
    /* A finite read runs (blocked) when the source changes: it is hinted, let go of. */
    int before = atomic_load(&s.loads);
    CHECK_CODE(loader_feed_set_window(f, 395, 40), LOADER_RESULT_OK);
    while (atomic_load(&s.loads) == before) sleep_ms(1);
    CHECK_CODE(loader_feed_invalidate(f), LOADER_RESULT_OK);
    uint8_t c[8];
    for (uint64_t at = 1000; at <= 4000; at += 1000) {
        int loads = atomic_load(&s.loads);
        put_pos(c, at);
        CHECK_CODE(loader_feed_jump(f, c, 8, at), LOADER_RESULT_OK);
        while (atomic_load(&s.loads) == loads) sleep_ms(1); /* its load runs, blocked */
    }
    atomic_store(&s.block, 0);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 4000, 40);
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    loader_counts n = {.struct_size = sizeof n};
    CHECK_CODE(loader_stats(l, &n), LOADER_RESULT_OK);
    if (!(n.cancels > 0 && n.jumps == 4 && n.failed_own > 0))
        fprintf(stderr, "  cancels %d jumps %d failed_own %d\n", (int)n.cancels, (int)n.jumps, (int)n.failed_own);
    CHECK(n.cancels > 0 && n.jumps == 4 && n.failed_own > 0);
    CHECK(atomic_load(&s.failed_loads) > 0);
    finish(f, &s);
    CHECK_CODE(loader_stats(l, &n), LOADER_RESULT_STALE_HANDLE);
}

static void a_load_that_ends_its_thread_is_a_failed_read(void) {
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    atomic_store(&s.exit_next, 1);
    CHECK_CODE(loader_feed_set_window(f, 0, 50), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 0, 50);
    /* Twice more, with the workers replaced: the feed still has threads to load on. */
    for (int i = 0; i < 2; i++) {
        atomic_store(&s.exit_next, 1);
        CHECK_CODE(loader_feed_set_window(f, 100 + (uint64_t)i * 200, 50), LOADER_RESULT_OK);
        CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
        check_view(f, 100 + (uint64_t)i * 200, 50);
    }
    CHECK(atomic_load(&s.exit_next) == 0);
    finish(f, &s);
}

static void bugs_in_the_load_are_reported(void) {
    source s = {.items = 1000, .over_limit = 1};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_COUNT_OVER_LIMIT);
    /* Not retried until the host acts: the loads stop. */
    int loads = atomic_load(&s.loads);
    sleep_ms(50);
    CHECK(atomic_load(&s.loads) == loads);
    atomic_store(&s.over_limit, 0);
    CHECK_CODE(loader_feed_retry(f, NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 0, 20);

    atomic_store(&s.stall, 1);
    CHECK_CODE(loader_feed_set_window(f, 500, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_CURSOR_STALLED);
    atomic_store(&s.stall, 0);
    CHECK_CODE(loader_feed_retry(f, NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 500, 20);
    finish(f, &s);

    source t = {.items = 1000, .fail_pct = 100};
    lc.max_auto_retries = 3;
    f = make(&t, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_RETRIES_SPENT);
    CHECK(atomic_load(&t.failed_loads) == 4); /* the load and 3 automatic retries */
    CHECK_CODE(loader_feed_wait_quiescent(f, 0), LOADER_RESULT_RETRIES_SPENT);
    atomic_store(&t.fail_pct, 0);
    CHECK_CODE(loader_feed_retry(f, NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    finish(f, &t);
}

static void free_while_loads_run(void) {
    /* Free waits for the loads running; their pages go back. */
    source s = {.items = 100000, .delay_ms = 20};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 4);
    CHECK_CODE(loader_feed_set_window(f, 0, 200), LOADER_RESULT_OK);
    uint8_t c[8];
    put_pos(c, 50000);
    CHECK_CODE(loader_feed_jump(f, c, 8, 50000), LOADER_RESULT_OK);
    sleep_ms(30);
    CHECK(atomic_load(&s.loads) > 0);
    finish(f, &s);

    /* A stuck load is let go at free's timeout; its page goes back when it returns. */
    source t = {.items = 1000, .block = 1};
    f = make(&t, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    while (atomic_load(&t.loads) == 0) sleep_ms(1);
    CHECK_CODE(loader_feed_wait_quiescent(f, 30), LOADER_RESULT_TIMED_OUT);
    uint32_t left = 0;
    CHECK_CODE(loader_feed_free(f, 50, &left), LOADER_RESULT_OK);
    CHECK(left == 1);
    atomic_store(&t.block, 0);
    for (int i = 0; i < 5000 && atomic_load(&t.released) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&t.made) == 1 && atomic_load(&t.released) == 1);
    sleep_ms(20); /* the detached thread ends after its release */
}

static void a_load_past_the_read_timeout_is_let_go(void) {
    source s = {.items = 1000, .block_once = 1};
    loader_config lc = loader_cfg();
    lc.read_timeout_ms = 50;
    loader_feed_handle f = make(&s, &lc, 1);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    /* The one worker is stuck in the first load: after 50 ms its read is let go of, and the
     * retry runs on a worker started in its place. */
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    CHECK(atomic_load(&s.block_once) == 2);
    check_view(f, 0, 20);
    atomic_store(&s.block_once, 0); /* the stuck load returns: its page goes back */
    finish(f, &s);
}

static void free_from_inside_a_load(void) {
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    atomic_store(&s.free_me, f);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    for (int i = 0; i < 5000 && atomic_load(&s.freed_left) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&s.freed_left) == 2); /* the load that freed it was left running */
    for (int i = 0; i < 5000 && atomic_load(&s.released) < atomic_load(&s.made); i++) sleep_ms(1);
    CHECK(atomic_load(&s.made) >= 1 && atomic_load(&s.made) == atomic_load(&s.released));
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_STALE_HANDLE);
    sleep_ms(20); /* its thread ends after the page went back */
}

static void no_thread_outlives_free(void) {
    /* Every worker idle at free is joined, not let go: once free returns with no load left
     * running, the process has the threads it had before the feed. (Idle workers were let go
     * and could still be alive after free returned.) Many rounds, so a race would show. */
    int before = threads_alive();
    CHECK(before > 0);
    for (int round = 0; round < 50; round++) {
        source s = {.items = 1000};
        loader_config lc = loader_cfg();
        loader_feed_handle f = make(&s, &lc, 4);
        CHECK_CODE(loader_feed_set_window(f, 0, 40), LOADER_RESULT_OK);
        CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
        uint32_t left = 99;
        CHECK_CODE(loader_feed_free(f, -1, &left), LOADER_RESULT_OK);
        CHECK(left == 0);
        int after = threads_alive();
        if (after != before) {
            fprintf(stderr, "round %d: %d threads before the feed, %d after its free\n", round,
                    before, after);
            CHECK(after == before);
            break;
        }
    }
}

static void free_from_inside_release(int timeout_ms) {
    /* Free called from inside `release` (on the worker answering, or the clock thread) does
     * not wait for its own thread: with -1 it returns (it used to wait for ever), with a
     * timeout it returns at once (it used to wait all of it). */
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 40), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    atomic_store(&s.free_timeout_ms, timeout_ms);
    atomic_store(&s.free_in_release, f);
    double t0 = now_ms();
    /* The repair's commit, on the worker that answers its last read, releases the old pages. */
    CHECK_CODE(loader_feed_invalidate(f), LOADER_RESULT_OK);
    for (int i = 0; i < 10000 && atomic_load(&s.freed_left) == 0; i++) sleep_ms(1);
    double took = now_ms() - t0;
    CHECK(atomic_load(&s.freed_left) == 1); /* returned OK, no load left running */
    CHECK(took < 2000 && (timeout_ms < 0 || took < timeout_ms));
    for (int i = 0; i < 5000 && atomic_load(&s.released) < atomic_load(&s.made); i++) sleep_ms(1);
    CHECK(atomic_load(&s.made) == atomic_load(&s.released));
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_STALE_HANDLE);
    sleep_ms(20); /* the thread that freed it ends after its release returns */
}

/* The cursor before item `position` (the source's own numbering): its 8-byte position. */
static int32_t locate(void *ud, uint64_t position, uint8_t *cursor, size_t capacity, size_t *len) {
    source *s = ud;
    if (position > atomic_load(&s->items) || capacity < 8) return LOADER_LOCATE_UNKNOWN;
    put_pos(cursor, position);
    *len = position == 0 ? 0 : 8;
    return LOADER_LOCATE_FOUND;
}

static void a_far_move_starts_where_locate_says(void) {
    source s = {.items = 100000};
    loader_config lc = loader_cfg();
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = 2, .userdata = &s,
                             .load = load, .release = release, .loader = &lc, .locate = locate};
    loader_feed_handle f = 0;
    CHECK_CODE(loader_feed_new(&fc, &f), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_set_window(f, 0, 40), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    int before = atomic_load(&s.loads);
    CHECK_CODE(loader_feed_set_window(f, 80000, 40), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    check_view(f, 80000, 40);
    /* The window plus prefetch, 60 items at 10 a load: not the 8,000 loads of the walk. */
    int loads = atomic_load(&s.loads) - before;
    CHECK(loads <= 8);
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    loader_counts n = {.struct_size = sizeof n};
    CHECK_CODE(loader_stats(l, &n), LOADER_RESULT_OK);
    CHECK(n.located == 1 && n.far_jumps == 1);
    finish(f, &s);
}

static loader_snapshot feed_state(loader_feed_handle f) {
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    loader_snapshot st = {.struct_size = sizeof st};
    CHECK_CODE(loader_state(l, &st), LOADER_RESULT_OK);
    return st;
}

static bool feed_following(loader_feed_handle f) {
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    bool on = false;
    CHECK_CODE(loader_following(l, &on), LOADER_RESULT_OK);
    return on;
}

/* The window is the source's last `len` items, and the pinned view holds them, in order, up
 * to the source's end and no further. */
static void check_at_end(loader_feed_handle f, source *s, uint64_t len) {
    uint64_t items = atomic_load(&s->items);
    loader_snapshot st = feed_state(f);
    if (!(st.window_start == items - len && st.window_len == len && st.end_of_source &&
          st.covered_end == items && st.quiescent))
        fprintf(stderr, "  %llu items: window [%llu, +%llu), covered to %llu, end %d\n",
                (unsigned long long)items, (unsigned long long)st.window_start,
                (unsigned long long)st.window_len, (unsigned long long)st.covered_end,
                (int)st.end_of_source);
    CHECK(st.window_start == items - len && st.window_len == len);
    CHECK(st.end_of_source && st.covered_end == items && st.quiescent);
    CHECK(check_view(f, items - len, len) == items);
}

/* Adds `k` items to the source, reports them, and waits until the feed has done its part. */
static void append(loader_feed_handle f, source *s, uint64_t k) {
    atomic_fetch_add(&s->items, k);
    CHECK_CODE(loader_feed_appended(f), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
}

/* Follow mode through the feed: loader_feed_follow pins the window to the source's last 40
 * items, and after each loader_feed_appended the workers read only the new items and the
 * window moves with them; a move away unpins, a move back to the end pins again, following
 * off stays where it is; a bad or freed handle gets its code. */
static void follow_mode_keeps_the_window_on_the_end(void) {
    enum { WINDOW = 40, PAGE = 10, ROUNDS = 40 };
    source s = {.items = 300};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 300 - WINDOW, WINDOW), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    CHECK(!feed_following(f));
    CHECK_CODE(loader_feed_follow(f, true), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    CHECK(feed_following(f));
    check_at_end(f, &s, WINDOW);

    /* Appends of 0 to 13 items (13: more than a page), one round each. */
    uint64_t loaded_before = atomic_load(&s.items_loaded), appended = 0;
    int loads_before = atomic_load(&s.loads);
    for (uint64_t round = 0; round < ROUNDS; round++) {
        uint64_t k = round * 5 % 14;
        append(f, &s, k);
        appended += k;
        CHECK(feed_following(f));
        check_at_end(f, &s, WINDOW);
    }
    uint64_t loaded = atomic_load(&s.items_loaded) - loaded_before;
    int loads = atomic_load(&s.loads) - loads_before;
    printf("  follow: %d rounds appended %llu items; the feed read %llu items in %d loads\n",
           ROUNDS, (unsigned long long)appended, (unsigned long long)loaded, loads);
    /* Only what was appended is read: no re-read of the window, at most a page's slack a
     * round. (Re-reading the window plus prefetch after each append would read 60 a round.) */
    CHECK(loaded >= appended);
    CHECK((double)loaded <= 1.05 * (double)appended + (double)(PAGE * ROUNDS));

    /* A move away unpins: an append no longer moves the window, and nothing is read for it. */
    uint64_t away = atomic_load(&s.items) - 200;
    CHECK_CODE(loader_feed_set_window(f, away, WINDOW), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    CHECK(!feed_following(f));
    uint64_t loaded_away = atomic_load(&s.items_loaded);
    append(f, &s, 7);
    CHECK(!feed_following(f));
    CHECK(feed_state(f).window_start == away);
    check_view(f, away, WINDOW);
    CHECK(atomic_load(&s.items_loaded) == loaded_away);

    /* A move back to the end pins again: the next append moves the window once more. */
    CHECK_CODE(loader_feed_set_window(f, atomic_load(&s.items) - WINDOW, WINDOW), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    CHECK(feed_following(f));
    check_at_end(f, &s, WINDOW);
    append(f, &s, 9);
    CHECK(feed_following(f));
    check_at_end(f, &s, WINDOW);

    /* Following off: the window stays where it was when the source grows. */
    CHECK_CODE(loader_feed_follow(f, false), LOADER_RESULT_OK);
    CHECK(!feed_following(f));
    uint64_t last_start = atomic_load(&s.items) - WINDOW;
    append(f, &s, 5);
    CHECK(!feed_following(f));
    CHECK(feed_state(f).window_start == last_start);

    CHECK_CODE(loader_feed_follow(0, true), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_feed_appended(0), LOADER_RESULT_INVALID_HANDLE);
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    finish(f, &s);
    CHECK_CODE(loader_feed_follow(f, true), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_feed_follow(f, false), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_feed_appended(f), LOADER_RESULT_STALE_HANDLE);
    bool on = true;
    CHECK_CODE(loader_following(l, &on), LOADER_RESULT_STALE_HANDLE);
}

static void no_issue(void *ud, const loader_read *r) {
    (void)ud;
    (void)r;
}

/* A feed's handle is its loader's, and loader_free refuses it: the feed is untouched. A plain
 * loader made first is not named by the feed's handle (its handle was the feed's number in
 * another table: loader_free on the feed freed that loader, and later feed calls said
 * "freed"). */
static void loader_free_refuses_a_feeds_handle(void) {
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    loader_callbacks cb = {.struct_size = sizeof cb, .userdata = &s, .issue = no_issue,
                           .release = release};
    loader_handle plain = 0;
    CHECK_CODE(loader_new(&lc, &cb, &plain), LOADER_RESULT_OK);
    loader_feed_handle f = make(&s, &lc, 2);
    loader_handle l = 0;
    CHECK_CODE(loader_feed_loader(f, &l), LOADER_RESULT_OK);
    CHECK(l == f);
    CHECK(plain != f);
    CHECK_CODE(loader_free(f), LOADER_RESULT_FEED_OWNED);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    loader_snapshot st = {.struct_size = sizeof st};
    CHECK_CODE(loader_state(f, &st), LOADER_RESULT_OK);
    CHECK(st.quiescent);
    check_view(f, 0, 20);
    /* The plain loader is no feed, and is still there. */
    CHECK_CODE(loader_feed_set_window(plain, 0, 20), LOADER_RESULT_INVALID_HANDLE);
    loader_feed_counts n = {.struct_size = sizeof n};
    CHECK_CODE(loader_feed_stats(plain, &n), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_state(plain, &st), LOADER_RESULT_OK);
    CHECK_CODE(loader_free(plain), LOADER_RESULT_OK);
    finish(f, &s);
    CHECK_CODE(loader_free(f), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_STALE_HANDLE);
}

typedef struct {
    loader_feed_handle f;
    source *s;
    atomic_int stop;
    int writes;
} writer_arg;

/* A writer: appends to the source and invalidates, while the reader moves the window. */
static void *writer(void *p) {
    writer_arg *w = p;
    while (!atomic_load(&w->stop)) {
        atomic_fetch_add(&w->s->items, 3);
        CHECK_CODE(w->writes % 2 ? loader_feed_appended(w->f) : loader_feed_invalidate(w->f),
                   LOADER_RESULT_OK);
        w->writes++;
        sleep_ms(2);
    }
    return NULL;
}

/* Every page a load returned reached `release` exactly once, checked from the feed's
 * counters alone (and against the host's own counts): under a writer and failing loads,
 * with pages of loads whose read was let go of while they ran (jumps while the loads are
 * blocked: the loader's own counters miss those), pages over their limit, with a stalled
 * cursor and with a NULL cursor. */
static void counts_say_each_page_was_released_once(void) {
    source s = {.items = 5000, .fail_pct = 15};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 3);
    writer_arg w = {.f = f, .s = &s};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, &w) == 0);
    uint8_t c[8];
    for (int round = 0; round < 6; round++) {
        for (uint64_t at = 0; at < 300; at += 29)
            CHECK_CODE(loader_feed_set_window(f, at + (uint64_t)round * 500, 40), LOADER_RESULT_OK);
        /* A load blocked, then a jump: its read is let go of while it runs; its page is late. */
        atomic_store(&s.block, 1);
        int loads = atomic_load(&s.loads);
        put_pos(c, 3000 + (uint64_t)round * 100);
        CHECK_CODE(loader_feed_jump(f, c, 8, 3000 + (uint64_t)round * 100), LOADER_RESULT_OK);
        while (atomic_load(&s.loads) == loads) sleep_ms(1);
        put_pos(c, 4000 + (uint64_t)round * 100);
        CHECK_CODE(loader_feed_jump(f, c, 8, 4000 + (uint64_t)round * 100), LOADER_RESULT_OK);
        atomic_store(&s.block, 0);
        sleep_ms(5);
    }
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    CHECK(w.writes > 0);
    atomic_store(&s.fail_pct, 0);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);

    /* Bugs in the load: each page goes back, counted by its cause. */
    atomic_store(&s.over_limit, 1);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_COUNT_OVER_LIMIT);
    atomic_store(&s.over_limit, 0);
    atomic_store(&s.null_cursor, 1);
    CHECK_CODE(loader_feed_set_window(f, 700, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_NULL_CURSOR);
    atomic_store(&s.null_cursor, 0);
    atomic_store(&s.stall, 1);
    CHECK_CODE(loader_feed_set_window(f, 1500, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_CURSOR_STALLED);
    atomic_store(&s.stall, 0);
    CHECK_CODE(loader_feed_retry(f, NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);

    /* While it runs: a struct_size not set is refused; the counts so far add up (a late load
     * may still run after quiescence: its page is handed out before it is given back). */
    loader_feed_counts n = {.struct_size = 0};
    CHECK_CODE(loader_feed_stats(f, &n), LOADER_RESULT_INVALID_STRUCT_SIZE);
    CHECK_CODE(loader_feed_stats(f, NULL), LOADER_RESULT_NULL_POINTER);
    n.struct_size = sizeof n;
    CHECK_CODE(loader_feed_stats(f, &n), LOADER_RESULT_OK);
    CHECK(n.struct_size == sizeof n);
    CHECK(n.handed_out >= n.accepted + n.given_back && n.handed_out > 0);

    /* The free that hands back the final counts: a bad out-pointer frees nothing. */
    uint32_t left = 99;
    CHECK_CODE(loader_feed_free_counted(f, -1, &left, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    memset(&n, 0, sizeof n);
    n.struct_size = sizeof n;
    CHECK_CODE(loader_feed_free_counted(f, -1, &left, &n), LOADER_RESULT_OK);
    CHECK(left == 0 && n.running == 0);
    /* From the counters alone: each page returned went back once, by the feed or the loader. */
    CHECK(n.handed_out == n.accepted + n.given_back);
    CHECK(n.accepted == n.released_by_loader);
    /* ... and they agree with the host's own counts. */
    CHECK(n.handed_out == (uint64_t)atomic_load(&s.made));
    CHECK(n.given_back + n.released_by_loader == (uint64_t)atomic_load(&s.released));
    CHECK(atomic_load(&s.made) == atomic_load(&s.released));
    CHECK(n.failed == (uint64_t)atomic_load(&s.failed_loads) && n.failed > 0);
    CHECK(n.late > 0);
    CHECK(n.count_over_limit >= 1 && n.refused_null_cursor >= 1 && n.cursor_stalled >= 1);
    CHECK(n.refused_cursor_too_long == 0 && n.refused_other == 0);
    CHECK(n.last_refused_code == LOADER_RESULT_NULL_CURSOR);
    CHECK(n.given_back == n.late + n.count_over_limit + n.refused_null_cursor);
    fprintf(stderr, "  counts: handed out %llu accepted %llu given back %llu late %llu by loader %llu "
                "made %d released %d\n", (unsigned long long)n.handed_out,
                (unsigned long long)n.accepted, (unsigned long long)n.given_back,
                (unsigned long long)n.late, (unsigned long long)n.released_by_loader,
                atomic_load(&s.made), atomic_load(&s.released));
    CHECK_CODE(loader_feed_free_counted(f, -1, &left, &n), LOADER_RESULT_STALE_HANDLE);
}

/* The counts after a free that left a load running: `running` says so, and the page that
 * load returns later is counted (late) by the time it has gone to `release`. */
static void counts_after_a_free_that_left_a_load(void) {
    source s = {.items = 1000, .block = 1};
    loader_config lc = loader_cfg();
    loader_feed_handle f = make(&s, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    while (atomic_load(&s.loads) == 0) sleep_ms(1);
    uint32_t left = 0;
    loader_feed_counts n = {.struct_size = sizeof n};
    CHECK_CODE(loader_feed_free_counted(f, 20, &left, &n), LOADER_RESULT_OK);
    CHECK(left == 1 && n.running == 1 && n.handed_out == 0);
    atomic_store(&s.block, 0);
    for (int i = 0; i < 5000 && atomic_load(&s.released) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&s.made) == 1 && atomic_load(&s.released) == 1);
    sleep_ms(20); /* the detached thread ends after its release */
}

/* loader_explain on a feed's handle shows what the failing load returned, and its read. */
static void explain_shows_what_a_failing_load_returned(void) {
    source s = {.items = 1000, .fail_pct = 100, .fail_rc = -7};
    loader_config lc = loader_cfg();
    lc.max_auto_retries = 2;
    loader_feed_handle f = make(&s, &lc, 2);
    CHECK_CODE(loader_feed_set_window(f, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_RETRIES_SPENT);
    char text[4096];
    size_t len = 0;
    CHECK_CODE(loader_explain(f, text, sizeof text, &len), LOADER_RESULT_OK);
    CHECK(strstr(text, "returned -7") != NULL);
    CHECK(strstr(text, "3 loads failed") != NULL);
    if (failed) fprintf(stderr, "  explain:\n%s\n", text);
    atomic_store(&s.fail_pct, 0);
    CHECK_CODE(loader_feed_retry(f, NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(f, 20000), LOADER_RESULT_OK);
    finish(f, &s);
}

int main(void) {
    bad_input_gets_its_code();
    a_far_move_starts_where_locate_says();
    loads_under_failures_jumps_and_cancels();
    a_load_that_ends_its_thread_is_a_failed_read();
    bugs_in_the_load_are_reported();
    free_while_loads_run();
    a_load_past_the_read_timeout_is_let_go();
    free_from_inside_a_load();
    free_from_inside_release(-1);
    free_from_inside_release(3000);
    no_thread_outlives_free();
    follow_mode_keeps_the_window_on_the_end();
    loader_free_refuses_a_feeds_handle();
    counts_say_each_page_was_released_once();
    counts_after_a_free_that_left_a_load();
    explain_shows_what_a_failing_load_returned();
    if (failed) {
        fprintf(stderr, "feed: FAILED\n");
        return 1;
    }
    printf("feed: all checks passed\n");
    return 0;
}
