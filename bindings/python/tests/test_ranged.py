"""Ranged invalidation from Python: ``Loader.invalidate_range`` with a ``compare`` callback,
bounded reads (``Read.until``), and the feeds' ``invalidate_range`` over a keyed source whose
cursors are keys (stable under inserts and deletes)."""

from __future__ import annotations

import asyncio
import bisect
from typing import Any, Dict, List, Optional, Tuple

import pytest

import libloader
from hosts import Acq, Ledger, decode, encode, refused
from libloader import (Config, Direction, Kind, Loader, LoadResult, NoCompareError, Read,
                       RangeReversedError, _ffi, callback_context)

requires_ranged = pytest.mark.skipif(
    not hasattr(_ffi.lib(), "loader_invalidate_range"),
    reason="libloader was built without ranged invalidation (no loader_invalidate_range)")
"""Marks a test that needs the C export."""

Key = Tuple[int, int]
PAGE = 10


def compare(a: bytes, b: bytes) -> int:
    """Orders two non-empty cursors as the source does: by (key, id)."""
    x, y = decode(a), decode(b)
    assert x is not None and y is not None, "compare gets non-empty cursors only"
    return (x > y) - (x < y)


class Rows:
    """A sorted list of (key, id): keys 10, 20, ... so rows can be inserted between."""

    def __init__(self, n: int) -> None:
        self.rows: List[Key] = [(10 * (i + 1), i + 1) for i in range(n)]
        self.next_id = n + 1

    def insert(self, key: int) -> Key:
        row = (key, self.next_id)
        self.next_id += 1
        bisect.insort(self.rows, row)
        return row

    def delete(self, index: int) -> Key:
        return self.rows.pop(index)

    def read(self, cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes]) -> Tuple[List[Key], bytes, bool]:
        """Keyset pagination, bounded by ``until`` (the rows at or before it) when given."""
        after = decode(cursor)
        i = 0 if after is None else bisect.bisect_right(self.rows, after)
        if direction is Direction.BACKWARD:
            assert until is None, "bounded reads are forward"
            lo = max(i - limit, 0)
            return self.rows[lo:i], encode(self.rows[lo - 1]) if lo else b"", lo == 0
        end = len(self.rows)
        if until is not None:
            bound = decode(until)
            end = 0 if bound is None else bisect.bisect_right(self.rows, bound)
        items = self.rows[i:min(i + limit, max(end, i))]
        nxt = encode(items[-1]) if items else cursor
        return items, nxt, i + len(items) >= len(self.rows)


class Host:
    """A loader over :class:`Rows`, answering its reads by hand."""

    def __init__(self, rows: Rows, with_compare: bool = True, **config: Any) -> None:
        self.rows = rows
        self.pending: List[Read] = []
        self.ledger = Ledger()
        self.reads: List[Read] = []
        self.items_read = 0
        self.next_acq = 1
        settings: Dict[str, Any] = {"page_size": PAGE, "prefetch_distance": 0, **config}
        self.loader: Loader[Acq] = Loader(self.pending.append, self.ledger.on_release,
                                          config=Config(**settings),
                                          compare=compare if with_compare else None)

    def answer(self, read: Read) -> None:
        items, nxt, end = self.rows.read(read.cursor, read.limit, read.direction, read.until)
        self.reads.append(read)
        self.items_read += len(items)
        before = nxt if read.direction is Direction.BACKWARD else read.cursor
        acq = Acq(self.next_acq, tuple(items), before)
        self.next_acq += 1
        self.ledger.offered[acq.n] = acq
        self.ledger.accepted[acq.n] = acq
        try:
            self.loader.settle(read, acq, next_cursor=nxt, end_of_source=end)
        except BaseException as e:
            if refused(e):
                del self.ledger.accepted[acq.n]
            raise

    def drain(self) -> None:
        for _ in range(10_000):
            if not self.pending:
                return
            self.answer(self.pending.pop(0))
        raise AssertionError("the reads never ended")

    def view_items(self) -> List[Key]:
        return [x for p in self.loader.view().pages
                for x in p.acquisition.items]  # type: ignore[misc]

    def acquisitions(self) -> List[int]:
        return [p.acquisition.n for p in self.loader.view().pages]

    def close(self) -> None:
        self.loader.close()
        assert self.ledger.released_exactly_once()


