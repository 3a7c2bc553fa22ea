# The C example examples/sqlite_feed.c (a live feed over SQLite; needs libsqlite3-dev).
# Included by the top-level Makefile, which defines OUT, WARN, TSAN_CC, TSAN_DIR, TSAN_RUN and
# the pkgconfig-test and tsan-lib rules.
#
#   make c-example        the runs below; part of `make test`
#   make c-example-asan   built as a user builds it, against the installed library
#                         (pkgconfig-test installs into $(OUT)/prefix; pkg-config gives the
#                         flags), and run under ASan+UBSan
#   make c-example-tsan   built with clang through pkg-config against a prefix where the
#                         ThreadSanitizer build of the library (tsan-lib) is installed, and
#                         run under TSan
#   make c-example-bounded  the example's load, included by c-tests/sqlite_feed_bounded.c,
#                         answers a bounded read that finds no row with `until` (no cursor
#                         stall), under ASan+UBSan against the installed library
#   make c-example-lines  the example's host part (the SQL, the writer, the scenario) is at
#                         most 150 code lines (scripts/host_lines.sh)
#   FEED_ARGS             the example's options; a short run by default

FEED_ARGS ?= --duration 3
FEED_PKG_CONFIG := PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config

.PHONY: c-example c-example-asan c-example-tsan c-example-bounded c-example-lines

c-example: c-example-lines c-example-asan c-example-bounded c-example-tsan

c-example-lines:
	@echo "c-example-lines: $$(scripts/host_lines.sh examples/sqlite_feed.c 150) code lines in the host part of examples/sqlite_feed.c (at most 150)"

c-example-bounded: pkgconfig-test | $(OUT)
	$(CC) -std=c11 $(WARN) -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all c-tests/sqlite_feed_bounded.c \
	    $$($(FEED_PKG_CONFIG) --cflags --libs loader sqlite3) -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib \
	    -lpthread -o $(OUT)/sqlite_feed_bounded
	$(OUT)/sqlite_feed_bounded

c-example-asan: pkgconfig-test | $(OUT)
	$(CC) -std=c11 $(WARN) -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all examples/sqlite_feed.c \
	    $$($(FEED_PKG_CONFIG) --cflags --libs loader sqlite3) -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib \
	    -lpthread -o $(OUT)/sqlite_feed_asan
	$(OUT)/sqlite_feed_asan $(FEED_ARGS)

FEED_TSAN_PREFIX := $(OUT)/tsan-prefix
c-example-tsan: tsan-lib | $(OUT)
	rm -rf $(FEED_TSAN_PREFIX)
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/$(FEED_TSAN_PREFIX) \
	    INSTALL_LIB=$(TSAN_DIR)/libloader.so
	$(TSAN_CC) -std=c11 $(WARN) -g -O1 -fsanitize=thread examples/sqlite_feed.c \
	    $$(PKG_CONFIG_PATH=$(FEED_TSAN_PREFIX)/lib/pkgconfig pkg-config --cflags --libs loader sqlite3) \
	    -Wl,-rpath,$(CURDIR)/$(FEED_TSAN_PREFIX)/lib -lpthread -o $(OUT)/sqlite_feed_tsan
	$(TSAN_RUN) $(OUT)/sqlite_feed_tsan $(FEED_ARGS)
