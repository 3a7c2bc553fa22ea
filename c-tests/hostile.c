#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
/* Hostile and unlucky hosts, through the C ABI: a host that never answers superseded reads,
 * callbacks that call back in or free their own loader, answers delivered from a fresh thread
 * every time, cursors at and past the length limit, counters at the end of their range, and the
 * cancellation hint. Each test prints what it measured; docs/ROBUSTNESS.md quotes the numbers.
 *
 *   hostile            the full run (ASan+UBSan in `make c-test-hostile`)
 *   hostile --quick    smaller counts, for valgrind
 *
 * The last four tests are fuzz_abi's findings 1 to 4 (docs/ROBUSTNESS.md, "Findings"), each
 * asserting the documented contract: 1 and 2 fail before bfe75f1, 3 and 4 before ef2b3a7. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "host.h"

static int quick;

/* ---- the host of host.h, with every callback recorded ---- */

#define MAX_LOG 65536

static uint64_t max_issued;            /* the highest read id `issue` delivered */
static uint64_t cancel_log[MAX_LOG];   /* read ids, in the order `cancel` delivered them */
static size_t ncancel;
static int callbacks_after_free;
static int freed_flag;                 /* set when loader_free returned for the host under test */
typedef void (*cancel_hook_fn)(host *h, uint64_t read_id);
static cancel_hook_fn on_cancel_hook;
static int in_cancel_hook;

static void reset_log(void) {
    max_issued = 0;
    ncancel = 0;
    callbacks_after_free = 0;
    freed_flag = 0;
    on_cancel_hook = NULL;
}

static void hi_issue(void *ud, const loader_read *r) {
    if (freed_flag) callbacks_after_free++;
    if (r->read_id > max_issued) max_issued = r->read_id;
    cb_issue(ud, r);
}
static void hi_release(void *ud, loader_acquisition acq) {
    if (freed_flag) callbacks_after_free++;
    cb_release(ud, acq);
}
static void hi_changed(void *ud) {
    if (freed_flag) callbacks_after_free++;
    cb_changed(ud);
}
static void hi_cancel(void *ud, uint64_t read_id) {
    if (freed_flag) callbacks_after_free++;
    cb_cancel(ud, read_id);
    if (ncancel < MAX_LOG) cancel_log[ncancel++] = read_id;
    if (on_cancel_hook && !in_cancel_hook) {
        in_cancel_hook = 1;
        on_cancel_hook((host *)ud, read_id);
        in_cancel_hook = 0;
    }
}

static size_t cancels_of(uint64_t read_id) {
    size_t n = 0;
    for (size_t i = 0; i < ncancel; i++) n += cancel_log[i] == read_id;
    return n;
}

/* A host and loader with the given settings; counters as loader_new_with_counters takes them. */
static host *hostile_new(uint32_t page, uint64_t prefetch, uint64_t drop, uint64_t len, uint64_t epoch,
                         uint64_t next_id) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = page;
    cfg.prefetch_distance = prefetch;
    cfg.drop_margin = drop;
    cfg.max_auto_retries = 0;
    h->source_len = len;
    h->next_acq = 1;
    loader_callbacks cb = host_callbacks(h);
    cb.issue = hi_issue;
    cb.release = hi_release;
    cb.changed = hi_changed;
    cb.cancel = hi_cancel;
    reset_log();
    if (loader_new_with_counters(&cfg, &cb, epoch, next_id, &h->handle) != LOADER_RESULT_OK) {
        fprintf(stderr, "loader_new_with_counters failed\n");
        exit(2);
    }
    return h;
}

static void free_host(host *h) {
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    freed_flag = 1;
    CHECK(released_exactly_once(h));
    free(h);
}

/* Answers every pending read except `keep` (a read id the host will never answer). */
static void drain_except(host *h, uint64_t keep) {
    int guard = 0;
    size_t i = 0;
    while (i < h->npending && guard++ < 100000) {
        if (h->pending[i].read_id == keep) {
            i++;
            continue;
        }
        pending_read p = take(h, i);
        CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
        i = 0;
    }
}

/* ---- 1. a host that never answers superseded reads ---- */

