"""Events per second through the Python bindings: the :class:`libloader.Loader` and the
:class:`libloader.Feed`, beside the same host on bare ctypes and a bare ctypes call, all timed
in the same run.

The stream's host: a 100-page view of 50-item pages over a virtual source (a cursor is the
8-byte big-endian position), callbacks that only record (issue queues the read, release
counts, cancel marks the read). Each event is one call: an invalidation arrives every 20
events, a window move every 20 (offset by 10) alternates between one page past the covered
end (a finite read) and back to 100 pages, and the rest are answers to the oldest pending
read (current or stale, as the loader classifies them; a cancelled finite read is failed
instead). Once the view has grown past 110 pages, the window stays at 100 pages and the next
read an invalidation overtook is failed, which rebuilds the view at 100 pages through a full
read. As in the Rust stream (benches/common/stream.rs), an invalidation waits while a chain is
past its first step or a full read runs, so each repair reaches its commit and releases the
view it replaces. The realized mix and the releases per event are printed.

The same host runs twice: on the bindings (:class:`LoaderHost`) and on bare ctypes
(:class:`BareHost`: the header's functions called directly, plain ``CFUNCTYPE`` callbacks,
no checks). Both make the same calls and must end with the same counts (checked). The
difference per event is what the bindings add: the target is at most 3 us. The single floor
call, ``loader_version()`` (no argument, a static string), is what any call from Python into
the library costs at least; ``loader_state`` (the handle looked up, a struct copied out) is
timed beside it.

The Feed's workload (:class:`FeedScroll`) scrolls a 100-page window down one page per step
and invalidates every 20 steps; an event there is one load the feed ran and answered. It runs
with loads on the caller's thread (``max_workers=0``: the feed's own cost, the caller taking
each load from the engine inside its own calls) and on the default 4 worker threads (wall
clock: thread hand-offs included).

The Feed over SQLite (:func:`sqlite_feed`): a table of ``SQL_ROWS`` rows read with a 50-row
keyset query, a window of ``SQL_MOVE`` pages moved down that far per step (a chain of
``SQL_MOVE`` loads, then ``settled()``), beside a bare loop calling the same load function
``SQL_MOVE`` times per step. The threaded Feed (its worker threads, and ``max_workers=0``:
loads on the caller's thread) and :class:`libloader.aio.Feed` (beside a bare ``await`` loop)
run side by side, and so does the floor any feed pays: a :class:`libloader.Loader` answered
synchronously on the caller, with no feed. Beside them, with no library at all, the least a
worker thread costs: one Python thread of the host's own, handed each step's
``SQL_MOVE`` loads through a queue while the caller waits on an event, the pages kept until
the next step (:func:`pool_moves`). Each is a ratio to the bare loop timed just before it, in
process CPU time (every thread's) and wall clock; the target is 1.5 for the feeds.

Each repetition times every part once; figures are medians over the repetitions, and ratios
are medians of per-repetition ratios. Times are this thread's CPU time
(``time.thread_time_ns``), so time the scheduler gave to other processes on a shared machine
is not counted; wall-clock rates are printed too.

    LIBLOADER_PATH=$PWD/target/release/libloader.so .venv/bin/python \\
        bindings/python/bench_events.py [--quick] [--sqlite] [--run loader|bare|feed N]

``--sqlite`` runs only the Feed-over-SQLite part.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import queue
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

import libloader
from libloader import Answer, Direction, Kind, LoadResult, Read, _ffi, aio

PAGE = 50
PAGES = 100
SLACK = 10
"""Past ``PAGES + SLACK`` pages the window stays at ``PAGES`` and the host fails the next
superseded read, which sends the view through a full read of that window."""
REPS = 5
TARGET_US = 3.0
"""The binding may add at most this much per event over the bare ctypes floor."""


class Host:
    """The stream's host; ``run(n)`` makes ``n`` calls. The calls into the library go through
    five methods (``_settle``, ``_fail``, ``_invalidate``, ``_set_window``, ``_covered``),
    which :class:`LoaderHost` implements with the bindings and :class:`BareHost` with bare
    ctypes calls: the rest of the host, and so its own cost, is the same code in both."""

    def __init__(self) -> None:
        # (read, [cancelled, overtaken by an invalidation])
        self.pending: List[Tuple[Any, List[bool]]] = []
        self.by_id: Dict[int, List[bool]] = {}
        self.releases = 0
        self.counts = {"current": 0, "stale": 0, "sup-fail": 0, "invalidate": 0, "window": 0}
        self.extend = True
        self.shrink = False
        self.due = 0
        self.n = 0

    # The library calls, per host.
    def _settle(self, read: Any, pos: int, count: int, next_cursor: bytes,
                end: bool) -> bool:
        raise NotImplementedError

    def _fail(self, read: Any, code: int) -> None:
        raise NotImplementedError

    def _invalidate(self) -> None:
        raise NotImplementedError

    def _set_window(self, start: int, length: int) -> None:
        raise NotImplementedError

    def _covered(self) -> Tuple[int, int]:
        """(covered end, pages held)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # The callbacks' host side.
    def issue(self, read: Any) -> None:
        flag = [False, False]
        self.pending.append((read, flag))
        self.by_id[read.read_id] = flag

    def release(self, _acq: int) -> None:
        self.releases += 1

    def cancel(self, read_id: int) -> None:
        flag = self.by_id.get(read_id)
        if flag is not None:
            flag[0] = True

    def busy(self) -> bool:
        """A chain past its first step or a full read is pending: an invalidation now would
        overtake a repair that is under way."""
        return any(r.kind is Kind.FULL or (r.kind is Kind.CHAIN and r.step > 0)
                   for r, _ in self.pending)

    def answer_oldest(self) -> None:
        read, flag = self.pending.pop(0)
        del self.by_id[read.read_id]
        if (flag[0] and read.kind is Kind.FINITE) or (flag[1] and self.shrink):
            self.shrink = False
            self._fail(read, 7)
            self.counts["sup-fail"] += 1
            return
        pos = int.from_bytes(read.cursor, "big") if read.cursor else 0
        if read.direction is Direction.BACKWARD:   # the items before pos; 0 is the start
            lo = max(pos - read.limit, 0)
            current = self._settle(read, lo, pos - lo, lo.to_bytes(8, "big") if lo else b"",
                                   lo == 0)
        else:
            current = self._settle(read, pos, read.limit,
                                   (pos + read.limit).to_bytes(8, "big"), False)
        self.counts["current" if current else "stale"] += 1

    def move(self) -> None:
        if self.extend and not self.shrink:
            covered_end, pages = self._covered()
            length = covered_end + PAGE
            self.shrink = pages > PAGES + SLACK
        else:
            length = PAGES * PAGE
        self.extend = not self.extend
        self._set_window(0, length)
        self.counts["window"] += 1

    def event(self) -> None:
        self.n += 1
        k = self.n % 20
        if k == 0:
            self.due += 1
        if self.due and not self.busy():
            self.due -= 1
            for _, flag in self.pending:
                flag[1] = True
            self._invalidate()
            self.counts["invalidate"] += 1
        elif k == 10 or not self.pending:
            self.move()
        else:
            self.answer_oldest()

    def run(self, n: int) -> None:
        for _ in range(n):
            self.event()

    def drain(self) -> None:
        """Answers every pending read, and the reads those answers issue."""
        while self.pending:
            self.answer_oldest()


