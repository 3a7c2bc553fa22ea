# The feed in job mode (loader_feed_new_jobs): loads on the host's own threads, taken with
# loader_feed_next_job and answered with loader_feed_complete_job; under ASan+UBSan, valgrind
# and ThreadSanitizer. Part of `make c-test`.
.PHONY: c-test-feed-jobs
c-test: c-test-feed-jobs
c-test-feed-jobs: test-lib tsan-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/feed_jobs.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_jobs_asan
	$(OUT)/feed_jobs_asan
	$(CC) $(CTEST_FLAGS) c-tests/feed_jobs.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_jobs_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/feed_jobs_plain
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/feed_jobs.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/feed_jobs_tsan
	$(TSAN_RUN) $(OUT)/feed_jobs_tsan

# The feed in hosted mode (loader_feed_new_hosted): the host's threads are the workers, each
# looping loader_feed_complete_next_job; feed_jobs.c's checks, under the same three tools.
.PHONY: c-test-feed-hosted
c-test: c-test-feed-hosted
c-test-feed-hosted: test-lib tsan-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/feed_hosted.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_hosted_asan
	$(OUT)/feed_hosted_asan
	$(CC) $(CTEST_FLAGS) c-tests/feed_hosted.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_hosted_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/feed_hosted_plain
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/feed_hosted.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/feed_hosted_tsan
	$(TSAN_RUN) $(OUT)/feed_hosted_tsan
