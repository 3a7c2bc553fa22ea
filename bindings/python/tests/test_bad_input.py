"""The C suite's bad-input table, seen from Python: each row raises its own exception (or,
for rows only the raw ctypes layer can express, returns its code), changes no state, runs no
callback, and never releases the refused acquisition."""

from __future__ import annotations

import ctypes
from typing import Callable, List, Tuple, Union

import pytest

import libloader as L
from libloader import Read, Result, _ffi
from hosts import Acq, CountingHost


REFUSED = Acq(60000, ("refused",))
"""The acquisition every row offers, as the C table's 60000: it must never be released."""


def refused(h: CountingHost, read_id: int, count: int = 1,
            cursor: bytes = b"12345678") -> None:
    """Settles with the refused acquisition, as the C table's ``settle_with``."""
    h.loader.settle(read_id, REFUSED, count=count, next_cursor=cursor)


def raw(h: CountingHost, name: str, *args: object) -> int:
    return int(getattr(_ffi.lib(), name)(h.loader.handle, *args))


def raw_requests_small(h: CountingHost) -> int:
    arr = _ffi.array(_ffi.loader_request_info, 1)
    n = ctypes.c_size_t(0)
    rc = raw(h, "loader_requests", arr, 1, ctypes.byref(n))
    assert rc != Result.BUFFER_TOO_SMALL or n.value == 2, "out_len is the length needed"
    return rc


def raw_view_small(h: CountingHost) -> int:
    n = ctypes.c_size_t(0)
    rc = raw(h, "loader_view", None, 0, ctypes.byref(n), None)
    assert rc != Result.BUFFER_TOO_SMALL or n.value == 1, "out_len is the length needed"
    return rc


Row = Tuple[str, Union[type, Result], Callable[[CountingHost, Read, Read], object]]

ROWS: List[Row] = [
    ("an unknown read id", L.UnknownReadError, lambda h, o, d: refused(h, 999999)),
    ("a failure for read 0", L.UnknownReadError, lambda h, o, d: h.loader.fail(0, 1)),
    ("a second answer", L.AlreadyAnsweredError, lambda h, o, d: refused(h, d.read_id)),
    ("fail after settle", L.AlreadyAnsweredError, lambda h, o, d: h.loader.fail(d, 1)),
    ("count > limit", L.CountOverLimitError,
     lambda h, o, d: refused(h, o.read_id, count=o.limit + 1)),
    ("an oversize cursor", L.CursorTooLongError,
     lambda h, o, d: refused(h, o.read_id, cursor=bytes(L.MAX_CURSOR_LEN + 1))),
    ("a window overflow", L.WindowOverflowError,
     lambda h, o, d: h.loader.set_window(2**64 - 4, 4)),
    # Rows the Python API cannot express (it never passes NULL, and sizes its arrays):
    ("a NULL cursor with a non-zero length", Result.NULL_CURSOR,
     lambda h, o, d: raw(h, "loader_settle", o.read_id, 60000, 1, None, 8, False, None)),
    ("loader_state(NULL)", Result.NULL_POINTER, lambda h, o, d: raw(h, "loader_state", None)),
    ("loader_requests with NULL out_len", Result.NULL_POINTER,
     lambda h, o, d: raw(h, "loader_requests", _ffi.array(_ffi.loader_request_info, 8), 8,
                         None)),
    ("loader_requests with a NULL array", Result.NULL_POINTER,
     lambda h, o, d: raw(h, "loader_requests", None, 8, ctypes.byref(ctypes.c_size_t()))),
    ("loader_view with NULL out_len", Result.NULL_POINTER,
     lambda h, o, d: raw(h, "loader_view", _ffi.array(_ffi.loader_page, 8), 8, None, None)),
    ("loader_next_deadline with NULL out_armed", Result.NULL_POINTER,
     lambda h, o, d: raw(h, "loader_next_deadline", None, ctypes.byref(ctypes.c_uint64()))),
    ("loader_requests capacity too small", Result.BUFFER_TOO_SMALL,
     lambda h, o, d: raw_requests_small(h)),
    ("loader_view capacity too small", Result.BUFFER_TOO_SMALL,
     lambda h, o, d: raw_view_small(h)),
]


@pytest.mark.parametrize("what,want,call", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_changes_nothing(make_host: Callable[..., CountingHost], what: str,
                                   want: Union[type, Result],
                                   call: Callable[[CountingHost, Read, Read], object]) -> None:
    # One page settled (read `done`), one read open (`open`): two live requests.
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    done = h.take()
    h.answer(done)
    h.loader.set_window(0, 8)
    open_ = h.pending[0]
    before, reqs_before, view_before = h.loader.state, h.loader.requests(), h.loader.view()
    counts = (h.issues, h.changes, h.cancels)
    if isinstance(want, Result):
        assert call(h, open_, done) == want
    else:
        assert isinstance(want, type)
        with pytest.raises(want) as e:
            call(h, open_, done)
        assert isinstance(e.value, L.LoaderError) and e.value.message
    assert h.loader.state == before
    assert h.loader.requests() == reqs_before and h.loader.view() == view_before
    assert (h.issues, h.changes, h.cancels) == counts
    # The refused acquisition stays the host's: the loader never holds or releases it.
    assert all(p.acquisition is not REFUSED for p in h.loader.view().pages)
    h.loader.close()
    assert REFUSED.n not in h.ledger.released and not h.ledger.bad_releases
    assert h.ledger.released_exactly_once()


def test_settle_after_fail_is_refused(make_host: Callable[..., CountingHost]) -> None:
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    p = h.take()
    assert h.loader.fail(p, 1) is L.Answer.CURRENT
    before = h.loader.state
    acq = h.make_acq((1,))
    with pytest.raises(L.AlreadyAnsweredError):
        h.loader.settle(p, acq, next_cursor=b"12345678")
    assert h.loader.state == before
    h.loader.close()
    assert acq.n not in h.ledger.released and h.ledger.released_exactly_once()


def test_cursors_of_zero_and_maximum_length_are_accepted(
        make_host: Callable[..., CountingHost]) -> None:
    h = make_host(4, 40)
    h.loader.set_window(0, 8)
    biggest = b"\xab" * L.MAX_CURSOR_LEN
    p = h.take()
    acq = h.make_acq((0, 1, 2, 3))
    h.ledger.accepted[acq.n] = acq
    assert h.loader.settle(p, acq, next_cursor=biggest) is L.Answer.CURRENT
    assert len(h.pending) == 1 and h.pending[0].cursor == biggest
    p = h.take()
    acq = h.make_acq(())
    h.ledger.accepted[acq.n] = acq
    h.loader.settle(p, acq, next_cursor=b"", end_of_source=True)
    s = h.loader.state
    assert s.end_of_source and s.covered_end == 4
    h.loader.close()
    assert h.ledger.released_exactly_once()


@pytest.mark.parametrize("call", [
    lambda ld: ld.set_window(-1, 4),
    lambda ld: ld.set_window(0, 2**64),
    lambda ld: ld.tick(-5),
    lambda ld: ld.fail(1, 2**31),
    lambda ld: ld.settle(1, (), next_cursor="text"),
    lambda ld: ld.settle(1, object()),
    lambda ld: ld.settle(-1, ()),
])
def test_python_values_ctypes_would_wrap_are_refused_before_the_call(
        call: Callable[[L.Loader], object]) -> None:
    with L.Loader(lambda r: None, lambda a: None) as ld:
        before = ld.state
        with pytest.raises((TypeError, ValueError)):
            call(ld)
        assert ld.state == before
