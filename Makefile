# libloader: build, test, install and demo entry points.
#   make demo     the main job (see README)
#   make test     every test; this is what CI runs
CARGO ?= cargo
RUSTC ?= rustc
CC ?= cc
CXX ?= c++
PREFIX ?= /usr/local
TSAN_CC ?= clang-19

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR := $(firstword $(subst ., ,$(VERSION)))
# The public library: what build, install, pkg-config and the demo use. Its exports are the
# public API only.
LIB := target/release/libloader.so
SONAME := libloader.so.$(MAJOR)
# The test library: built with the `testing` feature (the test ABI under LOADER_TESTING in
# include/loader.h, and loader-check), in its own target directory so it never replaces the
# public one. Every test suite and bench links or loads this one.
TEST_TARGET := target/testing
TEST_DIR := $(TEST_TARGET)/release
TEST_LIB := $(TEST_DIR)/libloader.so
TEST_CARGO := CARGO_TARGET_DIR=$(TEST_TARGET) $(CARGO)
OUT := target/c-tests
WARN := -Wall -Wextra -Wpedantic -Werror
CTEST_FLAGS := -std=c11 $(WARN) -g -Iinclude -DLOADER_TESTING -DLOADER_EXPECTED_VERSION=\"$(VERSION)\"
RPATH := -Ltarget/release -lloader -Wl,-rpath,$(CURDIR)/target/release
TEST_RPATH := -L$(TEST_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TEST_DIR)

.PHONY: all build test-lib test tsan-lib rust-test doc lint check check-deep check-header bench bench-quick icount-check bench-abi bench-feed bench-py bench-depth bench-liveness bench-follow c-test c-test-asan c-test-valgrind \
        c-test-abi c-test-tsan c-test-feed c-test-stress c-test-empty c-test-anchored c-test-far c-test-follow c-test-ranged cpp-test cpp-coverage cpp-example cpp-pkgconfig-test header-test symbols-test install pkgconfig-test \
        readme-c-example clean

all: build

build: $(LIB)

# Always ask cargo: it knows whether anything changed. The SONAME link lets -lloader
# binaries start from the build tree.
$(LIB): FORCE
	$(CARGO) build --release
	ln -sf libloader.so target/release/$(SONAME)
FORCE:

test-lib: $(TEST_LIB)

$(TEST_LIB): FORCE
	$(TEST_CARGO) build --release --features testing
	ln -sf libloader.so $(TEST_DIR)/$(SONAME)

# Every test that exists.
test: rust-test doc lint check replay-check bench-quick icount-check c-test c-example fuzz-check py-test py-mypy

rust-test:
	$(CARGO) test --all-targets --features testing
	$(CARGO) test --doc --features testing

# The API documentation, with every rustdoc warning (a broken or private link) an error.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps
	# The test instruments too (the checker, the simulation, the guard): their docs link
	# only to what those docs can see.
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --features testing

lint: check-header
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --features testing -- -D warnings
	$(CARGO) clippy --all-targets -- -D warnings

# Fails when include/loader.h is not what build.rs would generate from the sources.
check-header:
	LOADER_CHECK_HEADER=1 $(CARGO) build --release

# The model's findings and the ledger's refinement, at the default and at larger bounds.
# loader-check needs the `testing` feature (it uses `refinement`): it is built with the test
# library.
# $(call violates,ARGS,CHECKS): `loader-check ARGS` exits with 1 and reports each of CHECKS
# (invariants, ProgressUnderChurn or ProgressGoneCursor) violated.
violates = ./$(TEST_DIR)/loader-check $(1) > $(OUT)/violates.txt; status=$$?; \
	for c in $(2); do \
	    grep -qE "^  $$c +violated" $(OUT)/violates.txt && test $$status -eq 1 || \
	    { cat $(OUT)/violates.txt; echo "check: loader-check $(1) does not fail $$c"; exit 1; }; \
	done
# $(call loader_violates,ARGS,PROPERTY): `loader-check --loader ARGS` exits with 1 and
# reports PROPERTY violated.
loader_violates = ./$(TEST_DIR)/loader-check --loader $(1) > $(OUT)/violates.txt; status=$$?; \
	grep -qE "^VIOLATED ($(2)):" $(OUT)/violates.txt && test $$status -eq 1 || \
	{ cat $(OUT)/violates.txt; echo "check: loader-check --loader $(1) does not fail $(2)"; exit 1; }
