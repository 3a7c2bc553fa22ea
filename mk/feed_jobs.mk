# The feed's loads on the host's own threads, each under ASan+UBSan, valgrind and
# ThreadSanitizer; part of `make c-test`:
#   c-test-feed-jobs    job mode (loader_feed_new_jobs): taken with loader_feed_next_job and
#                       answered with loader_feed_complete_job
#   c-test-feed-hosted  hosted mode (loader_feed_new_hosted): the host's threads are the
#                       workers, each looping loader_feed_complete_next_job
# $(call feed_host_test,NAME): c-tests/NAME.c under the three tools.
define feed_host_test
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/$(1).c $(TEST_RPATH) -lpthread -o $(OUT)/$(1)_asan
	$(OUT)/$(1)_asan
	$(CC) $(CTEST_FLAGS) c-tests/$(1).c $(TEST_RPATH) -lpthread -o $(OUT)/$(1)_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/$(1)_plain
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/$(1).c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/$(1)_tsan
	$(TSAN_RUN) $(OUT)/$(1)_tsan
endef

.PHONY: c-test-feed-jobs c-test-feed-hosted
c-test: c-test-feed-jobs c-test-feed-hosted
c-test-feed-jobs: test-lib tsan-lib | $(OUT)
	$(call feed_host_test,feed_jobs)
c-test-feed-hosted: test-lib tsan-lib | $(OUT)
	$(call feed_host_test,feed_hosted)
