/* Ranged invalidation through the C ABI, over a keyed source (sorted u64 keys; a cursor is
 * the 8-byte big-endian key of the last item passed, empty before every item), so cursors
 * stay meaningful under inserts and deletes: one row inserted in a held view of many pages
 * re-reads at most two pages with bounded reads and keeps every other acquisition; a delete
 * likewise; a change outside the held pages reads nothing; a loader without `compare`, a
 * reversed range and bad cursors change nothing. After every repair the view must equal the
 * source's slice, with no duplicate or gap at the seams. */
#include "host.h"

#define PAGE 10u
#define NKEYS_MAX 1024
#define ACQ_CAP 4096

/* The source: keys[0..nkeys), strictly increasing, all > 0. */
static uint64_t keys[NKEYS_MAX];
static size_t nkeys;
/* The keys each acquisition holds, recorded when it was answered. */
static uint64_t acq_keys[ACQ_CAP][PAGE];
static uint32_t acq_count[ACQ_CAP];
/* `compare` calls, and those with an empty cursor (the loader must order those itself). */
static int compares, empty_compares;

static void source_reset(size_t n) {
    nkeys = n;
    for (size_t i = 0; i < n; i++) keys[i] = 10 * (i + 1);
}

static void source_insert(uint64_t key) {
    size_t i = 0;
    while (i < nkeys && keys[i] < key) i++;
    memmove(&keys[i + 1], &keys[i], (nkeys - i) * sizeof keys[0]);
    keys[i] = key;
    nkeys++;
}

static void source_delete(uint64_t key) {
    size_t i = 0;
    while (i < nkeys && keys[i] != key) i++;
    if (i == nkeys) return;
    memmove(&keys[i], &keys[i + 1], (nkeys - i - 1) * sizeof keys[0]);
    nkeys--;
}

static uint64_t key_of(const uint8_t *c, size_t len) {
    return len == 8 ? get_be64(c) : 0;
}

static int32_t cb_compare(void *userdata, const uint8_t *a, size_t a_len, const uint8_t *b,
                          size_t b_len) {
    (void)userdata;
    compares++;
    if (a_len == 0 || b_len == 0 || a == NULL || b == NULL) empty_compares++;
    uint64_t x = key_of(a, a_len), y = key_of(b, b_len);
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Keyset answer: forward, the keys > cursor (and <= until when bounded), at most limit;
 * backward, the last limit keys <= cursor. */
static loader_result keyed_answer(host *h, const pending_read *p) {
    uint64_t at = key_of(p->cursor, p->cursor_len);
    uint64_t ids[PAGE];
    uint32_t n = 0;
    uint8_t next[8];
    size_t next_len = 8;
    bool end;
    if (p->direction == LOADER_DIRECTION_FORWARD) {
        uint64_t until = p->bounded ? key_of(p->until, p->until_len) : UINT64_MAX;
        size_t i = 0;
        while (i < nkeys && keys[i] <= at) i++;
        while (i < nkeys && keys[i] <= until && n < p->limit && n < PAGE) ids[n++] = keys[i++];
        bool reached_until = p->bounded && (i == nkeys || keys[i] > until);
        end = i == nkeys;
        /* The scan reached `until`: the position after the last row scanned is `until`. */
        uint64_t nk = reached_until ? until : n ? ids[n - 1] : at;
        if (!reached_until && n == 0) next_len = p->cursor_len;
        put_be64(next, nk);
    } else {
        size_t j = 0; /* keys[0..j) are <= at */
        while (j < nkeys && keys[j] <= at) j++;
        size_t from = j > p->limit ? j - p->limit : 0;
        if (j - from > PAGE) from = j - PAGE;
        for (size_t i = from; i < j; i++) ids[n++] = keys[i];
        end = from == 0;
        if (end) next_len = 0;
        else put_be64(next, keys[from - 1]);
    }
    uint64_t acq = h->next_acq++;
    if (acq < ACQ_CAP) {
        memcpy(acq_keys[acq], ids, n * sizeof ids[0]);
        acq_count[acq] = n;
    }
    if (acq < MAX_ACQ) h->accepted[acq] = 1;
    loader_answer a;
    loader_result r = loader_settle(h->handle, p->read_id, (loader_acquisition)acq, n, next,
                                    next_len, end, &a);
    if (r != LOADER_RESULT_OK && acq < MAX_ACQ) h->accepted[acq] = 0;
    return r;
}

static void keyed_drain(host *h) {
    int guard = 0;
    while (h->npending > 0 && guard++ < 100000) {
        pending_read p = take(h, 0);
        CHECK_CODE(keyed_answer(h, &p), LOADER_RESULT_OK);
    }
}

/* A loader (with `compare` or without) over `n` keys, its window [0, window), loaded. */
static host *keyed_host(size_t n, uint64_t window, bool with_compare) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = PAGE;
    cfg.prefetch_distance = 0;
    h->next_acq = 1;
    source_reset(n);
    compares = empty_compares = 0;
    loader_callbacks cb = host_callbacks(h);
    if (with_compare) cb.compare = cb_compare;
    if (loader_new(&cfg, &cb, &h->handle) != LOADER_RESULT_OK) {
        fprintf(stderr, "loader_new failed\n");
        exit(2);
    }
    CHECK_CODE(loader_set_window(h->handle, 0, window), LOADER_RESULT_OK);
    keyed_drain(h);
    CHECK(state_of(h).quiescent);
    return h;
}

