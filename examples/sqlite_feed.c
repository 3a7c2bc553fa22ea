/* examples/sqlite_feed.c: a live feed over SQLite, loaded by libloader's feed
 * (loader_feed_*): the host writes the query, the library runs the reads on its own threads.
 * The C counterpart of examples/sqlite_feed.py.
 *
 * The source is a table of events ordered by (key, id), about ten rows to a key, read with
 * keyset pagination: a cursor is the position just after a row, named by that row's (key, id),
 * 16 bytes big-endian, and an empty cursor is the start. `load` answers the three reads the
 * loader asks for: forward (the rows after the cursor), backward (the rows up to and
 * including the cursor's row; the next cursor is just after the row before them) and bounded
 * (a ranged repair's: the rows after the cursor and at or before `until`; a page short of
 * `limit` reached `until`, so its next cursor is `until`, even when it found no row). It fails
 * a fraction of the reads, which the feed retries with backoff. Three feed workers run it,
 * each load on a connection of its own.
 *
 * A writer thread inserts and deletes rows where the window scrolls and, after each commit,
 * reports the range it changed (loader_feed_invalidate_range): only the held pages that may
 * hold those rows are read again. The main thread scrolls the window, jumps to a key now and
 * then (loader_feed_jump), and reads the view through a pinned snapshot while the workers run.
 * Reads that a change or a jump makes unneeded are hinted, and the feed lets them go (the
 * `cancels` count printed at the end).
 *
 * At the end the writer stops while failures stay on, and the feed is left to settle
 * (loader_feed_wait_quiescent); then the final view must equal a direct SQL query over the same
 * range, and after loader_feed_free every page a load returned must have been released exactly
 * once. Exit status 1 if any check fails.
 *
 *   cc -std=c11 examples/sqlite_feed.c $(pkg-config --cflags --libs loader sqlite3) -lpthread
 *   ./a.out --duration 10 --seed 7 --rows 100000 --fail-rate 0.05
 *
 * Threads: `load`, `release` and `compare` run on the feed's workers and on the threads that
 * call loader_feed_*; the host takes no lock at all: each load opens its own connection, the
 * counters are atomic, and a pinned view keeps every page it lists until it is released.
 *
 * The lines between "host part: begin" and "host part: end" are the host: the SQL, the writer
 * and the scenario. scripts/host_lines.sh counts their code lines (`make c-example` checks that
 * they stay within 150).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <loader.h>
#include <sqlite3.h>

/* host part: begin */
#define CURSOR_LEN 16
#define WINDOW 100

typedef struct { int64_t key, id; } row;
typedef struct { uint32_t count; uint8_t next[CURSOR_LEN]; row rows[]; } page; /* an acquisition */

static char db_path[64];
static double fail_rate = 0.05;
static uint64_t seed = 7, rows = 100000;
static atomic_long made, released, failures, window_at, stop;

static const char *const sql[] = {
    "SELECT key, id FROM events WHERE (key, id) > (?1, ?2) ORDER BY key, id LIMIT ?3",
    "SELECT key, id FROM events WHERE (key, id) <= (?1, ?2) ORDER BY key DESC, id DESC LIMIT ?3",
    ("SELECT key, id FROM events WHERE (key, id) > (?1, ?2) AND (key, id) <= (?4, ?5) "
     "ORDER BY key, id LIMIT ?3"),
    "DELETE FROM events WHERE id = (SELECT min(id) FROM events WHERE key = ?1) RETURNING key, id",
    "INSERT INTO events (key) VALUES (?1) RETURNING key, id",
};

static void sleep_ms(long ms) { nanosleep(&(struct timespec){0, ms * 1000000}, NULL); }
static uint64_t mix(uint64_t x) { x = (x ^ x >> 31) * 0x7fb5d329728ea185u; return x ^ x >> 27; }
static bool before(row a, row b) { return a.key < b.key || (a.key == b.key && a.id < b.id); }
static void encode(row r, uint8_t *c) {
    for (int i = 0; i < 16; i++) c[i] = (uint8_t)((uint64_t)(i < 8 ? r.key : r.id) >> (56 - i % 8 * 8));
}
static row decode(const uint8_t *c, size_t len) { /* the empty cursor: before every row */
    row r = {len ? 0 : -1, len ? 0 : -1};
    for (int i = 0; i < 8 && len; i++) r.key = r.key << 8 | c[i], r.id = r.id << 8 | c[8 + i];
    return r;
}
/* Cursors are 16 bytes, and keys and ids are not negative: bytes order as numbers do. */
static int32_t compare(void *u, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    return (void)u, (void)blen, memcmp(a, b, alen);
}
static sqlite3_stmt *query(sqlite3 *db, int which, row a, int64_t n) {
    sqlite3_stmt *q = NULL;
    sqlite3_prepare_v2(db, sql[which], -1, &q, NULL);
    sqlite3_bind_int64(q, 1, a.key), sqlite3_bind_int64(q, 2, a.id), sqlite3_bind_int64(q, 3, n);
    return q;
}

