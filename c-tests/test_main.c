/* The C test suite of libloader: scenarios of the model, the bad-input table, handles, the
 * panic boundary, reentrancy and the cancellation hint, all through the C ABI. */
#include "host.h"

#ifndef LOADER_EXPECTED_VERSION
#error "build with -DLOADER_EXPECTED_VERSION=\"x.y.z\" (the Makefile takes it from Cargo.toml)"
#endif

/* ---- lifecycle, version, result strings ---- */

static void version_matches_cargo_toml(void) {
    CHECK(strcmp(loader_version(), LOADER_EXPECTED_VERSION) == 0);
}

static void every_result_code_has_a_distinct_message(void) {
    for (int a = 0; a <= LOADER_RESULT_TOO_MANY_HANDLES; a++) {
        CHECK(loader_result_str(a) != NULL);
        CHECK(strcmp(loader_result_str(a), "unknown result code") != 0);
        for (int b = 0; b < a; b++) CHECK(strcmp(loader_result_str(a), loader_result_str(b)) != 0);
    }
    CHECK(strcmp(loader_result_str(-1), "unknown result code") == 0);
    CHECK(strcmp(loader_result_str(12345), "unknown result code") == 0);
}

static void config_defaults_and_bad_configs(void) {
    loader_config cfg = {.struct_size = sizeof cfg};
    CHECK_CODE(loader_config_default(NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_OK);
    CHECK(cfg.page_size == 50 && cfg.prefetch_distance == 50 && cfg.drop_margin == 0);
    CHECK(cfg.backoff_initial_ms == 100 && cfg.backoff_max_ms == 30000);
    CHECK(cfg.max_auto_retries == 5 && cfg.recheck_full == 1);

    host *h = (host *)calloc(1, sizeof(host));
    loader_callbacks cb = host_callbacks(h);
    loader_handle out = 77;
    CHECK_CODE(loader_new(NULL, &cb, &out), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_new(&cfg, NULL, &out), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_new(&cfg, &cb, NULL), LOADER_RESULT_NULL_POINTER);
    loader_config bad = cfg;
    bad.page_size = 0;
    CHECK_CODE(loader_new(&bad, &cb, &out), LOADER_RESULT_INVALID_PAGE_SIZE);
    bad = cfg;
    bad.page_size = LOADER_MAX_PAGE_SIZE + 1;
    CHECK_CODE(loader_new(&bad, &cb, &out), LOADER_RESULT_INVALID_PAGE_SIZE);
    bad = cfg;
    bad.backoff_initial_ms = 0;
    CHECK_CODE(loader_new(&bad, &cb, &out), LOADER_RESULT_INVALID_BACKOFF_INITIAL);
    bad = cfg;
    bad.backoff_max_ms = 1;
    CHECK_CODE(loader_new(&bad, &cb, &out), LOADER_RESULT_INVALID_BACKOFF_MAX);
    bad = cfg;
    bad.backoff_multiplier = 0.0 / 0.0;
    CHECK_CODE(loader_new(&bad, &cb, &out), LOADER_RESULT_INVALID_BACKOFF_MULTIPLIER);
    loader_callbacks missing = cb;
    missing.release = NULL;
    CHECK_CODE(loader_new(&cfg, &missing, &out), LOADER_RESULT_MISSING_CALLBACK);
    missing = cb;
    missing.issue = NULL;
    CHECK_CODE(loader_new(&cfg, &missing, &out), LOADER_RESULT_MISSING_CALLBACK);
    CHECK(out == 77); /* out-parameters are written only on success */
    free(h);
}

/* ---- handles ---- */

static void null_forged_freed_and_double_freed_handles_are_errors(void) {
    host *h = host_new(4, 10);
    loader_handle good = h->handle;
    loader_snapshot s = {.struct_size = sizeof s};
    CHECK_CODE(loader_invalidate(0), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_state(0, &s), LOADER_RESULT_INVALID_HANDLE);
    uint64_t forged[] = {1, 2, 0xffffffffull, 0x100000000ull, 0xdeadbeefcafef00dull, UINT64_MAX,
                         good + 1, good ^ (1ull << 40), good & 0xffffffffull};
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        loader_result r = loader_set_window(forged[i], 0, 1);
        CHECK(r == LOADER_RESULT_INVALID_HANDLE || r == LOADER_RESULT_STALE_HANDLE);
        CHECK(loader_free(forged[i]) != LOADER_RESULT_OK);
    }
    CHECK_CODE(loader_free(good), LOADER_RESULT_OK);
    CHECK_CODE(loader_free(good), LOADER_RESULT_STALE_HANDLE);
    /* every call after free */
    loader_answer a;
    bool b;
    uint64_t d;
    size_t n;
    loader_request_info reqs[4];
    loader_page pages[4];
    CHECK_CODE(loader_invalidate(good), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_settle(good, 1, 1, 1, (const uint8_t *)"x", 1, false, &a), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_fail(good, 1, 0, &a), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_retry(good, &b), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_set_window(good, 0, 10), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_tick(good, 5), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_next_deadline(good, &b, &d), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_state(good, &s), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_requests(good, reqs, 4, &n), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_view(good, pages, 4, &n, &b), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_floor(good), LOADER_RESULT_STALE_HANDLE);
    /* A new loader does not revive the old handle. */
    host *h2 = host_new(4, 10);
    CHECK(h2->handle != good);
    CHECK_CODE(loader_invalidate(good), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_free(h2->handle), LOADER_RESULT_OK);
    free(h);
    free(h2);
}

