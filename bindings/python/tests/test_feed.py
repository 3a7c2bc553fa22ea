"""The thread feed (:class:`libloader.Feed`): loads run on an executor, failures are retried
by the backoff timer, superseded loads are cancelled while their reads are still answered,
and every result a load returned is released exactly once."""

from __future__ import annotations

import concurrent.futures
import random
import threading
import time
from collections import Counter
from typing import Callable, Dict, List

import pytest

import libloader
from libloader import Config, Direction, Feed, LoadResult
from libloader.testing import FakeSource


def offset(cursor: bytes) -> int:
    return int.from_bytes(cursor, "big")


def cursor_at(n: int) -> bytes:
    return n.to_bytes(4, "big")


class Source(FakeSource[str]):
    """The public :class:`~libloader.testing.FakeSource` with rows named ``row i``: a keyset
    source that records every load and every result it made, and counts releases by
    identity."""

    def __init__(self, n: int) -> None:
        super().__init__(n, item=lambda i: f"row {i}")


def config(**kw: object) -> Config:
    base: Dict[str, object] = dict(page_size=10, prefetch_distance=0, backoff_initial_ms=5,
                                   backoff_max_ms=50)
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def make(src: Source, **kw: object) -> "Feed[str]":
    cfg = kw.pop("config", config())
    return Feed(src.load, config=cfg, on_release=src.on_release, **kw)  # type: ignore[arg-type]


def test_the_happy_path_loads_the_window_and_releases_each_result_once() -> None:
    src = Source(120)
    changes: List[int] = []
    with make(src, on_change=lambda: changes.append(1)) as feed:
        feed.set_window(0, 50)
        assert feed.settled(5)
        assert feed.items() == src.rows[:50]
        snap = feed.snapshot()
        assert snap.settled and not snap.revalidating and snap.reads_in_flight == 0
        assert snap.items == src.rows[:50] and snap.start == 0
        pages = feed.pages()
        assert [p.cursor for p in pages] == [b""] + [src.cursor_at(i) for i in range(10, 50, 10)]
        feed.set_window(100, 20)                   # to the end of the source
        assert feed.settled(5)
        assert feed.items() == src.rows and feed.state.end_of_source
        assert changes
    assert src.calls == list(range(0, 120, 10))    # each page loaded once, in order
    assert src.released_exactly_once() and len(src.made) == 12
    assert not feed.errors
    with pytest.raises(RuntimeError):
        feed.set_window(0, 10)
    feed.close()                                   # idempotent


def test_loads_that_raise_are_retried_by_the_backoff_timer() -> None:
    src = Source(60)
    src.fail = lambda start, attempt: attempt <= 2   # every page fails twice first
    with make(src, config=config(max_auto_retries=50)) as feed:
        t0 = time.monotonic()
        feed.set_window(0, 40)
        assert feed.settled(10), feed.state
        assert feed.items() == src.rows[:40]
        stats = feed.stats()
        assert stats.failed_own >= 2 and stats.retries_auto >= 2
        assert isinstance(feed.last_error, OSError)
        # The retries waited for their timers (5 ms at first, doubling), not a busy loop.
        assert time.monotonic() - t0 >= 0.005 * stats.retries_auto / 2
        assert len(src.calls) < 200
    assert src.released_exactly_once() and not feed.errors


def test_spent_retries_wait_for_an_explicit_retry() -> None:
    src = Source(30)
    broken = True
    src.fail = lambda start, attempt: broken
    with make(src, config=config(max_auto_retries=2)) as feed:
        feed.set_window(0, 20)
        deadline = time.monotonic() + 5
        while not feed.needs_retry:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        # settled() says so at once, with what to do, instead of waiting out its timeout.
        t0 = time.monotonic()
        with pytest.raises(libloader.FeedStalledError) as e:
            feed.settled(30)
        assert time.monotonic() - t0 < 5
        problem = e.value.problem
        assert problem.reason == "retries_spent" and isinstance(problem.error, OSError)
        assert "max_auto_retries = 2" in str(e.value) and "retry()" in str(e.value)
        assert feed.problem == problem and feed.snapshot().problem == problem
        assert feed.stats().retries_auto == 2
        broken = False
        assert feed.retry()
        assert feed.settled(5)
        assert feed.items() == src.rows[:20]
    assert src.released_exactly_once() and not feed.errors


