"""The cancellation hint through the bindings: ``on_cancel(read_id)`` runs once for each read
that becomes superseded, a cancelled read may still be answered and the answer is stale, and
``close()`` hints every read still outstanding. Mirrors the C test ``the_cancellation_hint``."""

from __future__ import annotations

from typing import Callable, List

import pytest

import libloader as L
from libloader import Answer, Kind, Read
from hosts import CountingHost

Make = Callable[..., CountingHost]


class HintedHost(CountingHost):
    """Records each hint by read id."""

    def __init__(self, page_size: int, length: int, **config: object) -> None:
        super().__init__(page_size, length, **config)
        self.hints: List[int] = []
        self.on_hint: Callable[["HintedHost", int], None] = lambda h, rid: None

    def _cancel(self, read_id: int) -> None:
        super()._cancel(read_id)
        self.hints.append(read_id)
        self.on_hint(self, read_id)


def supersede_one(h: CountingHost) -> Read:
    """Loads a page, asks for the next one and invalidates while that read is out: the read
    becomes superseded (a repair starts from idle). Returns it, no longer pending."""
    h.loader.set_window(0, 4 * (len(h.loader.view()) + 1))
    assert len(h.pending) == 1 and h.pending[0].kind is Kind.FINITE
    late = h.take()
    h.loader.invalidate()
    assert any(r.superseded and r.id == late.request_id for r in h.loader.requests())
    return late


def settle_repair(h: CountingHost) -> None:
    """Answers the repair (chain or full reads) so the loader is quiet again."""
    while (i := next((j for j, r in enumerate(h.pending) if r.kind is not Kind.FINITE),
                     None)) is not None:
        h.answer(h.take(i))


def make_hinted(page_size: int, length: int) -> HintedHost:
    h = HintedHost(page_size, length)
    h.loader.set_window(0, 4)
    h.drain()
    return h


def test_each_superseded_read_is_hinted_once_when_it_becomes_superseded() -> None:
    h = make_hinted(4, 400)
    try:
        late = []
        for round_ in range(20):
            before = list(h.hints)
            read = supersede_one(h)
            assert h.hints == before + [read.read_id], f"round {round_}"
            late.append(read)
            settle_repair(h)
            assert h.hints == before + [read.read_id]   # answering the repair hints nothing
            assert h.answer(read) is Answer.STALE
        assert len(h.hints) == len(set(h.hints)) == 20
        assert h.loader.stats().cancels == 20
    finally:
        h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_a_cancelled_read_answered_is_stale_and_its_acquisition_comes_back() -> None:
    h = make_hinted(4, 100)
    read = supersede_one(h)
    assert h.hints == [read.read_id]
    pages_before = [(p.start, p.count) for p in h.loader.view().pages]
    answer = h.answer(read)
    assert answer is Answer.STALE
    # The stale answer changed nothing the host sees; its acquisition is released at the
    # latest when the repair commits (a settled request is held until then).
    assert [(p.start, p.count) for p in h.loader.view().pages] == pages_before
    stale_acq = max(h.ledger.accepted)
    settle_repair(h)
    assert h.ledger.released.get(stale_acq) == 1
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_an_empty_answer_to_a_cancelled_read_is_the_cheap_way_to_drop_it() -> None:
    h = make_hinted(4, 100)
    read = supersede_one(h)
    settle_repair(h)
    acq = h.make_acq(())
    h.ledger.accepted[acq.n] = acq
    assert h.loader.settle(read, acq, count=0) is Answer.STALE
    assert h.loader.state.debt is L.Debt.NONE           # no full re-read follows
    h.loader.set_window(0, 40)                          # and finite reads go on
    assert h.pending and h.pending[0].kind is Kind.FINITE
    h.drain()
    assert h.loader.state.covered_end >= 40
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_cancelled_read_failed_is_let_go_at_no_cost() -> None:
    h = make_hinted(4, 100)
    read = supersede_one(h)
    settle_repair(h)
    assert h.loader.fail(read, 5) is Answer.STALE
    s = h.loader.state
    assert s.failure is L.Failure.NONE and s.debt is L.Debt.NONE   # no full re-read
    assert not L.violations(s, h.loader.requests())
    h.loader.set_window(0, 40)                          # and finite reads go on
    assert h.pending and h.pending[0].kind is Kind.FINITE
    h.drain()
    assert h.loader.state.covered_end >= 40
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_a_cancelled_read_answered_from_inside_on_cancel() -> None:
    h = make_hinted(4, 100)
    answers: List[Answer] = []

    def answer_now(host: HintedHost, read_id: int) -> None:
        i = next(j for j, r in enumerate(host.pending) if r.read_id == read_id)
        answers.append(host.answer(host.take(i)))

    h.on_hint = answer_now
    h.loader.set_window(0, 8)
    assert len(h.pending) == 1
    h.loader.invalidate()                   # the hint arrives during this call
    assert answers == [Answer.STALE]
    assert not any(r.superseded and r.state is L.RequestState.INFLIGHT
                   for r in h.loader.requests())   # answered: it is no longer in flight
    settle_repair(h)
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_close_hints_every_read_still_outstanding_once() -> None:
    h = make_hinted(4, 100)
    h.loader.set_window(0, 8)
    outstanding = [r.read_id for r in h.pending]
    assert len(outstanding) == 1
    h.loader.invalidate()                   # supersedes it (one hint) and starts a chain
    chain = [r.read_id for r in h.pending if r.kind is Kind.CHAIN]
    assert len(chain) == 1 and h.hints == outstanding
    h.loader.close()
    # At close: the chain step gets its hint; the superseded read had its one already.
    assert sorted(h.hints[1:]) == sorted(chain)
    assert sorted(h.hints) == sorted(outstanding + chain)
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_a_host_without_on_cancel_gets_the_same_classification_and_releases() -> None:
    # A host that ignores hints: same classification, same releases.
    released: List[object] = []
    reads: List[Read] = []
    with L.Loader(reads.append, released.append,
                  config=L.Config(page_size=4, prefetch_distance=0)) as ld:
        ld.set_window(0, 4)
        r = reads.pop()
        assert ld.settle(r, ("a",) * 4, next_cursor=b"\x00" * 7 + b"\x04") is Answer.CURRENT
        ld.set_window(0, 8)
        late = reads.pop()
        ld.invalidate()
        assert ld.settle(late, ("b",) * 4, next_cursor=b"\x00" * 7 + b"\x08") is Answer.STALE
        assert ld.stats().cancels == 1      # counted even with no callback to run
    # Both acquisitions came back exactly once, the stale one included.
    assert sorted(released) == [("a",) * 4, ("b",) * 4]


