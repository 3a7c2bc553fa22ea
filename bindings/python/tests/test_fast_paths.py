"""The bindings' fast paths give what the plain ones give: the issue callback's read (built
from ``issued_read`` without the dataclass's ``__init__``) equals ``Read.from_c``, and the
struct it reads has ``loader_read``'s layout."""

from __future__ import annotations

import ctypes
from typing import Optional

import pytest

from libloader import Direction, Kind, Read, _ffi
from libloader._types import _read_from_c


def test_issued_read_has_the_layout_of_loader_read() -> None:
    assert ctypes.sizeof(_ffi.issued_read) == ctypes.sizeof(_ffi.loader_read)
    assert ctypes.alignment(_ffi.issued_read) == ctypes.alignment(_ffi.loader_read)
    names = [f[0] for f in _ffi.loader_read._fields_]
    assert [f[0] for f in _ffi.issued_read._fields_] == names
    for name in names:
        a, b = getattr(_ffi.loader_read, name), getattr(_ffi.issued_read, name)
        assert (a.offset, a.size) == (b.offset, b.size), name


@pytest.mark.parametrize("kind,cursor,until", [
    (0, b"", None), (1, b"\x00\x01cursor", None), (2, b"\xff" * 4096, None),
    (1, b"\x05", b""), (1, b"\x05", b"\x09bound"),
])
def test_the_issue_callbacks_read_equals_from_c(kind: int, cursor: bytes,
                                                until: Optional[bytes]) -> None:
    buf = (ctypes.c_uint8 * max(len(cursor), 1)).from_buffer_copy(cursor or b"\x00")
    c = _ffi.loader_read(read_id=2**64 - 1, request_id=7, kind=kind, epoch=3, step=9,
                         cursor=ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)),
                         cursor_len=len(cursor), limit=50, direction=1)
    if until is not None:   # a bound: a non-NULL pointer, even for the empty cursor
        ubuf = (ctypes.c_uint8 * max(len(until), 1)).from_buffer_copy(until or b"\x00")
        c.until = ctypes.cast(ubuf, ctypes.POINTER(ctypes.c_uint8))
        c.until_len = len(until)
    fast = _read_from_c(ctypes.addressof(c), 42)
    assert fast == Read.from_c(c, 42)
    assert type(fast) is Read and fast.kind is Kind(kind) and fast.cursor == cursor
    assert fast.until == until and fast.direction is Direction.BACKWARD
    assert repr(fast) == repr(Read.from_c(c, 42)) and hash(fast) == hash(Read.from_c(c, 42))


def test_an_unknown_kind_is_refused_as_from_c_refuses_it() -> None:
    c = _ffi.loader_read(read_id=1, kind=7)
    with pytest.raises(ValueError):
        Read.from_c(c)
    with pytest.raises(ValueError):
        _read_from_c(ctypes.addressof(c), 1)
