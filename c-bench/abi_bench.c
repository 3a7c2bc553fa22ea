/* Workloads 3 and 4 (docs/BENCHMARKS.md): the steady stream of benches/steady.rs, driven through the
 * exported C functions of libloader.so, and the ABI floor (loader_floor), in the same run.
 * loader_floor is in the test ABI: build with -DLOADER_TESTING against the library built with
 * the `testing` feature (`make bench-abi` does).
 *
 * The stream is a port of benches/common/stream.rs and benches/common/arrivals.rs: the same
 * host decisions, the same seeded splitmix64 (seed 0x5eed) for the exogenous invalidations
 * and window moves, the same 100-page view of 50-item pages, the same setup (settle every
 * page, then run until two repairs commit). The Rust host reads the loader's state through
 * cheap accessors; this host keeps a copy, read with loader_state only after `changed` fired,
 * as the header tells hosts to do. That relies on every state change being announced; before
 * timing, the program runs the stream twice more, once refreshing after `changed` only and
 * once after every event, and exits with an error unless both make the same decisions (same
 * counts, repairs, releases and checksum). Callbacks are no-ops that record: issue queues the
 * read, release XORs the
 * acquisition into a checksum; a repair's first read marks the finite reads it superseded.
 *
 * The pure-Rust figure for the same stream is `cargo bench --bench steady` (row "loader, view
 * 100 pages"); this program cannot call the Rust API, so run that bench back to back with it.
 *
 *   cargo build --release && ln -sf libloader.so target/release/libloader.so.0
 *   gcc -O2 -std=c11 -Iinclude c-bench/abi_bench.c -Ltarget/release -lloader \
 *       -Wl,-rpath,$PWD/target/release -o target/abi_bench
 *   target/abi_bench [--quick]
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loader.h"

#define PAGE 50u
#define STEADY_PAGES 100u
#define MAX_LOST_STEPS 20u
#define MAX_PENDING 64
#define REPS 5

enum { CURRENT, STALE, SUP_FAIL, INVAL, WINDOW, NCAT };
static const char *const NAMES[NCAT] = {"current", "stale", "sup-fail", "invalidate", "window"};
static const int64_t TARGET[NCAT] = {70, 15, 5, 5, 5};

/* ---- arrivals.rs ---- */
typedef struct {
    uint64_t rng, invalidations, moves;
} arrivals;

