/* Pinned views (loader_view_acquire and friends) and the single-threaded half of the header's
 * threading contract: the order of one call's callbacks, nested calls, cancellation hints,
 * the deadline loop (with and without automatic retries left), what loader_settle says about
 * empty answers and end_of_source, and the quiescent flag. The threaded half is in stress.c
 * and threads.c. */
#include "host.h"

/* The view's acquisitions, copied out with loader_view. */
static size_t view_tokens(host *h, loader_acquisition *out, size_t cap) {
    loader_page pages[64];
    size_t n = 0;
    if (loader_view(h->handle, pages, 64, &n, NULL) != LOADER_RESULT_OK || n > cap) {
        current_failed = 1;
        return 0;
    }
    for (size_t i = 0; i < n; i++) out[i] = pages[i].acquisition;
    return n;
}

static int none_released(host *h, const loader_acquisition *acqs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (h->released[acqs[i]]) return 0;
    return 1;
}

static int all_released(host *h, const loader_acquisition *acqs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!h->released[acqs[i]]) return 0;
    return 1;
}

/* A loaded view of 3 pages (items 0..12) over a source of `len`, page size 4. */
static host *loaded(uint64_t len) {
    host *h = host_new(4, len);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    drain(h);
    return h;
}

/* ---- pinned views ---- */

static void a_pinned_view_is_the_view_the_state_and_the_requests_of_one_moment(void) {
    host *h = loaded(30);
    loader_view_snapshot *v = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &v), LOADER_RESULT_OK);
    CHECK(v != NULL);
    const loader_page *pages = NULL;
    size_t n = 0;
    bool reval = true;
    CHECK_CODE(loader_view_pages(v, &pages, &n, &reval), LOADER_RESULT_OK);
    loader_page want[8];
    size_t wn = 0;
    CHECK_CODE(loader_view(h->handle, want, 8, &wn, NULL), LOADER_RESULT_OK);
    CHECK(n == 3 && wn == 3 && !reval && pages != NULL);
    for (size_t i = 0; i < n && i < wn; i++)
        CHECK(pages[i].acquisition == want[i].acquisition && pages[i].start == want[i].start &&
              pages[i].count == want[i].count && pages[i].epoch == want[i].epoch);
    loader_snapshot vs = {.struct_size = sizeof vs}, s = state_of(h);
    CHECK_CODE(loader_view_state(v, &vs), LOADER_RESULT_OK);
    CHECK(states_equal(&vs, &s));
    CHECK(vs.quiescent && vs.pages == 3);
    const loader_request_info *reqs = NULL;
    size_t nr = 0;
    CHECK_CODE(loader_view_requests(v, &reqs, &nr), LOADER_RESULT_OK);
    loader_request_info wr[8];
    size_t wnr = 0;
    CHECK_CODE(loader_requests(h->handle, wr, 8, &wnr), LOADER_RESULT_OK);
    CHECK(nr == wnr && nr == 3 && reqs != NULL);
    for (size_t i = 0; i < nr && i < wnr; i++)
        CHECK(reqs[i].id == wr[i].id && reqs[i].state == wr[i].state && reqs[i].kind == wr[i].kind);
    /* The snapshot does not follow the loader: a later call leaves it as it was. */
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    loader_snapshot after = {.struct_size = sizeof after};
    CHECK_CODE(loader_view_state(v, &after), LOADER_RESULT_OK);
    CHECK(states_equal(&after, &vs) && state_of(h).revalidating);
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);
    host_free(h);
}