/* Forward, backward or bounded, as the read asks; one row more than `limit` says whether the
 * source ends (starts, backward) there. A connection per load keeps the host lock-free. */
static int32_t load(void *u, const loader_read *r, loader_load_result *out) {
    sleep_ms((long)(mix(r->read_id) % 4)), (void)u; /* the query's time: a change may overtake it */
    if (mix(r->read_id ^ seed) % 10000 < fail_rate * 10000) return atomic_fetch_add(&failures, 1), 1;
    bool back = r->direction == LOADER_DIRECTION_BACKWARD, bounded = r->until != NULL;
    row at = decode(r->cursor, r->cursor_len), until = decode(r->until, r->until_len);
    sqlite3 *db;
    sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_stmt *q = query(db, bounded ? 2 : back, at, (int64_t)r->limit + !bounded);
    sqlite3_bind_int64(q, 4, until.key), sqlite3_bind_int64(q, 5, until.id);
    page *p = malloc(sizeof *p + ((size_t)r->limit + 1) * sizeof(row));
    p->count = 0;
    while (sqlite3_step(q) == SQLITE_ROW)
        p->rows[p->count++] = (row){sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1)};
    int rc = q ? sqlite3_finalize(q) : SQLITE_ERROR;
    sqlite3_close(db);
    if (rc != SQLITE_OK) return free(p), 1;
    out->end_of_source = !bounded && p->count <= r->limit;
    p->count -= p->count > r->limit; /* the extra row */
    for (uint32_t i = 0, k = p->count; back && i + 1 < k; i++, k--) { /* to (key, id) order */
        row t = p->rows[i];
        p->rows[i] = p->rows[k - 1], p->rows[k - 1] = t;
    }
    row next = at; /* an empty page at the source's end stays where it was */
    if (back && !out->end_of_source) next = p->rows[p->count]; /* just after the row before */
    else if (bounded && p->count < r->limit) next = until;     /* it reached `until` */
    else if (!back && p->count) next = p->rows[p->count - 1];
    encode(next, p->next);
    bool start = (back && out->end_of_source) || (next.id == at.id && !r->cursor_len);
    out->next_cursor_len = start ? 0 : CURSOR_LEN;
    out->acquisition = (loader_acquisition)p, out->count = p->count, out->next_cursor = p->next;
    atomic_fetch_add(&made, 1);
    return 0;
}
static void release(void *u, loader_acquisition a) {
    free((page *)a), (void)u, atomic_fetch_add(&released, 1);
}

/* Two inserts and two deletes where the window is, a commit, then the range they changed. */
static void *writer(void *arg) {
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    sqlite3_busy_timeout(db, 10000);
    for (uint64_t i = 1; !atomic_load(&stop); i++) {
        sleep_ms(5 + (long)(mix(seed + i) % 40));
        row lo = {INT64_MAX, INT64_MAX}, hi = {-1, -1};
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (int k = 0; k < 4; k++) {
            row key = {atomic_load(&window_at) / 10 + (int64_t)(mix(i * 4 + (uint64_t)k) % 20), 0};
            sqlite3_stmt *q = query(db, 3 + k % 2, key, 0);
            sqlite3_bind_int64(q, 1, key.key);
            while (sqlite3_step(q) == SQLITE_ROW) {
                row r = {sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1)};
                lo = before(r, lo) ? r : lo, hi = before(hi, r) ? r : hi;
            }
            sqlite3_finalize(q);
        }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        uint8_t from[CURSOR_LEN], to[CURSOR_LEN];
        encode(lo, from), encode(hi, to);
        loader_feed_invalidate_range(*(loader_feed_handle *)arg, from, CURSOR_LEN, to, CURSOR_LEN);
    }
    sqlite3_close(db);
    return NULL;
}

static row *view_rows(loader_handle l, size_t *n); /* the checks, after the host part */
static int verdict(loader_handle l, int settled, bool bad);