static uint64_t splitmix_next(arrivals *a) {
    a->rng += 0x9e3779b97f4a7c15ull;
    uint64_t z = a->rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void arrivals_tick(arrivals *a) {
    uint64_t r = splitmix_next(a) % 100;
    if (r <= 4)
        a->invalidations++;
    else if (r <= 9)
        a->moves++;
}

static void arrivals_wait(arrivals *a) {
    while (a->invalidations + a->moves == 0) arrivals_tick(a);
}

/* ---- stream.rs ---- */
typedef struct {
    uint64_t read_id, epoch, pos;
    loader_kind kind;
    uint32_t step, limit;
    loader_direction direction;
    int cancelled;
} pending;

typedef struct {
    loader_handle h;
    loader_snapshot st; /* the loader's state after the last call that changed it */
    int dirty;          /* `changed` fired since st was read */
    int refresh_always; /* read the state after every event, not only after `changed` */
    pending pend[MAX_PENDING];
    size_t npend;
    uint64_t pages, slack, next_acq;
    int extend_next, was_busy;
    arrivals arr;
    uint64_t counts[NCAT], events, accepted, releases, released_xor, commits, changes;
} stream;

static void die(const char *what, loader_result r) {
    fprintf(stderr, "abi_bench: %s: %s\n", what, loader_result_str((int)r));
    exit(2);
}
#define CALL(expr)                                 \
    do {                                           \
        loader_result r_ = (expr);                 \
        if (r_ != LOADER_RESULT_OK) die(#expr, r_); \
    } while (0)

static uint64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}
static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static void cb_issue(void *u, const loader_read *r) {
    stream *s = u;
    if (s->npend == MAX_PENDING) {
        fprintf(stderr, "abi_bench: more than %d reads pending\n", MAX_PENDING);
        exit(2);
    }
    /* The host takes no cancel hints (see main's callbacks): a repair or full read starting
     * supersedes every finite read in flight, which it marks itself. */
    if (r->kind != LOADER_KIND_FINITE && r->step == 0)
        for (size_t i = 0; i < s->npend; i++)
            if (s->pend[i].kind == LOADER_KIND_FINITE) s->pend[i].cancelled = 1;
    pending *p = &s->pend[s->npend++];
    p->read_id = r->read_id;
    p->kind = r->kind;
    p->epoch = r->epoch;
    p->step = r->step;
    p->pos = r->cursor_len ? get_be64(r->cursor) : 0;
    p->limit = r->limit;
    p->direction = r->direction;
    p->cancelled = 0;
}
static void cb_release(void *u, size_t acq) {
    stream *s = u;
    s->releases++;
    s->released_xor ^= (uint64_t)acq;
}
static void cb_changed(void *u) {
    stream *s = u;
    s->dirty = 1;
    s->changes++;
}

/* After an event: what the Rust host's accessors would see now. */
static inline void refresh(stream *s) {
    CALL(loader_state(s->h, &s->st));
    s->dirty = 0;
}

static inline int busy(const stream *s) {
    return s->st.phase != LOADER_PHASE_IDLE || s->st.debt != LOADER_DEBT_NONE;
}

static inline pending take(stream *s, size_t i) { /* Vec::swap_remove */
    pending p = s->pend[i];
    s->pend[i] = s->pend[--s->npend];
    return p;
}

/* The never-ending source (benches/common/stream.rs, `page`): a forward read gets a full page;
 * a backward read gets the page just before its cursor, cut short, and ending the read, at
 * the source's start. */
static int answer(stream *s, size_t i) {
    pending p = take(s, i);
    uint32_t count = p.limit;
    uint64_t at = p.pos + p.limit;
    bool end = false;
    if (p.direction == LOADER_DIRECTION_BACKWARD) {
        count = p.pos < p.limit ? (uint32_t)p.pos : p.limit;
        at = p.pos - count;
        end = at == 0;
    }
    uint8_t next[8];
    put_be64(next, at);
    uint64_t acq = s->next_acq++;
    loader_answer a;
    CALL(loader_settle(s->h, p.read_id, (size_t)acq, count, next, 8, end, &a));
    s->accepted++;
    return a == LOADER_ANSWER_CURRENT ? CURRENT : STALE;
}

static void move_window(stream *s) {
    int shrinking = s->st.debt == LOADER_DEBT_FULL && s->st.phase != LOADER_PHASE_FULLHELD;
    uint64_t len = (s->extend_next && !shrinking) ? s->st.covered_end + PAGE
                                                   : s->pages * (uint64_t)PAGE;
    s->extend_next = !s->extend_next;
    CALL(loader_set_window(s->h, 0, len));
}

static inline int64_t due(const stream *s, int c) {
    return TARGET[c] * ((int64_t)s->events + 1) - 100 * (int64_t)s->counts[c];
}

static inline int stale_read(const pending *p, uint64_t epoch) {
    return (p->kind == LOADER_KIND_FINITE && p->cancelled) ||
           (p->kind == LOADER_KIND_CHAIN && p->epoch < epoch);
}

/* One host event: Stream::step. */
static void step(stream *s) {
    arrivals_tick(&s->arr);
    uint64_t epoch = s->st.epoch, view = s->st.pages;
    int over = view > s->pages + s->slack;
    int shrt = view <= MAX_LOST_STEPS;
    long current = -1, stale = -1, sup = -1;
    int inval_ok = 1;
    for (size_t i = 0; i < s->npend; i++) {
        const pending *p = &s->pend[i];
        if (stale_read(p, epoch)) {
            stale = (long)i;
            if (p->kind == LOADER_KIND_FINITE) sup = (long)i;
        } else if (!(over && p->kind == LOADER_KIND_FINITE)) {
            current = (long)i;
        }
        if (p->kind == LOADER_KIND_FULL) inval_ok = 0;
        else if (p->kind == LOADER_KIND_CHAIN && (p->epoch < epoch || (p->step > 0 && !shrt)))
            inval_ok = 0;
    }
    if (current < 0 && stale < 0) arrivals_wait(&s->arr);
    int reset_due = over && s->st.debt == LOADER_DEBT_FULL &&
                    s->st.phase != LOADER_PHASE_FULLHELD &&
                    s->st.window_len != s->pages * (uint64_t)PAGE;
    int cat;
    if (reset_due) {
        if (s->arr.moves) s->arr.moves--;
        cat = WINDOW;
    } else if (inval_ok && s->arr.invalidations > 0) {
        s->arr.invalidations--;
        cat = INVAL;
    } else if (s->arr.moves > 0) {
        s->arr.moves--;
        cat = WINDOW;
    } else {
        int best = -1;
        int64_t bd = 0;
        const int cs[3] = {CURRENT, STALE, SUP_FAIL};
        const int ok[3] = {current >= 0, stale >= 0, sup >= 0};
        for (int k = 0; k < 3; k++) {
            if (!ok[k]) continue;
            int c = cs[k];
            int64_t d = due(s, c) * 100 / TARGET[c];
            if (over && c == SUP_FAIL) d = INT64_MAX;
            if (best < 0 || d > bd) {
                best = c;
                bd = d;
            }
        }
        if (best < 0) {
            fprintf(stderr, "abi_bench: nothing to answer and no arrival\n");
            exit(2);
        }
        cat = best;
    }
    int counted = cat;
    switch (cat) {
    case INVAL:
        CALL(loader_invalidate(s->h));
        break;
    case WINDOW:
        move_window(s);
        break;
    case SUP_FAIL: {
        pending p = take(s, (size_t)sup);
        loader_answer a;
        CALL(loader_fail(s->h, p.read_id, 7, &a));
        break;
    }
    case STALE:
        counted = answer(s, (size_t)stale);
        break;
    default:
        counted = answer(s, (size_t)current);
        break;
    }
    s->counts[counted]++;
    s->events++;
    if (s->dirty || s->refresh_always) refresh(s);
    int b = busy(s);
    if (s->was_busy && !b) s->commits++;
    s->was_busy = b;
}

static void run_until_commits(stream *s, uint64_t n) {
    uint64_t goal = s->commits + n;
    while (s->commits < goal) step(s);
}

static __attribute__((noinline)) void run(stream *s, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) step(s);
}

