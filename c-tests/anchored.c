/* Anchored, bidirectional loading through the C ABI: a repair deep in a source reads about the
 * window plus prefetch around it, not everything before it; scrolling back over pages that
 * max_pages released reads backward, for the distance scrolled; loader_jump reads the same
 * whatever the distance and keeps the host's positions; a starting point in loader_config
 * opens a loader at the end of a log; the retry after a failure reads from the anchor, not the
 * source's start; the acquisitions held stay within the documented bound after every event;
 * and loader_jump refuses bad input without changing anything. */
#include <stddef.h>
#include "host.h"

#define PAGE 50u
#define PREFETCH 50u
#define WINDOW 100u
#define VIEW_CAP 4096

/* The index of the first item behind each acquisition, so every page's position can be
 * checked against the host's own numbering. */
static uint64_t acq_from[MAX_ACQ];
/* Reads the host answered, by direction. */
static uint64_t answered_forward, answered_backward;
static uint32_t cfg_max_pages;
static int bound_violations;

static host *anchored_host(uint64_t len, uint32_t max_pages) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = PAGE;
    cfg.prefetch_distance = PREFETCH;
    cfg.max_pages = max_pages;
    cfg_max_pages = max_pages;
    h->source_len = len;
    h->next_acq = 1;
    loader_callbacks cb = host_callbacks(h);
    if (loader_new(&cfg, &cb, &h->handle) != LOADER_RESULT_OK) {
        fprintf(stderr, "loader_new failed\n");
        exit(2);
    }
    answered_forward = answered_backward = 0;
    bound_violations = 0;
    return h;
}

static void free_anchored(host *h) {
    host_free(h);
}

static loader_counts counts_of(host *h) {
    loader_counts c = {.struct_size = sizeof c};
    if (loader_stats(h->handle, &c) != LOADER_RESULT_OK) current_failed = 1;
    return c;
}

/* The header's bound on the acquisitions held (loader_config.max_pages), with no repair an
 * invalidation overtook: max(max_pages, pages overlapping the window +- prefetch) view pages,
 * the staged pages of a running repair, one finite page in flight. And over max_pages, no view
 * page lies outside the window +- prefetch but on the side a finite read in flight extends. */
static void check_bound(host *h) {
    static loader_page pages[VIEW_CAP];
    loader_snapshot s = state_of(h);
    size_t n = 0;
    CHECK_CODE(loader_view(h->handle, pages, VIEW_CAP, &n, NULL), LOADER_RESULT_OK);
    uint64_t lo = s.window_start > PREFETCH ? s.window_start - PREFETCH : 0;
    uint64_t hi = s.window_start + s.window_len + PREFETCH;
    bool before = false, after = false;
    for (size_t i = 0; i < h->npending; i++) {
        if (h->pending[i].kind != LOADER_KIND_FINITE) continue;
        before |= h->pending[i].direction == LOADER_DIRECTION_BACKWARD;
        after |= h->pending[i].direction == LOADER_DIRECTION_FORWARD;
    }
    uint64_t overlap = 0;
    int outside = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t end = pages[i].start + pages[i].count;
        overlap += pages[i].start < hi && end > lo;
        outside += (end <= lo && !before) || (pages[i].start >= hi && !after);
    }
    uint64_t view_bound = overlap > cfg_max_pages ? overlap : cfg_max_pages;
    uint64_t staged = s.revalidating ? (s.window_len + 2 * PREFETCH + PAGE - 1) / PAGE + 2 : 0;
    uint64_t held = s.accepted - s.released;
    int bad = held > view_bound + staged + 1 || (n > cfg_max_pages && outside > 0);
    if (bad && bound_violations++ == 0)
        fprintf(stderr, "  bound: %llu held, %zu view pages (%llu overlap, %d outside), staged %llu\n",
                (unsigned long long)held, n, (unsigned long long)overlap, outside, (unsigned long long)staged);
}

/* Answers `p` in its direction, as host.h's answer() does, recording what it answered. */
static void answer_recorded(host *h, const pending_read *p) {
    uint64_t at = p->cursor_len == 8 ? get_be64(p->cursor) : 0;
    read_span s = span_of(at, p->limit, p->direction, h->source_len);
    if (p->direction == LOADER_DIRECTION_BACKWARD)
        answered_backward++;
    else
        answered_forward++;
    if (h->next_acq < MAX_ACQ) acq_from[h->next_acq] = s.from;
    CHECK_CODE(answer(h, p), LOADER_RESULT_OK);
}