static void free_keyed(host *h) {
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(released_exactly_once(h));
    CHECK(empty_compares == 0);
    free(h);
}

static loader_counts counts_of(host *h) {
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    return c;
}

static loader_page view_pages[256];

static size_t view_of(host *h) {
    size_t n = 0;
    CHECK_CODE(loader_view(h->handle, view_pages, 256, &n, NULL), LOADER_RESULT_OK);
    return n;
}

/* The view is the source's first items, page after page, each page where its first key is
 * in the source: no duplicate, gap or stale item at any seam. Returns the items covered. */
static uint64_t check_view_is_source(host *h) {
    size_t n = view_of(h);
    uint64_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        loader_acquisition acq = view_pages[i].acquisition;
        CHECK(acq < ACQ_CAP);
        if (acq >= ACQ_CAP) return pos;
        CHECK(view_pages[i].start == pos);
        CHECK(view_pages[i].count == acq_count[acq]);
        for (uint32_t j = 0; j < acq_count[acq]; j++) {
            CHECK(pos < nkeys && acq_keys[acq][j] == keys[pos]);
            pos++;
        }
    }
    return pos;
}

static void put_key(uint8_t out[8], uint64_t key) { put_be64(out, key); }

/* One insert in the middle of a held view of 30 pages: bounded reads of at most 2 pages; the
 * other 29 acquisitions stay in the view, unreleased; the pages after move by one. */