def test_a_result_that_is_not_a_page_fails_the_read_and_is_reported_not_retried() -> None:
    """Each wrong result is a bug in the load: settled() raises a TypeError naming the load
    at once, the read is failed (nothing outstanding) and not retried by the backoff; a
    retry() loads again."""
    src = Source(30)
    coroutine_load: List[object] = []

    async def never_awaited(cursor: bytes, limit: int, direction: Direction) -> object:
        return None

    def as_coroutine(cursor: bytes, limit: int, direction: Direction) -> object:
        coroutine_load.append(1)
        return never_awaited(cursor, limit, direction)

    too_many = LoadResult([f"x{i}" for i in range(11)], cursor_at(11))
    cases: List[Callable[[bytes, int, Direction], object]] = [
        lambda c, n, d: ["not", "a", "LoadResult"],
        lambda c, n, d: None,
        lambda c, n, d: too_many,
        as_coroutine,
        lambda c, n, d: LoadResult(["a"], "a str cursor"),  # type: ignore[arg-type]
    ]
    for case in cases:
        calls: List[int] = []

        def load(cursor: bytes, limit: int, direction: Direction) -> object:
            calls.append(src.index_of(cursor))
            if len(calls) == 1:
                return case(cursor, limit, direction)
            return src.load(cursor, limit, direction)

        with Feed(load, config=config(), on_release=src.on_release) as feed:  # type: ignore
            feed.set_window(0, 20)
            t0 = time.monotonic()
            with pytest.raises(TypeError) as e:
                feed.settled(30)
            assert time.monotonic() - t0 < 5
            assert "test_a_result_that_is_not_a_page" in str(e.value), e.value
            assert feed.problem is not None and feed.problem.reason == "bad_load_result"
            assert feed.last_error is e.value
            # Failed once, and not retried: the backoff (5 ms) passes many times meanwhile.
            time.sleep(0.2)
            s = feed.state
            assert s.outstanding_reads == 0 and calls == [0]
            assert feed.stats().failed_own == 1 and feed.stats().retries_auto == 0
            with pytest.raises(TypeError):
                feed.settled(1)
            # The user retries (the load is fixed): it loads again.
            assert feed.retry()
            assert feed.settled(5)
            assert feed.items() == src.rows[:20] and feed.problem is None
        assert not feed.errors
    # The oversized result never reached the loader: it came back at once, and only once.
    assert len(src.strays) == 1 and src.strays[0] is too_many
    assert coroutine_load == [1]


def test_a_superseded_load_finishing_last_is_released_and_the_view_is_current() -> None:
    """Out of order: the old load is held until the repair's loads have finished."""
    src = Source(100)
    with make(src) as feed:
        feed.set_window(0, 10)
        assert feed.settled(5)
        late = threading.Event()
        src.hold[10] = late
        feed.set_window(0, 20)
        src.wait_started(10)                       # the load at 10 is running, held
        with src.lock:
            src.insert(0, "new row")
        feed.invalidate()                          # supersedes it: answered now, empty
        assert feed.settled(5)                     # while the old load still runs
        assert feed.items() == src.current(20)
        stats = feed.stats()
        # The hint let the read go (the engine answers nothing for it): it cost nothing.
        assert stats.cancels == 1
        assert stats.failed_stale == 0 and stats.issued_full == 0
        with src.lock:
            before = set(src.made)
        late.set()                                 # the old load finishes last
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with src.lock:
                newest = set(src.made) - before
                if newest and all(src.released[k] == 1 for k in newest):
                    break
            time.sleep(0.005)
        assert len(newest) == 1                    # its result was released at once
        assert feed.items() == src.current(20)
    assert src.released_exactly_once() and not feed.errors


def test_a_superseded_load_that_has_not_started_never_runs() -> None:
    src = Source(100)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    blocker = threading.Event()
    try:
        with make(src, executor=pool) as feed:
            feed.set_window(0, 10)
            assert feed.settled(5)
            pool.submit(blocker.wait, 10)          # the only worker is busy
            feed.set_window(0, 20)                 # the load at 10 is queued
            with src.lock:
                src.insert(0, "new row")
            feed.invalidate()
            s = feed.state
            # The queued load's read was answered at once; only the repair's read is out.
            assert s.outstanding_reads == 1 and feed.stats().cancels == 1
            blocker.set()
            assert feed.settled(5)
            assert feed.items() == src.current(20)
            # Loads ran at 0 and 10 for the first view, then only the repair's.
            assert src.calls[:1] == [0] and src.calls.count(10) == 1
            assert feed.stats().failed_stale == 0
    finally:
        blocker.set()
        pool.shutdown()
    assert src.released_exactly_once() and not feed.errors