class LoaderHost(Host):
    """The host on the bindings: :class:`libloader.Loader`."""

    def __init__(self) -> None:
        super().__init__()
        self.loader: libloader.Loader[int] = libloader.Loader(
            self.issue, self.release, on_cancel=self.cancel,
            config=libloader.Config(page_size=PAGE, prefetch_distance=0))

    def _settle(self, read: Any, pos: int, count: int, next_cursor: bytes,
                end: bool) -> bool:
        return self.loader.settle(read, pos, count=count, next_cursor=next_cursor,
                                  end_of_source=end) is Answer.CURRENT

    def _fail(self, read: Any, code: int) -> None:
        self.loader.fail(read, code)

    def _invalidate(self) -> None:
        self.loader.invalidate()

    def _set_window(self, start: int, length: int) -> None:
        self.loader.set_window(start, length)

    def _covered(self) -> Tuple[int, int]:
        s = self.loader.state
        return s.covered_end, s.pages

    def close(self) -> None:
        self.loader.close()


class BareRead:
    """What the bare host keeps of an issued read: the fields the stream uses."""

    __slots__ = ("read_id", "kind", "step", "cursor", "limit", "direction")
    read_id: int
    kind: Kind
    step: int
    cursor: bytes
    limit: int
    direction: Direction