/* ---- scenarios ---- */

static void loads_the_window_and_frees_everything(void) {
    host *h = host_new(4, 30);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE && h->pending[0].cursor_len == 0);
    drain(h);
    loader_snapshot s = state_of(h);
    CHECK(s.pages == 3 && s.covered_end == 12 && !s.revalidating);
    CHECK(s.phase == LOADER_PHASE_IDLE && s.debt == LOADER_DEBT_NONE && s.coverage == LOADER_COVERAGE_PAGES);
    loader_page pages[8];
    size_t n = 0;
    bool reval = true;
    CHECK_CODE(loader_view(h->handle, pages, 8, &n, &reval), LOADER_RESULT_OK);
    CHECK(n == 3 && !reval);
    for (size_t i = 0; i < n; i++) CHECK(pages[i].start == 4 * i && pages[i].count == 4);
    CHECK(h->changes > 0);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.issued_finite == 3 && c.issued_chain == 0 && c.answered_current == 3);
    CHECK(c.accepted == 3 && c.released == 0 && c.failed_own == 0);
    host_free(h);
}

/* The module's counterexample for `current`: IssueFinite, SettleFinite, IssueFinite,
 * Invalidate, StartRepair, SettleChain, Invalidate, Fail of the superseded read. Here the
 * failure must not strand: failure stays none and the loader keeps loading. */
static void the_seed_trace_does_not_strand_a_superseded_failure(void) {
    host *h = host_new(4, 40);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    drain(h);
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    CHECK(h->npending == 1);
    pending_read late = take(h, 0);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK(h->cancels == 1); /* the superseded read got its hint */
    loader_snapshot s = state_of(h);
    CHECK(s.phase == LOADER_PHASE_REPAIR);
    int c;
    while ((c = find_pending(h, LOADER_KIND_CHAIN)) >= 0) {
        pending_read p = take(h, (size_t)c);
        CHECK_CODE(answer(h, &p), LOADER_RESULT_OK);
    }
    s = state_of(h);
    CHECK(s.phase == LOADER_PHASE_IDLE && s.debt == LOADER_DEBT_NONE && s.coverage == LOADER_COVERAGE_CHAIN);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    loader_answer a = LOADER_ANSWER_CURRENT;
    CHECK_CODE(loader_fail(h->handle, late.read_id, 7, &a), LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_STALE);
    s = state_of(h);
    CHECK(s.failure == LOADER_FAILURE_NONE);
    /* It was hinted: its failure is the host letting it go, so not even the debt rises. */
    CHECK(s.debt == LOADER_DEBT_BOUNDED);
    drain(h);
    CHECK_CODE(loader_set_window(h->handle, 0, 20), LOADER_RESULT_OK);
    drain(h);
    s = state_of(h);
    CHECK(s.covered_end >= 20 && !s.revalidating && s.cover_epoch == s.epoch);
    host_free(h);
}