static void a_host_that_never_answers_superseded_reads(void) {
    const int rounds = quick ? 200 : 5000;
    host *h = hostile_new(4, 0, 0, 1000000, 0, 1);
    CHECK_CODE(loader_set_window(h->handle, 0, 16), LOADER_RESULT_OK);
    drain(h);
    /* A finite read is in flight when the source changes: it is superseded, and this host
     * never answers it. */
    CHECK_CODE(loader_set_window(h->handle, 0, 20), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE);
    uint64_t never = h->pending[0].read_id;
    uint64_t max_out = 0, max_inflight = 0, max_settled = 0, max_pages = 0, max_held = 0;
    for (int i = 0; i < rounds; i++) {
        /* The window moves first: with the superseded read unanswered, only the repair the
         * invalidation starts can cover a larger window (see below). */
        if (i % 3 == 1) CHECK_CODE(loader_set_window(h->handle, 0, 16 + (uint64_t)(i % 4) * 4), LOADER_RESULT_OK);
        CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
        loader_snapshot s = state_of(h);
        if (s.outstanding_reads > max_out) max_out = s.outstanding_reads;
        if (s.inflight > max_inflight) max_inflight = s.inflight;
        if (s.accepted - s.released > max_held) max_held = s.accepted - s.released;
        drain_except(h, never);
        s = state_of(h);
        if (s.settled > max_settled) max_settled = s.settled;
        if (s.pages > max_pages) max_pages = s.pages;
        if (s.accepted - s.released > max_held) max_held = s.accepted - s.released;
        /* The view is current after every repair, although the superseded read never came. */
        if (s.revalidating || s.cover_epoch != s.epoch || s.covered_end < s.window_start + s.window_len ||
            s.outstanding_reads != 1) {
            fprintf(stderr, "  round %d: revalidating %d, epoch %llu cover %llu, covered %llu..%llu, window %llu+%llu, "
                    "%llu outstanding\n", i, s.revalidating, (unsigned long long)s.epoch,
                    (unsigned long long)s.cover_epoch, (unsigned long long)s.covered_start,
                    (unsigned long long)s.covered_end, (unsigned long long)s.window_start,
                    (unsigned long long)s.window_len, (unsigned long long)s.outstanding_reads);
            CHECK(!"the loader did not recover from the invalidation");
            break;
        }
    }
    CHECK(h->cancels == 1 && cancels_of(never) == 1); /* one hint, for the one superseded read */
    CHECK(max_out <= 2 && max_inflight <= 2);       /* it, and one chain step */
    CHECK(max_pages <= 7 && max_held <= 14 && max_settled <= 2); /* the window: 7 pages at most */
    printf("     %d invalidations, one superseded read never answered: max %llu reads outstanding, "
           "%llu requests in flight, %llu settled, %llu pages, %llu acquisitions held\n",
           rounds, (unsigned long long)max_out, (unsigned long long)max_inflight, (unsigned long long)max_settled,
           (unsigned long long)max_pages, (unsigned long long)max_held);

    /* Only one finite read may be in flight, superseded ones included: while it is unanswered,
     * growing the window issues nothing; only the next repair refills. */
    int issues = h->issues;
    CHECK_CODE(loader_set_window(h->handle, 0, 40), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    int blocked = h->issues == issues && s.covered_end < 40;
    printf("     growing the window to 40 with it unanswered: %d reads issued, covered to %llu%s\n",
           h->issues - issues, (unsigned long long)s.covered_end, blocked ? " (finite reads are blocked)" : "");
    /* The way out for such a host: answer the cancelled read, cheaply (no items). It is stale,
     * and finite reads resume. */
    size_t at = 0;
    while (h->pending[at].read_id != never) at++;
    pending_read p = take(h, at);
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    loader_answer a = LOADER_ANSWER_CURRENT;
    CHECK_CODE(loader_settle(h->handle, p.read_id, (loader_acquisition)acq, 0, NULL, 0, false, &a), LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_STALE);
    drain(h);
    s = state_of(h);
    CHECK(s.covered_end >= 40 && s.outstanding_reads == 0 && !s.revalidating);
    free_host(h);
}

/* ---- 2. a release callback that calls back in ---- */

static int reentrant_calls, reentrant_bad;

static void note(loader_result r, int freeing) {
    reentrant_calls++;
    if (!(r == LOADER_RESULT_OK || (freeing && r == LOADER_RESULT_STALE_HANDLE))) reentrant_bad++;
}

static int release_rounds;

static void release_calls_everything(host *h) {
    /* Bounded: answering from here produces more releases, and so on without end. */
    if (release_rounds++ >= 2000) return;
    loader_snapshot s = {.struct_size = sizeof s};
    loader_request_info reqs[64];
    loader_page pages[64];
    size_t n;
    bool b;
    uint64_t d;
    int freeing = freed_flag;
    note(loader_state(h->handle, &s), freeing);
    note(loader_requests(h->handle, reqs, 64, &n), freeing);
    note(loader_view(h->handle, pages, 64, &n, &b), freeing);
    note(loader_next_deadline(h->handle, &b, &d), freeing);
    note(loader_tick(h->handle, 1), freeing);
    note(loader_retry(h->handle, &b), freeing);
    note(loader_floor(h->handle), freeing);
    note(loader_set_window(h->handle, 0, 12), freeing);
    if (h->npending > 0) {
        pending_read p = take(h, 0);
        loader_result r = answer(h, &p);
        note(r, freeing);
        if (r != LOADER_RESULT_OK) h->pending[h->npending++] = p;
    }
    if (release_rounds % 7 == 0) note(loader_invalidate(h->handle), freeing);
}

static void a_release_callback_calls_everything_back_in(void) {
    host *h = hostile_new(2, 2, 0, 60, 0, 1);
    reentrant_calls = reentrant_bad = release_rounds = 0;
    h->on_release = release_calls_everything;
    CHECK_CODE(loader_set_window(h->handle, 0, 12), LOADER_RESULT_OK);
    for (int i = 0; i < 50; i++) {
        drain(h);
        CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    }
    drain(h);
    loader_snapshot s = state_of(h);
    CHECK(s.released > 50 && !s.revalidating && s.cover_epoch == s.epoch && s.outstanding_reads == 0);
    CHECK(reentrant_bad == 0);
    printf("     %d calls from inside release callbacks, %llu releases, none refused\n", reentrant_calls,
           (unsigned long long)s.released);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK); /* its releases call back in: STALE */
    freed_flag = 1;
    CHECK(reentrant_bad == 0 && released_exactly_once(h) && callbacks_after_free == 0);
    free(h);
}