static void an_empty_view_has_no_pages_and_null_is_refused(void) {
    host *h = host_new(4, 30);
    loader_view_snapshot *v = (loader_view_snapshot *)&h; /* must be left alone on error */
    loader_view_snapshot *const before = v;
    CHECK_CODE(loader_view_acquire(h->handle, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_acquire(0, &v), LOADER_RESULT_INVALID_HANDLE);
    CHECK(v == before);
    CHECK_CODE(loader_view_acquire(h->handle, &v), LOADER_RESULT_OK);
    const loader_page *pages = (const loader_page *)1;
    const loader_request_info *reqs = (const loader_request_info *)1;
    size_t n = 99;
    CHECK_CODE(loader_view_pages(v, &pages, &n, NULL), LOADER_RESULT_OK);
    CHECK(pages == NULL && n == 0);
    CHECK_CODE(loader_view_requests(v, &reqs, &n), LOADER_RESULT_OK);
    CHECK(reqs == NULL && n == 0);
    CHECK_CODE(loader_view_pages(NULL, &pages, &n, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_pages(v, NULL, &n, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_pages(v, &pages, NULL, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_requests(NULL, &reqs, &n), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_requests(v, NULL, &n), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_requests(v, &reqs, NULL), LOADER_RESULT_NULL_POINTER);
    loader_snapshot s = {.struct_size = sizeof s};
    CHECK_CODE(loader_view_state(NULL, &s), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_state(v, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);
    CHECK_CODE(loader_view_release(NULL), LOADER_RESULT_OK);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    free(h);
}

/* A repair's commit lets go of the old pages; a view pinned before defers their release
 * until it is released, and the loader's own count moves at once. */
static void a_pinned_acquisition_is_released_with_its_last_view(void) {
    host *h = loaded(30);
    loader_acquisition old[8];
    size_t n = view_tokens(h, old, 8);
    CHECK(n == 3);
    loader_view_snapshot *v1 = NULL, *v2 = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &v1), LOADER_RESULT_OK);
    CHECK_CODE(loader_view_acquire(h->handle, &v2), LOADER_RESULT_OK);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h); /* the chain commits; the old pages' requests retire */
    loader_snapshot s = state_of(h);
    CHECK(!s.revalidating && s.coverage == LOADER_COVERAGE_CHAIN && s.released >= 3);
    CHECK(none_released(h, old, n));
    CHECK(h->bad_releases == 0);
    CHECK_CODE(loader_view_release(v1), LOADER_RESULT_OK);
    CHECK(none_released(h, old, n)); /* v2 still lists them */
    CHECK_CODE(loader_view_release(v2), LOADER_RESULT_OK);
    CHECK(all_released(h, old, n));
    /* The new pages were never pinned: they go at free, once. */
    host_free(h);
}

/* An acquisition released before the view was pinned is not listed; a view pinned after a
 * release defers nothing. */
static void a_view_defers_only_what_it_lists(void) {
    host *h = loaded(30);
    loader_acquisition old[8];
    size_t n = view_tokens(h, old, 8);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    loader_view_snapshot *v = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &v), LOADER_RESULT_OK); /* the old view, revalidating */
    const loader_page *pages;
    size_t pn;
    bool reval = false;
    CHECK_CODE(loader_view_pages(v, &pages, &pn, &reval), LOADER_RESULT_OK);
    CHECK(reval && pn == n);
    drain(h);
    loader_acquisition fresh[8];
    size_t fn = view_tokens(h, fresh, 8);
    CHECK(none_released(h, old, n) && none_released(h, fresh, fn));
    loader_view_snapshot *w = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &w), LOADER_RESULT_OK); /* lists only `fresh` */
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);
    CHECK(all_released(h, old, n) && none_released(h, fresh, fn));
    CHECK_CODE(loader_view_release(w), LOADER_RESULT_OK);
    CHECK(none_released(h, fresh, fn)); /* still in the view: nothing was owed */
    host_free(h);
}

/* loader_free releases what no view pins before it returns; a pinned acquisition goes with
 * its last view, after the free, through the same callbacks and userdata. */