/* Answers every read, oldest first, checking the bound after every event. */
static void drain_checked(host *h) {
    for (int guard = 0; h->npending > 0 && guard < 100000; guard++) {
        pending_read p = take(h, 0);
        answer_recorded(h, &p);
        check_bound(h);
    }
}

static void set_window_checked(host *h, uint64_t start, uint64_t len) {
    CHECK_CODE(loader_set_window(h->handle, start, len), LOADER_RESULT_OK);
    check_bound(h);
    drain_checked(h);
}

/* Every page's position is the host's index of its first item, and pages are consecutive. */
static int positions_are_the_hosts(host *h) {
    static loader_page pages[VIEW_CAP];
    size_t n = 0;
    if (loader_view(h->handle, pages, VIEW_CAP, &n, NULL) != LOADER_RESULT_OK || n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        if (pages[i].acquisition >= MAX_ACQ || acq_from[pages[i].acquisition] != pages[i].start) return 0;
        if (i > 0 && pages[i].start != pages[i - 1].start + pages[i - 1].count) return 0;
    }
    return 1;
}

/* The view holds [from, to) of the host's items, at least. */
static int covers(host *h, uint64_t from, uint64_t to) {
    loader_snapshot s = state_of(h);
    return s.covered_start <= from && s.covered_end >= to;
}

static void jump_to(host *h, uint64_t index) {
    uint8_t cur[8];
    put_be64(cur, index);
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, index), LOADER_RESULT_OK);
    check_bound(h);
}

/* ---- tests ---- */

static void a_deep_repair_reads_the_window_plus_prefetch(void) {
    host *h = anchored_host(1000000, 8);
    jump_to(h, 100000); /* a starting point: nothing held, nothing in flight */
    set_window_checked(h, 100000, WINDOW);
    CHECK(covers(h, 100000 - PREFETCH, 100000 + WINDOW + PREFETCH));
    CHECK(positions_are_the_hosts(h));
    loader_counts before = counts_of(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    check_bound(h);
    drain_checked(h);
    loader_counts after = counts_of(h);
    uint64_t read = after.items_read - before.items_read;
    printf("     the repair at item 100000 read %llu items\n", (unsigned long long)read);
    CHECK(read >= WINDOW + PREFETCH);
    CHECK(read <= WINDOW + 2 * PREFETCH + 2 * PAGE);
    loader_snapshot s = state_of(h);
    CHECK(s.quiescent && s.window_start == 100000 && !s.start_of_source);
    CHECK(covers(h, 100000 - PREFETCH, 100000 + WINDOW + PREFETCH));
    CHECK(positions_are_the_hosts(h));
    CHECK(bound_violations == 0);
    free_anchored(h);
}

static void scrolling_back_over_released_pages_reads_backward(void) {
    host *h = anchored_host(100000, 8);
    set_window_checked(h, 0, WINDOW);
    for (uint64_t at = PAGE; at <= 5000; at += PAGE) set_window_checked(h, at, WINDOW);
    loader_snapshot s = state_of(h);
    CHECK(s.pages <= 8 && s.start_of_source == false && s.covered_start > 2000);
    loader_counts before = counts_of(h);
    uint64_t fwd = answered_forward, back = answered_backward;
    for (uint64_t at = 5000 - PAGE; at >= 2000; at -= PAGE) set_window_checked(h, at, WINDOW);
    loader_counts after = counts_of(h);
    uint64_t read = after.items_read - before.items_read;
    uint64_t backward = answered_backward - back;
    printf("     scrolling back 3000 items: %llu backward reads, %llu forward, %llu items read\n",
           (unsigned long long)backward, (unsigned long long)(answered_forward - fwd), (unsigned long long)read);
    CHECK(backward > 0 && answered_forward == fwd); /* every read going back was backward */
    CHECK(after.issued_backward - before.issued_backward == backward);
    /* The cost is the distance scrolled, give or take the pages still held at the start. */
    CHECK(read + 8 * PAGE >= 3000 && read <= 3000 + 2 * PAGE);
    s = state_of(h);
    CHECK(s.pages <= 8 && s.window_start == 2000 && covers(h, 2000 - PREFETCH, 2000 + WINDOW + PREFETCH));
    CHECK(positions_are_the_hosts(h));
    /* Back to the top: the view reaches the source's start, with its own positions. */
    for (uint64_t at = 2000 - PAGE;; at -= PAGE) {
        set_window_checked(h, at, WINDOW);
        if (at == 0) break;
    }
    s = state_of(h);
    CHECK(s.start_of_source && s.covered_start == 0 && after.renumbered == counts_of(h).renumbered);
    CHECK(positions_are_the_hosts(h));
    CHECK(bound_violations == 0);
    free_anchored(h);
}

static void a_jump_costs_the_same_at_any_distance(void) {
    host *h = anchored_host(1000000, 8);
    set_window_checked(h, 0, WINDOW);
    const uint64_t targets[] = {500000, 999000, 10};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        uint64_t to = targets[i];
        loader_counts before = counts_of(h);
        uint64_t answered = answered_forward + answered_backward;
        jump_to(h, to);
        loader_snapshot s = state_of(h);
        CHECK(s.revalidating && s.window_start == to && s.window_len == WINDOW);
        drain_checked(h);
        uint64_t read = counts_of(h).items_read - before.items_read;
        uint64_t reads = answered_forward + answered_backward - answered;
        printf("     jump to %llu: %llu reads, %llu items\n", (unsigned long long)to, (unsigned long long)reads,
               (unsigned long long)read);
        CHECK(read <= WINDOW + 2 * PREFETCH + 2 * PAGE);
        CHECK(reads <= (WINDOW + 2 * PREFETCH) / PAGE + 2);
        s = state_of(h);
        CHECK(s.quiescent && s.window_start == to);
        CHECK(covers(h, to > PREFETCH ? to - PREFETCH : 0, to + WINDOW + PREFETCH));
        CHECK(positions_are_the_hosts(h));
        CHECK(s.start_of_source == (to < PREFETCH));
    }
    CHECK(counts_of(h).jumps == 3);
    CHECK(bound_violations == 0);
    free_anchored(h);
}

