"""The raw ctypes layer: one Structure per C struct, one CFUNCTYPE per callback typedef, and
``argtypes``/``restype`` for every exported function, transcribed from ``include/loader.h``.

A test parses the header and fails when this module and the header disagree (functions,
parameter and return types, struct fields, sizes and offsets, enum values, constants).

Enums cross the ABI as C ``int`` (``ctypes.c_int``); :mod:`libloader._enums` gives them names.
Handles are ``uint64_t``: every function that takes or returns one declares ``c_uint64``,
never ctypes' default ``int``, which would truncate it (the library rejects a truncated
handle as invalid).
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _library

MAX_CURSOR_LEN = 4096
"""``LOADER_MAX_CURSOR_LEN``: the longest cursor accepted, in bytes."""

MAX_POSITION = 4611686018427387904
"""``LOADER_MAX_POSITION``: the largest position :meth:`Loader.jump` accepts (2^62)."""

MAX_PAGE_SIZE = 1048576
"""``LOADER_MAX_PAGE_SIZE``: the largest ``page_size`` accepted."""

JUMP_THRESHOLD_AUTO = (1 << 64) - 1
"""``LOADER_JUMP_THRESHOLD_AUTO``: ``Config.jump_threshold``'s default, the window's length
plus twice the prefetch."""

c_enum = c_int
"""A C enum as it crosses the ABI."""

loader_handle = c_uint64


class _Growable(Structure):
    """A struct that may grow: its first field, ``struct_size``, is set to its ``sizeof`` when
    it is made (positional arguments fill the fields after it), as ``loader.h`` asks of every
    host ("Structs that grow")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctypes.sizeof(type(self)), *args, **kwargs)


class loader_config(_Growable):
    _fields_ = [
        ("struct_size", c_uint32),
        ("page_size", c_uint32),
        ("prefetch_distance", c_uint64),
        ("drop_margin", c_uint64),
        ("backoff_initial_ms", c_uint64),
        ("backoff_max_ms", c_uint64),
        ("backoff_multiplier", c_double),
        ("max_auto_retries", c_uint32),
        ("jitter_seed", c_uint64),
        ("recheck_full", c_uint8),
        ("commit_overtaken", c_uint8),
        ("max_pages", c_uint32),
        ("read_timeout_ms", c_uint64),
        ("initial_cursor", POINTER(c_uint8)),
        ("initial_cursor_len", c_size_t),
        ("initial_position", c_uint64),
        ("jump_threshold", c_uint64),
        ("cursor_memo_bytes", c_uint64),
    ]


class loader_read(Structure):
    _fields_ = [
        ("read_id", c_uint64),
        ("request_id", c_uint64),
        ("kind", c_enum),
        ("epoch", c_uint64),
        ("step", c_uint32),
        ("cursor", POINTER(c_uint8)),
        ("cursor_len", c_size_t),
        ("limit", c_uint32),
        ("direction", c_enum),
        ("until", POINTER(c_uint8)),
        ("until_len", c_size_t),
    ]


class issued_read(Structure):
    """``loader_read`` with the cursors as plain addresses (``c_void_p``, an int or None in
    Python), laid over the struct the issue callback receives: reading a ``POINTER`` field
    builds a pointer object. Same layout (a test checks it)."""

    _fields_ = [(f[0], c_void_p if f[0] in ("cursor", "until") else f[1])
                for f in loader_read._fields_]


loader_issue_fn = CFUNCTYPE(None, c_void_p, POINTER(loader_read))
issue_address_fn = CFUNCTYPE(None, c_void_p, c_void_p)
"""The issue callback as the bindings' thunk takes it: the read by address, so ctypes does
not build a pointer object per call (cast to :data:`loader_issue_fn` for the struct)."""
loader_release_fn = CFUNCTYPE(None, c_void_p, c_size_t)
loader_changed_fn = CFUNCTYPE(None, c_void_p)
loader_cancel_fn = CFUNCTYPE(None, c_void_p, c_uint64)
loader_compare_fn = CFUNCTYPE(c_int32, c_void_p, POINTER(c_uint8), c_size_t, POINTER(c_uint8),
                              c_size_t)
loader_locate_fn = CFUNCTYPE(c_int32, c_void_p, c_uint64, POINTER(c_uint8), c_size_t,
                             POINTER(c_size_t))