/* ---- 3. loader_free from inside every kind of callback ---- */

static loader_result free_result;
static host *other;          /* a second loader, freed from inside the first one's callback */

static void free_own(host *h) {
    if (freed_flag) return;
    free_result = loader_free(h->handle);
    if (free_result != LOADER_RESULT_OK) return; /* a free already running: STALE */
    freed_flag = 1;
    /* free has returned: every acquisition is back. */
    CHECK(released_exactly_once(h));
}

static void free_own_on_cancel(host *h, uint64_t read_id) {
    (void)read_id;
    free_own(h);
}

static void free_other(host *h) {
    (void)h;
    if (other == NULL) return;
    CHECK_CODE(loader_free(other->handle), LOADER_RESULT_OK);
    CHECK(released_exactly_once(other));
}

/* `which`: 0 issue, 1 release, 2 changed, 3 cancel, 4 release while free runs, 5 another
 * loader's free inside this one's issue. */
static void free_inside(int which) {
    host *h = hostile_new(2, 0, 0, 40, 0, 1);
    free_result = LOADER_RESULT_PANIC;
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK); /* a finite read in flight */
    if (which == 5) {
        other = hostile_new(2, 0, 0, 40, 0, 1);
        loader_set_window(other->handle, 0, 6);
        drain(other);
        freed_flag = 0; /* hostile_new reset the log; h is still live */
        h->on_issue = free_other;
        CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
        CHECK(other->bad_releases == 0 && released_exactly_once(other));
        free(other);
        other = NULL;
        drain(h);
        free_host(h);
        return;
    }
    if (which == 0) h->on_issue = free_own;
    if (which == 1 || which == 4) h->on_release = free_own;
    if (which == 2) h->on_changed = free_own;
    if (which == 3) on_cancel_hook = free_own_on_cancel;
    if (which == 4) {
        /* free runs the release callbacks, and the first one frees again: STALE, no harm */
        CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
        CHECK(free_result == LOADER_RESULT_STALE_HANDLE);
    } else {
        /* The invalidation supersedes the read (cancel), starts a repair (issue), changes the
         * state (changed); the repair's commit then releases the old pages (release). */
        loader_result r = loader_invalidate(h->handle);
        CHECK(r == LOADER_RESULT_OK);
        for (int guard = 0; !freed_flag && h->npending > 0 && guard < 100; guard++) {
            pending_read p = take(h, 0);
            r = answer(h, &p);
            CHECK(r == LOADER_RESULT_OK || r == LOADER_RESULT_STALE_HANDLE);
        }
        CHECK(free_result == LOADER_RESULT_OK);
    }
    freed_flag = 1;
    CHECK(callbacks_after_free == 0);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_STALE_HANDLE);
    for (size_t i = 0; i < h->npending; i++) CHECK(answer(h, &h->pending[i]) == LOADER_RESULT_STALE_HANDLE);
    CHECK(released_exactly_once(h) && callbacks_after_free == 0);
    free(h);
}

static void loader_free_from_inside_every_callback(void) {
    for (int which = 0; which <= 5; which++) free_inside(which);
}

/* ---- 4. every answer from a fresh thread ---- */

#define T_MAX_ACQ (1u << 18)
#define T_SOURCE 100000u

static loader_handle t_handle;
static pthread_t t_main;
#define T_MAX_THREADS 4096
static pthread_mutex_t t_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t t_threads[T_MAX_THREADS]; /* created and not yet joined */
static size_t t_nthreads;
static atomic_int t_running, t_spawned, t_spawn_failed;
static atomic_ulong t_next_acq = 1;
static atomic_uchar t_accepted[T_MAX_ACQ], t_released[T_MAX_ACQ];
static atomic_int t_bad, t_refused, t_ok, t_off_main, t_on_main;