/* The lost invalidation (docs/DESIGN.md): Invalidate, StartFull, Invalidate, SettleFull would end
 * quiescent with coverEpoch < epoch. With the fix, a repair follows. */
static void an_invalidation_during_a_full_read_is_not_lost(void) {
    host *h = host_new(4, 20);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FULL);
    pending_read full = take(h, 0);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK_CODE(answer(h, &full), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(s.revalidating && s.phase == LOADER_PHASE_REPAIR);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_CHAIN);
    drain(h);
    s = state_of(h);
    CHECK(!s.revalidating && s.cover_epoch == s.epoch && s.epoch == 2);
    host_free(h);
}

static void own_failures_arm_the_backoff_timer(void) {
    host *h = host_new(4, 20);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    fail_oldest(h);
    bool armed = false;
    uint64_t deadline = 0;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(armed && deadline >= 50 && deadline <= 100);
    CHECK_CODE(loader_tick(h->handle, deadline - 1), LOADER_RESULT_OK);
    CHECK(h->npending == 0);
    CHECK_CODE(loader_tick(h->handle, deadline), LOADER_RESULT_OK);
    /* The window's first page failed with nothing else owed: the timer reads that page again
     * (from the source's start), not the full source. */
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE);
    CHECK(h->pending[0].cursor_len == 0 && h->pending[0].direction == LOADER_DIRECTION_FORWARD);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.retries_auto == 1 && c.retries_page == 1 && c.issued_full == 0);
    drain(h);
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(!armed && deadline == 0);
    bool started = true;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(!started); /* nothing to retry */
    host_free(h);
}

/* loader_explain: "quiescent", then the read waited for; a buffer too small gets the start
 * of the text and its NUL, and the length says what to allocate. */
/* loader_counts.retries_page counts only a retry that reads the failed read again (its cursor,
 * direction and until); a window move or a jump between the page read's issue and its retry
 * makes the retry a full read from the anchor (loader_retry's doc). */
static loader_counts counts_now(host *h) {
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    return c;
}

static void a_window_move_while_a_page_read_is_out_makes_its_retry_a_full_read(void) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = 2;
    cfg.prefetch_distance = 5;
    h->source_len = 20;
    h->next_acq = 1;
    loader_callbacks cb = host_callbacks(h);
    CHECK_CODE(loader_new(&cfg, &cb, &h->handle), LOADER_RESULT_OK);
    uint8_t key[8];
    put_be64(key, 10);
    CHECK_CODE(loader_jump(h->handle, key, 8, 1000), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].kind == LOADER_KIND_FINITE);
    CHECK(h->pending[0].direction == LOADER_DIRECTION_FORWARD);
    /* The window moves while that read is out; then it fails. */
    CHECK_CODE(loader_set_window(h->handle, 43, 20), LOADER_RESULT_OK);
    fail_oldest(h);
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started && h->npending == 1);
    /* Not the failed read (forward from key 10) again: a full read, counted as one. */
    CHECK(h->pending[0].kind == LOADER_KIND_FULL);
    loader_counts c = counts_now(h);
    CHECK(c.retries_explicit == 1 && c.retries_page == 0 && c.issued_full == 1);
    drain(h);
    CHECK(state_of(h).quiescent);
    host_free(h);
}

static void a_jump_after_a_page_failure_makes_its_retry_a_full_read(void) {
    host *h = host_new(4, 20);
    CHECK_CODE(loader_set_window(h->handle, 0, 2), LOADER_RESULT_OK);
    fail_oldest(h);
    uint8_t key[8];
    put_be64(key, 10);
    /* The loader holds nothing and owes nothing: the jump moves it at once. */
    CHECK_CODE(loader_jump(h->handle, key, 8, 0), LOADER_RESULT_OK);
    CHECK(h->npending == 0);
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started && h->npending == 1);
    /* A full read from the anchor, the jump's cursor; not a page retry. */
    CHECK(h->pending[0].kind == LOADER_KIND_FULL);
    CHECK(h->pending[0].cursor_len == 8 && get_be64(h->pending[0].cursor) == 10);
    loader_counts c = counts_now(h);
    CHECK(c.retries_page == 0 && c.issued_full == 1);
    drain(h);
    CHECK(state_of(h).quiescent);
    host_free(h);
}

