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
LIB := target/release/libloader.so
SONAME := libloader.so.$(MAJOR)
OUT := target/c-tests
WARN := -Wall -Wextra -Wpedantic -Werror
CTEST_FLAGS := -std=c11 $(WARN) -g -Iinclude -DLOADER_EXPECTED_VERSION=\"$(VERSION)\"
RPATH := -Ltarget/release -lloader -Wl,-rpath,$(CURDIR)/target/release

.PHONY: all build test tsan-lib rust-test doc lint check check-header bench bench-quick bench-abi bench-py c-test c-test-asan c-test-valgrind \
        c-test-tsan c-test-stress c-test-empty cpp-test header-test symbols-test install pkgconfig-test \
        readme-c-example clean

all: build

build: $(LIB)

# Always ask cargo: it knows whether anything changed. The SONAME link lets -lloader
# binaries start from the build tree.
$(LIB): FORCE
	$(CARGO) build --release
	ln -sf libloader.so target/release/$(SONAME)
FORCE:

# Every test that exists.
test: rust-test doc lint check bench-quick c-test fuzz-check py-test

rust-test:
	$(CARGO) test --all-targets
	$(CARGO) test --doc

# The API documentation, with every rustdoc warning (a broken or private link) an error.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps

lint: check-header
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

# Fails when include/loader.h is not what build.rs would generate from the sources.
check-header:
	LOADER_CHECK_HEADER=1 $(CARGO) build --release

# The model's findings and the ledger's refinement, at the default and at larger bounds.
check: build
	./target/release/loader-check --rules current --stop-at-first > /dev/null; test $$? -eq 1
	./target/release/loader-check --rules unifiedMinRecheck --no-model-bounds
	./target/release/loader-check --rules unifiedMinRecheck --max-epoch 3 --ids 5 --no-model-bounds
	./target/release/loader-check --impl --max-epoch 3 --ids 6

# ---- benchmarks (see benches/; each prints its ns/event table and met/missed lines) ----

bench: bench-abi bench-py
	$(CARGO) bench --benches

# The steady stream through the C ABI, against loader_floor in the same run.
ABI_BENCH := $(OUT)/abi_bench
$(ABI_BENCH): c-bench/abi_bench.c build | $(OUT)
	$(CC) -O2 -std=c11 $(WARN) -Iinclude c-bench/abi_bench.c $(RPATH) -o $@

bench-abi: $(ABI_BENCH)
	$(ABI_BENCH)

# Events per second through the Python bindings.
bench-py: build venv
	LIBLOADER_PATH=$(CURDIR)/$(LIB) $(VENV)/bin/python bindings/python/bench_events.py

# Every bench once, briefly: they always build and run. The numbers are not judged.
bench-quick: $(ABI_BENCH) venv
	LOADER_BENCH_QUICK=1 $(CARGO) bench --benches
	$(ABI_BENCH) --quick
	LIBLOADER_PATH=$(CURDIR)/$(LIB) $(VENV)/bin/python bindings/python/bench_events.py --quick

# ---- C and C++ ----

c-test: header-test symbols-test c-test-asan c-test-valgrind c-test-empty c-test-tsan c-test-hostile c-test-hostile-tsan cpp-test pkgconfig-test readme-c-example

$(OUT):
	mkdir -p $(OUT)

# The header compiles on its own and included twice, as C11 and as C++17.
header-test: build | $(OUT)
	printf '#include "loader.h"\n' > $(OUT)/h1.c
	printf '#include "loader.h"\n#include "loader.h"\nint main(void) { return loader_version() == 0; }\n' > $(OUT)/h2.c
	$(CC) -std=c11 $(WARN) -Iinclude -fsyntax-only $(OUT)/h1.c
	$(CC) -std=c11 $(WARN) -Iinclude -fsyntax-only $(OUT)/h2.c
	cp $(OUT)/h1.c $(OUT)/h1.cpp && cp $(OUT)/h2.c $(OUT)/h2.cpp
	$(CXX) -std=c++17 $(WARN) -Iinclude -fsyntax-only $(OUT)/h1.cpp
	$(CXX) -std=c++17 $(WARN) -Iinclude -fsyntax-only $(OUT)/h2.cpp
	$(CXX) -std=c++17 $(WARN) -Iinclude -Ibindings/cpp -fsyntax-only -x c++ bindings/cpp/loader.hpp
	@echo "header-test: loader.h compiles alone and twice as C11 and C++17"