typedef struct {
    uint64_t read_id, at;
    uint32_t limit;
    loader_direction direction;
} t_job;

static void t_where(void) {
    if (pthread_equal(pthread_self(), t_main))
        atomic_fetch_add(&t_on_main, 1);
    else
        atomic_fetch_add(&t_off_main, 1);
}

static void *t_answer(void *arg) {
    t_job j = *(t_job *)arg;
    free(arg);
    read_span s = span_of(j.at, j.limit, j.direction, T_SOURCE);
    uint8_t next[8];
    size_t next_len = cursor_for(next, s.next, j.direction);
    unsigned long acq = atomic_fetch_add(&t_next_acq, 1);
    if (acq < T_MAX_ACQ) {
        atomic_store(&t_accepted[acq], 1);
        loader_result r = loader_settle(t_handle, j.read_id, (loader_acquisition)acq, (uint32_t)(s.to - s.from), next,
                                        next_len, s.reached_end, NULL);
        if (r == LOADER_RESULT_OK) {
            atomic_fetch_add(&t_ok, 1);
        } else {
            if (atomic_load(&t_released[acq])) atomic_fetch_add(&t_bad, 1);
            atomic_store(&t_accepted[acq], 0);
            atomic_fetch_add(&t_refused, 1);
        }
    }
    atomic_fetch_sub(&t_running, 1);
    return NULL;
}

static void t_issue(void *ud, const loader_read *r) {
    (void)ud;
    t_where();
    t_job *j = (t_job *)malloc(sizeof *j);
    j->read_id = r->read_id;
    j->at = r->cursor_len == 8 ? get_be64(r->cursor) : 0;
    j->limit = r->limit;
    j->direction = r->direction;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    atomic_fetch_add(&t_running, 1);
    pthread_mutex_lock(&t_lock);
    if (t_nthreads < T_MAX_THREADS && pthread_create(&t, &attr, t_answer, j) == 0) {
        t_threads[t_nthreads++] = t;
        atomic_fetch_add(&t_spawned, 1);
    } else {
        atomic_fetch_sub(&t_running, 1);
        atomic_fetch_add(&t_spawn_failed, 1);
        free(j);
    }
    pthread_mutex_unlock(&t_lock);
    pthread_attr_destroy(&attr);
}

static void t_release(void *ud, loader_acquisition acq) {
    (void)ud;
    t_where();
    if (acq >= T_MAX_ACQ || !atomic_load(&t_accepted[acq]) || atomic_exchange(&t_released[acq], 1))
        atomic_fetch_add(&t_bad, 1);
}

static void t_other(void *ud) {
    (void)ud;
    t_where();
}

static void t_cancel(void *ud, uint64_t read_id) {
    (void)ud;
    (void)read_id;
    t_where();
}

static int t_all_released_once(void) {
    unsigned long top = atomic_load(&t_next_acq);
    for (unsigned long i = 1; i < top && i < T_MAX_ACQ; i++)
        if (atomic_load(&t_accepted[i]) != atomic_load(&t_released[i])) return 0;
    return atomic_load(&t_bad) == 0;
}

/* Joins every answer thread created so far, including those created meanwhile. */
static void t_wait_threads(void) {
    for (;;) {
        pthread_mutex_lock(&t_lock);
        size_t n = t_nthreads;
        pthread_t batch[256];
        if (n > 256) n = 256;
        t_nthreads -= n;
        memcpy(batch, t_threads + t_nthreads, n * sizeof batch[0]);
        pthread_mutex_unlock(&t_lock);
        if (n == 0) break;
        for (size_t i = 0; i < n; i++) pthread_join(batch[i], NULL);
    }
}

