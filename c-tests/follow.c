/* Follow mode through the C ABI: loader_follow pins the window to a growing source's end,
 * loader_appended reports each append and costs only the appended items, a move away
 * unpins and a move back to the end pins again, loader_jump unpins; the feed's wrappers
 * too. Every acquisition is released exactly once. */
#include "host.h"

#define PAGE 20u
#define WINDOW 50u

static bool following(host *h) {
    bool on = false;
    CHECK_CODE(loader_following(h->handle, &on), LOADER_RESULT_OK);
    return on;
}

static uint64_t items_read(host *h) {
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    return c.items_read;
}

/* The window sits on the source's last WINDOW items, and the view reaches the end. */
static int at_end(host *h) {
    loader_snapshot s = state_of(h);
    uint64_t want = h->source_len > WINDOW ? h->source_len - WINDOW : 0;
    return s.window_start == want && s.window_len == WINDOW && s.end_of_source &&
           s.covered_end == h->source_len && s.covered_start <= want && s.quiescent;
}

static void append(host *h, uint64_t n) {
    h->source_len += n;
    CHECK_CODE(loader_appended(h->handle), LOADER_RESULT_OK);
    drain(h);
}

static void test_follow_reads_only_the_appended_items(void) {
    host *h = host_new(PAGE, 1000);
    CHECK_CODE(loader_set_window(h->handle, 0, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK(!following(h));
    CHECK_CODE(loader_follow(h->handle, true), LOADER_RESULT_OK);
    drain(h);
    CHECK(following(h));
    CHECK(at_end(h));
    uint64_t before = items_read(h), appended = 0;
    for (uint64_t n = 1; n <= 30; n++) {
        append(h, n % 7);
        appended += n % 7;
        CHECK(at_end(h));
    }
    CHECK(items_read(h) - before == appended);
    host_free(h);
}

static void test_move_away_unpins_and_back_pins(void) {
    host *h = host_new(PAGE, 1000);
    CHECK_CODE(loader_set_window(h->handle, 0, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_follow(h->handle, true), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_set_window(h->handle, 900, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK(!following(h));
    uint64_t before = items_read(h);
    append(h, 10);
    CHECK(items_read(h) == before);
    CHECK(state_of(h).window_start == 900);
    CHECK_CODE(loader_set_window(h->handle, 1000 - WINDOW, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK(following(h));
    CHECK(at_end(h));
    /* A jump unpins. */
    uint8_t c[8];
    put_be64(c, 500);
    CHECK_CODE(loader_jump(h->handle, c, 8, 500), LOADER_RESULT_OK);
    drain(h);
    CHECK(!following(h));
    /* Off: a move to the end no longer pins. */
    CHECK_CODE(loader_follow(h->handle, false), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 1010 - WINDOW, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK(!following(h));
    bool on;
    CHECK_CODE(loader_following(h->handle, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_following(0, &on), LOADER_RESULT_INVALID_HANDLE);
    host_free(h);
}

/* A read answered from the source as it was before an append reported meanwhile: its end
 * flag is not believed, and the new items are read. */
static void test_read_in_flight_across_an_append(void) {
    host *h = host_new(PAGE, 100);
    CHECK_CODE(loader_set_window(h->handle, 0, WINDOW), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_follow(h->handle, true), LOADER_RESULT_OK);
    drain(h);
    h->source_len += 5;
    CHECK_CODE(loader_appended(h->handle), LOADER_RESULT_OK);
    CHECK(h->npending == 1);
    pending_read p = take(h, 0);
    /* 3 more are written and reported after the host made its answer (5 items, end of
     * source), before that answer lands. */
    CHECK_CODE(loader_appended(h->handle), LOADER_RESULT_OK);
    CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
    h->source_len += 3;
    drain(h);
    CHECK(at_end(h));
    host_free(h);
}

int main(void) {
    RUN(test_follow_reads_only_the_appended_items);
    RUN(test_move_away_unpins_and_back_pins);
    RUN(test_read_in_flight_across_an_append);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
