/*
 * loader_testing.h: a tester for a C host's load function, header-only.
 *
 * A host's read code (the code its `issue` callback runs: one page of the source from a
 * cursor) is where the host contract goes wrong: directions, `until`, end flags, empty pages,
 * cursors that must advance. loader_test_load drives such a function, alone, through the
 * contract's cases against a reference of what the source holds, and reports each violation
 * in a sentence. It is header-only so that it calls the host's function directly from the
 * host's own test program: no library symbol, no build step, no plugin loading (a program
 * would have to load the host's function from a plugin). Its functions are `static inline`.
 *
 * The load function's shape: it reads as `issue`'s read asks (loader_read's cursor, limit,
 * direction and until) and writes the keys of the items it read, in source order, into
 * `out->keys` (room for `limit`), and the answer's `next_cursor` and `end_of_source`:
 *
 *     int my_load(void *ctx, const uint8_t *cursor, size_t cursor_len, uint32_t limit,
 *                 loader_direction direction, const uint8_t *until, size_t until_len,
 *                 loader_test_answer *out);
 *
 * It returns 0, or non-zero for a failed read (reported, not retried). `until` is NULL for an
 * unbounded read. Keys are the host's own int64_t per item (a row id, a sort key); the
 * reference lists them in source order. The cursors are the load's own: the tester learns
 * them from a forward walk one item at a time, and passes them back.
 *
 * The cases, each with limits 1, 2 and 3: forward from the start to the end (the items in
 * order, cursors that advance and never repeat, end_of_source at the end and not before);
 * forward from the cursor before every item; backward from every such cursor (the items just
 * before it in source order, next_cursor the cursor before the first, empty with
 * end_of_source at the start); bounded by `until` between every two cursors (only the items
 * up to `until`, and `until` itself as next_cursor once the scan reaches it, and
 * end_of_source only when no item at all lies after the last one it returned: reaching
 * `until` is not the source's end); with a `delete_key` hook, an empty bounded read over the
 * gap a deleted item leaves, which must answer `until`, never its own cursor (that is a
 * stalled cursor to the loader); and, with a `locate` callback (the one given to loader_new),
 * every position from 0 to the end: the cursor it writes must be the one before the item at
 * that position (a forward read of 1 from it returns that item; at the end, nothing and
 * end_of_source), or it answers LOADER_LOCATE_UNKNOWN.
 *
 *     loader_test_options o = {.reference = keys, .reference_len = n, .load = my_load,
 *                              .ctx = &db, .report = NULL};       // NULL: print to stderr
 *     size_t violations = loader_test_load(&o);
 *
 * A feed's load (loader_load_fn, the function loader_feed_config.load names) is tested as it
 * is, with loader_test_feed_load: give it the load and its userdata, the feed's `release`,
 * and a `keys` function that writes the keys of the items a page's acquisition holds. Each
 * page a load returns has its keys read, then goes to `release` at once, exactly once; a
 * NULL `next_cursor` with a length is reported, as is a page over its limit (both bugs the
 * feed would report from loader_feed_wait_quiescent).
 *
 *     loader_test_feed_options o = {.reference = keys, .reference_len = n, .load = my_load,
 *                                   .userdata = &db, .keys = my_keys, .release = my_release};
 *     size_t violations = loader_test_feed_load(&o);
 *
 * Not part of the library's ABI; it uses only loader.h's types.
 */
#ifndef LOADER_TESTING_H
#define LOADER_TESTING_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a load writes: `count` keys (at most the read's limit) into `keys`, which has room for
 * the limit, and the answer's cursor and end flag. */
typedef struct loader_test_answer {
    int64_t *keys;
    uint32_t count;
    uint8_t next_cursor[LOADER_MAX_CURSOR_LEN];
    size_t next_cursor_len;
    bool end_of_source;
} loader_test_answer;

typedef int (*loader_test_load_fn)(void *ctx, const uint8_t *cursor, size_t cursor_len,
                                   uint32_t limit, loader_direction direction,
                                   const uint8_t *until, size_t until_len,
                                   loader_test_answer *out);

