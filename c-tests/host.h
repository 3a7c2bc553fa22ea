/* A test host for libloader: an in-memory source of numbered items, a queue of pending
 * reads, and a counter per acquisition so exactly-once release can be checked.
 * A cursor is the 8-byte big-endian index of the next item; empty is the source's start.
 * Cursors are positions between items: a forward read returns the items after its cursor, a
 * backward read those before it (see read_span), and a bounded read (`until`) only those
 * before its `until` cursor. Such cursors are offsets, not stable under inserts: the ranged
 * tests (ranged.c) answer from a keyed source instead, with this file's queue. */
#ifndef LOADER_TEST_HOST_H
#define LOADER_TEST_HOST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "loader.h"

#define MAX_PENDING 256
#define MAX_ACQ 65536

static int tests_passed;
static int tests_failed;
static int current_failed;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            current_failed = 1;                                                     \
        }                                                                           \
    } while (0)

#define CHECK_CODE(expr, want)                                                      \
    do {                                                                            \
        loader_result got_ = (expr);                                                \
        if (got_ != (want)) {                                                       \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), wanted %s\n", __FILE__,   \
                    __LINE__, #expr, (int)got_, loader_result_str((int)got_), #want); \
            current_failed = 1;                                                     \
        }                                                                           \
    } while (0)

#define RUN(test)                                                 \
    do {                                                          \
        current_failed = 0;                                       \
        test();                                                   \
        if (current_failed) {                                     \
            tests_failed++;                                       \
            fprintf(stderr, "FAIL %s\n", #test);                  \
        } else {                                                  \
            tests_passed++;                                       \
            printf("ok   %s\n", #test);                           \
        }                                                         \
    } while (0)

typedef struct pending_read {
    uint64_t read_id;
    uint64_t request_id;
    loader_kind kind;
    uint32_t step;
    uint8_t cursor[LOADER_MAX_CURSOR_LEN];
    size_t cursor_len;
    uint32_t limit;
    loader_direction direction;
    /* A bounded read: `until` (copied) is valid; otherwise unbounded. */
    bool bounded;
    uint8_t until[LOADER_MAX_CURSOR_LEN];
    size_t until_len;
} pending_read;

typedef struct host host;
typedef void (*hook_fn)(host *h);

struct host {
    loader_handle handle;
    pending_read pending[MAX_PENDING];
    size_t npending;
    uint64_t source_len;
    uint64_t next_acq;
    unsigned char accepted[MAX_ACQ];
    unsigned char released[MAX_ACQ];
    int bad_releases;
    int issues, changes, cancels;
    /* Reentrancy: called from inside the named callback. */
    hook_fn on_issue, on_release, on_changed;
    int in_hook;
};

static uint64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
}

/* What a read of `limit` items from the cursor at index `at` answers in a source of `len`
 * items: the items [from, to), the index of its next cursor, and whether it reached the end
 * it reads towards (the source's end forward, its start backward). */
typedef struct read_span {
    uint64_t from, to, next;
    bool reached_end;
} read_span;

static inline read_span span_of(uint64_t at, uint32_t limit, loader_direction direction, uint64_t len) {
    read_span s;
    if (direction == LOADER_DIRECTION_BACKWARD) {
        s.to = at < len ? at : len;
        s.from = s.to > limit ? s.to - limit : 0;
        s.next = s.from; /* just before the first item returned */
        s.reached_end = s.from == 0;
    } else {
        s.from = at;
        s.to = at + limit < len ? at + limit : len;
        s.next = s.to;
        s.reached_end = s.to == len;
    }
    return s;
}

/* Writes the cursor for index `next` to `out` and returns its length: empty for the source's
 * start reached by a backward read, 8 bytes otherwise. */
static inline size_t cursor_for(uint8_t out[8], uint64_t next, loader_direction direction) {
    if (direction == LOADER_DIRECTION_BACKWARD && next == 0) return 0;
    put_be64(out, next);
    return 8;
}

static void cb_issue(void *userdata, const loader_read *read) {
    host *h = (host *)userdata;
    h->issues++;
    if (h->npending < MAX_PENDING) {
        pending_read *p = &h->pending[h->npending++];
        p->read_id = read->read_id;
        p->request_id = read->request_id;
        p->kind = read->kind;
        p->step = read->step;
        p->cursor_len = read->cursor_len;
        if (read->cursor_len) memcpy(p->cursor, read->cursor, read->cursor_len);
        p->limit = read->limit;
        p->direction = read->direction;
        p->bounded = read->until != NULL;
        p->until_len = read->until_len;
        if (read->until && read->until_len) memcpy(p->until, read->until, read->until_len);
    }
    if (h->on_issue && !h->in_hook) {
        h->in_hook = 1;
        h->on_issue(h);
        h->in_hook = 0;
    }
}

static void cb_release(void *userdata, loader_acquisition acquisition) {
    host *h = (host *)userdata;
    if (acquisition >= MAX_ACQ || !h->accepted[acquisition] || h->released[acquisition]) {
        h->bad_releases++;
    } else {
        h->released[acquisition] = 1;
    }
    if (h->on_release && !h->in_hook) {
        h->in_hook = 1;
        h->on_release(h);
        h->in_hook = 0;
    }
}

static void cb_changed(void *userdata) {
    host *h = (host *)userdata;
    h->changes++;
    if (h->on_changed && !h->in_hook) {
        h->in_hook = 1;
        h->on_changed(h);
        h->in_hook = 0;
    }
}

static void cb_cancel(void *userdata, uint64_t read_id) {
    (void)read_id;
    ((host *)userdata)->cancels++;
}

static loader_callbacks host_callbacks(host *h) {
    loader_callbacks cb = {.struct_size = sizeof cb};
    cb.userdata = h;
    cb.issue = cb_issue;
    cb.release = cb_release;
    cb.changed = cb_changed;
    cb.cancel = cb_cancel;
    return cb;
}

/* A host and a loader with `page_size` and no prefetch over a source of `len` items. */
static inline host *host_new(uint32_t page_size, uint64_t len) {
    host *h = (host *)calloc(1, sizeof(host));
    loader_config cfg = {.struct_size = sizeof cfg};
    loader_config_default(&cfg);
    cfg.page_size = page_size;
    cfg.prefetch_distance = 0;
    h->source_len = len;
    h->next_acq = 1;
    loader_callbacks cb = host_callbacks(h);
    if (loader_new(&cfg, &cb, &h->handle) != LOADER_RESULT_OK) {
        fprintf(stderr, "loader_new failed\n");
        exit(2);
    }
    return h;
}

/* Removes pending read `i` and returns it. */
static pending_read take(host *h, size_t i) {
    pending_read p = h->pending[i];
    h->pending[i] = h->pending[--h->npending];
    return p;
}

static inline int find_pending(host *h, loader_kind kind) {
    for (size_t i = 0; i < h->npending; i++)
        if (h->pending[i].kind == kind) return (int)i;
    return -1;
}

/* Answers `p` from the source with success, in its direction; returns the library's result. */
static loader_result answer(host *h, const pending_read *p) {
    uint64_t at = p->cursor_len == 8 ? get_be64(p->cursor) : 0;
    read_span s = span_of(at, p->limit, p->direction, h->source_len);
    if (p->bounded && p->direction == LOADER_DIRECTION_FORWARD) {
        /* Only the items before `until`: fewer than limit says it was reached. */
        uint64_t until = p->until_len == 8 ? get_be64(p->until) : 0;
        if (s.to > until) s.to = until > s.from ? until : s.from;
        s.next = s.to;
        s.reached_end = s.to == h->source_len;
    }
    uint8_t next[8];
    size_t next_len = cursor_for(next, s.next, p->direction);
    uint64_t acq = h->next_acq++;
    loader_answer a;
    /* Marked before the call: the loader may release it before loader_settle returns. */
    if (acq < MAX_ACQ) h->accepted[acq] = 1;
    loader_result r = loader_settle(h->handle, p->read_id, (loader_acquisition)acq, (uint32_t)(s.to - s.from),
                                    next, next_len, s.reached_end, &a);
    if (r != LOADER_RESULT_OK && acq < MAX_ACQ) h->accepted[acq] = 0;
    return r;
}

/* Answers pending reads, oldest first by slot, until none is left. */
/* Fails the oldest outstanding read (an own failure); the loader takes it as current. */
static inline void fail_oldest(host *h) {
    pending_read p = take(h, 0);
    loader_answer a;
    CHECK_CODE(loader_fail(h->handle, p.read_id, 1, &a), LOADER_RESULT_OK);
    CHECK(a == LOADER_ANSWER_CURRENT);
}

static inline void drain(host *h) {
    int guard = 0;
    while (h->npending > 0 && guard++ < 100000) {
        pending_read p = take(h, 0);
        answer(h, &p);
    }
}

/* Every accepted acquisition released exactly once, none that was not accepted. */
static int released_exactly_once(host *h) {
    if (h->bad_releases) return 0;
    for (uint64_t i = 0; i < MAX_ACQ; i++)
        if (h->accepted[i] != h->released[i]) return 0;
    return 1;
}

/* Frees the loader, then the host: every acquisition it accepted came back exactly once. */
static inline void host_free(host *h) {
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_OK);
    CHECK(released_exactly_once(h));
    free(h);
}

static inline int states_equal(const loader_snapshot *a, const loader_snapshot *b) {
    return a->epoch == b->epoch && a->debt == b->debt && a->phase == b->phase &&
           a->chain_epoch == b->chain_epoch && a->failure == b->failure &&
           a->coverage == b->coverage && a->settled_once == b->settled_once &&
           a->cover_epoch == b->cover_epoch && a->inflight == b->inflight &&
           a->settled == b->settled && a->failed == b->failed &&
           a->next_request_id == b->next_request_id && a->pages == b->pages &&
           a->outstanding_reads == b->outstanding_reads &&
           a->revalidating == b->revalidating && a->end_of_source == b->end_of_source &&
           a->covered_start == b->covered_start && a->covered_end == b->covered_end &&
           a->window_start == b->window_start && a->window_len == b->window_len &&
           a->accepted == b->accepted && a->released == b->released &&
           a->quiescent == b->quiescent && a->start_of_source == b->start_of_source;
}

static loader_snapshot state_of(host *h) {
    loader_snapshot s = {.struct_size = sizeof s};
    if (loader_state(h->handle, &s) != LOADER_RESULT_OK) current_failed = 1;
    return s;
}

#endif