static void free_with_views_pinned_releases_them_with_the_views(void) {
    host *h = loaded(30);
    loader_acquisition pinned[8];
    size_t n = view_tokens(h, pinned, 8);
    loader_view_snapshot *v = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &v), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 0, 20), LOADER_RESULT_OK);
    drain(h); /* more pages, not pinned */
    loader_acquisition all[8];
    size_t an = view_tokens(h, all, 8);
    CHECK(an > n);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(none_released(h, pinned, n));
    CHECK(all_released(h, all + n, an - n));
    /* The view stays readable after the free. */
    const loader_page *pages;
    size_t pn = 0;
    CHECK_CODE(loader_view_pages(v, &pages, &pn, NULL), LOADER_RESULT_OK);
    CHECK(pn == n && pages[0].acquisition == pinned[0]);
    loader_view_snapshot *late = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &late), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);
    CHECK(all_released(h, pinned, n));
    CHECK(released_exactly_once(h));
    free(h);
}

/* A poisoned loader refuses new views; a view pinned before can still be released, and
 * loader_free still releases everything exactly once. */
static void views_and_a_poisoned_loader(void) {
    host *h = loaded(30);
    loader_view_snapshot *v = NULL, *w = NULL;
    CHECK_CODE(loader_view_acquire(h->handle, &v), LOADER_RESULT_OK);
    CHECK_CODE(loader_test_panic(h->handle), LOADER_RESULT_PANIC);
    CHECK_CODE(loader_view_acquire(h->handle, &w), LOADER_RESULT_POISONED);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);
    CHECK(released_exactly_once(h));
    free(h);
}

/* A view released from inside a callback: its releases queue behind the running callback and
 * run before the outermost call returns. */
static loader_view_snapshot *held_view;
static int releases_seen_in_hook;
static void release_held_view(host *h) {
    if (!held_view) return;
    int before = 0;
    for (size_t i = 0; i < MAX_ACQ; i++) before += h->released[i];
    CHECK_CODE(loader_view_release(held_view), LOADER_RESULT_OK);
    held_view = NULL;
    int after = 0;
    for (size_t i = 0; i < MAX_ACQ; i++) after += h->released[i];
    releases_seen_in_hook = after - before;
}

static void a_view_released_inside_a_callback_delivers_after_it(void) {
    host *h = loaded(30);
    loader_acquisition old[8];
    size_t n = view_tokens(h, old, 8);
    CHECK_CODE(loader_view_acquire(h->handle, &held_view), LOADER_RESULT_OK);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h);
    CHECK(none_released(h, old, n));
    releases_seen_in_hook = -1;
    h->on_changed = release_held_view;
    CHECK_CODE(loader_set_window(h->handle, 0, 16), LOADER_RESULT_OK); /* reads one more: changes */
    h->on_changed = NULL;
    CHECK(releases_seen_in_hook == 0); /* queued, not run inside the callback */
    CHECK(all_released(h, old, n));     /* but run before the call returned */
    drain(h);
    host_free(h);
}

/* ---- the threading contract, on one thread ---- */

static char order[256];
static size_t norder;
static void log_issue(void *ud, const loader_read *r) {
    cb_issue(ud, r);
    if (norder < sizeof order) order[norder++] = 'i';
}
static void log_release(void *ud, loader_acquisition a) {
    cb_release(ud, a);
    if (norder < sizeof order) order[norder++] = 'r';
}
static void log_cancel(void *ud, uint64_t id) {
    cb_cancel(ud, id);
    if (norder < sizeof order) order[norder++] = 'x';
}
static loader_snapshot seen_in_changed = {.struct_size = sizeof seen_in_changed};
static void log_changed(void *ud) {
    host *h = (host *)ud;
    cb_changed(ud);
    if (norder < sizeof order) order[norder++] = 'c';
    /* The state change is complete: the state is readable and current. */
    CHECK_CODE(loader_state(h->handle, &seen_in_changed), LOADER_RESULT_OK);
}

static host *logging_host(uint32_t page_size, uint64_t len) {
    host *h = host_new(page_size, len);
    loader_free(h->handle);
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = page_size;
    cfg.prefetch_distance = 0;
    loader_callbacks cb = host_callbacks(h);
    cb.issue = log_issue;
    cb.release = log_release;
    cb.cancel = log_cancel;
    cb.changed = log_changed;
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    norder = 0;
    return h;
}

