"""Far moves from Python: ``Loader(locate=...)``, a feed's ``locate=`` or its load function's
``locate`` attribute; a move far from the held pages starts at the cursor ``locate`` gives and
reads about the window plus prefetch; None falls back to the walk; what ``locate`` raises is
re-raised by ``set_window``; scrolling back to the top after pages were released reads the
window, not the distance; the default config bounds the pages held."""

from __future__ import annotations

from collections import deque
from typing import Deque, Dict, List, Optional, Tuple

import pytest

import libloader
from libloader import Config, Direction, Feed, LoadResult, Loader, Read

PAGE, PREFETCH, WINDOW = 50, 50, 100
TARGET = WINDOW + 2 * PREFETCH + 2 * PAGE


def cursor_at(n: int) -> bytes:
    return n.to_bytes(8, "big") if n else b""


def index_of(cursor: bytes) -> int:
    return int.from_bytes(cursor, "big") if cursor else 0


class Host:
    """A numbered source of ``n`` items answered synchronously, in order."""

    def __init__(self, n: int, locate: Optional[object] = None, **config: int) -> None:
        self.n = n
        self.reads: Deque[Read] = deque()
        self.held: Dict[int, Tuple[int, int]] = {}
        self.max_held = 0
        cfg = Config(page_size=PAGE, prefetch_distance=PREFETCH, **config)  # type: ignore[arg-type]
        self.loader: Loader[Tuple[int, int]] = Loader(
            self.reads.append, self.release, config=cfg,
            locate=locate)  # type: ignore[arg-type]

    def release(self, acq: Tuple[int, int]) -> None:
        del self.held[id(acq)]

    def run(self) -> None:
        while self.reads:
            r = self.reads.popleft()
            at = index_of(r.cursor)
            if r.direction is Direction.BACKWARD:
                lo = max(at - r.limit, 0)
                first, count, nxt, end = lo, at - lo, cursor_at(lo), lo == 0
            else:
                hi = min(at + r.limit, self.n)
                first, count, nxt, end = at, hi - at, cursor_at(hi), hi == self.n
            acq = (first, count)
            self.held[id(acq)] = acq
            self.loader.settle(r, acq, count=count, next_cursor=nxt, end_of_source=end)
            self.max_held = max(self.max_held, len(self.held))

    def move(self, start: int) -> int:
        """Moves the window and answers everything; returns the items read."""
        before = self.loader.stats().items_read
        self.loader.set_window(start, WINDOW)
        self.run()
        return self.loader.stats().items_read - before

    def view_is_the_source(self) -> bool:
        pages = self.loader.view().pages
        at = pages[0].start
        for p in pages:
            first, count = p.acquisition
            if first != p.start or p.start != at:
                return False
            at += count
        return self.loader.state.quiescent


def test_locate_makes_a_far_move_cost_the_window() -> None:
    asked: List[int] = []

    def locate(position: int) -> Optional[bytes]:
        asked.append(position)
        return cursor_at(position)

    h = Host(1_000_000, locate=locate, max_pages=8)
    h.move(0)
    read = h.move(600_000)
    assert asked == [600_000]
    assert read <= TARGET
    assert h.view_is_the_source()
    assert h.loader.stats().located == 1
    assert h.move(600_000 + WINDOW) <= TARGET and asked == [600_000]  # near: not asked
    h.loader.close()
    assert not h.held


def test_unknown_walks_and_what_locate_raises_comes_back_out() -> None:
    calls: List[int] = []
    fail = [False]

    def locate(position: int) -> Optional[bytes]:
        calls.append(position)
        if fail[0]:
            raise KeyError(position)
        return None

    h = Host(50_000, locate=locate, max_pages=8)
    h.move(0)
    read = h.move(10_000)
    assert calls == [10_000] and read >= 10_000 - PREFETCH
    assert h.loader.stats().locate_unknown == 1 and h.loader.stats().far_jumps == 0
    assert h.view_is_the_source()
    fail[0] = True
    with pytest.raises(KeyError) as info:
        h.loader.set_window(40_000, WINDOW)
    assert libloader.callback_context(info.value) is not None
    h.run()                                   # the move walked: the view gets there
    s = h.loader.state
    assert h.view_is_the_source() and (s.window_start, s.window_len) == (40_000, WINDOW)
    assert h.max_held <= 8 + 1 + 6
    h.loader.close()
    assert not h.held


def test_a_wrong_answer_is_refused_by_type_not_by_guess() -> None:
    h = Host(10_000, locate=lambda position: "not bytes", max_pages=8)
    h.move(0)
    with pytest.raises(TypeError, match="locate must return bytes"):
        h.loader.set_window(5_000, WINDOW)
    h.run()
    assert h.view_is_the_source()
    h.loader.close()
    with pytest.raises(TypeError, match="locate must be callable"):
        Loader(lambda r: None, lambda a: None, locate=3)  # type: ignore[arg-type]


def test_back_to_the_top_reads_the_window_with_no_locate() -> None:
    h = Host(100_000, max_pages=8)
    for at in range(0, 10_001, WINDOW):
        h.move(at)
    assert h.move(0) <= TARGET
    assert h.loader.stats().far_jumps == 1
    assert h.view_is_the_source()
    assert h.move(5_000) <= TARGET          # visited before: the memo
    assert h.view_is_the_source()
    h.loader.close()


def test_the_default_config_is_bounded_and_far_moves_are_on() -> None:
    d = Config.defaults()
    assert d.max_pages == 64
    assert d.jump_threshold == libloader.JUMP_THRESHOLD_AUTO
    assert d.cursor_memo_bytes and d.cursor_memo_bytes > 0
    h = Host(100_000)
    h.move(0)
    h.move(50_000)                            # a walk, with nothing to locate
    assert h.max_held <= 64 + 1 + 6
    h.loader.close()


class Rows:
    """A feed's source: rows ``0..n``; ``locate`` is an attribute of the load function."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.loads: List[int] = []

    def load(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[int]:
        at = index_of(cursor)
        self.loads.append(at)
        if direction is Direction.BACKWARD:
            lo = max(at - limit, 0)
            return LoadResult(list(range(lo, at)), cursor_at(lo), lo == 0)
        hi = min(at + limit, self.n)
        return LoadResult(list(range(at, hi)), cursor_at(hi), hi == self.n)


def test_a_feed_takes_locate_from_its_load_function() -> None:
    rows = Rows(200_000)

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[int]:
        return rows.load(cursor, limit, direction)

    load.locate = cursor_at  # type: ignore[attr-defined]
    cfg = Config(page_size=PAGE, prefetch_distance=PREFETCH)
    with Feed(load, config=cfg, max_workers=2) as feed:
        feed.set_window(0, WINDOW)
        assert feed.settled(10)
        before = len(rows.loads)
        feed.set_window(150_000, WINDOW)
        assert feed.settled(10)
        items = feed.items()
        at = items.index(150_000)
        assert items[at:at + WINDOW] == list(range(150_000, 150_000 + WINDOW))
        assert len(rows.loads) - before <= TARGET // PAGE
        assert feed.stats().located == 1