static void one_insert_rereads_its_page_only(void) {
    host *h = keyed_host(400, 300, true);
    uint64_t covered = check_view_is_source(h);
    CHECK(covered == 300);
    size_t before_n = view_of(h);
    CHECK(before_n == 30);
    loader_acquisition before[256];
    for (size_t i = 0; i < before_n; i++) before[i] = view_pages[i].acquisition;
    loader_counts c0 = counts_of(h);

    source_insert(1555); /* between keys 1550 and 1560: page 15, (1500, 1600] */
    uint8_t k[8];
    put_key(k, 1555);
    CHECK_CODE(loader_invalidate_range(h->handle, k, 8, k, 8), LOADER_RESULT_OK);
    CHECK(compares > 0);
    /* The repair's reads are bounded by the dirty page's end cursor and go forward. */
    CHECK(h->npending == 1);
    for (size_t i = 0; i < h->npending; i++) {
        CHECK(h->pending[i].kind == LOADER_KIND_CHAIN);
        CHECK(h->pending[i].direction == LOADER_DIRECTION_FORWARD);
        CHECK(h->pending[i].bounded && h->pending[i].until_len == 8);
        CHECK(key_of(h->pending[i].until, 8) == 1600);
        CHECK(key_of(h->pending[i].cursor, h->pending[i].cursor_len) == 1500);
    }
    CHECK(state_of(h).revalidating);
    keyed_drain(h);
    loader_snapshot s = state_of(h);
    CHECK(s.quiescent && !s.revalidating);
    loader_counts c1 = counts_of(h);
    CHECK(c1.items_read - c0.items_read <= 2 * PAGE);
    CHECK(c1.items_read - c0.items_read >= PAGE + 1);
    CHECK(c1.ranged_invalidations == c0.ranged_invalidations + 1);
    CHECK(c1.ranged_repairs == c0.ranged_repairs + 1);
    CHECK(c1.issued_full == c0.issued_full);

    CHECK(check_view_is_source(h) == 301);
    /* Every page but the re-read one is the same acquisition, unreleased. */
    size_t after_n = view_of(h);
    size_t kept = 0, gone = 0;
    for (size_t i = 0; i < before_n; i++) {
        bool in_view = false;
        for (size_t j = 0; j < after_n; j++) in_view |= view_pages[j].acquisition == before[i];
        kept += in_view && !h->released[before[i]];
        gone += !in_view && h->released[before[i]];
    }
    CHECK(kept == before_n - 1 && gone == 1);
    free_keyed(h);
}

/* A delete: its page is re-read (bounded), the rest kept; the view shrinks by one item. */
static void one_delete_rereads_its_page_only(void) {
    host *h = keyed_host(400, 300, true);
    loader_counts c0 = counts_of(h);
    size_t before_n = view_of(h);
    loader_acquisition before[256];
    for (size_t i = 0; i < before_n; i++) before[i] = view_pages[i].acquisition;

    source_delete(780); /* page 7: (700, 800] */
    uint8_t k[8];
    put_key(k, 780);
    CHECK_CODE(loader_invalidate_range(h->handle, k, 8, k, 8), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].bounded);
    keyed_drain(h);
    CHECK(state_of(h).quiescent);
    loader_counts c1 = counts_of(h);
    CHECK(c1.items_read - c0.items_read <= 2 * PAGE);
    CHECK(c1.ranged_repairs == c0.ranged_repairs + 1);
    /* The window's 300 items are still covered: the shrunk page leaves the view one short
     * or a read after it fills it; either way the view is the source's prefix. */
    uint64_t covered = check_view_is_source(h);
    CHECK(covered >= 299);
    size_t after_n = view_of(h);
    size_t kept = 0;
    for (size_t i = 0; i < before_n; i++) {
        bool in_view = false;
        for (size_t j = 0; j < after_n; j++) in_view |= view_pages[j].acquisition == before[i];
        kept += in_view && !h->released[before[i]];
    }
    CHECK(kept == before_n - 1);
    free_keyed(h);
}

/* A change after the held pages, with no read in flight, re-reads nothing: no repair starts,
 * no read is issued, nothing changes (no `changed`), and every acquisition is kept. */
static void a_change_outside_the_view_reads_nothing(void) {
    host *h = keyed_host(400, 100, true);
    CHECK(check_view_is_source(h) == 100);
    loader_counts c0 = counts_of(h);
    loader_snapshot s0 = state_of(h);
    source_insert(3005);
    uint8_t k[8];
    put_key(k, 3005);
    int changes = h->changes;
    CHECK_CODE(loader_invalidate_range(h->handle, k, 8, k, 8), LOADER_RESULT_OK);
    CHECK(h->npending == 0);
    loader_snapshot s = state_of(h);
    CHECK(s.quiescent && !s.revalidating);
    CHECK(s.pages == s0.pages && s.released == s0.released);
    loader_counts c1 = counts_of(h);
    CHECK(c1.items_read == c0.items_read);
    CHECK(c1.ranged_invalidations == c0.ranged_invalidations + 1);
    CHECK(c1.ranged_repairs == c0.ranged_repairs);
    CHECK(s.epoch == s0.epoch && s.cover_epoch == s0.cover_epoch);
    CHECK(h->changes == changes);
    CHECK(check_view_is_source(h) == 100);
    free_keyed(h);
}

