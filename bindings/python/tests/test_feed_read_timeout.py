"""A hung load is let go of at ``Config.read_timeout_ms`` in the threaded :class:`Feed`, as in
the C feed: its read fails (the backoff retries it, on another worker), ``last_error``,
``problem`` and ``explain()`` say so, and its page, when the load returns at last, is released
exactly once."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import List

import pytest

from libloader import Config, Direction, Feed, FeedStalledError, LoadResult, aio
from test_feed import Source, config, make


def wait_until(cond, timeout: float = 10) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_hung_load_is_let_go_at_the_read_timeout(workers: int) -> None:
    """Issue 34 (#5): the hung load held its read for ever: settled() timed out, problem was
    None and explain() said nothing of it."""
    src = Source(40)
    gate = threading.Event()
    src.hold[0] = gate
    with make(src, config=config(read_timeout_ms=100, max_auto_retries=50),
              max_workers=workers) as feed:
        feed.set_window(0, 20)
        # The one worker is stuck: another takes its place for the retry.
        assert feed.settled(5), feed.explain()
        assert feed.items() == src.rows[:20]
        error = feed.last_error
        assert isinstance(error, TimeoutError), error
        assert "read_timeout_ms" in str(error) and "100 ms" in str(error)
        said = feed.explain()
        assert said.splitlines()[0] == "quiescent"
        assert "ran past read_timeout_ms (100 ms)" in said and "still runs" in said, said
        gate.set()
        # The late page goes back (the view holds the other two).
        wait_until(lambda: len(src.made) == 3 and len(src.released) == 1)
        wait_until(lambda: "still runs" not in feed.explain())
    assert src.released_exactly_once() and not feed.errors


def test_loads_that_always_hang_spend_the_retries_and_say_why() -> None:
    src = Source(40)
    gate = threading.Event()

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        assert gate.wait(10)
        return src.load(cursor, limit, direction)

    with Feed(load, config=config(read_timeout_ms=50, max_auto_retries=1),
              on_release=src.on_release, max_workers=1) as feed:
        feed.set_window(0, 10)
        with pytest.raises(FeedStalledError) as e:
            feed.settled(10)
        problem = e.value.problem
        assert problem.reason == "retries_spent" and isinstance(problem.error, TimeoutError)
        assert "read_timeout_ms" in problem.message
        assert feed.problem == problem
        gate.set()
        wait_until(lambda: len(src.made) == 2 and len(src.released) == 2)
    assert src.released_exactly_once()


def test_the_asyncio_feed_lets_a_hung_load_go_too() -> None:
    """Issue 34 (#5), for ``aio.Feed``: a load awaiting for ever held its read for ever."""
    src = Source(40)

    async def main() -> None:
        gate = asyncio.Event()
        src.parked[0] = gate
        async with aio.Feed(src.aload, config=config(read_timeout_ms=100, max_auto_retries=50),
                            on_release=src.on_release) as feed:
            feed.set_window(0, 20)
            assert await feed.settled(5), feed.explain()
            assert feed.items() == src.rows[:20]
            assert isinstance(feed.last_error, TimeoutError)
            said = feed.explain()
            assert "ran past read_timeout_ms (100 ms)" in said and "still runs" in said, said
            gate.set()
            for _ in range(1000):
                if len(src.made) == 3 and len(src.released) == 1:
                    break
                await asyncio.sleep(0.005)
            assert len(src.made) == 3 and len(src.released) == 1
            assert "still runs" not in feed.explain()

    asyncio.run(asyncio.wait_for(main(), 30))
    assert src.released_exactly_once()


@pytest.mark.parametrize("where", ["threads", "executor"])
def test_a_load_let_go_of_and_still_running_at_close_has_its_page_released(where: str) -> None:
    """A load the read timeout let go of no longer counts as one the free leaves running;
    its page, returned after ``close(0)``, still reaches ``on_release`` (it was lost: the
    feed stopped hearing the engine's releases once the free reported no load left)."""
    src = Source(100)
    gate = threading.Event()
    first: List[int] = []

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        if not first:
            first.append(1)
            gate.wait(10)                  # hangs past the read timeout, then returns
        return src.load(cursor, limit, direction)

    pool = concurrent.futures.ThreadPoolExecutor(2) if where == "executor" else None
    try:
        feed = Feed(load, config=Config(page_size=10, prefetch_distance=0,
                                        read_timeout_ms=100),
                    max_workers=1, executor=pool, on_release=src.on_release)
        feed.set_window(0, 20)
        assert feed.settled(5), feed.explain()
        feed.close(0)
        gate.set()
        wait_until(src.released_exactly_once)
    finally:
        gate.set()
        if pool is not None:
            pool.shutdown()
