/* The feed in job mode (loader_feed_new_jobs), and in hosted mode (loader_feed_new_hosted)
 * when built with LOADER_TEST_HOSTED (c-tests/feed_hosted.c): the same source and checks as
 * c-tests/feed.c (included, its own tests not run: `make c-test-feed` runs them), with the
 * loads on threads this host owns, each looping loader_feed_next_job -> load ->
 * loader_feed_complete_job (hosted mode: loader_feed_complete_next_job, which answers and
 * takes the next job in one call). Checks: bad input gets its code;
 * the view equals the source after failures, window moves, invalidations and jumps with
 * cancel hints; every page is released exactly once (a page released twice is a double free
 * under ASan/valgrind, one never released a leak), late ones included: a job held past the
 * read timeout, a job answered after free; free withdraws the jobs nobody took and does not
 * wait for a job its own thread holds; `ready` is called for each job queued (job mode); an
 * event loop's host woken by `ready` alone, and a cancel hint it is told of (hosted mode). */
#define main feed_tests_main
#pragma GCC diagnostic ignored "-Wunused-function"
#include "feed.c"
#undef main

/* The host's executor threads of one feed. */
typedef struct {
    loader_feed_handle feed;
    source *s;
    pthread_t threads[8];
    int n;
    atomic_int loaded; /* jobs answered */
} pool;

static void *executor(void *arg) {
    pool *p = arg;
    loader_feed_job job;
    int rc = loader_feed_next_job(p->feed, -1, &job);
    for (;;) {
        if (rc == LOADER_RESULT_STALE_HANDLE) return NULL; /* the feed was freed */
        CHECK_CODE(rc, LOADER_RESULT_OK);
        if (rc != LOADER_RESULT_OK) return NULL;
#ifdef LOADER_TEST_HOSTED
        if (job.token == 0) return NULL; /* answered, and the feed was freed */
#endif
        loader_load_result out;
        memset(&out, 0, sizeof out);
        int32_t status = load(p->s, &job.read, &out);
#ifdef LOADER_TEST_HOSTED
        rc = loader_feed_complete_next_job(job.token, status, &out, -1, &job);
#else
        CHECK_CODE(loader_feed_complete_job(job.token, status, &out), LOADER_RESULT_OK);
        rc = loader_feed_next_job(p->feed, -1, &job);
#endif
        atomic_fetch_add(&p->loaded, 1);
    }
}

#ifdef LOADER_TEST_HOSTED
#define NEW_FEED(fc, ready, out) loader_feed_new_hosted(fc, out)
#else
#define NEW_FEED(fc, ready, out) loader_feed_new_jobs(fc, ready, out)
#endif

static atomic_int readies;
static void ready(void *ud) {
    (void)ud;
    atomic_fetch_add(&readies, 1);
}

/* A job feed over `s` with `workers` jobs at once, and `threads` executor threads. */
static void start(pool *p, source *s, loader_config *lc, uint32_t workers, int threads) {
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = workers, .userdata = s,
                             .release = release, .loader = lc};
    p->s = s;
    p->n = threads;
    p->feed = 0;
    atomic_store(&p->loaded, 0);
    CHECK_CODE(NEW_FEED(&fc, ready, &p->feed), LOADER_RESULT_OK);
    for (int i = 0; i < threads; i++) pthread_create(&p->threads[i], NULL, executor, p);
}

static void join(pool *p) {
    for (int i = 0; i < p->n; i++) pthread_join(p->threads[i], NULL);
}