class loader_callbacks(_Growable):
    _fields_ = [
        ("struct_size", c_uint32),
        ("userdata", c_void_p),
        ("issue", loader_issue_fn),
        ("release", loader_release_fn),
        ("changed", loader_changed_fn),
        ("cancel", loader_cancel_fn),
        ("compare", loader_compare_fn),
        ("locate", loader_locate_fn),
    ]


class loader_snapshot(_Growable):
    _fields_ = [
        ("struct_size", c_uint32),
        ("quiescent", c_bool),
        ("revalidating", c_bool),
        ("end_of_source", c_bool),
        ("start_of_source", c_bool),
        ("window_start", c_uint64),
        ("window_len", c_uint64),
        ("covered_start", c_uint64),
        ("covered_end", c_uint64),
        ("pages", c_uint64),
        ("outstanding_reads", c_uint64),
        ("accepted", c_uint64),
        ("released", c_uint64),
        ("failure", c_enum),
        ("debt", c_enum),
        ("phase", c_enum),
        ("coverage", c_enum),
        ("settled_once", c_bool),
        ("epoch", c_uint64),
        ("chain_epoch", c_uint64),
        ("cover_epoch", c_uint64),
        ("next_request_id", c_uint64),
        ("inflight", c_uint64),
        ("settled", c_uint64),
        ("failed", c_uint64),
    ]


class loader_counts(_Growable):
    _fields_ = [
        ("struct_size", c_uint32),
        ("issued_finite", c_uint64),
        ("issued_chain", c_uint64),
        ("issued_full", c_uint64),
        ("answered_current", c_uint64),
        ("answered_stale", c_uint64),
        ("cursor_stalls", c_uint64),
        ("failed_own", c_uint64),
        ("failed_stale", c_uint64),
        ("retries_auto", c_uint64),
        ("retries_explicit", c_uint64),
        ("accepted", c_uint64),
        ("released", c_uint64),
        ("cancels", c_uint64),
        ("issued_backward", c_uint64),
        ("items_read", c_uint64),
        ("renumbered", c_uint64),
        ("jumps", c_uint64),
        ("resumed", c_uint64),
        ("abandoned", c_uint64),
        ("timed_out", c_uint64),
        ("late_answers", c_uint64),
        ("ranged_invalidations", c_uint64),
        ("ranged_repairs", c_uint64),
        ("retries_page", c_uint64),
        ("far_jumps", c_uint64),
        ("located", c_uint64),
        ("locate_unknown", c_uint64),
    ]


class loader_request_info(Structure):
    _fields_ = [
        ("id", c_uint64),
        ("kind", c_enum),
        ("epoch", c_uint64),
        ("state", c_enum),
        ("superseded", c_bool),
    ]


class loader_page(Structure):
    _fields_ = [
        ("acquisition", c_size_t),
        ("count", c_uint32),
        ("epoch", c_uint64),
        ("start", c_uint64),
    ]


class loader_view_snapshot(Structure):
    """Opaque: a pinned view, only ever handled through a pointer."""


class loader_load_result(Structure):
    """The C feed's answer from a load (``loader_feed_*``; the threaded Python Feed answers its
    jobs with it)."""

    _fields_ = [
        ("acquisition", c_size_t),
        ("count", c_uint32),
        ("next_cursor", POINTER(c_uint8)),
        ("next_cursor_len", c_size_t),
        ("end_of_source", c_bool),
    ]


loader_load_fn = CFUNCTYPE(c_int32, c_void_p, POINTER(loader_read), POINTER(loader_load_result))


class loader_feed_config(_Growable):
    _fields_ = [
        ("struct_size", c_uint32),
        ("workers", c_uint32),
        ("userdata", c_void_p),
        ("load", loader_load_fn),
        ("release", loader_release_fn),
        ("changed", loader_changed_fn),
        ("compare", loader_compare_fn),
        ("loader", POINTER(loader_config)),
        ("locate", loader_locate_fn),
    ]


loader_feed_handle = c_uint64
loader_feed_job_token = c_uint64
loader_feed_ready_fn = CFUNCTYPE(None, c_void_p)