/* `free_early`: free while answers are still in flight, instead of waiting for quiescence. */
static void t_run(int free_early) {
    const int rounds = quick ? 20 : 300;
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 16;
    cfg.prefetch_distance = 16;
    loader_callbacks cb = {sizeof cb, NULL, t_issue, t_release, t_other, t_cancel, NULL, NULL};
    t_main = pthread_self();
    atomic_store(&t_next_acq, 1);
    memset((void *)t_accepted, 0, sizeof t_accepted);
    memset((void *)t_released, 0, sizeof t_released);
    atomic_store(&t_bad, 0);
    atomic_store(&t_ok, 0);
    atomic_store(&t_refused, 0);
    atomic_store(&t_off_main, 0);
    atomic_store(&t_on_main, 0);
    atomic_store(&t_spawned, 0);
    atomic_store(&t_spawn_failed, 0);
    CHECK_CODE(loader_new(&cfg, &cb, &t_handle), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(t_handle, 0, 64), LOADER_RESULT_OK);
    for (int i = 0; i < rounds; i++) {
        CHECK_CODE(loader_invalidate(t_handle), LOADER_RESULT_OK);
        CHECK_CODE(loader_set_window(t_handle, (uint64_t)(i % 5) * 8, 64 + (uint64_t)(i % 3) * 16), LOADER_RESULT_OK);
        if (i % 4 == 3) continue; /* the next events overlap this round's answers */
        loader_snapshot q = {.struct_size = sizeof q};
        for (int k = 0; k < 100000; k++) {
            if (loader_state(t_handle, &q) != LOADER_RESULT_OK || q.outstanding_reads == 0) break;
            usleep(20);
        }
        t_wait_threads();
    }
    if (free_early) {
        /* A burst with no waiting, so that answers are still in flight at free. */
        for (int i = 0; i < 40; i++) {
            loader_invalidate(t_handle);
            loader_set_window(t_handle, (uint64_t)(i % 7) * 16, 200);
        }
    }
    loader_snapshot s = {.struct_size = sizeof s};
    if (!free_early) {
        /* Answers keep arriving until the loader is quiet; wait for that, then check it. */
        for (int i = 0; i < 200000; i++) {
            t_wait_threads();
            if (loader_state(t_handle, &s) != LOADER_RESULT_OK) break;
            if (s.outstanding_reads == 0 && atomic_load(&t_running) == 0) break;
            usleep(50);
        }
        CHECK(s.outstanding_reads == 0 && !s.revalidating && s.cover_epoch == s.epoch);
        CHECK(s.covered_end >= s.window_start + s.window_len);
    }
    CHECK_CODE(loader_free(t_handle), LOADER_RESULT_OK);
    t_wait_threads(); /* the host's userdata must outlive every callback on another thread */
    CHECK(atomic_load(&t_running) == 0 && atomic_load(&t_spawn_failed) == 0);
    CHECK(t_all_released_once());
    CHECK(atomic_load(&t_off_main) > atomic_load(&t_spawned) / 2);
    printf("     %s: %d threads, one per read; %d answers accepted, %d refused after free; "
           "%d callbacks on answer threads, %d on the main thread; released exactly once\n",
           free_early ? "freed mid-flight" : "run to quiescence", atomic_load(&t_spawned), atomic_load(&t_ok),
           atomic_load(&t_refused), atomic_load(&t_off_main), atomic_load(&t_on_main));
}

static void answers_from_a_fresh_thread_every_time(void) {
    t_run(0);
    t_run(1);
}

/* ---- 5. cursors: empty, at the limit, past it ---- */

static loader_result settle_cursor(host *h, const pending_read *p, uint32_t count, const uint8_t *cur, size_t len) {
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    loader_result r = loader_settle(h->handle, p->read_id, (loader_acquisition)acq, count, cur, len, false, NULL);
    if (r != LOADER_RESULT_OK) h->accepted[acq] = 0;
    return r;
}

