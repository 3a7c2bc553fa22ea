"""The spec's invariants, checked from outside through :attr:`Loader.state` and
:meth:`Loader.requests` (``spec/LoaderLedger.tla`` and ``docs/DESIGN.md``).

Released requests are forgotten by the library and not listed, so each invariant is read over
the live requests: a released request holds nothing, which is what the spec's ``released``
means. :func:`violations` also checks that the snapshot's counts agree with the list.
"""

from __future__ import annotations

from typing import List, Sequence

from ._enums import Coverage, Debt, Failure, Kind, Phase, RequestState
from ._types import RequestInfo, Snapshot


def violations(s: Snapshot, requests: Sequence[RequestInfo]) -> List[str]:
    """Every invariant that ``(s, requests)`` breaks, by name, with the values; empty if all
    hold. The two must come from one quiescent moment (no other thread calling in between)."""
    out: List[str] = []
    inflight = [r for r in requests if r.state is RequestState.INFLIGHT]
    settled = [r for r in requests if r.state is RequestState.SETTLED]
    idle_no_debt = s.phase is Phase.IDLE and s.debt is Debt.NONE

    # TypeOK (the C values are checked by the enum conversions; these are the spec's sets).
    if not (isinstance(s.debt, Debt) and isinstance(s.phase, Phase)
            and isinstance(s.failure, Failure) and isinstance(s.coverage, Coverage)):
        out.append(f"TypeOK: debt={s.debt!r} phase={s.phase!r}")
    for r in requests:
        if not isinstance(r.kind, Kind) or not isinstance(r.state, RequestState):
            out.append(f"TypeOK: request {r}")
        if r.epoch > s.epoch:
            out.append(f"TypeOK: request {r.id} has epoch {r.epoch} > epoch {s.epoch}")
        if r.id >= s.next_request_id:
            out.append(f"TypeOK: request {r.id} >= next_request_id {s.next_request_id}")
    ids = [r.id for r in requests]
    if ids != sorted(set(ids)):
        out.append(f"TypeOK: request ids not increasing and unique: {ids}")

    # ChainHeld: a finished repair's own acquisition is still held.
    if idle_no_debt and s.coverage is Coverage.CHAIN:
        if not any(r.kind is Kind.CHAIN and r.epoch == s.cover_epoch for r in settled):
            out.append(f"ChainHeld: coverage chain at cover_epoch {s.cover_epoch}, "
                       f"no settled chain request of that epoch in {list(requests)}")

    # NoLeak: when quiescent, nothing older than the coverage epoch is still held.
    if idle_no_debt and not inflight:
        old = [r for r in settled if r.epoch < s.cover_epoch]
        if old:
            out.append(f"NoLeak: settled requests older than cover_epoch {s.cover_epoch}: {old}")

    # NoStrandedStaleFailure: a superseded request's failure never strands.
    if s.failure is Failure.SUPERSEDED and s.phase is Phase.IDLE and not inflight:
        out.append("NoStrandedStaleFailure: failure superseded, phase idle, nothing in flight")

    # NoLostInvalidation: quiescent means the coverage is of the current epoch.
    if idle_no_debt and s.cover_epoch != s.epoch:
        out.append(f"NoLostInvalidation: idle, debt none, cover_epoch {s.cover_epoch} "
                   f"!= epoch {s.epoch}")

    # The snapshot's counts are the list's.
    counts = (len(inflight), len(settled),
              sum(1 for r in requests if r.state is RequestState.FAILED))
    if counts != (s.inflight, s.settled, s.failed):
        out.append(f"counts: requests list {counts} != snapshot "
                   f"{(s.inflight, s.settled, s.failed)}")
    if s.released > s.accepted:
        out.append(f"counts: released {s.released} > accepted {s.accepted}")
    return out
