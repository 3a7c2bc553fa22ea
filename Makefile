# libloader: build, test and demo entry points. `make test` is what CI runs.
CARGO ?= cargo

.PHONY: all build test rust-test lint check check-large demo clean

all: build

build:
	$(CARGO) build --release

# Every test that exists, plus formatting and lints.
test: rust-test lint check

rust-test:
	$(CARGO) test --all-targets
	$(CARGO) test --doc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

# The model's findings and the ledger's refinement, at the default and at larger bounds.
check: build
	./target/release/loader-check --rules current --stop-at-first > /dev/null; test $$? -eq 1
	./target/release/loader-check --rules unifiedMinRecheck --no-model-bounds
	./target/release/loader-check --rules unifiedMinRecheck --max-epoch 3 --ids 5 --no-model-bounds
	./target/release/loader-check --impl --max-epoch 3 --ids 6

demo: build
	./target/release/loader-check --rules current
	./target/release/loader-check --rules unifiedMinRecheck

clean:
	$(CARGO) clean