check: test-lib | $(OUT)
	./$(TEST_DIR)/loader-check --rules current --stop-at-first > /dev/null; test $$? -eq 1
	./$(TEST_DIR)/loader-check --rules unifiedMinRecheck --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinRecheck --max-epoch 3 --ids 5 --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinChurn
	./$(TEST_DIR)/loader-check --rules unifiedMinChurn --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinChurn --max-epoch 3 --ids 5
	./$(TEST_DIR)/loader-check --rules unifiedMinChurn --max-epoch 3 --ids 5 --no-model-bounds
	# Progress under churn: an Invalidate after every system step; coverEpoch rises within 3
	# system steps under unifiedMinChurn, and the seed's rules and unifiedMinRecheck fail. The
	# start states are judged with 3 request slots spare beyond the 5 ids, so no path is cut
	# short by the slots running out (it reports 0 paths cut).
	./$(TEST_DIR)/loader-check --progress --rules unifiedMinChurn --max-epoch 4 --ids 5 --spare-ids 3 --no-model-bounds
	for r in current unifiedMin unifiedMinRecheck; do \
	    ./$(TEST_DIR)/loader-check --progress --rules $$r --max-epoch 4 --ids 5 --no-model-bounds --stop-at-first > /dev/null; \
	    test $$? -eq 1 || exit 1; \
	done
	# The mutants of unifiedMinChurn (src/model/mutant.rs; `loader-check --list-mutants`): each
	# breaks one part of its overtaken-chain rule and must fail the check that shows that part
	# needed. Without the abandonment for a full read, progress fails at the size above, and
	# only with the spare slots; each wrong overtaken commit breaks an invariant of the commit.
	$(call violates,--progress --rules mutantChurnNoAbandon --max-epoch 4 --ids 5 --spare-ids 3 --no-model-bounds --stop-at-first,ProgressUnderChurn)
	$(call violates,--rules mutantChurnStampEpoch --no-model-bounds,CoverageHeld CommitStamped CommitReleases)
	$(call violates,--rules mutantChurnNormalizeAtEpoch --no-model-bounds,CoverageHeld CommitStamped)
	$(call violates,--rules mutantChurnNoNormalize --no-model-bounds,CommitReleases)
	$(call violates,--rules mutantChurnCommitFullDebt --no-model-bounds,ChainCommitBoundedDebt)
	# The page retry (spec/LoaderLedgerPageRetry.tla) on top of unifiedMinChurn: every invariant,
	# and progress under churn within the same 3 system steps.
	./$(TEST_DIR)/loader-check --rules unifiedMinPageRetry
	./$(TEST_DIR)/loader-check --rules unifiedMinPageRetry --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinPageRetry --max-epoch 3 --ids 5 --no-model-bounds
	./$(TEST_DIR)/loader-check --progress --rules unifiedMinPageRetry --max-epoch 4 --ids 5 --spare-ids 3 --no-model-bounds
	# Its mutants: a page failure left standing after an invalidation, or recorded for a read an
	# invalidation overtook, is seen by PageFailureQuiet alone among the invariants.
	$(call violates,--rules mutantPageNoDemote --no-model-bounds,PageFailureQuiet)
	$(call violates,--rules mutantPageOverDebt --no-model-bounds,PageFailureQuiet)
	# The gone-cursor check (below), whose start states include recorded failures, sees both as
	# a deadlock: the page failure over bounded debt, which nothing repairs.
	$(call violates,--progress --gone-cursor --rules mutantPageNoDemote --no-model-bounds --spare-ids 4 --stop-at-first,ProgressGoneCursor)
	$(call violates,--progress --gone-cursor --rules mutantPageOverDebt --no-model-bounds --spare-ids 4 --stop-at-first,ProgressGoneCursor)
	# The repair retry (spec/LoaderLedgerRepairRetry.tla) on top of unifiedMinPageRetry: every
	# invariant, and progress under churn within the same 3 system steps; its mutants (a
	# repair failure left over bounded debt after an invalidation, or recorded for an
	# overtaken chain) are seen by RepairFailureQuiet alone.
	./$(TEST_DIR)/loader-check --rules unifiedMinRepairRetry
	./$(TEST_DIR)/loader-check --rules unifiedMinRepairRetry --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinRepairRetry --max-epoch 3 --ids 5 --no-model-bounds
	./$(TEST_DIR)/loader-check --progress --rules unifiedMinRepairRetry --max-epoch 4 --ids 5 --spare-ids 3 --no-model-bounds
	$(call violates,--rules mutantRepairNoDemote --no-model-bounds,RepairFailureQuiet)
	$(call violates,--rules mutantRepairOvertaken --no-model-bounds,RepairFailureQuiet)
	# The escalation (spec/LoaderLedgerEscalate.tla) on top of unifiedMinRepairRetry: the read
	# a page or repair failure's retry starts again (resumed) fails through the lattice. Every
	# invariant, progress under churn within the same 3 system steps, and progress under the
	# gone-cursor adversary (every resumed read fails): coverEpoch rises or nothing is owed
	# within 5 steps, with spare slots (0 paths cut). Its mutant, the resumed read's failure
	# recorded as a page or repair failure again, retries it for ever: a cycle.
	./$(TEST_DIR)/loader-check --rules unifiedMinEscalate
	./$(TEST_DIR)/loader-check --rules unifiedMinEscalate --no-model-bounds
	./$(TEST_DIR)/loader-check --rules unifiedMinEscalate --max-epoch 3 --ids 5 --no-model-bounds
	./$(TEST_DIR)/loader-check --progress --rules unifiedMinEscalate --max-epoch 3 --ids 5 --spare-ids 3 --no-model-bounds
	./$(TEST_DIR)/loader-check --progress --gone-cursor --rules unifiedMinEscalate --max-epoch 3 --ids 5 --spare-ids 3 --no-model-bounds
	$(call violates,--progress --gone-cursor --rules mutantEscalateNever --max-epoch 3 --ids 5 --spare-ids 3 --no-model-bounds --stop-at-first,ProgressGoneCursor)
	./$(TEST_DIR)/loader-check --impl --max-epoch 3 --ids 6
	# The production Loader, explored exhaustively over the quick grid of small sources and
	# settings (src/check: every host event interleaving to depth 8, 10 for the bound grid,
	# 12 for the far grid and 6 for the fault grid, every property after every event and
	# progress from every state, in the fault grid with a host that repeats a cursor or loses
	# one for good); `--deep` is the longer run.
	./$(TEST_DIR)/loader-check --loader
	# The loader's mutants (src/loader/mutant.rs; docs/DESIGN.md, "The loader checker finds
	# what the fuzzer found"): with a fix undone, the grid's part made for it finds the defect.
	$(call loader_violates,--part bound --mutant rangedRereadsOutside --stop-at-first,ranged_cost)
	$(call loader_violates,--part bound --mutant rangedReadsPast --stop-at-first,bound)
	$(call loader_violates,--part bound --mutant rangedKeepsBefore --stop-at-first,bound)
	$(call loader_violates,--part bound --mutant rangedShiftUnsigned --stop-at-first,no_panic)
	$(call loader_violates,--part far --mutant farStartKeepsRepair --stop-at-first,far_start|far_move_cost)
	$(call loader_violates,--mutant repairShiftsKept --stop-at-first,contiguous)
	# The forward rule (a change ahead of a forward read decided by its answer) without its
	# check: an answer that reached the change (here, claimed the source's end) taken as current.
	$(call loader_violates,--mutant aheadNeverReached --stop-at-first,quiet_view)
	# The pump's shortcut misapplied (an answer that settles current skipping the pump as one
	# that reads on does): the guard that checks each skip against a pump run on a copy panics.
	$(call loader_violates,--mutant settledSkipsPump --stop-at-first,no_panic)
	# Issue 35's two retry regressions, each fix undone: a source that repeats its cursor with
	# items past a page that succeeds is read for ever when any success starts the automatic
	# retry count again, and a cursor gone for good is read for ever when its page read again
	# is retried as that page: progress with the faulty hosts runs out of answers.
	$(call loader_violates,--part faults --mutant retryResetBySuccess --stop-at-first,progress)
	$(call loader_violates,--part faults --mutant pageRetriedForEver --stop-at-first,progress)

