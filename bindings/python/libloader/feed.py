"""The :class:`Feed`: a :class:`~libloader.Loader` that runs the user's load function itself.

A host of the low-level :class:`~libloader.Loader` writes the same plumbing every time: start
a load for each read the loader issues, answer it exactly once (``settle`` with the page, or
``fail`` with the exception), answer a superseded read cheaply and abort its load, and call
``tick`` when the backoff timer is due. A :class:`Feed` does all of it. The user gives
``load(cursor, limit, direction)`` returning a :class:`LoadResult`; the feed runs loads on an
executor (a small thread pool by default), and the user moves the window, jumps, invalidates,
reads :meth:`Feed.items` and waits with :meth:`Feed.settled`.

What a load returns, by direction (:class:`~libloader.Direction`; cursors are positions
*between* items, ``b""`` the source's start):

* ``FORWARD``: at most ``limit`` items just after ``cursor``, in source order;
  ``next_cursor`` the position after the last one; ``end_of_source`` when no item follows.
* ``BACKWARD``: at most ``limit`` items just *before* ``cursor``, still in source order (the
  ones closest to the cursor); ``next_cursor`` the position just before the first one (a
  forward load from it returns these items first); ``end_of_source`` when the source's
  *start* was reached, and then ``next_cursor`` is ``b""``. A deep window's repairs, pages
  released by ``Config.max_pages`` and :meth:`~_FeedCore.jump` make backward reads.
* Bounded (``until`` not ``None``, always forward): the repair after
  :meth:`~_FeedCore.invalidate_range`. Return the items after ``cursor`` and at or before
  ``until`` (keyset: ``cursor < key <= until``), at most ``limit``; fewer than ``limit``
  means ``until`` or the source's end was reached (a load that filters rows keeps scanning
  until it has ``limit`` or reaches ``until``). ``next_cursor`` as for any forward load.

The feed passes ``until=`` (``None`` for an unbounded read) only to a load function that
accepts it (a parameter named ``until``, or ``**kwargs``), seen once from its signature:
``def load(cursor, limit, direction, until=None)``. Ranged invalidation needs such a load
and a ``compare(a, b)`` that orders two non-empty cursors as the source does.

:mod:`libloader.aio` has the same feed for asyncio; both share :class:`_FeedCore`, which owns
the reads, the answers and the gate that ``close`` shuts. The low-level loader is unchanged.
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Generic, Iterator, List, Optional, Sequence, Set,
                    TypeVar)

from .enums import Answer, Direction, Failure
from .loader import Loader
from .types import Config, Counts, Read, Snapshot

T = TypeVar("T")

_log = logging.getLogger("libloader.feed")

_RUNNING = object()
"""``Feed._armed`` while the timer thread is not waiting (it is about to look at the
deadline); otherwise ``_armed`` is the deadline it waits for, or None for none."""

_TIMER_HORIZON_S = 1.0
"""The longest the threaded feed's timer waits before it looks at the loader's deadline
again: a deadline that no failure announced is served at most this late."""

_FAIL_CODE = 1
"""The code ``fail`` gets for a failed load; the loader does not interpret it."""


@dataclass(frozen=True, eq=False)
class LoadResult(Generic[T]):
    """What a load function returns: one page of the source. Compared by identity: each one
    is a separate acquisition, handed to ``on_release`` exactly once."""

    items: Sequence[T]
    """At most ``limit`` items, in source order: right after the cursor for a forward load,
    right before it for a backward one."""
    next_cursor: bytes
    """Forward: the cursor after the last item. Backward: the cursor before the first item
    (``b""`` at the source's start). Where the next load that way starts."""
    end_of_source: bool = False
    """Forward: no item follows these. Backward: no item precedes them (the source's
    start)."""


@dataclass(frozen=True)
class FeedPage(Generic[T]):
    """One page of the view."""

    start: int
    """The offset of the page's first item, counted from where the view's numbering began."""
    cursor: bytes
    """The cursor just before the page's first item: where the forward load that produced it
    started, or where the backward one ended (its ``next_cursor``)."""
    result: LoadResult[T]
    """What the load returned."""


@dataclass(frozen=True)
class FeedSnapshot(Generic[T]):
    """The view and the loader's state, from one moment."""

    items: List[T]
    """The view's items, in source order."""
    start: int
    """The offset of ``items[0]``."""
    revalidating: bool
    """The source changed and the items shown are the old ones, until a re-read commits."""
    reads_in_flight: int
    """Reads issued and not yet answered."""
    failed: bool
    """An own failure is recorded: a retry (by the backoff timer or :meth:`Feed.retry`) is
    needed."""
    settled: bool
    """Quiescent: no read outstanding, not revalidating, no failure."""


class _Acquisition:
    """What the feed hands the loader for each answer: the user's result (``None`` for the
    empty answer to a cancelled read) and the cursor just before its first item."""

    __slots__ = ("cursor", "result")

    def __init__(self, cursor: bytes, result: Optional[LoadResult[Any]]) -> None:
        self.cursor = cursor
        self.result = result


class _Slot:
    """A read the loader issued and nobody has answered yet, and the job loading it."""

    __slots__ = ("read", "job")

    def __init__(self, read: Read) -> None:
        self.read = read
        self.job: Any = None


def _check(read: Read, result: Any) -> Optional[BaseException]:
    """Why ``result`` cannot answer ``read``, or None."""
    if not isinstance(result, LoadResult):
        return TypeError(f"load returned {type(result).__name__}, not a LoadResult")
    try:
        n = len(result.items)
    except TypeError:
        return TypeError("LoadResult.items has no len()")
    if n > read.limit:
        return ValueError(f"load returned {n} items for a limit of {read.limit}")
    if not isinstance(result.next_cursor, (bytes, bytearray, memoryview)):
        return TypeError(f"LoadResult.next_cursor must be bytes, not "
                         f"{type(result.next_cursor).__name__}")
    return None


class _FeedCore(Generic[T]):
    """What both feeds share: the loader, the unanswered reads, the answers, the gate.

    Every read is answered exactly once by whoever takes its slot out of ``_slots`` first:
    the job's done-callback (with the page, or ``fail`` for an exception or a cancellation
    the feed did not ask for), or the cancel hint (with an empty page, at once, whether or
    not the job ever starts). Answering from outside the job is what keeps a job cancelled
    before it ran from leaving its read unanswered.

    The gate: every loader call the feed makes runs between ``_enter`` and ``_exit``.
    ``close`` shuts the gate, waits until no call is inside, then closes the loader, so no
    answer can race the close; anything that arrives later is discarded (and its result
    released to the user)."""

    def __init__(self, load: Callable[..., Any], config: Optional[Config],
                 on_release: Optional[Callable[[LoadResult[T]], Any]],
                 compare: Optional[Callable[[bytes, bytes], int]] = None) -> None:
        if not callable(load):
            raise TypeError("load must be callable")
        if compare is not None and not callable(compare):
            raise TypeError("compare must be callable or None")
        self._takes_until = _accepts_until(load)
        self._compare = compare
        if on_release is not None and not callable(on_release):
            raise TypeError("on_release must be callable or None")
        self._load = load
        self._user_release = on_release
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._slots: Dict[int, _Slot] = {}
        self._jobs: Set[Any] = set()
        self._busy = 0
        self._closing = False
        self._closed = threading.Event()
        self._inside = threading.local()
        self._generation = 0
        self.errors: List[BaseException] = []
        """Exceptions the user's callbacks (``on_release``, ``on_change``) raised, and the
        feed's own loader calls that failed (the backoff timer's ``tick``, say): each is also
        logged to the ``libloader.feed`` logger. Empty in a correct host."""
        self.last_error: Optional[BaseException] = None
        """The exception that failed the latest failed read (a load raised, or returned
        something that is not a valid :class:`LoadResult`)."""
        self._loader = Loader(self._on_issue, self._on_release, on_change=self._on_change,
                              on_cancel=self._on_cancel, config=config, compare=compare)

    # ---- what each feed provides ----

    def _start(self, read: Read) -> Any:
        """Starts loading ``read``; returns the job (a future or a task)."""
        raise NotImplementedError

    def _now_ms(self) -> int:
        """The monotonic clock the loader's backoff runs on, in ms."""
        raise NotImplementedError

    def _signal(self, changed: bool, urgent: bool = False) -> None:
        """Something happened (``changed``: the view or the state): wake the waiters and
        re-arm the backoff timer. ``urgent``: a failure or a stall was recorded, so the
        loader may have a deadline earlier than any it had (a backoff)."""
        raise NotImplementedError

    def _call_load(self, read: Read) -> Any:
        """Runs the user's load for ``read``, passing ``until`` when the load accepts it."""
        if self._takes_until:
            return self._load(read.cursor, read.limit, read.direction, until=read.until)
        if read.until is not None:
            # Only a ranged repair reads bounded, and invalidate_range refuses such a load;
            # answering unbounded would hand the loader items past the range.
            raise TypeError("a bounded read (until) reached a load that does not accept "
                            "until=")
        return self._load(read.cursor, read.limit, read.direction)

    # ---- the gate ----

    def _enter(self) -> bool:
        with self._lock:
            if self._closing:
                return False
            self._busy += 1
        self._inside.depth = getattr(self._inside, "depth", 0) + 1
        return True

    def _exit(self) -> None:
        self._inside.depth -= 1
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                self._cond.notify_all()

    @contextmanager
    def _calling(self) -> Iterator["Loader[_Acquisition]"]:
        """A user's call: through the gate, or RuntimeError once the feed is closing."""
        if not self._enter():
            raise RuntimeError("the feed is closed")
        try:
            yield self._loader
        finally:
            self._exit()

    def _shut(self) -> bool:
        """Shuts the gate and waits until no call is inside. False if it was already shut."""
        if getattr(self._inside, "depth", 0):
            raise RuntimeError("close() called from inside the feed's own call or callback")
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            while self._busy:
                self._cond.wait()
        return True

    def _record(self, e: BaseException, where: str) -> None:
        self.errors.append(e)
        _log.error("libloader feed: %s raised %s: %s", where, type(e).__name__, e,
                   exc_info=e)

    # ---- the loader's callbacks (they never raise) ----

    def _on_issue(self, read: Read) -> None:
        slot = _Slot(read)
        with self._lock:
            self._slots[read.read_id] = slot
            if self._closing:
                return   # the loader is being closed: it hints this read cancelled
        try:
            slot.job = self._start(read)
        except BaseException as e:   # the executor is shut down, say: the read fails
            self._finish(read.read_id, error=e)

    def _on_cancel(self, read_id: int) -> None:
        with self._lock:
            closing = self._closing
            slot = self._slots.get(read_id) if closing else self._slots.pop(read_id, None)
        if slot is None:
            return   # already answered: the hint was queued before the answer
        if slot.job is not None:
            slot.job.cancel()
        if closing:
            return   # the loader is closed: nothing to answer
        read = slot.read
        try:
            # Empty, with the end flag so the answer is neither a cursor stall nor a step
            # that asks for another read: the cheapest stale answer there is.
            self._loader.settle(read, _Acquisition(read.cursor, None), count=0,
                                next_cursor=read.cursor, end_of_source=True)
        except BaseException as e:
            self._record(e, f"the empty answer to cancelled read {read_id}")
        self._signal(False)

    def _on_release(self, acq: _Acquisition) -> None:
        if acq.result is not None:
            self._release(acq.result)

    def _on_change(self) -> None:
        self._signal(True)

    # ---- answers ----

    def _job_done(self, read_id: int, job: Any) -> None:
        """A job's done-callback: it runs however the job ended, even cancelled unstarted."""
        with self._lock:
            self._jobs.discard(job)
        try:
            result = job.result()
        except BaseException as e:
            # A cancellation the feed did not ask for (a hint takes the slot first) fails
            # the read like an exception: the read is still wanted.
            self._finish(read_id, error=e)
        else:
            self._finish(read_id, result=result)

    def _finish(self, read_id: int, result: Any = None,
                error: Optional[BaseException] = None) -> None:
        """Answers read ``read_id`` with a load's outcome, unless it was answered already."""
        if not self._enter():
            self._discard(result)
            return
        urgent = True   # unless the answer below is a page the loader took as it is
        try:
            with self._lock:
                slot = self._slots.pop(read_id, None)
            if slot is None:
                self._discard(result)   # its read was answered when it was cancelled
                return
            read = slot.read
            if error is None:
                error = _check(read, result)
                if error is not None:
                    self._discard(result)
            if error is None:
                try:
                    # The page's cursor is the one just before its first item.
                    before = (bytes(result.next_cursor) if read.direction is Direction.BACKWARD
                              else read.cursor)
                    answer = self._loader.settle(read, _Acquisition(before, result),
                                                 count=len(result.items),
                                                 next_cursor=bytes(result.next_cursor),
                                                 end_of_source=bool(result.end_of_source))
                    # A stalled answer records a failure, with its backoff deadline.
                    urgent = answer is Answer.CURSOR_STALLED
                    return
                except BaseException as e:   # refused (a cursor too long): still ours
                    self._discard(result)
                    error = e
            self.last_error = error
            # The backoff is timed from the loader's clock: bring it up to now first.
            self._loader.tick(self._now_ms())
            self._loader.fail(read, _FAIL_CODE)
        except BaseException as e:
            self._record(e, f"answering read {read_id}")
        finally:
            self._exit()
            self._signal(False, urgent)

    def _discard(self, result: Any) -> None:
        """A result the loader never got: it goes back to the user here, instead."""
        if isinstance(result, LoadResult):
            self._release(result)

    def _release(self, result: LoadResult[T]) -> None:
        if self._user_release is None:
            return
        try:
            self._user_release(result)
        except BaseException as e:
            self._record(e, "on_release")

    # ---- the user's calls ----

    @property
    def loader(self) -> "Loader[_Acquisition]":
        """The loader, for introspection (``state``, ``stats()``, ``requests()``). Answering
        its reads or closing it directly breaks the feed."""
        return self._loader

    def set_window(self, start: int, length: int) -> None:
        """Shows items ``[start, start + length)``: loads what is missing (and retries a
        recorded failure)."""
        with self._calling() as loader:
            loader.set_window(start, length)
        self._signal(False)

    def jump(self, cursor: bytes, position: int) -> None:
        """Rebuilds the view around the item just after ``cursor`` (``b""``: the source's
        start), numbered ``position``; the window moves to start there (its length kept).
        See :meth:`Loader.jump`."""
        with self._calling() as loader:
            loader.jump(cursor, position)
        self._signal(False)

    def invalidate(self) -> None:
        """The source changed: re-reads what the view shows. Call it after the change is
        visible to new loads (after the commit)."""
        with self._calling() as loader:
            loader.invalidate()
        self._signal(False)

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
        with self._calling() as loader:
            loader.invalidate_range(from_cursor, to_cursor)
        self._signal(False)

    def retry(self) -> bool:
        """Retries a recorded failure now. Returns whether a read started."""
        with self._calling() as loader:
            started = loader.retry()
        self._signal(False)
        return started

    @property
    def needs_retry(self) -> bool:
        """A failure is recorded and the automatic retries are spent: nothing loads again
        until :meth:`retry`, a window move or an invalidation."""
        with self._calling() as loader:
            return loader.state.failure is Failure.OWN and loader.next_deadline() is None

    @property
    def state(self) -> Snapshot:
        """The loader's state."""
        with self._calling() as loader:
            return loader.state

    def stats(self) -> Counts:
        """The loader's counters: reads by kind, answers, failures, retries, cancels."""
        with self._calling() as loader:
            return loader.stats()

    def pages(self) -> List[FeedPage[T]]:
        """The view's pages, in source order."""
        with self._calling() as loader:
            view = loader.view()
        pages: List[FeedPage[T]] = []
        for p in view.pages:
            # Only answers with items enter the view, and those always carry a result.
            result = p.acquisition.result
            if result is not None:
                pages.append(FeedPage(p.start, p.acquisition.cursor, result))
        return pages

    def items(self) -> List[T]:
        """The view's items, in source order."""
        return [x for p in self.pages() for x in p.result.items]

    def snapshot(self) -> FeedSnapshot[T]:
        """The view's items and the state, from one moment: taken again while another
        thread changed the loader in between (every change moves a counter)."""
        for _ in range(100):
            s = self.state
            pages = self.pages()
            if self.state == s:
                break
        return FeedSnapshot(items=[x for p in pages for x in p.result.items],
                            start=pages[0].start if pages else s.covered_start,
                            revalidating=s.revalidating,
                            reads_in_flight=s.outstanding_reads,
                            failed=s.failure is Failure.OWN, settled=_quiet(s))

    def _is_settled(self) -> bool:
        return _quiet(self.state)


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


class Feed(_FeedCore[T]):
    """A loader that runs ``load(cursor, limit, direction)`` (with ``until=`` if it takes
    it: see the module documentation) on an executor.

    ``load`` returns a :class:`LoadResult` (at most ``limit`` items after ``cursor``, or
    before it for :attr:`Direction.BACKWARD`: see the module documentation) or raises: the
    read fails and the loader's backoff retries it, on a timer the feed drives.
    When the loader no longer needs a read (the source changed under it), the feed answers
    the read at once and cancels its load if it has not started; a load already running
    finishes and its result is released. ``on_release(result)`` gets every result a load
    returned, exactly once: when the view drops it, or at once if it was never used.
    ``on_change()`` runs after the view or the state changed, on whichever thread changed
    it, possibly inside the loader's callbacks: keep it short (it may call :meth:`items`).

    ``executor`` defaults to a pool of ``max_workers`` threads that the feed shuts down on
    close. Any thread may call any method, except :meth:`close` from inside a load or a
    callback. A context manager: ``with Feed(load) as feed:`` closes it on exit.

    ``compare(a, b)`` orders two non-empty cursors as the source does (negative, 0,
    positive); with a load that accepts ``until=`` it enables :meth:`invalidate_range`.
    """

    def __init__(self, load: Callable[..., LoadResult[T]], *,
                 config: Optional[Config] = None,
                 executor: Optional[concurrent.futures.Executor] = None,
                 max_workers: int = 4,
                 on_release: Optional[Callable[[LoadResult[T]], Any]] = None,
                 on_change: Optional[Callable[[], Any]] = None,
                 compare: Optional[Callable[[bytes, bytes], int]] = None) -> None:
        if on_change is not None and not callable(on_change):
            raise TypeError("on_change must be callable or None")
        self._user_change = on_change
        self._t0 = time.monotonic()
        self._wake = False
        self._owns_executor = executor is None
        self._executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers, thread_name_prefix="libloader-feed")
        try:
            super().__init__(load, config, on_release, compare)
        except BaseException:
            if self._owns_executor:
                self._executor.shutdown(wait=False)
            raise
        # The timer thread waits on its own condition (over the same lock), and is woken only
        # when it may have something to do: waking it at every change cost each answer a
        # thread switch and a GIL hand-off.
        self._timer_cond = threading.Condition(self._lock)
        self._armed: object = _RUNNING
        self._driver = threading.Thread(target=self._drive, name="libloader-feed-timer",
                                        daemon=True)
        self._driver.start()

    def __enter__(self) -> "Feed[T]":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self, read: Read) -> concurrent.futures.Future:  # type: ignore[type-arg]
        job = self._executor.submit(self._call_load, read)
        with self._lock:
            self._jobs.add(job)
        job.add_done_callback(functools.partial(self._job_done, read.read_id))
        return job

    def _now_ms(self) -> int:
        return int((time.monotonic() - self._t0) * 1000)

    def _signal(self, changed: bool, urgent: bool = False) -> None:
        with self._lock:
            if changed:
                self._generation += 1
            self._cond.notify_all()
            # The timer is woken only for a failure or a stall, whose backoff deadline may
            # come before the one it waits for. The only other deadline, a superseded read's
            # timeout, is rare here (the feed answers a read as soon as it is hinted) and
            # the timer looks at least every _TIMER_HORIZON_S anyway.
            if self._armed is _RUNNING:
                self._wake = True   # it is looking: it looks again before it waits
            elif urgent:
                self._wake = True
                self._timer_cond.notify()
        if changed and self._user_change is not None:
            try:
                self._user_change()
            except BaseException as e:
                self._record(e, "on_change")

    def _drive(self) -> None:
        """The timer thread: calls ``tick`` when the loader's backoff deadline is due."""
        while True:
            if not self._enter():
                return
            try:
                deadline = self._loader.next_deadline()
                now = self._now_ms()
                if deadline is not None and deadline <= now:
                    self._loader.tick(now)
                    deadline = -1   # look again at once
            except BaseException as e:
                self._record(e, "the backoff timer")
                deadline = None
            finally:
                self._exit()
            with self._lock:
                if self._closing:
                    return
                if deadline != -1 and not self._wake:
                    # A signal since next_deadline() set _wake: then look again at once.
                    self._armed = deadline
                    wait = (_TIMER_HORIZON_S if deadline is None
                            else min((deadline + 1 - self._now_ms()) / 1000, _TIMER_HORIZON_S))
                    self._timer_cond.wait(wait)
                self._armed = _RUNNING
                self._wake = False

    def settled(self, timeout: Optional[float] = None) -> bool:
        """Waits until the feed is quiescent (no read outstanding, not revalidating, no
        failure); False if ``timeout`` seconds passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                seen = self._generation, self._busy
            if self._is_settled():
                return True
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            with self._lock:
                if (self._generation, self._busy) == seen and not self._closing:
                    # Every answer signals; the cap covers one that changed no counter.
                    self._cond.wait(0.05 if remaining is None else min(remaining, 0.05))

    def changes(self, timeout: Optional[float] = None) -> Iterator[FeedSnapshot[T]]:
        """A snapshot now, then one after each change (several changes while the consumer
        was busy give one snapshot). Ends when the feed closes, or when ``timeout`` seconds
        pass without a change."""
        seen = None
        while True:
            with self._lock:
                while self._generation == seen and not self._closing:
                    if not self._cond.wait(timeout):
                        return
                if self._closing:
                    return
                seen = self._generation
            try:
                snap = self.snapshot()
            except RuntimeError:
                if self._closing:
                    return   # closed between the check and the snapshot
                raise
            yield snap

    def close(self, timeout: Optional[float] = None) -> None:
        """Cancels the loads that have not started, waits (up to ``timeout`` seconds) for
        those running, closes the loader (every page goes to ``on_release``, once) and stops
        the timer. A load that outlives ``timeout`` has its result released when it ends.
        Idempotent; a second caller waits for the first."""
        if not self._shut():
            self._closed.wait()
            return
        try:
            try:
                self._loader.close()   # hints every unanswered read: their jobs are cancelled
            except BaseException as e:
                self._record(e, "closing the loader")
            with self._lock:
                jobs = list(self._jobs)
                self._cond.notify_all()
                self._timer_cond.notify_all()
            for job in jobs:
                job.cancel()
            concurrent.futures.wait(jobs, timeout)
            self._driver.join()
            if self._owns_executor:
                self._executor.shutdown(wait=timeout is None)
        finally:
            self._closed.set()
