"""The test ABI (``loader_floor``, ``loader_test_panic``, ``loader_new_with_counters``) from
the tests: it is not part of the bindings' public API, and exists only in a library built
with the ``testing`` cargo feature (``make py-test`` uses one)."""

from __future__ import annotations

import pytest

from libloader import Loader, _ffi

requires_testing = pytest.mark.skipif(
    not _ffi.has_testing(), reason="libloader was built without the testing feature")
"""Marks a test that needs the test ABI."""


def panic_inside(loader: Loader) -> None:
    """``loader_test_panic``: panics inside the library, under the handle's lock. Raises
    :class:`~libloader.PanicError`; the handle is poisoned afterwards (only
    :meth:`Loader.close` works on it)."""
    loader._call("loader_test_panic")