static void a_starting_point_opens_a_loader_at_the_end_of_a_log(void) {
    host *h = (host *)calloc(1, sizeof(host));
    h->source_len = 10000;
    h->next_acq = 1;
    cfg_max_pages = 0;
    answered_forward = answered_backward = 0;
    bound_violations = 0;
    loader_config cfg = {.struct_size = sizeof cfg};
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_OK);
    CHECK(cfg.initial_cursor == NULL && cfg.initial_cursor_len == 0 && cfg.initial_position == 0);
    cfg.page_size = PAGE;
    cfg.prefetch_distance = PREFETCH;
    loader_callbacks cb = host_callbacks(h);

    /* Refused, with no handle written. */
    loader_handle none = 0;
    cfg.initial_cursor_len = 8;
    CHECK_CODE(loader_new(&cfg, &cb, &none), LOADER_RESULT_NULL_CURSOR);
    static uint8_t big[LOADER_MAX_CURSOR_LEN + 1];
    cfg.initial_cursor = big;
    cfg.initial_cursor_len = sizeof big;
    CHECK_CODE(loader_new(&cfg, &cb, &none), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK(none == 0);

    /* The last 100 entries: the item after the cursor is entry 9900. The bytes are copied:
     * overwritten after loader_new, they change nothing. */
    uint8_t cur[8];
    put_be64(cur, 9900);
    cfg.initial_cursor = cur;
    cfg.initial_cursor_len = sizeof cur;
    cfg.initial_position = 9900;
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    memset(cur, 0xff, sizeof cur);
    CHECK(h->issues == 0); /* loader_new runs no callback */
    loader_snapshot s = state_of(h);
    CHECK(s.window_start == 9900 && s.window_len == 0);
    CHECK(counts_of(h).jumps == 1);
    set_window_checked(h, 9900, WINDOW);
    s = state_of(h);
    loader_counts c = counts_of(h);
    printf("     opened at entry 9900 of 10000: %llu items read, %llu backward reads\n",
           (unsigned long long)c.items_read, (unsigned long long)answered_backward);
    CHECK(s.quiescent && s.end_of_source && !s.start_of_source && s.window_start == 9900);
    CHECK(s.covered_start <= 9900 - PREFETCH && s.covered_end == 10000);
    CHECK(c.items_read <= WINDOW + PREFETCH + 2 * PAGE);
    CHECK(answered_backward > 0);
    CHECK(positions_are_the_hosts(h));
    free_anchored(h);

    /* Freed before any event: its queued reads never reached the host, so no cancel either. */
    h = (host *)calloc(1, sizeof(host));
    h->next_acq = 1;
    cb = host_callbacks(h);
    put_be64(cur, 500);
    cfg.initial_position = 500;
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(h->issues == 0 && h->cancels == 0);
    free(h);
}

