"""The :class:`Feed`: a :class:`~libloader.Loader` that runs the user's load function itself.

A host of the low-level :class:`~libloader.Loader` writes the same plumbing every time: start
a load for each read the loader issues, answer it exactly once (``settle`` with the page, or
``fail`` with the exception), answer a superseded read cheaply and abort its load, and call
``tick`` when the backoff timer is due. A :class:`Feed` does all of it. The user gives
``load(cursor, limit, direction)`` returning a :class:`LoadResult`; the feed runs loads on
its worker threads (or on the caller's thread: ``max_workers=0``), and the user moves the
window, jumps, invalidates, reads :meth:`Feed.items` and waits with :meth:`Feed.settled`.

What a load returns, by direction (:class:`~libloader.Direction`; cursors are positions
*between* items, ``b""`` the source's start):

* ``FORWARD``: at most ``limit`` items just after ``cursor``, in source order;
  ``next_cursor`` the position after the last one; ``end_of_source`` when no item follows.
* ``BACKWARD``: at most ``limit`` items just *before* ``cursor``, still in source order (the
  ones closest to the cursor); ``next_cursor`` the position just before the first one (a
  forward load from it returns these items first); ``end_of_source`` when the source's
  *start* was reached, and then ``next_cursor`` is ``b""``. A deep window's repairs, pages
  released by ``Config.max_pages`` and :meth:`~Feed.jump` make backward reads.
* Bounded (``until`` not ``None``, always forward): the repair after
  :meth:`~Feed.invalidate_range`. Return the items after ``cursor`` and at or before
  ``until`` (keyset: ``cursor < key <= until``), at most ``limit``; fewer than ``limit``
  means ``until`` or the source's end was reached (a load that filters rows keeps scanning
  until it has ``limit`` or reaches ``until``). ``next_cursor`` as for any forward load:
  ``until`` itself when no row was left up to it.

The feed passes ``until=`` (``None`` for an unbounded read) only to a load function that
accepts it (a parameter named ``until``, or ``**kwargs``), seen once from its signature:
``def load(cursor, limit, direction, until=None)``. Ranged invalidation needs such a load
and a ``compare(a, b)`` that orders two non-empty cursors as the source does.

What goes wrong, and how the feed says so:

* A load that raises an ``Exception`` fails its read, and the loader's backoff retries it
  (I/O fails now and then). Except a ``TypeError``: that is a bug in the load, not I/O.
* A load that raises any other ``BaseException`` (``KeyboardInterrupt``, ``SystemExit``,
  ``GeneratorExit``) is interrupted, not failed: the exception goes to the caller. A load run
  inside the caller's own call (``max_workers=0``, or the first step of an
  :mod:`~libloader.aio` load) ends that call, which raises it and loads nothing more; from a
  load on another thread or task, :meth:`Feed.settled` raises it, once. Its read is failed
  all the same, so none is left unanswered: the backoff retries it if the program goes on.
* A load whose result is not a :class:`LoadResult`, or has more than ``limit`` items (a
  ``list``, ``None``, a coroutine from an ``async def`` given to the threaded feed), or that
  raised ``TypeError`` (a :class:`LoadResult` refuses fields of the wrong type), is a bug in
  the load: the read is failed at once and *not* retried, the ``TypeError`` (naming the load
  function) is logged to the ``libloader.feed`` logger, and :meth:`Feed.settled` raises it.
  :meth:`~Feed.retry`, or a window move, tries again.
* A load that runs past ``Config.read_timeout_ms`` (10 s by default) is let go of, as the C
  feed does: its read fails with a :class:`TimeoutError` (the backoff retries it, on another
  worker thread in the threaded feed), :meth:`~Feed.explain` names it while it still
  runs, and its result goes to ``on_release`` when it returns. A load run on the caller's
  thread (``max_workers=0``) is let go of too, but holds that thread until it returns: its
  retry runs after it, in the caller's next call.
* A load that answers with the cursor it was given (a stalled cursor) and the automatic
  retries the loader spent are surfaced as a :class:`FeedProblem`: :meth:`Feed.settled`
  raises :class:`FeedStalledError` carrying it, :attr:`FeedSnapshot.problem` (and so
  :meth:`Feed.changes`) shows it, and :attr:`Feed.problem` reads it. Its message is a
  sentence saying what happened and what to do.

One engine: the threaded :class:`Feed` is the library's feed (``loader_feed_*``, the same
engine a C or C++ host uses) in hosted mode. Its policy (which read loads, the backoff timer,
read timeouts, cancel hints, stall and retry-budget problems, page accounting, the free) is
the engine's; the feed's Python threads are the engine's workers: each takes a read, runs the
load, and answers it with the next read taken in the same call
(``loader_feed_complete_next_job``). Python keeps what only Python can do: calling the load,
its exceptions and interrupts, the :class:`LoadResult` behind each acquisition, the wording
of a :class:`FeedProblem`, and a thread in place of one whose load was let go of.

Threads and closing: the threaded feed's worker threads are daemons, so a load that never
returns keeps neither :meth:`Feed.close` past its timeout nor the interpreter from exiting,
and Ctrl-C ends a program with one press (leaving ``with`` on an exception waits for no
load). A feed that is never closed warns (``ResourceWarning``) when it is collected, and
releases its pages and stops its threads then.

:mod:`libloader.aio` has the same feed for asyncio, on the same engine in hosted mode: the
event loop's thread takes the reads, when the engine's ``ready`` hook says one is there, and
answers them from the loads' tasks. Both share :class:`_EngineFeed` (the user's calls, the
view, the problems in Python's words, the free). The low-level loader is unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import dataclasses
import functools
import inspect
import itertools
import logging
import numbers
import os
import threading
import time
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Generic, Iterator, List, Optional, Sequence, Tuple,
                    TypeVar, Union)

from . import _attribute, _ffi, _record_env
from ._errors import StaleHandleError, error_for
from ._ffi import MAX_CURSOR_LEN
from ._enums import Direction, Failure, Result
from ._loader import (_LOCATE_BY_ADDRESS, Loader, _capture, _cursor, _Host, _keys, _keys_lock,
                      _tls, result_message)
from ._types import Config, Counts, Read, Snapshot, _read_from_c, _unsigned

T = TypeVar("T")

_log = logging.getLogger("libloader.feed")

_SETTLE_POLL_S = 0.05
"""The longest :meth:`Feed.settled` waits before it looks at the state again: every answer
that may settle the feed wakes it; this covers one that changed nothing the feed sees."""

_FAIL_CODE = 1
"""The code ``fail`` gets for a failed load; the loader does not interpret it."""

_INTERRUPTED_CODE = 3
"""The code ``fail`` gets for a read whose load was interrupted (:func:`_is_failure`), or not
started because an interrupt ends the call it would have run in."""

_LOOKS = 100
"""How many times the feed reads the loader's state again, at most, to get one that did not
change while it read the rest: more means another thread keeps changing it."""


@dataclass(frozen=True, eq=False)
class LoadResult(Generic[T]):
    """What a load function returns: one page of the source. Compared by identity: each one
    is a separate acquisition, handed to ``on_release`` exactly once.

    The fields' types are checked when it is made: ``items`` a sized sequence (a list, a
    tuple, a range; not a str, bytes or a generator), ``next_cursor`` bytes-like (bytes,
    bytearray, memoryview; not a str), ``end_of_source`` a bool (not ``"no"`` or 0). A
    wrong one raises TypeError naming the field; raised inside a load, it is reported as a
    bug in the load (see :class:`libloader.Feed`).

    Fields:

    items
        At most ``limit`` items, in source order: right after the cursor for a forward load,
        right before it for a backward one.
    next_cursor
        Forward: the cursor after the last item. Backward: the cursor before the first item
        (``b""`` at the source's start). Where the next load that way starts.
    end_of_source
        Forward: no item follows these. Backward: no item precedes them (the source's start).
    """

    items: Sequence[T]
    next_cursor: bytes
    end_of_source: bool = False

    def __post_init__(self) -> None:
        items: object = self.items
        cursor: object = self.next_cursor
        end: object = self.end_of_source
        if type(items) is not list and type(items) is not tuple:
            if isinstance(items, (str, bytes, bytearray)) or not (
                    hasattr(items, "__len__") and hasattr(items, "__iter__")):
                raise TypeError(f"LoadResult.items must be a sized sequence of items (a list, "
                                f"a tuple, a range), not {type(items).__name__}")
        if type(cursor) is not bytes and not isinstance(cursor, (bytes, bytearray, memoryview)):
            hint = " (encode it: cursors are bytes)" if isinstance(cursor, str) else ""
            raise TypeError(f"LoadResult.next_cursor must be bytes, bytearray or memoryview, "
                            f"not {type(cursor).__name__}{hint}")
        if end is not True and end is not False:
            raise TypeError(f"LoadResult.end_of_source must be a bool, not "
                            f"{type(end).__name__} ({end!r})")


@dataclass(frozen=True)
class FeedProblem:
    """Why a feed cannot settle until its user acts.

    Fields:

    reason
        ``"bad_load_result"``: a load returned something that is not a valid :class:`LoadResult`
        (a ``next_cursor`` longer than ``MAX_CURSOR_LEN`` included), or raised TypeError (the
        feed does not retry it); ``"cursor_stalled"``: a load answered with the cursor it was
        given, so the feed cannot move past it; ``"retries_spent"``: loads kept failing and the
        automatic retries (``Config.max_auto_retries``) are spent.
    message
        A sentence saying what happened and what to do about it.
    error
        The exception behind it: the TypeError of a bad result, or the last error a load raised;
        None for a stalled cursor.
    explanation
        What the loader said it waits for when the problem was seen (:meth:`Loader.explain
        <libloader.Loader.explain>`): its sentences, one a line. Not compared: two sightings of
        one problem are equal though time passed between them. :class:`FeedStalledError`'s
        message ends with it.
    """

    reason: str
    message: str
    error: Optional[BaseException] = None
    explanation: str = dataclasses.field(default="", compare=False)


class FeedStalledError(RuntimeError):
    """Raised by ``settled()`` when the feed cannot settle on its own: a stalled cursor, or
    the automatic retries spent. :attr:`problem` says which; the message says what to do."""

    problem = _attribute.Documented[FeedProblem](
        """The :class:`FeedProblem`: its ``reason``, its message, and what the loader said.""")

    def __init__(self, problem: FeedProblem) -> None:
        said = "".join(f"\n  {line}" for line in problem.explanation.splitlines())
        super().__init__(f"{problem.message}. The loader says:{said}" if said
                         else problem.message)
        self.problem = problem

    def __reduce__(self) -> Tuple[Any, ...]:
        # Made again from its problem, not from the formatted text: it pickles whole.
        return (type(self), (self.problem,), self.__dict__ or None)


@dataclass(frozen=True)
class FeedPage(Generic[T]):
    """One page of the view.

    Fields:

    start
        The offset of the page's first item, counted from where the view's numbering began.
    cursor
        The cursor just before the page's first item: where the forward load that produced it
        started, or where the backward one ended (its ``next_cursor``).
    result
        What the load returned.
    """

    start: int
    cursor: bytes
    result: LoadResult[T]


@dataclass(frozen=True)
class FeedSnapshot(Generic[T]):
    """The view and the loader's state, from one moment.

    Fields:

    items
        The view's items, in source order.
    start
        The offset of ``items[0]``.
    revalidating
        The source changed and the items shown are the old ones, until a re-read commits.
    reads_in_flight
        Reads issued and not yet answered.
    failed
        An own failure is recorded: a retry (by the backoff timer or :meth:`Feed.retry`) is
        needed.
    settled
        Quiescent: no read outstanding, not revalidating, no failure.
    problem
        Why the feed cannot settle until its user acts (a bad load result, a stalled cursor, the
        automatic retries spent), or None.
    """

    items: List[T]
    start: int
    revalidating: bool
    reads_in_flight: int
    failed: bool
    settled: bool
    problem: Optional[FeedProblem] = None


class _Acquisition:
    """What the feed hands the loader for each answer: the user's result (``None`` for the
    empty answer to a cancelled read) and the cursor just before its first item."""

    __slots__ = ("cursor", "result")

    def __init__(self, cursor: bytes, result: Optional[LoadResult[Any]]) -> None:
        self.cursor = cursor
        self.result = result


class _Inside(threading.local):
    """Per thread: how deep in the feed's own calls (a user's call counts :data:`_USER`),
    and whether inside a load."""

    depth = 0
    load = 0
    replaced = False
    """The threaded feed: this thread's last load was let go of at the read timeout, and
    another thread took its place."""


_USER = 1 << 16
"""What a user's call adds to :attr:`_Inside.depth`: the depth is at least this inside one,
so a load that is interrupted knows whether it ran inside the user's call on its thread."""