/* `changed` comes last among one call's callbacks, at most once, and sees the new state. */
static void changed_comes_last_once_and_after_the_state_change(void) {
    host *h = logging_host(4, 30);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    CHECK(norder == 2 && order[0] == 'i' && order[1] == 'c');
    drain(h);
    CHECK(seen_in_changed.pages == 3 && seen_in_changed.quiescent);
    /* A commit that releases old pages and issues nothing: releases, then changed. */
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    while (h->npending) {
        norder = 0;
        pending_read p = take(h, 0);
        CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
        size_t changed = 0;
        for (size_t i = 0; i < norder; i++) changed += order[i] == 'c';
        CHECK(changed <= 1);
        if (changed) CHECK(order[norder - 1] == 'c');
    }
    loader_snapshot s = state_of(h);
    CHECK(states_equal(&s, &seen_in_changed));
    CHECK(h->cancels == 0);
    host_free(h);
}

/* A call made from a callback runs its state change at once, but its callbacks wait until
 * the running callback returns. */
static int depth, max_depth, nested_issue_seen_inside;
static void settle_inside(host *h) {
    if (h->npending == 0) return;
    pending_read p = take(h, h->npending - 1);
    int issues = h->issues;
    depth++;
    if (depth > max_depth) max_depth = depth;
    CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
    if (h->issues != issues) nested_issue_seen_inside = 1;
    depth--;
}

static void nested_calls_queue_their_callbacks(void) {
    host *h = host_new(1, 50);
    h->on_issue = settle_inside;
    depth = max_depth = nested_issue_seen_inside = 0;
    CHECK_CODE(loader_set_window(h->handle, 0, 20), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(s.covered_end == 20 && s.outstanding_reads == 0);
    CHECK(max_depth == 1 && nested_issue_seen_inside == 0);
    host_free(h);
}

/* A read whose request is superseded gets one cancel hint; it stays outstanding until the
 * host answers it, fails it (letting it go), abandons it, or it times out; loader_free sends
 * no second hint for it. */
static void a_cancelled_read_stays_outstanding_until_answered(void) {
    for (int round = 0; round < 4; round++) {
        host *h = host_new(4, 40);
        CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
        drain(h);
        CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK); /* a finite read */
        CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE);
        pending_read finite = h->pending[0];
        CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK); /* supersedes it */
        CHECK(h->cancels == 1);
        int chain = find_pending(h, LOADER_KIND_CHAIN);
        CHECK(chain >= 0);
        if (chain >= 0) {
            pending_read c = take(h, (size_t)chain);
            CHECK_CODE(answer(h, &c), LOADER_RESULT_OK);
        }
        for (int i; (i = find_pending(h, LOADER_KIND_CHAIN)) >= 0;) {
            pending_read c = take(h, (size_t)i);
            CHECK_CODE(answer(h, &c), LOADER_RESULT_OK);
        }
        /* The host "aborted" the finite read and did not answer: the loader waits. */
        loader_snapshot s = state_of(h);
        CHECK(s.outstanding_reads >= 1 && !s.quiescent);
        if (round == 0) {
            loader_answer a;
            CHECK_CODE(loader_fail(h->handle, finite.read_id, 125, &a), LOADER_RESULT_OK);
            CHECK(a == LOADER_ANSWER_STALE);
            for (size_t i = 0; i < h->npending; i++)
                if (h->pending[i].read_id == finite.read_id) (void)take(h, i);
            drain(h);
            s = state_of(h);
            CHECK(s.quiescent && s.failure == LOADER_FAILURE_NONE && s.covered_end >= 8);
            CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
            CHECK(h->cancels == 1);
        } else if (round == 1) {
            CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
            CHECK(h->cancels == 1); /* hinted once, not again at free */
        } else if (round == 2) {
            /* Abandoned: no longer outstanding; its late answer is stale and released. */
            loader_answer a = LOADER_ANSWER_CURRENT;
            CHECK_CODE(loader_abandon(h->handle, finite.read_id, &a), LOADER_RESULT_OK);
            CHECK(a == LOADER_ANSWER_STALE);
            s = state_of(h);
            CHECK(s.quiescent && s.failure == LOADER_FAILURE_NONE && s.debt == LOADER_DEBT_NONE);
            for (size_t i = 0; i < h->npending; i++)
                if (h->pending[i].read_id == finite.read_id) {
                    pending_read late = take(h, i);
                    uint64_t acq = h->next_acq;
                    CHECK_CODE(answer(h, &late), LOADER_RESULT_OK);
                    CHECK(acq < MAX_ACQ && h->released[acq]); /* stale, released at once */
                    loader_counts c = {.struct_size = sizeof c};
                    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
                    CHECK(c.late_answers == 1 && c.answered_stale >= 1);
                }
            CHECK_CODE(loader_abandon(h->handle, finite.read_id, NULL),
                       LOADER_RESULT_ALREADY_ANSWERED);
            CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
            CHECK(h->cancels == 1);
        } else {
            /* Never answered: read_timeout_ms of tick time lets it go. */
            bool armed = false;
            uint64_t deadline = 0;
            CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
            CHECK(armed && deadline == 10000);
            CHECK_CODE(loader_tick(h->handle, deadline), LOADER_RESULT_OK);
            s = state_of(h);
            CHECK(s.quiescent && s.outstanding_reads == 0);
            loader_counts c = {.struct_size = sizeof c};
            CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
            CHECK(c.timed_out == 1 && c.abandoned == 1);
            CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
            CHECK(h->cancels == 1);
        }
        CHECK(released_exactly_once(h));
        free(h);
    }
}

