"""A randomized host drives a keyed source with ties through the bindings. After every call,
top-level or nested inside a callback, it reads ``state`` and ``requests()`` and checks the
spec's invariants (TypeOK, ChainHeld, NoLeak, NoStrandedStaleFailure, NoLostInvalidation)
and the bookkeeping the ABI promises. At the end it answers everything, checks the quiet view
against the source, closes, and checks that every acquisition came back exactly once."""

from __future__ import annotations

import os
import random
from typing import Dict, Set

import pytest

import libloader as L
from libloader import Config, Failure, Read
from hosts import Acq, KeyedSource, Ledger, refused

SEEDS = int(os.environ.get("LIBLOADER_PY_SEEDS", "40"))
STEPS = int(os.environ.get("LIBLOADER_PY_STEPS", "250"))


class Driver:
    def __init__(self, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.source = KeyedSource(rng, n=rng.randrange(0, 80), key_range=rng.choice([2, 5, 20]))
        self.config = Config(
            page_size=rng.choice([1, 2, 3, 5, 8]),
            prefetch_distance=rng.choice([0, 0, 2, 7]),
            drop_margin=rng.choice([0, 0, 3, 10]),
            backoff_initial_ms=rng.choice([1, 10, 100]),
            backoff_max_ms=1000,
            max_auto_retries=rng.choice([0, 2, 5]),
            jitter_seed=seed,
        )
        self.sync = rng.random() < 0.3         # sometimes answer inside on_issue
        self.pending: Dict[int, Read] = {}
        self.cancelled: Set[int] = set()
        self.ledger = Ledger()
        self.next_acq = 1
        self.now = 0
        self.calls = 0
        self.depth = 0
        self.loader = L.Loader(self.on_issue, self.ledger.on_release,
                               on_cancel=self.cancelled.add, config=self.config)

    # ---- callbacks ----

    def on_issue(self, read: Read) -> None:
        assert read.read_id not in self.pending
        self.pending[read.read_id] = read
        if self.sync and self.rng.random() < 0.5:
            self.depth += 1
            try:
                self.answer(read.read_id, fail=self.rng.random() < 0.1)
            finally:
                self.depth -= 1

    # ---- host actions ----

    def check(self) -> None:
        self.calls += 1
        s = self.loader.state
        reqs = self.loader.requests()
        bad = L.violations(s, reqs)
        assert not bad, bad
        if self.depth:
            # Inside a callback the state is consistent, but effects of the nested call (its
            # issues and releases) wait until the running callback returns.
            return
        # The host's view of what is outstanding and held is the library's.
        assert s.outstanding_reads == len(self.pending)
        assert s.accepted - s.released == self.ledger.held()
        assert s.accepted == len(self.ledger.accepted)
        view = self.loader.view()
        assert len(view) == s.pages and view.revalidating == s.revalidating
        at = s.covered_start
        for p in view.pages:
            assert p.start == at and p.count > 0
            assert isinstance(p.acquisition, Acq) and len(p.acquisition) == p.count
            at += p.count
        assert at == s.covered_end

    def answer(self, read_id: int, fail: bool = False, stall: bool = False) -> None:
        read = self.pending.pop(read_id)
        if fail:
            self.loader.fail(read, 5)
            self.check()
            return
        items, nxt, end = self.source.read(read.cursor, read.limit, read.direction)
        if stall and items:
            nxt = read.cursor                    # a host bug: the cursor does not advance
        # The cursor just before the page's first item: where a backward read ended.
        before = nxt if read.direction is L.Direction.BACKWARD else read.cursor
        acq = Acq(self.next_acq, items, before)
        self.next_acq += 1
        self.ledger.offered[acq.n] = acq
        self.ledger.accepted[acq.n] = acq
        try:
            self.loader.settle(read, acq, next_cursor=nxt, end_of_source=end)
        except BaseException as e:
            if refused(e):
                del self.ledger.accepted[acq.n]
            raise
        self.check()

    def step(self) -> None:
        rng = self.rng
        op = rng.choices(
            ["answer", "fail", "stall", "invalidate", "mutate", "window", "retry", "tick",
             "fail_superseded"],
            weights=[40, 3, 1, 6, 5, 14, 2, 4, 3])[0]
        if op == "fail_superseded":
            # The seed's finding needs a superseded read to fail: aim for one.
            sup = {r.id for r in self.loader.requests() if r.superseded}
            reads = sorted(i for i, r in self.pending.items() if r.request_id in sup)
            if reads:
                self.answer(rng.choice(reads), fail=True)
        elif op in ("answer", "fail", "stall") and self.pending:
            self.answer(rng.choice(sorted(self.pending)), fail=op == "fail", stall=op == "stall")
        elif op == "invalidate":
            self.loader.invalidate()
        elif op == "mutate":
            for _ in range(rng.randrange(1, 4)):
                (self.source.insert if rng.random() < 0.6 else self.source.delete)()
            self.loader.invalidate()             # after every change, as the contract says
        elif op == "window":
            self.loader.set_window(rng.randrange(0, 50), rng.randrange(0, 25))
        elif op == "retry":
            self.loader.retry()
        elif op == "tick":
            self.now += rng.choice([1, 10, 100, 1000])
            self.loader.tick(self.now)
        self.check()

    def quiesce(self) -> None:
        """Answers everything successfully, retrying own failures, until the loader is
        quiet and covers its window."""
        for _ in range(10000):
            s = self.loader.state
            if self.pending:
                self.answer(min(self.pending))
            elif s.failure is Failure.OWN:
                assert self.loader.retry() or self.loader.next_deadline() is not None
                self.check()
            elif s.quiescent:
                return
            else:
                raise AssertionError(f"stuck: nothing outstanding, not quiet: {s}")
        raise AssertionError("did not quiesce")

    def check_view_is_the_source(self) -> None:
        s = self.loader.state
        assert s.cover_epoch == s.epoch and not s.revalidating
        view = self.loader.view()
        want_end = s.window_start + s.window_len + (self.config.prefetch_distance or 0)
        assert s.end_of_source or s.covered_end >= want_end
        if not view.pages:
            # Everything was dropped behind the window (or the source is empty); the base
            # cursor is not visible through the ABI, so only the start can be checked.
            if s.covered_start == 0:
                assert self.source.after(b"") == []
            return
        items = [k for p in view.pages for k in p.acquisition.items]
        # Keyset: the pages are exactly the source's rows after the first page's cursor.
        source = self.source.after(view.pages[0].acquisition.cursor)
        assert items == source[:len(items)]
        if s.end_of_source:
            assert items == source
        if view.pages[0].acquisition.cursor == b"":
            # The view reaches the source's start: positions are the source's own numbers.
            # (Anchored numbering may start at 0 elsewhere, so the converse does not hold.)
            assert s.covered_start == 0


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_host_keeps_every_invariant(seed: int) -> None:
    d = Driver(seed)
    d.loader.set_window(0, d.rng.randrange(1, 20))
    d.check()
    for _ in range(STEPS):
        d.step()
    d.quiesce()
    d.check_view_is_the_source()
    outstanding = set(d.pending)
    d.loader.close()
    assert outstanding <= d.cancelled
    assert d.ledger.released_exactly_once() and d.ledger.held() == 0
    assert d.calls > STEPS


def test_the_checker_would_notice_a_leak() -> None:
    # violations() is the oracle above; show it fires on states that break the spec.
    base = dict(epoch=1, debt=L.Debt.NONE, phase=L.Phase.IDLE, chain_epoch=1,
                failure=Failure.NONE, coverage=L.Coverage.CHAIN, settled_once=True,
                cover_epoch=1, inflight=0, settled=1, failed=0, next_request_id=3, pages=1,
                outstanding_reads=0, revalidating=False, end_of_source=False, covered_start=0,
                covered_end=4, window_start=0, window_len=4, accepted=2, released=1)
    s = L.Snapshot(**base)  # type: ignore[arg-type]
    old = L.RequestInfo(1, L.Kind.FINITE, 0, L.RequestState.SETTLED, False)
    chain = L.RequestInfo(2, L.Kind.CHAIN, 1, L.RequestState.SETTLED, False)
    assert L.violations(s, [chain]) == []
    assert any(v.startswith("ChainHeld") for v in L.violations(s, [old]))
    s2 = L.Snapshot(**{**base, "settled": 2})  # type: ignore[arg-type]
    assert any(v.startswith("NoLeak") for v in L.violations(s2, [old, chain]))
    s3 = L.Snapshot(**{**base, "epoch": 2})  # type: ignore[arg-type]
    assert any(v.startswith("NoLostInvalidation") for v in L.violations(s3, [chain]))
    s4 = L.Snapshot(**{**base, "failure": Failure.SUPERSEDED})  # type: ignore[arg-type]
    assert any(v.startswith("NoStrandedStaleFailure") for v in L.violations(s4, [chain]))
    assert any(v.startswith("counts") for v in L.violations(s, []))