static void a_refused_jump_changes_nothing(void) {
    host *h = anchored_host(100000, 8);
    set_window_checked(h, 0, WINDOW);
    CHECK_CODE(loader_set_window(h->handle, 0, WINDOW + PAGE), LOADER_RESULT_OK); /* a read in flight */
    loader_snapshot s0 = state_of(h);
    loader_counts c0 = counts_of(h);
    size_t pending = h->npending;
    int issues = h->issues, changes = h->changes, cancels = h->cancels;
    CHECK(pending == 1);

    static uint8_t big[LOADER_MAX_CURSOR_LEN + 1];
    uint8_t cur[8];
    put_be64(cur, 500);
    CHECK_CODE(loader_jump(h->handle, NULL, 8, 500), LOADER_RESULT_NULL_CURSOR);
    CHECK_CODE(loader_jump(h->handle, big, sizeof big, 500), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK_CODE(loader_jump(h->handle, NULL, SIZE_MAX, 500), LOADER_RESULT_CURSOR_TOO_LONG);
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, UINT64_MAX - WINDOW), LOADER_RESULT_WINDOW_OVERFLOW);
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, LOADER_MAX_POSITION + 1), LOADER_RESULT_WINDOW_OVERFLOW);
    CHECK_CODE(loader_jump(0, cur, sizeof cur, 500), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_jump(h->handle ^ 0xffff00000000ull, cur, sizeof cur, 500), LOADER_RESULT_INVALID_HANDLE);

    loader_snapshot s1 = state_of(h);
    loader_counts c1 = counts_of(h);
    CHECK(states_equal(&s0, &s1));
    /* Every counter, from the first after struct_size: the padding bytes before it are
     * unspecified in C (the library's copy of its struct need not define them). */
    CHECK(c0.struct_size == c1.struct_size &&
          memcmp(&c0.issued_finite, &c1.issued_finite,
                 sizeof c0 - offsetof(loader_counts, issued_finite)) == 0);
    CHECK(h->npending == pending && h->issues == issues && h->changes == changes && h->cancels == cancels);

    /* The largest position: accepted. */
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, LOADER_MAX_POSITION), LOADER_RESULT_OK);
    CHECK(state_of(h).window_start == LOADER_MAX_POSITION);
    CHECK(h->cancels == cancels + 1); /* the finite read in flight was superseded */
    drain_checked(h);
    CHECK(state_of(h).quiescent);

    /* A freed handle is stale; the test ABI's panic poisons a live one. */
    loader_handle old = h->handle;
    free_anchored(h);
    CHECK_CODE(loader_jump(old, cur, sizeof cur, 500), LOADER_RESULT_STALE_HANDLE);
    h = anchored_host(1000, 8);
    CHECK_CODE(loader_test_panic(h->handle), LOADER_RESULT_PANIC);
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, 500), LOADER_RESULT_POISONED);
    CHECK(h->issues == 0);
    free_anchored(h);
}

/* A host that knows how many items come before each page answers with loader_settle_counted:
 * a view numbered 10 by a jump to item 1000 is renumbered to the host's own numbers, the window
 * moving with it, without reading back to the start. */
static void a_host_that_counts_makes_positions_true(void) {
    host *h = anchored_host(5000, 0);
    uint8_t cur[8];
    put_be64(cur, 1000);
    CHECK_CODE(loader_jump(h->handle, cur, sizeof cur, 10), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 10, 100), LOADER_RESULT_OK);
    for (int guard = 0; h->npending > 0 && guard < 1000; guard++) {
        pending_read p = take(h, 0);
        uint64_t at = p.cursor_len == 8 ? get_be64(p.cursor) : 0;
        read_span sp = span_of(at, p.limit, p.direction, h->source_len);
        uint8_t next[8];
        size_t next_len = cursor_for(next, sp.next, p.direction);
        uint64_t acq = h->next_acq++;
        if (acq < MAX_ACQ) {
            h->accepted[acq] = 1;
            acq_from[acq] = sp.from;
        }
        CHECK_CODE(loader_settle_counted(h->handle, p.read_id, (loader_acquisition)acq,
                                         (uint32_t)(sp.to - sp.from), next, next_len,
                                         sp.reached_end, sp.from, NULL),
                   LOADER_RESULT_OK);
    }
    loader_snapshot s = state_of(h);
    CHECK(s.window_start == 1000 && !s.start_of_source);
    CHECK(positions_are_the_hosts(h));
    loader_counts c = counts_of(h);
    CHECK(c.items_read <= 100 + 4 * PREFETCH && c.renumbered >= 1);
    free_anchored(h);
}

