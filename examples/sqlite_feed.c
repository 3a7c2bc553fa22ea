/* examples/sqlite_feed.c: a live feed over SQLite, loaded by libloader; the C counterpart of
 * examples/sqlite_feed.py.
 *
 * The source is a table of events ordered by (key, id), about ten rows to a key, read with
 * keyset pagination: a cursor is the position just after a row, named by that row's (key, id),
 * 16 bytes big-endian, and an empty cursor is the start. A forward read returns the rows after
 * its cursor; a backward read (the loader reads back from the page holding the window's start)
 * the rows up to and including the cursor's row, in (key, id) order, and its next cursor is
 * the position just before the first of them. Three worker threads answer the reads the
 * loader asks for, out of order, each with its own SQLite connection, and fail a fraction of
 * them. A writer thread inserts and deletes rows where the window scrolls and, after each
 * commit, calls loader_invalidate_range with the range of the rows it changed: only the held
 * pages that may hold them are read again (bounded reads, `until`), and the repair rejoins
 * the pages around them (a `compare` callback orders cursors). The main thread scrolls the
 * window down, reads the view through a pinned snapshot while the workers run, and drives
 * the backoff clock with loader_next_deadline and loader_tick.
 *
 * At the end the writer stops while failures stay on, and the loader is left to settle; then
 * the final view must equal a direct SQL query over the same key range, and after loader_free
 * every acquisition the loader accepted must have been released exactly once. Exit status 1
 * if any check fails.
 *
 *   cc -std=c11 examples/sqlite_feed.c $(pkg-config --cflags --libs loader sqlite3) -lpthread
 *   ./a.out --duration 10 --seed 7 [--rows 100000] [--depth 2000]
 *   ./a.out --fail-rate 0.2 --depth 500
 *
 * Threads: the loader's callbacks run on whichever thread made the loader call (a worker
 * inside loader_settle, the writer inside loader_invalidate_range, the main thread inside
 * loader_tick), before that call returns. The one lock a host needs is its own work queue's:
 * `issue` puts reads on it and the workers take them. The view needs none: a pinned snapshot
 * (loader_view_acquire) keeps every page it lists until it is released, however the workers
 * settle meanwhile. This host takes the same lock for one more thing of its own, its page
 * table (the slot array grows, and the exactly-once audit counts in it); a host whose token is
 * the page's pointer would not. Callbacks take the lock, so it is never held across a loader
 * call.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <loader.h>
#include <sqlite3.h>

#define WORKERS 3
#define CURSOR_LEN 16
#define PAGE_SIZE 50
#define WINDOW 100
#define SCROLL_EVERY_MS 20
#define SETTLE_LIMIT_MS 60000
#define ROWS_PER_KEY 10

typedef struct {
    double duration_s;
    double fail_rate;
    uint64_t seed;
    int64_t rows;
    /* How far the window scrolls before it jumps back to the top. A recovery (a repair, a
     * retry) starts at the anchor, the held page that holds the window's start, and reads
     * about the window plus prefetch whatever the depth; a failed one resumes at the read
     * that failed. */
    uint64_t depth;
} options;

/* ---- rows, cursors and pages ---- */

typedef struct {
    int64_t key, id;
} row;

/* An empty cursor: the position before every row. */
static const row BEFORE_ALL = {INT64_MIN, INT64_MIN};

static bool row_less(row a, row b) { return a.key < b.key || (a.key == b.key && a.id < b.id); }
static bool row_equal(row a, row b) { return a.key == b.key && a.id == b.id; }

static void encode(row r, uint8_t out[CURSOR_LEN]) {
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)((uint64_t)r.key >> (56 - 8 * i));
        out[8 + i] = (uint8_t)((uint64_t)r.id >> (56 - 8 * i));
    }
}

static row decode(const uint8_t cursor[CURSOR_LEN]) {
    uint64_t key = 0, id = 0;
    for (int i = 0; i < 8; i++) {
        key = key << 8 | cursor[i];
        id = id << 8 | cursor[8 + i];
    }
    return (row){(int64_t)key, (int64_t)id};
}

/* An acquisition: the rows one read returned, and the cursors around them: `start` just before
 * the first (where a forward read started, where a backward read stopped) and `end` where the
 * next page starts (where a forward read stopped, where a backward read started). The loader
 * reads each page from its neighbour's cursor, so in a view one page's `end` is the next
 * one's `start`, even when rows were deleted between the two reads; except after a ranged
 * repair that found no row where its pages were (every row deleted): those pages leave the
 * view, and the page after them keeps its `start`, past the `end` of the page before. */
typedef struct {
    row start, end;
    uint32_t count;
    row rows[];
} page;

/* A read waiting for a worker: a copy of the loader_read, whose cursor is only valid during
 * the issue callback. */
typedef struct {
    uint64_t read_id;
    uint32_t limit;
    loader_direction direction;
    size_t cursor_len;
    uint8_t cursor[CURSOR_LEN];
    bool bounded; /* a ranged repair's read: only rows up to and including `until` */
    uint8_t until[CURSOR_LEN];
} job;

