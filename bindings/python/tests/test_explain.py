"""``explain()``: why a loader, a feed and an asyncio feed wait, in sentences; and the feed's
stall report carries them."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest

import libloader
from libloader import Config, Direction, Feed, FeedStalledError, LoadResult, aio
from test_feed import Source, config, cursor_at


def test_a_loader_says_quiescent_then_the_read_it_waits_for(make_host) -> None:  # type: ignore[no-untyped-def]
    h = make_host(4, 20)
    assert h.loader.explain() == "quiescent"
    h.loader.tick(1000)
    h.loader.set_window(0, 8)
    read = h.take()
    h.loader.tick(3500)
    said = h.loader.explain()
    assert said.startswith(f"waiting for read {read.read_id} (a page, forward from the "
                           "source's start, at most 4 items, issued 2.5 s ago)"), said
    assert not h.loader.state.quiescent


def test_a_feed_that_spent_its_retries_says_what_to_call() -> None:
    src = Source(30)
    src.fail = lambda start, attempt: True
    with Feed(src.load, config=config(max_auto_retries=2), on_release=src.on_release) as feed:
        feed.set_window(0, 20)
        with pytest.raises(FeedStalledError) as e:
            feed.settled(10)
        said = feed.explain()
        # Issue 34 (#6): it named the C function (loader_retry), not the feed's method.
        assert "retry budget spent after 3 failures: call Feed.retry() or move the window" \
            in said, said
        assert "loader_" not in said
        assert "failed" in said and "retry()" in said
        # The stall report carries the loader's sentences.
        assert "retry budget spent after 3 failures" in e.value.problem.explanation
        assert "The loader says:" in str(e.value) and "retry budget spent" in str(e.value)


def stalling(src: Source, at: int):  # type: ignore[no-untyped-def]
    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        if src.index_of(cursor) == at and direction is Direction.FORWARD:
            return LoadResult(["x"], cursor, False)
        return src.load(cursor, limit, direction)
    return load


def test_a_stalled_cursor_is_named_in_the_stall_report() -> None:
    src = Source(100)
    with Feed(stalling(src, 10), config=config(max_auto_retries=50)) as feed:
        feed.set_window(0, 30)
        with pytest.raises(FeedStalledError) as e:
            feed.settled(10)
        said = e.value.problem.explanation
        assert "'s answer repeated its cursor with 1 items: the source returned no progress" \
            in said, said
        assert "repeated its cursor" in str(e.value)
        assert feed.explain().splitlines()[0] != "quiescent"


def test_a_settled_feed_says_quiescent() -> None:
    src = Source(30)
    with Feed(src.load, config=config(), on_release=src.on_release) as feed:
        feed.set_window(0, 20)
        assert feed.settled(5)
        assert feed.explain() == "quiescent"


def test_the_asyncio_feed_explains_too() -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[int]:
            await gate.wait()
            at = int.from_bytes(cursor, "big")
            items = list(range(at, min(at + limit, 20)))
            return LoadResult(items, cursor_at(at + len(items)), at + len(items) >= 20)

        async with aio.Feed(load, config=Config(page_size=10, prefetch_distance=0)) as feed:
            feed.set_window(0, 10)
            await asyncio.sleep(0)
            assert feed.explain().startswith("waiting for read 1 (a page, forward")
            gate.set()
            assert await feed.settled(5)
            assert feed.explain() == "quiescent"

    asyncio.run(asyncio.wait_for(main(), 30))
    assert libloader.Loader.explain.__doc__


def ms_in(text: str, pattern: str) -> float:
    """The duration ``pattern`` (with one group for a ``ago()`` duration) finds in ``text``,
    in ms."""
    m = re.search(pattern, text)
    assert m, text
    value = m.group(1)
    return float(value[:-3]) if value.endswith(" ms") else float(value[:-2]) * 1000


def test_the_feeds_explain_clock_moves_with_a_running_load() -> None:
    """Issue 34 (#6): a load running for seconds was "issued 0 ms ago" for ever: the loader's
    clock moved only when the feed ticked it for a failure."""
    src = Source(30)
    gate = threading.Event()
    src.hold[0] = gate
    with Feed(src.load, config=config(), on_release=src.on_release) as feed:
        feed.set_window(0, 10)
        src.wait_started(0)
        time.sleep(0.3)
        first = ms_in(feed.explain(), r"issued ([0-9.]+ m?s) ago")
        time.sleep(0.3)
        second = ms_in(feed.explain(), r"issued ([0-9.]+ m?s) ago")
        assert first >= 250 and second >= first + 250, (first, second)
        gate.set()
        assert feed.settled(5)
    assert src.released_exactly_once()


def test_the_feeds_explain_counts_down_to_the_retry() -> None:
    """Issue 34 (#6): a retry deadline stayed "96 ms from now" for ever."""
    src = Source(30)
    src.fail = lambda start, attempt: attempt == 1
    with Feed(src.load, config=config(backoff_initial_ms=3000, backoff_max_ms=3000),
              on_release=src.on_release) as feed:
        feed.set_window(0, 10)
        src.wait_started(0)
        deadline = time.monotonic() + 5
        while "from now" not in feed.explain():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        first = ms_in(feed.explain(), r"\(([0-9.]+ m?s) from now\)")
        time.sleep(0.4)
        second = ms_in(feed.explain(), r"\(([0-9.]+ m?s) from now\)")
        assert second <= first - 300, (first, second)


def test_a_loader_with_retries_off_names_its_python_method(make_host) -> None:  # type: ignore[no-untyped-def]
    """The library's sentence names ``loader_retry``; the Python loader's names its method."""
    h = make_host(4, 20, max_auto_retries=0)
    h.loader.set_window(0, 8)
    h.loader.fail(h.take())
    said = h.loader.explain()
    assert "automatic retries are off (max_auto_retries 0): call Loader.retry() or move the " \
        "window" in said, said
    assert "loader_" not in said


def test_every_feed_problem_names_the_feeds_own_retry() -> None:
    """Issue 34: a feed's problem said "call retry()"; it names the feed's method, as the
    loader's sentences above it do (``Feed.retry()``, ``aio.Feed.retry()``)."""
    src = Source(30)

    def bad(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        return [src.load(cursor, limit, direction)]  # type: ignore[return-value]

    with Feed(bad, config=config(max_auto_retries=0), max_workers=0) as feed:
        feed.set_window(0, 20)
        with pytest.raises(TypeError):
            feed.settled(5)
        said = feed.explain()
        assert "fix it, then call Feed.retry() or move the window" in said, said
        assert "loader_" not in said
    src.fail = lambda start, attempt: True
    with Feed(src.load, config=config(max_auto_retries=0), max_workers=0) as feed:
        feed.set_window(0, 20)
        with pytest.raises(FeedStalledError) as e:
            feed.settled(5)
        assert "fix the cause, then call Feed.retry() or move the window" in \
            e.value.problem.message
        said = feed.explain()
        assert "automatic retries are off (max_auto_retries 0): call Feed.retry()" in said, said
        assert "loader_" not in said

    async def main() -> None:
        async def aload(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
            raise OSError("the source is down")

        async with aio.Feed(aload, config=config(max_auto_retries=0)) as afeed:
            afeed.set_window(0, 20)
            with pytest.raises(FeedStalledError) as e:
                await afeed.settled(5)
            assert "then call aio.Feed.retry() or move the window" in e.value.problem.message
            said = afeed.explain()
            assert "automatic retries are off (max_auto_retries 0): call aio.Feed.retry()" \
                in said, said
            assert "loader_" not in said

    asyncio.run(asyncio.wait_for(main(), 30))