/* The documented loop (loader_next_deadline) with a simulated host: `failures_left` reads
 * fail first; the host retries by hand at most `budget` times. `spent_branch` 0 runs the loop
 * as it was documented before it had the spent-retries branch. wait_for_work: an answer
 * arrives, or the clock reaches the deadline; with neither, the host sleeps until `changed`
 * runs, which nothing will make happen: `slept_forever` records whether the loader was still
 * not quiescent then (the loop would hang). */
typedef struct {
    int failures_left, budget, retries, gave_up, slept_forever, sleeps;
} loop_run;

static void documented_loop(host *h, int spent_branch, loop_run *run) {
    uint64_t now = 1000;
    CHECK_CODE(loader_tick(h->handle, now), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    for (int guard = 0; guard < 1000; guard++) {
        bool armed;
        uint64_t deadline;
        if (loader_next_deadline(h->handle, &armed, &deadline) != LOADER_RESULT_OK) break;
        if (armed && deadline <= now) {
            CHECK_CODE(loader_tick(h->handle, now), LOADER_RESULT_OK);
            continue;
        }
        if (spent_branch && !armed) {
            loader_snapshot s = {.struct_size = sizeof s};
            if (loader_state(h->handle, &s) != LOADER_RESULT_OK) break;
            if (s.failure == LOADER_FAILURE_OWN) {
                if (run->retries >= run->budget) { /* the host's own rule */
                    run->gave_up = 1;
                    break;
                }
                bool started = false;
                CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
                run->retries++;
                if (started) continue;
            }
        }
        if (h->npending) {
            pending_read p = take(h, 0);
            if (run->failures_left > 0) {
                run->failures_left--;
                CHECK_CODE(loader_fail(h->handle, p.read_id, 1, NULL), LOADER_RESULT_OK);
            } else {
                CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
            }
        } else if (armed) {
            CHECK(deadline > now);
            now = deadline;
            run->sleeps++;
        } else {
            run->slept_forever = !state_of(h).quiescent;
            break;
        }
    }
}

/* The deadline loop of loader_next_deadline's documentation, with a source that fails the
 * first reads: it ends quiescent with the window loaded. */
static void the_documented_deadline_loop_reaches_quiescence(void) {
    host *h = host_new(4, 40);
    loop_run run = {.failures_left = 3};
    documented_loop(h, 0, &run);
    loader_snapshot s = state_of(h);
    CHECK(!run.slept_forever && s.quiescent && s.covered_end >= 8 && run.failures_left == 0 && run.sleeps == 3);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.retries_auto == 3);
    host_free(h);
}