def _is_failure(e: BaseException) -> bool:
    """Whether what a load raised fails its read: an ``Exception``, or the cancellation of its
    task or future by someone other than the feed. Any other ``BaseException``
    (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``) interrupts: it is not retried
    as a failed read, it goes to the caller."""
    return isinstance(e, (Exception, asyncio.CancelledError))


def _text(e: BaseException) -> str:
    """``str(e)`` for a message; ``repr(e)`` when that raises, and the default repr when both
    do: an exception that cannot say what it is must not break the report of it."""
    try:
        return str(e)
    except Exception:
        try:
            return repr(e)
        except Exception:
            return object.__repr__(e)


def _name_of(fn: Any) -> str:
    """A name a person recognises for a callable: ``module.Qualified.name``."""
    if isinstance(fn, functools.partial):
        return f"functools.partial({_name_of(fn.func)}, ...)"
    name = getattr(fn, "__qualname__", None)
    if not isinstance(name, str):
        name = type(fn).__qualname__ + " instance"
    module = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None)
    return f"{module}.{name}" if module and module not in ("builtins", "__main__") else name


def _is_async(fn: Any) -> bool:
    """``fn`` is an ``async def`` (or an object whose ``__call__`` is one)."""
    return (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
            or inspect.iscoroutinefunction(getattr(fn, "__call__", None)))


def _check_load(load: Any, what: str, threaded: bool) -> str:
    """Checks ``load`` can be called as ``load(cursor, limit, direction)``; returns its
    name. TypeError, naming it, otherwise."""
    if not callable(load):
        raise TypeError(f"{what}: load must be callable, not {type(load).__name__}")
    name = _name_of(load)
    if threaded and _is_async(load):
        raise TypeError(f"{what}: the load function {name} is an async def; this feed calls "
                        "it on a thread and would get a coroutine it never awaits. Use "
                        "libloader.aio.Feed, or make the load a plain def")
    try:
        sig = inspect.signature(load)
    except (TypeError, ValueError):
        return name   # no signature to read (a builtin): the first call tells
    try:
        sig.bind(b"", 1, Direction.FORWARD)
    except TypeError as e:
        raise TypeError(f"{what}: the load function {name}{sig} cannot be called as "
                        f"load(cursor, limit, direction): {e}") from None
    return name


def _seconds(where: str, timeout: object) -> Optional[float]:
    """``timeout`` as seconds, or None; TypeError/ValueError naming it and ``where``."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"{where}: timeout must be a number of seconds or None, not "
                        f"{type(timeout).__name__} ({timeout!r})")
    t = float(timeout)
    if t != t:
        raise ValueError(f"{where}: timeout must be a number of seconds, not NaN")
    return t


def _describe(read: Read) -> str:
    bound = "" if read.until is None else f", until={read.until!r}"
    return (f"read {read.read_id} ({read.direction.name.lower()} from cursor "
            f"{read.cursor!r}, limit {read.limit}{bound})")


def _accepts_until(load: Callable[..., Any]) -> bool:
    """Whether ``load`` takes ``until`` as a keyword: a parameter of that name that is not
    positional-only, or ``**kwargs``. A callable without a signature (some builtins) does
    not."""
    try:
        params = inspect.signature(load).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD
               or (p.name == "until" and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                    inspect.Parameter.KEYWORD_ONLY))
               for p in params)


def _quiet(s: Snapshot) -> bool:
    return s.quiescent and not s.revalidating


class _FeedLoader(Loader[_Acquisition]):
    """The feed's loader, as the engine keeps it: a :class:`Loader` over the feed's handle
    (``loader_feed_loader`` returns it unchanged), for the reads (``state``, ``stats()``,
    ``view()``, ``explain()``, ``requests()``) and for the feed's own ``loader_feed_*``
    calls, whose callbacks (``locate``, ``compare``) run inside them and whose exceptions it
    re-raises, as :class:`Loader`'s calls do. The engine answers its reads and frees it."""

    def __init__(self, host: "_Host[_Acquisition]", handle: int) -> None:
        # Not Loader.__init__: the handle exists, made by loader_feed_new_hosted.
        self._closed = False
        self._owned = True
        self._host = host
        self._handle = handle
        self._lib = _ffi.lib()
        self._close_lock = threading.Lock()