/* The retry after an own failure is a full read from the anchor, the held page that holds the
 * window's start: its first read goes forward from that page's start cursor (not from the
 * source's start), and the recovery reads about the window plus prefetch, backward too. */
static void a_retry_reads_from_the_anchor(void) {
    host *h = anchored_host(100000, 8);
    set_window_checked(h, 0, WINDOW);
    for (uint64_t at = PAGE; at <= 5000; at += PAGE) set_window_checked(h, at, WINDOW);
    CHECK(!state_of(h).start_of_source);
    /* The window grows past the view: a finite read, which the host fails. */
    CHECK_CODE(loader_set_window(h->handle, 5000, WINDOW + 2 * PAGE), LOADER_RESULT_OK);
    int f = find_pending(h, LOADER_KIND_FINITE);
    CHECK(f >= 0);
    if (f < 0) {
        free_anchored(h);
        return;
    }
    pending_read failed = take(h, (size_t)f);
    loader_answer a = LOADER_ANSWER_STALE;
    CHECK_CODE(loader_fail(h->handle, failed.read_id, 1, &a), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(a == LOADER_ANSWER_CURRENT && s.failure == LOADER_FAILURE_OWN);
    /* With nothing changed the retry would read the failed page again; the source reports a
     * change first, so the retry is a full read. */
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);

    /* The anchor: the held page whose items include the window's start. */
    static loader_page pages[VIEW_CAP];
    size_t n = 0;
    CHECK_CODE(loader_view(h->handle, pages, VIEW_CAP, &n, NULL), LOADER_RESULT_OK);
    uint64_t anchor = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (pages[i].start <= s.window_start && s.window_start < pages[i].start + pages[i].count)
            anchor = acq_from[pages[i].acquisition];
    CHECK(anchor == 5000);

    size_t before_retry = h->npending;
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started && h->npending == before_retry + 1);
    int r = find_pending(h, LOADER_KIND_FULL);
    CHECK(r >= 0);
    if (r >= 0) {
        const pending_read *full = &h->pending[r];
        CHECK(full->step == 0 && full->direction == LOADER_DIRECTION_FORWARD);
        /* The anchor page's start cursor, not the source's start (the empty cursor). */
        CHECK(full->cursor_len == 8 && get_be64(full->cursor) == anchor);
    }
    loader_counts c0 = counts_of(h);
    uint64_t back = answered_backward;
    drain_checked(h);
    loader_counts c1 = counts_of(h);
    uint64_t read = c1.items_read - c0.items_read;
    printf("     the retry at item 5000 read %llu items\n", (unsigned long long)read);
    CHECK(c1.issued_full - c0.issued_full >= 2 && answered_backward > back);
    CHECK(read >= WINDOW + 2 * PAGE + PREFETCH && read <= WINDOW + 2 * PAGE + 2 * PREFETCH + 2 * PAGE);
    s = state_of(h);
    CHECK(s.quiescent && s.coverage == LOADER_COVERAGE_FULL && s.window_start == 5000);
    CHECK(covers(h, 5000 - PREFETCH, 5000 + WINDOW + 2 * PAGE + PREFETCH));
    CHECK(positions_are_the_hosts(h));
    CHECK(bound_violations == 0);
    free_anchored(h);
}

int main(void) {
    RUN(a_deep_repair_reads_the_window_plus_prefetch);
    RUN(scrolling_back_over_released_pages_reads_backward);
    RUN(a_jump_costs_the_same_at_any_distance);
    RUN(a_starting_point_opens_a_loader_at_the_end_of_a_log);
    RUN(a_refused_jump_changes_nothing);
    RUN(a_host_that_counts_makes_positions_true);
    RUN(a_retry_reads_from_the_anchor);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