static void job_bad_input_gets_its_code(void) {
    source s = {.items = 100};
    loader_feed_handle f = 0;
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = 1, .userdata = &s};
    CHECK_CODE(NEW_FEED(&fc, NULL, &f), LOADER_RESULT_MISSING_CALLBACK);
    fc.release = release;
    CHECK_CODE(NEW_FEED(&fc, NULL, NULL), LOADER_RESULT_NULL_POINTER);
    fc.workers = 0;
    CHECK_CODE(NEW_FEED(&fc, NULL, &f), LOADER_RESULT_INVALID_WORKERS);
    fc.workers = 1;
    CHECK_CODE(NEW_FEED(&fc, NULL, &f), LOADER_RESULT_OK); /* no `load` needed */
    loader_feed_job job;
    CHECK_CODE(loader_feed_next_job(f, 0, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_feed_next_job(f, 0, &job), LOADER_RESULT_TIMED_OUT); /* no window yet */
    CHECK_CODE(loader_feed_next_job(12345, 0, &job), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_feed_complete_job(0, 1, NULL), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_feed_set_window(f, 0, 10), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_next_job(f, 10000, &job), LOADER_RESULT_OK);
    CHECK(job.token != 0 && job.read.limit > 0 && job.read.cursor_len == 0);
    CHECK_CODE(loader_feed_complete_job(job.token, 0, NULL), LOADER_RESULT_NULL_POINTER);
    loader_load_result out;
    memset(&out, 0, sizeof out);
    CHECK_CODE(loader_feed_complete_job(job.token, load(&s, &job.read, &out), &out), LOADER_RESULT_OK);
    /* Answered once: a second answer is refused, and its page stays the host's. */
    CHECK_CODE(loader_feed_complete_job(job.token, 1, NULL), LOADER_RESULT_STALE_HANDLE);
#ifdef LOADER_TEST_HOSTED
    CHECK_CODE(loader_feed_complete_next_job(job.token, 1, NULL, 0, &job), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_feed_complete_next_job(0, 1, NULL, 0, &job), LOADER_RESULT_INVALID_HANDLE);
    /* The next read, answered with the one after it taken in the same call. */
    CHECK_CODE(loader_feed_next_job(f, 10000, &job), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_complete_next_job(job.token, 0, NULL, 0, &job), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_feed_complete_next_job(job.token, 1, NULL, 0, NULL), LOADER_RESULT_NULL_POINTER);
    memset(&out, 0, sizeof out);
    {
        loader_feed_job_token t = job.token;
        int rc = loader_feed_complete_next_job(t, load(&s, &job.read, &out), &out, 0, &job);
        CHECK(rc == LOADER_RESULT_OK || rc == LOADER_RESULT_TIMED_OUT);
        CHECK_CODE(loader_feed_complete_job(t, 1, NULL), LOADER_RESULT_STALE_HANDLE);
        if (rc == LOADER_RESULT_OK) {
            CHECK(job.token != 0 && job.token != t);
            memset(&out, 0, sizeof out);
            CHECK_CODE(loader_feed_complete_job(job.token, load(&s, &job.read, &out), &out), LOADER_RESULT_OK);
        }
    }
#endif
    /* The rest of the window and its prefetch, answered on this thread. */
    for (int i = 0; i < 1000 && loader_feed_wait_quiescent(f, 0) != LOADER_RESULT_OK; i++) {
        if (loader_feed_next_job(f, 50, &job) != LOADER_RESULT_OK) continue;
        memset(&out, 0, sizeof out);
        CHECK_CODE(loader_feed_complete_job(job.token, load(&s, &job.read, &out), &out), LOADER_RESULT_OK);
    }
    CHECK_CODE(loader_feed_wait_quiescent(f, 0), LOADER_RESULT_OK);
    check_view(f, 0, 10);
    finish(f, &s);
    /* A feed that runs its own loads hands out no job. */
    source t = {.items = 100};
    loader_config lc = loader_cfg();
    f = make(&t, &lc, 1);
    CHECK_CODE(loader_feed_next_job(f, 0, &job), LOADER_RESULT_INVALID_HANDLE);
    finish(f, &t);
}

static void jobs_under_failures_moves_and_jumps(void) {
    source s = {.items = 5000, .fail_pct = 20};
    loader_config lc = loader_cfg();
    pool p;
    atomic_store(&readies, 0);
    start(&p, &s, &lc, 3, 3);
    for (uint64_t at = 0; at < 400; at += 37) {
        CHECK_CODE(loader_feed_set_window(p.feed, at, 40), LOADER_RESULT_OK);
        if (at % 3 == 0) CHECK_CODE(loader_feed_invalidate(p.feed), LOADER_RESULT_OK);
    }
    CHECK_CODE(loader_feed_wait_quiescent(p.feed, 20000), LOADER_RESULT_OK);
    check_view(p.feed, 370, 40);
    atomic_store(&s.fail_pct, 0);
    atomic_store(&s.block, 1);
    uint8_t c[8];
    for (uint64_t at = 1000; at <= 3000; at += 1000) {
        int loads = atomic_load(&s.loads);
        put_pos(c, at);
        CHECK_CODE(loader_feed_jump(p.feed, c, 8, at), LOADER_RESULT_OK);
        while (atomic_load(&s.loads) == loads) sleep_ms(1); /* its job runs, blocked */
    }
    atomic_store(&s.block, 0);
    CHECK_CODE(loader_feed_wait_quiescent(p.feed, 20000), LOADER_RESULT_OK);
    check_view(p.feed, 3000, 40);
    CHECK(atomic_load(&s.failed_loads) > 0);
#ifndef LOADER_TEST_HOSTED
    CHECK(atomic_load(&readies) >= atomic_load(&p.loaded));
#endif
    finish(p.feed, &s);
    join(&p);
    CHECK(atomic_load(&p.loaded) == atomic_load(&s.loads));
}