# Only loader_* symbols are exported, and the SONAME carries the major version.
symbols-test: build
	@bad=$$(nm -D --defined-only $(LIB) | awk '{print $$3}' | grep -v '^loader_' || true); \
	if [ -n "$$bad" ]; then echo "exported symbols without the loader_ prefix:"; echo "$$bad"; exit 1; fi
	readelf -d $(LIB) | grep -q 'SONAME.*\[$(SONAME)\]'
	@echo "symbols-test: $$(nm -D --defined-only $(LIB) | wc -l) symbols, all loader_*; SONAME $(SONAME)"

# AddressSanitizer and UndefinedBehaviorSanitizer. The canary proves the sanitizer is linked:
# it must be caught.
c-test-asan: build | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/asan_canary.c -o $(OUT)/asan_canary
	@if $(OUT)/asan_canary 2> $(OUT)/asan_canary.log; then echo "ASan is not linked: the canary ran clean"; exit 1; fi
	grep -q 'AddressSanitizer: heap-buffer-overflow' $(OUT)/asan_canary.log
	@echo "c-test-asan: the canary was caught, so the sanitizer is linked"
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/test_main.c $(RPATH) -o $(OUT)/test_asan
	RUST_BACKTRACE=0 $(OUT)/test_asan
	$(CC) -std=c11 $(WARN) -g -O1 -Iinclude -fsanitize=address,undefined -fno-sanitize-recover=all \
	    c-tests/stress.c $(RPATH) -lpthread -o $(OUT)/stress_asan
	$(OUT)/stress_asan 20000

c-test-valgrind: build | $(OUT)
	$(CC) $(CTEST_FLAGS) c-tests/test_main.c $(RPATH) -o $(OUT)/test_plain
	RUST_BACKTRACE=0 valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/test_plain

# ThreadSanitizer on the stress test. The library and the standard library under it are
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
	    $(CARGO) build -Zbuild-std --release --lib --target x86_64-unknown-linux-gnu
	ln -sf libloader.so $(TSAN_DIR)/$(SONAME)

c-test-tsan: tsan-lib | $(OUT)
	$(TSAN_CC) -std=c11 $(WARN) -g -O1 -Iinclude -fsanitize=thread c-tests/stress.c \
	    -L$(TSAN_DIR) -lloader -Wl,-rpath,$(CURDIR)/$(TSAN_DIR) -lpthread -o $(OUT)/stress_tsan
	$(TSAN_RUN) $(OUT)/stress_tsan 10000

# Empty pages through the C ABI (filtered stretches, repeated cursors), under ASan+UBSan and
# valgrind.
c-test-empty: build | $(OUT)
	$(CC) $(CTEST_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	    c-tests/empty_pages.c $(RPATH) -o $(OUT)/empty_pages_asan
	$(OUT)/empty_pages_asan
	$(CC) $(CTEST_FLAGS) c-tests/empty_pages.c $(RPATH) -o $(OUT)/empty_pages_plain
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	    $(OUT)/empty_pages_plain

cpp-test: build | $(OUT)
	$(CXX) -std=c++17 $(WARN) -g -Iinclude c-tests/cpp_test.cpp $(RPATH) -o $(OUT)/cpp_test
	$(OUT)/cpp_test

# ---- install and pkg-config ----

install: build
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libloader.so.$(VERSION)
	ln -sf libloader.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libloader.so
	install -m 0644 target/release/libloader.a $(DESTDIR)$(PREFIX)/lib/libloader.a
	install -m 0644 include/loader.h $(DESTDIR)$(PREFIX)/include/loader.h
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

# The README's C example, compiled exactly as written.
readme-c-example: pkgconfig-test
	sed -n '/<!-- c-example:start -->/,/<!-- c-example:end -->/p' README.md | sed '1,2d;$$d' | sed '$$d' > $(OUT)/readme_example.c
	test $$(wc -l < $(OUT)/readme_example.c) -ge 20
	$(CC) -std=c11 $(WARN) $(OUT)/readme_example.c \
	    $$(PKG_CONFIG_PATH=$(OUT)/prefix/lib/pkgconfig pkg-config --cflags --libs loader) \
	    -Wl,-rpath,$(CURDIR)/$(OUT)/prefix/lib -o $(OUT)/readme_example
	$(OUT)/readme_example

clean:
	$(CARGO) clean

include mk/python.mk
include mk/fuzz.mk