def test_invalidations_while_loads_run_end_in_the_current_source() -> None:
    src = Source(200)
    rng = random.Random(4)
    src.latency = lambda: rng.random() * 0.004
    src.fail = lambda start, attempt: rng.random() < 0.05
    with make(src, max_workers=6,
              config=config(prefetch_distance=20, max_auto_retries=100)) as feed:
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
            time.sleep(rng.random() * 0.003)
        src.fail = lambda start, attempt: False
        try:
            settled = feed.settled(10)
        except libloader.FeedStalledError:
            settled = feed.retry() and feed.settled(10)
        assert settled
        s = feed.state
        assert src.matches(feed)
        assert s.covered_end >= s.window_start + s.window_len
        assert feed.stats().cancels > 0
    assert src.released_exactly_once() and not feed.errors


def test_close_waits_for_running_loads_and_releases_everything_once() -> None:
    src = Source(100)
    feed = make(src)
    feed.set_window(0, 10)
    assert feed.settled(5)
    gate = threading.Event()
    src.hold[10] = gate
    feed.set_window(0, 20)
    src.wait_started(10)
    threading.Timer(0.1, gate.set).start()
    t0 = time.monotonic()
    feed.close()                                   # waits for the held load
    assert time.monotonic() - t0 >= 0.05
    assert len(src.made) == 2                      # the held load finished, and ...
    assert src.released_exactly_once()             # ... its result came back too
    assert not feed.errors


def test_close_with_a_timeout_releases_a_late_result_when_it_ends() -> None:
    src = Source(100)
    feed = make(src)
    gate = threading.Event()
    src.hold[0] = gate
    feed.set_window(0, 10)
    src.wait_started(0)
    feed.close(timeout=0.01)                       # the load is still running
    assert not src.made
    gate.set()
    deadline = time.monotonic() + 5
    while not src.released and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(src.made) == 1 and src.released_exactly_once()
    assert not feed.errors


def test_changes_yield_snapshots_until_the_feed_closes() -> None:
    src = Source(50)
    feed = make(src)
    seen: List[libloader.FeedSnapshot[str]] = []

    def consume() -> None:
        for snap in feed.changes():
            seen.append(snap)

    consumer = threading.Thread(target=consume)
    consumer.start()
    feed.set_window(0, 30)
    assert feed.settled(5)
    deadline = time.monotonic() + 5
    # The first snapshot (an empty window) is settled too: wait for the loaded one.
    while not (seen and seen[-1].items and seen[-1].settled) and time.monotonic() < deadline:
        time.sleep(0.005)
    last = seen[-1]
    assert last.items == src.rows[:30] and last.reads_in_flight == 0
    # Every snapshot is from one moment: a settled one shows the whole window.
    assert all(s.items == src.rows[:30] for s in seen if s.settled and s.items)
    feed.close()
    consumer.join(5)
    assert not consumer.is_alive()
    assert src.released_exactly_once()


def test_a_raising_on_release_is_recorded_not_lost() -> None:
    src = Source(30)

    def on_release(result: LoadResult[str]) -> None:
        src.on_release(result)
        raise RuntimeError("host bug")

    feed = Feed(src.load, config=config(), on_release=on_release)
    feed.set_window(0, 20)
    assert feed.settled(5)
    feed.close()
    assert src.released_exactly_once()
    assert len(feed.errors) == 2 and all(isinstance(e, RuntimeError) for e in feed.errors)


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        Feed(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Feed(Source(1).load, on_release=3)  # type: ignore[arg-type]


def test_a_backward_capable_load_scrolls_back_over_released_pages() -> None:
    src = Source(400)
    with make(src, config=config(prefetch_distance=10, max_pages=5)) as feed:
        for pos in list(range(0, 300, 13)) + list(range(300, -1, -13)) + [0]:
            feed.set_window(pos, 10)
            assert feed.settled(5)
            s = feed.state
            assert s.pages <= 5 and src.matches(feed)
            assert s.covered_start <= pos and s.covered_end >= pos + 10
        assert src.backward, "scrolling back read backward"
        assert feed.items()[0] == "row 0" and feed.pages()[0].cursor == b""
        src.insert(0, "new first")
        feed.invalidate()
        assert feed.settled(5) and src.matches(feed)
    assert src.released_exactly_once() and not feed.errors
