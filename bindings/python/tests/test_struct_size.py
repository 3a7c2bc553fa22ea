"""The structs that grow, through the raw ctypes layer: each is made with its ``struct_size``
set, one never set is refused, and bindings newer than the library get a clear error when they
set a field the library lacks (the C side: c-tests/abi/abi_host.c, ``make c-test-abi``)."""

from __future__ import annotations

import ctypes
from typing import Any

from libloader import Result, _ffi


def newer(struct: Any, added: str) -> Any:
    """The struct as a header one release newer declares it: one 8-byte field appended."""
    return type("newer_" + struct.__name__, (ctypes.Structure,),
                {"_fields_": list(struct._fields_) + [(added, ctypes.c_uint64)]})


def test_every_struct_that_grows_is_made_with_its_size() -> None:
    for struct in (_ffi.loader_config, _ffi.loader_callbacks, _ffi.loader_snapshot,
                   _ffi.loader_counts):
        assert struct._fields_[0] == ("struct_size", ctypes.c_uint32)
        assert struct().struct_size == ctypes.sizeof(struct)
    # Positional arguments fill the fields after it.
    keep = _ffi.loader_issue_fn(lambda u, r: None)
    cb = _ffi.loader_callbacks(None, keep)
    assert cb.struct_size == ctypes.sizeof(cb) and cb.issue and not cb.release


def test_a_size_never_set_is_refused_and_nothing_is_written() -> None:
    lib = _ffi.lib()
    cfg = _ffi.loader_config()
    cfg.struct_size = 0
    assert lib.loader_config_default(cfg) == Result.INVALID_STRUCT_SIZE
    assert cfg.page_size == 0


def test_a_field_the_library_lacks_is_refused_only_when_set() -> None:
    lib = _ffi.lib()
    cfg_type = newer(_ffi.loader_config, "future_knob")
    cfg = cfg_type()
    cfg.struct_size = ctypes.sizeof(cfg)
    cfg.future_knob = 0xAB
    as_config = ctypes.cast(ctypes.pointer(cfg), ctypes.POINTER(_ffi.loader_config))
    assert lib.loader_config_default(as_config) == Result.OK
    assert cfg.future_knob == 0 and cfg.struct_size == ctypes.sizeof(cfg)
    assert cfg.page_size >= 1
    issue = _ffi.loader_issue_fn(lambda u, r: None)
    release = _ffi.loader_release_fn(lambda u, a: None)
    callbacks = _ffi.loader_callbacks(None, issue, release)
    out = _ffi.loader_handle(7)
    cfg.future_knob = 1
    assert lib.loader_new(as_config, callbacks, ctypes.byref(out)) == Result.UNKNOWN_FIELD
    assert out.value == 7
    cfg.future_knob = 0
    assert lib.loader_new(as_config, callbacks, ctypes.byref(out)) == Result.OK
    handle = out.value
    snap_type = newer(_ffi.loader_snapshot, "future_gauge")
    snap = snap_type()
    snap.struct_size = ctypes.sizeof(snap)
    snap.future_gauge = 99
    as_snapshot = ctypes.cast(ctypes.pointer(snap), ctypes.POINTER(_ffi.loader_snapshot))
    assert lib.loader_state(handle, as_snapshot) == Result.OK
    # The library filled what it knows, said how much, and left the rest alone.
    assert snap.struct_size == ctypes.sizeof(_ffi.loader_snapshot)
    assert snap.future_gauge == 99 and snap.quiescent
    assert lib.loader_free(handle) == Result.OK