/* Scroll, jump once a second, read the view; stop the writer, settle, compare with SQL. */
static int scenario(double seconds) {
    loader_config lc = {.struct_size = sizeof lc};
    loader_config_default(&lc);
    lc.page_size = 50, lc.prefetch_distance = 50, lc.backoff_initial_ms = 5;
    lc.backoff_max_ms = 100, lc.max_auto_retries = 1000;
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = 3, .load = load,
                             .release = release, .compare = compare, .loader = &lc};
    loader_feed_handle feed;
    loader_handle l;
    if (loader_feed_new(&fc, &feed) || loader_feed_loader(feed, &l)) return 1;
    loader_feed_set_window(feed, 0, WINDOW);
    pthread_t w;
    pthread_create(&w, NULL, writer, &feed);
    bool bad = false;
    for (long t = 20, at = 0; t <= (long)(seconds * 1000); t += 20, at += 7) {
        sleep_ms(20);
        if (t % 1000 == 0) { /* a jump to a key, numbered as a guess: ten rows a key */
            uint8_t c[CURSOR_LEN];
            row r = {(int64_t)(mix(seed + (uint64_t)t) % (rows / 20)), 0};
            encode(r, c), at = r.key * 10;
            loader_feed_jump(feed, c, CURSOR_LEN, (uint64_t)at);
        } else loader_feed_set_window(feed, (uint64_t)at, WINDOW);
        atomic_store(&window_at, at);
        size_t n;
        row *v = view_rows(l, &n);
        bad |= v == NULL;
        free(v);
    }
    atomic_store(&stop, 1);
    pthread_join(w, NULL);
    int failed = verdict(l, loader_feed_wait_quiescent(feed, 60000), bad); /* failures stay on */
    uint32_t left = 1;
    loader_feed_free(feed, -1, &left);
    return failed || left || made != released;
}
/* host part: end */

/* ---- the checks ---- */

static bool equals_sql(const row *v, size_t n);

/* The view's rows, copied from a pinned snapshot while the workers run; NULL if out of order. */
static row *view_rows(loader_handle l, size_t *n) {
    loader_view_snapshot *v;
    const loader_page *pages;
    size_t np, total = 1;
    bool revalidating;
    loader_view_acquire(l, &v);
    loader_view_pages(v, &pages, &np, &revalidating);
    for (size_t i = 0; i < np; i++) total += pages[i].count;
    row *out = malloc(total * sizeof(row));
    *n = 0;
    for (size_t i = 0; i < np; i++, *n += pages[i - 1].count)
        memcpy(out + *n, ((const page *)pages[i].acquisition)->rows, pages[i].count * sizeof(row));
    loader_view_release(v);
    for (size_t i = 1; i < *n; i++)
        if (!before(out[i - 1], out[i])) return free(out), NULL;
    return out;
}

/* After settling: the view equals SQL, and it was in order whenever it was read. */
static int verdict(loader_handle l, int settled, bool bad) {
    size_t n;
    row *v = view_rows(l, &n);
    bool same = v && n >= WINDOW && equals_sql(v, n);
    free(v);
    loader_counts c = {.struct_size = sizeof c};
    loader_stats(l, &c);
    printf("sqlite_feed: %zu rows in the view, %s SQL; %ld loads failed; %llu jumps, %llu "
           "ranged repairs, %llu cancel hints; settling: %s\n",
           n, same ? "equal to" : "NOT EQUAL TO", (long)failures, (unsigned long long)c.jumps,
           (unsigned long long)c.ranged_repairs, (unsigned long long)c.cancels,
           loader_result_str(settled));
    return bad || !same || settled || !c.jumps || !c.ranged_repairs;
}

/* The view's rows are exactly what SQL returns for the same range. */
static bool equals_sql(const row *v, size_t n) {
    size_t i = 0;
    bool same = true;
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    sqlite3_stmt *q = query(db, 2, (row){v[0].key, v[0].id - 1}, INT64_MAX);
    sqlite3_bind_int64(q, 4, v[n - 1].key), sqlite3_bind_int64(q, 5, v[n - 1].id);
    while (same && sqlite3_step(q) == SQLITE_ROW) {
        row r = {sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1)};
        same = i < n && r.key == v[i].key && r.id == v[i].id, i++;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return same && i == n;
}

int main(int argc, char **argv) {
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--duration")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--rows")) rows = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--fail-rate")) fail_rate = atof(argv[i + 1]);
        else return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
    }
    char dir[] = "/tmp/libloader-feed-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    snprintf(db_path, sizeof db_path, "%s/events.db", dir);
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;"
                     "CREATE TABLE events (id INTEGER PRIMARY KEY, key INTEGER NOT NULL);"
                     "CREATE INDEX events_key_id ON events (key, id); BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *ins;
    sqlite3_prepare_v2(db, "INSERT INTO events (key) VALUES (?1)", -1, &ins, NULL);
    for (uint64_t i = 0; i < rows; i++) {
        sqlite3_bind_int64(ins, 1, (int64_t)(i / 10));
        sqlite3_step(ins);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    int failed = scenario(seconds);
    printf("sqlite_feed: %ld pages made, %ld released\n", (long)made, (long)released);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[96];
        snprintf(path, sizeof path, "%s%s", db_path, suffixes[i]);
        unlink(path);
    }
    rmdir(dir);
    return failed;
}