def _engine_of(userdata: Optional[int]) -> "Optional[_Engine]":
    return _ENGINES.get(userdata or 0)


def _release_thunk(userdata: Optional[int], token: int) -> None:
    engine = _engine_of(userdata)
    if engine is not None:
        engine.released(token)


def _changed_thunk(userdata: Optional[int]) -> None:
    engine = _engine_of(userdata)
    if engine is not None:
        engine.changed()


def _compare_thunk(userdata: Optional[int], a: int, a_len: int, b: int, b_len: int) -> int:
    """The feed's ``compare``, found by its engine (not by the thread's call, as a
    :class:`Loader`'s is): the engine calls it on the thread of the user's
    ``invalidate_range`` and on a thread answering a read (a settle deciding a ranged change
    the read may contain). What it raises is re-raised by the user's call it ran in, or kept
    in the feed's ``errors`` when it ran inside an answer; the library takes the cursors as
    equal meanwhile."""
    left = right = b""
    engine = _engine_of(userdata)
    try:
        if engine is None or engine.host.compare is None:
            raise RuntimeError(f"libloader: compare for feed key {userdata}, which is gone")
        left = _ffi.bytes_at(a, a_len) if a and a_len else b""
        right = _ffi.bytes_at(b, b_len) if b and b_len else b""
        r = engine.host.compare(left, right)
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"compare must return an int, not {type(r).__name__}")
        return -1 if r < 0 else (1 if r > 0 else 0)
    except BaseException as e:
        where = f"compare({left!r}, {right!r})"
        if _tls.state.depth or engine is None:
            _capture(e, where)   # re-raised by the user's call on this thread
        else:
            engine.record(e, where)
        return 0


_RELEASE_FN = _ffi.loader_release_fn(_release_thunk)
_COMPARE_BY_ADDRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_size_t)(_compare_thunk)
"""The feed's compare thunk, taking the cursors by address; kept alive: _COMPARE_FN points at
it."""
_COMPARE_FN: Any = ctypes.cast(_COMPARE_BY_ADDRESS, _ffi.loader_compare_fn)
_LOCATE_FN: Any = ctypes.cast(_LOCATE_BY_ADDRESS, _ffi.loader_locate_fn)
_CHANGED_FN = _ffi.loader_changed_fn(_changed_thunk)
_ENGINES: Dict[int, "_Engine"] = {}
"""Every engine by its key (the feed config's ``userdata``), until its feed is freed and no
load it left running can still return a page."""

_TIMEOUT_SLACK_S = 0.002
"""How much sooner than the engine Python counts a load as let go of at the read timeout."""

_JOB_WAIT_MS = 200
"""How long a Python thread waits in ``loader_feed_next_job`` before it looks again (at the
loads that ran past the read timeout, and whether the feed is gone)."""