/* A source of sorted values a host inserts into; a cursor is the last value read (8 bytes),
 * empty at the source's start. `val_first` keeps each acquisition's first value. */
static uint64_t vals[16];
static size_t nvals;
static uint64_t val_first[64];

/* Answers pending read `i` from `vals` (forward), with the count of the values before its
 * first one if `counted`. */
static void answer_values(host *h, size_t i, bool counted) {
    pending_read p = take(h, i);
    CHECK(p.direction == LOADER_DIRECTION_FORWARD);
    size_t from = 0;
    if (p.cursor_len == 8) {
        uint64_t after = get_be64(p.cursor);
        while (from < nvals && vals[from] <= after) from++;
    }
    size_t to = from + p.limit < nvals ? from + p.limit : nvals;
    uint8_t next[8];
    size_t next_len = 0;
    if (to > 0) {
        put_be64(next, vals[to - 1]);
        next_len = 8;
    }
    uint64_t acq = h->next_acq++;
    h->accepted[acq] = 1;
    if (to > from && acq < 64) val_first[acq] = vals[from];
    loader_answer a;
    uint32_t count = (uint32_t)(to - from);
    loader_result r = counted ? loader_settle_counted(h->handle, p.read_id, acq, count, next, next_len,
                                                      to == nvals, from, &a)
                              : loader_settle(h->handle, p.read_id, acq, count, next, next_len,
                                              to == nvals, &a);
    CHECK_CODE(r, LOADER_RESULT_OK);
}

/* A count that contradicts a view holding the source's start is ignored: the view's numbers
 * are the source's own there (loader_page.start). A full read from the empty cursor, a row
 * inserted before its second read's page and announced, that read answered with the true
 * count: the view must still number from 0. */
static void a_count_against_a_view_at_the_start_is_ignored(void) {
    host *h = host_new(4, 0);
    nvals = 10;
    for (size_t i = 0; i < nvals; i++) vals[i] = i * 10;
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK(h->npending == 2); /* the first page's read, superseded, and the full read */
    int full = find_pending(h, LOADER_KIND_FULL);
    CHECK(full >= 0);
    answer_values(h, (size_t)full, false);
    answer_values(h, 0, false); /* the superseded read: stale */
    /* A row between the first two, announced; then the full read's second read is answered
     * with the true count before its page (5). */
    memmove(&vals[2], &vals[1], (nvals - 1) * sizeof vals[0]);
    vals[1] = 5;
    nvals++;
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    CHECK(h->npending == 1);
    answer_values(h, 0, true);
    for (int guard = 0; h->npending > 0 && guard < 100; guard++) answer_values(h, 0, false);
    loader_snapshot s = state_of(h);
    CHECK(s.quiescent && s.start_of_source);
    loader_page pages[8];
    size_t n = 0;
    CHECK_CODE(loader_view(h->handle, pages, 8, &n, NULL), LOADER_RESULT_OK);
    CHECK(n > 0 && pages[0].start == 0 && val_first[pages[0].acquisition] == 0);
    host_free(h);
}