/* From the source's start (empty) to its end (NULL): every page is dirty and re-read. */
static void the_whole_source_as_a_range(void) {
    host *h = keyed_host(200, 100, true);
    loader_counts c0 = counts_of(h);
    source_insert(5);
    CHECK_CODE(loader_invalidate_range(h->handle, NULL, 0, NULL, 0), LOADER_RESULT_OK);
    keyed_drain(h);
    CHECK(state_of(h).quiescent);
    loader_counts c1 = counts_of(h);
    CHECK(c1.items_read - c0.items_read >= 100);
    CHECK(check_view_is_source(h) >= 100);
    free_keyed(h);
}

/* Refused calls change nothing: no compare, a reversed range, bad cursors. */
static void refusals_change_nothing(void) {
    host *h = keyed_host(200, 100, false);
    loader_snapshot s0 = state_of(h);
    loader_counts c0 = counts_of(h);
    uint8_t k[8];
    put_key(k, 150);
    CHECK_CODE(loader_invalidate_range(h->handle, k, 8, k, 8), LOADER_RESULT_NO_COMPARE);
    CHECK_CODE(loader_invalidate_range(h->handle, NULL, 0, NULL, 0), LOADER_RESULT_NO_COMPARE);
    loader_snapshot s1 = state_of(h);
    CHECK(states_equal(&s0, &s1) && h->npending == 0);
    CHECK(counts_of(h).ranged_invalidations == c0.ranged_invalidations);
    free_keyed(h);

    h = keyed_host(200, 100, true);
    s0 = state_of(h);
    uint8_t lo[8], hi[8];
    put_key(lo, 400);
    put_key(hi, 300);
    CHECK_CODE(loader_invalidate_range(h->handle, lo, 8, hi, 8), LOADER_RESULT_RANGE_REVERSED);
    /* A non-NULL `to` of length 0 is the source's start: before any non-empty `from`. */
    CHECK_CODE(loader_invalidate_range(h->handle, lo, 8, hi, 0), LOADER_RESULT_RANGE_REVERSED);
    CHECK_CODE(loader_invalidate_range(h->handle, NULL, 8, hi, 8), LOADER_RESULT_NULL_CURSOR);
    CHECK_CODE(loader_invalidate_range(h->handle, lo, 8, NULL, 8), LOADER_RESULT_NULL_CURSOR);
    static uint8_t big[LOADER_MAX_CURSOR_LEN + 1];
    CHECK_CODE(loader_invalidate_range(h->handle, big, sizeof big, NULL, 0),
               LOADER_RESULT_CURSOR_TOO_LONG);
    /* Cursor checks come before the handle's. */
    CHECK_CODE(loader_invalidate_range(0, NULL, 8, NULL, 0), LOADER_RESULT_NULL_CURSOR);
    CHECK_CODE(loader_invalidate_range(0, lo, 8, NULL, 0), LOADER_RESULT_INVALID_HANDLE);
    s1 = state_of(h);
    CHECK(states_equal(&s0, &s1) && h->npending == 0);
    CHECK(counts_of(h).ranged_invalidations == 0);
    /* The same range the right way round is accepted. */
    CHECK_CODE(loader_invalidate_range(h->handle, hi, 8, lo, 8), LOADER_RESULT_OK);
    keyed_drain(h);
    CHECK(state_of(h).quiescent);
    CHECK(check_view_is_source(h) == 100);
    free_keyed(h);
}

