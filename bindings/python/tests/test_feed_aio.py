"""The asyncio feed (:class:`libloader.aio.Feed`): loads run as tasks, the backoff timer is
``loop.call_at``, a read is answered even when its task is cancelled before it started, and a
load waiting in ``asyncio.to_thread`` has its page released however it was superseded."""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
from typing import Any, Callable, Coroutine, Dict, List, Optional

import pytest

from libloader import Config, Direction, LoadResult
from libloader.aio import Feed, FeedStalledError
from test_feed import Source, config


def run(coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 30))


class AsyncSource(Source):
    """The same source, loaded by coroutines (``aload``), with optional latency and parked
    loads."""

    async def aload(self, cursor: bytes, limit: int, direction: Direction = Direction.FORWARD,
                    until: Optional[bytes] = None) -> LoadResult[str]:
        return await super().aload(cursor, limit, direction, until)


def make(src: AsyncSource, cfg: Config = config()) -> "Feed[str]":
    return Feed(src.aload, config=cfg, on_release=src.on_release)


async def until(pred: Callable[[], bool], timeout: float = 5) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.002)


def test_the_happy_path_with_change_notifications() -> None:
    src = AsyncSource(120)

    async def main() -> None:
        async with make(src) as feed:
            seen: List[List[str]] = []

            async def watch() -> None:
                async for snap in feed.changes():
                    seen.append(snap.items)

            watcher = asyncio.ensure_future(watch())
            feed.set_window(0, 50)
            assert await feed.settled(5)
            assert feed.items() == src.rows[:50]
            await until(lambda: bool(seen) and seen[-1] == src.rows[:50])
        await asyncio.wait_for(watcher, 5)     # the iteration ends when the feed closes
        with pytest.raises(RuntimeError):
            feed.set_window(0, 10)
        await feed.close()

    run(main)
    assert src.calls == list(range(0, 50, 10))
    assert src.released_exactly_once() and len(src.made) == 5


def test_loads_that_raise_are_retried_by_the_backoff_timer() -> None:
    src = AsyncSource(60)
    src.fail = lambda start, attempt: attempt <= 2

    async def main() -> None:
        async with make(src, config(max_auto_retries=50)) as feed:
            feed.set_window(0, 40)
            assert await feed.settled(10)
            assert feed.items() == src.rows[:40]
            stats = feed.stats()
            assert stats.failed_own >= 2 and stats.retries_auto >= 2
            assert isinstance(feed.last_error, OSError)
            assert not feed.errors

    run(main)
    assert src.released_exactly_once()


REQUEST: "contextvars.ContextVar[str]" = contextvars.ContextVar("request")


def test_loads_and_callbacks_the_feed_starts_itself_run_in_its_makers_context() -> None:
    """A retry is started by the engine's clock, on a thread with none of the application's
    context variables: its load, and ``on_release``, still see the context the feed was made
    in (an application's context variable, as Textual's active app is: a load that set a
    timer there raised LookupError, and the view never refreshed)."""
    src = AsyncSource(60)
    src.fail = lambda start, attempt: attempt <= 2
    seen: List[Optional[str]] = []
    released: List[Optional[str]] = []
    inner = src.aload

    async def load(cursor: bytes, limit: int, direction: Direction = Direction.FORWARD,
                   until: Optional[bytes] = None) -> LoadResult[str]:
        seen.append(REQUEST.get(None))
        return await inner(cursor, limit, direction, until)

    def on_release(result: LoadResult[str]) -> None:
        released.append(REQUEST.get(None))
        src.on_release(result)

    async def main() -> None:
        REQUEST.set("the maker's")
        async with Feed(load, config=config(max_auto_retries=50),
                        on_release=on_release) as feed:
            feed.set_window(0, 40)
            assert await feed.settled(10)
            assert feed.stats().retries_auto >= 2
            feed.set_window(20, 40)
            assert await feed.settled(10)

    run(main)
    assert len(seen) > 4 and released
    assert set(seen) == {"the maker's"} and set(released) == {"the maker's"}
    assert src.released_exactly_once()


def test_a_load_cancelled_before_it_started_still_has_its_read_answered() -> None:
    """The trap: a task cancelled before its next step runs nothing more of its body, so an
    answer given from inside it would never be given. The read is answered anyway and the
    feed settles at once, not after a stall."""
    src = AsyncSource(100)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with make(src) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            feed.set_window(0, 20)                # issues the read at 10: its task is new
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()                     # ... and cancelled before it ran
            t0 = loop.time()
            assert await feed.settled(2)
            assert loop.time() - t0 < 1
            assert feed.items() == src.current(20)
            stats = feed.stats()
            # The hint let the read go (the engine abandons it: no answer to count).
            assert stats.cancels == 1
            assert stats.failed_stale == 0 and stats.issued_full == 0
        # The load at 10 started at once (a load runs until it first waits inside the call
        # that issued it) and was cancelled there: it made no result. The repair's load at
        # 10 is the second.
        assert src.calls.count(10) == 2 and len(src.made) == 3

    run(main)
    assert src.released_exactly_once()