static void reset_counts(stream *s) {
    memset(s->counts, 0, sizeof s->counts);
    s->events = 0;
}

static void stream_init(stream *s, uint64_t pages) {
    memset(s, 0, sizeof *s);
    s->st.struct_size = sizeof s->st;
    s->pages = pages;
    uint64_t slack = pages / 2;
    s->slack = slack < 2 ? 2 : slack > 1000 ? 1000 : slack;
    s->next_acq = 1;
    s->extend_next = 1;
    s->arr.rng = 0x5eed;
    loader_config cfg = {.struct_size = sizeof cfg};
    CALL(loader_config_default(&cfg));
    cfg.page_size = PAGE;
    cfg.prefetch_distance = 0;
    /* As the Rust stream (benches/common/stream.rs): the seed's rules for overtaken repairs,
     * and no cancel callback, so that failing a superseded read shrinks the view through the
     * full read its debt costs instead of letting the read go. */
    cfg.commit_overtaken = 0;
    loader_callbacks cb = {sizeof cb, s, cb_issue, cb_release, cb_changed, NULL, NULL, NULL};
    CALL(loader_new(&cfg, &cb, &s->h));
    CALL(loader_set_window(s->h, 0, pages * (uint64_t)PAGE));
    for (;;) {
        long f = -1;
        for (size_t i = 0; i < s->npend; i++)
            if (s->pend[i].kind == LOADER_KIND_FINITE) {
                f = (long)i;
                break;
            }
        if (f < 0) break;
        answer(s, (size_t)f);
    }
    s->dirty = 1;
    refresh(s);
    if (s->st.pages != pages) {
        fprintf(stderr, "abi_bench: setup made %llu pages, wanted %llu\n",
                (unsigned long long)s->st.pages, (unsigned long long)pages);
        exit(2);
    }
    s->was_busy = busy(s);
    run_until_commits(s, 2);
    reset_counts(s);
}

/* ---- timing ---- */
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static __attribute__((noinline)) void floor_loop(loader_handle h, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) CALL(loader_floor(h));
}

static __attribute__((noinline)) void state_loop(stream *s, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) CALL(loader_state(s->h, &s->st));
}