# The loader checker's longer run (not in CI): the deep grid, to depth 9.
check-deep: test-lib
	./$(TEST_DIR)/loader-check --loader --deep --verbose

# ---- benchmarks (see benches/; each prints its ns/event table and met/missed lines) ----

bench: bench-abi bench-feed bench-py
	$(TEST_CARGO) bench --benches --features testing

# The steady stream through the C ABI, against loader_floor in the same run.
ABI_BENCH := $(OUT)/abi_bench
$(ABI_BENCH): c-bench/abi_bench.c test-lib | $(OUT)
	$(CC) -O2 -std=c11 $(WARN) -Iinclude -DLOADER_TESTING c-bench/abi_bench.c $(TEST_RPATH) -o $@

bench-abi: $(ABI_BENCH)
	$(ABI_BENCH)

# Loads per second through the feed against a host's own pool over the C ABI, same run.
FEED_BENCH := $(OUT)/feed_bench
$(FEED_BENCH): c-bench/feed_bench.c test-lib | $(OUT)
	$(CC) -O2 -std=c11 $(WARN) -Iinclude c-bench/feed_bench.c $(TEST_RPATH) -lpthread -o $@

bench-feed: $(FEED_BENCH)
	$(FEED_BENCH)

# The instruction-count gate: instructions per event of the steady stream, its replay, the
# ledger alone, the C ABI stream, a far move, a ranged repair and a Python Feed load, under
# callgrind, against benches/icount.txt; fails on a growth over 3% (scripts/icount.py).
icount-check: $(ABI_BENCH) build venv
	$(CARGO) build --release --example icount
	$(PYTHON3) scripts/icount.py check