def test_abandoning_a_hinted_read_costs_nothing_and_its_late_answer_is_released() -> None:
    h = make_hinted(4, 100)
    read = supersede_one(h)
    settle_repair(h)
    assert h.loader.abandon(read) is Answer.STALE
    s = h.loader.state
    assert s.failure is L.Failure.NONE and s.debt is L.Debt.NONE and s.quiescent
    acq = h.make_acq((0, 1, 2, 3))
    h.ledger.accepted[acq.n] = acq
    assert h.loader.settle(read, acq, count=4, next_cursor=(8).to_bytes(8, "big")) \
        is Answer.STALE
    assert h.ledger.released.get(acq.n) == 1        # released before settle returned
    c = h.loader.stats()
    assert (c.abandoned, c.late_answers) == (1, 1)
    with pytest.raises(L.LoaderError):
        h.loader.abandon(read)                      # answered already
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0


def test_abandoning_a_read_still_needed_is_a_failure() -> None:
    h = make_hinted(4, 100)
    h.loader.set_window(0, 8)
    read = h.take()
    assert h.loader.abandon(read) is Answer.CURRENT
    assert h.loader.state.failure is L.Failure.OWN
    assert h.loader.next_deadline() is not None
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_superseded_read_never_answered_times_out_on_tick() -> None:
    h = HintedHost(4, 100, read_timeout_ms=500)
    h.loader.set_window(0, 4)
    h.drain()
    supersede_one(h)                                # dropped: never answered
    settle_repair(h)
    h.loader.set_window(0, 16)
    assert not h.pending, "the unanswered read blocks new finite reads"
    assert h.loader.next_deadline() == 500
    h.loader.tick(499)
    assert not h.pending
    h.loader.tick(500)
    assert h.pending and h.pending[0].kind is Kind.FINITE
    h.drain()
    assert h.loader.state.covered_end >= 16 and h.loader.stats().timed_out == 1
    h.loader.close()
    assert h.ledger.released_exactly_once()