static void explain_says_why_the_loader_waits(void) {
    host *h = host_new(4, 20);
    char buf[256];
    size_t len = 0;
    CHECK_CODE(loader_explain(h->handle, buf, sizeof buf, &len), LOADER_RESULT_OK);
    CHECK(strcmp(buf, "quiescent") == 0 && len == 9);
    CHECK_CODE(loader_tick(h->handle, 1000), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 0, 4), LOADER_RESULT_OK);
    CHECK_CODE(loader_tick(h->handle, 3500), LOADER_RESULT_OK);
    CHECK_CODE(loader_explain(h->handle, buf, sizeof buf, &len), LOADER_RESULT_OK);
    CHECK(strstr(buf, "waiting for read 1 (a page, forward from the source's start, at most 4 "
                      "items, issued 2.5 s ago)") == buf);
    CHECK(strlen(buf) == len);
    char small[8];
    memset(small, 'x', sizeof small);
    size_t needed = 0;
    CHECK_CODE(loader_explain(h->handle, small, sizeof small, &needed), LOADER_RESULT_BUFFER_TOO_SMALL);
    CHECK(needed == len && strcmp(small, "waiting") == 0);
    CHECK_CODE(loader_explain(h->handle, NULL, 0, &needed), LOADER_RESULT_BUFFER_TOO_SMALL);
    CHECK(needed == len);
    CHECK_CODE(loader_explain(h->handle, NULL, 4, &needed), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_explain(h->handle, buf, sizeof buf, NULL), LOADER_RESULT_NULL_POINTER);
    /* A failed read: the sentence names it and the backoff deadline. */
    fail_oldest(h);
    bool armed = false;
    uint64_t deadline = 0;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK_CODE(loader_explain(h->handle, buf, sizeof buf, &len), LOADER_RESULT_OK);
    char want[64];
    snprintf(want, sizeof want, "backoff waits until %llu ms", (unsigned long long)deadline);
    CHECK(armed && strstr(buf, "read 1 failed\n") == buf && strstr(buf, want) != NULL);
    host_free(h);
}

static void counters_near_their_end_are_refused(void) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    loader_callbacks cb = host_callbacks(h);
    CHECK_CODE(loader_new_with_counters(&cfg, &cb, UINT64_MAX, 1, &h->handle), LOADER_RESULT_OK);
    loader_snapshot before = state_of(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_EPOCH_OVERFLOW);
    loader_snapshot after = state_of(h);
    CHECK(states_equal(&before, &after));
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    /* The id space: the last id is handed out, then the next start is refused. */
    CHECK_CODE(loader_new_with_counters(&cfg, &cb, 0, UINT64_MAX - 1, &h->handle), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].request_id == UINT64_MAX - 1);
    before = state_of(h);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_ID_OVERFLOW);
    after = state_of(h);
    CHECK(states_equal(&before, &after));
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    free(h);
}

/* ---- the bad-input table: each row a specific code, and no state change ---- */

typedef struct row {
    const char *what;
    loader_result want;
    loader_result (*call)(host *h, const pending_read *open, const pending_read *done);
} row;

static loader_result settle_with(host *h, uint64_t read_id, uint32_t count, const uint8_t *cur, size_t len) {
    loader_answer a;
    return loader_settle(h->handle, read_id, (loader_acquisition)60000, count, cur, len, false, &a);
}
static loader_result r_unknown(host *h, const pending_read *o, const pending_read *d) {
    (void)o; (void)d;
    return settle_with(h, 999999, 1, (const uint8_t *)"12345678", 8);
}
static loader_result r_unknown_fail(host *h, const pending_read *o, const pending_read *d) {
    (void)o; (void)d;
    return loader_fail(h->handle, 0, 1, NULL);
}
static loader_result r_second(host *h, const pending_read *o, const pending_read *d) {
    (void)o;
    return settle_with(h, d->read_id, 1, (const uint8_t *)"12345678", 8);
}
static loader_result r_fail_after_settle(host *h, const pending_read *o, const pending_read *d) {
    (void)o;
    return loader_fail(h->handle, d->read_id, 1, NULL);
}
static loader_result r_count(host *h, const pending_read *o, const pending_read *d) {
    (void)d;
    return settle_with(h, o->read_id, o->limit + 1, (const uint8_t *)"12345678", 8);
}
static loader_result r_null_cursor(host *h, const pending_read *o, const pending_read *d) {
    (void)d;
    return settle_with(h, o->read_id, 1, NULL, 8);
}
static loader_result r_long_cursor(host *h, const pending_read *o, const pending_read *d) {
    static uint8_t big[LOADER_MAX_CURSOR_LEN + 1];
    (void)d;
    return settle_with(h, o->read_id, 1, big, sizeof big);
}
static loader_result r_state_null(host *h, const pending_read *o, const pending_read *d) {
    (void)o; (void)d;
    return loader_state(h->handle, NULL);
}
static loader_result r_requests_null_len(host *h, const pending_read *o, const pending_read *d) {
    loader_request_info r[8];
    (void)o; (void)d;
    return loader_requests(h->handle, r, 8, NULL);
}
static loader_result r_requests_null_array(host *h, const pending_read *o, const pending_read *d) {
    size_t n;
    (void)o; (void)d;
    return loader_requests(h->handle, NULL, 8, &n);
}
static loader_result r_view_null_len(host *h, const pending_read *o, const pending_read *d) {
    loader_page p[8];
    (void)o; (void)d;
    return loader_view(h->handle, p, 8, NULL, NULL);
}
static loader_result r_deadline_null(host *h, const pending_read *o, const pending_read *d) {
    uint64_t t;
    (void)o; (void)d;
    return loader_next_deadline(h->handle, NULL, &t);
}
static loader_result r_window_overflow(host *h, const pending_read *o, const pending_read *d) {
    (void)o; (void)d;
    return loader_set_window(h->handle, UINT64_MAX - 3, 4);
}
static loader_result r_requests_small(host *h, const pending_read *o, const pending_read *d) {
    loader_request_info r[1];
    size_t n = 0;
    (void)o; (void)d;
    loader_result res = loader_requests(h->handle, r, 1, &n);
    if (res == LOADER_RESULT_BUFFER_TOO_SMALL && n != 2) return LOADER_RESULT_OK; /* wrong length */
    return res;
}
static loader_result r_view_small(host *h, const pending_read *o, const pending_read *d) {
    loader_page p[1];
    size_t n = 0;
    (void)o; (void)d;
    loader_result res = loader_view(h->handle, p, 0, &n, NULL);
    if (res == LOADER_RESULT_BUFFER_TOO_SMALL && n != 1) return LOADER_RESULT_OK;
    return res;
}

