"""The C suite's scenarios through the bindings: the seed's trace, the lost invalidation the
model predicted, backoff, counters, the panic boundary."""

from __future__ import annotations

from typing import Callable

import pytest

import libloader as L
from libloader import Answer, Coverage, Debt, Failure, Kind, Phase
from hosts import CountingHost
from testing_abi import panic_inside, requires_testing

Make = Callable[..., CountingHost]


def test_loads_the_window_and_frees_everything(make_host: Make) -> None:
    h = make_host(4, 30)
    h.loader.set_window(0, 10)
    assert len(h.pending) == 1 and h.pending[0].kind is Kind.FINITE
    assert h.pending[0].cursor == b""
    h.drain()
    s = h.loader.state
    assert (s.pages, s.covered_end, s.revalidating) == (3, 12, False)
    assert (s.phase, s.debt, s.coverage) == (Phase.IDLE, Debt.NONE, Coverage.PAGES)
    view = h.loader.view()
    assert not view.revalidating and len(view) == 3
    assert [(p.start, p.count) for p in view.pages] == [(0, 4), (4, 4), (8, 4)]
    assert [x for p in view.pages for x in p.acquisition.items] == list(range(12))
    assert h.changes > 0
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_the_seed_trace_does_not_strand_a_superseded_failure(make_host: Make) -> None:
    """The module's counterexample for `current`: IssueFinite, SettleFinite, IssueFinite,
    Invalidate, StartRepair, SettleChain, Invalidate, then the superseded read fails. It must
    not strand: failure stays none, the debt only rises, and refills continue."""
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    h.drain()                                   # IssueFinite, SettleFinite
    h.loader.set_window(0, 8)                   # IssueFinite
    assert len(h.pending) == 1
    late = h.take()
    h.loader.invalidate()                       # Invalidate, StartRepair
    assert h.cancels == 1                       # the superseded read got its hint
    assert h.loader.state.phase is Phase.REPAIR
    assert any(r.superseded for r in h.loader.requests())
    while (i := h.find(Kind.CHAIN)) is not None:
        assert h.answer(h.take(i)) is Answer.CURRENT    # SettleChain
    s = h.loader.state
    assert (s.phase, s.debt, s.coverage) == (Phase.IDLE, Debt.NONE, Coverage.CHAIN)
    h.loader.invalidate()                       # Invalidate
    assert h.loader.fail(late, 7) is Answer.STALE       # Fail(2) of the superseded read
    s = h.loader.state
    assert s.failure is Failure.NONE
    # It was hinted, so its failure is the host letting it go: not even the debt rises
    # (the repair the invalidation started is all that runs).
    assert s.debt is Debt.BOUNDED
    assert not L.violations(s, h.loader.requests())
    h.drain()
    h.loader.set_window(0, 20)                  # refills continue
    h.drain()
    s = h.loader.state
    assert s.covered_end >= 20 and not s.revalidating and s.cover_epoch == s.epoch
    assert [x for p in h.loader.view().pages for x in p.acquisition.items] == \
        list(range(s.covered_end))
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_an_invalidation_during_a_full_read_is_not_lost(make_host: Make) -> None:
    h = make_host(4, 20)
    h.loader.invalidate()
    h.loader.set_window(0, 4)
    assert len(h.pending) == 1 and h.pending[0].kind is Kind.FULL
    full = h.take()
    h.loader.invalidate()
    h.answer(full)
    s = h.loader.state
    assert s.revalidating and s.phase is Phase.REPAIR
    assert [r.kind for r in h.pending] == [Kind.CHAIN]
    h.drain()
    s = h.loader.state
    assert not s.revalidating and s.cover_epoch == s.epoch == 2
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_with_recheck_off_the_invalidation_is_lost(make_host: Make) -> None:
    # The model's exact unifiedMin: the same trace ends quiet with cover_epoch < epoch.
    h = make_host(4, 20, recheck_full=False)
    h.loader.invalidate()
    h.loader.set_window(0, 4)
    full = h.take()
    h.loader.invalidate()
    h.answer(full)
    h.drain()
    s = h.loader.state
    assert s.phase is Phase.IDLE and s.debt is Debt.NONE and s.cover_epoch < s.epoch
    assert any(v.startswith("NoLostInvalidation") for v in L.violations(s, h.loader.requests()))


def test_own_failures_arm_the_backoff_timer(make_host: Make) -> None:
    h = make_host(4, 20)
    h.loader.set_window(0, 4)
    assert h.loader.fail(h.take(), 1) is Answer.CURRENT
    deadline = h.loader.next_deadline()
    assert deadline is not None and 50 <= deadline <= 100
    h.loader.tick(deadline - 1)
    assert not h.pending
    h.loader.tick(deadline)
    # The window's first page failed with nothing else owed: the timer reads it again.
    assert len(h.pending) == 1 and h.pending[0].kind is Kind.FINITE
    assert h.pending[0].cursor == b"" and h.loader.stats().retries_page == 1
    h.drain()
    assert h.loader.next_deadline() is None
    assert h.loader.retry() is False            # nothing to retry
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_an_explicit_retry_reads_a_failed_page_again(make_host: Make) -> None:
    h = make_host(4, 20, max_auto_retries=0)
    h.loader.set_window(0, 8)
    h.drain()
    h.loader.set_window(0, 16)
    failed = h.take()
    h.loader.fail(failed, 1)
    assert h.loader.state.failure is Failure.OWN
    assert h.loader.retry() is True
    # Nothing else changed: one finite read of the same page, not the full source.
    assert [(r.kind, r.cursor, r.direction, r.until) for r in h.pending] == \
        [(Kind.FINITE, failed.cursor, failed.direction, failed.until)]
    st = h.loader.stats()
    assert (st.retries_explicit, st.retries_page, st.issued_full) == (1, 1, 0)
    h.drain()
    assert h.loader.state.quiescent and h.loader.state.covered_end >= 16


def test_an_invalidation_or_a_window_move_since_a_page_failure_retries_with_a_full_read(
        make_host: Make) -> None:
    for change in ("invalidate", "move"):
        h = make_host(4, 20, max_auto_retries=0)
        h.loader.set_window(0, 8)
        h.drain()
        h.loader.set_window(0, 16)
        h.loader.fail(h.take(), 1)
        if change == "invalidate":
            h.loader.invalidate()
            assert h.loader.retry() is True
        else:
            h.loader.set_window(4, 16)      # a window move retries
        assert [r.kind for r in h.pending] == [Kind.FULL], change
        assert h.loader.stats().retries_page == 0
        h.drain()
        s = h.loader.state
        assert s.quiescent and s.covered_end >= s.window_start + s.window_len


@requires_testing
def test_counters_near_their_end_are_refused() -> None:
    with L.Loader(lambda r: None, lambda a: None, counters=(2**64 - 1, 1)) as ld:
        before = ld.state
        assert before.epoch == 2**64 - 1
        with pytest.raises(L.EpochOverflowError):
            ld.invalidate()
        assert ld.state == before


@requires_testing
def test_a_panic_is_caught_and_poisons_the_handle(make_host: Make) -> None:
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    h.drain()
    with pytest.raises(L.PanicError):
        panic_inside(h.loader)
    with pytest.raises(L.PoisonedError) as e:
        h.loader.state
    assert "poisoned" in e.value.message
    with pytest.raises(L.PoisonedError):
        h.loader.invalidate()
    h.loader.close()                            # free still hands back what it held
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0
