"""Every result code has its own exception class, carrying the code and the library's message."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest

import libloader
from libloader import ERRORS, LoaderError, Result, _errors as errors, _ffi


def test_each_error_code_has_its_own_subclass() -> None:
    codes = [r for r in Result if r is not Result.OK]
    assert set(ERRORS) == set(codes)
    classes = [ERRORS[c] for c in codes]
    assert len(set(classes)) == len(classes)
    for c in codes:
        cls = ERRORS[c]
        assert issubclass(cls, LoaderError) and cls is not LoaderError
        # The name is the code's, in CamelCase: NULL_POINTER -> NullPointerError.
        assert cls.__name__ == "".join(w.title() for w in c.name.split("_")) + "Error"
        assert getattr(libloader, cls.__name__) is cls


def test_an_error_carries_the_code_and_the_librarys_message() -> None:
    lib = _ffi.lib()
    for code, cls in ERRORS.items():
        e = errors.error_for(code, libloader.result_message, "loader_x")
        assert type(e) is cls and e.code is code
        assert e.message == lib.loader_result_str(int(code)).decode()
        assert e.message in str(e) and f"LOADER_RESULT_{code.name}" in str(e)
        assert e.function == "loader_x"
    unknown = errors.error_for(999, libloader.result_message)
    assert type(unknown) is LoaderError and unknown.code == 999
    assert unknown.message == "unknown result code"


def test_messages_are_distinct() -> None:
    msgs = [libloader.result_message(c) for c in Result]
    assert len(set(msgs)) == len(msgs)


def test_versions_agree(repo: Path) -> None:
    cargo = (repo / "Cargo.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', cargo, re.M)
    assert m
    assert libloader.version() == m[1] == libloader.__version__
    pyproject = (repo / "bindings" / "python" / "pyproject.toml").read_text()
    assert f'version = "{m[1]}"' in pyproject


def test_real_errors_raise_their_class() -> None:
    with pytest.raises(libloader.InvalidPageSizeError) as e:
        libloader.Loader(lambda r: None, lambda a: None,
                         config=libloader.Config(page_size=0))
    assert e.value.code is Result.INVALID_PAGE_SIZE
    with pytest.raises(libloader.InvalidPageSizeError):
        libloader.Loader(lambda r: None, lambda a: None,
                         config=libloader.Config(page_size=libloader.MAX_PAGE_SIZE + 1))
    with pytest.raises(libloader.InvalidBackoffInitialError):
        libloader.Loader(lambda r: None, lambda a: None,
                         config=libloader.Config(backoff_initial_ms=0))
    with pytest.raises(libloader.InvalidBackoffMaxError):
        libloader.Loader(lambda r: None, lambda a: None,
                         config=libloader.Config(backoff_max_ms=1))
    with pytest.raises(libloader.InvalidBackoffMultiplierError):
        libloader.Loader(lambda r: None, lambda a: None,
                         config=libloader.Config(backoff_multiplier=float("nan")))


def test_missing_callbacks_are_refused_by_the_library() -> None:
    # The Python API requires callables; the raw layer shows the library's own check.
    lib = _ffi.lib()
    cfg = _ffi.loader_config()
    assert lib.loader_config_default(cfg) == 0
    keep = _ffi.loader_issue_fn(lambda u, r: None)
    cb = _ffi.loader_callbacks(issue=keep)  # release (and the optional ones) left NULL
    out = _ffi.loader_handle(77)
    assert lib.loader_new(cfg, cb, ctypes.byref(out)) == Result.MISSING_CALLBACK
    assert out.value == 77  # out-parameters are written only on success
    with pytest.raises(TypeError):
        libloader.Loader(None, lambda a: None)  # type: ignore[arg-type]


def test_each_error_is_under_exactly_one_of_three_bases() -> None:
    bases = (libloader.UsageError, libloader.ExhaustedError, libloader.InternalError)
    for b in bases:
        assert issubclass(b, LoaderError) and b.__bases__ == (LoaderError,)
    for code, cls in ERRORS.items():
        assert [b for b in bases if issubclass(cls, b)] == [cls.__bases__[0]], code
    assert {c for c, cls in ERRORS.items() if issubclass(cls, libloader.InternalError)} == \
        {Result.PANIC, Result.POISONED}
    assert {c for c, cls in ERRORS.items() if issubclass(cls, libloader.ExhaustedError)} == \
        {Result.EPOCH_OVERFLOW, Result.ID_OVERFLOW, Result.TOO_MANY_HANDLES, Result.TIMED_OUT,
         Result.RETRIES_SPENT, Result.THREAD_START}


def test_every_error_pickles_whole() -> None:
    """An error crosses a process boundary (pickle, multiprocessing, a process pool's future)
    with its class, code, message and function; made again from the formatted text, it
    raised TypeError."""
    import pickle

    from libloader import FeedProblem, FeedStalledError

    for code in list(ERRORS) + [999]:
        e = errors.error_for(code, libloader.result_message, "loader_x")
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e)
        assert (back.code, back.message, back.function) == (e.code, e.message, e.function)
    problem = FeedProblem("retries_spent", "the automatic retries are spent",
                          explanation="waiting for: a retry")
    stalled = pickle.loads(pickle.dumps(FeedStalledError(problem)))
    assert type(stalled) is FeedStalledError and stalled.problem == problem
    assert str(stalled) == str(FeedStalledError(problem))
