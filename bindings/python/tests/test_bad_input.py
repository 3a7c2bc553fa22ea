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


# ---- arguments of the wrong type: a TypeError (or ValueError) naming the argument, and the
# call changes nothing ----

def _loader_with_one_open_read() -> Tuple[L.Loader[object], List[Read], List[object]]:
    reads: List[Read] = []
    released: List[object] = []
    ld: L.Loader[object] = L.Loader(reads.append, released.append,
                                    config=L.Config(page_size=4, prefetch_distance=0))
    ld.set_window(0, 4)
    assert len(reads) == 1
    return ld, reads, released


@pytest.mark.parametrize("config", [{"page_size": 5}, [("page_size", 5)], 5, "page_size=5"])
def test_a_config_that_is_not_a_config_is_a_type_error(config: object) -> None:
    with pytest.raises(TypeError, match=r"config must be a libloader\.Config"):
        L.Loader(lambda r: None, lambda a: None, config=config)  # type: ignore[arg-type]


def test_a_mapping_converts_explicitly() -> None:
    mapping = {"page_size": 5, "prefetch_distance": 0}
    reads: List[Read] = []
    with L.Loader(reads.append, lambda a: None, config=L.Config(**mapping)) as ld:
        ld.set_window(0, 5)
        assert [r.limit for r in reads] == [5]


@pytest.mark.parametrize("field,value,exc", [
    ("backoff_multiplier", "2", TypeError),
    ("backoff_multiplier", True, TypeError),
    ("recheck_full", "no", TypeError),
    ("recheck_full", 0, TypeError),
    ("page_size", 5.0, TypeError),
    ("page_size", "5", TypeError),
    ("page_size", True, TypeError),
    ("page_size", -1, ValueError),
    ("page_size", 2**32, ValueError),
    ("prefetch_distance", -1, ValueError),
    ("drop_margin", 1.5, TypeError),
    ("backoff_initial_ms", b"1", TypeError),
    ("backoff_max_ms", 2**64, ValueError),
    ("max_auto_retries", -3, ValueError),
    ("jitter_seed", "seed", TypeError),
])
def test_a_config_field_of_the_wrong_type_is_refused_by_name(field: str, value: object,
                                                            exc: type) -> None:
    with pytest.raises(exc, match=rf"Config\.{field}"):
        L.Config(**{field: value})  # type: ignore[arg-type]


def test_config_fields_of_the_right_type_are_accepted() -> None:
    c = L.Config(page_size=7, backoff_multiplier=3, recheck_full=False, jitter_seed=2**64 - 1)
    assert c.to_c().backoff_multiplier == 3.0 and c.to_c().recheck_full == 0
    assert L.Config(backoff_multiplier=2.5).to_c().backoff_multiplier == 2.5


@pytest.mark.parametrize("cursor", [123, 0, [1, 2, 3], "abc", None, 1.5, True])
def test_a_cursor_that_is_not_bytes_like_is_refused(cursor: object) -> None:
    ld, reads, released = _loader_with_one_open_read()
    before, held = ld.state, dict(ld._host.held)
    with pytest.raises(TypeError, match="next_cursor"):
        ld.settle(reads[0], [1, 2, 3, 4], next_cursor=cursor)  # type: ignore[arg-type]
    assert ld.state == before and ld._host.held == held
    ld.close()
    assert released == []


@pytest.mark.parametrize("cursor", [bytearray(b"\x00\x04"), memoryview(b"\x00\x04")])
def test_bytes_like_cursors_are_accepted(cursor: object) -> None:
    ld, reads, released = _loader_with_one_open_read()
    acq = [1, 2, 3, 4]
    assert ld.settle(reads[0], acq, next_cursor=cursor) is L.Answer.CURRENT  # type: ignore
    ld.set_window(0, 8)
    assert reads[-1].cursor == b"\x00\x04"
    ld.close()
    assert released == [acq]


@pytest.mark.parametrize("eos", ["no", 1, 0, None, b""])
def test_end_of_source_must_be_a_bool(eos: object) -> None:
    ld, reads, released = _loader_with_one_open_read()
    before = ld.state
    with pytest.raises(TypeError, match="end_of_source"):
        ld.settle(reads[0], [1, 2, 3, 4], next_cursor=b"c", end_of_source=eos)  # type: ignore
    assert ld.state == before and not ld._host.held
    ld.close()
    assert released == []