def held(rows: int = 1000, window: int = 400, **config: Any) -> Host:
    """A host whose view holds ``window // PAGE`` pages from the source's start."""
    h = Host(Rows(rows), **config)
    h.loader.set_window(0, window)
    h.drain()
    assert h.view_items() == h.rows.rows[:window]
    return h


def repair(h: Host) -> Tuple[int, List[Read]]:
    """Answers the repair's reads: the items they read, and the reads."""
    before_items, before_reads = h.items_read, len(h.reads)
    h.drain()
    s = h.loader.state
    assert s.quiescent and not s.revalidating and s.cover_epoch == s.epoch
    return h.items_read - before_items, h.reads[before_reads:]


@requires_ranged
def test_one_insert_rereads_at_most_two_pages_and_keeps_the_others() -> None:
    h = held()
    pages = h.acquisitions()
    starts = [p.start for p in h.loader.view().pages]
    assert len(pages) == 40
    row = h.rows.insert(2055)                       # inside page 20 (rows 201..210)
    h.loader.invalidate_range(encode(row), encode(row))
    read, reads = repair(h)
    assert 0 < read <= 2 * PAGE
    assert reads and all(r.kind is Kind.CHAIN and r.until is not None
                         and r.direction is Direction.FORWARD for r in reads)
    view = h.view_items()
    assert view == h.rows.rows[:len(view)] and row in view and len(view) == 401
    now = h.acquisitions()
    kept = [n for n in pages if n in now]
    assert len(kept) >= len(pages) - 2 and kept == [n for n in now if n in pages]
    # The pages after the change moved by one; those before it did not.
    new_starts = {p.acquisition.n: p.start for p in h.loader.view().pages}
    for n, start in zip(pages, starts):
        if n in new_starts:
            assert new_starts[n] == (start + 1 if start > 200 else start)
    st = h.loader.stats()
    assert st.ranged_invalidations == 1 and st.ranged_repairs == 1
    h.close()


@requires_ranged
def test_a_delete_rereads_its_page_only() -> None:
    h = held()
    pages = h.acquisitions()
    row = h.rows.delete(155)
    h.loader.invalidate_range(encode(row), encode(row))
    read, reads = repair(h)
    repaired = sum(1 for r in reads if r.until is not None)
    assert repaired >= 1 and 0 < read <= 2 * PAGE + PAGE   # + the page that refills the window
    view = h.view_items()
    assert view == h.rows.rows[:len(view)] and row not in view and len(view) >= 400
    assert len([n for n in pages if n in h.acquisitions()]) >= len(pages) - 2
    h.close()


@requires_ranged
def test_a_change_outside_the_held_pages_reads_nothing() -> None:
    h = held(window=100)
    pages = h.acquisitions()
    epoch = h.loader.state.epoch
    row = h.rows.insert(9005)                       # far after the 100 rows held
    h.loader.invalidate_range(encode(row), encode(row))
    assert not h.pending
    read, _ = repair(h)
    assert read == 0 and h.acquisitions() == pages
    # Nothing held and nothing in flight can contain the change: no repair starts at all,
    # and the view stays current.
    s = h.loader.state
    assert s.epoch == epoch == s.cover_epoch and s.quiescent
    assert h.loader.stats().ranged_repairs == 0
    assert h.loader.stats().ranged_invalidations == 1
    h.close()


@requires_ranged
def test_the_whole_source_as_a_range_rereads_every_page() -> None:
    h = held(window=100)
    pages = h.acquisitions()
    h.loader.invalidate_range(b"", None)
    read, reads = repair(h)
    assert read >= 100 and not set(pages) & set(h.acquisitions())
    assert h.view_items() == h.rows.rows[:100]
    h.close()


