# Python bindings and the SQLite demo. Included by the top-level Makefile, which defines
# LIB := target/release/libloader.so and the rule that builds it.
#
#   make venv           .venv (created only if missing) with pytest: the tests' interpreter.
#                       The package is not installed there: the tests, the benches and the
#                       demo import it from the sources (PYTHONPATH)
#   make py-test        the bindings' pytest suite, against the sources and $(TEST_LIB) (the
#                       `testing` build, which adds the test ABI); runs py-wheel-test first
#   make py-test-quick  the pytest suite alone, as py-test runs it, without building the wheel
#   make py-wheel-test  builds the wheel (pip runs cargo), installs it into a fresh venv under
#                       /tmp and runs the suite from /tmp against it, LIBLOADER_PATH unset (the
#                       few tests that need the test ABI skip there)
#   make demo           examples/sqlite_feed.py for DEMO_ARGS (default --duration 10); it
#                       needs nothing installed, so it runs on the system's python3

PYTHON3 ?= python3
VENV ?= .venv
VENV_PY := $(VENV)/bin/python
PY_PKG_DIR := bindings/python
PY_STAMP := $(VENV)/.pytest-installed
PYTEST_ARGS ?= -q
DEMO_ARGS ?= --duration 10
# The package and the library the demo uses: exactly the sources and the $(LIB) built from
# them, never a copy installed earlier. The tests load the test library instead.
PY_ENV := LIBLOADER_PATH=$(abspath $(LIB)) PYTHONPATH=$(abspath $(PY_PKG_DIR))
PY_TEST_ENV := LIBLOADER_PATH=$(abspath $(TEST_LIB)) PYTHONPATH=$(abspath $(PY_PKG_DIR))
# The wheel py-wheel-test builds, kept for inspection. pip's cargo gets its own target
# directory: its `cargo rustc --crate-type cdylib` and $(LIB)'s `cargo build --release` would
# otherwise rebuild each other's library every time.
PY_WHEEL_DIR := target/python-wheel
PY_WHEEL_CARGO := $(abspath target/python-wheel-cargo)

.PHONY: venv py-test py-test-quick py-wheel-test py-demo demo

venv: $(PY_STAMP)

# A file every venv has: this rule runs only when the venv is missing. A half-made venv (no
# ensurepip: Debian's python3-venv package is missing) is removed, so the next run retries.
$(VENV)/pyvenv.cfg:
	$(PYTHON3) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# pytest is installed here, not with the venv, so a failed download is retried next time. A
# copy of the package installed there by an older version of this file is removed: what runs
# is the sources.
# hypothesis: the feeds' stateful property test (tests/test_feed_stateful.py) drives their
# public API with generated call sequences and shrinks a failure to the shortest one; the
# test skips where it is not installed.
$(PY_STAMP): $(VENV)/pyvenv.cfg
	$(VENV_PY) -m pip install --quiet 'pytest>=7' 'hypothesis>=6.100'
	$(VENV_PY) -m pip uninstall --quiet --yes libloader ledgered-loader 2>/dev/null || true
	touch $@

py-test: py-wheel-test py-exit-versions py-test-quick

py-test-quick: venv $(TEST_LIB)
	$(PY_TEST_ENV) $(VENV_PY) -m pytest $(PYTEST_ARGS) $(PY_PKG_DIR)/tests

# Everything but the wheel lives in a temporary directory under /tmp, removed at the end: the
# venv, and the working directory the suite runs from. Only the installed package can be
# imported there (no PYTHONPATH, and pytest puts only tests/ on sys.path), and it must find
# its library with no LIBLOADER_PATH. No cache is written into the checkout.
py-wheel-test:
	rm -rf $(PY_WHEEL_DIR)
	tmp=$$(mktemp -d /tmp/libloader-wheel.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON3) -m venv "$$tmp/venv" && \
	CARGO_TARGET_DIR=$(PY_WHEEL_CARGO) "$$tmp/venv/bin/python" -m pip wheel --quiet --no-deps \
	    --wheel-dir $(PY_WHEEL_DIR) ./$(PY_PKG_DIR) && \
	wheel=$$(ls $(abspath $(PY_WHEEL_DIR))/ledgered_loader-*.whl) && \
	echo "py-wheel-test: built $$wheel ($$(du -k "$$wheel" | cut -f1) kB)" && \
	"$$tmp/venv/bin/python" -m pip install --quiet 'pytest>=7' 'hypothesis>=6.100' "$$wheel" && \
	mkdir "$$tmp/work" && cd "$$tmp/work" && \
	env -u LIBLOADER_PATH -u PYTHONPATH LIBLOADER_WHEEL="$$wheel" \
	    "$$tmp/venv/bin/python" -m pytest -p no:cacheprovider $(PYTEST_ARGS) \
	    $(abspath $(PY_PKG_DIR)/tests)

py-demo: $(LIB)
	$(PY_ENV) $(PYTHON3) examples/sqlite_feed.py $(DEMO_ARGS)

# A prerequisite only, so it adds to a `demo` rule defined elsewhere instead of replacing
# its recipe.
demo: py-demo

# `make py-mypy`: mypy --strict over the package, whatever Python the examples directory
# holds, and the typed tests (acquisitions typed end to end through Loader[T], items through
# Feed[T] and aio.Feed[T]). mypy is
# installed here rather than with the venv, so `make venv` needs only pytest; the library
# is not needed (mypy only reads the sources).
PY_MYPY_PATHS := $(PY_PKG_DIR)/libloader $(PY_PKG_DIR)/tests/test_typed_acquisitions.py \
	$(PY_PKG_DIR)/tests/test_typed_loads.py $(PY_PKG_DIR)/tests/typing_cases/loads_accepted.py \
	$(PY_PKG_DIR)/tests/test_typed_feeds.py \
	$(if $(shell find examples -name '*.py' 2>/dev/null),examples)

.PHONY: py-mypy
py-mypy: venv
	$(VENV_PY) -m pip install --quiet 'mypy>=1.8'
	$(VENV_PY) -m mypy --strict $(PY_MYPY_PATHS)

# The interpreter-exit test (daemon threads, an event loop thread and executor loads inside
# libloader calls while the interpreter exits) on every Python from 3.9 on that this machine
# has, on PATH or installed by pyenv; each missing one is named. py-test runs it on the venv's Python as well.
PY_EXIT_VERSIONS ?= 3.9 3.10 3.11 3.12 3.13
.PHONY: py-exit-versions
py-exit-versions: $(TEST_LIB)
	@ran=0; for v in $(PY_EXIT_VERSIONS); do \
	    py=; for c in $$(command -v python$$v) $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v; do \
	        "$$c" -c 'import sys' 2>/dev/null && { py=$$c; break; }; \
	    done; \
	    [ -n "$$py" ] || { echo "py-exit-versions: python$$v not found, skipped"; continue; }; \
	    $(PY_TEST_ENV) "$$py" $(PY_PKG_DIR)/tests/test_thread_exit.py || exit 1; \
	    ran=$$((ran + 1)); \
	done; echo "py-exit-versions: passed on $$ran interpreters"; test $$ran -ge 1

# The engine's job and hosted modes from Python (bindings/python/bench_jobs.py), beside the
# bare loop calling the same load and today's threaded Feed, in one run (docs/BENCHMARKS.md).
.PHONY: bench-py-jobs
bench-py-jobs: venv $(TEST_LIB)
	$(PY_TEST_ENV) $(VENV_PY) $(PY_PKG_DIR)/bench_jobs.py