/* Acquisition tokens are indexes into the host's slots rather than page pointers, so that a
 * release of a token never handed out, or a second release, is counted instead of freeing a
 * wild pointer. Slots are kept for the final audit; a long-running host would reuse them. */
typedef struct {
    page *page; /* NULL once released */
    bool accepted;
    unsigned releases;
} slot;

typedef struct {
    options opt;
    char dir[64], db_path[96];
    loader_handle loader;

    pthread_mutex_t lock; /* guards what follows; never held across a loader call */
    pthread_cond_t queued;
    job *jobs;
    size_t njobs, jobs_cap;
    bool closing;
    slot *slots; /* slots[0] is unused: a token is never 0 */
    size_t nslots, slots_cap;
    uint64_t unknown_releases;

    atomic_bool stop_writer;
    atomic_bool view_changed;
    atomic_uint_fast64_t inserted, deleted, invalidations, injected, errors, bounded_reads;
    /* Bounded reads that found no row: answered with `until` as the cursor (see settle). */
    atomic_uint_fast64_t empty_bounded;
} host;

/* ---- small helpers ---- */

static uint64_t random_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static double uniform(uint64_t *state) { return (double)(random_next(state) >> 11) * 0x1.0p-53; }
static uint64_t below(uint64_t *state, uint64_t n) { return random_next(state) % n; }

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void sleep_ms(uint64_t ms) {
    struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

static void *grow(void *array, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return array;
    *cap = need > 2 * *cap ? need : 2 * *cap;
    array = realloc(array, *cap * elem);
    if (array == NULL) {
        fprintf(stderr, "sqlite_feed: out of memory\n");
        abort();
    }
    return array;
}

static void note_error(host *h, const char *fmt, ...) {
    if (atomic_fetch_add(&h->errors, 1) >= 10) return; /* counted; the first ten are shown */
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "sqlite_feed: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
}

static void expect_ok(host *h, loader_result rc, const char *call) {
    if (rc != LOADER_RESULT_OK) note_error(h, "%s: %s", call, loader_result_str(rc));
}

/* ---- the database: an error ends the example ---- */

static void sql_fatal(sqlite3 *db, const char *what) {
    fprintf(stderr, "sqlite_feed: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) sql_fatal(db, sql);
}

/* Each thread opens its own connection and never shares it (SQLite's multi-thread mode), so
 * the connection needs no mutex of its own. */
static sqlite3 *open_db(const host *h, int flags) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(h->db_path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        sql_fatal(db, "open");
    sqlite3_busy_timeout(db, 10000);
    exec(db, "PRAGMA synchronous = OFF"); /* a scratch database: no fsync per commit */
    return db;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *stmt;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) sql_fatal(db, sql);
    return stmt;
}

static void create_db(host *h) {
    uint64_t rng = h->opt.seed;
    sqlite3 *db = open_db(h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    exec(db, "PRAGMA journal_mode = WAL"); /* readers never wait for the writer */
    exec(db, "CREATE TABLE events (id INTEGER PRIMARY KEY, key INTEGER NOT NULL)");
    exec(db, "CREATE INDEX events_key_id ON events (key, id)");
    exec(db, "BEGIN");
    sqlite3_stmt *insert = prepare(db, "INSERT INTO events (key) VALUES (?1)");
    for (int64_t i = 0; i < h->opt.rows; i++) {
        uint64_t keys = (uint64_t)h->opt.rows / ROWS_PER_KEY + 1;
        sqlite3_bind_int64(insert, 1, (int64_t)below(&rng, keys));
        if (sqlite3_step(insert) != SQLITE_DONE) sql_fatal(db, "insert");
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    exec(db, "COMMIT");
    sqlite3_close(db);
}

/* Keyset pagination: up to `limit` rows after `after` in (key, id) order. One row more is
 * asked for, to learn whether the source ends within the page. */
static page *read_page(sqlite3_stmt *query, row after, uint32_t limit, bool *end_of_source) {
    page *p = malloc(sizeof *p + ((size_t)limit + 1) * sizeof(row));
    if (p == NULL) abort();
    p->start = p->end = after;
    p->count = 0;
    sqlite3_bind_int64(query, 1, after.key);
    sqlite3_bind_int64(query, 2, after.id);
    sqlite3_bind_int64(query, 3, (int64_t)limit + 1);
    int rc;
    while ((rc = sqlite3_step(query)) == SQLITE_ROW) {
        p->rows[p->count++] = (row){sqlite3_column_int64(query, 0), sqlite3_column_int64(query, 1)};
    }
    if (rc != SQLITE_DONE) sql_fatal(sqlite3_db_handle(query), "select");
    sqlite3_reset(query);
    *end_of_source = p->count <= limit;
    if (p->count > limit) p->count = limit;
    if (p->count > 0) p->end = p->rows[p->count - 1];
    return p;
}

/* A bounded read (a ranged repair's): the rows after `after` and up to and including `until`,
 * at most `limit`. Fewer than `limit` rows means `until` (or the table's end) was reached. */
static page *read_page_until(sqlite3_stmt *query, row after, row until, uint32_t limit,
                             bool *end_of_source) {
    sqlite3_bind_int64(query, 4, until.key);
    sqlite3_bind_int64(query, 5, until.id);
    page *p = read_page(query, after, limit, end_of_source);
    /* read_page asked for one row more to find the end; here that row only says whether
     * rows follow up to `until`, not whether the table ends. */
    return p;
}

/* Keyset pagination backward: up to `limit` rows up to and including `upto` (the cursor names
 * the position just after that row), newest first in SQL, returned in (key, id) order. One
 * row more is asked for: if it exists, the page starts just after it (the next backward read
 * continues there) and the source's start is not reached; otherwise the page starts at the
 * source's start. */
static page *read_page_backward(sqlite3_stmt *query, row upto, uint32_t limit,
                                bool *start_of_source) {
    page *p = malloc(sizeof *p + ((size_t)limit + 1) * sizeof(row));
    if (p == NULL) abort();
    p->start = BEFORE_ALL;
    p->end = upto;
    p->count = 0;
    sqlite3_bind_int64(query, 1, upto.key);
    sqlite3_bind_int64(query, 2, upto.id);
    sqlite3_bind_int64(query, 3, (int64_t)limit + 1);
    int rc;
    while ((rc = sqlite3_step(query)) == SQLITE_ROW) {
        p->rows[p->count++] = (row){sqlite3_column_int64(query, 0), sqlite3_column_int64(query, 1)};
    }
    if (rc != SQLITE_DONE) sql_fatal(sqlite3_db_handle(query), "select");
    sqlite3_reset(query);
    *start_of_source = p->count <= limit;
    if (p->count > limit) p->start = p->rows[--p->count];
    for (uint32_t i = 0, k = p->count; i + 1 < k; i++, k--) { /* to (key, id) order */
        row r = p->rows[i];
        p->rows[i] = p->rows[k - 1];
        p->rows[k - 1] = r;
    }
    return p;
}

/* ---- the loader's callbacks ---- */

static void on_issue(void *userdata, const loader_read *read) {
    host *h = userdata;
    job j = {read->read_id, read->limit, read->direction, read->cursor_len, {0}, false, {0}};
    if (read->cursor_len != 0 && read->cursor_len != CURSOR_LEN) {
        note_error(h, "read %" PRIu64 " has a cursor this host never made", read->read_id);
        expect_ok(h, loader_fail(h->loader, read->read_id, 400, NULL), "loader_fail");
        return;
    }
    if (read->cursor_len > 0) memcpy(j.cursor, read->cursor, CURSOR_LEN);
    if (read->until != NULL && read->until_len == CURSOR_LEN) {
        j.bounded = true;
        memcpy(j.until, read->until, CURSOR_LEN);
    }
    pthread_mutex_lock(&h->lock);
    h->jobs = grow(h->jobs, &h->jobs_cap, h->njobs + 1, sizeof(job));
    h->jobs[h->njobs++] = j;
    pthread_cond_signal(&h->queued);
    pthread_mutex_unlock(&h->lock);
}

static void on_release(void *userdata, loader_acquisition token) {
    host *h = userdata;
    pthread_mutex_lock(&h->lock);
    if (token == 0 || token >= h->nslots) {
        h->unknown_releases++;
    } else if (h->slots[token].releases++ == 0) {
        free(h->slots[token].page);
        h->slots[token].page = NULL;
    }
    pthread_mutex_unlock(&h->lock);
}

static void on_changed(void *userdata) { atomic_store(&((host *)userdata)->view_changed, true); }

/* Orders two cursors as the table does: by (key, id). Called only inside
 * loader_invalidate_range, with cursors this host made. */
static int32_t on_compare(void *userdata, const uint8_t *a, size_t a_len, const uint8_t *b,
                          size_t b_len) {
    (void)userdata;
    if (a_len != CURSOR_LEN || b_len != CURSOR_LEN) return a_len < b_len ? -1 : a_len > b_len;
    row x = decode(a), y = decode(b);
    return row_less(x, y) ? -1 : row_less(y, x) ? 1 : 0;
}

/* ---- the workers: answer reads out of order ---- */

/* Takes a random queued read; false once the queue is closing. */
static bool take_job(host *h, uint64_t *rng, job *out) {
    pthread_mutex_lock(&h->lock);
    while (h->njobs == 0 && !h->closing) pthread_cond_wait(&h->queued, &h->lock);
    bool got = !h->closing;
    if (got) {
        size_t i = (size_t)below(rng, h->njobs);
        *out = h->jobs[i];
        h->jobs[i] = h->jobs[--h->njobs];
    }
    pthread_mutex_unlock(&h->lock);
    return got;
}

static void settle(host *h, const job *j, page *p, bool end_of_source) {
    uint8_t next[CURSOR_LEN];
    size_t next_len = CURSOR_LEN;
    if (j->direction == LOADER_DIRECTION_BACKWARD) {
        /* the next backward read continues just before the first row; the start is empty */
        if (end_of_source) next_len = 0;
        else encode(p->start, next);
    } else if (p->count > 0) {
        encode(p->rows[p->count - 1], next); /* the next read continues after the last row */
    } else if (j->bounded) {
        /* No row up to `until`: the scan reached `until`, which is where the next read would
         * continue (loader_read.until). The read's own cursor would say it never moved, and
         * the loader would take that for a stalled cursor. */
        memcpy(next, j->until, CURSOR_LEN);
    } else {
        memcpy(next, j->cursor, CURSOR_LEN); /* nothing read: the end, at the read's cursor */
        next_len = j->cursor_len;
    }
    /* The slot exists before the call: the loader may release the page before it returns. */
    pthread_mutex_lock(&h->lock);
    h->slots = grow(h->slots, &h->slots_cap, h->nslots + 1, sizeof(slot));
    loader_acquisition token = h->nslots++;
    h->slots[token] = (slot){p, false, 0};
    pthread_mutex_unlock(&h->lock);

    loader_result rc = loader_settle(h->loader, j->read_id, token, p->count, next, next_len,
                                     end_of_source, NULL);
    pthread_mutex_lock(&h->lock);
    if (rc == LOADER_RESULT_OK) {
        h->slots[token].accepted = true;
    } else { /* refused: the page is still ours */
        free(h->slots[token].page);
        h->slots[token].page = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    expect_ok(h, rc, "loader_settle");
}

typedef struct {
    host *h;
    uint64_t seed;
} worker_arg;

/* A worker's connection and its three queries. */
typedef struct {
    sqlite3 *db;
    sqlite3_stmt *query, *back, *bounded;
} reader;

static reader open_reader(host *h) {
    reader r;
    r.db = open_db(h, SQLITE_OPEN_READONLY);
    r.query = prepare(r.db, "SELECT key, id FROM events WHERE (key, id) > (?1, ?2) "
                            "ORDER BY key, id LIMIT ?3");
    r.back = prepare(r.db, "SELECT key, id FROM events WHERE (key, id) <= (?1, ?2) "
                           "ORDER BY key DESC, id DESC LIMIT ?3");
    r.bounded = prepare(r.db, "SELECT key, id FROM events WHERE (key, id) > (?1, ?2) "
                              "AND (key, id) <= (?4, ?5) ORDER BY key, id LIMIT ?3");
    return r;
}

static void close_reader(reader *r) {
    sqlite3_finalize(r->query);
    sqlite3_finalize(r->back);
    sqlite3_finalize(r->bounded);
    sqlite3_close(r->db);
}

/* Answers job `j` from the table, as its read asks: forward, backward or bounded. `rng` (if
 * not NULL) delays the answer a little, as a network would: a commit may overtake it. */
static void answer_job(host *h, reader *r, const job *j, uint64_t *rng) {
    bool end_of_source;
    row at = j->cursor_len ? decode(j->cursor) : BEFORE_ALL;
    page *p;
    if (j->bounded) {
        atomic_fetch_add(&h->bounded_reads, 1);
        p = read_page_until(r->bounded, at, decode(j->until), j->limit, &end_of_source);
        end_of_source = false; /* it stopped at `until` (or short of it), not at the end */
        if (p->count == 0) atomic_fetch_add(&h->empty_bounded, 1);
    } else if (j->direction == LOADER_DIRECTION_FORWARD) {
        p = read_page(r->query, at, j->limit, &end_of_source);
    } else {
        p = read_page_backward(r->back, at, j->limit, &end_of_source);
    }
    if (rng != NULL) sleep_ms(below(rng, 3));
    settle(h, j, p, end_of_source);
}

static void *worker(void *arg) {
    host *h = ((worker_arg *)arg)->h;
    uint64_t rng = ((worker_arg *)arg)->seed;
    reader r = open_reader(h);
    job j;
    while (take_job(h, &rng, &j)) {
        sleep_ms(below(&rng, 3)); /* until the query runs */
        if (uniform(&rng) < h->opt.fail_rate) {
            atomic_fetch_add(&h->injected, 1);
            expect_ok(h, loader_fail(h->loader, j.read_id, 503, NULL), "loader_fail");
            continue;
        }
        answer_job(h, &r, &j, &rng);
    }
    close_reader(&r);
    return NULL;
}

/* ---- the writer: commits, then invalidates ---- */

/* The writer's changes land in the keys the window scrolls over, as a feed's new events
 * arrive where its readers are, so that most of them reach the view. */
static void *writer(void *arg) {
    host *h = arg;
    uint64_t rng = h->opt.seed * 7919, hot_keys = (h->opt.depth + 4 * WINDOW) / ROWS_PER_KEY + 1;
    sqlite3 *db = open_db(h, SQLITE_OPEN_READWRITE);
    sqlite3_stmt *insert = prepare(db, "INSERT INTO events (key) VALUES (?1)");
    sqlite3_stmt *remove = prepare(db, "DELETE FROM events WHERE id = (SELECT id FROM events "
                                       "WHERE key >= ?1 ORDER BY key, id LIMIT 1) "
                                       "RETURNING key, id");
    int burst = 0;
    while (!atomic_load(&h->stop_writer)) {
        /* Bursts of commits a few ms apart overtake reads in flight: an overtaken repair still
         * runs to its end and commits (commit_overtaken) and another follows at once; the
         * finite reads an invalidation supersedes are answered anyway (no cancel callback
         * here) and classified stale. */
        if (burst > 0) {
            burst--;
            sleep_ms(2 + below(&rng, 8));
        } else {
            burst = uniform(&rng) < 0.3 ? 2 + (int)below(&rng, 4) : 0;
            sleep_ms(25 + below(&rng, 50));
        }
        uint64_t inserts = 1 + below(&rng, 3), deletes = below(&rng, 3), deleted = 0;
        /* Every row the transaction changed lies in [lo, hi]: the range to report. */
        row lo = {INT64_MAX, INT64_MAX}, hi = BEFORE_ALL;
        exec(db, "BEGIN IMMEDIATE");
        for (uint64_t i = 0; i < inserts; i++) {
            int64_t key = (int64_t)below(&rng, hot_keys);
            sqlite3_bind_int64(insert, 1, key);
            if (sqlite3_step(insert) != SQLITE_DONE) sql_fatal(db, "insert");
            sqlite3_reset(insert);
            row r = {key, sqlite3_last_insert_rowid(db)};
            if (row_less(r, lo)) lo = r;
            if (row_less(hi, r)) hi = r;
        }
        for (uint64_t i = 0; i < deletes; i++) {
            sqlite3_bind_int64(remove, 1, (int64_t)below(&rng, hot_keys));
            int rc;
            while ((rc = sqlite3_step(remove)) == SQLITE_ROW) {
                row r = {sqlite3_column_int64(remove, 0), sqlite3_column_int64(remove, 1)};
                if (row_less(r, lo)) lo = r;
                if (row_less(hi, r)) hi = r;
                deleted++;
            }
            if (rc != SQLITE_DONE) sql_fatal(db, "delete");
            sqlite3_reset(remove);
        }
        exec(db, "COMMIT");
        /* After the commit: only the held pages that may hold [lo, hi] are read again, and the
         * repair rejoins the pages around them. */
        uint8_t from[CURSOR_LEN], to[CURSOR_LEN];
        encode(lo, from);
        encode(hi, to);
        expect_ok(h, loader_invalidate_range(h->loader, from, CURSOR_LEN, to, CURSOR_LEN),
                  "loader_invalidate_range");
        atomic_fetch_add(&h->inserted, inserts);
        atomic_fetch_add(&h->deleted, deleted);
        atomic_fetch_add(&h->invalidations, 1);
    }
    sqlite3_finalize(insert);
    sqlite3_finalize(remove);
    sqlite3_close(db);
    return NULL;
}

/* ---- the main thread: the view, the window and the clock ---- */

typedef struct {
    row *rows; /* the view's rows, in order */
    size_t count, pages;
    row start; /* where the first page's read started */
    bool revalidating;
    const char *bad; /* NULL, or what is wrong with the view's shape */
} view_copy;

/* Copies the view's rows out of a pinned snapshot. While the snapshot is held the loader
 * releases none of the pages it lists, so their rows are read without the host's lock (which
 * is taken only to look a token up: the slot array may grow). Checks the view's shape on the
 * way: positions contiguous, rows strictly ascending, each page starting where the page before
 * it ends, or after it (a re-read that found no row took pages out between them; the final
 * check against SQL sees whether rows were lost there). */
static void copy_view(host *h, view_copy *v) {
    loader_view_snapshot *snapshot;
    const loader_page *pages;
    size_t n, total = 0;
    row at = BEFORE_ALL; /* where the page before ends */
    memset(v, 0, sizeof *v);
    if (loader_view_acquire(h->loader, &snapshot) != LOADER_RESULT_OK) {
        v->bad = "loader_view_acquire failed";
        return;
    }
    if (loader_view_pages(snapshot, &pages, &n, &v->revalidating) != LOADER_RESULT_OK) n = 0;
    for (size_t i = 0; i < n; i++) total += pages[i].count;
    v->rows = malloc((total + 1) * sizeof(row));
    if (v->rows == NULL) abort();
    v->pages = n;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&h->lock);
        loader_acquisition token = pages[i].acquisition;
        const page *p = token < h->nslots ? h->slots[token].page : NULL;
        pthread_mutex_unlock(&h->lock);
        if (p == NULL || p->count != pages[i].count) {
            v->bad = "a page listed in a pinned view was released or is not the host's";
            break;
        }
        if (i == 0) v->start = p->start;
        else if (pages[i].start != pages[i - 1].start + pages[i - 1].count)
            v->bad = "page positions are not contiguous";
        else if (row_less(p->start, at))
            v->bad = "a page starts before the page before it ends";
        at = p->end;
        for (uint32_t k = 0; k < p->count; k++) {
            if (v->count > 0 && !row_less(v->rows[v->count - 1], p->rows[k]))
                v->bad = "rows are not in ascending (key, id) order";
            v->rows[v->count++] = p->rows[k];
        }
    }
    /* The releases the snapshot deferred run here, on this thread. */
    expect_ok(h, loader_view_release(snapshot), "loader_view_release");
}

/* The backoff driver: gives the loader the time, and retries by hand once its automatic
 * retries are spent (an own failure with no deadline armed). */
static void drive_clock(host *h) {
    loader_snapshot s = {.struct_size = sizeof s};
    bool armed;
    uint64_t deadline;
    expect_ok(h, loader_tick(h->loader, now_ms()), "loader_tick");
    expect_ok(h, loader_state(h->loader, &s), "loader_state");
    expect_ok(h, loader_next_deadline(h->loader, &armed, &deadline), "loader_next_deadline");
    if (s.failure == LOADER_FAILURE_OWN && !armed)
        expect_ok(h, loader_retry(h->loader, NULL), "loader_retry");
}

/* Sleeps until `until`, or until the loader's backoff deadline if that comes first. */
static void wait_until(host *h, uint64_t until) {
    bool armed;
    uint64_t deadline, now = now_ms();
    if (loader_next_deadline(h->loader, &armed, &deadline) == LOADER_RESULT_OK && armed &&
        deadline < until)
        until = deadline;
    if (until > now) sleep_ms(until - now);
}

static void scroll(host *h, uint64_t *rng) {
    loader_snapshot s = {.struct_size = sizeof s};
    expect_ok(h, loader_state(h->loader, &s), "loader_state");
    uint64_t start = s.window_start + 1 + below(rng, 10);
    if (start > h->opt.depth || (s.end_of_source && start + WINDOW > s.covered_end))
        start = 0; /* back to the top */
    expect_ok(h, loader_set_window(h->loader, start, WINDOW), "loader_set_window");
}

static bool covers_window(const loader_snapshot *s) {
    return s->covered_start <= s->window_start &&
           (s->end_of_source || s->covered_end >= s->window_start + s->window_len);
}

static void progress(host *h, double seconds) {
    loader_snapshot s = {.struct_size = sizeof s};
    loader_counts c = {.struct_size = sizeof c};
    expect_ok(h, loader_state(h->loader, &s), "loader_state");
    expect_ok(h, loader_stats(h->loader, &c), "loader_stats");
    printf("[%4.1fs] epoch %" PRIu64 " | %" PRIu64 " reads in flight, %" PRIu64 " answered (%"
           PRIu64 " stale), %" PRIu64 " failed | window %" PRIu64 "+%" PRIu64 ", view %" PRIu64
           " pages%s\n",
           seconds, s.epoch, s.outstanding_reads, c.answered_current + c.answered_stale,
           c.answered_stale, c.failed_own + c.failed_stale, s.window_start, s.window_len, s.pages,
           s.revalidating ? " (revalidating)" : "");
    fflush(stdout);
}

/* The final check: the view's rows are exactly what SQL returns for the same key range. */
static bool matches_sql(host *h, const view_copy *v, int64_t *rows_now) {
    sqlite3 *db = open_db(h, SQLITE_OPEN_READONLY);
    sqlite3_stmt *range = prepare(db, "SELECT key, id FROM events WHERE (key, id) > (?1, ?2) "
                                      "AND (key, id) <= (?3, ?4) ORDER BY key, id");
    sqlite3_stmt *count = prepare(db, "SELECT count(*) FROM events");
    bool same = v->count > 0 && v->bad == NULL;
    if (same) {
        size_t i = 0;
        sqlite3_bind_int64(range, 1, v->start.key);
        sqlite3_bind_int64(range, 2, v->start.id);
        sqlite3_bind_int64(range, 3, v->rows[v->count - 1].key);
        sqlite3_bind_int64(range, 4, v->rows[v->count - 1].id);
        while (same && sqlite3_step(range) == SQLITE_ROW) {
            row r = {sqlite3_column_int64(range, 0), sqlite3_column_int64(range, 1)};
            same = i < v->count && row_equal(r, v->rows[i++]);
        }
        same = same && i == v->count;
    }
    if (sqlite3_step(count) != SQLITE_ROW) sql_fatal(db, "count");
    *rows_now = sqlite3_column_int64(count, 0);
    sqlite3_finalize(range);
    sqlite3_finalize(count);
    sqlite3_close(db);
    return same;
}

/* The run: scroll, read the view whenever it changed, keep the backoff clock going. */
static void run(host *h, uint64_t start, uint64_t *samples, uint64_t *fresh) {
    uint64_t rng = h->opt.seed * 31, end = start + (uint64_t)(h->opt.duration_s * 1000);
    uint64_t next_scroll = start, next_progress = start + 1000;
    for (uint64_t now = start; now < end; now = now_ms()) {
        drive_clock(h);
        if (atomic_exchange(&h->view_changed, false)) {
            view_copy v;
            copy_view(h, &v);
            ++*samples;
            *fresh += !v.revalidating;
            if (v.bad) note_error(h, "view: %s", v.bad);
            free(v.rows);
        }
        if (now >= next_scroll) {
            scroll(h, &rng);
            next_scroll = now + SCROLL_EVERY_MS;
        }
        if (now >= next_progress) {
            progress(h, (double)(now - start) / 1000);
            next_progress += 1000;
        }
        wait_until(h, next_scroll < next_progress ? next_scroll : next_progress);
    }
}

/* Drives the clock until the loader is quiescent; failures are still being injected. */
static bool settle_down(host *h, loader_snapshot *s) {
    uint64_t limit = now_ms() + SETTLE_LIMIT_MS;
    do {
        drive_clock(h);
        expect_ok(h, loader_state(h->loader, s), "loader_state");
        if (s->quiescent) return true;
        wait_until(h, now_ms() + 2);
    } while (now_ms() < limit);
    return false;
}

static void stop_workers(host *h, pthread_t *workers) {
    pthread_mutex_lock(&h->lock);
    h->closing = true;
    pthread_cond_broadcast(&h->queued);
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; i < WORKERS; i++) pthread_join(workers[i], NULL);
}

/* After loader_free, every thread stopped: each accepted page was released exactly once, and
 * nothing else was released. */
static bool released_once(host *h, uint64_t *accepted, uint64_t *released) {
    bool once = h->unknown_releases == 0;
    for (size_t t = 1; t < h->nslots; t++) {
        *accepted += h->slots[t].accepted;
        *released += h->slots[t].releases;
        once = once && h->slots[t].releases == (h->slots[t].accepted ? 1u : 0u);
        free(h->slots[t].page); /* NULL unless the check fails */
    }
    return once;
}

static bool check(const char *what, bool ok, bool *all) {
    *all = *all && ok;
    printf("  %-14s %s\n", what, ok ? "ok" : "FAILED");
    return ok;
}

static double number(const char *text, const char *argv0) {
    char *end;
    double value = strtod(text, &end);
    if (*text == '\0' || *end != '\0') {
        fprintf(stderr, "%s: not a number: %s\n", argv0, text);
        exit(2);
    }
    return value;
}

static options parse_options(int argc, char **argv) {
    options o = {10.0, 0.05, 1, 100000, 2000};
    for (int i = 1; i < argc; i += 2) {
        const char *name = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        double x = value ? number(value, argv[0]) : -1;
        if (value && !strcmp(name, "--duration") && x >= 0) o.duration_s = x;
        else if (value && !strcmp(name, "--fail-rate") && x >= 0 && x < 1) o.fail_rate = x;
        else if (value && !strcmp(name, "--seed") && x >= 0) o.seed = (uint64_t)x;
        else if (value && !strcmp(name, "--rows") && x >= 1 && x <= 1e9) o.rows = (int64_t)x;
        else if (value && !strcmp(name, "--depth") && x >= 0) o.depth = (uint64_t)x;
        else {
            fprintf(stderr, "usage: %s [--duration S] [--fail-rate F] [--seed N] [--rows N]"
                            " [--depth N]\n", argv[0]);
            exit(2);
        }
    }
    return o;
}

int main(int argc, char **argv) {
    static host h; /* static: zero-initialised, and it outlives every thread */
    h.opt = parse_options(argc, argv);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.queued, NULL);
    h.nslots = 1;
    h.slots = grow(NULL, &h.slots_cap, 1, sizeof(slot));
    strcpy(h.dir, "/tmp/libloader-feed-XXXXXX");
    if (!sqlite3_threadsafe() || mkdtemp(h.dir) == NULL) {
        fprintf(stderr, "sqlite_feed: needs a thread-safe SQLite and a temporary directory\n");
        return 1;
    }
    snprintf(h.db_path, sizeof h.db_path, "%s/events.db", h.dir);
    create_db(&h);

    loader_config config = {.struct_size = sizeof config};
    loader_config_default(&config);
    config.page_size = PAGE_SIZE;
    config.prefetch_distance = 2 * PAGE_SIZE;
    config.drop_margin = WINDOW; /* pages far above the window are released */
    config.backoff_initial_ms = 20;
    config.backoff_max_ms = 500;
    config.jitter_seed = h.opt.seed;
    /* No cancel callback: a superseded read is answered anyway, and classified stale. */
    loader_callbacks callbacks = {sizeof callbacks, &h, on_issue, on_release, on_changed, NULL, on_compare, NULL};
    if (loader_new(&config, &callbacks, &h.loader) != LOADER_RESULT_OK) return 1;

    pthread_t workers[WORKERS], writer_thread;
    worker_arg args[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        args[i] = (worker_arg){&h, h.opt.seed * 1000 + (uint64_t)i};
        pthread_create(&workers[i], NULL, worker, &args[i]);
    }
    expect_ok(&h, loader_set_window(h.loader, 0, WINDOW), "loader_set_window");
    pthread_create(&writer_thread, NULL, writer, &h);
    uint64_t start = now_ms(), samples = 0, fresh = 0;
    run(&h, start, &samples, &fresh);

    atomic_store(&h.stop_writer, true);
    pthread_join(writer_thread, NULL);
    uint64_t settle_start = now_ms();
    loader_snapshot s = {.struct_size = sizeof s};
    bool quiet = settle_down(&h, &s);
    double settle_s = (double)(now_ms() - settle_start) / 1000;
    progress(&h, (double)(now_ms() - start) / 1000);

    view_copy final;
    int64_t rows_now;
    loader_counts c = {.struct_size = sizeof c};
    copy_view(&h, &final);
    bool same = matches_sql(&h, &final, &rows_now) && quiet;
    expect_ok(&h, loader_stats(h.loader, &c), "loader_stats");
    stop_workers(&h, workers);
    expect_ok(&h, loader_free(h.loader), "loader_free"); /* releases every page it holds */
    uint64_t accepted = 0, released = 0;
    bool once = released_once(&h, &accepted, &released);

    bool ok = true;
    printf("\nlibloader SQLite feed (C): seed %" PRIu64 ", %.1f s, fail rate %.2f, %d workers\n",
           h.opt.seed, h.opt.duration_s, h.opt.fail_rate, WORKERS);
    printf("  source         %" PRId64 " -> %" PRId64 " rows: %" PRIuFAST64 " inserted, "
           "%" PRIuFAST64 " deleted, %" PRIuFAST64 " ranged invalidations\n",
           h.opt.rows, rows_now, atomic_load(&h.inserted), atomic_load(&h.deleted),
           atomic_load(&h.invalidations));
    printf("  reads          %" PRIu64 " finite, %" PRIu64 " chain, %" PRIu64 " full; %" PRIu64
           " cancel hints\n",
           c.issued_finite, c.issued_chain, c.issued_full, c.cancels);
    printf("  answers        %" PRIu64 " current, %" PRIu64 " stale, %" PRIu64 " cursor stalls\n",
           c.answered_current, c.answered_stale, c.cursor_stalls);
    printf("  ranged         %" PRIu64 " repairs rejoined the pages around them, %" PRIuFAST64
           " bounded reads (%" PRIuFAST64 " empty); %" PRIu64 " items read in all, %" PRIu64
           " resumed retries, %" PRIu64 " reads let go of\n",
           c.ranged_repairs, atomic_load(&h.bounded_reads), atomic_load(&h.empty_bounded),
           c.items_read, c.resumed, c.abandoned);
    printf("  failures       %" PRIuFAST64 " injected: %" PRIu64 " own, %" PRIu64 " superseded\n",
           atomic_load(&h.injected), c.failed_own, c.failed_stale);
    printf("  retries        %" PRIu64 " by the backoff timer, %" PRIu64
           " explicit or by window moves\n", c.retries_auto, c.retries_explicit);
    printf("  view reads     %" PRIu64 " while the workers ran, fresh in %.0f%%\n", samples,
           samples ? 100.0 * (double)fresh / (double)samples : 0.0);
    printf("  settled        in %.2f s with failures injected; final view: window %" PRIu64
           "+%" PRIu64 ", %zu pages, %zu rows, epoch %" PRIu64 "\n",
           settle_s, s.window_start, s.window_len, final.pages, final.count, s.epoch);
    printf("  acquisitions   %" PRIu64 " accepted, %" PRIu64 " released, %" PRIu64
           " unknown releases\n", accepted, released, h.unknown_releases);
    check("quiescent", quiet, &ok);
    check("covers window", covers_window(&s), &ok);
    check("view = SQL", same, &ok);
    check("released once", once && accepted == released && accepted == c.accepted, &ok);
    check("view reads", samples > 0, &ok);
    /* Every answer this host gives moves its cursor or ends the source: a stall would be a bug
     * of the host (an empty bounded read answered with its own cursor, say). */
    check("no stalls", c.cursor_stalls == 0, &ok);
    if (!check("no errors", atomic_load(&h.errors) == 0, &ok))
        printf("  errors         %" PRIuFAST64 ", the first on stderr\n", atomic_load(&h.errors));
    printf("  result         %s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");

    free(final.rows);
    free(h.slots);
    free(h.jobs);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s%s", h.db_path, suffixes[i]);
        unlink(path);
    }
    rmdir(h.dir);
    return ok ? 0 : 1;
}