/* A loader with no automatic retries (max_auto_retries 0), over the host of host.h. */
static host *host_without_auto_retries(void) {
    host *h = host_new(4, 40);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 4;
    cfg.prefetch_distance = 0;
    cfg.max_auto_retries = 0;
    loader_callbacks cb = host_callbacks(h);
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    return h;
}

/* With the automatic retries spent (here: none allowed), an own failure arms nothing and
 * quiescent stays false. The loop without the spent-retries branch would sleep forever; with
 * it, the host retries by hand and the loop ends quiescent, or gives up by its own rule. */
static void the_documented_loop_ends_when_the_automatic_retries_are_spent(void) {
    /* Without the branch: stuck, the failure recorded and nothing armed. */
    host *h = host_without_auto_retries();
    loop_run old = {.failures_left = 3};
    documented_loop(h, 0, &old);
    loader_snapshot s = state_of(h);
    bool armed = true;
    uint64_t deadline = 1;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(old.slept_forever && !armed && deadline == 0);
    CHECK(s.failure == LOADER_FAILURE_OWN && !s.quiescent && s.outstanding_reads == 0);
    host_free(h);

    /* With it: three failures, three retries by hand, then loaded and quiescent. */
    h = host_without_auto_retries();
    loop_run run = {.failures_left = 3, .budget = 10};
    documented_loop(h, 1, &run);
    s = state_of(h);
    CHECK(!run.slept_forever && !run.gave_up && run.retries == 3 && run.sleeps == 0);
    CHECK(s.quiescent && s.covered_end >= 8 && run.failures_left == 0);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.retries_auto == 0 && c.retries_explicit == 3 && c.failed_own == 3);
    host_free(h);

    /* A source that keeps failing: the host gives up after its budget, and the loop ends. */
    h = host_without_auto_retries();
    loop_run hopeless = {.failures_left = 1000, .budget = 2};
    documented_loop(h, 1, &hopeless);
    s = state_of(h);
    CHECK(hopeless.gave_up && !hopeless.slept_forever && hopeless.retries == 2);
    CHECK(s.failure == LOADER_FAILURE_OWN && !s.quiescent);
    host_free(h);
}

static void a_tick_before_the_deadline_fires_nothing(void) {
    host *h = host_new(4, 40);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    pending_read p = take(h, 0);
    CHECK_CODE(loader_tick(h->handle, 500), LOADER_RESULT_OK);
    CHECK_CODE(loader_fail(h->handle, p.read_id, 1, NULL), LOADER_RESULT_OK);
    bool armed = false;
    uint64_t deadline = 0;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(armed && deadline > 500);
    CHECK_CODE(loader_tick(h->handle, deadline - 1), LOADER_RESULT_OK);
    CHECK(h->npending == 0);
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(armed);
    CHECK_CODE(loader_tick(h->handle, deadline + 1000), LOADER_RESULT_OK); /* late: fires */
    /* It reads the failed page again. */
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE);
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(!armed && deadline == 0);
    drain(h);
    CHECK(state_of(h).quiescent);
    host_free(h);
}

/* A late answer to a read superseded by work that has committed is released before
 * loader_settle returns. */
static void a_stale_answer_is_released_before_settle_returns(void) {
    host *h = host_new(4, 40);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    int f = find_pending(h, LOADER_KIND_FINITE);
    CHECK(f >= 0);
    if (f < 0) return;
    pending_read finite = take(h, (size_t)f);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    drain(h); /* the repair commits; the finite read is still outstanding */
    CHECK(!state_of(h).revalidating && state_of(h).outstanding_reads == 1);
    uint64_t acq = h->next_acq;
    loader_answer a = LOADER_ANSWER_CURRENT;
    uint8_t next[8];
    put_be64(next, 8);
    h->next_acq++;
    h->accepted[acq] = 1;
    CHECK_CODE(loader_settle(h->handle, finite.read_id, (loader_acquisition)acq, 4, next, 8, false, &a),
               LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_STALE && h->released[acq]);
    host_free(h);
}