# Events per second through the Python bindings.
bench-py: build venv
	LIBLOADER_PATH=$(CURDIR)/$(LIB) $(VENV)/bin/python bindings/python/bench_events.py

# Items read and pages held by recoveries at window depths 10^3 to 10^6: counts,
# not timings, so it is a check that fails when a target is missed. It takes well under a
# second; `cargo bench --benches` (bench, bench-quick) runs it too, in full.
bench-depth:
	$(TEST_CARGO) bench --bench depth --features testing

# Reads to recover under continuing failures, and commits and acquisitions held under a stream
# of invalidations: counts from seeded failures, not timings, so it is a check that
# fails when a judged target is missed (see CHURN_JUDGED in benches/liveness.rs).
bench-liveness:
	$(TEST_CARGO) bench --bench liveness --features testing

# What following a growing log costs: items read per item appended at 100, 1,000 and 10,000
# appends/s (judged: at most 1.05 plus page rounding), reads per move, the time from an
# append to a fresh view (docs/BENCHMARKS.md, "Following a growing source").
bench-follow:
	$(TEST_CARGO) bench --bench follow --features testing

# Every bench once, briefly: they always build and run. The numbers are not judged, except
# depth's counts (see bench-depth).
bench-quick: $(ABI_BENCH) $(FEED_BENCH) venv
	LOADER_BENCH_QUICK=1 $(TEST_CARGO) bench --benches --features testing
	$(ABI_BENCH) --quick
	$(FEED_BENCH) --quick
	LIBLOADER_PATH=$(CURDIR)/$(LIB) $(VENV)/bin/python bindings/python/bench_events.py --quick

# ---- C and C++ ----

c-test: header-test symbols-test c-test-abi c-test-asan c-test-valgrind c-test-empty c-test-anchored c-test-far c-test-follow c-test-ranged c-test-tsan c-test-hostile c-test-hostile-tsan c-test-feed cpp-test pkgconfig-test readme-c-example

$(OUT):
	mkdir -p $(OUT)

# The header compiles on its own and included twice, as C11 and as C++17, with and without
# the test ABI (LOADER_TESTING).
header-test: build | $(OUT)
	printf '#include "loader.h"\n' > $(OUT)/h1.c
	printf '#include "loader.h"\n#include "loader.h"\nint main(void) { return loader_version() == 0; }\n' > $(OUT)/h2.c
	cp $(OUT)/h1.c $(OUT)/h1.cpp && cp $(OUT)/h2.c $(OUT)/h2.cpp
	for testing in "" -DLOADER_TESTING; do \
	    $(CC) -std=c11 $(WARN) $$testing -Iinclude -fsyntax-only $(OUT)/h1.c && \
	    $(CC) -std=c11 $(WARN) $$testing -Iinclude -fsyntax-only $(OUT)/h2.c && \
	    $(CXX) -std=c++17 $(WARN) $$testing -Iinclude -fsyntax-only $(OUT)/h1.cpp && \
	    $(CXX) -std=c++17 $(WARN) $$testing -Iinclude -fsyntax-only $(OUT)/h2.cpp || exit 1; \
	done
	printf '#include "loader.h"\nint main(void) { return loader_floor(0) == 0; }\n' > $(OUT)/h3.c
	@if $(CC) -std=c11 $(WARN) -Iinclude -fsyntax-only $(OUT)/h3.c 2> /dev/null; then \
	    echo "header-test: the test ABI is declared without LOADER_TESTING"; exit 1; fi
	$(CXX) -std=c++17 $(WARN) -Iinclude -Ibindings/cpp -fsyntax-only -x c++ bindings/cpp/loader.hpp
	@echo "header-test: loader.h compiles alone and twice as C11 and C++17; the test ABI only with LOADER_TESTING"

