/* One host, built against two headers and run against one library: the structs that grow
 * (loader_config, loader_callbacks, loader_snapshot, loader_counts) work across header
 * versions ("Structs that grow" in include/loader.h).
 *
 * Built with -Ic-tests/abi/v1 it is a host built against the first release's header, frozen
 * there: it must keep working, with nothing changed, against every later library. Built with
 * LOADER_ABI_FUTURE against a header made from today's with one field appended to each of
 * the four structs (c-tests/abi/future_header.sh), it is a host built against a release the
 * library does not know yet: it works while it leaves the new fields at zero, and setting one
 * gets LOADER_RESULT_UNKNOWN_FIELD. Only the public ABI, and nothing newer than the first
 * release's header declares, so the v1 build keeps compiling. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader.h"

static int failed;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            failed = 1;                                                                 \
        }                                                                               \
    } while (0)

#define CHECK_CODE(expr, want)                                                          \
    do {                                                                                \
        loader_result got_ = (expr);                                                    \
        if (got_ != (want)) {                                                           \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), wanted %s\n", __FILE__,       \
                    __LINE__, #expr, (int)got_, loader_result_str((int)got_), #want);    \
            failed = 1;                                                                 \
        }                                                                               \
    } while (0)

#ifdef LOADER_ABI_FUTURE
/* The library's struct ends where the field the newer header appended starts: no struct ends
 * in padding, so the appended field begins at the library's sizeof. */
#define LIBRARY_SIZE(type, added) offsetof(type, added)
#define HEADER "a newer header"
#else
#define LIBRARY_SIZE(type, added) sizeof(type)
#ifdef LOADER_ABI_V1
#define HEADER "the first release's header"
#else
#define HEADER "the library's own header"
#endif
#endif

/* A source of 100 items; a cursor is the index of the next item, one byte. */
enum { SOURCE_LEN = 100 };
typedef struct host {
    uint64_t read_id;
    uint8_t cursor;
    uint32_t limit;
    int issued, released;
} host;

static void on_issue(void *ud, const loader_read *r) {
    host *h = (host *)ud;
    h->read_id = r->read_id;
    h->cursor = r->cursor_len ? r->cursor[0] : 0;
    h->limit = r->limit;
    h->issued++;
}
static void on_release(void *ud, loader_acquisition a) {
    (void)a;
    ((host *)ud)->released++;
}

/* Answers the reads the loader issues, one at a time, until it issues no more. */
static int drain(loader_handle lh, host *h) {
    int answered = 0;
    while (h->issued > answered) {
        answered = h->issued;
        uint8_t at = h->cursor;
        uint8_t end = (uint8_t)(at + h->limit > SOURCE_LEN ? SOURCE_LEN : at + h->limit);
        if (loader_settle(lh, h->read_id, (loader_acquisition)(answered), (uint32_t)(end - at),
                          &end, 1, end == SOURCE_LEN, NULL) != LOADER_RESULT_OK)
            return 0;
    }
    return 1;
}

static loader_callbacks callbacks_for(host *h) {
    loader_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.userdata = h;
    cb.issue = on_issue;
    cb.release = on_release;
    return cb;
}

/* The whole life of a loader through the structs that grow: made, loaded, read back. */
static void a_loader_works(void) {
    loader_config cfg;
    memset(&cfg, 0xab, sizeof cfg); /* whatever the host's memory held */
    cfg.struct_size = sizeof cfg;
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_OK);
    CHECK(cfg.struct_size == sizeof cfg); /* kept: loader_new reads the host's size */
    CHECK(cfg.page_size >= 1 && cfg.initial_cursor == NULL && cfg.initial_cursor_len == 0);
#ifdef LOADER_ABI_FUTURE
    CHECK(cfg.future_knob == 0); /* what the library does not know is zeroed */
#endif
    cfg.page_size = 10;
    cfg.prefetch_distance = 0;
    host h = {0};
    loader_callbacks cb = callbacks_for(&h);
    loader_handle lh = 0;
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_OK);
    CHECK_CODE(loader_set_window(lh, 0, 30), LOADER_RESULT_OK);
    CHECK(drain(lh, &h));

    loader_snapshot s;
    memset(&s, 0xcd, sizeof s);
    s.struct_size = sizeof s;
    CHECK_CODE(loader_state(lh, &s), LOADER_RESULT_OK);
    CHECK(s.struct_size == LIBRARY_SIZE(loader_snapshot, future_gauge));
    CHECK(s.quiescent && s.pages == 3 && s.covered_end == 30 && s.window_len == 30);
    CHECK(s.failed == 0 && s.inflight == 0); /* the last fields of the first release */
