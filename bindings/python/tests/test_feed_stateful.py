"""The threaded :class:`~libloader.Feed` explored with Hypothesis's stateful testing: its
public API driven by generated call sequences, some from several threads at once, over a
:class:`~libloader.testing.FakeSource` with latency, failures, hung loads, appends, inserts,
deletes and window moves. The properties, each checked where it can fail:

* ``released_exactly_once``: every page a load returned is released once, none twice (after
  each step), and all of them by the end: cancelled, let-go (read timeout) and late ones,
  and those that return after ``close``;
* ``no_thread_outlives_close``: once ``close`` returns, no thread of the feed is alive but
  those still inside a load;
* ``close_honours_its_timeout``, with each load and ``on_release`` reading the feed's
  counters (a ``stats()`` there waited for the close that waited for it);
* ``callbacks_raise_nothing``: ``on_release`` (which calls ``stats()``) raised nothing;
* ``problem_only_when_it_holds``: "retries spent" is reported only while the loader shows a
  failure with no read outstanding and no retry armed;
* ``quiescent_once_healthy``: once the source stops failing and hanging, the feed settles
  (after a retry) on the source's items.

Runs in ``make py-test`` with the ``ci`` profile (about a minute); set
``LIBLOADER_HYPOTHESIS_PROFILE=long`` for a longer exploration."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Set

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import settings, strategies as st  # noqa: E402
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant,  # noqa: E402
                                 precondition, rule)

from libloader import Config, Direction, Failure, Feed, FeedStalledError, LoadResult  # noqa: E402
from libloader.testing import FakeSource  # noqa: E402

settings.register_profile("ci", max_examples=150, stateful_step_count=20, deadline=None,
                          suppress_health_check=list(hypothesis.HealthCheck))
settings.register_profile("long", max_examples=400, stateful_step_count=40, deadline=None,
                          suppress_health_check=list(hypothesis.HealthCheck))
settings.register_profile("noshrink", settings.get_profile("ci"),
                          phases=[hypothesis.Phase.generate])
"""The ci profile without shrinking: shows at once that a property can fail (a mutant)."""
PROFILE = os.environ.get("LIBLOADER_HYPOTHESIS_PROFILE", "ci")

PAGE = 10
READ_TIMEOUT_MS = 100
SLACK_S = 1.0
"""What a ``close(timeout)`` may take beyond its timeout, on a loaded 2-core machine."""


def wait_for(cond: Callable[[], bool], timeout: float = 15) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


class FeedMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.src: FakeSource[str] = FakeSource(60, item=lambda i: f"row {i}")
        self.fail_rate = 0.0
        self.src.fail = self._fails
        self.delay_s = 0.0
        self.src.latency = lambda: self.delay_s
        self.lock = threading.Lock()
        self.in_load: Counter[int] = Counter()
        """Threads inside a load now, by ident."""
        self.gates: List[threading.Event] = []
        """Every hang not yet released."""
        self.hangs: List[threading.Event] = []
        """The hangs no load has reached yet: the next loads take them, one each."""
        self.appended = 0
        self.feed: Optional[Feed[str]] = None
        self.before: Set[threading.Thread] = set()
        self.close_timeout = 0.0
        self.executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.max_hangs = 0

    def do(self, call: Callable[[Any], Any]) -> Any:
        """``call(feed)``, where the feed's calls belong (here: any thread), awaited if it
        returns an awaitable."""
        return call(self.feed)

    def _on_release(self, result: LoadResult[str]) -> None:
        """``on_release``: the page counted, then the feed's counters read from inside the
        callback, as a host logging its pages would (while the feed closes too, where the close
        may be waiting for this very callback)."""
        self.src.on_release(result)
        feed = self.feed
        if feed is not None:
            feed.stats()

    def _fails(self, start: int, attempt: int) -> bool:
        # Reproducible for a given rate: a hash of the load, not a random draw.
        return (hash((start, attempt)) % 100) < self.fail_rate * 100

    def _load(self, cursor: bytes, limit: int, direction: Direction,
              until: Optional[bytes] = None) -> LoadResult[str]:
        me = threading.get_ident()
        with self.lock:
            self.in_load[me] += 1
            gate = self.hangs.pop() if self.hangs else None
        try:
            if gate is not None:
                gate.wait(10)   # hung until released; a load that hung too long returns late
            feed = self.feed
            if feed is not None:
                feed.stats()    # from inside the load, while the feed may be closing
            return self.src.load(cursor, limit, direction, until)
        finally:
            with self.lock:
                self.in_load[me] -= 1
                if not self.in_load[me]:
                    del self.in_load[me]

    @initialize(where=st.sampled_from(["threads", "executor", "inline"]),
                workers=st.integers(1, 3), close_timeout=st.sampled_from([0.0, 0.05, 0.3]))
    def start(self, where: str, workers: int, close_timeout: float) -> None:
        """The feed's own threads (``workers`` of them), an executor of 3 threads, or the
        caller's thread (``max_workers=0``)."""
        self.before = set(threading.enumerate())
        self.close_timeout = close_timeout
        config = Config(page_size=PAGE, prefetch_distance=0, backoff_initial_ms=1,
                        backoff_max_ms=8, max_auto_retries=3, read_timeout_ms=READ_TIMEOUT_MS)
        if where == "executor":
            self.executor = concurrent.futures.ThreadPoolExecutor(3)
        # Hung loads hold their threads: the feed's own are replaced, an executor's are not
        # (one hang, then, beside the other two threads), and the caller's would hang it.
        self.max_hangs = {"threads": 3, "executor": 1, "inline": 0}[where]
        self.feed = Feed(self._load, config=config,
                         max_workers=0 if where == "inline" else workers,
                         executor=self.executor, on_release=self._on_release,
                         compare=self.src.compare)

    # ---- what the source does ----

    @rule(rate=st.sampled_from([0.0, 0.3, 1.0]))
    def set_failures(self, rate: float) -> None:
        self.fail_rate = rate

    @rule(ms=st.sampled_from([0, 1, 3]))
    def set_latency(self, ms: int) -> None:
        self.delay_s = ms / 1000

    @precondition(lambda self: len(self.gates) < self.max_hangs)
    @rule()
    def hang_a_load(self) -> None:
        """The next load hangs until released (10 s at most)."""
        gate = threading.Event()
        with self.lock:
            self.hangs.append(gate)
        self.gates.append(gate)

    @rule()
    def release_hangs(self) -> None:
        with self.lock:
            self.hangs.clear()
        for gate in self.gates:
            gate.set()
        self.gates.clear()

    @rule(n=st.integers(1, 5))
    def append(self, n: int) -> None:
        assert self.feed is not None
        for _ in range(n):
            self.appended += 1
            self.src.append(f"new {self.appended}")
            self.do(lambda f: f.appended())

    @precondition(lambda self: len(self.src) > 5)
    @rule(at=st.integers(0, 60))
    def delete(self, at: int) -> None:
        assert self.feed is not None
        index = at % len(self.src)
        after = self.src.cursor_at(index + 1)   # the cursor just after the item
        self.src.delete(index)
        self.do(lambda f: f.invalidate_range(after, after))

    @rule(at=st.integers(0, 60))
    def insert(self, at: int) -> None:
        assert self.feed is not None
        self.appended += 1
        after = self.src.insert(at, f"ins {self.appended}")
        self.do(lambda f: f.invalidate_range(after, after))

    # ---- what the user does ----

    @rule(start=st.integers(0, 80), length=st.integers(1, 40))
    def move(self, start: int, length: int) -> None:
        assert self.feed is not None
        self.do(lambda f: f.set_window(start, length))

    @rule(at=st.integers(0, 60))
    def jump(self, at: int) -> None:
        assert self.feed is not None
        at = min(at, len(self.src))
        cursor = self.src.cursor_at(at)
        self.do(lambda f: f.jump(cursor, at))

    @rule()
    def invalidate(self) -> None:
        assert self.feed is not None
        self.do(lambda f: f.invalidate())

    @rule(ops=st.lists(st.lists(st.sampled_from(
        ["move", "invalidate", "append", "items", "snapshot", "explain", "problem", "retry"]),
        min_size=1, max_size=4), min_size=2, max_size=3), start=st.integers(0, 60))
    def from_several_threads(self, ops: List[List[str]], start: int) -> None:
        """Each list of calls on its own thread, all at once."""
        feed = self.feed
        assert feed is not None
        errors: List[BaseException] = []

        def run(calls: List[str], k: int) -> None:
            try:
                for op in calls:
                    if op == "move":
                        self.do(lambda f: f.set_window((start + 7 * k) % 70, 15))
                    elif op == "append":
                        with self.lock:
                            self.appended += 1
                            item = f"new {self.appended}"
                        self.src.append(item)
                        self.do(lambda f: f.appended())
                    elif op == "problem":
                        self.do(lambda f: f.problem)
                    else:
                        self.do(lambda f: getattr(f, op)())
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(calls, k)) for k, calls in enumerate(ops)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, errors

    @rule()
    def heal_and_settle(self) -> None:
        """quiescent_once_healthy"""
        feed = self.feed
        assert feed is not None
        self.fail_rate = 0.0
        self.release_hangs()
        self.do(lambda f: f.retry())
        try:
            settled = self.do(lambda f: f.settled(20))
        except FeedStalledError as e:
            raise AssertionError(f"a healthy source left the feed stalled: {e}") from e
        assert settled, self.do(lambda f: f.explain())
        assert self.do(self.src.matches)

    @rule(ms=st.sampled_from([0, 20, 150]))
    def wait(self, ms: int) -> None:
        """Time passes: backoff retries fire, hung loads pass the read timeout."""
        time.sleep(ms / 1000)

    @rule()
    def settle_with_hangs_held(self) -> None:
        """quiescent_once_healthy, with the hung loads still hung: each is let go of at the
        read timeout and its read loaded again (the hang was for one load)."""
        feed = self.feed
        assert feed is not None
        self.fail_rate = 0.0
        for _ in range(5):
            self.do(lambda f: f.retry())
            try:
                assert self.do(lambda f: f.settled(20)), self.do(lambda f: f.explain())
                break
            except FeedStalledError as e:
                # Each let-go load is a failure: the hangs may spend the retries.
                assert e.problem.reason == "retries_spent", e.problem
                assert isinstance(e.problem.error, TimeoutError), e.problem
        else:
            raise AssertionError(f"not settled: {self.do(lambda f: f.explain())}")
        assert self.do(self.src.matches)

    # ---- properties after every step ----

    @invariant()
    def released_at_most_once(self) -> None:
        """released_exactly_once, as far as it can be seen while the feed runs."""
        with self.src.lock:
            assert not self.src.strays, self.src.strays
            twice = [n for n in self.src.released.values() if n > 1]
        assert not twice

    @invariant()
    def problem_only_when_it_holds(self) -> None:
        feed = self.feed
        if feed is None:
            return
        problem, s, deadline = self.do(
            lambda f: (f.problem, f.state, f.loader.next_deadline()))
        if problem is None:
            return
        assert problem.reason == "retries_spent", problem
        assert s.failure is Failure.OWN and s.outstanding_reads == 0, (problem, s)
        assert deadline is None, problem

    def teardown(self) -> None:
        feed = self.feed
        if feed is None:
            return
        # close_honours_its_timeout: on a thread of the test's, so a close that never returns
        # fails here rather than hanging the run.
        raised: List[BaseException] = []

        def close() -> None:
            try:
                self.do(lambda f: f.close(self.close_timeout))
            except BaseException as e:
                raised.append(e)

        t0 = time.monotonic()
        closer = threading.Thread(target=close, name="test-close", daemon=True)
        closer.start()
        closer.join(self.close_timeout + SLACK_S + 10)
        assert not closer.is_alive(), f"close({self.close_timeout}) did not return"
        if raised:
            raise raised[0]
        took = time.monotonic() - t0
        assert took <= self.close_timeout + SLACK_S, (took, self.close_timeout)
        # callbacks_raise_nothing (a stats() inside on_release included).
        assert not feed.errors, feed.errors

        # no_thread_outlives_close: a thread of the feed still alive is inside a load (a
        # thread leaving just after its load is given a moment).
        def only_loads_alive() -> bool:
            with self.lock:
                loading = set(self.in_load)
            alive = [t for t in threading.enumerate()
                     if t not in self.before and t.name.startswith("libloader-feed")]
            return all(t.ident in loading for t in alive)
        assert wait_for(only_loads_alive, 5), [t.name for t in threading.enumerate()]

        # released_exactly_once: the loads left running return, and their pages go back.
        self.release_hangs()
        assert wait_for(lambda: not self.in_load)
        assert wait_for(self.src.released_exactly_once), (
            len(self.src.made), len(self.src.released))
        if self.executor is not None:
            self.executor.shutdown(wait=True)


FeedMachine.TestCase.settings = settings.get_profile(PROFILE)
TestFeedStateful = FeedMachine.TestCase