static void a_job_held_past_the_read_timeout_is_let_go(void) {
    source s = {.items = 1000, .block_once = 1};
    loader_config lc = loader_cfg();
    lc.read_timeout_ms = 50;
    pool p;
    start(&p, &s, &lc, 1, 2);
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 20), LOADER_RESULT_OK);
    /* One executor is stuck in the first job: after 50 ms its read is let go of, and the
     * retry is queued in its place, for the other executor. */
    CHECK_CODE(loader_feed_wait_quiescent(p.feed, 20000), LOADER_RESULT_OK);
    CHECK(atomic_load(&s.block_once) == 2);
    check_view(p.feed, 0, 20);
    atomic_store(&s.block_once, 0); /* the stuck job is answered: its page goes back */
    finish(p.feed, &s);
    join(&p);
}

static void free_withdraws_untaken_jobs_and_lets_held_ones_go(void) {
    /* Nobody takes the jobs: free returns at once, with nothing loaded. */
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    pool p;
    start(&p, &s, &lc, 2, 0);
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 20), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(p.feed, 30), LOADER_RESULT_TIMED_OUT);
    double t0 = now_ms();
    finish(p.feed, &s);
    CHECK(now_ms() - t0 < 2000);
    CHECK(atomic_load(&s.loads) == 0);

    /* A held job at free's timeout is left running; answered after the free, its page goes
     * back, once. */
    source t = {.items = 1000, .block = 1};
    start(&p, &t, &lc, 2, 1);
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 20), LOADER_RESULT_OK);
    while (atomic_load(&t.loads) == 0) sleep_ms(1);
    uint32_t left = 0;
    CHECK_CODE(loader_feed_free(p.feed, 50, &left), LOADER_RESULT_OK);
    CHECK(left == 1);
    atomic_store(&t.block, 0);
    join(&p); /* the executor answers its job after the free, then sees the feed gone */
    for (int i = 0; i < 5000 && atomic_load(&t.released) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&t.made) == 1 && atomic_load(&t.released) == 1);
    sleep_ms(20); /* the feed's let-go thread ends after the release */
}

static void free_from_inside_a_job(void) {
    /* The executor frees the feed from inside its job, waiting as long as it takes: it does
     * not wait for the job its own thread holds (it would wait for ever), which is counted
     * as left running, and whose page goes back once it is answered. */
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    pool p;
    start(&p, &s, &lc, 2, 1);
    atomic_store(&s.free_me, p.feed);
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 20), LOADER_RESULT_OK);
    for (int i = 0; i < 5000 && atomic_load(&s.freed_left) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&s.freed_left) == 2);
    join(&p);
    for (int i = 0; i < 5000 && atomic_load(&s.released) < atomic_load(&s.made); i++) sleep_ms(1);
    CHECK(atomic_load(&s.made) >= 1 && atomic_load(&s.made) == atomic_load(&s.released));
    sleep_ms(20);
}

#ifdef LOADER_TEST_HOSTED
static void hosted_free_from_inside_release(int timeout_ms) {
    /* Hosted mode: `release` runs on the host's thread answering a job; free called from
     * there does not wait for that thread's answer (with -1 it returns; with a timeout it
     * returns at once), and the thread then sees the feed gone. */
    source s = {.items = 1000};
    loader_config lc = loader_cfg();
    pool p;
    start(&p, &s, &lc, 2, 2);
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 40), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_wait_quiescent(p.feed, 20000), LOADER_RESULT_OK);
    atomic_store(&s.free_timeout_ms, timeout_ms);
    atomic_store(&s.free_in_release, p.feed);
    double t0 = now_ms();
    /* The repair's commit, on the host thread answering its last read, releases old pages. */
    CHECK_CODE(loader_feed_invalidate(p.feed), LOADER_RESULT_OK);
    for (int i = 0; i < 10000 && atomic_load(&s.freed_left) == 0; i++) sleep_ms(1);
    double took = now_ms() - t0;
    CHECK(atomic_load(&s.freed_left) == 1); /* returned OK, no load left running */
    CHECK(took < 2000 && (timeout_ms < 0 || took < timeout_ms));
    join(&p);
    CHECK(atomic_load(&s.made) == atomic_load(&s.released));
    CHECK_CODE(loader_feed_set_window(p.feed, 0, 20), LOADER_RESULT_STALE_HANDLE);
}
#endif

