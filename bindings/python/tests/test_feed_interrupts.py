"""An interrupt inside a load (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``: a
``BaseException`` that is not an ``Exception``) is not a failed read: it ends the wait it
interrupted and reaches the caller, in every mode (worker threads, an executor,
``max_workers=0``, asyncio), and the feed is left closable, with every page released once and
no read left unanswered (issue 34: with ``max_workers=0`` Ctrl-C in a load was retried)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import textwrap
import threading
import time
from typing import Any, Callable, List

import pytest

from libloader import Direction, Feed, LoadResult, aio
from test_feed import Source, config
from test_feed_problems import feed_threads, held_in_a_release, run_child, wait_until

INTERRUPTS = [KeyboardInterrupt, SystemExit, GeneratorExit]


def interrupting(src: Source, at: int, exc: type, attempt: int = 1) -> Callable[..., Any]:
    """``src.load``, but the ``attempt``-th load at ``at`` raises ``exc`` (and an earlier one
    OSError)."""
    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        if direction is Direction.FORWARD and src.index_of(cursor) == at:
            with src.lock:
                n = src.calls.count(at) + 1
            if n < attempt:
                src.calls.append(at)
                raise OSError("a failure first")
            if n == attempt:
                src.calls.append(at)
                raise exc()
        return src.load(cursor, limit, direction)
    return load


@pytest.mark.parametrize("exc", INTERRUPTS)
@pytest.mark.parametrize("mode", ["workers", "executor"])
def test_an_interrupt_in_a_load_on_another_thread_is_raised_by_settled(mode: str,
                                                                       exc: type) -> None:
    src = Source(50)
    baseline = len(feed_threads())
    pool = concurrent.futures.ThreadPoolExecutor(2) if mode == "executor" else None
    try:
        with Feed(interrupting(src, 10, exc), config=config(), executor=pool,
                  on_release=src.on_release) as feed:
            feed.set_window(0, 30)
            with pytest.raises(exc):
                feed.settled(5)
            # Raised once; its read was failed, not left outstanding, and is retried.
            assert feed.settled(5) and feed.items() == src.rows[:30]
            assert feed.last_error is None and not feed.errors
            stats = feed.stats()
            assert stats.failed_own == 1 and stats.retries_auto == 1
    finally:
        if pool is not None:
            pool.shutdown()
    assert src.released_exactly_once()
    assert feed.stats().accepted == feed.stats().released
    assert wait_until(lambda: len(feed_threads()) == baseline)   # the workers ended


@pytest.mark.parametrize("exc", INTERRUPTS)
def test_an_interrupt_in_a_load_with_max_workers_0_ends_the_call_it_ran_in(exc: type) -> None:
    src = Source(60)
    feed = Feed(interrupting(src, 10, exc), config=config(), max_workers=0,
                on_release=src.on_release)
    with pytest.raises(exc):
        feed.set_window(0, 30)      # page 0 loads, then the load at 10 is interrupted
    assert src.calls == [0, 10]     # nothing more was loaded in that call
    assert feed.state.outstanding_reads == 0 and feed.problem is None
    # Called again, the feed carries on: the interrupted read failed, and is retried.
    assert feed.settled(5) and feed.items() == src.rows[:30]
    assert feed.last_error is None and not feed.errors
    feed.close()
    assert src.released_exactly_once()


@pytest.mark.parametrize("exc", INTERRUPTS)
def test_an_interrupt_in_a_retry_with_max_workers_0_ends_settled(exc: type) -> None:
    src = Source(60)
    with Feed(interrupting(src, 10, exc, attempt=2), config=config(max_auto_retries=50),
              max_workers=0, on_release=src.on_release) as feed:
        feed.set_window(0, 30)      # the load at 10 fails: retried inside settled()
        assert isinstance(feed.last_error, OSError)
        with pytest.raises(exc):
            feed.settled(5)         # ... where the retry is interrupted
        assert src.calls.count(10) == 2
        assert feed.settled(5) and feed.items() == src.rows[:30]
    assert src.released_exactly_once()


@pytest.mark.parametrize("exc", INTERRUPTS)
def test_aio_an_interrupt_in_a_load_ends_the_call_or_the_wait(exc: type) -> None:
    src = Source(60)
    raised: List[int] = []

    async def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        at = src.index_of(cursor)
        if at == 10 and 10 not in raised:
            raised.append(10)
            raise exc()              # before it first waits: in the call that started it
        await asyncio.sleep(0)
        if at == 20 and 20 not in raised:
            raised.append(20)
            raise exc()              # in its task: settled() raises it
        return src.load(cursor, limit, direction)

    async def main() -> None:
        async with aio.Feed(load, config=config(), on_release=src.on_release) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            with pytest.raises(exc):
                feed.set_window(0, 20)
            assert feed.state.outstanding_reads == 0
            assert await feed.settled(5) and feed.items() == src.rows[:20]
            if exc is GeneratorExit:     # asyncio raises the others out of the loop itself
                feed.set_window(0, 30)
                with pytest.raises(exc):
                    await feed.settled(5)
                assert await feed.settled(5) and feed.items() == src.rows[:30]
            assert feed.last_error is None and not feed.errors

    asyncio.run(asyncio.wait_for(main(), 30))
    assert src.released_exactly_once()


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_aio_an_interrupt_in_a_load_task_leaves_the_feed_closable(exc: type) -> None:
    """asyncio raises KeyboardInterrupt and SystemExit from a task out of the loop; the feed
    is closed afterwards on the same loop, and nothing leaks."""
    src = Source(60)
    feeds: List["aio.Feed[str]"] = []

    async def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        await asyncio.sleep(0)
        if src.index_of(cursor) == 10:
            raise exc()
        return src.load(cursor, limit, direction)

    async def start() -> None:
        feeds.append(aio.Feed(load, config=config(), on_release=src.on_release))
        feeds[0].set_window(0, 20)
        await feeds[0].settled(5)

    loop = asyncio.new_event_loop()
    try:
        main = loop.create_task(start())
        with pytest.raises(exc):
            loop.run_until_complete(main)
        main.cancel()
        with pytest.raises(asyncio.CancelledError):
            loop.run_until_complete(main)
        loop.run_until_complete(feeds[0].close())
        assert not feeds[0]._jobs and not feeds[0].errors
        stats = feeds[0].stats()
        assert stats.accepted == stats.released
    finally:
        loop.close()
    assert src.released_exactly_once()


def test_ctrl_c_while_close_waits_for_a_call_still_closes_the_feed() -> None:
    """close() waits for a call still inside the feed (an answer held in on_release here);
    Ctrl-C there left the gate shut and the loader open: no page released, and a later
    close() waited for a close that never came."""
    feed, src, go = held_in_a_release()
    main = threading.main_thread().ident
    assert main == threading.get_ident() and main is not None
    ctrl_c = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT))
    ctrl_c.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        feed.close()                # waits for that answer: Ctrl-C ends the wait
    assert time.monotonic() - t0 < 5
    ctrl_c.join()
    go.set()
    t0 = time.monotonic()
    feed.close(timeout=5)           # closed already: returns at once
    assert time.monotonic() - t0 < 1
    assert wait_until(src.released_exactly_once)
    stats = feed.stats()
    assert stats.accepted == stats.released


def test_ctrl_c_in_a_load_with_max_workers_0_ends_the_run_with_one_press() -> None:
    child = run_child(textwrap.dedent("""
        import time
        import libloader as L

        def load(cursor, limit, direction):
            print("loading", flush=True)
            time.sleep(30)              # Ctrl-C here
            return L.LoadResult([], cursor, True)

        with L.Feed(load, config=L.Config(page_size=10), max_workers=0) as feed:
            feed.set_window(0, 10)
            feed.settled()
        print("not interrupted", flush=True)
    """))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "loading"
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)   # one press
    try:
        out, err = child.communicate(timeout=10)
    except Exception:
        child.kill()
        child.communicate()
        pytest.fail("one Ctrl-C did not end the run: the load was retried")
    assert "KeyboardInterrupt" in err and child.returncode != 0, (out, err)
    assert "not interrupted" not in out and "loading" not in out, out