typedef struct loader_test_options {
    /* What the source holds, in source order. */
    const int64_t *reference;
    size_t reference_len;
    /* The load function, and the pointer it gets first. */
    loader_test_load_fn load;
    void *ctx;
    /* Optional: deletes the item with `key` from the source `load` reads (returns 0), to try
     * an empty bounded read over the gap; the source changes, so give the tester a copy. */
    int (*delete_key)(void *ctx, int64_t key);
    /* Optional: gets each violation, a sentence; NULL prints each to stderr. */
    void (*report)(void *report_ctx, const char *sentence);
    void *report_ctx;
    /* Optional: whether the load reads bounded (`until`) reads; false skips those cases. */
    bool no_until;
    /* Optional: the host's `locate` callback (loader_callbacks.locate), called with `ctx`;
     * NULL skips those cases. */
    loader_locate_fn locate;
} loader_test_options;

/* ---- the implementation ---- */

typedef struct loader_test__run {
    const loader_test_options *o;
    size_t found;
    size_t told[10];
    /* cursors[i]: the cursor before item i (cursors[n]: after the last). */
    uint8_t *cursors;
    size_t *cursor_lens;
    int64_t keys[4];
    loader_test_answer a;
} loader_test__run;

enum { LOADER_TEST__MAX_LIMIT = 3, LOADER_TEST__PER_KIND = 3 };

static inline void loader_test__say(loader_test__run *r, unsigned kind, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline void loader_test__say(loader_test__run *r, unsigned kind, const char *fmt, ...) {
    char line[512];
    va_list ap;
    r->found++;
    if (r->told[kind]++ >= LOADER_TEST__PER_KIND) return; /* counted, not told again */
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->o->report != NULL)
        r->o->report(r->o->report_ctx, line);
    else
        fprintf(stderr, "load contract: %s\n", line);
}

static inline const char *loader_test__way(loader_direction d) {
    return d == LOADER_DIRECTION_BACKWARD ? "backward" : "forward";
}

/* Calls the load; false (reported) when it failed or broke its limit. */
static inline bool loader_test__call(loader_test__run *r, const uint8_t *c, size_t cl, uint32_t limit,
                              loader_direction d, const uint8_t *u, size_t ul) {
    memset(&r->a, 0, sizeof r->a);
    r->a.keys = r->keys;
    int rc = r->o->load(r->o->ctx, c, cl, limit, d, u, ul, &r->a);
    if (rc != 0) {
        loader_test__say(r, 0, "a %s read of %u from a %zu-byte cursor%s failed (%d)",
                         loader_test__way(d), limit, cl, u ? " with until" : "", rc);
        return false;
    }
    if (r->a.count > limit || r->a.next_cursor_len > LOADER_MAX_CURSOR_LEN) {
        loader_test__say(r, 0, "a %s read of %u returned %u items, more than its limit",
                         loader_test__way(d), limit, r->a.count);
        return false;
    }
    return true;
}

