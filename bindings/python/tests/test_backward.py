"""Anchored, bidirectional loading through the bindings: reads carry a direction, a deep
window's repair reads only around the window (forward from the anchor, then backward),
``max_pages`` bounds the view and scrolling back over released pages reads backward, and
``jump`` rebuilds the view around a cursor."""

from __future__ import annotations

from typing import List

import pytest

import libloader as L
from libloader import Config, Direction, Kind
from hosts import CountingHost, span


def at(n: int) -> bytes:
    return n.to_bytes(8, "big")


def check_view(h: CountingHost) -> L.Snapshot:
    """The view is the source's items under their own numbers, and covers the window."""
    s = h.loader.state
    view = h.loader.view()
    items = [x for p in view.pages for x in p.acquisition.items]
    assert items == list(range(s.covered_start, s.covered_end))
    assert s.end_of_source or s.covered_end >= s.window_start + s.window_len
    assert s.covered_start <= s.window_start
    return s


def test_the_direction_enum_mirrors_the_c_one() -> None:
    assert (Direction.FORWARD, Direction.BACKWARD) == (0, 1)
    assert L.aio.Direction is Direction and L._feed.Direction is Direction
    # A read made by hand is a forward one.
    assert L.Read(1, 1, Kind.FINITE, 0, 0, b"", 4).direction is Direction.FORWARD


def test_span_answers_both_ways() -> None:
    assert span(at(10), 4, Direction.FORWARD, 12) == (10, 12, at(12), True)
    assert span(at(10), 4, Direction.BACKWARD, 12) == (6, 10, at(6), False)
    assert span(at(3), 4, Direction.BACKWARD, 12) == (0, 3, b"", True)


def test_max_pages_is_a_checked_config_field() -> None:
    assert Config.defaults().max_pages == 64  # a bounded default (0 asks for no bound)
    assert Config(max_pages=7).to_c().max_pages == 7
    assert Config.from_c(Config(max_pages=(1 << 32) - 1).to_c()).max_pages == (1 << 32) - 1
    for bad, err in ((-1, ValueError), (1 << 32, ValueError), ("3", TypeError),
                     (True, TypeError), (2.0, TypeError)):
        with pytest.raises(err, match="max_pages"):
            Config(max_pages=bad)  # type: ignore[arg-type]


def scroll(h: CountingHost, positions: range, length: int, bound: int = 0) -> None:
    for pos in positions:
        h.loader.set_window(pos, length)
        h.drain()
        s = check_view(h)
        if bound:
            assert s.pages <= bound, f"{s.pages} pages held at window {pos}"


def test_a_deep_windows_repair_reads_only_around_the_window() -> None:
    page, prefetch, window = 50, 100, 200
    h = CountingHost(page, 100_000, prefetch_distance=prefetch, drop_margin=1_000)
    scroll(h, range(0, 50_001, 2_500), window)
    reads: List[L.Read] = []
    h.on_issue_hook = lambda host, read: reads.append(read)
    before = h.items_read
    h.loader.invalidate()
    h.drain()
    s = check_view(h)
    repaired = h.items_read - before
    assert s.window_start == 50_000 and s.covered_start <= 50_000 - prefetch
    assert s.covered_end >= 50_000 + window + prefetch
    assert repaired <= window + 2 * prefetch + 2 * page, repaired
    assert {r.kind for r in reads} == {Kind.CHAIN}
    back = [r for r in reads if r.direction is Direction.BACKWARD]
    assert back and back[0].cursor == at(50_000), "the chain reads back from the anchor"
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_scrolling_back_over_pages_max_pages_released_reads_backward() -> None:
    h = CountingHost(10, 1_000, prefetch_distance=10, max_pages=6)
    reads: List[L.Read] = []
    h.on_issue_hook = lambda host, read: reads.append(read)
    scroll(h, range(0, 400, 7), 10, bound=6)
    assert h.loader.state.covered_start > 0, "pages before the window were released"
    assert all(r.direction is Direction.FORWARD for r in reads)
    del reads[:]
    scroll(h, range(400, -1, -7), 10, bound=6)
    back = [r for r in reads if r.direction is Direction.BACKWARD]
    assert back and all(r.kind is Kind.FINITE for r in back)
    assert h.loader.state.covered_start == 0
    h.loader.close()
    assert h.ledger.released_exactly_once()


