/* A callback that ends its thread: pthread_exit from inside a libloader call. The unwind must
 * pass through the library without aborting, leave no lock held, and leave the callbacks that
 * were still queued on that thread to the next call into the loader, from any thread. */
#include <pthread.h>

#include "host.h"

/* Answers the read just issued (its callbacks queue behind this one), then ends the thread. */
static void answer_then_exit(host *h) {
    pending_read p = take(h, h->npending - 1);
    answer(h, &p);
    pthread_exit(NULL);
}

static void exit_now(host *h) {
    (void)h;
    pthread_exit(NULL);
}

static void *move_window(void *arg) {
    host *h = (host *)arg;
    loader_set_window(h->handle, 0, 10);
    return arg; /* not reached: the issue callback ends the thread */
}

static void *free_loader(void *arg) {
    host *h = (host *)arg;
    loader_free(h->handle);
    return arg; /* not reached: the release callback ends the thread */
}

static void run_thread(void *(*body)(void *), host *h) {
    pthread_t t;
    void *ret = NULL;
    CHECK(pthread_create(&t, NULL, body, h) == 0);
    CHECK(pthread_join(t, &ret) == 0);
    CHECK(ret == PTHREAD_CANCELED || ret == NULL);
    CHECK(ret != h);
}

static void a_thread_ended_in_issue_leaves_the_loader_usable(void) {
    host *h = host_new(2, 40);
    h->on_issue = answer_then_exit;
    run_thread(move_window, h);
    /* The thread saw the first read, answered it, and ended before the next issue ran. */
    CHECK(h->issues == 1);
    h->in_hook = 0; /* the hook never returned */
    h->on_issue = NULL;

    /* No lock is held: the state is readable from this thread, and not poisoned. */
    loader_snapshot s = state_of(h);
    CHECK(s.outstanding_reads == 1 && s.pages == 1 && s.accepted == 1);
    loader_counts c = {.struct_size = sizeof c};
    CHECK_CODE(loader_stats(h->handle, &c), LOADER_RESULT_OK);
    CHECK(c.issued_finite == 2);

    /* The stranded issue is delivered by the next call, here from another thread. */
    CHECK_CODE(loader_tick(h->handle, 0), LOADER_RESULT_OK);
    CHECK(h->issues == 2 && h->npending == 1);
    drain(h);
    s = state_of(h);
    CHECK(s.covered_start == 0 && s.covered_end >= 10 && s.outstanding_reads == 0);
    CHECK(h->issues == 5);

    host_free(h);
}

static void *answer_first_pending(void *arg) {
    host *h = (host *)arg;
    pending_read p = take(h, 0);
    answer(h, &p);
    return arg; /* not reached: the issue callback ends the thread */
}

static void the_callbacks_an_ended_thread_left_run_on_the_next_call(void) {
    host *h = host_new(2, 40);
    CHECK_CODE(loader_set_window(h->handle, 0, 10), LOADER_RESULT_OK);
    CHECK(h->npending == 1 && h->issues == 1);
    /* The answer's callbacks: the next read's `issue` (which ends the thread), then
     * `changed`. */
    h->on_issue = exit_now;
    int changes = h->changes;
    run_thread(answer_first_pending, h);
    h->in_hook = 0;
    h->on_issue = NULL;
    CHECK(h->issues == 2 && h->npending == 1);
    CHECK(h->changes == changes);

    /* The read whose `issue` ended the thread was let go of: an own failure, not a read
     * outstanding forever. Reading the state delivers nothing; the next event call delivers
     * the stranded `changed` callbacks first. */
    loader_snapshot s = state_of(h);
    CHECK(s.accepted == 1 && s.outstanding_reads == 0 && s.failure == LOADER_FAILURE_OWN);
    CHECK(h->changes == changes);
    CHECK_CODE(loader_tick(h->handle, 0), LOADER_RESULT_OK);
    CHECK(h->changes > changes);
    /* The host took the read before its thread ended; its answer now is a late one. */
    pending_read late = take(h, 0);
    CHECK_CODE(answer(h, &late), LOADER_RESULT_OK);
    /* The backoff retry recovers the view. */
    bool armed = false;
    uint64_t deadline = 0;
    CHECK_CODE(loader_next_deadline(h->handle, &armed, &deadline), LOADER_RESULT_OK);
    CHECK(armed);
    CHECK_CODE(loader_tick(h->handle, deadline), LOADER_RESULT_OK);
    drain(h);
    s = state_of(h);
    CHECK(s.covered_end >= 10 && s.outstanding_reads == 0 && s.quiescent);
    host_free(h);
}

static void a_thread_ended_in_a_release_of_loader_free_frees_the_handle(void) {
    host *h = host_new(2, 40);
    CHECK_CODE(loader_set_window(h->handle, 0, 6), LOADER_RESULT_OK);
    drain(h);
    CHECK(state_of(h).pages == 3);
    h->on_release = exit_now;
    run_thread(free_loader, h);
    /* As documented: the handle is freed, and the releases after the one that ended the
     * thread are not made. */
    int released = 0;
    for (uint64_t i = 0; i < MAX_ACQ; i++) released += h->released[i];
    CHECK(released == 1 && h->bad_releases == 0);
    CHECK_CODE(loader_free(h->handle), LOADER_RESULT_STALE_HANDLE);
    CHECK_CODE(loader_tick(h->handle, 0), LOADER_RESULT_STALE_HANDLE);
    free(h);
}

int main(void) {
    RUN(a_thread_ended_in_issue_leaves_the_loader_usable);
    RUN(the_callbacks_an_ended_thread_left_run_on_the_next_call);
    RUN(a_thread_ended_in_a_release_of_loader_free_frees_the_handle);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}