@requires_ranged
def test_without_compare_the_range_is_refused_and_nothing_changes() -> None:
    h = held(window=100, with_compare=False)
    before, stats = h.loader.state, h.loader.stats()
    with pytest.raises(NoCompareError) as e:
        h.loader.invalidate_range(encode((15, 0)), encode((15, 0)))
    assert e.value.code is libloader.Result.NO_COMPARE
    assert callback_context(e.value) is None
    assert h.loader.state == before and h.loader.stats() == stats and not h.pending
    h.close()


@requires_ranged
def test_a_reversed_range_is_refused_and_nothing_changes() -> None:
    h = held(window=100)
    before = h.loader.state
    with pytest.raises(RangeReversedError):
        h.loader.invalidate_range(encode((500, 50)), encode((100, 10)))
    with pytest.raises(RangeReversedError):
        h.loader.invalidate_range(encode((500, 50)), b"")   # to the source's start
    assert h.loader.state == before and not h.pending
    assert h.loader.stats().ranged_invalidations == 0
    h.close()


@requires_ranged
def test_an_exception_in_compare_is_reraised_by_invalidate_range() -> None:
    h = held(window=100)

    def bad(a: bytes, b: bytes) -> int:
        raise ZeroDivisionError("compare broke")

    h.loader._host.compare = bad
    with pytest.raises(ZeroDivisionError) as e:
        h.loader.invalidate_range(encode((100, 10)), encode((200, 20)))
    ctx = callback_context(e.value)
    assert ctx is not None and ctx.callback.startswith("compare(")
    assert ctx.call == "loader_invalidate_range"
    h.loader._host.compare = compare
    h.loader.invalidate()                           # as the documentation advises
    h.drain()
    assert h.view_items() == h.rows.rows[:100]
    h.close()