#ifdef LOADER_ABI_FUTURE
    CHECK(s.future_gauge == 0xcdcdcdcdcdcdcdcdull); /* not written: the library lacks it */
#endif

    loader_counts c;
    memset(&c, 0xcd, sizeof c);
    c.struct_size = sizeof c;
    CHECK_CODE(loader_stats(lh, &c), LOADER_RESULT_OK);
    CHECK(c.struct_size == LIBRARY_SIZE(loader_counts, future_count));
    CHECK(c.issued_finite == 3 && c.accepted == 3 && c.ranged_repairs == 0);
#ifdef LOADER_ABI_FUTURE
    CHECK(c.future_count == 0xcdcdcdcdcdcdcdcdull);
#endif

    loader_view_snapshot *v = NULL;
    CHECK_CODE(loader_view_acquire(lh, &v), LOADER_RESULT_OK);
    loader_snapshot vs;
    memset(&vs, 0xcd, sizeof vs);
    vs.struct_size = sizeof vs;
    CHECK_CODE(loader_view_state(v, &vs), LOADER_RESULT_OK);
    CHECK(vs.struct_size == s.struct_size && vs.pages == 3 && vs.covered_end == 30);
    CHECK_CODE(loader_view_release(v), LOADER_RESULT_OK);

    CHECK_CODE(loader_free(lh), LOADER_RESULT_OK);
    CHECK(h.released == 3);
}

/* A struct_size never set is refused by every function that reads one, and nothing is
 * written. */
static void a_struct_size_not_set_is_refused(void) {
    loader_config cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_INVALID_STRUCT_SIZE);
    CHECK(cfg.page_size == 0);
    cfg.struct_size = sizeof cfg;
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_OK);

    host h = {0};
    loader_callbacks cb = callbacks_for(&h);
    loader_handle lh = 7;
    cb.struct_size = 0;
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_INVALID_STRUCT_SIZE);
    cb.struct_size = 1u << 20; /* garbage: refused before anything past it is read */
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_INVALID_STRUCT_SIZE);
    cb.struct_size = sizeof cb;
    cfg.struct_size = (uint32_t)offsetof(loader_config, initial_position); /* shorter than any release's */
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_INVALID_STRUCT_SIZE);
    CHECK(lh == 7);
    cfg.struct_size = sizeof cfg;
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_OK);

    loader_snapshot s;
    memset(&s, 0, sizeof s);
    CHECK_CODE(loader_state(lh, &s), LOADER_RESULT_INVALID_STRUCT_SIZE);
    CHECK(s.struct_size == 0 && s.window_len == 0 && !s.quiescent);
    loader_counts c;
    memset(&c, 0, sizeof c);
    CHECK_CODE(loader_stats(lh, &c), LOADER_RESULT_INVALID_STRUCT_SIZE);
    CHECK(c.struct_size == 0);
    CHECK_CODE(loader_free(lh), LOADER_RESULT_OK);
}

#ifdef LOADER_ABI_FUTURE
/* A newer host that sets a field the library does not know gets a clear code, and no
 * loader: the library cannot do what it asked. */
static void a_field_the_library_lacks_is_refused(void) {
    loader_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    CHECK_CODE(loader_config_default(&cfg), LOADER_RESULT_OK);
    host h = {0};
    loader_callbacks cb = callbacks_for(&h);
    loader_handle lh = 7;
    cfg.future_knob = 3;
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_UNKNOWN_FIELD);
    CHECK(lh == 7);
    cfg.future_knob = 0;
    cb.future_hook = on_release;
    CHECK_CODE(loader_new(&cfg, &cb, &lh), LOADER_RESULT_UNKNOWN_FIELD);
    CHECK(lh == 7 && h.issued == 0 && h.released == 0);
    printf("  loader_new with a newer field set: %s\n",
           loader_result_str(LOADER_RESULT_UNKNOWN_FIELD));
}
#endif

int main(void) {
    a_loader_works();
    a_struct_size_not_set_is_refused();
#ifdef LOADER_ABI_FUTURE
    a_field_the_library_lacks_is_refused();
#endif
    printf("abi_host: built against %s (config %zu bytes, snapshot %zu), library %s: %s\n",
           HEADER, sizeof(loader_config), sizeof(loader_snapshot), loader_version(),
           failed ? "FAILED" : "ok");
    return failed;
}