@pytest.mark.parametrize("count", [-1, 2**32, 2.0, "4", True])
def test_a_count_that_is_not_a_u32_is_refused(count: object) -> None:
    ld, reads, released = _loader_with_one_open_read()
    before = ld.state
    with pytest.raises((TypeError, ValueError), match="count"):
        ld.settle(reads[0], [1, 2, 3, 4], count=count)  # type: ignore[arg-type]
    assert ld.state == before and not ld._host.held
    ld.close()
    assert released == []


@pytest.mark.parametrize("call", [
    lambda ld: ld.set_window(0.0, 4),
    lambda ld: ld.set_window(0, True),
    lambda ld: ld.tick(1.5),
    lambda ld: ld.tick("5"),
    lambda ld: ld.fail(1, 1.0),
    lambda ld: ld.fail(1, False),
    lambda ld: ld.fail(True),
    lambda ld: ld.fail(-1),
    lambda ld: ld.fail(2**64),
])
def test_numbers_of_the_wrong_kind_are_refused(call: Callable[[L.Loader[object]], object]) -> None:
    ld, reads, released = _loader_with_one_open_read()
    before = ld.state
    with pytest.raises((TypeError, ValueError)):
        call(ld)
    assert ld.state == before
    ld.close()


@pytest.mark.parametrize("counters,exc", [
    ((1, 2, 3), TypeError), ((1,), TypeError), (5, TypeError), ((-1, 1), ValueError),
    ((1, 1.0), TypeError), ((True, 1), TypeError)])
def test_counters_must_be_a_pair_of_u64(counters: object, exc: type) -> None:
    with pytest.raises(exc, match="counters"):
        L.Loader(lambda r: None, lambda a: None, counters=counters)  # type: ignore[arg-type]


def test_a_read_from_another_loader_is_refused_by_both_answers() -> None:
    a, reads_a, released_a = _loader_with_one_open_read()
    b, reads_b, released_b = _loader_with_one_open_read()
    # Both loaders issued read 1: by id alone, b would take a's read as its own.
    assert reads_a[0].read_id == reads_b[0].read_id
    before = b.state
    with pytest.raises(ValueError, match="issued by another loader"):
        b.settle(reads_a[0], [1, 2, 3, 4], next_cursor=b"\x04")
    with pytest.raises(ValueError, match="issued by another loader"):
        b.fail(reads_a[0], 1)
    assert b.state == before and not b._host.held
    # Each loader still takes its own read.
    assert b.settle(reads_b[0], [1, 2, 3, 4], next_cursor=b"\x04") is L.Answer.CURRENT
    assert a.fail(reads_a[0], 1) is L.Answer.CURRENT
    a.close()
    b.close()
    assert released_a == [] and released_b == [[1, 2, 3, 4]]


def test_a_read_from_a_closed_loader_is_refused_by_a_new_one() -> None:
    a, reads_a, _ = _loader_with_one_open_read()
    a.close()
    b, reads_b, _ = _loader_with_one_open_read()
    with pytest.raises(ValueError, match="issued by another loader"):
        b.settle(reads_a[0], [1, 2, 3, 4])
    b.close()


def test_a_bare_read_id_and_a_hand_made_read_are_still_accepted() -> None:
    ld, reads, released = _loader_with_one_open_read()
    r = reads[0]
    by_hand = Read(r.read_id, r.request_id, r.kind, r.epoch, r.step, r.cursor, r.limit)
    assert by_hand.loader_key == 0 and by_hand != r and repr(by_hand) == repr(r)
    assert ld.settle(by_hand, [1, 2, 3, 4], next_cursor=b"\x04") is L.Answer.CURRENT
    ld.set_window(0, 8)
    assert ld.settle(reads[1].read_id, [5, 6, 7, 8], next_cursor=b"\x08") is L.Answer.CURRENT
    ld.close()
    assert sorted(released) == [[1, 2, 3, 4], [5, 6, 7, 8]]