class loader_feed_counts(_Growable):
    """A C feed's counters (``loader_feed_stats``, ``loader_feed_free_counted``)."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("last_refused_code", c_int32),
        ("handed_out", c_uint64),
        ("accepted", c_uint64),
        ("given_back", c_uint64),
        ("late", c_uint64),
        ("released_by_loader", c_uint64),
        ("running", c_uint64),
        ("failed", c_uint64),
        ("count_over_limit", c_uint64),
        ("cursor_stalled", c_uint64),
        ("refused_null_cursor", c_uint64),
        ("refused_cursor_too_long", c_uint64),
        ("refused_other", c_uint64),
        ("timed_out", c_uint64),
    ]


class loader_feed_job(Structure):
    """A job of the C feed in job or hosted mode (``loader_feed_next_job``): its token and its
    read."""

    _fields_ = [
        ("token", loader_feed_job_token),
        ("read", loader_read),
    ]

OPAQUE: Tuple[str, ...] = ("loader_view_snapshot",)
"""The header's opaque structs (declared, never defined)."""


STRUCTS: Tuple[type, ...] = (
    loader_config,
    loader_read,
    loader_callbacks,
    loader_snapshot,
    loader_counts,
    loader_request_info,
    loader_page,
    loader_load_result,
    loader_feed_config,
    loader_feed_counts,
    loader_feed_job,
)
"""Every struct of the header, by its C name (``__name__``)."""

CALLBACK_TYPES: Dict[str, Any] = {
    "loader_issue_fn": loader_issue_fn,
    "loader_release_fn": loader_release_fn,
    "loader_changed_fn": loader_changed_fn,
    "loader_cancel_fn": loader_cancel_fn,
    "loader_compare_fn": loader_compare_fn,
    "loader_locate_fn": loader_locate_fn,
    "loader_load_fn": loader_load_fn,
    "loader_feed_ready_fn": loader_feed_ready_fn,
}
"""Every callback typedef of the header."""

_u8p = POINTER(c_uint8)
_enum_p = POINTER(c_enum)

FUNCTIONS: Dict[str, Tuple[Any, List[Any]]] = {
    "loader_config_default": (c_enum, [POINTER(loader_config)]),
    "loader_new": (c_enum, [POINTER(loader_config), POINTER(loader_callbacks),
                            POINTER(loader_handle)]),
    "loader_free": (c_enum, [loader_handle]),
    "loader_version": (c_char_p, []),
    "loader_result_str": (c_char_p, [c_int32]),
    "loader_invalidate": (c_enum, [loader_handle]),
    "loader_settle": (c_enum, [loader_handle, c_uint64, c_size_t, c_uint32, _u8p, c_size_t,
                               c_bool, _enum_p]),
    "loader_settle_counted": (c_enum, [loader_handle, c_uint64, c_size_t, c_uint32, _u8p,
                                       c_size_t, c_bool, c_uint64, _enum_p]),
    "loader_fail": (c_enum, [loader_handle, c_uint64, c_int32, _enum_p]),
    "loader_retry": (c_enum, [loader_handle, POINTER(c_bool)]),
    "loader_set_window": (c_enum, [loader_handle, c_uint64, c_uint64]),
    "loader_tick": (c_enum, [loader_handle, c_uint64]),
    "loader_next_deadline": (c_enum, [loader_handle, POINTER(c_bool), POINTER(c_uint64)]),
    "loader_state": (c_enum, [loader_handle, POINTER(loader_snapshot)]),
    "loader_stats": (c_enum, [loader_handle, POINTER(loader_counts)]),
    "loader_requests": (c_enum, [loader_handle, POINTER(loader_request_info), c_size_t,
                                 POINTER(c_size_t)]),
    "loader_view": (c_enum, [loader_handle, POINTER(loader_page), c_size_t, POINTER(c_size_t),
                             POINTER(c_bool)]),
    "loader_view_acquire": (c_enum, [loader_handle,
                                     POINTER(POINTER(loader_view_snapshot))]),
    "loader_view_pages": (c_enum, [POINTER(loader_view_snapshot),
                                   POINTER(POINTER(loader_page)), POINTER(c_size_t),
                                   POINTER(c_bool)]),
    "loader_view_requests": (c_enum, [POINTER(loader_view_snapshot),
                                      POINTER(POINTER(loader_request_info)),
                                      POINTER(c_size_t)]),
    "loader_view_state": (c_enum, [POINTER(loader_view_snapshot), POINTER(loader_snapshot)]),
    "loader_view_release": (c_enum, [POINTER(loader_view_snapshot)]),
    "loader_jump": (c_enum, [loader_handle, _u8p, c_size_t, c_uint64]),
    "loader_abandon": (c_enum, [loader_handle, c_uint64, POINTER(c_enum)]),
    "loader_invalidate_range": (c_enum, [loader_handle, _u8p, c_size_t, _u8p, c_size_t]),
    "loader_record": (c_enum, [loader_handle, c_char_p]),
}
"""Every function of the public ABI: name -> (restype, argtypes)."""