/* The part `make icount-check` counts (scripts/icount.py toggles callgrind on this name). */
static __attribute__((noinline)) void icount_region(stream *s, uint64_t n) { run(s, n); }

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--icount") == 0) {
        /* `--icount N`: N events of the stream, after a warm-up, for callgrind; no timing. */
        uint64_t n = strtoull(argv[2], NULL, 10);
        stream s;
        stream_init(&s, STEADY_PAGES);
        run_until_commits(&s, 2);
        icount_region(&s, n);
        CALL(loader_free(s.h));
        printf("abi %llu\n", (unsigned long long)n);
        return 0;
    }
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: %s [--quick | --icount N]\n", argv[0]);
        return 2;
    }
    const uint64_t events = quick ? 100000 : 2000000; /* per repetition */
    const uint64_t calls = quick ? 200000 : 5000000;
    double t0 = now_ns();

    /* The host's copy of the state is as good as reading it after every event. */
    {
        stream a, b;
        stream_init(&a, STEADY_PAGES);
        stream_init(&b, STEADY_PAGES);
        b.refresh_always = 1;
        run(&a, events);
        run(&b, events);
        if (memcmp(a.counts, b.counts, sizeof a.counts) != 0 || a.commits != b.commits ||
            a.releases != b.releases || a.released_xor != b.released_xor) {
            fprintf(stderr, "abi_bench: a host refreshing on `changed` diverged from one "
                            "refreshing after every event: a state change was not announced\n");
            return 2;
        }
        CALL(loader_free(a.h));
        CALL(loader_free(b.h));
    }

    stream s;
    stream_init(&s, STEADY_PAGES);
    /* Warm-up: a repetition's worth of each, untimed. */
    run(&s, events);
    floor_loop(s.h, calls);
    reset_counts(&s);
    uint64_t changes0 = s.changes;

    double ev[REPS], fl[REPS], ratio[REPS];
    for (int r = 0; r < REPS; r++) { /* interleaved, so drift hits both alike */
        double a = now_ns();
        run(&s, events);
        double b = now_ns();
        floor_loop(s.h, calls);
        double c = now_ns();
        ev[r] = (b - a) / (double)events;
        fl[r] = (c - b) / (double)calls;
        ratio[r] = ev[r] / fl[r];
    }
    uint64_t changes = s.changes - changes0 - (uint64_t)REPS * calls;
    /* A loader_state read, timed alone: what a host that polled after every event would add. */
    double st[REPS];
    for (int r = 0; r < REPS; r++) {
        double a = now_ns();
        state_loop(&s, calls);
        st[r] = (now_ns() - a) / (double)calls;
    }
    uint64_t n = s.events;
    (void)changes;
    double evm = median(ev, REPS), flm = median(fl, REPS), rm = median(ratio, REPS);
    double stm = median(st, REPS);

    printf("== workloads 3 and 4: the steady stream through the C ABI, and the floor ==\n");
    printf("libloader %s; view %llu pages of %u items; %s mode; median of %d repetitions\n",
           loader_version(), (unsigned long long)s.st.pages, PAGE, quick ? "quick" : "full",
           REPS);
    printf("mix:");
    for (int c = 0; c < NCAT; c++)
        printf("%s %s %.1f%%", c ? "," : "", NAMES[c], 100.0 * (double)s.counts[c] / (double)n);
    printf("; %llu repairs committed; %llu releases\n",
           (unsigned long long)s.commits, (unsigned long long)s.releases);
    printf("%-44s %10.1f ns/event  (%llu events x %d)\n", "ABI stream, view 100 pages", evm,
           (unsigned long long)events, REPS);
    printf("%-44s %10.1f ns/call   (%llu calls x %d)\n", "floor (loader_floor)", flm,
           (unsigned long long)calls, REPS);
    printf("%-44s %10.2f x floor   (per-repetition ratios, median)\n", "ABI stream / floor", rm);
    printf("%-44s %10.1f ns/call   (timed alone)\n",
           "loader_state read (host refreshes on changed)", stm);
    printf("pure-Rust figure for this stream: `cargo bench --bench steady`, row \"loader, view "
           "100 pages\" (same generator, benches/common/stream.rs)\n");
    printf("target: through the C ABI, steady <= 3x the floor: %s (%.2fx)\n",
           rm <= 3.0 ? "met" : "MISSED", rm);
    printf("total time %.2f s\n", (now_ns() - t0) / 1e9);
    CALL(loader_free(s.h));
    return 0;
}