static inline bool loader_test__same(const int64_t *a, const int64_t *b, size_t n) {
    return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

static inline const uint8_t *loader_test__cur(loader_test__run *r, size_t i) {
    return r->cursors + i * LOADER_MAX_CURSOR_LEN;
}

/* Reads forward one item at a time from the start, keeping each cursor. */
static inline bool loader_test__walk(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len, got = 0;
    uint8_t cursor[LOADER_MAX_CURSOR_LEN];
    size_t cl = 0;
    r->cursor_lens[0] = 0;
    for (size_t step = 0; step < n + 3; step++) {
        if (!loader_test__call(r, cursor, cl, 1, LOADER_DIRECTION_FORWARD, NULL, 0)) return false;
        loader_test_answer *a = &r->a;
        bool unmoved = a->next_cursor_len == cl && memcmp(a->next_cursor, cursor, cl) == 0;
        if (a->count == 1 && (got >= n || a->keys[0] != ref[got])) {
            loader_test__say(r, 1, "reading forward one at a time, item %zu came back as key "
                             "%lld; the source holds %s%lld there", got,
                             (long long)a->keys[0], got < n ? "key " : "nothing: ",
                             got < n ? (long long)ref[got] : 0LL);
            return false;
        }
        if (unmoved && (a->count > 0 || !a->end_of_source)) {
            loader_test__say(r, 2, "a forward read after %zu items returned %u items and "
                             "next_cursor equal to its own cursor: the cursor never advances, "
                             "so the loader sees a stalled cursor and cannot move past it",
                             got, a->count);
            return false;
        }
        for (size_t k = 0; k < got && a->count > 0; k++) {
            if (r->cursor_lens[k + 1] == a->next_cursor_len &&
                memcmp(loader_test__cur(r, k + 1), a->next_cursor, a->next_cursor_len) == 0) {
                loader_test__say(r, 2, "a forward read after %zu items returned the cursor an "
                                 "earlier read returned after %zu: the walk goes round in "
                                 "circles", got, k + 1);
                return false;
            }
        }
        got += a->count;
        memcpy(cursor, a->next_cursor, a->next_cursor_len);
        cl = a->next_cursor_len;
        if (a->count == 1) {
            memcpy(r->cursors + got * LOADER_MAX_CURSOR_LEN, cursor, cl);
            r->cursor_lens[got] = cl;
        }
        if (a->end_of_source) {
            if (got < n) {
                loader_test__say(r, 3, "a forward read claimed end_of_source with %zu items of "
                                 "the source still unread (key %lld next)", n - got,
                                 (long long)ref[got]);
                return false;
            }
            return true;
        }
    }
    loader_test__say(r, 3, "reading forward one at a time never reached end_of_source after "
                     "%zu reads", n + 3);
    return false;
}

static inline void loader_test__backward(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len;
    for (size_t i = 0; i <= n; i++) {
        for (uint32_t limit = 1; limit <= LOADER_TEST__MAX_LIMIT; limit++) {
            if (!loader_test__call(r, loader_test__cur(r, i), r->cursor_lens[i], limit,
                                   LOADER_DIRECTION_BACKWARD, NULL, 0))
                continue;
            loader_test_answer *a = &r->a;
            size_t lo = i > limit ? i - limit : 0;
            if (a->count != i - lo || !loader_test__same(a->keys, ref + lo, i - lo)) {
                bool after = i + a->count <= n && a->count > 0 &&
                             loader_test__same(a->keys, ref + i, a->count);
                loader_test__say(r, 4, "a backward read of %u from the cursor before item %zu "
                                 "returned %u items starting at key %lld%s; it should return "
                                 "the %zu items just before the cursor, from key %lld", limit,
                                 i, a->count, a->count ? (long long)a->keys[0] : 0LL,
                                 after ? " (the items AFTER the cursor: a backward read "
                                         "returns the ones just before it, in source order)"
                                       : "",
                                 i - lo, i > lo ? (long long)ref[lo] : 0LL);
                continue;
            }
            bool at_start = lo == 0;
            if (a->end_of_source != at_start && (at_start || a->count > 0))
                loader_test__say(r, 5, "a backward read of %u from the cursor before item %zu "
                                 "returned end_of_source %s, but the source's start %s reached",
                                 limit, i, a->end_of_source ? "true" : "false",
                                 at_start ? "was" : "was not");
            else if (a->count > 0 && !at_start &&
                     (a->next_cursor_len != r->cursor_lens[lo] ||
                      memcmp(a->next_cursor, loader_test__cur(r, lo), a->next_cursor_len) != 0))
                loader_test__say(r, 5, "a backward read of %u from the cursor before item %zu "
                                 "returned a next_cursor that is not the cursor before its "
                                 "first item (key %lld) a forward read returns", limit, i,
                                 (long long)a->keys[0]);
            else if (at_start && a->end_of_source && a->next_cursor_len != 0)
                loader_test__say(r, 5, "a backward read of %u reached the source's start, and "
                                 "its next_cursor is %zu bytes, not empty (the start)", limit,
                                 a->next_cursor_len);
        }
    }
}

static inline void loader_test__forward(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len;
    for (size_t i = 0; i <= n; i++) {
        for (uint32_t limit = 1; limit <= LOADER_TEST__MAX_LIMIT; limit++) {
            const uint8_t *c = loader_test__cur(r, i);
            size_t cl = r->cursor_lens[i];
            if (!loader_test__call(r, c, cl, limit, LOADER_DIRECTION_FORWARD, NULL, 0)) continue;
            loader_test_answer *a = &r->a;
            size_t hi = i + limit < n ? i + limit : n;
            if (a->count != hi - i || !loader_test__same(a->keys, ref + i, hi - i)) {
                loader_test__say(r, 1, "a forward read of %u from the cursor before item %zu "
                                 "returned %u items; the source holds %zu there", limit, i,
                                 a->count, hi - i);
                continue;
            }
            if (a->end_of_source && hi < n)
                loader_test__say(r, 3, "a forward read of %u from the cursor before item %zu "
                                 "claimed end_of_source with %zu items after it", limit, i,
                                 n - hi);
            if (a->count == 0 && !a->end_of_source && a->next_cursor_len == cl &&
                memcmp(a->next_cursor, c, cl) == 0)
                loader_test__say(r, 2, "a forward read at the source's end returned no items, "
                                 "its own cursor and no end_of_source: a stalled cursor (say "
                                 "end_of_source)");
        }
    }
}

static inline void loader_test__bounded(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len;
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i + 1; j <= n; j++) {
            for (uint32_t limit = 1; limit <= LOADER_TEST__MAX_LIMIT; limit++) {
                const uint8_t *u = loader_test__cur(r, j);
                size_t ul = r->cursor_lens[j];
                if (!loader_test__call(r, loader_test__cur(r, i), r->cursor_lens[i], limit,
                                       LOADER_DIRECTION_FORWARD, u, ul))
                    continue;
                loader_test_answer *a = &r->a;
                size_t hi = i + limit < j ? i + limit : j;
                if (a->count != hi - i || !loader_test__same(a->keys, ref + i, hi - i)) {
                    loader_test__say(r, 6, "a read of %u bounded by until (the cursor after "
                                     "item %zu) from the cursor before item %zu returned %u "
                                     "items; it should return %zu, up to until only", limit,
                                     j - 1, i, a->count, hi - i);
                    continue;
                }
                if (hi == j && hi - i < limit &&
                    (a->next_cursor_len != ul || memcmp(a->next_cursor, u, ul) != 0))
                    loader_test__say(r, 6, "a read of %u bounded by until reached until and "
                                     "returned a next_cursor that is not until", limit);
                if (a->end_of_source && hi < n)
                    loader_test__say(r, 8, "a read of %u bounded by until (the cursor after "
                                     "item %zu) from the cursor before item %zu claimed "
                                     "end_of_source with %zu items after the last it "
                                     "returned: on a bounded read end_of_source says no item "
                                     "at all lies after the last one looked at, not that "
                                     "until was reached (a short page says that); the loader "
                                     "would end the view there and lose them", limit, j - 1,
                                     i, n - hi);
            }
        }
    }
}

