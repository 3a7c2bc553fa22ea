/* The threaded tests' source (stress.c, threads.c): a read as a job, the span of numbered items
 * that answers it, the "items" word behind an acquisition, and the answerers' random numbers.
 * A cursor is the 8-byte big-endian index of the next item; empty is the source's start. */
#ifndef LOADER_TEST_THREAD_SOURCE_H
#define LOADER_TEST_THREAD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader.h"

typedef struct {
    uint64_t read_id, at;
    uint32_t limit;
    loader_direction direction;
} job;

/* The answer to a job: items [from, end), the next cursor and whether the end was reached. */
typedef struct {
    uint64_t from, end;
    uint8_t next[8];
    size_t next_len;
    bool reached;
} span;

static inline uint64_t item_of(uint64_t acq) { return acq * 0x9e3779b97f4a7c15ull | 1; }

static inline uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static inline job job_of(const loader_read *r) {
    job j = {r->read_id, r->cursor_len == 8 ? be64(r->cursor) : 0, r->limit, r->direction};
    return j;
}

/* Forward: the items after the cursor; backward: those before it, the next cursor just before
 * the first one (empty at the source's start). The source holds `len` items. */
static inline span span_of(job j, uint64_t len) {
    bool backward = j.direction == LOADER_DIRECTION_BACKWARD;
    span s;
    uint64_t next_at;
    if (backward) {
        s.end = j.at < len ? j.at : len;
        s.from = s.end > j.limit ? s.end - j.limit : 0;
        next_at = s.from;
        s.reached = s.from == 0;
    } else {
        s.from = j.at;
        s.end = j.at + j.limit < len ? j.at + j.limit : len;
        next_at = s.end;
        s.reached = s.end == len;
    }
    s.next_len = backward && next_at == 0 ? 0 : 8;
    for (int i = 7, v = 0; i >= 0; i--, v++) s.next[i] = (uint8_t)(next_at >> (8 * v));
    return s;
}

static inline unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

#endif