def test_a_task_someone_else_cancels_before_it_starts_fails_its_read_and_is_retried() -> None:
    src = AsyncSource(40)

    async def main() -> None:
        async with make(src) as feed:
            before = asyncio.all_tasks()
            feed.set_window(0, 20)
            loads = asyncio.all_tasks() - before
            assert len(loads) == 1
            for task in loads:
                task.cancel()                     # not the feed's doing: the read is wanted
            assert await feed.settled(5)
            assert feed.items() == src.rows[:20]
            assert feed.stats().failed_own == 1
            assert isinstance(feed.last_error, asyncio.CancelledError)

    run(main)
    assert src.released_exactly_once()


def test_a_running_superseded_load_is_cancelled_and_its_read_answered_at_once() -> None:
    src = AsyncSource(100)

    async def main() -> None:
        async with make(src) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            src.parked[10] = asyncio.Event()      # never set: only a cancel ends it
            feed.set_window(0, 20)
            await until(lambda: 10 in src.calls)
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()
            assert await feed.settled(2)
            assert feed.items() == src.current(20)
            await until(lambda: not feed._jobs)   # the parked task ended: cancelled

    run(main)
    assert src.released_exactly_once()


def test_a_load_that_ignores_its_cancellation_has_its_result_released() -> None:
    src = AsyncSource(100)
    held: List[int] = []

    async def main() -> None:
        gate = asyncio.Event()

        async def stubborn(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
            if src.index_of(cursor) == 10 and not held:
                held.append(10)
                while True:
                    try:
                        await gate.wait()
                        break
                    except asyncio.CancelledError:
                        continue                  # a load that swallows the cancellation
            return await src.aload(cursor, limit, direction)

        async with Feed(stubborn, config=config(), on_release=src.on_release) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            feed.set_window(0, 20)
            await until(lambda: bool(held))
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()
            assert await feed.settled(2)          # answered without the stubborn load
            made = len(src.made)
            gate.set()
            await until(lambda: len(src.made) == made + 1)
            assert feed.items() == src.current(20)

    run(main)
    assert src.released_exactly_once()


def test_out_of_order_completions_and_invalidations_end_in_the_current_source() -> None:
    src = AsyncSource(200)
    rng = random.Random(11)
    src.latency = lambda: rng.random() * 0.004
    src.fail = lambda start, attempt: rng.random() < 0.05

    async def main() -> None:
        async with make(src, config(prefetch_distance=20, max_auto_retries=100)) as feed:
            feed.set_window(0, 40)
            for i in range(60):
                with src.lock:
                    if rng.random() < 0.5:
                        src.insert(rng.randrange(len(src)), f"new {i}")
                    else:
                        src.delete(rng.randrange(len(src)))
                feed.invalidate()
                if i % 10 == 0:
                    feed.set_window(rng.randrange(0, 40), 40)
                await asyncio.sleep(rng.random() * 0.003)
            src.fail = lambda start, attempt: False
            try:
                settled = await feed.settled(10)
            except FeedStalledError:
                assert feed.needs_retry and feed.retry()
                settled = await feed.settled(10)
            assert settled
            s = feed.state
            assert src.matches(feed)
            assert s.covered_end >= s.window_start + s.window_len
            stats = feed.stats()
            assert stats.cancels + stats.answered_stale > 0 and not feed.errors

    run(main)
    assert src.released_exactly_once()


def test_close_cancels_loads_in_flight_and_releases_everything_once() -> None:
    src = AsyncSource(100)

    async def main() -> None:
        feed = make(src)
        feed.set_window(0, 10)
        assert await feed.settled(5)
        src.parked[10] = asyncio.Event()          # never set
        feed.set_window(0, 20)
        await until(lambda: 10 in src.calls)
        assert feed.state.outstanding_reads == 1
        await feed.close()
        assert not feed._jobs                     # every task ended
        await feed.close()                        # idempotent
        assert not feed.errors

    run(main)
    assert len(src.made) == 1 and src.released_exactly_once()


# ---- loads that wait in a thread (asyncio.to_thread): issue 34 ----

def threaded(src: AsyncSource, delay: float = 0.0) -> Callable[..., Coroutine[Any, Any, Any]]:
    """A load as users write one for a blocking source: ``src.load`` (which honours
    ``src.hold``) in ``asyncio.to_thread``, after ``delay`` seconds there."""
    def blocking(cursor: bytes, limit: int, direction: Direction,
                 until: Optional[bytes] = None) -> LoadResult[str]:
        if delay:
            time.sleep(delay)
        return src.load(cursor, limit, direction, until)

    async def load(cursor: bytes, limit: int, direction: Direction,
                   until: Optional[bytes] = None) -> LoadResult[str]:
        return await asyncio.to_thread(blocking, cursor, limit, direction, until)

    return load


def test_a_load_superseded_while_it_runs_in_a_thread_has_its_page_released() -> None:
    """A thread cannot be stopped: cancelling the task that waits for it dropped the page the
    thread went on to make (asyncio discards a result that arrives for a cancelled future).
    The task is left to finish, and the page it returns released."""
    src = AsyncSource(100)

    async def main() -> None:
        async with Feed(threaded(src), config=config(), on_release=src.on_release) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            gate = threading.Event()
            src.hold[10] = gate
            feed.set_window(0, 20)
            await until(lambda: 10 in src.calls)  # running in its thread, held there
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()                     # supersedes it while it runs
            assert await feed.settled(5)          # answered at once, without it
            assert feed.items() == src.current(20)
            made = len(src.made)
            gate.set()
            await until(lambda: len(src.made) == made + 1)
            await until(lambda: not feed._jobs)   # its task returned the page
            assert feed.stats().cancels == 1 and not feed.errors

    run(main)
    assert src.released_exactly_once()


def test_a_load_in_a_thread_still_running_at_close_has_its_page_released() -> None:
    src = AsyncSource(100)

    async def main() -> None:
        feed = Feed(threaded(src), config=config(), on_release=src.on_release)
        feed.set_window(0, 10)
        assert await feed.settled(5)
        gate = threading.Event()
        src.hold[10] = gate
        feed.set_window(0, 20)
        await until(lambda: 10 in src.calls)
        await feed.close(timeout=0.05)            # returns with the load still running
        assert len(src.made) == 1
        gate.set()                                # it returns after close: released then
        await until(lambda: len(src.made) == 2 and src.released_exactly_once())
        stats = feed.stats()
        assert stats.accepted == stats.released and not feed.errors

    run(main)
    assert src.released_exactly_once()


def test_following_fast_writes_with_loads_in_threads_releases_every_page_once() -> None:
    """The report: a log followed at about 3,000 lines/s, each new line reported as a ranged
    change (its writer's ``invalidate_range``), loads in ``asyncio.to_thread``: each change
    makes the read running at the end stale (superseded at once, or, a change after its
    cursor, when its answer reaches it), and the pages those threads made were lost."""
    src = AsyncSource(40)

    async def main() -> None:
        cfg = config(prefetch_distance=10)
        async with Feed(threaded(src, 0.0005), config=cfg, on_release=src.on_release,
                        compare=src.compare) as feed:
            feed.set_window(0, 20)
            feed.follow()
            assert await feed.settled(5)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            for i in range(300):
                src.insert(len(src), f"line {i}", feed)
                await asyncio.sleep(max(t0 + (i + 1) / 3000 - loop.time(), 0))
            assert await feed.settled(10)
            assert feed.following and src.matches(feed)
            assert feed.items()[-1] == "line 299"
            stats = feed.stats()
            assert stats.cancels + stats.answered_stale > 0 and not feed.errors

    run(main)
    assert src.released_exactly_once(), (len(src.made), sum(src.released.values()))


def test_a_load_left_to_its_thread_is_cancelled_at_its_next_wait() -> None:
    """A superseded load waiting in a thread is not cancelled there; once the thread is
    done, the next thing it waits for is cancelled, so a load that would wait forever
    after its thread still ends."""
    src = AsyncSource(100)
    gate = threading.Event()
    forever = []

    async def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        if src.index_of(cursor) == 10 and not forever:
            forever.append(asyncio.Event())
            await asyncio.to_thread(gate.wait, 10)
            await forever[0].wait()               # never set: only a cancel ends it
        return await src.aload(cursor, limit, direction)

    async def main() -> None:
        async with Feed(load, config=config(), on_release=src.on_release) as feed:
            feed.set_window(0, 10)
            assert await feed.settled(5)
            feed.set_window(0, 20)
            await until(lambda: bool(forever))
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()
            assert await feed.settled(5)
            assert len(feed._jobs) == 1           # still in its thread
            gate.set()
            await until(lambda: not feed._jobs)   # cancelled at its next wait
            assert feed.items() == src.current(20) and not feed.errors

    run(main)
    assert src.released_exactly_once()


def test_it_must_be_made_inside_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        Feed(AsyncSource(1).aload)


def test_a_backward_capable_async_load_scrolls_back_over_released_pages() -> None:
    async def main() -> None:
        src = AsyncSource(300)
        async with make(src, config(prefetch_distance=10, max_pages=5)) as feed:
            for pos in list(range(0, 200, 17)) + list(range(200, -1, -17)) + [0]:
                feed.set_window(pos, 10)
                assert await feed.settled(5)
                s = feed.state
                assert s.pages <= 5 and src.matches(feed)
                assert s.covered_start <= pos and s.covered_end >= pos + 10
            assert src.backward, "scrolling back read backward"
        assert src.released_exactly_once() and not feed.errors
    asyncio.run(main())
