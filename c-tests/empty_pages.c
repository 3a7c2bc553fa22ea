/* Empty pages through the C ABI: a filtered stretch answered with empty pages whose cursor
 * advances is read across (forward, backward, by a repair and by a full read), each empty
 * page's acquisition released at once; an empty page that repeats its read's cursor without
 * the end flag is LOADER_ANSWER_CURSOR_STALLED and waits for backoff instead of being read
 * again. */
#include "host.h"

/* Rows [hide_from, hide_to) are filtered out: a read scans `limit` rows after its cursor
 * (before it, for a backward read) and returns the others, so a filtered stretch answers an
 * empty page that moves on. */
static uint64_t hide_from, hide_to;

/* The rows [acq_from, acq_to) each acquisition scanned (it holds the visible ones). */
static uint64_t acq_from[MAX_ACQ], acq_to[MAX_ACQ];

static bool visible(uint64_t row) { return row < hide_from || row >= hide_to; }

/* The row at visible position `i`. */
static uint64_t visible_row(uint64_t i) { return i < hide_from ? i : i + (hide_to - hide_from); }

static uint64_t cursor_at(const pending_read *p) { return p->cursor_len == 8 ? get_be64(p->cursor) : 0; }

static loader_result answer_filtered(host *h, const pending_read *p, loader_answer *out) {
    read_span s = span_of(cursor_at(p), p->limit, p->direction, h->source_len);
    uint32_t kept = 0;
    for (uint64_t r = s.from; r < s.to; r++) kept += visible(r);
    uint8_t next[8];
    size_t next_len = cursor_for(next, s.next, p->direction);
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    acq_from[acq] = s.from;
    acq_to[acq] = s.to;
    loader_result r = loader_settle(h->handle, p->read_id, (loader_acquisition)acq, kept, next,
                                    next_len, s.reached_end, out);
    if (r != LOADER_RESULT_OK) h->accepted[acq] = 0;
    return r;
}

/* Answers every pending read, oldest first, each one current; keeps the first `cap` of them
 * in `seen` (when not NULL). Returns how many it answered. */
static int drain_filtered(host *h, pending_read *seen, int cap) {
    int n = 0;
    while (h->npending > 0 && n < 64) {
        pending_read p = take(h, 0);
        if (seen && n < cap) seen[n] = p;
        loader_answer a;
        CHECK_CODE(answer_filtered(h, &p, &a), LOADER_RESULT_OK);
        CHECK(a == LOADER_ANSWER_CURRENT);
        n++;
    }
    CHECK(h->npending == 0);
    return n;
}

static void a_filtered_stretch_is_read_across(void) {
    host *h = host_new(50, 300);
    hide_from = 100;
    hide_to = 200;
    CHECK_CODE(loader_set_window(h->handle, 0, 150), LOADER_RESULT_OK);
    pending_read seen[16];
    int n = drain_filtered(h, seen, 16);
    CHECK(n == 5);
    for (int i = 0; i < n && i < 5; i++) CHECK(cursor_at(&seen[i]) == 50u * (uint64_t)i);
    loader_snapshot s = state_of(h);
    CHECK(s.pages == 3 && s.covered_start == 0 && s.covered_end == 150);
    CHECK(s.outstanding_reads == 0 && !s.revalidating);
    /* The two empty pages (acquisitions 3 and 4) came back during the calls. */
    CHECK(h->released[3] && h->released[4] && !h->released[1] && !h->released[5]);
    /* A repair crosses the stretch the same way. */
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    n = 0;
    while (h->npending > 0 && n < 16) {
        pending_read p = take(h, 0);
        CHECK(p.kind == LOADER_KIND_CHAIN);
        CHECK(cursor_at(&p) == 50u * (uint64_t)n);
        n++;
        CHECK_CODE(answer_filtered(h, &p, NULL), LOADER_RESULT_OK);
    }
    CHECK(n == 5);
    s = state_of(h);
    CHECK(s.pages == 3 && s.covered_end == 150 && !s.revalidating);
    host_free(h);
}

/* The view holds the visible rows at their own positions, each page exactly the visible rows
 * it scanned, and every empty page came back while every page with rows is still held. */
