/* include/loader_testing.h against a keyset source in memory: an honest load passes with no
 * violation, and each host defect the tester is for is found and named: an empty bounded
 * read answered with its own cursor, backward reads answered with the items after the
 * cursor, a load whose cursor never advances, a bounded read that claims the source's end
 * when it reached `until`, and a `locate` one item off. */
#include <stdio.h>
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

int main(void) {
    said w;
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
           "each found\n");
    return 0;
}