static void cursors_at_and_past_the_limit(void) {
    static uint8_t max[LOADER_MAX_CURSOR_LEN + 1];
    host *h = hostile_new(4, 0, 4, 40, 0, 1);
    CHECK_CODE(loader_set_window(h->handle, 0, 12), LOADER_RESULT_OK);
    pending_read p = take(h, 0);
    CHECK(p.cursor_len == 0); /* the source's start: no bytes, NULL */
    loader_snapshot before = state_of(h);
    /* Past the limit, whatever the pointer: refused before the pointer is read. The 1-byte
     * buffer with a huge length would be an overread ASan reports if the library touched it. */
    uint8_t one = 7;
    CHECK_CODE(settle_cursor(h, &p, 4, max, LOADER_MAX_CURSOR_LEN + 1), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK_CODE(settle_cursor(h, &p, 4, &one, SIZE_MAX), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK_CODE(settle_cursor(h, &p, 4, NULL, SIZE_MAX), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK_CODE(settle_cursor(h, &p, 4, NULL, 1), LOADER_RESULT_NULL_CURSOR);
    loader_snapshot after = state_of(h);
    CHECK(states_equal(&before, &after));
    /* Exactly at the limit: accepted, and handed back byte for byte as the next read's start. */
    for (size_t i = 0; i < LOADER_MAX_CURSOR_LEN; i++) max[i] = (uint8_t)(i * 31 + 1);
    CHECK_CODE(settle_cursor(h, &p, 4, max, LOADER_MAX_CURSOR_LEN), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].cursor_len == LOADER_MAX_CURSOR_LEN);
    CHECK(memcmp(h->pending[0].cursor, max, LOADER_MAX_CURSOR_LEN) == 0);
    /* Empty with a non-NULL pointer: allowed (a zero-length read of a valid pointer), and the
     * next read starts from it: no bytes, NULL. */
    if (h->npending != 1) {
        free_host(h);
        return;
    }
    p = take(h, 0);
    CHECK_CODE(settle_cursor(h, &p, 4, &one, 0), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].cursor_len == 0);
    drain(h);
    /* The maximum-length cursor becomes the view's first start cursor once the first page is
     * dropped; with the window on that page, a repair starts from it (the anchor), byte for
     * byte. */
    CHECK_CODE(loader_set_window(h->handle, 8, 4), LOADER_RESULT_OK); /* pages ending <= 4 drop */
    drain(h);
    loader_snapshot s = state_of(h);
    CHECK(s.covered_start == 4);
    CHECK_CODE(loader_set_window(h->handle, 4, 4), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_CHAIN);
    CHECK(h->npending == 1 && h->pending[0].cursor_len == LOADER_MAX_CURSOR_LEN &&
          memcmp(h->pending[0].cursor, max, LOADER_MAX_CURSOR_LEN) == 0);
    drain(h);
    free_host(h);
}

/* ---- 6. counters at the end of their range ---- */

static void counters_near_uint64_max_are_refused_never_wrapped(void) {
    /* The epoch: two invalidations left, then a refusal that changes nothing; loading goes on. */
    host *h = hostile_new(4, 0, 0, 40, UINT64_MAX - 2, 1);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h);
    loader_snapshot before = state_of(h);
    CHECK(before.epoch == UINT64_MAX && before.cover_epoch == UINT64_MAX);
    for (int i = 0; i < 3; i++) CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_EPOCH_OVERFLOW);
    loader_snapshot after = state_of(h);
    CHECK(states_equal(&before, &after) && after.epoch == UINT64_MAX);
    CHECK_CODE(loader_set_window(h->handle, 0, 16), LOADER_RESULT_OK); /* still loads */
    drain(h);
    after = state_of(h);
    CHECK(after.covered_end >= 16 && after.epoch == UINT64_MAX);
    free_host(h);

    /* Request ids: each one issued once, in order, none wrapped; the start that would need
     * UINT64_MAX is refused. The last request issued can no longer be answered (an answer may
     * start a request), so the host keeps that acquisition; free cancels the read. */
    h = hostile_new(1, 0, 0, 100, 0, UINT64_MAX - 4);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    uint64_t ids[8];
    int n = 0;
    while (h->npending > 0 && n < 8) {
        ids[n++] = h->pending[0].request_id;
        pending_read p = take(h, 0);
        loader_result r = answer(h, &p);
        if (r == LOADER_RESULT_ID_OVERFLOW) {
            h->pending[h->npending++] = p;
            break;
        }
        CHECK_CODE(r, LOADER_RESULT_OK);
    }
    for (int i = 0; i < n; i++) CHECK(ids[i] == UINT64_MAX - 4 + (uint64_t)i);
    loader_snapshot s = state_of(h);
    CHECK(n == 4 && s.next_request_id == UINT64_MAX && s.covered_end == 3);
    before = s;
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_ID_OVERFLOW);
    CHECK_CODE(loader_fail(h->handle, h->pending[0].read_id, 1, NULL), LOADER_RESULT_ID_OVERFLOW);
    after = state_of(h);
    CHECK(states_equal(&before, &after));
    uint64_t last = h->pending[0].read_id;
    free_host(h);
    CHECK(cancels_of(last) == 1);

    /* next_request_id 0 means "from the start": the first id is 1. */
    h = hostile_new(4, 0, 0, 40, 0, 0);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].request_id == 1);
    drain(h);
    free_host(h);
}

/* ---- 7. the cancellation hint ---- */

/* As host.h's answer(), returning the class the loader gave the answer. */
static loader_result answer_class(host *h, const pending_read *p, loader_answer *a) {
    uint64_t at = p->cursor_len == 8 ? get_be64(p->cursor) : 0;
    read_span s = span_of(at, p->limit, p->direction, h->source_len);
    uint8_t next[8];
    size_t next_len = cursor_for(next, s.next, p->direction);
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    loader_result r = loader_settle(h->handle, p->read_id, (loader_acquisition)acq, (uint32_t)(s.to - s.from), next,
                                    next_len, s.reached_end, a);
    if (r != LOADER_RESULT_OK) h->accepted[acq] = 0;
    return r;
}

static int full_reads(host *h) {
    int n = 0;
    for (size_t i = 0; i < h->npending; i++) n += h->pending[i].kind == LOADER_KIND_FULL;
    return n;
}

static loader_answer hook_answer;
static loader_result hook_result;

static void answer_inside_cancel(host *h, uint64_t read_id) {
    for (size_t i = 0; i < h->npending; i++) {
        if (h->pending[i].read_id != read_id) continue;
        pending_read p = take(h, i);
        uint64_t acq = h->next_acq++;
        h->accepted[acq] = 1;
        uint64_t at = p.cursor_len == 8 ? get_be64(p.cursor) : 0;
        /* One item, in the read's direction. */
        read_span s = span_of(at, 1, p.direction, h->source_len);
        uint8_t next[8];
        size_t next_len = cursor_for(next, s.next, p.direction);
        hook_result = loader_settle(h->handle, read_id, (loader_acquisition)acq, (uint32_t)(s.to - s.from), next,
                                    next_len, false, &hook_answer);
        if (hook_result != LOADER_RESULT_OK) h->accepted[acq] = 0;
        return;
    }
}

