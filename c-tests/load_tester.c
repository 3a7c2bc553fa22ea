/* include/loader_testing.h against a keyset source in memory: an honest load passes with no
 * violation, and each host defect the tester is for is found and named: an empty bounded
 * read answered with its own cursor, backward reads answered with the items after the
 * cursor, a load whose cursor never advances, a bounded read that claims the source's end
 * when it reached `until`, and a `locate` one item off. A feed's load (loader_load_fn) is
 * tested as it is (loader_test_feed_load): the same verdicts, each page released exactly
 * once (malloc'd pages under ASan), and a NULL next_cursor named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_testing.h"

static int failures;

#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                               \
        }                                                                             \
    } while (0)

enum defect { HONEST, EMPTY_BOUNDED_OWN_CURSOR, BACKWARD_AFTER, NEVER_ADVANCES, BOUNDED_END,
              LOCATE_OFF_BY_ONE };

/* Sorted keys; a cursor is the 8-byte big-endian key of the item just before it (empty: the
 * source's start). */
typedef struct source {
    int64_t keys[16];
    size_t n;
    enum defect defect;
} source;

static void put(uint8_t *out, size_t *len, int64_t key) {
    for (int b = 0; b < 8; b++) out[b] = (uint8_t)((uint64_t)key >> (56 - 8 * b));
    *len = 8;
}

static int64_t get(const uint8_t *c) {
    uint64_t k = 0;
    for (int b = 0; b < 8; b++) k = (k << 8) | c[b];
    return (int64_t)k;
}

/* How many items come before the position `cursor` names. */
static size_t before(const source *s, const uint8_t *cursor, size_t len) {
    if (len == 0) return 0;
    int64_t after = get(cursor);
    size_t i = 0;
    while (i < s->n && s->keys[i] <= after) i++;
    return i;
}

static int load(void *ctx, const uint8_t *cursor, size_t cursor_len, uint32_t limit,
                loader_direction direction, const uint8_t *until, size_t until_len,
                loader_test_answer *out) {
    source *s = ctx;
    size_t at = before(s, cursor, cursor_len);
    if (s->defect == BACKWARD_AFTER) direction = LOADER_DIRECTION_FORWARD;
    if (direction == LOADER_DIRECTION_BACKWARD) {
        size_t lo = at > limit ? at - limit : 0;
        for (size_t i = lo; i < at; i++) out->keys[out->count++] = s->keys[i];
        if (lo > 0) put(out->next_cursor, &out->next_cursor_len, s->keys[lo - 1]);
        out->end_of_source = lo == 0;
        return 0;
    }
    size_t stop = until != NULL ? before(s, until, until_len) : s->n;
    size_t hi = at + limit < stop ? at + limit : stop;
    for (size_t i = at; i < hi; i++) out->keys[out->count++] = s->keys[i];
    if (s->defect == NEVER_ADVANCES) {
        memcpy(out->next_cursor, cursor, cursor_len);
        out->next_cursor_len = cursor_len;
    } else if (out->count > 0) {
        put(out->next_cursor, &out->next_cursor_len, s->keys[hi - 1]);
    } else if (until != NULL && s->defect != EMPTY_BOUNDED_OWN_CURSOR) {
        memcpy(out->next_cursor, until, until_len); /* the scan reached `until` */
        out->next_cursor_len = until_len;
    } else {
        memcpy(out->next_cursor, cursor, cursor_len);
        out->next_cursor_len = cursor_len;
    }
    out->end_of_source = until == NULL ? hi == s->n : (s->defect == BOUNDED_END ? hi == stop : hi == s->n && stop == s->n);
    return 0;
}

/* The cursor before the item at `position` (loader_locate_fn); LOCATE_OFF_BY_ONE answers
 * the one after it. */