static void check_view(host *h) {
    static loader_page pages[64];
    size_t n = 0;
    CHECK_CODE(loader_view(h->handle, pages, 64, &n, NULL), LOADER_RESULT_OK);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = pages[i].acquisition, at = pages[i].start;
        uint32_t count = 0;
        for (uint64_t r = acq_from[a]; r < acq_to[a]; r++) {
            if (!visible(r)) continue;
            CHECK(r == visible_row(at));
            at++;
            count++;
        }
        CHECK(count == pages[i].count && count > 0);
        if (i + 1 < n) CHECK(pages[i + 1].start == pages[i].start + pages[i].count);
    }
    for (uint64_t a = 1; a < h->next_acq; a++) {
        if (!h->accepted[a]) continue;
        uint32_t kept = 0;
        for (uint64_t r = acq_from[a]; r < acq_to[a]; r++) kept += visible(r);
        if (kept == 0) CHECK(h->released[a]);
    }
}

static void backward_reads_cross_a_filtered_stretch(void) {
    /* 1,000 rows with 300..600 filtered: row 700 is at visible position 400. */
    host *h = host_new(50, 1000);
    hide_from = 300;
    hide_to = 600;
    uint8_t at[8];
    put_be64(at, 700);
    CHECK_CODE(loader_jump(h->handle, at, 8, 400), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 400, 100), LOADER_RESULT_OK);
    drain_filtered(h, NULL, 0);
    loader_snapshot s = state_of(h);
    CHECK(s.covered_start == 400 && s.covered_end == 500);
    /* Back over the stretch: 650..700 and 600..650, six empty pages that move the cursor,
     * then 250..300. */
    CHECK_CODE(loader_set_window(h->handle, 250, 250), LOADER_RESULT_OK);
    pending_read seen[64];
    int n = drain_filtered(h, seen, 64);
    uint64_t back[16];
    int nback = 0;
    for (int i = 0; i < n && nback < 16; i++)
        if (seen[i].direction == LOADER_DIRECTION_BACKWARD) back[nback++] = cursor_at(&seen[i]);
    CHECK(nback == 9);
    for (int i = 0; i < nback && i < 9; i++) CHECK(back[i] == 700u - 50u * (uint64_t)i);
    s = state_of(h);
    CHECK(s.covered_start == 250 && s.covered_end == 500);
    CHECK(s.outstanding_reads == 0 && !s.revalidating);
    check_view(h);
    host_free(h);
}

static void a_full_read_crosses_a_filtered_stretch(void) {
    host *h = host_new(50, 300);
    hide_from = 100;
    hide_to = 200;
    CHECK_CODE(loader_set_window(h->handle, 0, 150), LOADER_RESULT_OK);
    /* The first read fails, and the source reports a change before the retry: an own
     * failure, retried as a full read (with nothing changed it would read the page again). */
    fail_oldest(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started && h->npending == 1 && h->pending[0].kind == LOADER_KIND_FULL);
    pending_read seen[16];
    int n = drain_filtered(h, seen, 16);
    CHECK(n == 5);
    for (int i = 0; i < n && i < 5; i++) {
        CHECK(seen[i].kind == LOADER_KIND_FULL);
        CHECK(cursor_at(&seen[i]) == 50u * (uint64_t)i);
    }
    loader_snapshot s = state_of(h);
    CHECK(s.pages == 3 && s.covered_start == 0 && s.covered_end == 150);
    CHECK(s.failure == LOADER_FAILURE_NONE && !s.revalidating);
    check_view(h);
    host_free(h);
}

static void an_empty_page_that_repeats_its_cursor_is_a_stall(void) {
    host *h = host_new(50, 300);
    CHECK_CODE(loader_set_window(h->handle, 0, 150), LOADER_RESULT_OK);
    pending_read p = take(h, 0);
    CHECK(answer(h, &p) == LOADER_RESULT_OK);
    p = take(h, 0);
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    loader_answer a;
    CHECK_CODE(loader_settle(h->handle, p.read_id, (loader_acquisition)acq, 0, p.cursor, p.cursor_len,
                             false, &a),
               LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_CURSOR_STALLED);
    CHECK(h->released[acq]);
    CHECK(h->npending == 0);
    loader_snapshot s = state_of(h);
    CHECK(s.failure == LOADER_FAILURE_OWN);
    bool armed = false;
    uint64_t deadline = 0;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(armed);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.cursor_stalls == 1);
    /* The backoff retry reads again, and a truthful answer recovers. */
    CHECK_CODE(loader_tick(h->handle, deadline), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FULL);
    drain(h);
    s = state_of(h);
    CHECK(s.failure == LOADER_FAILURE_NONE && !s.revalidating && s.covered_end == 150);
    host_free(h);
}

int main(void) {
    RUN(a_filtered_stretch_is_read_across);
    RUN(an_empty_page_that_repeats_its_cursor_is_a_stall);
    RUN(backward_reads_cross_a_filtered_stretch);
    RUN(a_full_read_crosses_a_filtered_stretch);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}