class _Engine:
    """What the threaded :class:`Feed` and its threads share, and the engine's callbacks
    reach (through ``_ENGINES``, so the feed itself can be collected): the handle, the pages
    behind the acquisitions, the loads running on Python's threads, and what only Python
    knows of them (the exceptions, the wording of a problem)."""

    def __init__(self, feed: "_EngineFeed[Any]", load: Callable[..., Any], takes_until: bool,
                 load_name: str, read_timeout_ms: int, workers: int) -> None:
        self.lib = _ffi.lib()
        self.load = load
        self.takes_until = takes_until
        self.load_name = load_name
        self.read_timeout_ms = read_timeout_ms
        self.workers = workers
        self.handle = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.host: "_Host[_Acquisition]" = _Host(_no_issue, _no_release, None, None)
        self.tokens = itertools.count(1)
        self.user_release: Optional[Callable[[LoadResult[Any]], Any]] = None
        self.user_change: Optional[Callable[[], Any]] = None
        self.errors: List[BaseException] = []
        self.last_error: Optional[BaseException] = None
        self.bad: Optional[Exception] = None
        """The bug in a load the engine reports (COUNT_OVER_LIMIT or a refused page): the
        TypeError or ValueError naming it."""
        self.stall: Optional[str] = None
        """What the latest load that answered with its own cursor said, for the engine's
        CURSOR_STALLED."""
        self.failures = 0
        self.interrupt: Optional[BaseException] = None
        self.generation = 0
        self.change_waiters = 0
        self.closing = False
        self.threads: List[threading.Thread] = []
        self.running: Dict[int, Tuple[float, Read, bool]] = {}
        """The loads running on Python's threads, by thread: when each started, its read,
        and whether it was let go of at the read timeout (its thread replaced)."""
        self.inside = _Inside()
        self.feed = weakref.ref(feed)
        self.executor: Optional[concurrent.futures.Executor] = None
        self.timed_out_seen = 0
        self.out = 0
        """Jobs Python's threads took and have not answered."""
        self.freed = False
        """The engine's count of loads let go of at the read timeout, as last looked at."""

    # ---- the engine's callbacks ----

    def released(self, token: int) -> None:
        acq = self.host.held.pop(token, None)
        if self.user_release is None:
            return   # the page goes with the acquisition
        if acq is not None and acq.result is not None:
            self.inside.depth += 1
            try:
                self.release(acq.result)
            finally:
                self.inside.depth -= 1

    def release(self, result: LoadResult[Any]) -> None:
        if self.user_release is None:
            return
        try:
            self.user_release(result)
        except BaseException as e:
            self.record(e, "on_release")

    def changed(self) -> None:
        # Without the lock: a waiter counts itself (under it) before it looks at the
        # generation, and two increments that race still move it.
        self.generation += 1
        if self.change_waiters:
            with self.lock:
                self.cond.notify_all()
        if self.user_change is not None:
            self.inside.depth += 1
            try:
                self.user_change()
            except BaseException as e:
                self.record(e, "on_change")
            finally:
                self.inside.depth -= 1

    def record(self, e: BaseException, where: str) -> None:
        self.errors.append(e)
        _log.error("libloader feed: %s raised %s: %s", where, type(e).__name__, _text(e),
                   exc_info=e)

    # ---- running a job ----

    def run(self, read: Read, out: Any, inline: bool) -> Tuple[int, Any]:
        """Runs the load of ``read`` and fills ``out``: returns the status to answer it with
        (0: a page) and the cursor's buffer, to keep until it is answered. An interrupt
        from the load is raised (inline) or kept for ``settled()``, its read failed."""
        me = _get_ident()
        inside = self.inside
        running = self.running
        with self.lock:
            running[me] = (_monotonic(), read, False)
        inside.load += 1
        try:
            if self.takes_until:
                result = self.load(read.cursor, read.limit, read.direction, until=read.until)
            elif read.until is not None:
                raise TypeError("a bounded read (until) reached a load that does not accept "
                                "until=")
            else:
                result = self.load(read.cursor, read.limit, read.direction)
        except BaseException as e:
            let_go = self._ended(me)
            inside.replaced = let_go and self.workers > 0
            if not _is_failure(e):
                if not inline:
                    with self.lock:
                        if self.interrupt is None:
                            self.interrupt = e
                    return _INTERRUPTED_CODE, None
                raise
            return self.failed(read, out, e, let_go), None
        finally:
            inside.load -= 1
        let_go = self._ended(me)
        inside.replaced = let_go and self.workers > 0
        return self.fill(read, out, result, let_go)

    def failed(self, read: Read, out: Any, e: BaseException, let_go: bool) -> int:
        """The status that answers ``read`` whose load raised ``e`` (a failure, not an
        interrupt): a TypeError is a bug in the load (a page over its limit, see
        :meth:`_bad_page`)."""
        if isinstance(e, TypeError):
            return self._bad_page(read, out, self._bad_load(read, e))
        if not let_go:
            self.last_error = e
            self.failures += 1
        return _FAIL_CODE

    def fill(self, read: Read, out: Any, result: Any, let_go: bool) -> Tuple[int, Any]:
        """Fills ``out`` with what the load of ``read`` returned (``let_go``: its read was let
        go of at the read timeout meanwhile): the status to answer it with (0: a page) and
        the cursor's buffer, to keep until it is answered."""
        if type(result) is not LoadResult or len(result.items) > read.limit:
            bad = self._check(read, result)
            if bad is not None:
                if isinstance(result, LoadResult):
                    # Over its limit: the engine gives the page back and reports it.
                    self.bad = bad
                    self.last_error = bad
                    _log.error("libloader feed: %s", bad)
                else:
                    if let_go:
                        return _FAIL_CODE, None
                    return self._bad_page(read, out, bad), None
        cursor = result.next_cursor
        if type(cursor) is not bytes:
            cursor = bytes(cursor)
        if len(cursor) > MAX_CURSOR_LEN and not let_go:
            too_long = ValueError(f"the load function {self.load_name} returned a next_cursor of "
                             f"{len(cursor)} bytes for {_describe(read)}, longer than "
                             f"MAX_CURSOR_LEN ({MAX_CURSOR_LEN})")
            too_long.__cause__ = error_for(Result.CURSOR_TOO_LONG, result_message,
                                           "loader_feed_complete_next_job")
            self.bad = too_long
            self.last_error = too_long
            _log.error("libloader feed: %s", too_long)
        elif cursor == read.cursor and not result.end_of_source:
            self.stall = self._stall_message(read, result)
        before = cursor if read.direction is Direction.BACKWARD else read.cursor
        token = next(self.tokens)
        self.host.held[token] = _Acquisition(before, result)
        buf, n = _ffi.cursor_arg(cursor)
        out.acquisition = token
        out.count = len(result.items)
        out.next_cursor = buf   # the array as the pointer field (ctypes keeps it referenced)
        out.next_cursor_len = n
        out.end_of_source = result.end_of_source
        return 0, buf

    def _ended(self, me: int) -> bool:
        """The load on thread ``me`` returned; whether it had been let go of."""
        with self.lock:
            started = self.running.pop(me, None)
        return started is not None and started[2]

    def _bad_page(self, read: Read, out: Any, bad: Exception) -> int:
        """A bug in the load (a TypeError, a result that is not a LoadResult): answered as a
        page over its read's limit, which the engine does not retry until the user acts
        (and gives back at once: the acquisition holds nothing)."""
        self.bad = bad
        self.last_error = bad
        _log.error("libloader feed: %s", bad)
        token = next(self.tokens)
        self.host.held[token] = _Acquisition(read.cursor, None)
        out.acquisition = token
        out.count = read.limit + 1
        out.next_cursor = None
        out.next_cursor_len = 0
        out.end_of_source = False
        return 0

    def _check(self, read: Read, result: Any) -> Optional[TypeError]:
        """Why ``result`` cannot answer ``read`` (a TypeError naming the load), or None."""
        if not isinstance(result, LoadResult):
            name = type(result).__name__
            if inspect.iscoroutine(result):
                result.close()   # never awaited: no "never awaited" warning on top
                return TypeError(
                    f"the load function {self._load_name} returned a coroutine for "
                    f"{_describe(read)}: it is an async def (or returns an awaitable), which "
                    "the threaded Feed does not await. Use libloader.aio.Feed, or return a "
                    "LoadResult")
            return TypeError(
                f"the load function {self._load_name} returned {name} for {_describe(read)}, "
                "not a LoadResult: return LoadResult(items, next_cursor, end_of_source)")
        n = len(result.items)
        if n > read.limit:
            return TypeError(
                f"the load function {self._load_name} returned {n} items for "
                f"{_describe(read)}, more than its limit of {read.limit}")
        return None

    def _bad_load(self, read: Read, error: TypeError) -> TypeError:
        """A TypeError the load raised, as one naming the load (the original its cause)."""
        bad = TypeError(f"the load function {self._load_name} raised TypeError for "
                        f"{_describe(read)}: {_text(error)}")
        bad.__cause__ = error
        return bad

    def _stall_message(self, read: Read, result: LoadResult[Any]) -> str:
        what = (f"with {len(result.items)} items" if result.items
                else "with no items and end_of_source false")
        side = "before the first item" if read.direction is Direction.BACKWARD else \
            "after the last item"
        return (f"the load function {self._load_name} answered {_describe(read)} {what} and "
                f"next_cursor {bytes(result.next_cursor)!r}, the cursor it was given: a "
                "stalled cursor, and the feed cannot move past it. Return the cursor "
                f"{side} the load looked at (it must move), or end_of_source=True at the "
                "source's end; the feed retries after the backoff, and retry() tries again "
                "at once")

    @property
    def _load_name(self) -> str:
        return self.load_name

    # ---- the jobs out ----

    def took(self) -> None:
        """A Python thread took a job: the engine stays registered (its ``release`` reaches
        this engine) until every job taken is answered, after the free too."""
        with self.lock:
            self.out += 1

    def answer(self, token: int, status: int, out: Any) -> None:
        """``loader_feed_complete_job``; a page the engine did not take (the job was answered
        already) is released here."""
        rc = self.lib.loader_feed_complete_job(token, status,
                                               ctypes.byref(out) if status == 0 else None)
        self.answered(rc, status, out)

    def answered(self, rc: int, status: int, out: Any) -> None:
        """After a job's answer: one job fewer out (the next one an answer took is counted
        by :meth:`took` as any other), and the page back to the user if nothing was
        answered."""
        if rc in (Result.STALE_HANDLE, Result.INVALID_HANDLE, Result.NULL_POINTER):
            if status == 0:
                self.released(int(out.acquisition))
        with self.lock:
            self.out -= 1
            gone = self.freed and self.out == 0
        if gone:
            _ENGINES.pop(self.host.key, None)

    # ---- the loads let go of at the read timeout ----

    def look_overdue(self) -> None:
        """The loads on Python's threads running past the read timeout: the engine let go
        of their reads (and retries them); each stuck thread gets a replacement, so the
        feed keeps ``workers`` threads free to load, and the load's error is the
        :class:`TimeoutError` the user reads."""
        limit = self.read_timeout_ms
        if not limit:
            return
        now = time.monotonic()
        late: List[Read] = []
        try:
            timed_out = int(_feed_counts(self.lib, self.handle).timed_out)
        except Exception:
            timed_out = self.timed_out_seen   # freed meanwhile
        with self.lock:
            # The engine's count of loads it let go of: that many more of the oldest loads
            # running are let go of, though this thread's clock, which started when the
            # thread had the GIL back after taking the read, may not say so yet.
            fresh = timed_out - self.timed_out_seen
            self.timed_out_seen = max(timed_out, self.timed_out_seen)
            for started, ident in sorted((started, ident) for ident, (started, _, gone)
                                         in self.running.items() if not gone):
                _, read, _ = self.running[ident]
                # A little early by the clock: the engine started its clock when the thread
                # took the read, a moment before this one's.
                due = now - started >= limit / 1000 - _TIMEOUT_SLACK_S
                counted = fresh > 0 and now - started >= limit / 2000
                if due or counted:
                    fresh -= 1
                    self.running[ident] = (started, read, True)
                    late.append(read)
        for read in late:
            self.last_error = TimeoutError(
                f"the load function {self.load_name} ran past read_timeout_ms ({limit} ms) "
                f"for {_describe(read)}: its read was let go of (the backoff retries it on "
                "another thread), and its result is released when it returns")
            self.failures += 1
            if self.workers and self.executor is None:
                self.start_thread()

    def let_go_says(self) -> Optional[str]:
        with self.lock:
            ids = sorted(r.read_id for _, r, gone in self.running.values() if gone)
        if not ids:
            return None
        limit = self.read_timeout_ms
        if len(ids) == 1:
            return (f"the load of read {ids[0]} ran past read_timeout_ms ({limit} ms) and was "
                    "let go of: it still runs, and its result is released when it returns")
        return (f"the loads of reads {', '.join(map(str, ids))} ran past read_timeout_ms "
                f"({limit} ms) and were let go of: they still run, and their results are "
                "released when they return")

    # ---- Python's threads ----

    def start_thread(self) -> None:
        t = threading.Thread(target=_work, args=(self,), name="libloader-feed", daemon=True)
        with self.lock:
            self.threads = [x for x in self.threads if x.is_alive()]
            self.threads.append(t)
        t.start()