# Only loader_* symbols are exported, and the SONAME carries the major version. The default
# library exports exactly the header's public functions, none of the test ABI (the functions
# under LOADER_TESTING); the test library exports both.
SYMBOLS := $(OUT)/symbols
# The function declarations of a header (standard input without one): the lines that start with
# a lower-case letter, once a deprecated function's LOADER_DEPRECATED("...") prefix is dropped.
DECLARED = sed 's/^LOADER_DEPRECATED("[^"]*") //' $(1) | grep -E '^[a-z]'
symbols-test: build test-lib | $(OUT)
	@bad=$$(nm -D --defined-only $(LIB) | awk '{print $$3}' | grep -v '^loader_' || true); \
	if [ -n "$$bad" ]; then echo "exported symbols without the loader_ prefix:"; echo "$$bad"; exit 1; fi
	readelf -d $(LIB) | grep -q 'SONAME.*\[$(SONAME)\]'
	$(call DECLARED,include/loader.h) | grep -oE '\bloader_[a-z_]+\(' | tr -d '(' | sort -u > $(SYMBOLS).header
	sed -n '/^#if defined(LOADER_TESTING)$$/,/^#endif$$/p' include/loader.h | $(call DECLARED,) \
	    | grep -oE '\bloader_[a-z_]+\(' | tr -d '(' | sort -u > $(SYMBOLS).testing
	test -s $(SYMBOLS).testing
	comm -23 $(SYMBOLS).header $(SYMBOLS).testing > $(SYMBOLS).public
	nm -D --defined-only $(LIB) | awk '{print $$3}' | sort > $(SYMBOLS).default
	nm -D --defined-only $(TEST_LIB) | awk '{print $$3}' | sort > $(SYMBOLS).test-lib
	@if [ -n "$$(comm -12 $(SYMBOLS).default $(SYMBOLS).testing)" ]; then \
	    echo "the default library exports test hooks:"; comm -12 $(SYMBOLS).default $(SYMBOLS).testing; exit 1; fi
	@diff -u $(SYMBOLS).public $(SYMBOLS).default || \
	    { echo "the default library's exports differ from the header's public functions"; exit 1; }
	@diff -u $(SYMBOLS).header $(SYMBOLS).test-lib || \
	    { echo "the test library's exports differ from the header's functions"; exit 1; }
	@echo "symbols-test: $$(wc -l < $(SYMBOLS).default) symbols, all loader_* and public, no test hook; SONAME $(SONAME)"
	@echo "symbols-test: the test library adds $$(tr '\n' ' ' < $(SYMBOLS).testing)"

# The structs that grow, across header versions: one host (c-tests/abi/abi_host.c) built
# against the first release's header, frozen in c-tests/abi/v1, and against a header one
# release newer than today's (c-tests/abi/future_header.sh appends a field to each struct),
# both run against this library under ASan+UBSan. The older host must work unchanged; the
# newer one works while its new fields are zero and gets LOADER_RESULT_UNKNOWN_FIELD when it
# sets one. The script's output is checked first: a header it left alone proves nothing.
ABI_FLAGS := -std=c11 $(WARN) -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
c-test-abi: build | $(OUT)
	mkdir -p $(OUT)/abi-future
	c-tests/abi/future_header.sh include/loader.h > $(OUT)/abi-future/loader.h
	test $$(diff include/loader.h $(OUT)/abi-future/loader.h | grep -c '^> ') -eq 4
	$(CC) $(ABI_FLAGS) -Ic-tests/abi/v1 -DLOADER_ABI_V1 c-tests/abi/abi_host.c $(RPATH) -o $(OUT)/abi_host_v1
	$(OUT)/abi_host_v1
	$(CC) $(ABI_FLAGS) -I$(OUT)/abi-future -DLOADER_ABI_FUTURE c-tests/abi/abi_host.c $(RPATH) \
	    -o $(OUT)/abi_host_future
	$(OUT)/abi_host_future
	$(CC) $(ABI_FLAGS) -Iinclude c-tests/abi/abi_host.c $(RPATH) -o $(OUT)/abi_host_current
	$(OUT)/abi_host_current

# AddressSanitizer and UndefinedBehaviorSanitizer. The canary proves the sanitizer is linked:
# it must be caught.
c-test-asan: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/asan_canary.c -o $(OUT)/asan_canary
	@if $(OUT)/asan_canary 2> $(OUT)/asan_canary.log; then echo "ASan is not linked: the canary ran clean"; exit 1; fi
	grep -q 'AddressSanitizer: heap-buffer-overflow' $(OUT)/asan_canary.log
	@echo "c-test-asan: the canary was caught, so the sanitizer is linked"
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/test_main.c $(TEST_RPATH) -o $(OUT)/test_asan
	RUST_BACKTRACE=0 $(OUT)/test_asan
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/views.c $(TEST_RPATH) -o $(OUT)/views_asan
	RUST_BACKTRACE=0 $(OUT)/views_asan
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/thread_exit.c $(TEST_RPATH) -lpthread -o $(OUT)/thread_exit_asan
	$(OUT)/thread_exit_asan
	$(CC) -std=c11 $(WARN) -g -O1 -Iinclude -DLOADER_TESTING -fsanitize=address,undefined -fno-sanitize-recover=all \
	    c-tests/stress.c $(TEST_RPATH) -lpthread -o $(OUT)/stress_asan
	$(OUT)/stress_asan 20000
	$(CC) -std=c11 $(WARN) -g -O1 -Iinclude -DLOADER_TESTING -fsanitize=address,undefined -fno-sanitize-recover=all \
	    c-tests/threads.c $(TEST_RPATH) -lpthread -o $(OUT)/threads_asan
	$(OUT)/threads_asan

