/* examples/sqlite_feed.c answers a bounded read that finds no row as the header says: with
 * `until` as its next cursor and no end flag, so the loader takes it as the end of the range,
 * not as a stalled cursor (an answer with the read's own cursor would be one). The example is
 * included whole, its main renamed, and its `load` is called directly over a small table:
 * bounded reads (empty, short, full), a forward read at the end and a backward read at the
 * start. */
#define main sqlite_feed_main
#include "../examples/sqlite_feed.c"
#undef main

static int wrong;

#define EXPECT(cond)                                                             \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            wrong++;                                                          \
        }                                                                        \
    } while (0)

/* Runs `load` for one read from `at` (NULL: the start) and returns its page. */
static page *read_one(loader_direction dir, const row *at, const row *until, uint32_t limit,
                      loader_load_result *out) {
    uint8_t c[CURSOR_LEN], u[CURSOR_LEN];
    if (at) encode(*at, c);
    if (until) encode(*until, u);
    loader_read r = {.read_id = 2, .cursor = at ? c : NULL, .cursor_len = at ? CURSOR_LEN : 0,
                     .limit = limit, .direction = dir, .until = until ? u : NULL,
                     .until_len = until ? CURSOR_LEN : 0};
    memset(out, 0, sizeof *out);
    EXPECT(load(NULL, &r, out) == 0);
    return (page *)out->acquisition;
}

static row cursor_of(const loader_load_result *out) {
    return decode(out->next_cursor, out->next_cursor_len);
}

int main(void) {
    char dir[] = "/tmp/libloader-bounded-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    snprintf(db_path, sizeof db_path, "%s/events.db", dir);
    fail_rate = 0;
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    /* keys 0..3, ten rows each, ids 1..40; then key 1's rows are deleted */
    sqlite3_exec(db, "CREATE TABLE events (id INTEGER PRIMARY KEY, key INTEGER NOT NULL);"
                     "CREATE INDEX events_key_id ON events (key, id);"
                     "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39)"
                     " INSERT INTO events (key) SELECT i / 10 FROM n;"
                     "DELETE FROM events WHERE key = 1;", NULL, NULL, NULL);
    sqlite3_close(db);
    loader_load_result out;
    row after_first = {0, 10}, last_of_gap = {1, 20}, last = {3, 40};

    /* A bounded read over the deleted rows: empty, its next cursor `until`, no end. */
    page *p = read_one(LOADER_DIRECTION_FORWARD, &after_first, &last_of_gap, 5, &out);
    EXPECT(out.count == 0 && !out.end_of_source && out.next_cursor_len == CURSOR_LEN);
    EXPECT(cursor_of(&out).key == 1 && cursor_of(&out).id == 20);
    release(NULL, (loader_acquisition)p);

    /* Short of `limit` before `until`: `until` again. Full: the last row read. */
    row until = {2, 23};
    p = read_one(LOADER_DIRECTION_FORWARD, &after_first, &until, 5, &out);
    EXPECT(out.count == 3 && p->rows[0].id == 21 && cursor_of(&out).id == 23 && !out.end_of_source);
    release(NULL, (loader_acquisition)p);
    p = read_one(LOADER_DIRECTION_FORWARD, &after_first, &until, 2, &out);
    EXPECT(out.count == 2 && cursor_of(&out).id == 22 && !out.end_of_source);
    release(NULL, (loader_acquisition)p);

    /* Forward at the end: empty, with the end flag. Backward to the start: an empty cursor. */
    p = read_one(LOADER_DIRECTION_FORWARD, &last, NULL, 5, &out);
    EXPECT(out.count == 0 && out.end_of_source);
    release(NULL, (loader_acquisition)p);
    row fifth = {0, 5};
    p = read_one(LOADER_DIRECTION_BACKWARD, &fifth, NULL, 10, &out);
    EXPECT(out.count == 5 && out.end_of_source && out.next_cursor_len == 0 && p->rows[0].id == 1);
    release(NULL, (loader_acquisition)p);
    p = read_one(LOADER_DIRECTION_BACKWARD, &fifth, NULL, 3, &out);
    EXPECT(out.count == 3 && !out.end_of_source && p->rows[0].id == 3 && cursor_of(&out).id == 2);
    release(NULL, (loader_acquisition)p);
    EXPECT(made == released);

    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[96];
        snprintf(path, sizeof path, "%s%s", db_path, suffixes[i]);
        unlink(path);
    }
    rmdir(dir);
    printf("sqlite_feed_bounded: %s\n", wrong ? "FAILED" : "ok");
    return wrong != 0;
}
