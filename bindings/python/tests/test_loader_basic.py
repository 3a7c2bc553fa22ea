"""The Loader's Python surface: lifecycle, values, introspection."""

from __future__ import annotations

import dataclasses
import gc
import warnings
from pathlib import Path
from typing import Callable, List

import pytest

import libloader as L
from libloader import Config, Debt, Kind, Phase, RequestState
from hosts import CountingHost, span

Make = Callable[..., CountingHost]


def test_config_defaults_are_the_librarys() -> None:
    d = Config.defaults()
    assert (d.page_size, d.prefetch_distance, d.drop_margin) == (50, 50, 0)
    assert (d.backoff_initial_ms, d.backoff_max_ms, d.backoff_multiplier) == (100, 30000, 2.0)
    assert (d.max_auto_retries, d.jitter_seed, d.recheck_full) == (5, 0, True)
    c = Config(page_size=7, recheck_full=False).to_c()
    assert (c.page_size, c.prefetch_distance, c.recheck_full) == (7, 50, 0)


def test_a_context_manager_with_an_idempotent_close() -> None:
    released: List[object] = []
    with L.Loader(lambda r: None, released.append) as ld:
        assert not ld.closed
        assert ld.handle > 2**32          # handles never fit 32 bits: truncation is caught
    assert ld.closed
    ld.close()
    ld.close()
    with pytest.raises(L.StaleHandleError):
        ld.invalidate()
    with pytest.raises(L.StaleHandleError):
        ld.state
    assert "closed" in repr(ld)


def test_every_call_after_close_raises_stale_handle(make_host: Make) -> None:
    h = make_host(4, 10)
    h.loader.set_window(0, 4)
    read = h.pending[0]
    h.loader.close()
    assert h.cancels == 1                  # the outstanding read got its hint
    calls: List[Callable[[], object]] = [
        lambda: h.loader.invalidate(),
        lambda: h.answer(read),
        lambda: h.loader.fail(read, 0),
        lambda: h.loader.retry(),
        lambda: h.loader.set_window(0, 10),
        lambda: h.loader.tick(5),
        lambda: h.loader.next_deadline(),
        lambda: h.loader.state,
        lambda: h.loader.requests(),
        lambda: h.loader.view(),
    ]
    for call in calls:
        with pytest.raises(L.StaleHandleError):
            call()
    assert h.ledger.released_exactly_once()


def test_state_is_a_frozen_dataclass_with_enums(make_host: Make) -> None:
    h = make_host(4, 10)
    s = h.loader.state
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epoch = 3  # type: ignore[misc]
    assert s.phase is Phase.IDLE and s.debt is Debt.NONE
    assert isinstance(s.failure, L.Failure) and isinstance(s.coverage, L.Coverage)
    assert {f.name for f in dataclasses.fields(s)} == \
        {f[0] for f in L._ffi.loader_snapshot._fields_} - {"struct_size"}


def test_requests_and_view_grow_past_their_first_buffer(make_host: Make) -> None:
    h = make_host(1, 100)
    h.loader.set_window(0, 40)
    h.drain()
    reqs = h.loader.requests()
    assert len(reqs) == 40 and [r.id for r in reqs] == sorted(r.id for r in reqs)
    assert all(r.kind is Kind.FINITE and r.state is RequestState.SETTLED for r in reqs)
    view = h.loader.view()
    assert len(view) == 40 and view.count == 40
    assert [p.acquisition.items[0] for p in view.pages] == list(range(40))


def test_read_values_are_copied_and_typed(make_host: Make) -> None:
    h = make_host(4, 40)
    h.loader.set_window(0, 8)
    h.answer(h.take())
    r = h.pending[0]
    assert isinstance(r, L.Read) and r.kind is Kind.FINITE and r.cursor == (4).to_bytes(8, "big")
    assert r.limit == 4 and r.step == 0 and r.epoch == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.limit = 1  # type: ignore[misc]


def test_any_object_can_be_an_acquisition_and_comes_back_itself() -> None:
    reads: List[L.Read] = []
    released: List[object] = []
    marker = {"rows": [1, 2]}
    with L.Loader(reads.append, released.append, config=Config(page_size=2)) as ld:
        ld.set_window(0, 2)
        ld.settle(reads.pop(), marker, next_cursor=b"x", end_of_source=True)
        assert ld.view().pages[0].acquisition is marker
    assert released == [marker] and released[0] is marker
    # An int works too, and a count can be given for an object without len().
    with L.Loader(reads.append, released.append, config=Config(page_size=2)) as ld:
        ld.set_window(0, 2)
        ld.settle(reads.pop(), 12345, count=2, next_cursor=b"x", end_of_source=True)
    assert released[-1] == 12345


def test_the_safety_net_closes_an_unclosed_loader() -> None:
    released: List[object] = []
    reads: List[L.Read] = []
    ld = L.Loader(reads.append, released.append)
    ld.set_window(0, 5)
    ld.settle(reads.pop(), "page", count=5, next_cursor=b"c")
    with pytest.warns(ResourceWarning, match="unclosed"):
        del ld
        gc.collect()
    assert released == ["page"]


def test_the_safety_net_also_collects_a_loader_its_callbacks_refer_to() -> None:
    released: List[object] = []

    class Host:
        def __init__(self) -> None:
            self.loader = L.Loader(self.issue, released.append)

        def issue(self, read: L.Read) -> None:
            self.loader.settle(read, "sync", count=1, next_cursor=b"c", end_of_source=True)

    h = Host()
    h.loader.set_window(0, 1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        del h
        gc.collect()
    assert released == ["sync"]
    assert any(issubclass(x.category, ResourceWarning) for x in w)


def test_the_package_is_typed() -> None:
    assert (Path(L.__file__).parent / "py.typed").is_file()


def test_a_truncated_handle_is_rejected_not_misused() -> None:
    with L.Loader(lambda r: None, lambda a: None) as ld:
        lib = L._ffi.lib()
        snap = L._ffi.loader_snapshot()
        assert lib.loader_state(ld.handle & 0xFFFFFFFF, snap) == L.Result.INVALID_HANDLE
        assert lib.loader_state(ld.handle, snap) == L.Result.OK


def test_stats_count_reads_answers_and_acquisitions() -> None:
    rows = list(range(30))
    reads: List[L.Read] = []
    released: List[object] = []
    with L.Loader(reads.append, released.append,
                  config=Config(page_size=4, prefetch_distance=0)) as ld:
        ld.set_window(0, 8)
        while reads:
            r = reads.pop()
            lo, hi, nxt, end = span(r.cursor, r.limit, r.direction, len(rows), width=4)
            ld.settle(r, rows[lo:hi], next_cursor=nxt, end_of_source=end)
        ld.invalidate()
        late = reads.pop()
        ld.fail(late, 9)
        s = ld.stats()
        assert (s.issued_finite, s.issued_chain, s.issued_full) == (2, 1, 0)
        assert (s.answered_current, s.answered_stale, s.failed_own) == (2, 0, 1)
        assert (s.accepted, s.released) == (2, 0)
    assert len(released) == 2
