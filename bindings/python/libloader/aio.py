"""The asyncio :class:`Feed`: loads run as tasks, the backoff timer is ``loop.call_at``.

The same feed as :class:`libloader.Feed` (see :mod:`libloader.feed`), for one event loop. The
trap it avoids: a task cancelled before it starts never runs its body, so an answer given
from inside the task (an ``except`` or ``finally``) is never given, and the loader waits for
that read until the next invalidation. Here no answer depends on the task's body: the cancel
hint answers its read itself, and every other outcome is answered from the task's
done-callback, which asyncio runs however the task ended.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, AsyncIterator, Callable, Optional

from .enums import Direction
from .feed import FeedPage, FeedSnapshot, LoadResult, T, _FeedCore
from .types import Config, Read

__all__ = ["Feed", "Direction", "FeedPage", "FeedSnapshot", "LoadResult"]


class Feed(_FeedCore[T]):
    """A loader that runs ``await load(cursor, limit, direction)`` (with ``until=`` if it
    takes it: see :mod:`libloader.feed`) as asyncio tasks.

    ``load`` is an ``async def`` (a plain function returning a :class:`LoadResult` works
    too, but blocks the loop); it returns at most ``limit`` items after ``cursor`` (before
    it, in source order, for :attr:`Direction.BACKWARD`: see :mod:`libloader.feed`), or
    raises: the read fails and the loader's backoff retries it with ``loop.call_at``. When
    the loader no longer needs a read, the feed answers it at once and cancels its task.
    ``on_release(result)`` gets every result a load returned, exactly once.

    Create it inside the event loop and call it from the loop's thread only (from another
    thread: ``loop.call_soon_threadsafe(feed.invalidate)``). ``async with Feed(load) as
    feed:`` closes it on exit.

    ``compare(a, b)`` orders two non-empty cursors as the source does (negative, 0,
    positive); with a load that accepts ``until=`` it enables :meth:`invalidate_range`.
    """

    def __init__(self, load: Callable[..., Any], *,
                 config: Optional[Config] = None,
                 on_release: Optional[Callable[[LoadResult[T]], Any]] = None,
                 compare: Optional[Callable[[bytes, bytes], int]] = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._t0 = self._loop.time()
        self._event = asyncio.Event()
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at: Optional[int] = None
        self._rearm_pending = False
        super().__init__(load, config, on_release, compare)

    async def __aenter__(self) -> "Feed[T]":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _run(self, read: Read) -> Any:
        result = self._call_load(read)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _start(self, read: Read) -> "asyncio.Task[Any]":
        task = self._loop.create_task(self._run(read))
        self._jobs.add(task)
        task.add_done_callback(functools.partial(self._job_done, read.read_id))
        return task

    def _now_ms(self) -> int:
        return int((self._loop.time() - self._t0) * 1000)

    def _signal(self, changed: bool, urgent: bool = False) -> None:
        if changed:
            self._generation += 1
        event, self._event = self._event, asyncio.Event()
        event.set()
        if not self._rearm_pending and not self._closing:
            # Not now: this may run inside the loader's callbacks.
            self._rearm_pending = True
            self._loop.call_soon(self._rearm)

    def _rearm(self) -> None:
        """Ticks if the backoff deadline is due, and sets the timer for the next one."""
        self._rearm_pending = False
        if not self._enter():
            return
        try:
            deadline = self._loader.next_deadline()
            if deadline is not None and deadline <= self._now_ms():
                self._loader.tick(self._now_ms())
                deadline = self._loader.next_deadline()
        except BaseException as e:
            self._record(e, "the backoff timer")
            deadline = None
        finally:
            self._exit()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, deadline
        if deadline is not None:
            # One ms late rather than early: the clock is read in whole ms.
            self._timer = self._loop.call_at(self._t0 + (deadline + 1) / 1000, self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, None
        self._rearm()

    async def settled(self, timeout: Optional[float] = None) -> bool:
        """Waits until the feed is quiescent (no read outstanding, not revalidating, no
        failure); False if ``timeout`` seconds passed first."""
        end = None if timeout is None else self._loop.time() + timeout
        while True:
            event = self._event
            if self._is_settled():
                return True
            remaining = None if end is None else end - self._loop.time()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def changes(self) -> AsyncIterator[FeedSnapshot[T]]:
        """A snapshot now, then one after each change (several changes while the consumer
        was busy give one snapshot). Ends when the feed closes."""
        seen = None
        while not self._closing:
            if self._generation != seen:
                seen = self._generation
                yield self.snapshot()
                continue
            await self._event.wait()

    async def close(self, timeout: Optional[float] = None) -> None:
        """Closes the loader (every unanswered read's task is cancelled, every page goes to
        ``on_release``, once), then waits up to ``timeout`` seconds for the tasks to end. A
        task that outlives ``timeout`` has its result released when it ends. Idempotent."""
        if not self._shut():
            await self._wait_closed()
            return
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            try:
                self._loader.close()   # hints every unanswered read: their tasks are cancelled
            except BaseException as e:
                self._record(e, "closing the loader")
            tasks = list(self._jobs)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=timeout)
        finally:
            self._closed.set()
            event, self._event = self._event, asyncio.Event()
            event.set()

    async def _wait_closed(self) -> None:
        while not self._closed.is_set():
            await self._event.wait()