/* Two changes in different pages before the repair runs merge: both pages (and what lies
 * between them) are re-read in one repair, the pages outside kept. */
static void two_changes_merge(void) {
    host *h = keyed_host(400, 300, true);
    loader_counts c0 = counts_of(h);
    uint8_t a[8], b[8];
    source_insert(505);
    put_key(a, 505);
    source_delete(1210);
    put_key(b, 1210);
    CHECK_CODE(loader_invalidate_range(h->handle, a, 8, a, 8), LOADER_RESULT_OK);
    CHECK_CODE(loader_invalidate_range(h->handle, b, 8, b, 8), LOADER_RESULT_OK);
    keyed_drain(h);
    CHECK(state_of(h).quiescent);
    loader_counts c1 = counts_of(h);
    CHECK(c1.ranged_invalidations == c0.ranged_invalidations + 2);
    /* Never the whole view again: pages 0..4 and 13..29 are kept. */
    CHECK(c1.items_read - c0.items_read < 300);
    CHECK(check_view_is_source(h) >= 300);
    free_keyed(h);
}

/* Grows the window to [0, 600) over 1,000 keys and answers every read in order; after each
 * answer that leaves a read out (up to `most` of them), deletes a key far past the view
 * (8,990 and down) and reports exactly it. Returns the reads issued for the move; the move
 * must end, with the view equal to the source. */
static uint64_t forward_move_under_changes(int most) {
    host *h = keyed_host(1000, 10, true);
    loader_counts c0 = counts_of(h);
    CHECK_CODE(loader_set_window(h->handle, 0, 600), LOADER_RESULT_OK);
    int changes = 0, guard = 0;
    uint64_t far = 9000;
    while (h->npending > 0 && guard++ < 10000) {
        pending_read p = take(h, 0);
        CHECK_CODE(keyed_answer(h, &p), LOADER_RESULT_OK);
        if (h->npending > 0 && changes < most) {
            far -= 10;
            source_delete(far);
            uint8_t k[8];
            put_key(k, far);
            CHECK_CODE(loader_invalidate_range(h->handle, k, 8, k, 8), LOADER_RESULT_OK);
            changes++;
        }
    }
    CHECK(guard < 10000); /* the move ended */
    CHECK(changes == most || most > 1000);
    CHECK(state_of(h).quiescent);
    CHECK(check_view_is_source(h) == 600);
    loader_counts c1 = counts_of(h);
    uint64_t reads = c1.issued_finite + c1.issued_chain + c1.issued_full -
                     (c0.issued_finite + c0.issued_chain + c0.issued_full);
    free_keyed(h);
    return reads;
}

/* A change far ahead of a forward move, reported after every answer, costs it nothing: each
 * answer ends before the change (the loader asks `compare` from loader_settle), so the read
 * in flight is never superseded (before, the move never ended); ten such changes cost at most
 * two reads more than none (before: one read each). */
static void changes_far_ahead_cost_a_forward_move_nothing(void) {
    uint64_t quiet = forward_move_under_changes(0);
    uint64_t ten = forward_move_under_changes(10);
    uint64_t busy = forward_move_under_changes(100000);
    fprintf(stderr, "forward move: %llu reads quiet, %llu with ten changes, %llu with a change after every answer\n", (unsigned long long)quiet, (unsigned long long)ten, (unsigned long long)busy);
    CHECK(quiet >= 59);
    CHECK(ten <= quiet + 2);
    CHECK(busy <= quiet + 2);
}

int main(void) {
    RUN(one_insert_rereads_its_page_only);
    RUN(one_delete_rereads_its_page_only);
    RUN(a_change_outside_the_view_reads_nothing);
    RUN(the_whole_source_as_a_range);
    RUN(refusals_change_nothing);
    RUN(two_changes_merge);
    RUN(changes_far_ahead_cost_a_forward_move_nothing);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