def test_cursors_must_be_bytes() -> None:
    h = Host(Rows(10))
    with pytest.raises(TypeError, match="from_cursor"):
        h.loader.invalidate_range("a", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to_cursor"):
        h.loader.invalidate_range(b"", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="compare"):
        Loader(print, print, compare=3)  # type: ignore[arg-type]
    h.close()


# ---- the feeds ----


class Source:
    """:class:`Rows` behind a load function that honours ``until``, counting what it reads."""

    def __init__(self, n: int) -> None:
        self.rows = Rows(n)
        self.bounded = self.bounded_items = 0

    def load(self, cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> LoadResult[Key]:
        items, nxt, end = self.rows.read(cursor, limit, direction, until)
        if until is not None:
            self.bounded += 1
            self.bounded_items += len(items)
        return LoadResult(items, nxt, end_of_source=end)


@requires_ranged
def test_the_feed_repairs_a_range_with_bounded_loads() -> None:
    src = Source(1000)
    cfg = Config(page_size=PAGE, prefetch_distance=0)
    with libloader.Feed(src.load, config=cfg, compare=compare) as feed:
        feed.set_window(0, 300)
        assert feed.settled(timeout=10)
        row = src.rows.insert(1234)
        feed.invalidate_range(encode(row), encode(row))
        assert feed.settled(timeout=10)
        items = feed.items()
        assert items == src.rows.rows[:len(items)] and row in items
        assert src.bounded >= 1 and 0 < src.bounded_items <= 2 * PAGE
        assert feed.stats().ranged_repairs == 1


@requires_ranged
def test_the_asyncio_feed_repairs_a_range_with_bounded_loads() -> None:
    src = Source(500)

    async def load(cursor: bytes, limit: int, direction: Direction,
                   until: Optional[bytes] = None) -> LoadResult[Key]:
        await asyncio.sleep(0)
        return src.load(cursor, limit, direction, until)

    async def main() -> List[Key]:
        cfg = Config(page_size=PAGE, prefetch_distance=0)
        async with libloader.aio.Feed(load, config=cfg, compare=compare) as feed:
            feed.set_window(0, 200)
            assert await feed.settled(timeout=10)
            row = src.rows.delete(42)
            feed.invalidate_range(encode(row), encode(row))
            assert await feed.settled(timeout=10)
            return feed.items()

    items = asyncio.run(main())
    # 199 rows kept or re-read, and the page that refills the window.
    assert items == src.rows.rows[:len(items)] and len(items) >= 200
    assert 0 < src.bounded_items <= 2 * PAGE


def test_the_feed_needs_compare_and_a_load_that_takes_until() -> None:
    src = Source(10)

    def plain(cursor: bytes, limit: int, direction: Direction) -> LoadResult[Key]:
        return src.load(cursor, limit, direction)

    with libloader.Feed(src.load) as feed:
        with pytest.raises(TypeError, match="compare="):
            feed.invalidate_range(b"", None)
    with libloader.Feed(plain, compare=compare) as feed:
        with pytest.raises(TypeError, match="until="):
            feed.invalidate_range(b"", None)
        assert feed.state.epoch == 0


def test_until_is_passed_only_to_a_load_that_accepts_it() -> None:
    seen: List[Dict[str, Any]] = []

    def by_name(cursor: bytes, limit: int, direction: Direction, *,
                until: Optional[bytes] = None) -> LoadResult[int]:
        seen.append({"until": until})
        return LoadResult([], cursor, end_of_source=True)

    def by_kwargs(cursor: bytes, limit: int, direction: Direction,
                  **kw: Any) -> LoadResult[int]:
        seen.append(kw)
        return LoadResult([], cursor, end_of_source=True)

    def without(cursor: bytes, limit: int, direction: Direction) -> LoadResult[int]:
        seen.append({})
        return LoadResult([], cursor, end_of_source=True)

    for load, want in ((by_name, {"until": None}), (by_kwargs, {"until": None}),
                       (without, {})):
        seen.clear()
        with libloader.Feed(load) as feed:
            feed.set_window(0, 10)
            assert feed.settled(timeout=10)
        assert seen and all(s == want for s in seen), (load.__name__, seen)


def test_compare_called_inside_a_feed_answer_reaches_the_users_compare() -> None:
    """A settle decides a ranged change a forward read may contain with ``compare``, on the
    thread answering the read: a feed's worker thread, or the event loop's. The user's compare
    runs there (it was taken as "equal", its RuntimeError kept on that thread and never
    reported), and what it raises goes to ``errors``."""
    import threading
    import time

    rows = [2000]
    calls: List[str] = []

    def load(cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> LoadResult[int]:
        time.sleep(0.002)
        start = int.from_bytes(cursor, "big") if cursor else 0
        if direction is Direction.BACKWARD:
            s = max(0, start - limit)
            return LoadResult(list(range(s, start)), s.to_bytes(8, "big") if s else b"", s == 0)
        end = min(start + limit, rows[0])
        if until is not None:
            end = min(end, int.from_bytes(until, "big"))
        return LoadResult(list(range(start, end)), end.to_bytes(8, "big"),
                          end == rows[0] and until is None)

    def by_key(a: bytes, b: bytes) -> int:
        calls.append(threading.current_thread().name)
        x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
        return (x > y) - (x < y)

    with libloader.Feed(load, compare=by_key,
                        config=Config(page_size=20, prefetch_distance=20)) as feed:
        feed.set_window(0, 60)
        assert feed.settled(5)
        for i in range(300):
            feed.set_window(i * 5, 60)
            rows[0] += 1
            feed.invalidate_range((rows[0] - 1).to_bytes(8, "big"), None)
            time.sleep(0.001)
            if any(name != threading.current_thread().name for name in calls):
                break
        assert feed.settled(10)
        assert not feed.errors
    assert any(name != threading.current_thread().name for name in calls), \
        "compare never ran inside an answer on a worker thread"