static void the_cancellation_hint(void) {
    const int rounds = quick ? 20 : 200;
    /* Every superseded read gets one hint; answered anyway it is stale, failed it is stale. */
    host *h = hostile_new(4, 0, 0, 100000, 0, 1);
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    drain(h);
    int superseded = 0, stale_settles = 0, stale_fails = 0, full_after_fail = 0;
    for (int i = 0; i < rounds; i++) {
        CHECK_CODE(loader_set_window(h->handle, 0, 12 + (uint64_t)i * 4), LOADER_RESULT_OK);
        int f = find_pending(h, LOADER_KIND_FINITE);
        CHECK(f >= 0);
        if (f < 0) break;
        pending_read late = take(h, (size_t)f);
        size_t before = ncancel;
        CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
        superseded++;
        CHECK(ncancel == before + 1 && cancel_log[before] == late.read_id);
        drain(h); /* the repair */
        loader_answer a = LOADER_ANSWER_CURRENT;
        if (i % 2 == 0) {
            CHECK_CODE(answer_class(h, &late, &a), LOADER_RESULT_OK);
            CHECK(a == LOADER_ANSWER_STALE);
            stale_settles += a == LOADER_ANSWER_STALE;
        } else {
            CHECK_CODE(loader_fail(h->handle, late.read_id, 99, &a), LOADER_RESULT_OK);
            CHECK(a == LOADER_ANSWER_STALE);
            stale_fails += a == LOADER_ANSWER_STALE;
            /* A stale failure blocks nothing but raises the debt to full: a full re-read. */
            full_after_fail += full_reads(h);
            drain(h);
        }
        loader_snapshot s = state_of(h);
        CHECK(!s.revalidating && s.cover_epoch == s.epoch && s.failure == LOADER_FAILURE_NONE);
    }
    CHECK((int)ncancel == superseded && h->cancels == superseded);
    printf("     %d superseded reads, %zu hints; %d answered anyway and %d failed, all stale; "
           "the failures started %d full re-reads\n",
           superseded, ncancel, stale_settles, stale_fails, full_after_fail);
    free_host(h);

    /* host.h's plain host: a cancelled read, answered with items after its repair: stale. */
    h = host_new(4, 100);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    loader_set_window(h->handle, 0, 8);
    pending_read late = take(h, 0);
    loader_invalidate(h->handle);
    CHECK(h->cancels == 1);
    drain(h);
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    uint8_t next[8];
    put_be64(next, 8);
    loader_answer a = LOADER_ANSWER_CURRENT;
    CHECK_CODE(loader_settle(h->handle, late.read_id, (loader_acquisition)acq, 4, next, 8, false, &a), LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_STALE);
    free_host(h);

    /* Answered from inside the cancel callback itself: stale too. */
    h = hostile_new(4, 0, 0, 100, 0, 1);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    loader_set_window(h->handle, 0, 8);
    on_cancel_hook = answer_inside_cancel;
    hook_result = LOADER_RESULT_PANIC;
    loader_invalidate(h->handle);
    CHECK(hook_result == LOADER_RESULT_OK && hook_answer == LOADER_ANSWER_STALE);
    drain(h);
    on_cancel_hook = NULL;
    free_host(h);

    /* free cancels every read still outstanding that was not hinted yet: a read already
     * cancelled as superseded is not hinted again (each read gets one hint). */
    h = hostile_new(4, 0, 0, 100, 0, 1);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    loader_set_window(h->handle, 0, 8);
    uint64_t sup = h->pending[0].read_id;
    loader_invalidate(h->handle); /* sup is superseded; a chain read is outstanding too */
    CHECK(h->npending == 2);
    uint64_t chain = h->pending[find_pending(h, LOADER_KIND_CHAIN)].read_id;
    size_t before = ncancel;
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    freed_flag = 1;
    CHECK(ncancel - before == 1 && cancels_of(chain) == 1 && cancels_of(sup) == 1);
    printf("     at free: %zu hints for 2 outstanding reads; the superseded one has had %zu in all\n",
           ncancel - before, cancels_of(sup));
    CHECK(released_exactly_once(h));
    free(h);

    /* No cancel callback at all: nothing else changes. */
    h = (host *)calloc(1, sizeof(host));
    h->source_len = 100;
    h->next_acq = 1;
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 4;
    cfg.prefetch_distance = 0;
    loader_callbacks cb = host_callbacks(h);
    cb.cancel = NULL;
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    loader_set_window(h->handle, 0, 8);
    late = take(h, 0);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(answer(h, &late), LOADER_RESULT_OK);
    CHECK(h->cancels == 0);
    host_free(h);
}

