"""``aio.Feed`` explored as the threaded feed is (``test_feed_stateful.py``, whose rules and
properties it inherits): its calls run on an event loop in a thread of the test, scheduled
from the rules (several threads at once in ``from_several_threads``), its loads are
coroutines. Its loads hold no thread, so ``no_thread_outlives_close`` holds trivially; the
others are checked as for the threaded feed."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Callable, Optional

import pytest

pytest.importorskip("hypothesis")

from hypothesis import settings, strategies as st  # noqa: E402
from hypothesis.stateful import initialize  # noqa: E402

from libloader import Config, Direction, LoadResult, aio  # noqa: E402
from test_feed_stateful import PAGE, PROFILE, READ_TIMEOUT_MS, FeedMachine  # noqa: E402


class AioFeedMachine(FeedMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.loop_thread = threading.Thread(target=self.loop.run_forever,
                                            name="test-aio-loop", daemon=True)
        self.loop_thread.start()

    def do(self, call: Callable[[Any], Any]) -> Any:
        async def run() -> Any:
            result = call(self.feed)
            if inspect.isawaitable(result):
                result = await result
            return result
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(60)

    async def _aload(self, cursor: bytes, limit: int, direction: Direction,
                     until: Optional[bytes] = None) -> LoadResult[str]:
        me = id(asyncio.current_task())
        with self.lock:
            self.in_load[me] += 1
            gate = self.hangs.pop() if self.hangs else None
        try:
            if gate is not None:
                for _ in range(2000):   # hung until released, 10 s at most
                    if gate.is_set():
                        break
                    await asyncio.sleep(0.005)
            return await self.src.aload(cursor, limit, direction, until)
        finally:
            with self.lock:
                self.in_load[me] -= 1
                if not self.in_load[me]:
                    del self.in_load[me]

    @initialize(close_timeout=st.sampled_from([0.0, 0.05, 0.3]))
    def start_aio(self, close_timeout: float) -> None:
        self.before = set(threading.enumerate())
        self.close_timeout = close_timeout
        self.max_hangs = 3
        config = Config(page_size=PAGE, prefetch_distance=0, backoff_initial_ms=1,
                        backoff_max_ms=8, max_auto_retries=3, read_timeout_ms=READ_TIMEOUT_MS)

        async def make() -> "aio.Feed[str]":
            return aio.Feed(self._aload, config=config, on_release=self._on_release,
                            compare=self.src.compare)
        self.feed = asyncio.run_coroutine_threadsafe(make(), self.loop).result(60)

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.loop_thread.join(10)
            self.loop.close()


# The threaded machine's initializer does not apply: this one makes its own feed.
AioFeedMachine.start = None  # type: ignore[assignment]
AioFeedMachine.TestCase.settings = settings.get_profile(PROFILE)
TestAioFeedStateful = AioFeedMachine.TestCase
