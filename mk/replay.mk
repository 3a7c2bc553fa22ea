# Recorded runs replayed (`loader-check --replay`; docs/RECORDING.md). Included by the
# top-level Makefile, which defines OUT, WARN, TEST_DIR, LIB and the test-lib and build rules.
#
#   make replay-check   every log of the corpus (tests/replay/) replayed by loader-check
#                       against the production loader and the model, and a corrupted copy of
#                       one refused; part of `make test` (tests/replay.rs replays them too)
#   make replay-corpus  regenerates the corpus (scripts/record_corpus.sh): simulated hosts,
#                       the checker's regressions, the C example, hostile C hosts, the demo
#   make bench-record   events per second with recording on against off, in the same run

.PHONY: replay-check replay-corpus bench-record

REPLAY_LOGS := $(wildcard tests/replay/*.log)

replay-check: test-lib | $(OUT)
	@test -n "$(REPLAY_LOGS)" || { echo "replay-check: no log in tests/replay"; exit 1; }
	for f in $(REPLAY_LOGS); do ./$(TEST_DIR)/loader-check --replay $$f --itf $(OUT)/replay.itf.json > /dev/null || exit 1; done
	@echo "replay-check: $(words $(REPLAY_LOGS)) recorded runs replay as recorded, refining the model"
	# A callback dropped from the last batch of a run (the close's `changed`) must be reported
	# where it was dropped.
	sed '$$s/ C$$//' tests/replay/sim-hostile.log > $(OUT)/corrupted.log
	! cmp -s tests/replay/sim-hostile.log $(OUT)/corrupted.log
	./$(TEST_DIR)/loader-check --replay $(OUT)/corrupted.log > $(OUT)/corrupted.txt; test $$? -eq 1
	grep -q "divergence at line $$(wc -l < $(OUT)/corrupted.log)" $(OUT)/corrupted.txt

# The C programs are built without -Werror: they only make recordings here (their own targets
# build them with every warning).
replay-corpus: build test-lib | $(OUT)
	$(CC) -std=c11 -g -O1 -Iinclude examples/sqlite_feed.c -Ltarget/release -lloader \
	    -Wl,-rpath,$(CURDIR)/target/release -lsqlite3 -lpthread -o $(OUT)/sqlite_feed_record
	$(CC) -std=c11 -g -Iinclude -DLOADER_TESTING c-tests/hostile.c $(TEST_RPATH) -lpthread -o $(OUT)/hostile_record
	scripts/record_corpus.sh tests/replay target/release $(TEST_DIR) $(OUT)

bench-record:
	$(TEST_CARGO) bench --bench record --features testing
