"""The asyncio :class:`Feed`: loads run as coroutines, the backoff timer is ``loop.call_at``.

The same feed as :class:`libloader.Feed` (see :class:`libloader.Feed`: what a load returns,
and how the feed reports a load's bugs, a stalled cursor and spent retries), for one event
loop. A load starts at once, inside the call that needs it (as an eager task does): a load
that completes without waiting (a local database query) is answered there, with no task and
no turn of the loop; one that waits continues as a task.

The trap it avoids: a task cancelled before it starts never runs its body, so an answer
given from inside the task (an ``except`` or ``finally``) is never given, and the loader
waits for that read until the next invalidation. Here no answer depends on the task's body:
the cancel hint answers its read itself, and every other outcome is answered from the task's
done-callback, which asyncio runs however the task ended.

The other trap: a load waiting in ``asyncio.to_thread`` cannot be stopped (a thread is not
cancelled), and cancelling the task that waits for it drops the page the thread goes on to
make (asyncio discards a result that arrives for a cancelled future): it never reached
``on_release``. So the feed does not cancel a task while its load waits in
``asyncio.to_thread``: it answers the read at once as ever, lets the thread finish and
releases the page the load returns; a load that waits for anything else once its thread is
done is cancelled there. (A thread the load waits for by another way, such as
``loop.run_in_executor``, cannot be told apart from other waits: use ``asyncio.to_thread``.)
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import warnings
from typing import (Any, AsyncIterator, Awaitable, Callable, Coroutine, Generator, Optional,
                    Union)

from ._enums import Direction
from ._feed import (FeedPage, FeedProblem, FeedSnapshot, FeedStalledError, LoadResult, T,
                   _FeedCore, _is_failure, _seconds, _weak0)
from ._types import Config, Read

__all__ = ["Feed", "Direction", "FeedPage", "FeedProblem", "FeedSnapshot", "FeedStalledError",
           "LoadResult"]

AsyncLoad = Callable[[bytes, int, Direction], Union[Awaitable[LoadResult[T]], LoadResult[T]]]
"""What :class:`Feed` runs: ``async def load(cursor: bytes, limit: int, direction:
Direction)`` returning a :class:`LoadResult` (a plain function returning one works too, but
blocks the loop), with ``until: Optional[bytes] = None`` after them if it takes ``until``: a
type checker rejects a load of other parameters."""


_DONE = object()

_TO_THREAD = getattr(getattr(asyncio, "to_thread", None), "__code__", None)
"""The code of ``asyncio.to_thread``: a coroutine running it waits for a thread."""

_CHAIN = 64
"""How many awaits deep :func:`_in_thread` looks."""


def _in_thread(coro: Any) -> bool:
    """Whether the coroutine ``coro`` (or a coroutine it awaits, however deep) waits inside
    ``asyncio.to_thread`` now: for a thread, which a cancellation does not stop."""
    for _ in range(_CHAIN):
        if isinstance(coro, _Rest):
            coro = coro._coro
            continue
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        if code is not None and code is _TO_THREAD:
            return True
        awaited = getattr(coro, "cr_await", None)
        if awaited is None:
            awaited = getattr(coro, "gi_yieldfrom", None)
        if awaited is None:
            return False
        coro = awaited
    return False


class _Rest(Coroutine[Any, Any, Any]):
    """The rest of a load coroutine whose first step already ran, as a coroutine a task can
    drive: its first step gives the task what the load yielded, and from then on what the
    task sends or throws goes to the load. A task cancelled before its first step throws
    the cancellation in here, and the load gets it at the ``await`` it waits in, as if it
    had run in the task from the start (a coroutine of its own, not yet started, would end
    at once and leave the load suspended forever).

    :attr:`cancel_wanted`: the feed wants the task cancelled, but the load waits in a thread
    (:func:`_in_thread`); the task is cancelled at the first step after which the load waits
    for something else."""

    __slots__ = ("_coro", "_first", "cancel_wanted")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro = coro
        self._first = first
        self.cancel_wanted = False

    def send(self, value: Any) -> Any:
        first = self._first
        if first is not _DONE:
            self._first = _DONE
            waits = first
        else:
            waits = self._coro.send(value)
        if self.cancel_wanted:
            self._cancel_once_out()
        return waits

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._first = _DONE
        if val is None and tb is None:
            waits = self._coro.throw(typ)
        else:
            waits = self._coro.throw(typ, val, tb)  # pragma: no cover - the 3-argument form
        if self.cancel_wanted:
            self._cancel_once_out()
        return waits

    def _cancel_once_out(self) -> None:
        """Inside the task's step: cancels the task unless the load still waits in a thread
        (the task then cancels what the load waits for now, as its step ends)."""
        if not _in_thread(self._coro):
            self.cancel_wanted = False
            task = asyncio.current_task()
            if task is not None:
                task.cancel()

    def close(self) -> None:
        self._first = _DONE
        self._coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        first = self.send(None)
        while True:
            try:
                value = yield first
            except BaseException as e:
                first = self.throw(e)
            else:
                first = self.send(value)


async def _rest(load: Awaitable[Any]) -> Any:
    return await load


class Feed(_FeedCore[T]):
    """A loader that runs ``await load(cursor, limit, direction)`` (with ``until=`` if it
    takes it: see :class:`libloader.Feed`).

    ``load`` is an ``async def`` (a plain function returning a :class:`LoadResult` works
    too, but blocks the loop); it returns at most ``limit`` items after ``cursor`` (before
    it, in source order, for :attr:`Direction.BACKWARD`: see :class:`libloader.Feed`), or
    raises: the read fails and the loader's backoff retries it with ``loop.call_at`` (a
    TypeError, or a result that is not a valid LoadResult, is a bug in the load: reported,
    not retried; a ``KeyboardInterrupt``, ``SystemExit`` or ``GeneratorExit`` is an
    interrupt, raised by the call the load ran in or by :meth:`settled`: see
    :class:`libloader.Feed`). A load starts inside the call that needs it and runs until it
    first waits; then it continues as a task. When the loader no longer needs a read, the
    feed answers it at once and cancels its task; a load waiting in ``asyncio.to_thread`` is
    left to its thread, which cannot be stopped, and cancelled at its next other wait (see
    the module documentation). ``on_release(result)`` gets every result a load returned,
    exactly once: those of loads superseded while they ran and of loads that return after
    :meth:`close` too.

    Create it inside the event loop and call it from the loop's thread only (from another
    thread: ``loop.call_soon_threadsafe(feed.invalidate)``). ``async with Feed(load) as
    feed:`` closes it on exit. A feed never closed warns (``ResourceWarning``) when
    collected, and releases its pages then.

    ``compare(a, b)`` orders two non-empty cursors as the source does (negative, 0,
    positive); with a load that accepts ``until=`` it enables :meth:`invalidate_range`.

    ``locate(position)`` (or a ``locate`` attribute of the load function; a plain function,
    not a coroutine: it runs inside :meth:`set_window`) returns the cursor whose next item
    is at ``position``, or None: a far move then starts there instead of walking.

    ``record=path`` records the feed's loader's run, as :class:`~libloader.Feed` does.
    """

    def __init__(self, load: AsyncLoad[T], *,
                 config: Optional[Config] = None,
                 on_release: Optional[Callable[[LoadResult[T]], Any]] = None,
                 compare: Optional[Callable[[bytes, bytes], int]] = None,
                 locate: Optional[Callable[[int], Optional[bytes]]] = None,
                 record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        self._closing = True
        self._loop = asyncio.get_running_loop()
        self._t0 = self._loop.time()
        self._event = asyncio.Event()
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at: Optional[int] = None
        self._rearm_pending = False
        super().__init__(load, config, on_release, compare, threaded=False, locate=locate,
                         record=record)

    async def __aenter__(self) -> "Feed[T]":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        await self.close(timeout=None if exc_type is None else 0)

    def __repr__(self) -> str:
        state = "closed" if self._closing else "open"
        return f"<libloader.aio.Feed of {getattr(self, '_load_name', '?')} {state}>"

    def __del__(self) -> None:
        if getattr(self, "_closing", True):
            return
        try:
            warnings.warn(f"unclosed {self!r}: closing it now (await close(), or use `async "
                          "with aio.Feed(...) as feed:`)", ResourceWarning, stacklevel=2)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
        self._closing = True
        try:
            self._collect_loader()
            for task in list(self._jobs):
                task.cancel()
            if self._timer is not None:
                self._timer.cancel()
        except BaseException:  # pragma: no cover - a closed loop, interpreter shutdown
            pass

    def _start(self, read: Read) -> Any:
        """Starts the load now, and runs it until it first waits: a load that never waits
        is answered here, with no task. An interrupt it raises inside the user's call is
        raised on (see ``_FeedCore._interrupted``)."""
        if self._stopped:
            self._interrupted(read.read_id, None)   # an interrupt ends this call
            return None
        inside = self._inside
        try:
            result = self._call_load(read)
        except BaseException as e:
            if self._finish(read.read_id, error=e):
                raise
            return None
        if inspect.iscoroutine(result):
            inside.load += 1
            try:
                first = result.send(None)
            except StopIteration as stop:   # it never waited: answered here
                inside.load -= 1
                self._finish(read.read_id, result=stop.value)
                return None
            except BaseException as e:
                inside.load -= 1
                if self._finish(read.read_id, error=e):
                    raise
                return None
            inside.load -= 1
            task = self._loop.create_task(_Rest(result, first))
        elif inspect.isawaitable(result):
            task = self._loop.create_task(_rest(result))
        else:
            self._finish(read.read_id, result=result)
            return None
        self._jobs.add(task)
        task.add_done_callback(functools.partial(self._job_done, read.read_id))
        if self._read_timeout_ms and not self._rearm_pending:
            # The timer looks at this load when its read timeout is due, unless it looks
            # earlier anyway.
            due = self._now_ms() + self._read_timeout_ms + 1
            if self._timer_at is None or self._timer_at > due:
                self._rearm_pending = True
                self._loop.call_soon(_weak0(self._rearm))
        return task

    def _cancel_job(self, job: Any) -> None:
        """Cancels a load's task, unless its load waits in ``asyncio.to_thread``: then once
        it waits for something else (its page, if it returns one, is released)."""
        rest = job.get_coro()
        if isinstance(rest, _Rest) and _in_thread(rest):
            rest.cancel_wanted = True
            return
        job.cancel()

    def _now_ms(self) -> int:
        return int((self._loop.time() - self._t0) * 1000)

    def _signal(self, changed: bool, urgent: bool = False) -> None:
        if changed:
            self._generation += 1
        if ((self._settle_waiters and (urgent or not self._slots))
                or (changed and self._change_waiters) or self._closing):
            event, self._event = self._event, asyncio.Event()
            event.set()
        if urgent and not self._rearm_pending and not self._closing:
            # Not now: this may run inside the loader's callbacks.
            self._rearm_pending = True
            self._loop.call_soon(_weak0(self._rearm))

    def _user_called(self) -> None:
        # A retry or a move may have changed the deadline: look at it again.
        self._signal(self._bump, urgent=True)

    def _rearm(self) -> None:
        """Lets go of the loads past the read timeout, ticks if the backoff deadline is due,
        and sets the timer for the next of the two."""
        self._rearm_pending = False
        if not self._enter():
            return
        overdue: Optional[int] = None
        try:
            overdue = self._let_go_overdue()
            if self._bad_result is not None:
                deadline = None   # a bug in the load: not retried until the user acts
            else:
                deadline = self._loader.next_deadline()
                if deadline is not None and deadline <= self._now_ms():
                    self._loader.tick(self._now_ms())
                    self._signal(self._bump)
                    deadline = self._loader.next_deadline()
        except BaseException as e:
            if not _is_failure(e):
                raise   # not from a load: those are left for settled()
            self._record(e, "the backoff timer")
            deadline = None
        finally:
            self._exit()
        if overdue is not None and (deadline is None or overdue < deadline):
            deadline = overdue
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, deadline
        if deadline is not None:
            # One ms late rather than early: the clock is read in whole ms.
            self._timer = self._loop.call_at(self._t0 + (deadline + 1) / 1000,
                                             _weak0(self._fire))

    def _fire(self) -> None:
        self._timer, self._timer_at = None, None
        self._rearm()

    async def settled(self, timeout: Optional[float] = None) -> bool:
        """Waits until the feed is quiescent (no read outstanding, not revalidating, no
        failure); False if ``timeout`` seconds passed first.

        Raises what keeps the feed from settling until its user acts (:attr:`problem`): the
        TypeError of a load result that is not valid (naming the load function; a ValueError
        for a ``next_cursor`` over ``MAX_CURSOR_LEN``), or :class:`FeedStalledError` for a
        stalled cursor or spent automatic retries. Raises the
        ``GeneratorExit`` (or ``KeyboardInterrupt``, ``SystemExit``) a load's task or the
        backoff timer's load raised (once; its read was failed and is retried); asyncio
        itself raises a task's ``KeyboardInterrupt`` and ``SystemExit`` out of the loop."""
        wait = _seconds("settled", timeout)
        end = None if wait is None else self._loop.time() + wait
        while True:
            event = self._event
            if self._settled_or_raise():
                return True
            remaining = None if end is None else end - self._loop.time()
            if remaining is not None and remaining <= 0:
                return False
            self._settle_waiters += 1
            try:
                if remaining is None:
                    await event.wait()
                else:
                    await asyncio.wait_for(event.wait(), remaining)
            except asyncio.TimeoutError:
                pass
            finally:
                self._settle_waiters -= 1

    async def changes(self) -> AsyncIterator[FeedSnapshot[T]]:
        """A snapshot now, then one after each change (several changes while the consumer
        was busy give one snapshot). A snapshot's :attr:`~FeedSnapshot.problem` says when
        the feed cannot settle until its user acts. Ends when the feed closes."""
        seen = None
        while not self._closing:
            if self._generation != seen:
                seen = self._generation
                yield self.snapshot()
                continue
            self._change_waiters += 1
            try:
                await self._event.wait()
            finally:
                self._change_waiters -= 1

    async def close(self, timeout: Optional[float] = None) -> None:
        """Closes the loader (every unanswered read's task is cancelled, one whose load waits
        in ``asyncio.to_thread`` once its thread is done; every page goes to ``on_release``,
        once), then waits up to ``timeout`` seconds for the tasks to end. A task that outlives
        ``timeout`` has its result released when it ends (while the loop runs). Idempotent.
        RuntimeError from inside a load (or a callback) of this feed: closing there would
        wait for itself."""
        wait = _seconds("close", timeout)
        current = asyncio.current_task()
        if current is not None and current in self._jobs:
            raise RuntimeError(
                "close() was called from inside the feed's load function: it would wait for "
                "that very load to end. Return from the load first, or close the feed from "
                "another task")
        if not self._shut():
            await self._wait_closed(wait)
            return
        interrupt, self._close_interrupt = self._close_interrupt, None
        if interrupt is not None:
            wait = 0   # interrupted: close without waiting
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._close_loader()   # hints every unanswered read: their tasks are cancelled
            tasks = list(self._jobs)
            for task in tasks:
                self._cancel_job(task)
            if tasks:
                await asyncio.wait(tasks, timeout=wait)
        finally:
            self._closed.set()
            event, self._event = self._event, asyncio.Event()
            event.set()
        if interrupt is not None:
            raise interrupt

    async def _wait_closed(self, timeout: Optional[float]) -> None:
        end = None if timeout is None else self._loop.time() + timeout
        while not self._closed.is_set():
            remaining = None if end is None else end - self._loop.time()
            if remaining is not None and remaining <= 0:
                return
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except asyncio.TimeoutError:
                return