c-test-valgrind: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) c-tests/test_main.c $(TEST_RPATH) -o $(OUT)/test_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/test_plain
	$(CC) $(CTEST_FLAGS) c-tests/views.c $(TEST_RPATH) -o $(OUT)/views_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/views_plain
	$(CC) $(CTEST_FLAGS) c-tests/thread_exit.c $(TEST_RPATH) -lpthread -o $(OUT)/thread_exit_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/thread_exit_plain

# ThreadSanitizer on the stress test, the threading contract's tests (threads.c) and threads
# ended inside a callback (thread_exit.c: pthread_exit unwinds through the library). The library and the standard library under it are
# built with -Zsanitizer=thread (RUSTC_BOOTSTRAP on this stable toolchain; -Zbuild-std needs
# the rust-src component, which .ci/run adds). Rebuilding std matters: the prebuilt one is not
# instrumented, and Arc's release/acquire fence in it is invisible to the race detector, which
# then reports the last Arc drop's free as racing with other threads' reads (seen in CI).
# clang's runtime matches rustc's instrumentation.
TSAN_DIR := target/tsan/x86_64-unknown-linux-gnu/release
TSAN_RUN := TSAN_OPTIONS="halt_on_error=1 exitcode=66"
tsan-lib:
	@test -d "$$($(RUSTC) --print sysroot)/lib/rustlib/src/rust/library" || \
	    { echo "tsan-lib: needs the rust-src component: rustup component add rust-src" >&2; exit 1; }
	RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan \
	    $(CARGO) build -Zbuild-std --release --lib --features testing --target x86_64-unknown-linux-gnu
	ln -sf libloader.so $(TSAN_DIR)/$(SONAME)

c-test-tsan: tsan-lib | $(OUT)
	$(TSAN_CC) -std=c11 $(WARN) -g -O1 -Iinclude -DLOADER_TESTING -fsanitize=thread c-tests/stress.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/stress_tsan
	$(TSAN_RUN) $(OUT)/stress_tsan 10000
	$(TSAN_CC) -std=c11 $(WARN) -g -O1 -Iinclude -DLOADER_TESTING -fsanitize=thread c-tests/threads.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/threads_tsan
	$(TSAN_RUN) $(OUT)/threads_tsan 10000
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/thread_exit.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/thread_exit_tsan
	$(TSAN_RUN) $(OUT)/thread_exit_tsan

# Empty pages through the C ABI (filtered stretches, repeated cursors), under ASan+UBSan and
# valgrind.
c-test-empty: build | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/empty_pages.c $(RPATH) -o $(OUT)/empty_pages_asan
	$(OUT)/empty_pages_asan
	$(CC) $(CTEST_FLAGS) c-tests/empty_pages.c $(RPATH) -o $(OUT)/empty_pages_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/empty_pages_plain

# Anchored, bidirectional loading through the C ABI (deep repairs, backward scrolling under
# max_pages, loader_jump, a starting point), under ASan+UBSan and valgrind. Against the test
# library: one test poisons a handle with loader_test_panic.
c-test-anchored: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/anchored.c $(TEST_RPATH) -o $(OUT)/anchored_asan
	RUST_BACKTRACE=0 $(OUT)/anchored_asan
	$(CC) $(CTEST_FLAGS) c-tests/anchored.c $(TEST_RPATH) -o $(OUT)/anchored_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/anchored_plain

# Ranged invalidation through the C ABI over a keyed source (one insert or delete re-reads
# its page with bounded reads and keeps the rest; a change outside the view reads nothing;
# refusals change nothing), under ASan+UBSan and valgrind.
# Far moves through the ABI: the origin, the memo, locate (right, unknown, wrong), the walk's
# bound and the default config's; under ASan+UBSan, then valgrind.
# Follow mode and appends through the C ABI (c-tests/follow.c), under ASan+UBSan.
c-test-follow: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/follow.c $(TEST_RPATH) -o $(OUT)/follow_asan
	RUST_BACKTRACE=0 $(OUT)/follow_asan

