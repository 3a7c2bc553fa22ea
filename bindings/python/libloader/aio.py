"""The asyncio :class:`Feed`: loads run as coroutines on the event loop.

The same feed as :class:`libloader.Feed` (see :class:`libloader.Feed`: what a load returns,
and how the feed reports a load's bugs, a stalled cursor and spent retries), for one event
loop, and the same engine: the library's feed (``loader_feed_*``) in hosted mode, whose
policy (which read loads, backoff retries, read timeouts, cancel hints, problems, page
accounting, the close) is the engine's. The loop's thread takes each read the engine has
ready, when the engine's ``ready`` hook says so (from its clock thread, through
``loop.call_soon_threadsafe``). A load starts at once, inside the call that needs it (as an
eager task does): a load that completes without waiting (a local database query) is answered
there, with no task and no turn of the loop; one that waits continues as a task.
``on_release`` runs on the loop's thread.

The trap it avoids: a task cancelled before it starts never runs its body, so an answer
given from inside the task (an ``except`` or ``finally``) is never given, and the read
waits for ever. Here no answer depends on the task's body: a cancel hint lets the read go
in the engine at once, and every task's outcome is answered from its done-callback, which
asyncio runs however the task ended.

The other trap: a load waiting in ``asyncio.to_thread`` cannot be stopped (a thread is not
cancelled), and cancelling the task that waits for it drops the page the thread goes on to
make (asyncio discards a result that arrives for a cancelled future): it never reached
``on_release``. So the feed does not cancel a task while its load waits in
``asyncio.to_thread``: the read is let go of at once as ever, the thread finishes and the
page the load returns is released; a load that waits for anything else once its thread is
done is cancelled there. (A thread the load waits for by another way, such as
``loop.run_in_executor``, cannot be told apart from other waits: use ``asyncio.to_thread``.)
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import functools
import inspect
import os
import threading
import time
from typing import (Any, AsyncIterator, Awaitable, Callable, Coroutine, Dict, Generator, List,
                    Optional, Set, Tuple, Union)

from . import _ffi, _record_env
from ._enums import Direction, Result
from ._errors import error_for
from ._feed import (_CHANGED_FN, _COMPARE_FN, _ENGINES, _FAIL_CODE, _INTERRUPTED_CODE,
                    _LOCATE_FN, _MAX_WORKERS, _RELEASE_FN, _SETTLE_POLL_S, FeedPage,
                    FeedProblem, FeedSnapshot, FeedStalledError, LoadResult, T, _accepts_until,
                    _check_load, _Engine, _EngineFeed, _FeedLoader, _is_failure, _seconds)
from ._loader import _keys, _keys_lock, result_message
from ._types import Config, Read, _read_from_c

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


def _cancel_task(task: "asyncio.Task[Any]") -> None:
    """Cancels a load's task, unless its load waits in ``asyncio.to_thread``: then once it
    waits for something else (its page, if it returns one, is released)."""
    rest = task.get_coro()
    if isinstance(rest, _Rest) and _in_thread(rest):
        rest.cancel_wanted = True
        return
    task.cancel()


def _ready_thunk(userdata: Optional[int]) -> None:
    engine = _ENGINES.get(userdata or 0)
    if isinstance(engine, _LoopEngine):
        engine.ready()


_READY_FN = _ffi.loader_feed_ready_fn(_ready_thunk)


class _LoopEngine(_Engine):
    """The engine of an :class:`Feed` on its event loop: the loop's thread takes every read
    the engine has ready (``loader_feed_next_job`` with no wait, when the engine's ``ready``
    hook says so), runs its load until it first waits, and answers it there or from its
    task's done-callback (``loader_feed_complete_next_job``, which hands back the read that
    answer issued). What the engine calls on its own threads (its clock's retries and read
    timeouts) reaches the loop through ``call_soon_threadsafe``: ``on_release`` and the
    changes run on the loop's thread."""

    def __init__(self, feed: "Feed[Any]", load: Callable[..., Any], takes_until: bool,
                 load_name: str, read_timeout_ms: int,
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(feed, load, takes_until, load_name, read_timeout_ms, 0)
        self.loop = loop
        self.thread = threading.get_ident()
        self.context = contextvars.copy_context()
        """The context the feed was made in: what the feed runs on the loop by itself (the
        loads it starts, ``on_release``, the wake-ups) runs in a copy of it, as a task the
        maker started would, not in the context of the thread that asked (the engine's
        clock has none of the application's context variables)."""
        self.tasks: Dict["asyncio.Task[Any]", Tuple[int, Read]] = {}
        """The loads that wait, as tasks: each one's job token and read."""
        self.stopped: Set[int] = set()
        """The jobs whose task the feed cancelled (a cancel hint, the close)."""
        self.calls = 0
        """How deep the loop's thread is in the engine's calls: a ``ready`` there is served
        as the call ends."""
        self.scheduled = False
        self.waiters = 0
        self.event = asyncio.Event()
        self.closing = False
        self.job = _ffi.loader_feed_job()
        self.result = _ffi.loader_load_result()

    def here(self) -> bool:
        return threading.get_ident() == self.thread

    def enter(self) -> None:
        """Before a call of the engine's on the loop's thread: a ``ready`` inside it is
        served as the call ends."""
        self.calls += 1

    def leave(self) -> None:
        self.calls -= 1

    def soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` on the loop's thread; here, when the loop is closed (a release is made
        once, late rather than never)."""
        try:
            self.loop.call_soon_threadsafe(fn, *args, context=self.context.copy())
        except RuntimeError:
            fn(*args)

    # ---- the engine's callbacks ----

    def released(self, token: int) -> None:
        if self.here():
            _Engine.released(self, token)
        else:
            self.soon(functools.partial(_Engine.released, self), token)

    def changed(self) -> None:
        if self.here():
            self.wake(True)
        else:
            self.soon(self.wake, True)

    def wake(self, changed: bool = False) -> None:
        """On the loop's thread: wakes :meth:`Feed.settled` and :meth:`Feed.changes`."""
        if changed:
            self.generation += 1
        if self.waiters:
            event, self.event = self.event, asyncio.Event()
            event.set()

    def wake_all(self, event: asyncio.Event) -> None:
        """Wakes the waiters of ``event``, if it is still the one they wait on."""
        if event is self.event:
            self.event = asyncio.Event()
        event.set()

    def ready(self) -> None:
        """The engine's ``ready`` hook: a read may be there to take."""
        if self.scheduled or self.closing:
            return
        if self.here():
            if self.calls:
                return   # the call the loop's thread is in takes it as it ends
            self.scheduled = True
            self.loop.call_soon(self.pump, context=self.context.copy())
        else:
            self.scheduled = True
            try:
                self.loop.call_soon_threadsafe(self.pump, context=self.context.copy())
            except RuntimeError:   # the loop is closed: nothing will load
                pass

    # ---- the loads ----

    def pump(self) -> None:
        """On the loop's thread: starts every read the engine has ready, then cancels the
        tasks whose reads a cancel hint let go of. An interrupt a load raises before it first
        waits is raised (its read answered)."""
        self.scheduled = False
        if self.closing:
            return
        job = self.job
        while True:
            self.enter()
            try:
                rc = self.lib.loader_feed_next_job(self.handle, 0, ctypes.byref(job))
            finally:
                self.leave()
            if rc != Result.OK or job.token == 0:
                break
            self.took()
            self.go(job.token, _read_from_c(ctypes.addressof(job.read), 0))
        if self.tasks:
            self.look_hints()

    def go(self, token: int, read: Read) -> None:
        """Runs the load of job ``token`` until it first waits (then it goes on as a task);
        one that returns at once is answered here, and so is the next read that answer
        issued, in turn."""
        while token:
            status, buf = self.start(token, read)
            if status is None:
                return
            token, read = self.answer_next(token, status, buf)  # type: ignore[assignment]

    def start(self, token: int, read: Read) -> Tuple[Optional[int], Any]:
        """The load of ``read``, up to its first wait: the status that answers it now (and
        the cursor's buffer), or None when it goes on as a task."""
        out = self.result
        self.running[token] = (time.monotonic(), read, False)
        try:
            if self.takes_until:
                made = self.load(read.cursor, read.limit, read.direction, until=read.until)
            elif read.until is not None:
                raise TypeError("a bounded read (until) reached a load that does not accept "
                                "until=")
            else:
                made = self.load(read.cursor, read.limit, read.direction)
            if inspect.iscoroutine(made):
                try:
                    first = made.send(None)
                except StopIteration as stop:   # it never waited: answered here
                    made = stop.value
                else:
                    self.wait_in(self.loop.create_task(_Rest(made, first)), token, read)
                    return None, None
            elif inspect.isawaitable(made):
                self.wait_in(self.loop.create_task(_rest(made)), token, read)
                return None, None
        except BaseException as e:
            let_go = self._ended(token)
            if not _is_failure(e):
                # An interrupt ends the call it ran in: its read failed, the rest left to
                # the loop.
                self.answer_next(token, _INTERRUPTED_CODE, None, take=False)
                self.ready()
                raise
            return self.failed(read, out, e, let_go), None
        return self.fill(read, out, made, self._ended(token))

    def _ended(self, me: int) -> bool:
        started = self.running.pop(me, None)
        return started is not None and started[2]

    def wait_in(self, task: "asyncio.Task[Any]", token: int, read: Read) -> None:
        self.tasks[task] = (token, read)
        task.add_done_callback(self.task_done)

    def task_done(self, task: "asyncio.Task[Any]") -> None:
        """A load's task ended, however: its job is answered, and the reads ready started."""
        token, read = self.tasks.pop(task)
        let_go = self._ended(token)
        out = self.result
        buf: Any = None
        if task.cancelled():
            if token in self.stopped:
                self.stopped.discard(token)
                status = _FAIL_CODE   # let go of already: the engine has nothing to count
            else:   # not the feed's doing: the read is wanted, and fails
                status = self.failed(read, out, asyncio.CancelledError(), let_go)
        else:
            self.stopped.discard(token)
            error = task.exception()
            if error is None:
                status, buf = self.fill(read, out, task.result(), let_go)
            elif not _is_failure(error):
                if self.interrupt is None:
                    self.interrupt = error   # for settled()
                status = _INTERRUPTED_CODE
            else:
                status = self.failed(read, out, error, let_go)
        try:
            next_token, next_read = self.answer_next(token, status, buf)
            if next_token:
                self.go(next_token, next_read)  # type: ignore[arg-type]
            self.pump()
        except BaseException as e:
            if _is_failure(e):
                raise
            if self.interrupt is None:
                self.interrupt = e
        self.wake()

    def answer_next(self, token: int, status: int, buf: Any, take: bool = True
                    ) -> Tuple[int, Optional[Read]]:
        """Answers job ``token`` (``loader_feed_complete_next_job``, no wait): the next job
        that answer issued for this thread, or 0."""
        out = self.result
        job = self.job
        page = ctypes.byref(out) if status == 0 else None
        self.enter()
        try:
            if take:
                rc = self.lib.loader_feed_complete_next_job(token, status, page, 0,
                                                            ctypes.byref(job))
            else:
                rc = self.lib.loader_feed_complete_job(token, status, page)
        finally:
            self.leave()
        self.answered(rc, status, out)
        del buf
        if take and rc == Result.OK and job.token != 0:
            self.took()
            return job.token, _read_from_c(ctypes.addressof(job.read), 0)
        return 0, None

    def look_hints(self) -> None:
        """Cancels the tasks whose reads the engine let go of by a cancel hint (a load
        waiting in ``asyncio.to_thread`` once it waits for something else: see the module
        documentation); a load let go of at its read timeout runs on."""
        hinted = ctypes.c_bool(False)
        for task, (token, _) in list(self.tasks.items()):
            if token in self.stopped:
                continue
            rc = self.lib.loader_feed_job_hinted(token, ctypes.byref(hinted))
            if rc == Result.OK and hinted.value:
                self.stopped.add(token)
                _cancel_task(task)

    def stop_all(self) -> None:
        """The close: every task cancelled (see :meth:`look_hints`)."""
        for task, (token, _) in list(self.tasks.items()):
            self.stopped.add(token)
            _cancel_task(task)


class Feed(_EngineFeed[T]):
    """A loader that runs ``await load(cursor, limit, direction)`` (with ``until=`` if it
    takes it: see :class:`libloader.Feed`).

    ``load`` is an ``async def`` (a plain function returning a :class:`LoadResult` works
    too, but blocks the loop); it returns at most ``limit`` items after ``cursor`` (before
    it, in source order, for :attr:`Direction.BACKWARD`: see :class:`libloader.Feed`), or
    raises: the read fails and the loader's backoff retries it (a TypeError, or a result
    that is not a valid LoadResult, is a bug in the load: reported, not retried; a
    ``KeyboardInterrupt``, ``SystemExit`` or ``GeneratorExit`` is an interrupt, raised by the
    call the load ran in or by :meth:`settled`: see :class:`libloader.Feed`). A load starts
    inside the call that needs it and runs until it first waits; then it continues as a
    task. When the loader no longer needs a read, the feed lets it go at once and cancels
    its task; a load waiting in ``asyncio.to_thread`` is left to its thread, which cannot be
    stopped, and cancelled at its next other wait (see the module documentation). A load
    that runs past ``Config.read_timeout_ms`` is let go of (its read fails and is retried;
    :meth:`explain` names it) and runs on. ``on_release(result)`` gets every result a load
    returned, exactly once, on the loop's thread: those of loads superseded while they ran
    and of loads that return after :meth:`close` too. What the feed starts by itself (a
    retry, a read an answer issued) and ``on_release`` run in a copy of the context the
    feed was made in (its :mod:`contextvars`), as a task its maker started would.

    The feed is the library's engine (``loader_feed_*``, as :class:`libloader.Feed` is) in
    hosted mode, with the event loop's thread as its one host thread: the engine's policy
    (which read loads, the backoff timer, read timeouts, cancel hints, problems, page
    accounting, the free) is the engine's, and its clock thread wakes the loop when a read
    is ready (``loop.call_soon_threadsafe``).

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

    _name = "aio.Feed"

    def __init__(self, load: AsyncLoad[T], *,
                 config: Optional[Config] = None,
                 on_release: Optional[Callable[[LoadResult[T]], Any]] = None,
                 compare: Optional[Callable[[bytes, bytes], int]] = None,
                 locate: Optional[Callable[[int], Optional[bytes]]] = None,
                 record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        self._closing = True   # until the engine exists: __del__ then has nothing to do
        loop = asyncio.get_running_loop()
        load_name = _check_load(load, "aio.Feed()", False)
        locate, timeout_ms = self._arguments(load, load_name, compare, locate, on_release,
                                             config)
        engine = _LoopEngine(self, load, self._takes_until, load_name, timeout_ms, loop)
        engine.user_release = on_release
        engine.host.compare = compare
        engine.host.locate = locate
        with _keys_lock:
            engine.host.key = next(_keys)
        lib = engine.lib
        cfg = _ffi.loader_feed_config()
        cfg.struct_size = ctypes.sizeof(cfg)
        cfg.workers = _MAX_WORKERS   # a task holds no thread: as many loads as reads
        cfg.userdata = engine.host.key
        cfg.release = _RELEASE_FN
        cfg.changed = _CHANGED_FN
        if compare is not None:
            cfg.compare = _COMPARE_FN
        if locate is not None:
            cfg.locate = _LOCATE_FN
        c_config = (config or Config()).to_c()
        cfg.loader = ctypes.pointer(c_config)
        handle = _ffi.loader_feed_handle(0)
        _ENGINES[engine.host.key] = engine
        rc = lib.loader_feed_new_hosted_ready(ctypes.byref(cfg), _READY_FN,
                                              ctypes.byref(handle))
        if rc != Result.OK:
            del _ENGINES[engine.host.key]
            raise error_for(rc, result_message, "loader_feed_new_hosted_ready")
        engine.handle = handle.value
        engine.host.handle = handle.value
        self._engine = engine
        self._loader = _FeedLoader(engine.host, handle.value)
        _record_env.warn_if_unrecordable(stacklevel=2)
        if record is not None:
            rc = lib.loader_record(handle.value, os.fsencode(record))
            if rc != Result.OK:
                engine.closing = True
                lib.loader_feed_free(handle.value, 0, None)
                del _ENGINES[engine.host.key]
                raise error_for(rc, result_message, "loader_record")
        self._open()

    @property
    def _jobs(self) -> Set["asyncio.Task[Any]"]:
        """The loads' tasks still running."""
        return set(self._engine.tasks)  # type: ignore[attr-defined]

    async def __aenter__(self) -> "Feed[T]":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        await self.close(timeout=None if exc_type is None else 0)

    _how_to_close = "await close(), or use `async with aio.Feed(...) as feed:`"

    def _collected(self) -> None:
        self._shut(0)

    def _act(self, name: str, *args: Any) -> None:
        """A user's call on the engine, then the loads it made ready, started here (each
        runs until it first waits)."""
        engine: _LoopEngine = self._engine  # type: ignore[assignment]
        with self._calling() as loader:
            engine.calls += 1
            try:
                loader._call(f"loader_feed_{name}", *args)
            finally:
                engine.calls -= 1
        engine.pump()

    # ---- waiting ----

    async def settled(self, timeout: Optional[float] = None) -> bool:
        """Waits until the feed is quiescent (no read outstanding, not revalidating, no
        failure); False if ``timeout`` seconds passed first.

        Raises what keeps the feed from settling until its user acts (:attr:`problem`): the
        TypeError of a load result that is not valid (naming the load function; a ValueError
        for a ``next_cursor`` over ``MAX_CURSOR_LEN``), or :class:`FeedStalledError` for a
        stalled cursor or spent automatic retries. Raises the
        ``GeneratorExit`` (or ``KeyboardInterrupt``, ``SystemExit``) a load's task raised
        (once; its read was failed and is retried); asyncio itself raises a task's
        ``KeyboardInterrupt`` and ``SystemExit`` out of the loop."""
        wait = _seconds("settled", timeout)
        engine: _LoopEngine = self._engine  # type: ignore[assignment]
        loop = engine.loop
        end = None if wait is None else loop.time() + wait
        while True:
            self._raise_interrupt()
            engine.look_overdue()
            event = engine.event
            rc = self._wait(0)
            if self._settled_by(rc):
                return True
            remaining = None if end is None else end - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            step = _SETTLE_POLL_S if remaining is None else min(remaining, _SETTLE_POLL_S)
            # Not asyncio.wait_for: it can swallow this task's cancellation when the wait
            # ends at the same time (Python 3.11).
            timer = loop.call_later(step, engine.wake_all, event)
            engine.waiters += 1
            try:
                await event.wait()
            finally:
                engine.waiters -= 1
                timer.cancel()

    async def changes(self) -> AsyncIterator[FeedSnapshot[T]]:
        """A snapshot now, then one after each change (several changes while the consumer
        was busy give one snapshot). A snapshot's :attr:`~FeedSnapshot.problem` says when
        the feed cannot settle until its user acts. Ends when the feed closes."""
        engine: _LoopEngine = self._engine  # type: ignore[assignment]
        seen = None
        while not self._closing:
            if engine.generation != seen:
                seen = engine.generation
                try:
                    snap = self.snapshot()
                except RuntimeError:
                    if self._closing:
                        return   # closed meanwhile
                    raise
                yield snap
                continue
            engine.waiters += 1
            try:
                await engine.event.wait()
            finally:
                engine.waiters -= 1

    # ---- closing ----

    async def close(self, timeout: Optional[float] = None) -> None:
        """Closes the feed (the engine lets go of every read; every task is cancelled, one
        whose load waits in ``asyncio.to_thread`` once its thread is done; every page goes to
        ``on_release``, once), then waits up to ``timeout`` seconds for the tasks to end. A
        task that outlives ``timeout`` has its result released when it ends (while the loop
        runs). Idempotent. RuntimeError from inside a load of this feed: closing there would
        wait for itself."""
        wait = _seconds("close", timeout)
        engine: _LoopEngine = self._engine  # type: ignore[assignment]
        current = asyncio.current_task()
        if current is not None and current in engine.tasks:
            raise RuntimeError(
                "close() was called from inside the feed's load function: it would wait for "
                "that very load to end. Return from the load first, or close the feed from "
                "another task")
        if self._closing:
            end = None if wait is None else engine.loop.time() + wait
            while not self._closed.is_set() and (end is None or engine.loop.time() < end):
                await asyncio.sleep(0.005)
            return
        tasks = self._shut(wait)
        if tasks:
            await asyncio.wait(tasks, timeout=wait)

    def _shut(self, wait: Optional[float]) -> List["asyncio.Task[Any]"]:
        """Frees the engine without waiting (the loads are the loop's, which must go on to
        end them), cancels the tasks; returns them."""
        engine: _LoopEngine = self._engine  # type: ignore[assignment]
        self._closing = True
        engine.closing = True
        engine.calls += 1
        try:
            self._free(0)
        finally:
            engine.calls -= 1
        tasks = list(engine.tasks)
        engine.stop_all()
        if engine.waiters:
            engine.wake()
        return tasks
