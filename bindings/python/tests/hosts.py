"""Test hosts for the bindings: the C suite's numbered source, a keyed source with ties, and
bookkeeping that proves exactly-once release."""

from __future__ import annotations

import bisect
import random
import struct
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from libloader import (Answer, Config, Direction, Loader, LoaderError, Read, Result,
                       callback_context)


def span(cursor: bytes, limit: int, direction: Direction, length: int,
         width: int = 8) -> Tuple[int, int, bytes, bool]:
    """A read over items ``0..length-1`` whose cursor is the big-endian position (``width``
    bytes) between items, empty the source's start: ``(lo, hi, next_cursor, end)``, the
    items ``[lo, hi)`` it returns in source order. Forward: the items after the cursor, the
    cursor after them, the source's end reached. Backward: the items before the cursor, the
    cursor before them (empty at the source's start), the source's start reached."""
    at = min(int.from_bytes(cursor, "big") if cursor else 0, length)
    if direction is Direction.BACKWARD:
        lo = max(at - limit, 0)
        return lo, at, lo.to_bytes(width, "big") if lo else b"", lo == 0
    hi = min(at + limit, length)
    return at, hi, hi.to_bytes(width, "big"), hi == length


@dataclass(eq=False)
class Acq:
    """An acquisition: the items one read produced. Compared by identity."""

    n: int
    items: Tuple[object, ...]
    cursor: bytes = b""
    """The cursor just before the first item: where a forward read started, or where a
    backward read ended."""

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class Ledger:
    """The host's record of what it lent the loader and what came back."""

    offered: Dict[int, Acq] = field(default_factory=dict)
    accepted: Dict[int, Acq] = field(default_factory=dict)
    released: Dict[int, int] = field(default_factory=dict)
    bad_releases: List[object] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_release(self, acq: object) -> None:
        with self.lock:
            if not isinstance(acq, Acq) or acq.n not in self.offered:
                self.bad_releases.append(acq)
                return
            self.released[acq.n] = self.released.get(acq.n, 0) + 1

    def held(self) -> int:
        """Accepted and not yet released."""
        with self.lock:
            return sum(1 for n in self.accepted if self.released.get(n, 0) == 0)

    def released_exactly_once(self) -> bool:
        with self.lock:
            return (not self.bad_releases
                    and all(self.released.get(n, 0) == 1 for n in self.accepted)
                    and all(n in self.accepted for n in self.released))


def refused(e: BaseException) -> bool:
    """Whether an exception out of ``settle`` means the acquisition was refused: a library
    error of the call itself, not an exception a callback raised after the call completed."""
    ctx = callback_context(e)
    return ctx.result is not Result.OK if ctx else isinstance(e, LoaderError)