c-test-far: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/far_moves.c $(TEST_RPATH) -o $(OUT)/far_moves_asan
	RUST_BACKTRACE=0 $(OUT)/far_moves_asan
	$(CC) $(CTEST_FLAGS) c-tests/far_moves.c $(TEST_RPATH) -o $(OUT)/far_moves_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/far_moves_plain

c-test-ranged: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/ranged.c $(TEST_RPATH) -o $(OUT)/ranged_asan
	RUST_BACKTRACE=0 $(OUT)/ranged_asan
	$(CC) $(CTEST_FLAGS) c-tests/ranged.c $(TEST_RPATH) -o $(OUT)/ranged_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/ranged_plain

# The C++ wrapper (bindings/cpp/loader.hpp): it calls every public function of loader.h;
# its API test, its callback-boundary test and its Feed<T> test, as C++17 and C++20, under ASan+UBSan against
# the test library; both tests and the example also compiled by clang++ (clang-19, which CI
# installs for ThreadSanitizer), warnings as errors: brace-initialised Callbacks that leave
# out the optional callbacks must not trip its -Wmissing-field-initializers; then the
# example and the consumer built through pkg-config.
CXX_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CXXTEST_FLAGS := $(WARN) -g -Iinclude -DLOADER_TESTING $(CXX_SAN)
CLANGXX ?= clang++-19
cpp-test: test-lib cpp-coverage cpp-example cpp-pkgconfig-test | $(OUT)
	for std in c++17 c++20; do \
	    $(CXX) -std=$$std $(CXXTEST_FLAGS) c-tests/cpp_test.cpp $(TEST_RPATH) -o $(OUT)/cpp_test_$$std && \
	    RUST_BACKTRACE=0 $(OUT)/cpp_test_$$std && \
	    $(CXX) -std=$$std $(CXXTEST_FLAGS) c-tests/cpp_callbacks.cpp $(TEST_RPATH) -lpthread -o $(OUT)/cpp_callbacks_$$std && \
	    $(OUT)/cpp_callbacks_$$std && \
	    $(CXX) -std=$$std $(CXXTEST_FLAGS) c-tests/cpp_feed_test.cpp $(TEST_RPATH) -lpthread -o $(OUT)/cpp_feed_$$std && \
	    $(OUT)/cpp_feed_$$std || exit 1; \
	done
	for std in c++17 c++20; do \
	    $(CLANGXX) -std=$$std $(WARN) -Iinclude -Ibindings/cpp -DLOADER_TESTING -fsyntax-only \
	        c-tests/cpp_test.cpp c-tests/cpp_callbacks.cpp c-tests/cpp_feed_test.cpp examples/cpp_feed.cpp || exit 1; \
	done

# Fails when a public function of loader.h has no call in the wrapper; and, to show it can
# fail, when the wrapper's call to loader_abandon is renamed away.
cpp-coverage: | $(OUT)
	scripts/cpp_coverage.sh include/loader.h bindings/cpp/loader.hpp
	sed 's/loader_abandon(/loader_abandoned(/' bindings/cpp/loader.hpp > $(OUT)/loader_uncovered.hpp
	@if scripts/cpp_coverage.sh include/loader.h $(OUT)/loader_uncovered.hpp 2> /dev/null; then \
	    echo "cpp-coverage: a wrapper without loader_abandon passed"; exit 1; fi

# examples/cpp_feed.cpp, a threaded C++ host, under ASan+UBSan: it checks its own view and
# that every page was released exactly once, and exits non-zero otherwise.
cpp-example: build | $(OUT)
	$(CXX) -std=c++17 $(WARN) -g -Iinclude -Ibindings/cpp $(CXX_SAN) examples/cpp_feed.cpp $(RPATH) -pthread \
	    -o $(OUT)/cpp_feed
	$(OUT)/cpp_feed

# include/loader_testing.h, the header-only tester for a host's load function: an honest load
# passes, and each host defect it is for is found and named (c-tests/load_tester.c), under
# ASan+UBSan; the header alone compiles as C11 and C++17 with no warning, used or not.
.PHONY: c-test-load-tester
c-test: c-test-load-tester
c-test-load-tester: | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/load_tester.c -o $(OUT)/load_tester
	$(OUT)/load_tester
	printf '#include "loader_testing.h"\n' > $(OUT)/load_tester_h.c
	cp $(OUT)/load_tester_h.c $(OUT)/load_tester_h.cpp
	$(CC) -std=c11 $(WARN) -Iinclude -fsyntax-only $(OUT)/load_tester_h.c
	$(CXX) -std=c++17 $(WARN) -Iinclude -fsyntax-only $(OUT)/load_tester_h.cpp