/* ---- findings of fuzz_abi: 1 and 2 fixed in bfe75f1, 3 and 4 in ef2b3a7 ---- */

/* Finding 1: "a call that returns an error changed nothing" -- loader_set_window used to retry
 * a recorded failure (and move the window) before the rewind's invalidation was refused. A
 * window moving back over dropped pages now reads backward (no epoch needed); a jump back
 * there with the epoch exhausted is refused, and changes nothing either. */
static void a_refused_window_move_changes_nothing(void) {
    host *h = hostile_new(4, 0, 2, 100, UINT64_MAX, 1);
    loader_set_window(h->handle, 0, 8);
    drain(h);
    loader_set_window(h->handle, 20, 8); /* pages before 18 are dropped */
    drain(h);
    loader_set_window(h->handle, 20, 12);
    pending_read p = take(h, 0);
    CHECK_CODE(loader_fail(h->handle, p.read_id, 1, NULL), LOADER_RESULT_OK); /* an own failure */
    loader_snapshot before = state_of(h);
    int issues = h->issues;
    CHECK_CODE(loader_jump(h->handle, NULL, 0, 0), LOADER_RESULT_EPOCH_OVERFLOW); /* back there */
    loader_snapshot after = state_of(h);
    CHECK(states_equal(&before, &after));
    CHECK(after.inflight == after.outstanding_reads && h->issues == issues);
    free_host(h);
}

/* Finding 2: free from inside a callback used to cancel a read whose issue was still queued,
 * so the host was told to cancel a read it never heard of. */
static void settle_then_free(host *h) {
    if (h->npending == 0 || freed_flag) return;
    pending_read p = take(h, h->npending - 1);
    answer(h, &p);
    free_own(h);
}

static void a_free_inside_a_callback_cancels_only_reads_issued(void) {
    host *h = hostile_new(4, 0, 0, 100, 0, 1);
    h->on_issue = settle_then_free;
    loader_set_window(h->handle, 0, 12);
    for (size_t i = 0; i < ncancel; i++) CHECK(cancel_log[i] <= max_issued);
    CHECK(released_exactly_once(h));
    free(h);
}

/* Finding 3: "changed: called after the view or the state changed" -- an invalidation, an own
 * failure and a retry used to change the state (epoch, debt, phase, failure; revalidating
 * turns on) and run no `changed` callback. */
static void every_state_change_is_announced(void) {
    host *h = hostile_new(4, 0, 0, 100, 0, 1);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    int changes = h->changes;
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK(state_of(h).revalidating && h->changes > changes);
    drain(h);
    loader_set_window(h->handle, 0, 8);
    pending_read p = take(h, 0);
    changes = h->changes;
    CHECK_CODE(loader_fail(h->handle, p.read_id, 1, NULL), LOADER_RESULT_OK);
    CHECK(state_of(h).failure == LOADER_FAILURE_OWN && h->changes > changes);
    changes = h->changes;
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started && h->changes > changes);
    drain(h);
    free_host(h);
}

/* Finding 4: loader_floor used to run `changed` outside the delivery loop, so a call made from
 * that callback had its callbacks run at once, nested, instead of queued until it returned. */
static int in_changed, nested_issues;

static void floor_changed(void *ud) {
    host *h = (host *)ud;
    in_changed = 1;
    loader_set_window(h->handle, 0, 4); /* its `issue` must wait until this returns */
    in_changed = 0;
}

static void floor_issue(void *ud, const loader_read *r) {
    nested_issues += in_changed;
    cb_issue(ud, r);
}

static void loader_floor_queues_callbacks_like_every_call(void) {
    host *h = (host *)calloc(1, sizeof(host));
    h->source_len = 100;
    h->next_acq = 1;
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    loader_callbacks cb = host_callbacks(h);
    cb.issue = floor_issue;
    cb.changed = floor_changed;
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    nested_issues = 0;
    CHECK_CODE(loader_floor(h->handle), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && nested_issues == 0);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    free(h);
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "hostile: deadlock: the watchdog fired\n0 passed, 1 failed\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

int main(int argc, char **argv) {
    quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* every line out before a sanitizer stops the run */
    signal(SIGALRM, watchdog);
    alarm(600);
    RUN(a_host_that_never_answers_superseded_reads);
    RUN(a_release_callback_calls_everything_back_in);
    RUN(loader_free_from_inside_every_callback);
    RUN(answers_from_a_fresh_thread_every_time);
    RUN(cursors_at_and_past_the_limit);
    RUN(counters_near_uint64_max_are_refused_never_wrapped);
    RUN(the_cancellation_hint);
    RUN(a_refused_window_move_changes_nothing);
    RUN(a_free_inside_a_callback_cancels_only_reads_issued);
    RUN(every_state_change_is_announced);
    RUN(loader_floor_queues_callbacks_like_every_call);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