#ifdef LOADER_TEST_HOSTED
/* An event loop's host (loader_feed_new_hosted_ready): this thread takes jobs only after
 * `ready` said one is there, with no wait, and answers each with loader_feed_complete_job (the
 * read an answer issues is queued, and `ready` says so). The first load fails: its retry is
 * the feed's clock's read, told by `ready` from the clock thread. Then a job held across a far
 * jump is let go of by a cancel hint, which loader_feed_job_hinted says. */
static void hosted_event_loop_woken_by_ready(void) {
    source s = {.items = 100000};
    loader_config lc = loader_cfg();
    loader_feed_config fc = {.struct_size = sizeof fc, .workers = 4, .userdata = &s,
                             .release = release, .loader = &lc};
    loader_feed_handle f = 0;
    atomic_store(&readies, 0);
    CHECK_CODE(loader_feed_new_hosted_ready(&fc, ready, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_feed_new_hosted_ready(&fc, ready, &f), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_set_window(f, 0, 40), LOADER_RESULT_OK);
    int seen = 0, answered = 0;
    bool failed_one = false;
    loader_feed_job job;
    loader_load_result out;
    for (int i = 0; i < 10000 && loader_feed_wait_quiescent(f, 0) != LOADER_RESULT_OK; i++) {
        int now = atomic_load(&readies);
        if (now == seen) {
            sleep_ms(1);
            continue;
        }
        seen = now;
        while (loader_feed_next_job(f, 0, &job) == LOADER_RESULT_OK) {
            bool held = false;
            CHECK_CODE(loader_feed_job_hinted(job.token, &held), LOADER_RESULT_OK);
            CHECK(!held);
            memset(&out, 0, sizeof out);
            int32_t status = failed_one ? load(&s, &job.read, &out) : 1;
            failed_one = true;
            CHECK_CODE(loader_feed_complete_job(job.token, status, status ? NULL : &out),
                       LOADER_RESULT_OK);
            answered++;
        }
    }
    CHECK_CODE(loader_feed_wait_quiescent(f, 0), LOADER_RESULT_OK);
    CHECK(answered > 4 && failed_one);
    check_view(f, 0, 40);
    /* A job held across a far jump: the hint lets it go, and the host is told. */
    CHECK_CODE(loader_feed_set_window(f, 0, 60), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_next_job(f, 10000, &job), LOADER_RESULT_OK);
    bool hinted = true;
    CHECK_CODE(loader_feed_job_hinted(job.token, NULL), LOADER_RESULT_NULL_POINTER);
    CHECK_CODE(loader_feed_job_hinted(0, &hinted), LOADER_RESULT_INVALID_HANDLE);
    CHECK_CODE(loader_feed_job_hinted(job.token, &hinted), LOADER_RESULT_OK);
    CHECK(!hinted);
    uint8_t c[8];
    put_pos(c, 50000);
    CHECK_CODE(loader_feed_jump(f, c, 8, 50000), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_job_hinted(job.token, &hinted), LOADER_RESULT_OK);
    CHECK(hinted);
    memset(&out, 0, sizeof out);
    CHECK_CODE(loader_feed_complete_job(job.token, load(&s, &job.read, &out), &out), LOADER_RESULT_OK);
    CHECK_CODE(loader_feed_job_hinted(job.token, &hinted), LOADER_RESULT_STALE_HANDLE);
    finish(f, &s);
}
#endif

#ifdef LOADER_TEST_HOSTED
#define NAME "feed_hosted"
#else
#define NAME "feed_jobs"
#endif

int main(void) {
    job_bad_input_gets_its_code();
    jobs_under_failures_moves_and_jumps();
    a_job_held_past_the_read_timeout_is_let_go();
    free_withdraws_untaken_jobs_and_lets_held_ones_go();
    free_from_inside_a_job();
#ifdef LOADER_TEST_HOSTED
    hosted_free_from_inside_release(-1);
    hosted_free_from_inside_release(5000);
    hosted_event_loop_woken_by_ready();
#endif
    if (failed) {
        fprintf(stderr, NAME ": FAILED\n");
        return 1;
    }
    printf(NAME ": all checks passed\n");
    return 0;
}