static int32_t locate(void *ctx, uint64_t position, uint8_t *cursor, size_t capacity,
                      size_t *cursor_len) {
    source *s = ctx;
    size_t p = (size_t)position + (s->defect == LOCATE_OFF_BY_ONE ? 1 : 0);
    if (capacity < 8 || p > s->n) return LOADER_LOCATE_UNKNOWN;
    if (p == 0) {
        *cursor_len = 0;
        return LOADER_LOCATE_FOUND;
    }
    put(cursor, cursor_len, s->keys[p - 1]);
    return LOADER_LOCATE_FOUND;
}

static int delete_key(void *ctx, int64_t key) {
    source *s = ctx;
    for (size_t i = 0; i < s->n; i++) {
        if (s->keys[i] == key) {
            memmove(s->keys + i, s->keys + i + 1, (s->n - i - 1) * sizeof *s->keys);
            s->n--;
            return 0;
        }
    }
    return -1;
}

typedef struct said {
    char text[8192];
    size_t lines;
} said;

static void hear(void *ctx, const char *sentence) {
    said *w = ctx;
    strncat(w->text, sentence, sizeof w->text - strlen(w->text) - 2);
    strcat(w->text, "\n");
    w->lines++;
}

static size_t run(enum defect defect, said *w) {
    static const int64_t keys[] = {10, 20, 30, 40, 50, 60, 70};
    source s = {.n = 7, .defect = defect};
    memcpy(s.keys, keys, sizeof keys);
    memset(w, 0, sizeof *w);
    loader_test_options o = {.reference = keys, .reference_len = 7, .load = load, .ctx = &s,
                             .delete_key = delete_key, .report = hear, .report_ctx = w,
                             .locate = locate};
    return loader_test_load(&o);
}

/* The same source behind a feed's load: each page a malloc'd copy of its answer, whose
 * pointer is the acquisition. */
typedef struct feed_source {
    source s;
    int null_cursor; /* the load returns a NULL next_cursor with a length */
    int loads, released;
} feed_source;

typedef struct feed_page {
    int64_t keys[8];
    uint32_t count;
    uint8_t next[LOADER_MAX_CURSOR_LEN];
} feed_page;

static int32_t feed_load(void *ud, const loader_read *r, loader_load_result *out) {
    feed_source *f = ud;
    feed_page *p = calloc(1, sizeof *p);
    if (p == NULL) return 1;
    loader_test_answer a;
    memset(&a, 0, sizeof a);
    a.keys = p->keys;
    /* The feed's cursor is NULL for the source's start. */
    static const uint8_t none[1] = {0};
    const uint8_t *cursor = r->cursor != NULL ? r->cursor : none;
    int rc = load(&f->s, cursor, r->cursor_len, r->limit, r->direction, r->until, r->until_len, &a);
    if (rc != 0) {
        free(p);
        return rc;
    }
    f->loads++;
    memcpy(p->next, a.next_cursor, a.next_cursor_len);
    p->count = a.count;
    out->acquisition = (loader_acquisition)p;
    out->count = a.count;
    out->next_cursor = f->null_cursor ? NULL : p->next;
    out->next_cursor_len = f->null_cursor ? 8 : a.next_cursor_len;
    out->end_of_source = a.end_of_source;
    return 0;
}

static void feed_keys(void *ud, loader_acquisition acquisition, uint32_t count, int64_t *keys) {
    (void)ud;
    const feed_page *p = (const feed_page *)acquisition;
    memcpy(keys, p->keys, count * sizeof *keys);
}

static void feed_release(void *ud, loader_acquisition acquisition) {
    feed_source *f = ud;
    f->released++;
    free((feed_page *)acquisition);
}

static int feed_delete(void *ud, int64_t key) { return delete_key(&((feed_source *)ud)->s, key); }

static int32_t feed_locate(void *ud, uint64_t position, uint8_t *cursor, size_t capacity,
                           size_t *cursor_len) {
    return locate(&((feed_source *)ud)->s, position, cursor, capacity, cursor_len);
}