/* Asks `locate` for every position: the cursor before that item, or unknown. */
static inline void loader_test__locate(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len;
    static uint8_t c[LOADER_MAX_CURSOR_LEN];
    for (size_t p = 0; p <= n; p++) {
        size_t cl = 0;
        int32_t found = r->o->locate(r->o->ctx, (uint64_t)p, c, sizeof c, &cl);
        if (found == LOADER_LOCATE_UNKNOWN) continue;
        if (found != LOADER_LOCATE_FOUND || cl > sizeof c) {
            loader_test__say(r, 9, "locate(%zu) returned %d with a cursor of %zu bytes: "
                             "LOADER_LOCATE_FOUND with at most LOADER_MAX_CURSOR_LEN bytes, or "
                             "LOADER_LOCATE_UNKNOWN", p, (int)found, cl);
            continue;
        }
        if (!loader_test__call(r, c, cl, 1, LOADER_DIRECTION_FORWARD, NULL, 0)) continue;
        loader_test_answer *a = &r->a;
        if (p < n && (a->count != 1 || a->keys[0] != ref[p]))
            loader_test__say(r, 9, "locate(%zu) wrote a cursor whose next item is %s%lld, not "
                             "item %zu (key %lld): the loader would number the view wrong "
                             "from there", p, a->count ? "key " : "none ",
                             a->count ? (long long)a->keys[0] : 0LL, p, (long long)ref[p]);
        else if (p == n && (a->count != 0 || !a->end_of_source))
            loader_test__say(r, 9, "locate(%zu), the source's end, wrote a cursor with %u items "
                             "after it%s", p, a->count,
                             a->end_of_source ? "" : " and no end_of_source");
    }
}


