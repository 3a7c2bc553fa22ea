"""Callbacks: exceptions re-raised from the call that triggered them with the state consistent,
nested calls, synchronous hosts, and freeing a loader from inside its own callback."""

from __future__ import annotations

import gc
import sys
import threading
from typing import Any, Callable, List

import pytest

import libloader as L
from libloader import Answer, Kind, Read
from hosts import CountingHost

Make = Callable[..., CountingHost]


class Boom(Exception):
    pass


def test_an_exception_in_on_issue_is_raised_by_the_call(make_host: Make) -> None:
    h = make_host(4, 40)

    def explode(host: CountingHost, read: Read) -> None:
        raise Boom(f"cannot start read {read.read_id}")

    h.on_issue_hook = explode
    with pytest.raises(Boom, match="cannot start read 1") as e:
        h.loader.set_window(0, 8)
    ctx = L.callback_context(e.value)
    assert ctx is not None and ctx.call == "loader_set_window" and ctx.result is L.Result.OK
    assert ctx.callback.startswith("on_issue(Read(read_id=1")
    notes = getattr(e.value, "__notes__", [])
    if sys.version_info >= (3, 11):
        assert any("on_issue(Read(read_id=1" in n and "loader_set_window" in n for n in notes)
    # The call completed; the read whose on_issue raised was let go of, not left
    # outstanding: an own failure, which the backoff retry recovers. The state is consistent.
    s = h.loader.state
    assert s.outstanding_reads == 0 and s.window_len == 8 and s.failure is L.Failure.OWN
    assert h.loader.stats().failed_own == 1
    assert not L.violations(s, h.loader.requests())
    h.on_issue_hook = None
    # The host had queued the read before it raised; its answer now is a late one.
    released = sum(h.ledger.released.values())
    assert h.answer(h.take()) is Answer.STALE
    assert sum(h.ledger.released.values()) == released + 1
    deadline = h.loader.next_deadline()
    assert deadline is not None
    h.loader.tick(deadline)
    h.drain()
    s = h.loader.state
    assert s.covered_end >= 8 and s.quiescent
    h.loader.close()
    assert h.ledger.released_exactly_once()


def drive_by_deadline(h: CountingHost, rounds: int = 10000) -> bool:
    """Answers every pending read; with none left and the loader not quiescent, ticks at its
    backoff deadline, or retries when the automatic retries are spent (the loop at
    ``loader_next_deadline``). False when stuck: no deadline and no failure to retry (a read
    outstanding that nobody will answer)."""
    for _ in range(rounds):
        if h.pending:
            h.answer(h.take())
            continue
        s = h.loader.state
        if s.quiescent:
            return True
        deadline = h.loader.next_deadline()
        if deadline is not None:
            h.loader.tick(deadline)
        elif s.failure is not L.Failure.OWN or not h.loader.retry():
            return False
    return False


def test_a_traversal_whose_on_issue_raises_now_and_then_completes(make_host: Make) -> None:
    """Every 7th on_issue raises before it queues its read: each such read is let go of, and
    a host that drives only the deadline loop moves through 400 items without a read stuck
    outstanding."""
    h = make_host(4, 400)
    h.loader.tick(0)
    raised = caught = 0

    def sometimes(host: CountingHost, read: Read) -> None:
        nonlocal raised
        if host.issues % 7 == 0:
            host.pending.remove(read)
            raised += 1
            raise Boom(f"the queue is full for read {read.read_id}")

    h.on_issue_hook = sometimes
    for start in range(0, 400, 20):
        try:
            h.loader.set_window(start, 20)
        except Boom:
            caught += 1
        while True:
            try:
                quiet = drive_by_deadline(h)
                break
            except Boom:
                caught += 1
        assert quiet, f"stuck at {start}: {h.loader.state}"
        s = h.loader.state
        assert s.covered_start <= start and s.covered_end >= start + 20
    assert raised > 5 and caught == raised
    assert h.loader.stats().failed_own == raised
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_an_exception_in_on_release_does_not_stop_the_other_releases(make_host: Make) -> None:
    h = make_host(2, 40)
    h.loader.set_window(0, 6)
    h.drain()
    held = h.ledger.held()
    assert held == 3
    seen: List[Any] = []

    def explode(host: CountingHost, acq: Any) -> None:
        seen.append(acq)
        raise Boom(f"release {acq.n}")

    h.on_release_hook = explode
    with pytest.raises(Boom) as e:
        h.loader.close()
    assert str(e.value) == f"release {seen[0].n}"
    ctx = L.callback_context(e.value)
    assert ctx is not None and len(ctx.others) == 2 and ctx.call == "loader_free"
    if sys.version_info >= (3, 11):
        assert sum("also raised Boom" in n for n in e.value.__notes__) == 2
    assert len(seen) == 3 and h.ledger.released_exactly_once() and h.ledger.held() == 0
    assert h.loader.closed
    h.loader.close()                            # idempotent, even after a raising close