_KINDS = tuple(Kind)
_DIRECTIONS = tuple(Direction)


class BareHost(Host):
    """The same host on bare ctypes: the header's functions called directly, callbacks as
    plain ``CFUNCTYPE`` functions, no checks, no error handling, acquisitions passed as the
    integer itself. What a Python host pays at least for the same events; the bindings'
    share of an event is the difference."""

    def __init__(self) -> None:
        super().__init__()
        lib = _ffi.lib()
        self._lib = lib
        self._settle_fn = _ffi.settle_taking_bytes()
        self._fail_fn = lib.loader_fail
        self._invalidate_fn = lib.loader_invalidate
        self._window_fn = lib.loader_set_window
        self._state_fn = lib.loader_state
        self._snapshot = _ffi.loader_snapshot()
        self._snapshot_ref = ctypes.byref(self._snapshot)
        self._out = _ffi.c_enum(0)
        self._out_ref = ctypes.byref(self._out)
        view = _ffi.issued_read.from_address

        def issue(_userdata: Any, address: int) -> None:
            r = view(address)
            read = BareRead()
            read.read_id = r.read_id
            read.kind = _KINDS[r.kind]
            read.step = r.step
            n = r.cursor_len
            read.cursor = ctypes.string_at(r.cursor, n) if n else b""
            read.limit = r.limit
            read.direction = _DIRECTIONS[r.direction]
            self.issue(read)

        def release(_userdata: Any, token: int) -> None:
            self.release(token)

        def cancel(_userdata: Any, read_id: int) -> None:
            self.cancel(read_id)

        self._callbacks_alive = (_ffi.issue_address_fn(issue), _ffi.loader_release_fn(release),
                                 _ffi.loader_cancel_fn(cancel))
        callbacks = _ffi.loader_callbacks()
        callbacks.issue = ctypes.cast(self._callbacks_alive[0], _ffi.loader_issue_fn)
        callbacks.release = self._callbacks_alive[1]
        callbacks.cancel = self._callbacks_alive[2]
        config = libloader.Config(page_size=PAGE, prefetch_distance=0).to_c()
        handle = _ffi.loader_handle()
        rc = lib.loader_new(ctypes.byref(config), ctypes.byref(callbacks), ctypes.byref(handle))
        assert rc == 0, f"loader_new: {rc}"
        self._config_alive = config
        self._handle = handle.value

    def _settle(self, read: Any, pos: int, count: int, next_cursor: bytes,
                end: bool) -> bool:
        rc = self._settle_fn(self._handle, read.read_id, pos, count, next_cursor or None,
                             len(next_cursor), end, self._out_ref)
        assert rc == 0, f"loader_settle: {rc}"
        return self._out.value == 0

    def _fail(self, read: Any, code: int) -> None:
        rc = self._fail_fn(self._handle, read.read_id, code, self._out_ref)
        assert rc == 0, f"loader_fail: {rc}"

    def _invalidate(self) -> None:
        rc = self._invalidate_fn(self._handle)
        assert rc == 0, f"loader_invalidate: {rc}"

    def _set_window(self, start: int, length: int) -> None:
        rc = self._window_fn(self._handle, start, length)
        assert rc == 0, f"loader_set_window: {rc}"

    def _covered(self) -> Tuple[int, int]:
        self._state_fn(self._handle, self._snapshot_ref)
        return self._snapshot.covered_end, self._snapshot.pages

    def close(self) -> None:
        self._lib.loader_free(self._handle)


