"""The threaded :class:`~libloader.Feed`'s own worker threads: daemonic, started on demand,
and chaining a read onto the thread whose answer issued it.

Why not a :class:`concurrent.futures.ThreadPoolExecutor`: its threads are joined when the
interpreter exits, so one stuck load kept the process alive after ``close(timeout)``
returned, and Ctrl-C took several presses. These threads are daemons: a load still running
at exit is abandoned with the process.

Why chaining: the loader issues most reads one after another (a read's answer issues the
next), so a pool that queued each one would hand every load to another thread, and pay a
thread switch per load. Here the first read issued while a worker answers its own read is
kept for that worker (:meth:`Workers.submit` on a worker thread), which runs it as soon as
its answer returns; reads issued beside it (a repair's and a window move's) go to the queue,
for the other threads.

The pool holds its feed weakly: an idle worker keeps nothing alive, so a feed that is never
closed can still be collected (its finalizer then stops the pool).
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from typing import Any, Callable, Deque, List, Optional, Set

QUEUED, RUNNING, CANCELLED = 0, 1, 2

_IDLE_S = 30.0
"""An idle worker exits after this long without work; the next read starts another."""


class Job:
    """One read to load: what the feed's ``run`` gets. :meth:`cancel` stops it only while
    it is queued (or kept for a worker's chain); a running load runs to its end."""

    __slots__ = ("read", "state", "thread", "_pool")

    def __init__(self, read: Any, pool: "Workers") -> None:
        self.read = read
        self.state = QUEUED
        self.thread: Optional[threading.Thread] = None
        """The worker running it, once RUNNING."""
        self._pool = pool

    def cancel(self) -> bool:
        """Cancels the job if it has not started; returns whether it had not."""
        with self._pool._cond:
            if self.state == QUEUED:
                self.state = CANCELLED
                return True
            return self.state == CANCELLED


class _Chain(threading.local):
    """Per thread: whether it is a worker answering its own job, and the job kept for it."""

    chaining = False
    next: Optional[Job] = None


class Workers:
    """Daemon threads that run ``owner.<run>(job)`` for each job, ``owner`` held weakly."""

    def __init__(self, owner: object, run: Callable[[Any, Job], None], max_workers: int,
                 name: str) -> None:
        self._owner = weakref.ref(owner)
        self._run = run
        self._max = max_workers
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._queue: Deque[Job] = collections.deque()
        self._threads: List[threading.Thread] = []
        self._idle = 0
        self._running = 0
        self._stopped = False
        self._local = _Chain()
        self._gone: Set[threading.Thread] = set()
        """Workers whose load was let go of (:meth:`let_go`): out of the pool, each leaves
        when its load returns."""

    def let_go(self, job: Job) -> None:
        """``job``'s load ran past its timeout: its worker leaves the pool (it ends when the
        load returns), and another starts in its place if a job waits for one."""
        with self._cond:
            t = job.thread
            if job.state != RUNNING or t is None or t not in self._threads:
                return
            self._threads.remove(t)
            self._gone.add(t)
            if self._queue and not self._idle and not self._stopped:
                self._spawn()

    def _spawn(self) -> None:
        """Starts a worker; the lock is held."""
        t = threading.Thread(target=_work, args=(self,), name=self._name, daemon=True)
        self._threads.append(t)
        t.start()

    def submit(self, read: Any) -> Job:
        """Queues a job for ``read``. On one of these workers, while it answers its own job,
        the first job submitted is kept for it (it runs next, on the same thread)."""
        job = Job(read, self)
        local = self._local
        if local.chaining and local.next is None:
            local.next = job
            return job
        with self._cond:
            if self._stopped:
                raise RuntimeError("the feed's workers are stopped")
            self._queue.append(job)
            if self._idle > 0:
                self._cond.notify()
            elif len(self._threads) < self._max:
                self._spawn()
        return job

    def _take(self) -> Optional[Job]:
        """The next queued job (now RUNNING), or None when the pool stops or stays idle;
        then this thread leaves the pool, under the same lock, so that a job queued from
        now on starts a new thread."""
        me = threading.current_thread()
        with self._cond:
            if me in self._gone:
                self._gone.discard(me)   # let go of: it leaves
                return None
            while True:
                while self._queue:
                    job = self._queue.popleft()
                    if job.state == QUEUED:
                        job.state = RUNNING
                        job.thread = me
                        self._running += 1
                        return job
                if not self._stopped:
                    self._idle += 1
                    woken = self._cond.wait(_IDLE_S)
                    self._idle -= 1
                    if woken or self._queue:
                        continue
                self._leave()
                return None

    def _leave(self) -> None:
        """Removes the calling thread from the pool; the lock is held."""
        me = threading.current_thread()
        if me in self._threads:
            self._threads.remove(me)

    def _next(self, job: Optional[Job]) -> Optional[Job]:
        """After a job: the chained one (now RUNNING), or None, and the count kept."""
        with self._cond:
            me = threading.current_thread()
            if job is not None and job.state == QUEUED and me in self._gone:
                # Not for a worker let go of: to the queue, for the pool.
                self._queue.appendleft(job)
                if self._idle:
                    self._cond.notify()
                elif len(self._threads) < self._max and not self._stopped:
                    self._spawn()
                job = None
            if job is not None and job.state == QUEUED and not self._stopped:
                job.state = RUNNING
                job.thread = me
                return job
            if job is not None and job.state == QUEUED:
                job.state = CANCELLED
            self._running -= 1
            if self._running == 0:
                self._cond.notify_all()   # wait_idle
            return None

    def cancel_queued(self) -> None:
        """Cancels every job that has not started."""
        with self._cond:
            for job in self._queue:
                if job.state == QUEUED:
                    job.state = CANCELLED
            self._queue.clear()

    def wait_idle(self, deadline: Optional[float]) -> bool:
        """Waits until no job runs, or ``deadline`` (``time.monotonic()``) passed; returns
        whether none runs."""
        with self._cond:
            while self._running:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def stop(self) -> None:
        """No new job; idle workers exit, running ones after their job (and its chain)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    @property
    def threads(self) -> int:
        """Worker threads alive."""
        with self._cond:
            self._threads = [t for t in self._threads if t.is_alive()]
            return len(self._threads)


def _work(pool: Workers) -> None:
    """A worker: runs jobs, each followed by the job its answer chained to it. ``run`` never
    raises (the feed records what goes wrong); if it did, the job is counted as done and the
    thread ends with the exception."""
    local = pool._local
    try:
        while True:
            job = pool._take()
            if job is None:
                return
            while job is not None:
                owner = pool._owner()
                if owner is None:
                    pool._next(None)
                    return
                local.chaining, local.next = True, None
                try:
                    pool._run(owner, job)
                except BaseException:
                    pool._next(None)
                    raise
                finally:
                    local.chaining = False
                    del owner
                job = pool._next(local.next)
                local.next = None
    finally:
        with pool._cond:
            pool._leave()