static const row bad_input[] = {
    {"an unknown read id", LOADER_RESULT_UNKNOWN_READ, r_unknown},
    {"a failure for read 0", LOADER_RESULT_UNKNOWN_READ, r_unknown_fail},
    {"a second answer", LOADER_RESULT_ALREADY_ANSWERED, r_second},
    {"fail after settle", LOADER_RESULT_ALREADY_ANSWERED, r_fail_after_settle},
    {"count > limit", LOADER_RESULT_COUNT_OVER_LIMIT, r_count},
    {"a NULL cursor with a non-zero length", LOADER_RESULT_NULL_CURSOR, r_null_cursor},
    {"an oversize cursor", LOADER_RESULT_CURSOR_TOO_LONG, r_long_cursor},
    {"loader_state(NULL)", LOADER_RESULT_NULL_POINTER, r_state_null},
    {"loader_requests with NULL out_len", LOADER_RESULT_NULL_POINTER, r_requests_null_len},
    {"loader_requests with a NULL array", LOADER_RESULT_NULL_POINTER, r_requests_null_array},
    {"loader_view with NULL out_len", LOADER_RESULT_NULL_POINTER, r_view_null_len},
    {"loader_next_deadline with NULL out_armed", LOADER_RESULT_NULL_POINTER, r_deadline_null},
    {"a window overflow", LOADER_RESULT_WINDOW_OVERFLOW, r_window_overflow},
    {"loader_requests capacity too small", LOADER_RESULT_BUFFER_TOO_SMALL, r_requests_small},
    {"loader_view capacity too small", LOADER_RESULT_BUFFER_TOO_SMALL, r_view_small},
};

static void bad_input_table(void) {
    for (size_t i = 0; i < sizeof bad_input / sizeof bad_input[0]; i++) {
        /* One page settled (read `done`), one read open (`open`): two live requests. */
        host *h = host_new(4, 40);
        loader_set_window(h->handle, 0, 4);
        pending_read done = take(h, 0);
        answer(h, &done);
        loader_set_window(h->handle, 0, 8);
        pending_read open = h->pending[0];
        loader_snapshot before = state_of(h);
        int issues = h->issues, changes = h->changes, cancels = h->cancels;
        loader_result got = bad_input[i].call(h, &open, &done);
        if (got != bad_input[i].want) {
            fprintf(stderr, "  row \"%s\": got %d (%s), wanted %d\n", bad_input[i].what, (int)got,
                    loader_result_str((int)got), (int)bad_input[i].want);
            current_failed = 1;
        }
        loader_snapshot after = state_of(h);
        if (!states_equal(&before, &after) || h->issues != issues || h->changes != changes ||
            h->cancels != cancels) {
            fprintf(stderr, "  row \"%s\": the state or the callbacks changed\n", bad_input[i].what);
            current_failed = 1;
        }
        /* The refused acquisition 60000 stays the host's: it must never be released. */
        CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
        CHECK(h->released[60000] == 0 && h->bad_releases == 0);
        CHECK(released_exactly_once(h));
        free(h);
    }
}

