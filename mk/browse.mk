# libloader-browse, the terminal table browser (bindings/python/libloader/browse), on Textual.
# Included by the top-level Makefile after mk/python.mk (VENV, VENV_PY, PY_TEST_ENV, PY_ENV,
# PY_PKG_DIR, PY_WHEEL_DIR, LIB, TEST_LIB).
#
#   make browse             the demo: a million rows, a writer process, failing loads; in this
#                           terminal (BROWSE_ARGS adds options: --fail-rate, --latency, ...)
#   make browse-test        its tests: headless through Textual's pilot (keys, the screen
#                           against SQL, read counts, held pages), in tmux, and the README's
#                           screenshot docs/browse.svg (fails when stale, and rewrites it);
#                           part of `make test`. Textual or tmux missing fails it
#   make browse-screenshot  rewrites docs/browse.svg from the app, without failing
#   make browse-snapshots   rewrites the snapshot of each screen (pytest-textual-snapshot)
#   make browse-wheel-test  the wheel py-wheel-test built, installed with the `browse` extra
#                           in a fresh venv: the console script and `python -m` run, the app
#                           shows a table headless, a view is refused in words
#   make bench-browse       keypress to a fresh screen on a million rows (docs/BENCHMARKS.md)
#   make bench-browse-idle  the browser's CPU, untouched in tmux, on 10^7 rows with and without
#                           a writer committing twice a second (BENCH_IDLE_ARGS: --rows,
#                           --seconds, ...); makes the table once in /tmp (a few minutes).
#                           Not part of `make test`
#
# The venv gets the `browse` extra's requirements (read from pyproject.toml), not the package:
# the tests import the sources, as py-test does.

BROWSE_STAMP := $(VENV)/.browse-installed
# The extra's requirements as pyproject.toml lists them: double-quoted, separated by commas.
BROWSE_REQS = $(shell sed -n 's/^browse = \[\(.*\)\]/\1/p' $(PY_PKG_DIR)/pyproject.toml | sed 's/" *, *"/" "/g')
# The `browse-test` extra: what the browser's tests need besides (pytest-textual-snapshot).
BROWSE_TEST_REQS = $(shell sed -n 's/^browse-test = \[\(.*\)\]/\1/p' $(PY_PKG_DIR)/pyproject.toml | sed 's/" *, *"/" "/g')
BROWSE_ARGS ?=

.PHONY: browse browse-test browse-screenshot browse-snapshots browse-wheel-test bench-browse \
        bench-browse-idle

$(BROWSE_STAMP): $(PY_STAMP) $(PY_PKG_DIR)/pyproject.toml
	test -n '$(BROWSE_REQS)' && test -n '$(BROWSE_TEST_REQS)'
	$(VENV_PY) -m pip install --quiet $(BROWSE_REQS) $(BROWSE_TEST_REQS)
	touch $@

browse: $(BROWSE_STAMP) $(LIB)
	$(PY_ENV) $(VENV_PY) -m libloader.browse --demo $(BROWSE_ARGS)

browse-test: $(BROWSE_STAMP) $(TEST_LIB)
	@command -v tmux >/dev/null || { echo "browse-test: tmux is not installed (.ci/run installs it)"; exit 1; }
	$(PY_TEST_ENV) LIBLOADER_BROWSE_REQUIRED=1 $(VENV_PY) -m pytest -p no:cacheprovider \
	    $(PYTEST_ARGS) $(PY_PKG_DIR)/tests_browse

browse-screenshot: $(BROWSE_STAMP) $(TEST_LIB)
	$(PY_TEST_ENV) LIBLOADER_BROWSE_REQUIRED=1 LIBLOADER_UPDATE_SCREENSHOT=1 $(VENV_PY) -m pytest \
	    -p no:cacheprovider $(PYTEST_ARGS) $(PY_PKG_DIR)/tests_browse/test_browse_screenshot.py

# Rewrites the snapshots of each screen (tests_browse/__snapshots__) from the app: after a
# change of what a screen shows, look at them (the failing run's report shows both) and commit.
browse-snapshots: $(BROWSE_STAMP) $(TEST_LIB)
	$(PY_TEST_ENV) LIBLOADER_BROWSE_REQUIRED=1 $(VENV_PY) -m pytest -p no:cacheprovider \
	    $(PYTEST_ARGS) --snapshot-update $(PY_PKG_DIR)/tests_browse/test_browse_snapshots.py

# It needs the wheel py-wheel-test builds (and removes first): run alone, it runs that too.
browse-wheel-test: py-wheel-test
	wheel=$$(ls $(abspath $(PY_WHEEL_DIR))/ledgered_loader-*.whl) && \
	tmp=$$(mktemp -d /tmp/libloader-browse-wheel.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON3) -m venv "$$tmp/venv" && \
	"$$tmp/venv/bin/python" -m pip install --quiet "$$wheel[browse]" && \
	cd "$$tmp" && env -u LIBLOADER_PATH -u PYTHONPATH sh -c ' \
	    venv/bin/libloader-browse --help | grep -q "Scroll a SQLite table" && \
	    venv/bin/python -m libloader.browse --help | grep -q "Scroll a SQLite table" && \
	    venv/bin/python $(abspath $(PY_PKG_DIR))/tests_browse/wheel_smoke.py && \
	    venv/bin/python -c "import sqlite3; c = sqlite3.connect(\"v.db\"); c.execute(\"CREATE VIEW v AS SELECT 1 AS x\"); c.commit()" && \
	    { venv/bin/libloader-browse v.db v 2> err.txt; test $$? -eq 2; } && \
	    grep -q "is a view" err.txt' && \
	echo "browse-wheel-test: the wheel's libloader-browse runs, with the browse extra"

bench-browse: $(BROWSE_STAMP) build
	$(PY_ENV) $(VENV_PY) $(PY_PKG_DIR)/bench_browse.py

BENCH_IDLE_ARGS ?=
bench-browse-idle: $(BROWSE_STAMP) build
	@command -v tmux >/dev/null || { echo "bench-browse-idle: tmux is not installed"; exit 1; }
	$(PY_ENV) $(VENV_PY) scripts/bench_browse_idle.py $(BENCH_IDLE_ARGS)

# mypy --strict reads the browser too: it needs Textual's types.
py-mypy: $(BROWSE_STAMP)

test: browse-test browse-wheel-test
