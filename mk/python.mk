# Python bindings and the SQLite demo. Included by the top-level Makefile, which defines
# LIB := target/release/libloader.so and the rule that builds it.
#
#   make venv      .venv (created only if missing) with pytest and ./bindings/python installed;
#                  the package is reinstalled whenever its sources change
#   make py-test   the bindings' pytest suite, against $(LIB)
#   make demo      examples/sqlite_feed.py for DEMO_ARGS (default --duration 10)

PYTHON3 ?= python3
VENV ?= .venv
VENV_PY := $(VENV)/bin/python
PY_PKG_DIR := bindings/python
PY_PKG_SOURCES := $(PY_PKG_DIR)/pyproject.toml $(wildcard $(PY_PKG_DIR)/libloader/*.py) \
	$(PY_PKG_DIR)/libloader/py.typed
PY_STAMP := $(VENV)/.libloader-installed
PYTEST_ARGS ?= -q
DEMO_ARGS ?= --duration 10
# The library the tests and the demo load: exactly the one $(LIB) built.
PY_ENV := LIBLOADER_PATH=$(abspath $(LIB))

.PHONY: venv py-test py-demo demo

venv: $(PY_STAMP)

# A file every venv has: this rule runs only when the venv is missing. A half-made venv (no
# ensurepip: Debian's python3-venv package is missing) is removed, so the next run retries.
$(VENV)/pyvenv.cfg:
	$(PYTHON3) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# pytest is installed here, not with the venv, so a failed download is retried next time;
# once installed, pip only checks it. The package is reinstalled whenever a source changed.
$(PY_STAMP): $(VENV)/pyvenv.cfg $(PY_PKG_SOURCES)
	$(VENV_PY) -m pip install --quiet 'pytest>=7'
	$(VENV_PY) -m pip install --quiet --force-reinstall --no-deps ./$(PY_PKG_DIR)
	touch $@

py-test: venv $(LIB)
	$(PY_ENV) $(VENV_PY) -m pytest $(PYTEST_ARGS) $(PY_PKG_DIR)/tests

py-demo: venv $(LIB)
	$(PY_ENV) $(VENV_PY) examples/sqlite_feed.py $(DEMO_ARGS)

# A prerequisite only, so it adds to a `demo` rule defined elsewhere instead of replacing
# its recipe.
demo: py-demo

# `make py-mypy`: mypy --strict over the package, whatever Python the examples directory
# holds, and the typed test (acquisitions typed end to end through Loader[T]). mypy is
# installed here rather than with the venv, so `make venv` needs only pytest; the library
# is not needed (mypy only reads the sources).
PY_MYPY_PATHS := $(PY_PKG_DIR)/libloader $(PY_PKG_DIR)/tests/test_typed_acquisitions.py \
	$(if $(shell find examples -name '*.py' 2>/dev/null),examples)

.PHONY: py-mypy
py-mypy: venv
	$(VENV_PY) -m pip install --quiet 'mypy>=1.8'
	$(VENV_PY) -m mypy --strict $(PY_MYPY_PATHS)