def _no_issue(read: Read) -> None:  # pragma: no cover - the engine issues, not Python
    raise RuntimeError("the feed's engine issues its reads")


def _no_release(acq: _Acquisition) -> None:  # pragma: no cover - released by _Engine
    pass


_get_ident = threading.get_ident
_monotonic = time.monotonic
_JOB_READ_OFFSET = _ffi.loader_feed_job.read.offset
"""Where a job's read lies in ``loader_feed_job``: read in place, without a field object."""


def _work(engine: _Engine) -> None:
    """A Python thread of the threaded feed: one of the engine's workers (hosted mode). It
    takes a read, runs the user's load, answers it and takes the next in one call, until
    the feed is freed."""
    lib = engine.lib
    h = engine.handle
    job = _ffi.loader_feed_job()
    out = _ffi.loader_load_result()
    job_ref, out_ref = ctypes.byref(job), ctypes.byref(out)
    read_at = ctypes.addressof(job) + _JOB_READ_OFFSET
    take, answer_next = lib.loader_feed_next_job, lib.loader_feed_complete_next_job
    rc = take(h, _JOB_WAIT_MS, job_ref)
    chained = False
    while True:
        if rc == Result.TIMED_OUT:
            engine.look_overdue()
            rc = take(h, _JOB_WAIT_MS, job_ref)
            continue
        if rc != Result.OK or job.token == 0:
            return   # the feed was freed
        if not chained:
            engine.took()
        try:
            status, _buf = engine.run(_read_from_c(read_at, 0), out, inline=False)
        except BaseException:  # pragma: no cover - run() keeps what a load raised
            status, _buf = _FAIL_CODE, None
        if engine.inside.replaced:
            # Its load was let go of at the read timeout, and another thread took its place.
            engine.answer(job.token, status, out)
            return
        rc = answer_next(job.token, status, out_ref if status == 0 else None, _JOB_WAIT_MS,
                         job_ref)
        # A job answered and the next one taken: as many out as before (answered + took).
        chained = rc == Result.OK and job.token != 0
        if not chained:
            engine.answered(rc, status, out)
        del _buf


def _pump(engine: _Engine) -> None:
    """The feed's thread with an executor: takes each read and hands its load to the
    executor, whose thread answers it; it runs no load itself."""
    lib = engine.lib
    h = engine.handle
    assert engine.executor is not None
    while True:
        job = _ffi.loader_feed_job()
        rc = lib.loader_feed_next_job(h, _JOB_WAIT_MS, ctypes.byref(job))
        if rc == Result.TIMED_OUT:
            engine.look_overdue()
            continue
        if rc != Result.OK or job.token == 0:
            return   # the feed was freed
        read = _read_from_c(ctypes.addressof(job.read), 0)
        engine.took()
        try:
            engine.executor.submit(_run_job, engine, job.token, read)
        except BaseException as e:
            # The executor refused it (shut down, say): the read fails, as a load's would.
            engine.last_error = e
            engine.failures += 1
            engine.answer(job.token, _FAIL_CODE, None)


def _run_job(engine: _Engine, token: int, read: Read) -> None:
    """On the executor's thread: the load of ``read``, and its answer."""
    out = _ffi.loader_load_result()
    try:
        status, buf = engine.run(read, out, inline=False)
    except BaseException:  # pragma: no cover - run() keeps what a load raised
        status, buf = _FAIL_CODE, None
    engine.answer(token, status, out)
    del buf


