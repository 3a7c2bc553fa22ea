/* The feed in hosted mode (loader_feed_new_hosted): the host's threads are the feed's workers.
 * c-tests/feed_jobs.c's checks, each executor looping loader_feed_complete_next_job, and free
 * from inside `release` on the host's answering thread. */
#define LOADER_TEST_HOSTED
#include "feed_jobs.c"
