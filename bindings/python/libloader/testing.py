"""Tools for testing code built on libloader: a fake source to run a :class:`~libloader.Feed`
against, and a tester for load functions.

* :class:`FakeSource`: an ordered source in memory, with the load function a feed takes
  (``load``, and ``aload`` for :class:`libloader.aio.Feed`), ``compare`` for ranged
  invalidation, inserts and deletes reported to a feed as ranged invalidations, injected
  failures, latency, loads held until released, and bookkeeping that proves every result was
  released exactly once. UI code can be tested against it without a database.
* :func:`check_load` (and :func:`assert_load`): drives a load function through the cases of
  the host contract (forward and backward, bounded by ``until``, short and empty pages, the
  source's start and end, cursors at the edges) against a reference of what the source holds,
  and returns each violation as a sentence.

The load function has the shape :class:`~libloader.Feed` runs:
``load(cursor, limit, direction)`` or ``load(cursor, limit, direction, until=None)``
returning a :class:`~libloader.LoadResult`; an ``async def`` one is run to completion.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections import Counter
from typing import (Any, Awaitable, Callable, Dict, Generic, Hashable, Iterable, List,
                    Optional, Sequence, Tuple, TypeVar, Union)

from ._enums import Direction
from ._feed import LoadResult, _accepts_until

T = TypeVar("T")

__all__ = ["FakeSource", "check_load", "assert_load"]

_SPACING = 1 << 32
"""The distance between the keys :class:`FakeSource` gives its first items: room for 31
inserts in a row at one place."""


class FakeSource(Generic[T]):
    """An ordered source in memory: its items in source order, read with keyset cursors, so a
    cursor stays valid (a position between two items) while items are inserted and deleted
    around it, as in a database.

    Each item has a hidden sort key; a cursor is the position just after a key, as
    ``cursor_width`` big-endian bytes (``b""``: the source's start), so byte order is source
    order and :meth:`compare` orders cursors. :meth:`cursor_at` gives the cursor before the
    item at an index; :meth:`index_of` the index a cursor points at.

    ``load`` honours the contract: forward, the items after the cursor and the cursor after
    the last (``end_of_source`` at the end); backward, the items just before it in source
    order and the cursor before the first (``b""`` and ``end_of_source`` at the start);
    bounded (``until``), the items after the cursor up to ``until``, and ``until`` itself as
    the cursor once nothing is left up to it.

    What a test controls, all optional:

    * :attr:`fail`: ``fail(start, attempt)`` says whether the ``attempt``-th load (1, 2, ...)
      starting at index ``start`` raises ``OSError``.
    * :attr:`latency`: ``latency()`` seconds each load sleeps (``time.sleep`` in :meth:`load`,
      ``asyncio.sleep`` in :meth:`aload`).
    * :attr:`hold`: a load starting at that index waits for the ``threading.Event`` first
      (once); :attr:`parked` the same with an ``asyncio.Event`` for :meth:`aload`.

    What it records: :attr:`calls` (the start index of every forward load, in order),
    :attr:`backward` (the cursor index of every backward load), every result it made, and
    every release (:meth:`on_release`, for the feed's ``on_release``):
    :meth:`released_exactly_once`. Thread-safe: loads may run on any threads.

    Attributes:

    cursor_width
        The length of every cursor, in bytes (the constructor's ``cursor_width``).
    lock
        The ``threading.RLock`` every change and load takes: hold it to read several
        attributes from one moment.
    started
        A ``threading.Condition`` over :attr:`lock`, notified when a load starts
        (:meth:`wait_started` waits on it).
    hold
        Index to ``threading.Event``: a forward load starting there waits for it first, once.
    parked
        The same with an ``asyncio.Event``, for :meth:`aload`.
    made
        Every result a load made, by ``id``.
    released
        How many times each result (by ``id``) was released.
    strays
        Releases of something this source never made.
    calls
        The start index of every forward load, in the order they started.
    backward
        The cursor index of every backward load, in the order they started.
    bounded
        The start index and ``until`` index of every bounded load.
    """

    def __init__(self, items: Union[int, Iterable[T]] = 0, *,
                 item: Optional[Callable[[int], T]] = None, cursor_width: int = 8) -> None:
        """``items``: the items in source order, or a count ``n`` for the items
        ``item(0)``, ..., ``item(n - 1)`` (``item`` defaults to ``f"item {i}"``)."""
        if isinstance(items, int):
            make: Callable[[int], Any] = item if item is not None else (lambda i: f"item {i}")
            values: List[T] = [make(i) for i in range(items)]
        else:
            values = list(items)
        self.cursor_width = cursor_width
        self._keys: List[int] = [(i + 1) * _SPACING for i in range(len(values))]
        self._values: List[T] = values
        self.lock = threading.RLock()
        self.made: Dict[int, LoadResult[T]] = {}
        self.released: Counter[int] = Counter()
        self.strays: List[object] = []
        self.calls: List[int] = []
        self.backward: List[int] = []
        self.bounded: List[Tuple[int, int]] = []
        self.fail: Callable[[int, int], bool] = lambda start, attempt: False
        self.latency: Callable[[], float] = lambda: 0.0
        self.hold: Dict[int, threading.Event] = {}
        self.parked: Dict[int, asyncio.Event] = {}
        self.started = threading.Condition(self.lock)

    # ---- what it holds ----

    @property
    def rows(self) -> List[T]:
        """The items now, in source order (a copy)."""
        with self.lock:
            return list(self._values)

    items = rows

    def __len__(self) -> int:
        with self.lock:
            return len(self._values)

    def current(self, n: int) -> List[T]:
        """The first ``n`` items now."""
        with self.lock:
            return self._values[:n]

    # ---- cursors ----

    def _encode(self, boundary: int) -> bytes:
        return boundary.to_bytes(self.cursor_width, "big") if boundary else b""

    def _boundary(self, cursor: bytes) -> int:
        """The position a cursor names: the items with a key at least this follow it."""
        return int.from_bytes(bytes(cursor), "big") if cursor else 0

    def _index(self, boundary: int) -> int:
        import bisect
        return bisect.bisect_left(self._keys, boundary)

    def cursor_at(self, index: int) -> bytes:
        """The cursor just before the item at ``index`` (``b""`` for 0; past the end: the
        cursor after the last item)."""
        with self.lock:
            if index <= 0 or not self._keys:
                return b""
            return self._encode(self._keys[min(index, len(self._keys)) - 1] + 1)

    def index_of(self, cursor: bytes) -> int:
        """How many items come before ``cursor`` now."""
        with self.lock:
            return self._index(self._boundary(cursor))

    @staticmethod
    def compare(a: bytes, b: bytes) -> int:
        """Orders two cursors as the source does (for a feed's ``compare``)."""
        return (a > b) - (a < b)

    # ---- changes ----

    def insert(self, index: int, item: T, feed: Any = None) -> bytes:
        """Inserts ``item`` before the item at ``index`` (at the end past it). With ``feed``
        (a :class:`~libloader.Feed` or :class:`~libloader.aio.Feed`), reports it as a ranged
        invalidation of just that item; without, the caller reports it (``invalidate()``).
        Returns the cursor just after the new item."""
        with self.lock:
            index = max(0, min(index, len(self._keys)))
            lo = self._keys[index - 1] if index > 0 else 0
            hi = self._keys[index] if index < len(self._keys) else lo + 2 * _SPACING
            if hi - lo < 3:
                raise ValueError("FakeSource: no room left for an insert here (too many "
                                 "inserts at one place)")
            key = (lo + hi) // 2
            self._keys.insert(index, key)
            self._values.insert(index, item)
            after = self._encode(key + 1)
        if feed is not None:
            feed.invalidate_range(after, after)
        return after

    def append(self, item: T, feed: Any = None) -> bytes:
        """Adds ``item`` after the last item; with ``feed``, reports it the cheap way
        (``feed.appended()``: nothing held is re-read). Returns the cursor just after it."""
        with self.lock:
            key = (self._keys[-1] if self._keys else 0) + _SPACING
            self._keys.append(key)
            self._values.append(item)
            after = self._encode(key + 1)
        if feed is not None:
            feed.appended()
        return after

    def delete(self, index: int, feed: Any = None) -> T:
        """Deletes the item at ``index`` and returns it; with ``feed``, reports it as a
        ranged invalidation of just that item (see :meth:`insert`)."""
        with self.lock:
            key = self._keys.pop(index)
            item = self._values.pop(index)
            after = self._encode(key + 1)
        if feed is not None:
            feed.invalidate_range(after, after)
        return item

    # ---- loads ----

    def _before(self, cursor: bytes, direction: Direction, until: Optional[bytes]) -> int:
        """Records a load starting at ``cursor``; returns its start index."""
        with self.lock:
            at = self._index(self._boundary(cursor))
            if direction is Direction.BACKWARD:
                self.backward.append(at)
            else:
                self.calls.append(at)
                if until is not None:
                    self.bounded.append((at, self._index(self._boundary(until))))
            self.started.notify_all()
            return at

    def _attempt(self, at: int) -> int:
        with self.lock:
            return self.calls.count(at)

    def _page(self, cursor: bytes, limit: int, direction: Direction,
              until: Optional[bytes]) -> LoadResult[T]:
        with self.lock:
            b = self._boundary(cursor)
            at = self._index(b)
            if direction is Direction.BACKWARD:
                lo = max(at - limit, 0)
                items = self._values[lo:at]
                nxt = self._encode(self._keys[lo - 1] + 1) if lo else b""
                result = LoadResult(items, nxt, lo == 0)
            else:
                stop = len(self._keys) if until is None else self._index(self._boundary(until))
                hi = min(at + limit, max(stop, at))
                items = self._values[at:hi]
                if items:
                    nxt = self._encode(self._keys[hi - 1] + 1)
                elif until is not None and self._boundary(until) > b:
                    nxt = bytes(until)   # nothing left up to `until`: the scan reached it
                else:
                    nxt = bytes(cursor)
                end = until is None and hi >= len(self._keys)
                result = LoadResult(items, nxt, end)
            self.made[id(result)] = result
            return result

    def load(self, cursor: bytes, limit: int, direction: Direction = Direction.FORWARD,
             until: Optional[bytes] = None) -> LoadResult[T]:
        """The load function for :class:`~libloader.Feed` (it takes ``until``)."""
        at = self._before(cursor, direction, until)
        with self.lock:
            gate = self.hold.pop(at, None) if direction is Direction.FORWARD else None
        if gate is not None:
            assert gate.wait(10), "FakeSource: a held load was never let go"
        delay = self.latency()
        if delay > 0:
            time.sleep(delay)
        if direction is Direction.FORWARD and self.fail(at, self._attempt(at)):
            raise OSError(f"FakeSource: injected failure at {at}")
        return self._page(cursor, limit, direction, until)

    async def aload(self, cursor: bytes, limit: int, direction: Direction = Direction.FORWARD,
                    until: Optional[bytes] = None) -> LoadResult[T]:
        """The load function for :class:`libloader.aio.Feed` (it takes ``until``)."""
        at = self._before(cursor, direction, until)
        with self.lock:
            gate = self.parked.pop(at, None) if direction is Direction.FORWARD else None
        if gate is not None:
            await gate.wait()
        await asyncio.sleep(self.latency())
        if direction is Direction.FORWARD and self.fail(at, self._attempt(at)):
            raise OSError(f"FakeSource: injected failure at {at}")
        return self._page(cursor, limit, direction, until)

    # ---- bookkeeping ----

    def on_release(self, result: LoadResult[T]) -> None:
        """For the feed's ``on_release``: counts each release of a result this source
        made."""
        with self.lock:
            if self.made.get(id(result)) is not result:
                self.strays.append(result)
            self.released[id(result)] += 1

    def released_exactly_once(self) -> bool:
        """Every result made was released once, and nothing else was."""
        with self.lock:
            return (not self.strays and set(self.released) == set(self.made)
                    and all(n == 1 for n in self.released.values()))

    def wait_started(self, start: int, times: int = 1, timeout: float = 10) -> None:
        """Waits until ``times`` forward loads started at index ``start``."""
        with self.lock:
            assert self.started.wait_for(lambda: self.calls.count(start) >= times, timeout), \
                f"FakeSource: no load started at {start} within {timeout} s"

    def matches(self, feed: Any) -> bool:
        """The feed's view is this source's items from its first page's cursor on, and where
        the view starts at the source's start (an empty cursor) its positions are the
        source's."""
        pages = feed.pages()
        if not pages:
            return True
        first = self.index_of(pages[0].cursor)
        items = [x for p in pages for x in p.result.items]
        with self.lock:
            same = items == self._values[first:first + len(items)]
        return same and (pages[0].cursor != b"" or pages[0].start == 0)


# ---- the tester ----

Load = Callable[[bytes, int, Direction], Union[LoadResult[Any], Awaitable[LoadResult[Any]]]]
"""A load function as a feed takes it: ``load(cursor, limit, direction)``, or with
``until=None`` as well; a plain function or an ``async def``."""
Reference = Union[Sequence[Hashable], Callable[[], Sequence[Hashable]]]

_PER_KIND = 3
"""How many violations of one kind are told in full; the rest are counted."""


class _Tester:
    def __init__(self, load: Load, reference: Reference, key: Callable[[Any], Hashable],
                 delete: Optional[Callable[[Hashable], None]], limits: Sequence[int],
                 locate: Optional[Callable[[int], Optional[bytes]]] = None) -> None:
        # Called with until= only once its signature shows it takes it (self.until).
        self.load: Callable[..., Any] = load
        self.locate = locate
        self.reference = reference
        self.key = key
        self.delete = delete
        self.limits = limits
        self.until = _accepts_until(load)
        self.found: Dict[str, List[str]] = {}
        self.order: List[str] = []

    def ref(self) -> List[Hashable]:
        r = self.reference
        return list(r() if callable(r) else r)

    def say(self, kind: str, sentence: str) -> None:
        if kind not in self.found:
            self.found[kind] = []
            self.order.append(kind)
        self.found[kind].append(sentence)

    def sentences(self) -> List[str]:
        out: List[str] = []
        for kind in self.order:
            told = self.found[kind]
            out.extend(told[:_PER_KIND])
            if len(told) > _PER_KIND:
                out.append(f"... and {len(told) - _PER_KIND} more like the last ({kind})")
        return out

    def call(self, cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> Optional[LoadResult[Any]]:
        what = _what(cursor, limit, direction, until)
        try:
            if until is not None:
                r: Any = self.load(cursor, limit, direction, until=until)
            elif self.until:
                r = self.load(cursor, limit, direction, until=None)
            else:
                r = self.load(cursor, limit, direction)
            if inspect.isawaitable(r):
                r = asyncio.run(_await(r))
        except Exception as e:   # the tester reports it; it does not stop
            self.say("raised", f"{what} raised {type(e).__name__}: {e}")
            return None
        if not isinstance(r, LoadResult):
            self.say("result", f"{what} returned {type(r).__name__}, not a LoadResult")
            return None
        if len(r.items) > limit:
            self.say("limit", f"{what} returned {len(r.items)} items, more than its limit")
        return r

    def keys(self, r: LoadResult[Any]) -> List[Hashable]:
        return [self.key(x) for x in r.items]

    # -- the cases --

    def forward_walk(self, limit: int) -> Optional[List[bytes]]:
        """Reads forward from the start until the end; returns the cursor before each item
        and the end cursor (``cursors[i]``: before item ``i``), or None if the walk broke."""
        ref = self.ref()
        cursor = b""
        cursors = [b""]
        seen: Dict[bytes, int] = {b"": 0}
        got: List[Hashable] = []
        for _ in range(len(ref) + 3):
            r = self.call(cursor, limit, Direction.FORWARD)
            if r is None:
                return None
            what = _what(cursor, limit, Direction.FORWARD, None)
            keys = self.keys(r)
            nxt = bytes(r.next_cursor)
            want = ref[len(got):len(got) + limit]
            if keys != want[:len(keys)]:
                after = repr(got[-1]) if got else "the source's start"
                self.say("forward", f"{what} (after {after}) returned "
                         f"{_items(keys)}; the source holds {_items(want)} there")
                return None
            if nxt == cursor and (keys or not r.end_of_source):
                self.say("stall", f"{what} returned {len(keys)} items and next_cursor equal to "
                         "its own cursor: the cursor never advances, so the loader sees a "
                         "stall and cannot move past it")
                return None
            got.extend(keys)
            if keys:
                # Where each item starts is only known for single-item pages; the page's
                # end is always known.
                if len(keys) == 1:
                    cursors.append(nxt)
                else:
                    cursors.extend([b""] * (len(keys) - 1) + [nxt])
            if nxt in seen and nxt != cursor:
                self.say("loop", f"{what} returned next_cursor {_cur(nxt)}, which an earlier "
                         "read returned: the walk goes round in circles")
                return None
            seen[nxt] = len(got)
            if r.end_of_source:
                if len(got) < len(ref):
                    self.say("end", f"{what} claimed end_of_source with "
                             f"{len(ref) - len(got)} items of the source still unread "
                             f"({_items(ref[len(got):len(got) + 3])} ...)")
                    return None
                return cursors
            cursor = nxt
        self.say("end", f"reading forward {limit} at a time never reached end_of_source "
                 f"after {len(ref) + 3} reads")
        return None

    def backward(self, cursors: List[bytes], ref: List[Hashable]) -> None:
        n = len(ref)
        for i in range(n + 1):
            cursor = cursors[i]
            if i > 0 and cursor == b"":
                continue
            for limit in self.limits:
                r = self.call(cursor, limit, Direction.BACKWARD)
                if r is None:
                    continue
                what = _what(cursor, limit, Direction.BACKWARD, None)
                keys = self.keys(r)
                want = ref[max(0, i - limit):i]
                if keys != want:
                    after = ref[i:i + limit]
                    why = (" (the items AFTER the cursor: a backward read returns the ones "
                           "just before it, in source order)") if keys and keys == after \
                        else ""
                    where = f"the cursor after {ref[i - 1]!r}" if i else "the source's start"
                    self.say("backward", f"{what} ({where}) returned {_items(keys)}{why}; it "
                             f"should return {_items(want)}")
                    continue
                at_start = i - len(keys) == 0
                if r.end_of_source != at_start and (at_start or keys):
                    self.say("backward_end", f"{what} returned end_of_source "
                             f"{r.end_of_source}, but the source's start "
                             f"{'was' if at_start else 'was not'} reached")
                if at_start and r.end_of_source and bytes(r.next_cursor) != b"":
                    self.say("backward_end", f"{what} reached the source's start, and its "
                             f"next_cursor is {_cur(bytes(r.next_cursor))}, not b\"\" (the "
                             "source's start)")
                elif keys and not at_start and cursors[i - len(keys)] and \
                        bytes(r.next_cursor) != cursors[i - len(keys)]:
                    self.say("backward_cursor", f"{what} returned next_cursor "
                             f"{_cur(bytes(r.next_cursor))}, not the cursor before "
                             f"{_items(keys[:1])} ({_cur(cursors[i - len(keys)])}) that a "
                             "forward read returns")
                if not keys and i > 0:
                    self.say("backward", f"{what} returned no items, though "
                             f"{_items(want)} precede the cursor")

    def forward_from_each(self, cursors: List[bytes], ref: List[Hashable]) -> None:
        n = len(ref)
        for i in range(n + 1):
            cursor = cursors[i]
            if i > 0 and cursor == b"":
                continue
            for limit in self.limits:
                r = self.call(cursor, limit, Direction.FORWARD)
                if r is None:
                    continue
                what = _what(cursor, limit, Direction.FORWARD, None)
                keys = self.keys(r)
                want = ref[i:i + limit]
                if keys != want:
                    self.say("forward", f"{what} returned {_items(keys)}; the source holds "
                             f"{_items(want)} after that cursor")
                    continue
                end = i + len(keys) >= n
                if r.end_of_source and not end:
                    self.say("end", f"{what} claimed end_of_source with {n - i - len(keys)} "
                             "items still after it")
                if not keys and bytes(r.next_cursor) == cursor and not r.end_of_source:
                    self.say("stall", f"{what} at the source's end returned no items, its own "
                             "cursor and no end_of_source: a stall (say end_of_source=True)")

    def bounded(self, cursors: List[bytes], ref: List[Hashable]) -> None:
        n = len(ref)
        for i in range(n + 1):
            for j in range(i + 1, n + 1):
                a, u = cursors[i], cursors[j]
                if (i > 0 and a == b"") or u == b"":
                    continue
                for limit in self.limits:
                    r = self.call(a, limit, Direction.FORWARD, until=u)
                    if r is None:
                        continue
                    what = _what(a, limit, Direction.FORWARD, u)
                    keys = self.keys(r)
                    want = ref[i:min(j, i + limit)]
                    if keys != want:
                        self.say("bounded", f"{what} returned {_items(keys)}; it should "
                                 f"return {_items(want)} (the items after the cursor, up to "
                                 "and including the one before until, at most limit)")
                        continue
                    if len(keys) == j - i and len(keys) < limit and \
                            bytes(r.next_cursor) != u:
                        self.say("bounded_cursor", f"{what} reached until and returned "
                                 f"next_cursor {_cur(bytes(r.next_cursor))}, not until")
                    after = n - i - len(keys)
                    if r.end_of_source and after > 0:
                        self.say("bounded_end", f"{what} claimed end_of_source with {after} "
                                 "items after the last it returned: on a bounded read "
                                 "end_of_source says no item at all lies after the last one "
                                 "looked at, not that until was reached (a short page says "
                                 "that); the loader would end the view there and lose them")

    def check_locate(self, ref: List[Hashable]) -> None:
        """``locate(p)`` for every position: the cursor before item ``p``, or None."""
        assert self.locate is not None
        n = len(ref)
        for p in range(n + 1):
            try:
                c = self.locate(p)
            except Exception as e:  # noqa: BLE001 - reported, as a load's failure is
                self.say("locate", f"locate({p}) raised {type(e).__name__}: {e}")
                continue
            if c is None:
                continue
            if not isinstance(c, (bytes, bytearray, memoryview)):
                self.say("locate", f"locate({p}) returned {type(c).__name__}, not bytes or "
                         "None")
                continue
            r = self.call(bytes(c), 1, Direction.FORWARD)
            if r is None:
                continue
            keys = self.keys(r)
            if p < n and keys != ref[p:p + 1]:
                self.say("locate", f"locate({p}) returned {_cur(bytes(c))}, whose next item "
                         f"is {_items(keys)}, not item {p} ({ref[p]!r}): the loader would "
                         "number the view wrong from there")
            elif p == n and (keys or not r.end_of_source):
                self.say("locate", f"locate({p}), the source's end, returned {_cur(bytes(c))}"
                         f", with {_items(keys)} after it"
                         f"{'' if r.end_of_source else ' and no end_of_source'}")

    def empty_bounded(self, cursors: List[bytes], ref: List[Hashable]) -> None:
        """With ``delete``: deletes an item, then reads the gap it left with a bounded read
        from the cursor before it up to the cursor after it: nothing is left there, and the
        answer must move its cursor (``until`` itself), never repeat it."""
        assert self.delete is not None
        n = len(ref)
        if n < 3:
            return
        i = n // 2
        a, u = cursors[i], cursors[i + 1]
        if a == b"" or u == b"":
            return
        self.delete(ref[i])
        after = self.ref()
        if len(after) != n - 1:
            self.say("delete", f"delete({ref[i]!r}) left {len(after)} items, not {n - 1}")
            return
        for limit in self.limits:
            r = self.call(a, limit, Direction.FORWARD, until=u)
            if r is None:
                continue
            what = _what(a, limit, Direction.FORWARD, u)
            keys = self.keys(r)
            if keys:
                self.say("bounded", f"{what}, over the gap {ref[i]!r} left when it was "
                         f"deleted, returned {_items(keys)}; nothing is left up to until")
            elif bytes(r.next_cursor) == a and not r.end_of_source:
                self.say("empty_bounded", f"{what}, over the gap {ref[i]!r} left when it "
                         "was deleted, returned no items and next_cursor equal to its own "
                         "cursor: the loader takes that as a stalled cursor and falls back "
                         "to a full read. Return until itself as next_cursor: the scan "
                         "reached it")
        # Reads from a cursor whose item is gone still work (keyset cursors).
        r = self.call(u, 1, Direction.FORWARD)
        if r is not None and self.keys(r) != after[i:i + 1]:
            self.say("forward", f"{_what(u, 1, Direction.FORWARD, None)}, the cursor after "
                     f"the deleted {ref[i]!r}, returned {_items(self.keys(r))}, not "
                     f"{_items(after[i:i + 1])}")

    def run(self) -> List[str]:
        ref = self.ref()
        cursors: Optional[List[bytes]] = None
        for limit in self.limits:
            c = self.forward_walk(limit)
            if limit == 1 and c is not None:
                cursors = c
        if cursors is None:
            if not self.found:
                self.say("walk", "reading forward one item at a time did not reach the end")
            return self.sentences()
        self.forward_from_each(cursors, ref)
        self.backward(cursors, ref)
        if self.locate is not None:
            # Before ``delete`` changes the source.
            self.check_locate(ref)
        if self.until:
            self.bounded(cursors, ref)
            if self.delete is not None:
                self.empty_bounded(cursors, ref)
        return self.sentences()


async def _await(r: Awaitable[Any]) -> Any:
    return await r


def _what(cursor: bytes, limit: int, direction: Direction, until: Optional[bytes]) -> str:
    way = "backward" if direction is Direction.BACKWARD else "forward"
    bound = f" until {_cur(until)}" if until is not None else ""
    return f"load({_cur(cursor)}, {limit}, {way}{bound})"


def _cur(c: bytes) -> str:
    return "b\"\"" if not c else repr(bytes(c))


def _items(keys: Sequence[Hashable]) -> str:
    if not keys:
        return "no items"
    shown = ", ".join(repr(k) for k in keys[:4])
    return f"[{shown}{', ...' if len(keys) > 4 else ''}]"


def check_load(load: Load, reference: Reference, *, key: Optional[Callable[[Any], Hashable]] = None,
               delete: Optional[Callable[[Hashable], None]] = None,
               limits: Sequence[int] = (1, 2, 3),
               locate: Optional[Callable[[int], Optional[bytes]]] = None) -> List[str]:
    """Drives ``load`` through the host contract's cases and returns each violation as a
    sentence (an empty list: none found).

    ``reference``: what the source holds, in source order: a sequence of keys, or a function
    returning one (called again after ``delete``). ``key(item)`` maps an item a load returns
    to its reference key (default: the item itself). ``delete(key)``, if given, deletes that
    item from the source the load reads (a test table), to try an empty bounded read over the
    gap it leaves; the source is changed, so give a copy. ``limits``: the page sizes tried.

    The cases, each with every limit: forward from the start to the end (the items in order,
    no more than ``limit``, cursors that advance and never repeat, ``end_of_source`` at the
    end and not before, an empty page at the end that says so); forward from the cursor
    before every item and at the end; backward from every such cursor (the items just
    before it in source order, ``next_cursor`` the one a forward read returns before the
    first of them, ``b""`` and ``end_of_source`` at the start); bounded by ``until`` between
    every two cursors (the items up to ``until`` only, ``until`` itself as the cursor once the
    scan reaches it, and ``end_of_source`` only when no item at all lies after the last one
    returned: reaching ``until`` is not the source's end); with ``delete``, an empty bounded
    read; and with ``locate`` (the feed's ``locate=``: ``locate(position)`` returns the
    cursor before the item at that position, or None for unknown), every position from 0 to
    the end: a forward read of 1 from its cursor must return that item (at the end: nothing,
    and ``end_of_source``). The cursors are the load's own: the ones a forward walk one item
    at a time returned."""
    return _Tester(load, reference, key or (lambda x: x), delete, limits, locate).run()


def assert_load(load: Load, reference: Reference, **kw: Any) -> None:
    """:func:`check_load`, raising AssertionError with every violation, one a line."""
    found = check_load(load, reference, **kw)
    if found:
        raise AssertionError("the load function breaks the host contract:\n" +
                             "\n".join(f"- {s}" for s in found))