/* Deletes the middle item, then reads the gap it left: nothing up to until. */
static inline void loader_test__empty_bounded(loader_test__run *r) {
    const int64_t *ref = r->o->reference;
    size_t n = r->o->reference_len, i = n / 2;
    if (n < 3) return;
    if (r->o->delete_key(r->o->ctx, ref[i]) != 0) {
        loader_test__say(r, 7, "delete_key(%lld) failed", (long long)ref[i]);
        return;
    }
    const uint8_t *c = loader_test__cur(r, i), *u = loader_test__cur(r, i + 1);
    size_t cl = r->cursor_lens[i], ul = r->cursor_lens[i + 1];
    for (uint32_t limit = 1; limit <= LOADER_TEST__MAX_LIMIT; limit++) {
        if (!loader_test__call(r, c, cl, limit, LOADER_DIRECTION_FORWARD, u, ul)) continue;
        loader_test_answer *a = &r->a;
        if (a->count > 0)
            loader_test__say(r, 7, "a read of %u bounded by until over the gap key %lld left "
                             "when it was deleted returned %u items; nothing is left there",
                             limit, (long long)ref[i], a->count);
        else if (!a->end_of_source && a->next_cursor_len == cl &&
                 memcmp(a->next_cursor, c, cl) == 0)
            loader_test__say(r, 7, "a read of %u bounded by until over the gap key %lld left "
                             "when it was deleted returned no items and next_cursor equal to "
                             "its own cursor: the loader takes that as a stalled cursor and "
                             "falls back to a full read. Return until itself as next_cursor: "
                             "the scan reached it", limit, (long long)ref[i]);
    }
}

/* Runs every case; returns how many violations were found (each reported, but only the
 * first few of a kind are told). */
static inline size_t loader_test_load(const loader_test_options *o) {
    loader_test__run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    size_t n = o->reference_len;
    r.cursors = (uint8_t *)calloc(n + 1, LOADER_MAX_CURSOR_LEN);
    r.cursor_lens = (size_t *)calloc(n + 1, sizeof(size_t));
    if (r.cursors == NULL || r.cursor_lens == NULL) {
        free(r.cursors);
        free(r.cursor_lens);
        loader_test__say(&r, 0, "out of memory for %zu cursors", n + 1);
        return r.found;
    }
    if (loader_test__walk(&r)) {
        loader_test__forward(&r);
        loader_test__backward(&r);
        /* Before the delete hook changes the source. */
        if (o->locate != NULL) loader_test__locate(&r);
        if (!o->no_until) {
            loader_test__bounded(&r);
            if (o->delete_key != NULL) loader_test__empty_bounded(&r);
        }
    }
    free(r.cursors);
    free(r.cursor_lens);
    return r.found;
}

/* ---- a feed's load ---- */

typedef struct loader_test_feed_options {
    /* What the source holds, in source order. */
    const int64_t *reference;
    size_t reference_len;
    /* The feed's load, and the userdata the feed passes it (and every function below). */
    loader_load_fn load;
    void *userdata;
    /* Required: writes the keys of the `count` items the page `acquisition` holds, in source
     * order, into `keys` (room for `count`). */
    void (*keys)(void *userdata, loader_acquisition acquisition, uint32_t count, int64_t *keys);
    /* Required: the feed's release; each page a load returned goes to it once its keys are
     * read. */
    loader_release_fn release;
    /* As in loader_test_options, called with `userdata`. */
    int (*delete_key)(void *userdata, int64_t key);
    void (*report)(void *report_ctx, const char *sentence);
    void *report_ctx;
    bool no_until;
    loader_locate_fn locate;
} loader_test_feed_options;