def test_exceptions_of_nested_calls_surface_from_the_outermost_call(make_host: Make) -> None:
    """A synchronous host settles inside on_issue; the nested settle's effects (the next
    issue, releases) run after the callback returns, and what they raise comes out of the
    outermost call, not out of the nested settle."""
    h = make_host(1, 10)
    nested_results: List[Answer] = []

    def settle_now(host: CountingHost, read: Read) -> None:
        host.pending.remove(read)
        nested_results.append(host.answer(read))  # returns normally
        if read.read_id == 3:
            raise Boom("third")

    h.on_issue_hook = settle_now
    with pytest.raises(Boom, match="third"):
        h.loader.set_window(0, 5)
    # Every read after the third one still ran: the loader filled the window.
    assert nested_results == [Answer.CURRENT] * 5
    s = h.loader.state
    assert s.covered_end == 5 and s.outstanding_reads == 0
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_loader_error_in_a_nested_call_can_be_handled_or_propagate(make_host: Make) -> None:
    h = make_host(4, 40)
    caught: List[L.LoaderError] = []

    def bad_answer(host: CountingHost, read: Read) -> None:
        try:
            host.loader.settle(read, (), count=read.limit + 1, next_cursor=b"x")
        except L.CountOverLimitError as e:
            caught.append(e)
        host.loader.fail(999999)                # unhandled: propagates

    h.on_issue_hook = bad_answer
    with pytest.raises(L.UnknownReadError) as e:
        h.loader.set_window(0, 4)
    # Raised by the nested fail, re-raised by set_window, which itself completed.
    ctx = L.callback_context(e.value)
    assert e.value.function == "loader_fail"
    assert ctx is not None and ctx.call == "loader_set_window" and ctx.result is L.Result.OK
    assert len(caught) == 1 and caught[0].code is L.Result.COUNT_OVER_LIMIT
    # The error escaped on_issue: its read was let go of, as for any exception there.
    assert h.loader.state.outstanding_reads == 0


def test_exceptions_in_on_change_and_on_cancel_are_raised_too() -> None:
    def explode(*args: Any) -> None:
        raise Boom("change")

    reads: List[Read] = []
    ld = L.Loader(reads.append, lambda a: None, on_change=explode)
    with pytest.raises(Boom):
        ld.set_window(0, 4)
    ld.close()
    ld = L.Loader(reads.append, lambda a: None, on_cancel=lambda rid: explode())
    ld.set_window(0, 4)
    with pytest.raises(Boom):
        ld.close()                              # the outstanding read is cancelled


def test_keyboard_interrupt_in_a_callback_propagates(make_host: Make) -> None:
    h = make_host(4, 40)

    def interrupt(host: CountingHost, read: Read) -> None:
        raise KeyboardInterrupt

    h.on_issue_hook = interrupt
    with pytest.raises(KeyboardInterrupt):
        h.loader.set_window(0, 4)
    # The read was let go of, as for any exception out of on_issue.
    s = h.loader.state
    assert s.outstanding_reads == 0 and s.failure is L.Failure.OWN


def test_a_synchronous_source_keeps_the_stack_flat(make_host: Make) -> None:
    h = make_host(1, 2000)

    def settle_now(host: CountingHost, read: Read) -> None:
        host.pending.remove(read)
        host.answer(read)

    h.on_issue_hook = settle_now
    h.loader.set_window(0, 2000)               # 2000 one-item reads, each inside an issue
    s = h.loader.state
    assert (s.covered_end, s.pages, s.outstanding_reads) == (2000, 2000, 0)
    h.loader.invalidate()                       # a repair, still synchronous
    s = h.loader.state
    assert not s.revalidating and s.coverage is L.Coverage.CHAIN and s.covered_end == 2000
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_an_issue_callback_may_fail_synchronously(make_host: Make) -> None:
    h = make_host(4, 40)

    def fail_now(host: CountingHost, read: Read) -> None:
        host.pending.remove(read)
        assert host.loader.fail(read, 3) is Answer.CURRENT

    h.on_issue_hook = fail_now
    h.loader.set_window(0, 8)
    s = h.loader.state
    assert s.failure is L.Failure.OWN and s.outstanding_reads == 0
    h.on_issue_hook = None
    assert h.loader.retry() is True
    h.drain()
    s = h.loader.state
    assert s.failure is L.Failure.NONE and s.covered_end >= 8
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_release_callback_may_call_back_in(make_host: Make) -> None:
    h = make_host(2, 40)

    def call_back_in(host: CountingHost, acq: Any) -> None:
        if not host.loader.closed:
            host.loader.state
            host.loader.set_window(0, 6)

    h.on_release_hook = call_back_in
    h.loader.set_window(0, 6)
    h.drain()
    h.loader.invalidate()                       # the repair's commit releases the old pages
    h.drain()
    s = h.loader.state
    assert not s.revalidating and s.released > 0
    h.loader.close()
    assert h.ledger.released_exactly_once()