/* Settle after fail is its own row: the read must have failed first. */
static void settle_after_fail_is_refused(void) {
    host *h = host_new(4, 40);
    loader_set_window(h->handle, 0, 4);
    pending_read p = take(h, 0);
    CHECK_CODE(loader_fail(h->handle, p.read_id, 1, NULL), LOADER_RESULT_OK);
    loader_snapshot before = state_of(h);
    CHECK_CODE(settle_with(h, p.read_id, 1, (const uint8_t *)"12345678", 8), LOADER_RESULT_ALREADY_ANSWERED);
    loader_snapshot after = state_of(h);
    CHECK(states_equal(&before, &after));
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(h->released[60000] == 0 && released_exactly_once(h));
    free(h);
}

static void cursors_of_zero_and_maximum_length_are_accepted(void) {
    host *h = host_new(4, 40);
    loader_set_window(h->handle, 0, 8);
    static uint8_t max[LOADER_MAX_CURSOR_LEN];
    memset(max, 0xab, sizeof max);
    pending_read p = take(h, 0);
    loader_answer a;
    h->accepted[1] = 1;
    CHECK_CODE(loader_settle(h->handle, p.read_id, 1, 4, max, sizeof max, false, &a), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->pending[0].cursor_len == LOADER_MAX_CURSOR_LEN);
    CHECK(memcmp(h->pending[0].cursor, max, sizeof max) == 0);
    p = take(h, 0);
    h->accepted[2] = 1;
    CHECK_CODE(loader_settle(h->handle, p.read_id, 2, 0, NULL, 0, true, &a), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(s.end_of_source && s.covered_end == 4);
    host_free(h);
}

/* ---- panics ---- */

static void a_panic_is_caught_and_poisons_the_handle(void) {
    host *h = host_new(4, 40);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    CHECK_CODE(loader_test_panic(h->handle), LOADER_RESULT_PANIC);
    loader_snapshot s = {.struct_size = sizeof s};
    CHECK_CODE(loader_state(h->handle, &s), LOADER_RESULT_POISONED);
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_POISONED);
    CHECK_CODE(loader_test_panic(h->handle), LOADER_RESULT_POISONED);
    CHECK(strstr(loader_result_str(LOADER_RESULT_POISONED), "poisoned") != NULL);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(released_exactly_once(h)); /* free still hands back what it held */
    free(h);
}

/* ---- reentrancy ---- */

static void settle_now(host *h) {
    if (h->npending == 0) return;
    pending_read p = take(h, h->npending - 1);
    answer(h, &p);
}

static void an_issue_callback_may_settle_synchronously(void) {
    host *h = host_new(1, 5000);
    h->on_issue = settle_now;
    /* 5000 one-item reads, each settled inside the issue callback of the one before: the
     * queue keeps the stack flat. */
    CHECK_CODE(loader_set_window(h->handle, 0, 5000), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(s.covered_end == 5000 && s.pages == 5000 && s.outstanding_reads == 0);
    /* A repair, still synchronous. */
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_OK);
    s = state_of(h);
    CHECK(!s.revalidating && s.coverage == LOADER_COVERAGE_CHAIN && s.covered_end == 5000);
    host_free(h);
}

static void fail_now(host *h) {
    if (h->npending == 0) return;
    pending_read p = take(h, h->npending - 1);
    CHECK_CODE(loader_fail(h->handle, p.read_id, 3, NULL), LOADER_RESULT_OK);
}

