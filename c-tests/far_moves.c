/* Far moves through the C ABI: a window moved far from the held pages starts at the nearest
 * cursor the loader knows (the source's start, a page read before, the host's locate
 * callback) and reads about the window plus prefetch; locate answering unknown falls back to
 * the walk, whose acquisitions stay within the bound; locate answering wrong gives the source
 * from that cursor, contiguous and leak-free; a config from before jump_threshold existed
 * (zero) walks as before; the default config bounds the pages held. */
#include "host.h"

#define PAGE 50u
#define PREFETCH 50u
#define WINDOW 100u
#define MAX_PAGES 8u
#define VIEW_CAP 4096
/* Window plus prefetch on both sides plus two pages: what a move that starts at a cursor
 * may read. */
#define TARGET (WINDOW + 2 * PREFETCH + 2 * PAGE)

enum locate_mode { LOCATE_NONE, LOCATE_EXACT, LOCATE_UNKNOWN, LOCATE_WRONG };

static enum locate_mode mode;
static int locate_calls;
/* The index of the first item behind each acquisition. */
static uint64_t acq_from[MAX_ACQ];
static uint64_t max_held;

/* The key of item position - 1 (8 big-endian bytes), or nothing for position 0; LOCATE_WRONG
 * answers seven items on. */
static int32_t cb_locate(void *userdata, uint64_t position, uint8_t *cursor, size_t capacity,
                         size_t *cursor_len) {
    host *h = (host *)userdata;
    locate_calls++;
    if (mode == LOCATE_UNKNOWN || capacity < 8) return LOADER_LOCATE_UNKNOWN;
    uint64_t at = mode == LOCATE_WRONG ? position + 7 : position;
    if (at > h->source_len) at = h->source_len;
    *cursor_len = at == 0 ? 0 : 8;
    if (at > 0) put_be64(cursor, at);
    return LOADER_LOCATE_FOUND;
}

static host *far_host(uint64_t len, uint32_t max_pages, uint64_t jump_threshold,
                      enum locate_mode m) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = PAGE;
    cfg.prefetch_distance = PREFETCH;
    cfg.max_pages = max_pages;
    cfg.jump_threshold = jump_threshold;
    h->source_len = len;
    h->next_acq = 1;
    loader_callbacks cb = host_callbacks(h);
    mode = m;
    locate_calls = 0;
    max_held = 0;
    if (m != LOCATE_NONE) cb.locate = cb_locate;
    if (loader_new(&cfg, &cb, &h->handle) != LOADER_RESULT_OK) {
        fprintf(stderr, "loader_new failed\n");
        exit(2);
    }
    return h;
}

static loader_counts counts_of(host *h) {
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    return c;
}

static void note_held(host *h) {
    loader_snapshot s = state_of(h);
    uint64_t held = s.accepted - s.released;
    if (held > max_held) max_held = held;
}

/* Answers every read, oldest first, recording what each acquisition holds and the most
 * acquisitions held after every event. */
static void drain_noted(host *h) {
    for (int guard = 0; h->npending > 0 && guard < 1000000; guard++) {
        pending_read p = take(h, 0);
        uint64_t at = p.cursor_len == 8 ? get_be64(p.cursor) : 0;
        read_span s = span_of(at, p.limit, p.direction, h->source_len);
        if (h->next_acq < MAX_ACQ) acq_from[h->next_acq] = s.from;
        CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
        note_held(h);
    }
}

static void move(host *h, uint64_t start) {
    CHECK_CODE(loader_set_window(h->handle, start, WINDOW), LOADER_RESULT_OK);
    note_held(h);
    drain_noted(h);
}

/* The view: consecutive pages, each holding the items its position says (positions are the
 * host's indices), covering the window plus prefetch (clipped at the source's ends). */