def time_calls(fn: Callable[[], object], n: int) -> Tuple[float, float]:
    """(CPU ns, wall ns) per call of ``fn``, over ``n`` calls."""
    t, w = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.thread_time_ns() - t) / n, (time.perf_counter_ns() - w) / n


class FeedScroll:
    """The Feed workload: a source of integers (a cursor is the 8-byte big-endian position),
    a window of ``PAGES`` pages scrolled down one page per step (one forward load each), and
    an invalidation every 20 steps (a repair of the whole window: about ``PAGES`` loads).
    An event is one load the feed ran and answered."""

    def __init__(self, max_workers: int) -> None:
        self.loads = 0
        self.step = 0
        self.feed: libloader.Feed[int] = libloader.Feed(
            self.load, max_workers=max_workers,
            config=libloader.Config(page_size=PAGE, prefetch_distance=0))

    def load(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[int]:
        self.loads += 1
        pos = int.from_bytes(cursor, "big") if cursor else 0
        if direction is Direction.BACKWARD:
            lo = max(pos - limit, 0)
            return LoadResult(range(lo, pos), lo.to_bytes(8, "big") if lo else b"", lo == 0)
        return LoadResult(range(pos, pos + limit), (pos + limit).to_bytes(8, "big"))

    def wait(self) -> None:
        assert self.feed.settled(timeout=60), "the feed did not settle in 60 s"

    def run(self, loads: int) -> None:
        """Scrolls until at least ``loads`` more loads ran."""
        target = self.loads + loads
        while self.loads < target:
            self.step += 1
            if self.step % 20 == 0:
                self.feed.invalidate()
            else:
                self.feed.set_window(self.step * PAGE, PAGES * PAGE)
            self.wait()

    def check(self) -> None:
        """The window holds exactly the items it covers."""
        start = self.step * PAGE if self.step % 20 else (self.step - 1) * PAGE
        items = self.feed.items()
        snap = self.feed.snapshot()
        lo = start - snap.start
        assert list(items[lo:lo + PAGES * PAGE]) == list(range(start, start + PAGES * PAGE))


def time_feed(scroll: FeedScroll, loads: int) -> Tuple[float, float]:
    """(CPU ns, wall ns) per load over at least ``loads`` loads."""
    n0 = scroll.loads
    t, w = time.thread_time_ns(), time.perf_counter_ns()
    scroll.run(loads)
    n = scroll.loads - n0
    return (time.thread_time_ns() - t) / n, (time.perf_counter_ns() - w) / n


# ---- the Feed over a 50-row SQLite keyset query, beside a bare loop calling the same load ----

SQL_ROWS = 100_000
SQL_PAGE = 50
SQL_MOVE = 20
"""Pages per window move: each move is a chain of this many loads, then ``settled()``."""
SQL_TARGET = 1.5
"""The Feed may take at most this many times the bare loop's time."""

Row = Tuple[int, int, str]


class KeysetSource:
    """A SQLite table ``items(k, id, payload)``, about three rows to a key, ordered by
    ``(k, id)``; a cursor is the 16-byte big-endian ``(k, id)`` of the row just before it.
    :meth:`load` is what every runner calls: a keyset query of up to 50 rows. Each thread
    has its own connection."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.local = threading.local()
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE items (k INTEGER NOT NULL, id INTEGER PRIMARY KEY, "
                     "payload TEXT NOT NULL)")
        conn.executemany("INSERT INTO items (k, id, payload) VALUES (?, ?, ?)",
                         ((i // 3, i, f"event {i}") for i in range(SQL_ROWS)))
        conn.execute("CREATE INDEX items_k_id ON items (k, id)")
        conn.commit()
        conn.close()

    def conn(self) -> sqlite3.Connection:
        conn: Optional[sqlite3.Connection] = getattr(self.local, "conn", None)
        if conn is None:
            # One page cache for every connection: a new worker thread's connection starts
            # warm, as a long-lived application's would, instead of reading the table again.
            conn = self.local.conn = sqlite3.connect(f"file:{self.path}?cache=shared",
                                                     uri=True)
        return conn

    def load(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        conn = self.conn()
        if direction is Direction.BACKWARD:
            k, i = int.from_bytes(cursor[:8], "big"), int.from_bytes(cursor[8:], "big")
            got = conn.execute("SELECT k, id, payload FROM items WHERE (k, id) <= (?, ?) "
                               "ORDER BY k DESC, id DESC LIMIT ?", (k, i, limit + 1)).fetchall()
            rows = got[:limit][::-1]
            start = len(got) <= limit
            before = b"" if start else _key(got[limit])
            return LoadResult(rows, before, start)
        if cursor:
            k, i = int.from_bytes(cursor[:8], "big"), int.from_bytes(cursor[8:], "big")
            rows = conn.execute("SELECT k, id, payload FROM items WHERE (k, id) > (?, ?) "
                                "ORDER BY k, id LIMIT ?", (k, i, limit)).fetchall()
        else:
            rows = conn.execute("SELECT k, id, payload FROM items ORDER BY k, id LIMIT ?",
                                (limit,)).fetchall()
        return LoadResult(rows, _key(rows[-1]) if rows else cursor, len(rows) < limit)

    async def aload(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        return self.load(cursor, limit, direction)


def _key(row: Row) -> bytes:
    return row[0].to_bytes(8, "big") + row[1].to_bytes(8, "big")


Clocks = Tuple[float, float]
"""(process CPU s, wall s)."""


def _clocks() -> Clocks:
    return time.process_time(), time.perf_counter()


def _per_load(t0: Clocks, loads: int) -> Clocks:
    cpu, wall = _clocks()
    return (cpu - t0[0]) / loads, (wall - t0[1]) / loads


def _sql_config() -> libloader.Config:
    # drop_margin: the pages the window left behind are released, as a scroll would.
    return libloader.Config(page_size=SQL_PAGE, prefetch_distance=0, drop_margin=1)


def bare_loop(src: KeysetSource, moves: int) -> Clocks:
    """The load called ``SQL_MOVE`` times per move, each from the last one's cursor."""
    cursor, loads, t0 = b"", 0, _clocks()
    for _ in range(moves):
        for _ in range(SQL_MOVE):
            cursor = src.load(cursor, SQL_PAGE, Direction.FORWARD).next_cursor
            loads += 1
    return _per_load(t0, loads)


def feed_moves(src: KeysetSource, moves: int, **kw: Any) -> Clocks:
    """A threaded Feed: the window moved ``SQL_MOVE`` pages down per move, then settled."""
    feed: libloader.Feed[Row] = libloader.Feed(src.load, config=_sql_config(), **kw)
    t0 = _clocks()
    for m in range(moves):
        feed.set_window(m * SQL_MOVE * SQL_PAGE, SQL_MOVE * SQL_PAGE)
        assert feed.settled(60), "the feed did not settle"
    per = _per_load(t0, feed.stats().issued_finite)
    assert feed.items()[-1][1] == moves * SQL_MOVE * SQL_PAGE - 1
    feed.close()
    return per


def loader_moves(src: KeysetSource, moves: int) -> Clocks:
    """The floor: a :class:`libloader.Loader` whose reads the caller answers at once, with
    no feed (the library's and the bindings' own cost)."""
    pending: List[Read] = []
    loader: libloader.Loader[LoadResult[Row]] = libloader.Loader(
        pending.append, lambda result: None, config=_sql_config())
    t0 = _clocks()
    for m in range(moves):
        loader.set_window(m * SQL_MOVE * SQL_PAGE, SQL_MOVE * SQL_PAGE)
        while pending:
            read = pending.pop()
            result = src.load(read.cursor, read.limit, read.direction)
            loader.settle(read, result, count=len(result.items),
                          next_cursor=result.next_cursor, end_of_source=result.end_of_source)
    per = _per_load(t0, loader.stats().issued_finite)
    loader.close()
    return per


def pool_moves(src: KeysetSource, moves: int) -> Clocks:
    """The least a worker thread costs, with no library: a thread of the host's own takes
    each step's ``SQL_MOVE`` loads from a queue, runs them from the last cursor and hands the
    pages back, while the caller waits on an event; the caller keeps them until the next
    step (as the feed keeps a window). Its cost over the bare loop is the thread hand-off's,
    and the loads' on another core than the caller's."""
    steps: "queue.SimpleQueue[Optional[int]]" = queue.SimpleQueue()
    done = threading.Event()
    made: List[List[LoadResult[Row]]] = []

    def worker() -> None:
        cursor = b""
        while True:
            n = steps.get()
            if n is None:
                return
            pages = []
            for _ in range(n):
                page = src.load(cursor, SQL_PAGE, Direction.FORWARD)
                cursor = page.next_cursor
                pages.append(page)
            made.append(pages)
            done.set()

    thread = threading.Thread(target=worker, name="host-pool")
    thread.start()
    window: List[LoadResult[Row]] = []
    t0 = _clocks()
    for _ in range(moves):
        done.clear()
        steps.put(SQL_MOVE)
        done.wait()
        window = made.pop()
    per = _per_load(t0, moves * SQL_MOVE)
    steps.put(None)
    thread.join()
    assert len(window) == SQL_MOVE
    return per


async def bare_await_loop(src: KeysetSource, moves: int) -> Clocks:
    cursor, loads, t0 = b"", 0, _clocks()
    for _ in range(moves):
        for _ in range(SQL_MOVE):
            cursor = (await src.aload(cursor, SQL_PAGE, Direction.FORWARD)).next_cursor
            loads += 1
    return _per_load(t0, loads)


async def aio_moves(src: KeysetSource, moves: int) -> Clocks:
    feed: aio.Feed[Row] = aio.Feed(src.aload, config=_sql_config())
    t0 = _clocks()
    for m in range(moves):
        feed.set_window(m * SQL_MOVE * SQL_PAGE, SQL_MOVE * SQL_PAGE)
        assert await feed.settled(60), "the feed did not settle"
    per = _per_load(t0, feed.stats().issued_finite)
    await feed.close()
    return per


SQL_RUNNERS = ("threaded Feed (worker threads)", "threaded Feed, max_workers=0 (caller)",
               "aio.Feed", "floor: Loader answered on the caller",
               "no library: the host's own worker thread")


def sqlite_feed(quick: bool) -> Dict[str, Dict[str, float]]:
    """Times every runner beside its bare loop, ``REPS`` times; prints the table and returns
    {runner: {"cpu": ratio, "wall": ratio, "us": CPU us/load}}."""
    moves = 10 if quick else 50
    with tempfile.TemporaryDirectory() as tmp:
        src = KeysetSource(os.path.join(tmp, "items.db"))
        samples: Dict[str, List[Tuple[Clocks, Clocks]]] = {name: [] for name in SQL_RUNNERS}
        bare: List[Clocks] = []
        # A warm-up of each (connections opened, pages of the table cached).
        bare_loop(src, 2)
        feed_moves(src, 2)
        asyncio.run(aio_moves(src, 2))
        pool_moves(src, 2)
        for _ in range(REPS):
            b = bare_loop(src, moves)
            samples[SQL_RUNNERS[0]].append((feed_moves(src, moves), b))
            b = bare_loop(src, moves)
            samples[SQL_RUNNERS[1]].append((feed_moves(src, moves, max_workers=0), b))
            ab = asyncio.run(bare_await_loop(src, moves))
            samples[SQL_RUNNERS[2]].append((asyncio.run(aio_moves(src, moves)), ab))
            b = bare_loop(src, moves)
            samples[SQL_RUNNERS[3]].append((loader_moves(src, moves), b))
            b = bare_loop(src, moves)
            samples[SQL_RUNNERS[4]].append((pool_moves(src, moves), b))
            bare.append(b)
    print(f"\n== the Feed over a {SQL_PAGE}-row SQLite keyset query ({SQL_ROWS} rows), beside a "
          f"bare loop calling the same load ==")
    print(f"{moves} window moves of {SQL_MOVE} pages (a chain of {SQL_MOVE} loads, then "
          f"settled()) per repetition; median of {REPS} repetitions; ratios to the bare loop "
          "timed just before, per repetition")
    bare_cpu = statistics.median(b[0] for b in bare)
    print(f"{'bare loop: load(cursor, 50, FORWARD)':<44} {bare_cpu * 1e6:>8.1f} us/load "
          "(process CPU)")
    results: Dict[str, Dict[str, float]] = {}
    for name in SQL_RUNNERS:
        runs = samples[name]
        cpu = statistics.median(f[0] / b[0] for f, b in runs)
        wall = statistics.median(f[1] / b[1] for f, b in runs)
        us = statistics.median(f[0] for f, _ in runs) * 1e6
        results[name] = {"cpu": cpu, "wall": wall, "us": us}
        print(f"{name:<44} {us:>8.1f} us/load  {cpu:>5.2f} x CPU  {wall:>5.2f} x wall")
    for name in SQL_RUNNERS[:3]:
        r = results[name]
        verdict = "met" if r["cpu"] <= SQL_TARGET else "MISSED"
        print(f"target: {name} <= {SQL_TARGET} x the bare loop: {verdict} ({r['cpu']:.2f} x CPU, "
              f"{r['wall']:.2f} x wall)")
    return results


H = TypeVar("H", bound=Host)


def warmed(host: H, events: int) -> H:
    """``host`` with its view loaded and ``events`` events run, its counts reset."""
    host._set_window(0, PAGES * PAGE)
    host.drain()
    host.run(events)
    for key in host.counts:
        host.counts[key] = 0
    host.releases = 0
    return host


def run_only(kind: str, n: int) -> int:
    """``--run KIND N``: warm a ``loader``, ``bare`` or ``feed`` host up, then make ``N`` more
    events (loads, for the feed), untimed: for instruction counts, which do not drift,
    ``(I(N2) - I(N1)) / (N2 - N1)`` under ``valgrind --tool=callgrind``."""
    if kind == "feed":
        scroll = FeedScroll(max_workers=0)
        scroll.run(1000)
        scroll.run(n)
        scroll.check()
        scroll.feed.close()
        return 0
    if kind not in ("loader", "bare"):
        print(f"--run: unknown host {kind!r} (loader, bare or feed)", file=sys.stderr)
        return 2
    host: Host = warmed(LoaderHost() if kind == "loader" else BareHost(), 2000)
    host.run(n)
    host.close()
    return 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--run"]:
        if len(args) != 3 or not args[2].isdigit():
            print("usage: bench_events.py --run loader|bare|feed N", file=sys.stderr)
            return 2
        return run_only(args[1], int(args[2]))
    quick = "--quick" in args
    if "--sqlite" in args:
        sqlite_feed(quick)
        return 0
    events = 5_000 if quick else 100_000
    floor_calls = 20_000 if quick else 400_000
    h = warmed(LoaderHost(), events)
    bare = warmed(BareHost(), events)
    lib = _ffi.lib()
    version = lib.loader_version
    state_fn = lib.loader_state
    handle = h.loader.handle
    snapshot = _ffi.loader_snapshot()
    snapshot_ref = ctypes.byref(snapshot)

    def state_call() -> object:
        return state_fn(handle, snapshot_ref)

    stream: List[Tuple[float, float]] = []
    bare_stream: List[Tuple[float, float]] = []
    floor: List[Tuple[float, float]] = []
    state: List[Tuple[float, float]] = []
    for _ in range(REPS):
        stream.append(time_calls(h.event, events))
        bare_stream.append(time_calls(bare.event, events))
        floor.append(time_calls(version, floor_calls))
        state.append(time_calls(state_call, floor_calls))
    feed_loads = 2_000 if quick else 20_000
    inline = FeedScroll(max_workers=0)
    pooled = FeedScroll(max_workers=4)
    inline.run(feed_loads // 4)                # warm-up
    pooled.run(feed_loads // 10)
    feed_inline = [time_feed(inline, feed_loads) for _ in range(REPS)]
    feed_pool = [time_feed(pooled, feed_loads // 4) for _ in range(REPS)]
    inline.check()
    pooled.check()
    if h.counts != bare.counts or h.releases != bare.releases:
        print(f"the two hosts diverged: {h.counts} {h.releases} / {bare.counts} "
              f"{bare.releases}", file=sys.stderr)
        return 1
    total = sum(h.counts.values())
    live = h.loader.state
    cpu = statistics.median(s[0] for s in stream)
    wall = statistics.median(s[1] for s in stream)
    bare_cpu = statistics.median(s[0] for s in bare_stream)
    floor_cpu = statistics.median(f[0] for f in floor)
    state_cpu = statistics.median(s[0] for s in state)
    ratio = statistics.median(s[0] / f[0] for s, f in zip(stream, floor))
    bare_ratio = statistics.median(s[0] / b[0] for s, b in zip(stream, bare_stream))
    over_call = statistics.median((s[0] - f[0]) / 1000 for s, f in zip(stream, floor))
    over_bare = statistics.median((s[0] - b[0]) / 1000 for s, b in zip(stream, bare_stream))
    print("== workload 7: events per second through the Python bindings ==")
    print(f"libloader {libloader.version()}; Python {sys.version.split()[0]}; view "
          f"{live.pages} pages of {PAGE} items; {'quick' if quick else 'full'} mode; median of "
          f"{REPS} repetitions of {events} events and {floor_calls} floor calls; CPU time")
    print("mix: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in h.counts.items())
          + f"; {h.releases / total:.2f} releases/event; {live.inflight + live.settled} live "
          "requests at the end (the same in both streams)")
    print(f"{'Loader stream, view 100 pages':<44} {1e9 / cpu:>10.0f} events/s  "
          f"({cpu / 1000:.2f} us/event; wall clock {1e9 / wall:.0f} events/s)")
    print(f"{'bare ctypes stream (same host, same events)':<44} {1e9 / bare_cpu:>10.0f} "
          f"events/s  ({bare_cpu / 1000:.2f} us/event)")
    fi_cpu = statistics.median(f[0] for f in feed_inline)
    fp_wall = statistics.median(f[1] for f in feed_pool)
    print(f"{'Feed scroll, loads run on the caller':<44} {1e9 / fi_cpu:>10.0f} loads/s   "
          f"({fi_cpu / 1000:.2f} us/load, {fi_cpu / cpu:.2f} x a Loader event)")
    print(f"{'Feed scroll, 4-thread pool (wall clock)':<44} {1e9 / fp_wall:>10.0f} loads/s   "
          f"({fp_wall / 1000:.2f} us/load)")
    print(f"{'floor: bare ctypes loader_version()':<44} {floor_cpu:>10.0f} ns/call")
    print(f"{'bare ctypes loader_state(handle, &snapshot)':<44} {state_cpu:>10.0f} ns/call")
    print(f"{'Loader stream / bare ctypes stream':<44} {bare_ratio:>10.2f} x  (per-repetition "
          "ratios, median)")
    print(f"{'Loader stream / floor call':<44} {ratio:>10.1f} x")
    verdict = "met" if over_bare <= TARGET_US else "MISSED"
    print(f"target: the binding adds <= {TARGET_US:.0f} us/event over the bare ctypes stream: "
          f"{verdict} ({over_bare:.2f} us/event over it)")
    print(f"        over the single floor call: {over_call:.2f} us/event")
    h.close()
    bare.close()
    inline.feed.close()
    pooled.feed.close()
    sqlite_feed(quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