@pytest.mark.parametrize("cursor, position, err", [
    ("text", 0, TypeError), (12, 0, TypeError), ([1], 0, TypeError), (None, 0, TypeError),
    (b"", -1, ValueError), (b"", 1 << 64, ValueError), (b"", True, TypeError),
    (b"", 1.5, TypeError), (b"", "1", TypeError)])
def test_jump_checks_its_arguments(cursor: object, position: object,
                                   err: type) -> None:
    h = CountingHost(10, 100)
    with pytest.raises(err, match="cursor|position"):
        h.loader.jump(cursor, position)  # type: ignore[arg-type]
    assert h.issues == 0 and h.loader.state.window_start == 0
    h.loader.close()


def test_jump_starts_a_fresh_loader_there_and_repairs_a_held_view() -> None:
    h = CountingHost(10, 1_000, prefetch_distance=10)
    h.loader.jump(at(500), 500)                  # nothing held: a starting point
    assert h.loader.state.window_start == 500   # its prefetch may already be read
    h.loader.set_window(500, 20)
    h.drain()
    s = check_view(h)
    assert s.covered_start <= 490 and s.covered_end >= 530
    epoch = s.epoch
    h.loader.jump(at(200), 200)                  # a view held: invalidated, repaired there
    assert h.loader.state.epoch == epoch + 1
    assert h.pending and h.pending[0].cursor == at(200)
    h.drain()
    s = check_view(h)
    assert (s.window_start, s.window_len) == (200, 20) and s.covered_start <= 190
    with pytest.raises(L.CursorTooLongError):
        h.loader.jump(b"x" * (L.MAX_CURSOR_LEN + 1), 0)
    with pytest.raises(L.WindowOverflowError):
        h.loader.jump(at(5), (1 << 64) - 5)
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_host_that_counts_makes_positions_true_without_reading_to_the_start() -> None:
    # Numbered 10 by a jump, row 1,000 becomes position 1,000 once an answer says how many
    # rows come before it; the window moves with the numbers and stays on its row.
    h = CountingHost(50, 5_000, prefetch_distance=50)
    h.loader.jump(at(1_000), 10)
    h.loader.set_window(10, 100)
    while h.pending:
        read = h.take(0)
        lo, hi, nxt, end = span(read.cursor, read.limit, read.direction, h.length)
        acq = h.make_acq(tuple(range(lo, hi)))
        h.ledger.accepted[acq.n] = acq
        h.loader.settle(read, acq, next_cursor=nxt, end_of_source=end, items_before=lo)
    s = h.loader.state
    assert s.window_start == 1_000 and not s.start_of_source
    view = h.loader.view()
    assert all(p.start == p.acquisition.items[0] for p in view.pages)
    with pytest.raises(ValueError, match="items_before"):
        h.loader.settle(1, h.make_acq(()), items_before=-1)
    h.loader.close()
    assert h.ledger.released_exactly_once()


def test_a_config_starting_point_opens_the_loader_there() -> None:
    h = CountingHost(50, 10_000, prefetch_distance=50, initial_cursor=at(9_900),
                     initial_position=9_900)
    assert h.loader.state.window_start == 9_900
    h.loader.set_window(9_900, 100)
    h.drain()
    s = check_view(h)
    assert s.covered_start == 9_850 and s.covered_end == 10_000
    assert h.items_read <= 100 + 2 * 50 + 2 * 50
    with pytest.raises(TypeError, match="initial_cursor"):
        Config(initial_cursor="x")  # type: ignore[arg-type]
    h.loader.close()