static int view_is_the_source(host *h, int64_t offset) {
    static loader_page pages[VIEW_CAP];
    size_t n = 0;
    if (loader_view(h->handle, pages, VIEW_CAP, &n, NULL) != LOADER_RESULT_OK || n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        if (pages[i].acquisition >= MAX_ACQ) return 0;
        if ((int64_t)acq_from[pages[i].acquisition] != (int64_t)pages[i].start + offset) return 0;
        if (i > 0 && pages[i].start != pages[i - 1].start + pages[i - 1].count) return 0;
    }
    loader_snapshot s = state_of(h);
    uint64_t lo = s.window_start > PREFETCH ? s.window_start - PREFETCH : 0;
    uint64_t hi = s.window_start + s.window_len + PREFETCH;
    if (hi > h->source_len) hi = h->source_len;
    return s.quiescent && s.covered_start <= lo && s.covered_end >= hi;
}

/* Moves the window to `at`, answering everything, and returns what the move added to the
 * counters a far move changes. */
static loader_counts moved(host *h, uint64_t at) {
    loader_counts a = counts_of(h);
    move(h, at);
    loader_counts b = counts_of(h);
    b.items_read -= a.items_read;
    b.far_jumps -= a.far_jumps;
    b.located -= a.located;
    b.locate_unknown -= a.locate_unknown;
    return b;
}

/* The header's bound, at this geometry: max(max_pages, the pages the window plus prefetch
 * overlaps) + one finite page in flight + one repair's staged pages. */
static uint64_t bound(uint32_t max_pages) {
    uint64_t overlap = (WINDOW + 2 * PREFETCH + PAGE - 1) / PAGE + 1;
    uint64_t view = max_pages > overlap ? max_pages : overlap;
    return view + 1 + (WINDOW + 2 * PREFETCH + PAGE - 1) / PAGE + 2;
}

/* ---- tests ---- */

static void scrolling_back_to_the_top_reads_the_window_not_the_distance(void) {
    host *h = far_host(100000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_NONE);
    for (uint64_t at = 0; at <= 20000; at += WINDOW) move(h, at);
    loader_counts d = moved(h, 0);
    printf("     back to the top from item 20000: %llu items read\n", (unsigned long long)d.items_read);
    CHECK(d.items_read <= TARGET);
    CHECK(d.far_jumps == 1);
    CHECK(view_is_the_source(h, 0));
    /* And back to a position visited before: the memo. */
    d = moved(h, 12345);
    printf("     back to item 12345, visited before: %llu items read\n", (unsigned long long)d.items_read);
    CHECK(d.items_read <= TARGET);
    CHECK(view_is_the_source(h, 0));
    CHECK(max_held <= bound(MAX_PAGES));
    CHECK(locate_calls == 0);
    host_free(h);
}

static void locate_makes_a_far_move_cost_the_window(void) {
    host *h = far_host(1000000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_EXACT);
    move(h, 0);
    loader_counts d = moved(h, 700000);
    printf("     to item 700000 with locate: %llu items read\n", (unsigned long long)d.items_read);
    CHECK(d.items_read <= TARGET);
    CHECK(d.located == 1 && locate_calls == 1);
    CHECK(view_is_the_source(h, 0));
    /* A move within the threshold does not ask. */
    move(h, 700000 + WINDOW);
    CHECK(locate_calls == 1);
    host_free(h);
}

static void locate_unknown_walks_within_the_bound(void) {
    host *h = far_host(100000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_UNKNOWN);
    move(h, 0);
    loader_counts d = moved(h, 30000);
    printf("     to item 30000, locate unknown: %llu items read, at most %llu held (bound %llu)\n",
           (unsigned long long)d.items_read, (unsigned long long)max_held, (unsigned long long)bound(MAX_PAGES));
    CHECK(d.locate_unknown == 1);
    CHECK(d.far_jumps == 0);
    CHECK(d.items_read >= 30000 - PREFETCH);
    CHECK(max_held <= bound(MAX_PAGES));
    CHECK(view_is_the_source(h, 0));
    host_free(h);
}

static void a_wrong_locate_gives_the_source_from_its_cursor(void) {
    host *h = far_host(100000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_WRONG);
    move(h, 0);
    move(h, 40000);
    /* The view holds the items after the wrong cursor, numbered from the window's start:
     * seven items off, contiguous, and every acquisition accounted for. */
    CHECK(view_is_the_source(h, 7));
    CHECK(max_held <= bound(MAX_PAGES));
    host_free(h);
}