/* The tester's ctx, for the adapters below: the feed's options and the read ids handed out. */
typedef struct loader_test__feed {
    const loader_test_feed_options *o;
    uint64_t reads;
} loader_test__feed;

/* Runs the feed's load as the feed would (a loader_read; the result zeroed), and answers as a
 * loader_test_load_fn: the page's keys read, then the page released. */
static inline int loader_test__feed_load(void *ctx, const uint8_t *cursor, size_t cursor_len,
                                         uint32_t limit, loader_direction direction,
                                         const uint8_t *until, size_t until_len,
                                         loader_test_answer *out) {
    loader_test__feed *f = (loader_test__feed *)ctx;
    const loader_test_feed_options *o = f->o;
    loader_read read;
    loader_load_result got;
    memset(&read, 0, sizeof read);
    memset(&got, 0, sizeof got);
    read.read_id = ++f->reads;
    read.request_id = read.read_id;
    read.kind = LOADER_KIND_FINITE;
    read.cursor = cursor_len ? cursor : NULL;
    read.cursor_len = cursor_len;
    read.limit = limit;
    read.direction = direction;
    read.until = until;
    read.until_len = until_len;
    int32_t rc = o->load(o->userdata, &read, &got);
    if (rc != 0) return rc;
    out->count = got.count;
    out->end_of_source = got.end_of_source;
    int bad = 0;
    if (got.next_cursor == NULL && got.next_cursor_len > 0) {
        char line[160];
        snprintf(line, sizeof line, "a %s read of %u returned a NULL next_cursor with length %zu",
                 loader_test__way(direction), limit, got.next_cursor_len);
        if (o->report != NULL)
            o->report(o->report_ctx, line);
        else
            fprintf(stderr, "load contract: %s\n", line);
        bad = -1;
    } else if (got.next_cursor_len > LOADER_MAX_CURSOR_LEN) {
        out->next_cursor_len = got.next_cursor_len; /* reported by the caller */
    } else {
        if (got.next_cursor_len > 0) memcpy(out->next_cursor, got.next_cursor, got.next_cursor_len);
        out->next_cursor_len = got.next_cursor_len;
    }
    /* Over the limit: reported by the caller; there is no room for its keys. */
    if (bad == 0 && got.count <= limit && got.count > 0)
        o->keys(o->userdata, got.acquisition, got.count, out->keys);
    o->release(o->userdata, got.acquisition);
    return bad;
}

static inline int loader_test__feed_delete(void *ctx, int64_t key) {
    const loader_test_feed_options *o = ((loader_test__feed *)ctx)->o;
    return o->delete_key(o->userdata, key);
}

static inline int32_t loader_test__feed_locate(void *ctx, uint64_t position, uint8_t *cursor,
                                               size_t capacity, size_t *cursor_len) {
    const loader_test_feed_options *o = ((loader_test__feed *)ctx)->o;
    return o->locate(o->userdata, position, cursor, capacity, cursor_len);
}

/* loader_test_load's cases on a feed's load; returns how many violations were found. */
static inline size_t loader_test_feed_load(const loader_test_feed_options *o) {
    loader_test__feed f;
    loader_test_options t;
    f.o = o;
    f.reads = 0;
    memset(&t, 0, sizeof t);
    t.reference = o->reference;
    t.reference_len = o->reference_len;
    t.load = loader_test__feed_load;
    t.ctx = &f;
    t.delete_key = o->delete_key != NULL ? loader_test__feed_delete : NULL;
    t.report = o->report;
    t.report_ctx = o->report_ctx;
    t.no_until = o->no_until;
    t.locate = o->locate != NULL ? loader_test__feed_locate : NULL;
    return loader_test_load(&t);
}

#ifdef __cplusplus
}
#endif

#endif /* LOADER_TESTING_H */