# The feed (loader_feed_*): loads on the library's own threads, with failures, jumps, cancel
# hints, bugs in the load, a thread ended inside a load, free while loads run, a stuck load
# and follow mode; under ASan+UBSan, valgrind and ThreadSanitizer.
c-test-feed: test-lib tsan-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/feed.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_asan
	$(OUT)/feed_asan
	$(CC) $(CTEST_FLAGS) c-tests/feed.c $(TEST_RPATH) -lpthread -o $(OUT)/feed_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/feed_plain
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/feed.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/feed_tsan
	$(TSAN_RUN) $(OUT)/feed_tsan

# ---- install and pkg-config ----

# INSTALL_LIB: the shared library installed (the ThreadSanitizer build, for c-example-tsan).
INSTALL_LIB ?= $(LIB)
install: build
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(INSTALL_LIB) $(DESTDIR)$(PREFIX)/lib/libloader.so.$(VERSION)
	ln -sf libloader.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libloader.so
	install -m 0644 target/release/libloader.a $(DESTDIR)$(PREFIX)/lib/libloader.a
	install -m 0644 include/loader.h $(DESTDIR)$(PREFIX)/include/loader.h
	install -m 0644 bindings/cpp/loader.hpp $(DESTDIR)$(PREFIX)/include/loader.hpp
	install -m 0644 include/loader_testing.h $(DESTDIR)$(PREFIX)/include/loader_testing.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' loader.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/loader.pc

pkgconfig-test: | $(OUT)
	rm -rf $(OUT)/prefix
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/$(OUT)/prefix
	PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig $(CC) -std=c11 $(WARN) c-tests/pkgconfig_consumer.c \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -o $(OUT)/pkgconfig_consumer
	$(OUT)/pkgconfig_consumer
	PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig $(CC) -std=c11 $(WARN) -static-libgcc c-tests/pkgconfig_consumer.c \
	    -I$(OUT)/prefix/include $(OUT)/prefix/lib/libloader.a -lpthread -ldl -lm -o $(OUT)/pkgconfig_static
	$(OUT)/pkgconfig_static

# C++ against the installed prefix: the wrapper is installed beside loader.h and found through
# the .pc's Cflags; the example builds the way its header comment says.
cpp-pkgconfig-test: pkgconfig-test
	test -f $(OUT)/prefix/include/loader.hpp
	$(CXX) -std=c++17 $(WARN) c-tests/pkgconfig_consumer.cpp \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -o $(OUT)/pkgconfig_consumer_cpp
	$(OUT)/pkgconfig_consumer_cpp
	$(CXX) -std=c++17 $(WARN) examples/cpp_feed.cpp \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) -pthread \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -o $(OUT)/cpp_feed_installed
	$(OUT)/cpp_feed_installed > /dev/null

# The README's C example, compiled exactly as written; it must print what the README says.
readme-c-example: pkgconfig-test
	sed -n '/<!-- c-example:start -->/,/<!-- c-example:end -->/p' README.md | sed '1,2d;$$d' | sed '$$d' > $(OUT)/readme_example.c
	test $$(wc -l < $(OUT)/readme_example.c) -ge 20
	$(CC) -std=c11 $(WARN) $(OUT)/readme_example.c \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -o $(OUT)/readme_example
	$(OUT)/readme_example > $(OUT)/readme_example.out
	sed -n 's/^It prints `\([^`]*\)`.*/\1/p' README.md > $(OUT)/readme_example.expected
	test -s $(OUT)/readme_example.expected
	diff $(OUT)/readme_example.expected $(OUT)/readme_example.out
	sed -n '/<!-- c-feed-example:start -->/,/<!-- c-feed-example:end -->/p' README.md | sed '1,2d;$$d' | sed '$$d' > $(OUT)/readme_feed_example.c
	test $$(wc -l < $(OUT)/readme_feed_example.c) -ge 20
	$(CC) -std=c11 $(WARN) $(OUT)/readme_feed_example.c \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -lpthread -o $(OUT)/readme_feed_example
	$(OUT)/readme_feed_example > $(OUT)/readme_feed_example.out
	sed -n 's/^This one prints `\([^`]*\)`.*/\1/p' README.md > $(OUT)/readme_feed_example.expected
	test -s $(OUT)/readme_feed_example.expected
	diff $(OUT)/readme_feed_example.expected $(OUT)/readme_feed_example.out

clean:
	$(CARGO) clean

include mk/python.mk
include mk/fuzz.mk
include mk/examples.mk
include mk/replay.mk
include mk/browse.mk
include mk/feed_jobs.mk
include mk/feed_explore.mk