ADDED_FUNCTIONS: Dict[str, Tuple[Any, List[Any]]] = {
    "loader_explain": (c_enum, [loader_handle, POINTER(c_char), c_size_t, POINTER(c_size_t)]),
    # The C feed: the threaded Python Feed is this feed in hosted mode (below).
    "loader_feed_new": (c_enum, [POINTER(loader_feed_config), POINTER(loader_feed_handle)]),
    "loader_feed_loader": (c_enum, [loader_feed_handle, POINTER(loader_handle)]),
    "loader_feed_set_window": (c_enum, [loader_feed_handle, c_uint64, c_uint64]),
    "loader_feed_jump": (c_enum, [loader_feed_handle, _u8p, c_size_t, c_uint64]),
    "loader_feed_invalidate": (c_enum, [loader_feed_handle]),
    "loader_feed_invalidate_range": (c_enum, [loader_feed_handle, _u8p, c_size_t, _u8p,
                                              c_size_t]),
    "loader_feed_retry": (c_enum, [loader_feed_handle, POINTER(c_bool)]),
    "loader_feed_wait_quiescent": (c_enum, [loader_feed_handle, ctypes.c_int64]),
    "loader_appended": (c_enum, [loader_handle]),
    "loader_follow": (c_enum, [loader_handle, c_bool]),
    "loader_following": (c_enum, [loader_handle, POINTER(c_bool)]),
    "loader_feed_appended": (c_enum, [loader_feed_handle]),
    "loader_feed_follow": (c_enum, [loader_feed_handle, c_bool]),
    "loader_feed_free": (c_enum, [loader_feed_handle, ctypes.c_int64, POINTER(c_uint32)]),
    "loader_feed_stats": (c_enum, [loader_feed_handle, POINTER(loader_feed_counts)]),
    "loader_feed_free_counted": (c_enum, [loader_feed_handle, ctypes.c_int64, POINTER(c_uint32),
                                          POINTER(loader_feed_counts)]),
    # The C feed in job mode: its loads run on the host's threads.
    "loader_feed_new_jobs": (c_enum, [POINTER(loader_feed_config), loader_feed_ready_fn,
                                      POINTER(loader_feed_handle)]),
    "loader_feed_next_job": (c_enum, [loader_feed_handle, ctypes.c_int64,
                                      POINTER(loader_feed_job)]),
    "loader_feed_complete_job": (c_enum, [loader_feed_job_token, c_int32,
                                          POINTER(loader_load_result)]),
    # The C feed in hosted mode: the host's threads are its workers.
    "loader_feed_new_hosted": (c_enum, [POINTER(loader_feed_config), POINTER(loader_feed_handle)]),
    "loader_feed_new_hosted_ready": (c_enum, [POINTER(loader_feed_config), loader_feed_ready_fn,
                                              POINTER(loader_feed_handle)]),
    "loader_feed_job_hinted": (c_enum, [loader_feed_job_token, POINTER(c_bool)]),
    "loader_feed_complete_next_job": (c_enum, [loader_feed_job_token, c_int32,
                                               POINTER(loader_load_result), ctypes.c_int64,
                                               POINTER(loader_feed_job)]),
}
"""Public functions newer than some builds of the library: declared when the loaded library
exports them; the method that needs one raises NotImplementedError otherwise."""

TESTING_FUNCTIONS: Dict[str, Tuple[Any, List[Any]]] = {
    "loader_new_with_counters": (c_enum, [POINTER(loader_config), POINTER(loader_callbacks),
                                          c_uint64, c_uint64, POINTER(loader_handle)]),
    "loader_floor": (c_enum, [loader_handle]),
    "loader_test_panic": (c_enum, [loader_handle]),
}
"""The test ABI (``#if defined(LOADER_TESTING)`` in the header): exported only by a library
built with the ``testing`` cargo feature."""


def declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Sets ``restype`` and ``argtypes`` of every public function on ``lib``, and of the
    added functions and the test ABI's that the library has; raises AttributeError naming the public functions
    the library does not export."""
    missing = [name for name in FUNCTIONS if not hasattr(lib, name)]
    if missing:
        raise AttributeError(f"{lib._name} does not export: {', '.join(missing)}")
    for name, (restype, argtypes) in [*FUNCTIONS.items(), *ADDED_FUNCTIONS.items(),
                                      *TESTING_FUNCTIONS.items()]:
        if name not in FUNCTIONS and not hasattr(lib, name):
            continue
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def has_testing() -> bool:
    """The loaded library was built with the ``testing`` feature (it exports the test ABI)."""
    return all(hasattr(lib(), name) for name in TESTING_FUNCTIONS)


_lock = threading.Lock()
_loaded: Optional[Tuple[ctypes.CDLL, Path]] = None
_settle_bytes: Any = None


def lib() -> ctypes.CDLL:
    """The loaded, declared library (loaded on first use)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                cdll, path = _library.load()
                _loaded = (declare(cdll), path)
    return _loaded[0]


def library_path() -> Path:
    """Where the loaded library came from."""
    lib()
    assert _loaded is not None
    return _loaded[1]


def settle_taking_bytes() -> Any:
    """``loader_settle`` as a second function object whose cursor parameter is declared
    ``c_char_p``, so a ``bytes`` cursor is passed as a pointer to its own buffer instead of
    being copied into a ctypes array first. The ABI is the same (a pointer and a length; the
    library copies the cursor before it returns); ``lib().loader_settle`` keeps the header's
    declaration, which the header test checks."""
    global _settle_bytes
    if _settle_bytes is None:
        fn = lib()["loader_settle"]  # indexing makes a new function object
        restype, argtypes = FUNCTIONS["loader_settle"]
        fn.restype = restype
        fn.argtypes = [c_char_p if t is _u8p else t for t in argtypes]
        _settle_bytes = fn
    return _settle_bytes


_holding: Dict[str, Any] = {}


def holding_gil(name: str) -> Any:
    """The library's function ``name`` as a second function object that keeps the GIL for
    the call (``ctypes.PyDLL``'s convention), for a call that never waits for long and never
    calls back into Python: ``loader_feed_stats`` reads counters. A call that gives the GIL
    up hands it to a thread waiting for it, then waits to have it back: on a feed's worker
    threads, a thread switch each way for a call of a microsecond."""
    fn = _holding.get(name)
    if fn is None:
        cdll = lib()
        fn = ctypes.PyDLL(str(library_path()), handle=cdll._handle)[name]
        restype, argtypes = FUNCTIONS[name]
        fn.restype = restype
        fn.argtypes = argtypes
        fn = _holding.setdefault(name, fn)
    return fn


_u8_arrays: Dict[int, Any] = {}


def cursor_arg(cursor: Optional[bytes]) -> Tuple[Any, int]:
    """``(pointer, length)`` for a cursor argument: NULL and 0 for an empty one. The array
    types are kept by length (cursors have few distinct lengths): a feed's answer makes one
    per load."""
    if not cursor:
        return None, 0
    n = len(cursor)
    t = _u8_arrays.get(n)
    if t is None:
        t = _u8_arrays.setdefault(n, c_uint8 * n)
    return t.from_buffer_copy(cursor), n


def cursor_bytes(ptr: Any, length: int) -> bytes:
    """A copy of ``length`` bytes at ``ptr`` (valid only during the callback)."""
    if length == 0 or not ptr:
        return b""
    return ctypes.string_at(ptr, length)


_char_arrays: Dict[int, Any] = {}


def bytes_at(address: int, length: int) -> bytes:
    """A copy of ``length`` > 0 bytes at the non-NULL ``address``, read through a char array
    laid over the memory: ``ctypes.string_at`` is itself a foreign call, and costs more. The
    array types are kept by length (cursors have few distinct lengths)."""
    t = _char_arrays.get(length)
    if t is None:
        t = _char_arrays.setdefault(length, c_char * length)
    raw: bytes = t.from_address(address).raw
    return raw


def array(struct: type, n: int) -> Sequence[Any]:
    """A zeroed C array of ``n`` structs."""
    return (struct * max(n, 0))()  # type: ignore[no-any-return, operator]


def read_id_at(address: int) -> int:
    """The ``read_id`` of the ``loader_read`` at ``address`` (its first field)."""
    return int(ctypes.c_uint64.from_address(address + loader_read.read_id.offset).value)