static void an_issue_callback_may_fail_synchronously(void) {
    host *h = host_new(4, 40);
    h->on_issue = fail_now;
    CHECK_CODE(loader_set_window(h->handle, 0, 8), LOADER_RESULT_OK);
    loader_snapshot s = state_of(h);
    CHECK(s.failure == LOADER_FAILURE_OWN && s.outstanding_reads == 0);
    h->on_issue = NULL;
    bool started = false;
    CHECK_CODE(loader_retry(h->handle, &started), LOADER_RESULT_OK);
    CHECK(started);
    drain(h);
    s = state_of(h);
    CHECK(s.failure == LOADER_FAILURE_NONE && s.covered_end >= 8);
    host_free(h);
}

static void call_back_in(host *h) {
    loader_snapshot s = {.struct_size = sizeof s};
    loader_result r = loader_state(h->handle, &s);
    CHECK(r == LOADER_RESULT_OK || r == LOADER_RESULT_STALE_HANDLE);
    r = loader_set_window(h->handle, 0, 6);
    CHECK(r == LOADER_RESULT_OK || r == LOADER_RESULT_STALE_HANDLE);
}

static void a_release_callback_may_call_back_in(void) {
    host *h = host_new(2, 40);
    h->on_release = call_back_in;
    loader_set_window(h->handle, 0, 6);
    drain(h);
    loader_invalidate(h->handle); /* the repair's commit releases the old pages */
    drain(h);
    loader_snapshot s = state_of(h);
    CHECK(!s.revalidating && s.released > 0);
    host_free(h);
}

static void free_self(host *h) {
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    /* After free returns, every acquisition is back: the host may drop its state now. */
    CHECK(released_exactly_once(h));
}

/* `which`: 0 frees inside `issue`, 1 inside `release`, 2 inside `changed`. */
static void free_inside(int which) {
    host *h = host_new(2, 40);
    loader_set_window(h->handle, 0, 4);
    drain(h);
    if (which == 0) h->on_issue = free_self;
    if (which == 1) h->on_release = free_self;
    if (which == 2) h->on_changed = free_self;
    loader_result r = loader_set_window(h->handle, 0, 10); /* issues, changes */
    CHECK(r == LOADER_RESULT_OK);
    if (which == 1) {
        /* a release needs a repair commit */
        r = loader_invalidate(h->handle);
        CHECK(r == LOADER_RESULT_OK || r == LOADER_RESULT_STALE_HANDLE);
        drain(h);
    }
    CHECK_CODE(loader_invalidate(h->handle), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_STALE_HANDLE);
    /* answers to its reads are refused cleanly */
    for (size_t i = 0; i < h->npending; i++) CHECK(answer(h, &h->pending[i]) == LOADER_RESULT_STALE_HANDLE);
    CHECK(released_exactly_once(h));
    free(h);
}

static void a_callback_may_free_its_own_loader(void) {
    free_inside(0);
    free_inside(1);
    free_inside(2);
}

int main(void) {
    RUN(version_matches_cargo_toml);
    RUN(every_result_code_has_a_distinct_message);
    RUN(config_defaults_and_bad_configs);
    RUN(null_forged_freed_and_double_freed_handles_are_errors);
    RUN(loads_the_window_and_frees_everything);
    RUN(the_seed_trace_does_not_strand_a_superseded_failure);
    RUN(an_invalidation_during_a_full_read_is_not_lost);
    RUN(own_failures_arm_the_backoff_timer);
    RUN(a_window_move_while_a_page_read_is_out_makes_its_retry_a_full_read);
    RUN(a_jump_after_a_page_failure_makes_its_retry_a_full_read);
    RUN(a_count_against_a_view_at_the_start_is_ignored);
    RUN(explain_says_why_the_loader_waits);
    RUN(counters_near_their_end_are_refused);
    RUN(bad_input_table);
    RUN(settle_after_fail_is_refused);
    RUN(cursors_of_zero_and_maximum_length_are_accepted);
    RUN(a_panic_is_caught_and_poisons_the_handle);
    RUN(an_issue_callback_may_settle_synchronously);
    RUN(an_issue_callback_may_fail_synchronously);
    RUN(a_release_callback_may_call_back_in);
    RUN(a_callback_may_free_its_own_loader);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed ? 1 : 0;
}
