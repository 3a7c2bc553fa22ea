# Fuzzing and hostile-host tests. Included by the Makefile; uses its CARGO, CC, CTEST_FLAGS,
# TEST_RPATH, OUT and `test-lib` (and TSAN_CC, TSAN_DIR, SONAME for the TSan run). See
# docs/ROBUSTNESS.md for what each one checks.
#
#   make fuzz                      each fuzz target for FUZZ_SECONDS (default 60) seconds
#   make fuzz FUZZ_SECONDS=1200    a campaign
#   make fuzz FUZZ_RUNS=10000000   a campaign of that many executions per target (no time limit)
#   make fuzz-check                what `make test` runs: the fuzz crate's tests (decoders,
#                                  oracles, every seed and regression replayed), then each
#                                  target for FUZZ_CHECK_SECONDS (60). A known input fails
#                                  the replay, deterministically, before any timed run; the
#                                  timed runs search for new ones, and a crash names its
#                                  input and the commands that replay it
#   make c-test-hostile            c-tests/hostile.c under ASan+UBSan, then under valgrind
#   make c-test-hostile-tsan       the same under ThreadSanitizer (not in c-test-hostile)

FUZZ_SECONDS ?= 60
FUZZ_CHECK_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_LIMIT = $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))
FUZZ_TARGETS := fuzz_abi fuzz_differential fuzz_loader
# The ABI target passes raw pointers across the C boundary, so it runs under AddressSanitizer
# (a campaign can add executions without it: FUZZ_SANITIZER_fuzz_abi=none, ten times faster);
# the other two are safe Rust end to end and run without it. All three keep
# debug assertions and overflow checks on (-a): the ledger checks its invariants itself then.
FUZZ_SANITIZER_fuzz_abi ?= address
FUZZ_SANITIZER_fuzz_differential := none
FUZZ_SANITIZER_fuzz_loader := none
# Inputs longer than this are cut. The differential run stops at 8 requests (the model's
# slots), so its interesting sequences are short; the other two use libFuzzer's default.
FUZZ_MAX_LEN_fuzz_abi := 4096
FUZZ_MAX_LEN_fuzz_differential := 256
FUZZ_MAX_LEN_fuzz_loader := 4096
# cargo-fuzz needs nightly features; this stable toolchain allows them with RUSTC_BOOTSTRAP.
# One build job and one fuzzing process: the development machine is shared. CI has the
# machine to itself.
FUZZ_BUILD_JOBS ?= $(if $(CI),2,1)
FUZZ_ENV := RUSTC_BOOTSTRAP=1 CARGO_BUILD_JOBS=$(FUZZ_BUILD_JOBS)
# A 16 MB quarantine (ASan's default is 256 MB) still catches a use after free within a run,
# and doubles the ABI target's speed.
FUZZ_ASAN_OPTIONS ?= quarantine_size_mb=16
FUZZ_WORK := fuzz/target/corpus

.PHONY: fuzz fuzz-check fuzz-test fuzz-tools fuzz-build c-test-hostile c-test-hostile-tsan $(addprefix fuzz-run-,$(FUZZ_TARGETS))

fuzz-tools:
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked

fuzz-build: fuzz-tools
	$(foreach t,$(FUZZ_TARGETS),$(FUZZ_ENV) $(CARGO) fuzz build --fuzz-dir fuzz -a -s $(FUZZ_SANITIZER_$(t)) $(t) &&) true

fuzz-test:
	cd fuzz && $(FUZZ_ENV) $(CARGO) fmt -- --check
	cd fuzz && $(FUZZ_ENV) $(CARGO) test --release

fuzz-check: fuzz-test
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_CHECK_SECONDS) FUZZ_RUNS=

# Each target reads the committed seeds (fuzz/corpus/<target>, never written) and grows its own
# working corpus under fuzz/target. A crash fails the run and leaves the input in
# fuzz/artifacts/<target>/.
fuzz: $(addprefix fuzz-run-,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do sed -n 's/^fuzz: //p' $(FUZZ_WORK)/$$t.summary; done

$(addprefix fuzz-run-,$(FUZZ_TARGETS)): fuzz-run-%: fuzz-build
	mkdir -p $(FUZZ_WORK)/$*
	ASAN_OPTIONS=$(FUZZ_ASAN_OPTIONS) $(FUZZ_ENV) $(CARGO) fuzz run --fuzz-dir fuzz -a -s $(FUZZ_SANITIZER_$*) $* \
	    $(FUZZ_WORK)/$* fuzz/corpus/$* -- \
	    $(FUZZ_LIMIT) -max_len=$(FUZZ_MAX_LEN_$*) -print_final_stats=1 -timeout=30 \
	    > $(FUZZ_WORK)/$*.log 2>&1 || { tail -n 60 $(FUZZ_WORK)/$*.log; \
	    for a in $$(sed -n 's/.*Test unit written to \(.*\)$$/\1/p' $(FUZZ_WORK)/$*.log); do \
	        echo "fuzz: $* found a new input: $$a"; \
	        echo "fuzz:   replay it:  cargo fuzz run --fuzz-dir fuzz -a -s $(FUZZ_SANITIZER_$*) $* $$a"; \
	        echo "fuzz:   or, traced: (cd fuzz && LOADER_FUZZ_TRACE=1 cargo run --release --example replay -- $* ../$$a)"; \
	        echo "fuzz:   once fixed, commit it as fuzz/regressions/$*/<what-it-found> (fuzz-test replays it)"; \
	    done; exit 1; }
	@execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_WORK)/$*.log); \
	rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $(FUZZ_WORK)/$*.log); \
	last=$$(grep -E '^#[0-9]+' $(FUZZ_WORK)/$*.log | tail -n 1); \
	cov=$$(echo "$$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p'); \
	ft=$$(echo "$$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p'); \
	echo "fuzz: $* ($(FUZZ_SANITIZER_$*)) ran $$execs executions at $$rate/s, cov $$cov, ft $$ft, no crash" \
	    | tee $(FUZZ_WORK)/$*.summary

# Hostile and unlucky hosts through the C ABI: ASan+UBSan (like c-test-asan), then valgrind
# (like c-test-valgrind) on a smaller run, since valgrind serialises the thread-per-answer test.
c-test-hostile: test-lib | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/hostile.c $(TEST_RPATH) -lpthread -o $(OUT)/hostile_asan
	RUST_BACKTRACE=0 $(OUT)/hostile_asan
	$(CC) $(CTEST_FLAGS) c-tests/hostile.c $(TEST_RPATH) -lpthread -o $(OUT)/hostile_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/hostile_plain --quick

# Not part of c-test-hostile: the same tests under ThreadSanitizer, with the library built
# with -Zsanitizer=thread as c-test-tsan builds it (TSAN_CC and TSAN_DIR are the Makefile's).
c-test-hostile-tsan: tsan-lib | $(OUT)
	$(TSAN_CC) $(CTEST_FLAGS) -O1 -fsanitize=thread c-tests/hostile.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/hostile_tsan
	$(TSAN_RUN) $(OUT)/hostile_tsan