static void a_zero_threshold_walks_as_before(void) {
    host *h = far_host(100000, MAX_PAGES, 0, LOCATE_EXACT);
    for (uint64_t at = 0; at <= 5000; at += WINDOW) move(h, at);
    loader_counts d = moved(h, 0);
    CHECK(d.far_jumps == 0 && locate_calls == 0);
    /* It walks back from the first page held: everything but the pages kept. */
    CHECK(d.items_read >= 5000 - MAX_PAGES * PAGE);
    CHECK(view_is_the_source(h, 0));
    host_free(h);
}

static void the_default_config_bounds_the_pages_held(void) {
    loader_config d = {.struct_size = sizeof d};
    CHECK_CODE(loader_config_default(&d), LOADER_RESULT_OK);
    CHECK(d.max_pages == LOADER_DEFAULT_MAX_PAGES);
    CHECK(d.jump_threshold == LOADER_JUMP_THRESHOLD_AUTO);
    CHECK(d.cursor_memo_bytes > 0);
    host *h = far_host(200000, LOADER_DEFAULT_MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_NONE);
    /* A long scroll and a far walk forward: never more than the bound. */
    for (uint64_t at = 0; at <= 20000; at += WINDOW / 2) move(h, at);
    move(h, 150000);
    printf("     default config: at most %llu acquisitions held (bound %llu)\n",
           (unsigned long long)max_held, (unsigned long long)bound(LOADER_DEFAULT_MAX_PAGES));
    CHECK(max_held <= bound(LOADER_DEFAULT_MAX_PAGES));
    CHECK(view_is_the_source(h, 0));
    host_free(h);
}

/* A far move made while the previous far move's reads are out starts at its own target: the
 * first move's read is let go (a cancel hint), and nothing between the two is read. */
static void a_far_move_during_a_far_move_reads_around_the_second_target(void) {
    host *h = far_host(100000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_EXACT);
    move(h, 0);
    CHECK_CODE(loader_set_window(h->handle, 30000, WINDOW), LOADER_RESULT_OK);
    CHECK(h->npending > 0);
    int cancels = h->cancels;
    loader_counts d = moved(h, 60000);
    printf("     to item 60000 while the move to 30000 reads: %llu items read\n",
           (unsigned long long)d.items_read);
    /* The first move's read, answered late, is not counted: what the second move read. */
    CHECK(d.items_read <= TARGET);
    CHECK(d.located == 1 && locate_calls == 2);
    CHECK(h->cancels > cancels);
    CHECK(view_is_the_source(h, 0));
    CHECK(max_held <= bound(MAX_PAGES));
    host_free(h);
}

/* A far move after the previous far move's read failed starts at its own target, not at the
 * failed read resumed. */
static void a_far_move_after_a_failed_far_move_reads_around_its_target(void) {
    host *h = far_host(100000, MAX_PAGES, LOADER_JUMP_THRESHOLD_AUTO, LOCATE_EXACT);
    move(h, 0);
    CHECK_CODE(loader_set_window(h->handle, 40000, WINDOW), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind != LOADER_KIND_FINITE);
    fail_oldest(h);
    loader_counts d = moved(h, 20000);
    printf("     to item 20000 after the move to 40000 failed: %llu items read\n",
           (unsigned long long)d.items_read);
    CHECK(d.items_read <= TARGET);
    CHECK(view_is_the_source(h, 0));
    CHECK(max_held <= bound(MAX_PAGES));
    host_free(h);
}

int main(void) {
    RUN(scrolling_back_to_the_top_reads_the_window_not_the_distance);
    RUN(locate_makes_a_far_move_cost_the_window);
    RUN(locate_unknown_walks_within_the_bound);
    RUN(a_wrong_locate_gives_the_source_from_its_cursor);
    RUN(a_zero_threshold_walks_as_before);
    RUN(the_default_config_bounds_the_pages_held);
    RUN(a_far_move_during_a_far_move_reads_around_the_second_target);
    RUN(a_far_move_after_a_failed_far_move_reads_around_its_target);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