class _EngineFeed(Generic[T]):
    """What both feeds on the engine share (the threaded :class:`Feed` and
    :class:`libloader.aio.Feed`): the user's calls, the reads of the view and the state, the
    problems in Python's words, and the free. Each feed adds where its loads run, how it
    waits and how it closes (``_act``, ``settled``, ``changes``, ``close``)."""

    _name = "Feed"
    """The class as the user names it, in the sentences that tell them what to call."""
    _engine: "_Engine"
    _loader: "_FeedLoader"
    _closing: bool
    _compare: Optional[Callable[[bytes, bytes], int]]
    _takes_until: bool
    _load_name: str
    _max_auto_retries: Optional[int]
    _final_stats: Optional[Counts]
    _stats_at_close: Optional[Counts]
    _close_began: threading.Event
    _freed: threading.Event
    _closed: threading.Event

    def _open(self) -> None:
        """The close's fields, as a feed starts: not closing, no counters kept yet."""
        self._final_stats = None
        self._stats_at_close = None
        self._close_began = threading.Event()
        self._closed = threading.Event()
        self._freed = threading.Event()
        self._closing = False

    def _arguments(self, load: Callable[..., Any], load_name: str,
                   compare: Optional[Callable[[bytes, bytes], int]],
                   locate: Optional[Callable[[int], Optional[bytes]]],
                   on_release: Optional[Callable[..., Any]],
                   config: Optional[Config]) -> Tuple[Any, int]:
        """Checks the arguments both feeds take and keeps what the shared methods read:
        returns ``locate`` (the load function's own when none is given) and the read
        timeout in ms (the default's when the config leaves it unset)."""
        if compare is not None and not callable(compare):
            raise TypeError("compare must be callable or None")
        if locate is None:
            locate = getattr(load, "locate", None)   # a load function may carry its own
        if locate is not None and not callable(locate):
            raise TypeError("locate must be callable or None")
        if on_release is not None and not callable(on_release):
            raise TypeError("on_release must be callable or None")
        if config is not None and not isinstance(config, Config):
            raise TypeError("config must be a libloader.Config or None, not "
                            f"{type(config).__name__}")
        defaults = Config.defaults()
        retries = config.max_auto_retries if config is not None else None
        self._max_auto_retries = retries if retries is not None else defaults.max_auto_retries
        timeout_ms = config.read_timeout_ms if config is not None else None
        if timeout_ms is None:
            timeout_ms = defaults.read_timeout_ms
        self._compare = compare
        self._takes_until = _accepts_until(load)
        self._load_name = load_name
        return locate, timeout_ms or 0

    def _act(self, name: str, *args: Any) -> None:
        """A user's call on the engine (``loader_feed_<name>``), and what the feed does after
        it."""
        raise NotImplementedError

    _how_to_close = "call close(), or use `with Feed(...) as feed:`"
    """What the warning for a feed collected unclosed tells the user to do."""

    def __repr__(self) -> str:
        state = "closed" if self._closing else "open"
        return f"<libloader.{self._name} of {getattr(self, '_load_name', '?')} {state}>"

    def __del__(self) -> None:
        if getattr(self, "_closing", True):
            return
        try:
            warnings.warn(f"unclosed {self!r}: closing it now ({self._how_to_close})",
                          ResourceWarning, stacklevel=2)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
        try:
            self._collected()
        except BaseException:  # pragma: no cover - a closed loop, interpreter shutdown
            pass

    def _collected(self) -> None:
        """Frees the engine of a feed collected unclosed, without waiting."""
        self._free(0)

    # ---- what only Python knows ----

    @property
    def errors(self) -> List[BaseException]:
        """Exceptions the user's callbacks (``on_release``, ``on_change``) raised: each is
        also logged to the ``libloader.feed`` logger. Empty in a correct host."""
        return self._engine.errors

    @property
    def last_error(self) -> Optional[BaseException]:
        """The exception that failed the latest failed read: what a load raised, the
        TypeError of a result that is not a valid :class:`LoadResult`, or the TimeoutError
        of a load let go of at ``Config.read_timeout_ms``; None before any."""
        return self._engine.last_error

    @property
    def loader(self) -> "Loader[_Acquisition]":
        """The feed's loader, for introspection (``state``, ``stats()``, ``requests()``,
        ``view()``, ``explain()``). The feed's engine answers its reads and frees it."""
        return self._loader

    @contextmanager
    def _calling(self) -> Iterator[_FeedLoader]:
        if self._closing:
            raise RuntimeError("the feed is closed")
        try:
            yield self._loader
        except StaleHandleError:
            if self._closing:
                raise RuntimeError("the feed is closed") from None
            raise

    # ---- the user's calls ----

    def set_window(self, start: int, length: int) -> None:
        """Shows items ``[start, start + length)``: loads what is missing (and retries a
        recorded failure)."""
        self._act("set_window", _unsigned("start", start, 64), _unsigned("length", length, 64))

    def jump(self, cursor: bytes, position: int) -> None:
        """Rebuilds the view around the item just after ``cursor`` (``b""``: the source's
        start), numbered ``position``; the window moves to start there (its length kept).
        See :meth:`Loader.jump`."""
        raw = _cursor("cursor", cursor)
        pos = _unsigned("position", position, 64)
        ptr, n = _ffi.cursor_arg(raw)
        self._act("jump", ptr, n, pos)

    def invalidate(self) -> None:
        """The source changed: re-reads what the view shows. Call it after the change is
        visible to new loads (after the commit)."""
        self._act("invalidate")

    def invalidate_range(self, from_cursor: bytes, to_cursor: Optional[bytes]) -> None:
        """The source changed only between two positions: every changed row lies at a cursor
        ``k`` (the cursor just after it: its key) with ``from_cursor <= k <= to_cursor``;
        ``b""`` is the source's start, ``None`` its end. For one changed row, pass its cursor
        as both. Re-reads only the held pages the range touches, with bounded loads, and
        keeps the others (see :meth:`Loader.invalidate_range`, and the module documentation
        for what a bounded load returns). Call it after the change is visible to new loads.

        Needs ``compare=`` given to the feed and a load function that accepts ``until=``:
        TypeError otherwise, before anything changes."""
        if self._compare is None:
            raise TypeError("invalidate_range needs compare= given to the feed (a function "
                            "ordering two cursors as the source does)")
        if not self._takes_until:
            raise TypeError("invalidate_range needs a load function that accepts until= "
                            "(def load(cursor, limit, direction, until=None)): the repair "
                            "reads bounded")
        start = _cursor("from_cursor", from_cursor)
        end = None if to_cursor is None else _cursor("to_cursor", to_cursor)
        from_ptr, from_len = _ffi.cursor_arg(start)
        if end is None:
            to_ptr, to_len = None, 0         # NULL: the source's end
        elif end:
            to_ptr, to_len = _ffi.cursor_arg(end)
        else:
            to_ptr, to_len = (ctypes.c_uint8 * 1)(), 0   # not NULL, empty: the source's start
        self._act("invalidate_range", from_ptr, from_len, to_ptr, to_len)

    def appended(self) -> None:
        """Rows were added after the source's last row, and nothing else changed (a log
        line, a chat message, a row with a growing key). The cheap report of an append: the
        feed loads only the new rows, once the window wants the end (see
        :meth:`Loader.appended`). Call it after they are visible to new loads."""
        self._act("appended")

    def follow(self, on: bool = True) -> None:
        """Pins the window to the source's end, as ``tail -f``: it stays on the last rows
        as the source grows. Scrolling away (:meth:`set_window`) unpins it, scrolling back to
        the end pins it again, until ``follow(False)`` (see :meth:`Loader.follow`)."""
        if type(on) is not bool:
            raise TypeError(f"on: expected a bool, got {type(on).__name__}")
        self._act("follow", on)

    @property
    def following(self) -> bool:
        """Whether the window is pinned to the source's end now."""
        with self._calling() as loader:
            return loader.following

    def retry(self) -> bool:
        """Retries a recorded failure now. Returns whether a read started."""
        out = ctypes.c_bool(False)
        self._act("retry", out)
        return bool(out.value)

    @property
    def needs_retry(self) -> bool:
        """A failure is recorded and the automatic retries are spent: nothing loads again
        until :meth:`retry`, a window move or an invalidation."""
        return self._wait(0) == Result.RETRIES_SPENT

    @property
    def state(self) -> Snapshot:
        """The loader's state."""
        with self._calling() as loader:
            return loader.state

    def stats(self) -> Counts:
        """The loader's counters: reads by kind, answers, failures, retries, cancels. After
        :meth:`close`, the counters as the loader ended (every page released). From inside a
        load, ``on_release`` or ``on_change`` while the feed closes (the close may be waiting
        for that very call), the counters as the close began."""
        if self._closing:
            inside = self._engine.inside
            if inside.depth or inside.load:
                # The free releases pages on this thread, or waits for this load or callback
                # to return: it sets `_close_began` before either, and waits for nothing first.
                self._close_began.wait()
                kept = self._final_stats if self._final_stats is not None else \
                    self._stats_at_close
                if kept is None:
                    raise RuntimeError("the feed is closed, and its counters could not be read "
                                       "as the close began")
                return kept
            self._freed.wait()
            if self._final_stats is not None:
                return self._final_stats
        with self._calling() as loader:
            return loader.stats()

    def pages(self) -> List[FeedPage[T]]:
        """The view's pages, in source order."""
        with self._calling() as loader:
            view = loader.view()
        return [FeedPage(p.start, p.acquisition.cursor, p.acquisition.result)
                for p in view.pages if p.acquisition.result is not None]

    def items(self) -> List[T]:
        """The view's items, in source order."""
        return [x for p in self.pages() for x in p.result.items]

    def snapshot(self) -> FeedSnapshot[T]:
        """The view's items and the state, from one moment: taken again while another
        thread changed the loader in between (every change moves a counter)."""
        with self._calling() as loader:
            for _ in range(_LOOKS):
                s = loader.state
                view = loader.view()
                if loader.state == s:
                    break
        problem = None if _quiet(s) else self._problem()
        pages = [p for p in view.pages if p.acquisition.result is not None]
        return FeedSnapshot(
            items=[x for p in pages for x in p.acquisition.result.items],  # type: ignore
            start=pages[0].start if pages else s.covered_start,
            revalidating=s.revalidating, reads_in_flight=s.outstanding_reads,
            failed=s.failure is Failure.OWN, settled=_quiet(s), problem=problem)

    # ---- problems ----

    def _wait(self, timeout_ms: int) -> int:
        """``loader_feed_wait_quiescent``: OK, TIMED_OUT, or a problem's code."""
        if self._closing:
            raise RuntimeError("the feed is closed")
        rc: int = self._engine.lib.loader_feed_wait_quiescent(self._engine.handle, timeout_ms)
        if rc in (Result.STALE_HANDLE, Result.INVALID_HANDLE):
            raise RuntimeError("the feed is closed")
        return rc

    def _settled_by(self, rc: int) -> bool:
        """What a look at quiescence (``rc``, from :meth:`_wait`) means to ``settled()``:
        True when settled (an interrupt a load raised meanwhile is raised first), False to
        wait on; raises the problem that keeps the feed from settling until its user acts."""
        if rc == Result.OK:
            self._raise_interrupt()
            return True
        if rc != Result.TIMED_OUT:
            problem = self._problem(rc)
            if problem is not None:
                if problem.reason == "bad_load_result":
                    assert isinstance(problem.error, (TypeError, ValueError))
                    raise problem.error
                raise FeedStalledError(problem)
        return False

    def _problem(self, rc: Optional[int] = None) -> Optional[FeedProblem]:
        """The problem the engine reports now (or as ``rc``), in Python's words, with what
        the loader says."""
        self._engine.look_overdue()
        if rc is None:
            rc = self._wait(0)
        problem = self._problem_of(rc)
        if problem is None:
            return None
        return dataclasses.replace(problem, explanation=self._loader_says())

    def _problem_of(self, rc: int) -> Optional[FeedProblem]:
        engine = self._engine
        if rc in (Result.COUNT_OVER_LIMIT, Result.NULL_CURSOR, Result.CURSOR_TOO_LONG):
            bad = engine.bad or TypeError(
                f"the load function {self._load_name} returned a page the loader refused "
                f"({Result(rc).name})")
            return FeedProblem("bad_load_result",
                               f"{bad}. The feed does not retry a bug in the load: fix it, "
                               f"then call {self._name}.retry() or move the window", bad)
        if rc == Result.CURSOR_STALLED:
            return FeedProblem("cursor_stalled", engine.stall or (
                f"the load function {self._load_name} answered with the cursor it was "
                "given: a stalled cursor, and the feed cannot move past it"))
        if rc == Result.RETRIES_SPENT:
            last = engine.last_error
            cause = (f"; the last error was {type(last).__name__}: {_text(last)}"
                     if last is not None else "")
            return FeedProblem(
                "retries_spent",
                f"{engine.failures} loads failed in a row and the automatic retries "
                f"(Config.max_auto_retries = {self._max_auto_retries}) are spent{cause}. "
                "Nothing loads until the feed is told to: fix the cause, then call "
                f"{self._name}.retry() or move the window", last)
        return None

    def _loader_says(self) -> str:
        """The loader's explanation, naming this feed's methods, without the engine's own
        ``feed:`` lines (Python says what its loads do)."""
        with self._calling() as loader:
            said = loader.explain()
        said = said.replace("Loader.retry()", f"{self._name}.retry()")
        lines = [line for line in said.splitlines() if not line.startswith("feed:")]
        return "\n".join(lines)

    @property
    def problem(self) -> Optional[FeedProblem]:
        """Why the feed cannot settle until its user acts (a load result that is not valid,
        a stalled cursor, the automatic retries spent), or None."""
        return self._problem()

    def explain(self) -> str:
        """Why the feed waits, in plain sentences, one a line: the loader's
        (:meth:`Loader.explain <libloader.Loader.explain>`: ``"quiescent"``, the reads it
        waits for and how long ago each started, a repair running, a failure and what
        retries it), as of now (its times move while loads run or a retry waits), naming
        this feed's methods (``Feed.retry()``); then the loads let go of at
        ``Config.read_timeout_ms`` that still run, if any; then the problem that keeps the
        feed from settling until its user acts (:attr:`problem`), if any."""
        self._engine.look_overdue()
        lines = [self._loader_says()]
        let_go = self._engine.let_go_says()
        if let_go is not None:
            lines.append(let_go)
        problem = self._problem_of(self._wait(0))
        if problem is not None:
            lines.append(problem.message)
        return "\n".join(lines)

    # ---- waiting ----

    def _raise_interrupt(self) -> None:
        engine = self._engine
        if engine.interrupt is not None:
            with engine.lock:
                interrupt, engine.interrupt = engine.interrupt, None
            if interrupt is not None:
                raise interrupt

    # ---- closing ----

    def _free(self, timeout_ms: int) -> None:
        """Frees the engine (every page released; the loads still running waited for up to
        ``timeout_ms``, -1: as long as they take), keeping the loader's counters as they
        ended, and lets Python's threads end."""
        engine = self._engine
        lib = engine.lib
        self._closing = True
        try:
            try:
                before: Optional[Counts] = self._loader.stats()
            except BaseException:
                before = None
            self._stats_at_close = before
            self._close_began.set()
            left = ctypes.c_uint32(0)
            counts = _ffi.loader_feed_counts()
            counts.struct_size = ctypes.sizeof(counts)
            rc = lib.loader_feed_free_counted(engine.handle, timeout_ms, ctypes.byref(left),
                                              ctypes.byref(counts))
            if rc != Result.OK:
                engine.record(error_for(rc, result_message, "loader_feed_free_counted"),
                              "closing the feed")
            elif before is not None:
                # The pages' counters as the free left them: the engine's, which count the
                # same pages as the loader's (every page the loader accepted, every one it
                # released), exact once the free returned.
                self._final_stats = dataclasses.replace(
                    before, accepted=counts.accepted, released=counts.released_by_loader)
            with engine.lock:
                engine.freed = True
                # Jobs still out (a thread may have taken one it has not counted yet: the
                # engine's `running` says so) keep the engine registered until answered.
                gone = engine.out == 0 and (rc != Result.OK or counts.running == 0)
            if gone:
                _ENGINES.pop(engine.host.key, None)
            with engine.lock:
                engine.cond.notify_all()
            end = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
            for t in list(engine.threads):
                if t is not threading.current_thread():
                    t.join(None if end is None else max(end - time.monotonic(), 0))
        finally:
            self._close_began.set()
            self._freed.set()
            self._closed.set()


