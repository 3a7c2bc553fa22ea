/* examples/sqlite_feed.c answers a bounded read that finds no row as the header says (with
 * `until` as its next cursor), so the loader takes it as the end of the range, not as a stalled
 * cursor. The example is included whole, its main renamed, and its own reader (answer_job,
 * settle) answers every read, on this thread, in order: a page of the view loses every row,
 * the ranged invalidation re-reads that page alone with one bounded read, and that read finds
 * nothing. Answered with the read's own cursor instead, the answer is a cursor stall and the
 * repair falls back to a full read: this test counts both. */
#define main sqlite_feed_main
#include "../examples/sqlite_feed.c"
#undef main

static int failures;

#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* Answers every queued read, oldest first, until none is left. */
static void answer_all(host *h, reader *r) {
    for (;;) {
        pthread_mutex_lock(&h->lock);
        bool any = h->njobs > 0;
        job j;
        if (any) {
            j = h->jobs[0];
            memmove(h->jobs, h->jobs + 1, (h->njobs - 1) * sizeof(job));
            h->njobs--;
        }
        pthread_mutex_unlock(&h->lock);
        if (!any) return;
        answer_job(h, r, &j, NULL);
    }
}

/* The rows of the view's page `i`, copied, and how many. */
static uint32_t page_rows(host *h, size_t i, row *out, uint32_t cap) {
    loader_view_snapshot *v;
    const loader_page *pages;
    size_t n;
    bool revalidating;
    uint32_t count = 0;
    EXPECT(loader_view_acquire(h->loader, &v) == LOADER_RESULT_OK);
    EXPECT(loader_view_pages(v, &pages, &n, &revalidating) == LOADER_RESULT_OK && i < n);
    if (i < n) {
        const page *p = h->slots[pages[i].acquisition].page;
        count = p->count < cap ? p->count : cap;
        memcpy(out, p->rows, count * sizeof(row));
    }
    EXPECT(loader_view_release(v) == LOADER_RESULT_OK);
    return count;
}

int main(void) {
    static host h;
    h.opt = (options){.duration_s = 0, .fail_rate = 0, .seed = 5, .rows = 40, .depth = 0};
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.queued, NULL);
    h.nslots = 1;
    h.slots = grow(NULL, &h.slots_cap, 1, sizeof(slot));
    strcpy(h.dir, "/tmp/libloader-bounded-XXXXXX");
    if (mkdtemp(h.dir) == NULL) return 1;
    snprintf(h.db_path, sizeof h.db_path, "%s/events.db", h.dir);
    create_db(&h);

    loader_config config = {.struct_size = sizeof config};
    loader_config_default(&config);
    config.page_size = 5;
    config.prefetch_distance = 0;
    loader_callbacks callbacks = {.struct_size = sizeof callbacks,
                                  .userdata = &h,
                                  .issue = on_issue,
                                  .release = on_release,
                                  .changed = on_changed,
                                  .compare = on_compare};
    EXPECT(loader_new(&config, &callbacks, &h.loader) == LOADER_RESULT_OK);
    reader r = open_reader(&h);

    /* Four pages of five rows. */
    EXPECT(loader_set_window(h.loader, 0, 20) == LOADER_RESULT_OK);
    answer_all(&h, &r);
    loader_snapshot s = {.struct_size = sizeof s};
    EXPECT(loader_state(h.loader, &s) == LOADER_RESULT_OK && s.quiescent && s.pages == 4);

    /* The writer deletes every row of the second page, then names their range. */
    row gone[5];
    EXPECT(page_rows(&h, 1, gone, 5) == 5);
    sqlite3 *db = open_db(&h, SQLITE_OPEN_READWRITE);
    sqlite3_stmt *del = prepare(db, "DELETE FROM events WHERE key = ?1 AND id = ?2");
    for (int i = 0; i < 5; i++) {
        sqlite3_bind_int64(del, 1, gone[i].key);
        sqlite3_bind_int64(del, 2, gone[i].id);
        if (sqlite3_step(del) != SQLITE_DONE) sql_fatal(db, "delete");
        sqlite3_reset(del);
    }
    sqlite3_finalize(del);
    sqlite3_close(db);
    loader_counts before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    EXPECT(loader_stats(h.loader, &before) == LOADER_RESULT_OK);
    uint8_t from[CURSOR_LEN], to[CURSOR_LEN];
    encode(gone[0], from);
    encode(gone[4], to);
    EXPECT(loader_invalidate_range(h.loader, from, CURSOR_LEN, to, CURSOR_LEN) == LOADER_RESULT_OK);
    answer_all(&h, &r);
    EXPECT(loader_stats(h.loader, &after) == LOADER_RESULT_OK);

    /* One bounded read, empty, answered with `until`: the repair ends there and commits. */
    EXPECT(atomic_load(&h.bounded_reads) == 1 && atomic_load(&h.empty_bounded) == 1);
    EXPECT(after.cursor_stalls == 0);
    EXPECT(after.issued_full == before.issued_full);
    EXPECT(after.issued_chain == before.issued_chain + 1);
    EXPECT(after.ranged_repairs == before.ranged_repairs + 1);
    /* The window, 20 items, is filled again from the rows after the gap: a finite read. */
    EXPECT(after.items_read - before.items_read <= 5);
    EXPECT(loader_state(h.loader, &s) == LOADER_RESULT_OK && s.quiescent);

    view_copy v;
    int64_t rows_now;
    copy_view(&h, &v);
    bool same = matches_sql(&h, &v, &rows_now);
    EXPECT(same && rows_now == 35 && v.count == 20);
    free(v.rows);
    close_reader(&r);
    EXPECT(loader_free(h.loader) == LOADER_RESULT_OK);
    uint64_t accepted = 0, released = 0;
    EXPECT(released_once(&h, &accepted, &released) && accepted == released);
    EXPECT(atomic_load(&h.errors) == 0);

    free(h.slots);
    free(h.jobs);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s%s", h.db_path, suffixes[i]);
        unlink(path);
    }
    rmdir(h.dir);
    printf("sqlite_feed_bounded: %s: %" PRIu64 " cursor stalls, %" PRIu64 " full reads, %" PRIu64
           " items read for the repair\n",
           failures ? "FAILED" : "ok", after.cursor_stalls, after.issued_full - before.issued_full,
           after.items_read - before.items_read);
    return failures != 0;
}