/* loader_settle's documentation: a short page without end_of_source reads on; the answer
 * at the end is an empty page whose cursor is the read's own, with end_of_source set. */
static void the_end_of_the_source_is_an_empty_answer_with_end_of_source(void) {
    host *h = host_new(4, 8);
    CHECK_CODE(loader_set_window(h->handle, 0, 20), LOADER_RESULT_OK);
    for (int guard = 0; h->npending && guard < 10; guard++) {
        pending_read p = take(h, 0);
        /* This test is about reading forward to the end; a backward read gets the plain host's
         * answer, which honours its direction. */
        if (p.direction == LOADER_DIRECTION_BACKWARD) {
            answer(h, &p);
            continue;
        }
        uint64_t at = p.cursor_len == 8 ? get_be64(p.cursor) : 0;
        uint64_t acq = h->next_acq++;
        h->accepted[acq] = 1;
        loader_answer a = LOADER_ANSWER_STALE;
        if (at < 8) {
            /* Full pages, never flagged: the source cannot tell it ended. */
            uint8_t next[8];
            put_be64(next, at + 4);
            CHECK_CODE(loader_settle(h->handle, p.read_id, (loader_acquisition)acq, 4, next, 8, false, &a),
                       LOADER_RESULT_OK);
        } else {
            /* Nothing left: zero items, the same cursor, end_of_source. */
            CHECK_CODE(loader_settle(h->handle, p.read_id, (loader_acquisition)acq, 0, p.cursor,
                                     p.cursor_len, true, &a),
                       LOADER_RESULT_OK);
            CHECK(h->released[acq]); /* an empty page is released at once */
        }
        CHECK(a == LOADER_ANSWER_CURRENT);
    }
    loader_snapshot s = state_of(h);
    CHECK(s.end_of_source && s.quiescent && s.covered_end == 8 && s.pages == 2 && h->npending == 0);
    /* The same empty answer without end_of_source would be a stall. */
    host_free(h);
}

/* `quiescent` is exactly the conjunction its documentation gives. */
static void quiescent_is_what_its_documentation_says(void) {
    host *h = host_new(4, 40);
    for (int step = 0; step < 12; step++) {
        loader_snapshot s = state_of(h);
        bool want = s.outstanding_reads == 0 && !s.revalidating && s.failure == LOADER_FAILURE_NONE &&
                    s.phase == LOADER_PHASE_IDLE && s.debt == LOADER_DEBT_NONE && s.inflight == 0;
        CHECK(s.quiescent == want);
        switch (step % 4) {
        case 0: loader_set_window(h->handle, (uint64_t)step, 8); break;
        case 1: loader_invalidate(h->handle); break;
        case 2:
            if (h->npending) {
                pending_read p = take(h, 0);
                loader_fail(h->handle, p.read_id, 1, NULL);
            }
            break;
        default: drain(h); break;
        }
    }
    drain(h);
    host_free(h);
}

int main(void) {
    RUN(a_pinned_view_is_the_view_the_state_and_the_requests_of_one_moment);
    RUN(an_empty_view_has_no_pages_and_null_is_refused);
    RUN(a_pinned_acquisition_is_released_with_its_last_view);
    RUN(a_view_defers_only_what_it_lists);
    RUN(free_with_views_pinned_releases_them_with_the_views);
    RUN(views_and_a_poisoned_loader);
    RUN(a_view_released_inside_a_callback_delivers_after_it);
    RUN(changed_comes_last_once_and_after_the_state_change);
    RUN(nested_calls_queue_their_callbacks);
    RUN(a_cancelled_read_stays_outstanding_until_answered);
    RUN(the_documented_deadline_loop_reaches_quiescence);
    RUN(the_documented_loop_ends_when_the_automatic_retries_are_spent);
    RUN(a_tick_before_the_deadline_fires_nothing);
    RUN(a_stale_answer_is_released_before_settle_returns);
    RUN(the_end_of_the_source_is_an_empty_answer_with_end_of_source);
    RUN(quiescent_is_what_its_documentation_says);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