class CountingHost:
    """The C suite's host: items 0..len-1; a cursor is the 8-byte big-endian index of the next
    item, empty is the start. Reads queue in ``pending``; ``answer`` settles one."""

    def __init__(self, page_size: int, length: int, **config: object) -> None:
        self.pending: List[Read] = []
        self.length = length
        self.ledger = Ledger()
        self.next_acq = 1
        self.issues = self.changes = self.cancels = 0
        self.on_issue_hook: Optional[Callable[["CountingHost", Read], None]] = None
        self.on_release_hook: Optional[Callable[["CountingHost", object], None]] = None
        self.on_change_hook: Optional[Callable[["CountingHost"], None]] = None
        self.items_read = 0
        """Items of every answer given (either direction)."""
        settings: Dict[str, object] = {"page_size": page_size, "prefetch_distance": 0, **config}
        cfg = Config(**settings)  # type: ignore[arg-type]
        self.loader = Loader(self._issue, self._release, on_change=self._change,
                             on_cancel=self._cancel, config=cfg)

    def _issue(self, read: Read) -> None:
        self.issues += 1
        self.pending.append(read)
        if self.on_issue_hook:
            self.on_issue_hook(self, read)

    def _release(self, acq: object) -> None:
        self.ledger.on_release(acq)
        if self.on_release_hook:
            self.on_release_hook(self, acq)

    def _change(self) -> None:
        self.changes += 1
        if self.on_change_hook:
            self.on_change_hook(self)

    def _cancel(self, read_id: int) -> None:
        self.cancels += 1

    def take(self, i: int = 0) -> Read:
        return self.pending.pop(i)

    def find(self, kind: object) -> Optional[int]:
        for i, r in enumerate(self.pending):
            if r.kind == kind:
                return i
        return None

    def make_acq(self, items: Tuple[object, ...], cursor: bytes = b"") -> Acq:
        acq = Acq(self.next_acq, items, cursor)
        self.next_acq += 1
        self.ledger.offered[acq.n] = acq
        return acq

    def answer(self, read: Read) -> Answer:
        """Settles ``read`` from the source, either direction; raises what the loader
        raises."""
        lo, hi, nxt, end = span(read.cursor, read.limit, read.direction, self.length)
        self.items_read += hi - lo
        before = nxt if read.direction is Direction.BACKWARD else read.cursor
        acq = self.make_acq(tuple(range(lo, hi)), before)
        # Marked first: the loader may release it before settle returns.
        self.ledger.accepted[acq.n] = acq
        try:
            return self.loader.settle(read, acq, next_cursor=nxt, end_of_source=end)
        except BaseException as e:
            if refused(e):
                del self.ledger.accepted[acq.n]
            raise

    def drain(self) -> None:
        guard = 0
        while self.pending and guard < 100000:
            guard += 1
            self.answer(self.take(0))


# ---- a keyed source with ties, for the randomized and thread tests ----

Key = Tuple[int, int]
"""(key, id): the tiebreaker id makes every position unique."""


def encode(key: Key) -> bytes:
    return struct.pack(">qq", *key)


def decode(cursor: bytes) -> Optional[Key]:
    if not cursor:
        return None
    k, i = struct.unpack(">qq", cursor)
    return (k, i)


class KeyedSource:
    """A sorted list of (key, id) with many equal keys; keyset pagination over it."""

    def __init__(self, rng: random.Random, n: int, key_range: int) -> None:
        self.rng = rng
        self.key_range = key_range
        self.next_id = 1
        self.rows: List[Key] = []
        self.lock = threading.Lock()
        for _ in range(n):
            self.insert()

    def insert(self) -> None:
        with self.lock:
            row = (self.rng.randrange(self.key_range), self.next_id)
            self.next_id += 1
            bisect.insort(self.rows, row)

    def delete(self) -> None:
        with self.lock:
            if self.rows:
                del self.rows[self.rng.randrange(len(self.rows))]

    def read(self, cursor: bytes, limit: int, direction: Direction = Direction.FORWARD
             ) -> Tuple[Tuple[Key, ...], bytes, bool]:
        """Forward: the items after ``cursor``, the cursor after them, and whether the
        source ended. Backward: the items before ``cursor`` (in source order), the cursor
        before them (the key of the item before the first, empty at the source's start),
        and whether the start was reached. A cursor names the position after its key."""
        with self.lock:
            after = decode(cursor)
            i = 0 if after is None else bisect.bisect_right(self.rows, after)
            if direction is Direction.BACKWARD:
                lo = max(i - limit, 0)
                items = tuple(self.rows[lo:i])
                return items, encode(self.rows[lo - 1]) if lo else b"", lo == 0
            items = tuple(self.rows[i:i + limit])
            end = i + len(items) >= len(self.rows)
        nxt = encode(items[-1]) if items else cursor
        return items, nxt, end

    def after(self, cursor: bytes) -> List[Key]:
        with self.lock:
            after = decode(cursor)
            i = 0 if after is None else bisect.bisect_right(self.rows, after)
            return self.rows[i:]