static size_t run_feed(enum defect defect, int null_cursor, said *w, feed_source *f) {
    static const int64_t keys[] = {10, 20, 30, 40, 50, 60, 70};
    memset(f, 0, sizeof *f);
    f->s.n = 7;
    f->s.defect = defect;
    f->null_cursor = null_cursor;
    memcpy(f->s.keys, keys, sizeof keys);
    memset(w, 0, sizeof *w);
    loader_test_feed_options o = {.reference = keys, .reference_len = 7, .load = feed_load,
                                  .userdata = f, .keys = feed_keys, .release = feed_release,
                                  .delete_key = feed_delete, .report = hear, .report_ctx = w,
                                  .locate = feed_locate};
    return loader_test_feed_load(&o);
}

int main(void) {
    said w;
    feed_source f;
    EXPECT(run_feed(HONEST, 0, &w, &f) == 0 && w.lines == 0);
    if (w.lines) fprintf(stderr, "the honest feed load was reported:\n%s", w.text);
    EXPECT(f.loads > 20 && f.released == f.loads);
    EXPECT(run_feed(NEVER_ADVANCES, 0, &w, &f) > 0);
    EXPECT(strstr(w.text, "the cursor never advances") != NULL);
    EXPECT(f.released == f.loads);
    EXPECT(run_feed(EMPTY_BOUNDED_OWN_CURSOR, 0, &w, &f) > 0);
    EXPECT(strstr(w.text, "Return until itself as next_cursor") != NULL);
    EXPECT(run_feed(LOCATE_OFF_BY_ONE, 0, &w, &f) > 0);
    EXPECT(strstr(w.text, "locate(0) wrote a cursor whose next item is key 20") != NULL);
    EXPECT(run_feed(HONEST, 1, &w, &f) > 0);
    EXPECT(strstr(w.text, "returned a NULL next_cursor with length 8") != NULL);
    EXPECT(f.loads > 0 && f.released == f.loads);

    EXPECT(run(HONEST, &w) == 0 && w.lines == 0);
    if (w.lines) fprintf(stderr, "the honest load was reported:\n%s", w.text);

    EXPECT(run(EMPTY_BOUNDED_OWN_CURSOR, &w) > 0);
    EXPECT(strstr(w.text, "next_cursor equal to its own cursor") != NULL);
    EXPECT(strstr(w.text, "Return until itself as next_cursor") != NULL);

    EXPECT(run(BACKWARD_AFTER, &w) > 0);
    EXPECT(strstr(w.text, "the items AFTER the cursor") != NULL);

    EXPECT(run(NEVER_ADVANCES, &w) > 0);
    EXPECT(strstr(w.text, "the cursor never advances") != NULL);

    EXPECT(run(BOUNDED_END, &w) > 0);
    EXPECT(strstr(w.text, "bounded by until") != NULL && strstr(w.text, "claimed end_of_source") != NULL);

    EXPECT(run(LOCATE_OFF_BY_ONE, &w) > 0);
    EXPECT(strstr(w.text, "locate(0) wrote a cursor whose next item is key 20") != NULL);

    /* Without the delete hook, the empty bounded read is not tried: the defect that needs it
     * goes unseen, and nothing else is reported. */
    static const int64_t keys[] = {10, 20, 30};
    source s = {.n = 3, .defect = EMPTY_BOUNDED_OWN_CURSOR};
    memcpy(s.keys, keys, sizeof keys);
    memset(&w, 0, sizeof w);
    loader_test_options o = {.reference = keys, .reference_len = 3, .load = load, .ctx = &s,
                             .report = hear, .report_ctx = &w};
    EXPECT(loader_test_load(&o) == 0);

    if (failures) {
        fprintf(stderr, "load_tester: %d failed\n", failures);
        return 1;
    }
    printf("load_tester: the honest load passes; an empty bounded read answered with its own "
           "cursor, backward reads answered with the items after the cursor, a cursor that "
           "never advances, a bounded read claiming the end at until and a locate one off are "
           "each found; a feed's load is tested as it is, each page released once\n");
    return 0;
}