class Feed(_EngineFeed[T]):
    """A loader that runs ``load(cursor, limit, direction)`` (with ``until=`` if it takes
    it: see the module documentation) on worker threads.

    ``load`` returns a :class:`LoadResult` (at most ``limit`` items after ``cursor``, or
    before it for :attr:`Direction.BACKWARD`: see the module documentation) or raises: the
    read fails and the loader's backoff retries it, on a timer the feed drives (a TypeError,
    or a result that is not a valid LoadResult, is a bug in the load: reported, not
    retried). Only an ``Exception`` fails a read: a ``KeyboardInterrupt``, ``SystemExit`` or
    ``GeneratorExit`` in a load ends the wait it interrupts and reaches the caller (the call
    the load ran in with ``max_workers=0``, :meth:`settled` for a load on a worker thread).
    When the loader no longer needs a read (the source changed under it), the feed lets
    the read go at once and drops its load if it has not started; a load already running
    finishes and its result is released. ``on_release(result)`` gets every result a
    load returned, exactly once: when the view drops it, or at once if it was never used.
    ``on_change()`` runs after the view or the state changed, on whichever thread changed
    it, possibly inside the loader's callbacks: keep it short (it may call :meth:`items`).

    Where loads run: by default on up to ``max_workers`` daemon threads of the feed's own
    (a load's answer runs the next read on the same thread, so a scroll costs no thread
    switch per load). ``max_workers=0``: on the caller's thread, inside the call that needs
    them (:meth:`set_window`, :meth:`invalidate`, ...), and the backoff retries inside
    :meth:`settled` (and :meth:`changes`); no Python thread of the feed's own (the engine's
    clock thread serves the backoff and read timeouts). ``executor``: on that
    :class:`concurrent.futures.Executor` (the feed does not shut it down; its threads are
    its own: a ThreadPoolExecutor's are joined at exit); one thread of the feed's hands
    them the reads. All three are the same engine in hosted mode (see the module
    documentation).

    Any thread may call any method, except :meth:`close` from inside a load (RuntimeError);
    from inside ``on_release`` or ``on_change`` it closes without waiting for the answer
    that callback is part of. A context manager: ``with Feed(load) as feed:`` closes it on exit, and
    on an exception (Ctrl-C) without waiting for loads still running. A feed never closed
    warns (``ResourceWarning``) when collected, and releases its pages and threads then.

    ``compare(a, b)`` orders two non-empty cursors as the source does (negative, 0,
    positive); with a load that accepts ``until=`` it enables :meth:`invalidate_range`.

    ``locate(position)`` (or a ``locate`` attribute of the load function) returns the
    cursor whose next item is at ``position`` (the key of item ``position - 1``, ``b""``
    for 0), or None when unknown: a far :meth:`set_window` then starts there instead of
    walking (see :class:`~libloader.Loader`). It runs on the thread calling
    :meth:`set_window`, inside it.

    ``record=path`` records the feed's loader's run to that file, as
    ``Loader(record=path)`` does, for ``loader-check --replay``: a path that cannot be
    created raises :class:`~libloader.RecordFailedError` and makes no feed.

    ``load`` is typed ``Callable[[bytes, int, Direction], LoadResult[T]]``, so a type
    checker rejects a load of other parameters or result. A load that takes ``until``
    declares it with a default, ``until: Optional[bytes] = None``, as above: one that
    requires it runs (the feed reads the signature and passes it), but the type rejects it.
    """

    def __init__(self, load: Callable[[bytes, int, Direction], LoadResult[T]], *,
                 config: Optional[Config] = None,
                 executor: Optional[concurrent.futures.Executor] = None,
                 max_workers: int = 4,
                 on_release: Optional[Callable[[LoadResult[T]], Any]] = None,
                 on_change: Optional[Callable[[], Any]] = None,
                 compare: Optional[Callable[[bytes, bytes], int]] = None,
                 locate: Optional[Callable[[int], Optional[bytes]]] = None,
                 record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        self._closing = True   # until the engine exists: __del__ then has nothing to do
        if on_change is not None and not callable(on_change):
            raise TypeError("on_change must be callable or None")
        if isinstance(max_workers, bool) or not isinstance(max_workers, int):
            raise TypeError(f"max_workers must be an int, not {type(max_workers).__name__}")
        if max_workers < 0:
            raise ValueError(f"max_workers must be at least 0, got {max_workers}")
        if executor is not None and not isinstance(executor, concurrent.futures.Executor):
            raise TypeError("executor must be a concurrent.futures.Executor or None, not "
                            f"{type(executor).__name__}")
        load_name = _check_load(load, "Feed()", True)
        locate, timeout_ms = self._arguments(load, load_name, compare, locate, on_release,
                                             config)
        self._inline = executor is None and max_workers == 0
        if executor is not None:
            workers = getattr(executor, "_max_workers", None) or 4
        else:
            workers = max(max_workers, 1)
        workers = min(int(workers), _MAX_WORKERS)
        engine = _Engine(self, load, self._takes_until, load_name, timeout_ms,
                         0 if self._inline else workers)
        engine.executor = executor
        engine.user_release = on_release
        engine.user_change = on_change
        engine.host.compare = compare
        engine.host.locate = locate
        with _keys_lock:
            engine.host.key = next(_keys)
        lib = engine.lib
        cfg = _ffi.loader_feed_config()
        cfg.struct_size = ctypes.sizeof(cfg)
        cfg.workers = workers
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
        rc = lib.loader_feed_new_hosted(ctypes.byref(cfg), ctypes.byref(handle))
        if rc != Result.OK:
            del _ENGINES[engine.host.key]
            raise error_for(rc, result_message, "loader_feed_new_hosted")
        engine.handle = handle.value
        engine.host.handle = handle.value
        self._engine = engine
        self._loader = _FeedLoader(engine.host, handle.value)
        _record_env.warn_if_unrecordable(stacklevel=2)
        if record is not None:
            rc = lib.loader_record(handle.value, os.fsencode(record))
            if rc != Result.OK:
                lib.loader_feed_free(handle.value, 0, None)
                del _ENGINES[engine.host.key]
                raise error_for(rc, result_message, "loader_record")
        self._open()
        if executor is not None:
            pump = threading.Thread(target=_pump, args=(engine,), name="libloader-feed",
                                    daemon=True)
            engine.threads.append(pump)
            pump.start()
        elif not self._inline:
            for _ in range(workers):
                engine.start_thread()

    def __enter__(self) -> "Feed[T]":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        # On an exception (Ctrl-C among them), loads still running are not waited for.
        self.close(timeout=None if exc_type is None else 0)

    def _act(self, name: str, *args: Any) -> None:
        """A user's call on the engine (``loader_feed_<name>``); with ``max_workers=0``,
        then the loads it made ready, here."""
        with self._calling() as loader:
            loader._call(f"loader_feed_{name}", *args)
        if self._inline:
            self._run_here(0)

    def _run_here(self, wait_ms: int) -> bool:
        """``max_workers=0``: runs here the jobs ready (waiting up to ``wait_ms`` for the
        first). An interrupt from a load is raised, its read failed. Returns whether one
        ran."""
        engine = self._engine
        lib = engine.lib
        job = _ffi.loader_feed_job()
        out = _ffi.loader_load_result()
        job_ref, out_ref = ctypes.byref(job), ctypes.byref(out)
        read_at = ctypes.addressof(job) + _JOB_READ_OFFSET
        answer_next = lib.loader_feed_complete_next_job
        rc = lib.loader_feed_next_job(engine.handle, wait_ms, job_ref)
        ran = chained = False
        while rc == Result.OK and job.token != 0:
            ran = True
            if not chained:
                engine.took()
            try:
                status, _buf = engine.run(_read_from_c(read_at, 0), out, inline=True)
            except BaseException:
                engine.answer(job.token, _INTERRUPTED_CODE, None)
                raise
            rc = answer_next(job.token, status, out_ref if status == 0 else None, 0, job_ref)
            # A job answered and the next one taken: as many out as before (answered + took).
            chained = rc == Result.OK and job.token != 0
            if not chained:
                engine.answered(rc, status, out)
            del _buf
        return ran

    def settled(self, timeout: Optional[float] = None) -> bool:
        """Waits until the feed is quiescent (no read outstanding, not revalidating, no
        failure); False if ``timeout`` seconds passed first.

        Raises what keeps the feed from settling until its user acts (:attr:`problem`): the
        TypeError of a load result that is not valid (naming the load function; a ValueError
        for a ``next_cursor`` over ``MAX_CURSOR_LEN``), or :class:`FeedStalledError` for a
        stalled cursor or spent automatic retries. Raises the ``KeyboardInterrupt``,
        ``SystemExit`` or ``GeneratorExit`` a load raised on a worker thread (once; its read
        was failed and is retried). With ``max_workers=0`` it also runs the loads the feed
        needs meanwhile (the backoff retries among them), and an interrupt in one is raised
        at once."""
        wait = _seconds("settled", timeout)
        end = None if wait is None else time.monotonic() + wait
        first = True
        while True:
            self._raise_interrupt()
            if not first:
                # Between the waits, as the workers do between theirs: a load is let go of
                # a poll's length after its timeout at most. Not before the first: taking the
                # engine's lock and counters there hands the GIL to the worker that a move
                # just woke, which hands it back.
                self._engine.look_overdue()
            first = False
            if self._inline:
                self._run_here(0)
            remaining = None if end is None else end - time.monotonic()
            step = _SETTLE_POLL_S if remaining is None else max(min(remaining, _SETTLE_POLL_S),
                                                                 0)
            rc = self._wait(0 if self._inline else int(step * 1000))
            if self._settled_by(rc):
                return True
            if remaining is not None and remaining <= 0:
                return False
            if self._inline:
                self._run_here(int(step * 1000))

    def changes(self, timeout: Optional[float] = None) -> Iterator[FeedSnapshot[T]]:
        """A snapshot now, then one after each change (several changes while the consumer
        was busy give one snapshot). A snapshot's :attr:`~FeedSnapshot.problem` says when
        the feed cannot settle until its user acts. Ends when the feed closes, or when
        ``timeout`` seconds pass without a change."""
        wait = _seconds("changes", timeout)
        engine = self._engine
        seen = None
        while True:
            with engine.lock:
                engine.change_waiters += 1
                try:
                    while engine.generation == seen and not self._closing:
                        if self._inline:
                            engine.lock.release()
                            try:
                                ran = self._run_here(int((wait or _SETTLE_POLL_S) * 1000))
                            finally:
                                engine.lock.acquire()
                            if not ran and wait is not None:
                                return
                        elif not engine.cond.wait(wait):
                            return
                finally:
                    engine.change_waiters -= 1
                if self._closing:
                    return
                seen = engine.generation
            try:
                snap = self.snapshot()
            except RuntimeError:
                if self._closing:
                    return   # closed between the check and the snapshot
                raise
            yield snap

    # ---- closing ----

    def close(self, timeout: Optional[float] = None) -> None:
        """Cancels the loads that have not started, closes the loader (every page goes to
        ``on_release``, once), waits up to ``timeout`` seconds (None: as long as it takes)
        for the loads still running, and stops the threads. A load that outlives
        ``timeout`` has its result released when it ends; its thread is a daemon, so it
        keeps nothing from exiting. Idempotent; a second caller waits for the first (up to
        its own ``timeout``). RuntimeError from inside a load or a callback of this feed:
        closing there would wait for itself."""
        wait = _seconds("close", timeout)
        if self._engine.inside.load:
            raise RuntimeError(
                "close() was called from inside the feed's load function: it would wait for "
                "that very load to end. Return from the load first, or close the feed from "
                "another thread (or task)")
        with self._engine.lock:
            first = not self._closing
            self._closing = True
        if not first:
            if not self._engine.inside.depth:   # a callback's close does not wait for it
                self._closed.wait(wait)
            return
        ms = -1 if wait is None else max(int(wait * 1000), 0)
        if self._engine.inside.depth:
            # From inside the feed's own callback: the engine frees without waiting for the
            # answer this thread is giving.
            self._free(ms)
            return
        # The free runs on a thread of its own, and this one waits for it in Python: an
        # interrupt (Ctrl-C) ends the wait, not the free, which finishes behind it (every
        # page released once the calls it waits for return).
        freeing = threading.Thread(target=self._free, args=(ms,),
                                   name="libloader-feed-close", daemon=True)
        freeing.start()
        try:
            while not self._freed.wait(_SETTLE_POLL_S if wait is None else wait + 1):
                pass
        finally:
            self._closed.set()


def _feed_counts(lib: Any, handle: int) -> Any:
    counts = _ffi.loader_feed_counts()
    counts.struct_size = ctypes.sizeof(counts)
    rc = _ffi.holding_gil("loader_feed_stats")(handle, ctypes.byref(counts))
    if rc != Result.OK:
        raise error_for(rc, result_message, "loader_feed_stats")
    return counts


_MAX_WORKERS = 256
"""``LOADER_FEED_MAX_WORKERS``."""