@pytest.mark.parametrize("where", ["issue", "release", "change"])
def test_a_callback_may_close_its_own_loader(make_host: Make, where: str) -> None:
    h = make_host(2, 40)
    h.loader.set_window(0, 4)
    h.drain()
    closed_inside: List[bool] = []

    def close_self(host: CountingHost, *_: Any) -> None:
        setattr(host, f"on_{where}_hook", None)
        host.loader.close()
        # After close returns, every acquisition is back: the host may drop its state.
        closed_inside.append(host.ledger.released_exactly_once())

    setattr(h, f"on_{where}_hook", close_self)
    h.loader.set_window(0, 10)                  # issues and changes
    if where == "release":
        h.loader.invalidate()                   # a release: a stale page, or a repair commit
        try:
            h.drain()
        except L.StaleHandleError:              # the answers after the close are refused
            pass
    assert closed_inside == [True]
    with pytest.raises(L.StaleHandleError):
        h.loader.invalidate()
    h.loader.close()
    for read in list(h.pending):               # answers to its reads are refused cleanly
        with pytest.raises(L.StaleHandleError):
            h.answer(read)
    assert h.ledger.released_exactly_once()


def test_garbage_collection_reports_its_callback_errors_as_unraisable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: List[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    reads: List[Read] = []

    def explode(acq: Any) -> None:
        raise Boom("in __del__")

    ld = L.Loader(reads.append, explode)
    ld.set_window(0, 3)
    ld.settle(reads.pop(), (1, 2, 3), next_cursor=b"c")
    with pytest.warns(ResourceWarning):
        del ld
        gc.collect()
    assert [str(e) for e in seen] == ["in __del__"]
    # Nothing was left behind for the next call on this thread to raise.
    with L.Loader(reads.append, lambda a: None) as other:
        other.set_window(0, 1)


def test_a_callback_error_stays_on_its_own_thread(make_host: Make) -> None:
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    read = h.take()
    worker_error: List[BaseException] = []

    def explode(host: CountingHost, acq: Any) -> None:
        raise Boom("worker")

    def worker() -> None:
        try:
            h.loader.invalidate()               # starts a repair; its issue is the worker's
            chain = h.take(h.find(Kind.CHAIN) or 0)
            h.on_release_hook = explode
            h.answer(chain)                     # the commit releases on this thread
        except Boom as e:
            worker_error.append(e)

    h.answer(read)
    t = threading.Thread(target=worker)
    t.start()
    t.join(10)
    h.on_release_hook = None
    assert [str(e) for e in worker_error] == ["worker"]
    h.loader.set_window(0, 8)                   # the main thread has nothing to raise
    h.drain()
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_settle_whose_callback_raised_was_still_accepted(make_host: Make) -> None:
    """The exception's context tells a host that ownership passed, unlike a refusal."""
    h = make_host(4, 40)
    h.loader.set_window(0, 4)
    first = h.take(h.find(Kind.FINITE) or 0)
    h.answer(first)                             # the first page joins the view
    h.loader.invalidate()                       # a repair: its commit releases that page
    chain = h.take(h.find(Kind.CHAIN) or 0)

    def explode(host: CountingHost, acq: Any) -> None:
        raise Boom("release")

    h.on_release_hook = explode
    acq = h.make_acq(tuple(range(4)), chain.cursor)
    with pytest.raises(Boom) as e:
        h.loader.settle(chain, acq, next_cursor=(4).to_bytes(8, "big"))
    ctx = L.callback_context(e.value)
    assert ctx is not None and ctx.call == "loader_settle" and ctx.result is L.Result.OK
    assert h.loader.view().pages[0].acquisition is acq      # accepted: it is in the view
    with pytest.raises(L.UnknownReadError) as refused:
        h.loader.settle(999, acq, count=0)
    assert L.callback_context(refused.value) is None         # a refusal has no context
    h.on_release_hook = None
