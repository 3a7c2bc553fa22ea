"""``libloader.testing``: the tester for load functions finds each host defect it is for and
passes an honest load; ``FakeSource`` reports its inserts and deletes as ranged
invalidations a feed repairs."""

from __future__ import annotations

from typing import List, Optional

import pytest

import libloader
from libloader import Config, Direction, LoadResult
from libloader.testing import FakeSource, assert_load, check_load


def fake(n: int = 7) -> "FakeSource[str]":
    return FakeSource(n, item=lambda i: f"k{i}")


def deleting(src: "FakeSource[str]"):  # type: ignore[no-untyped-def]
    return lambda key: src.delete(src.rows.index(key))


def test_an_honest_load_passes_every_case() -> None:
    src = fake()
    assert check_load(src.load, lambda: src.rows, delete=deleting(src)) == []
    assert len(src) == 6, "the empty bounded read deleted one item"
    # Unbounded loads (no `until`) and async ones too.
    plain = fake()
    assert check_load(lambda c, n, d: plain.load(c, n, d), plain.rows) == []
    assert check_load(fake().aload, fake().rows) == []
    assert check_load(fake(0).load, []) == []


def test_it_finds_an_empty_bounded_read_answered_with_its_own_cursor() -> None:
    src = fake()

    def load(cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> LoadResult[str]:
        r = src.load(cursor, limit, direction, until)
        if until is not None and not r.items:
            return LoadResult([], cursor, False)   # the defect: its own cursor
        return r

    found = check_load(load, lambda: src.rows, delete=deleting(src))
    assert found and all("over the gap" in s for s in found), found
    assert "next_cursor equal to its own cursor" in found[0]
    assert "Return until itself as next_cursor" in found[0]
    with pytest.raises(AssertionError, match="breaks the host contract"):
        assert_load(load, lambda: fake().rows, delete=deleting(fake()))


def test_it_finds_backward_reads_answered_with_the_items_after_the_cursor() -> None:
    src = fake()

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        return src.load(cursor, limit, Direction.FORWARD)   # the defect: ignores direction

    found = check_load(load, src.rows)
    assert any("the items AFTER the cursor" in s for s in found), found
    assert all("backward" in s or "more like" in s for s in found), found


def test_it_finds_a_load_that_never_advances_its_cursor() -> None:
    src = fake()

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        r = src.load(cursor, limit, direction)
        return LoadResult(r.items, cursor, r.end_of_source)   # the defect

    found = check_load(load, src.rows)
    assert found and "the cursor never advances" in found[0], found


def test_it_finds_an_end_claimed_early_and_a_limit_broken() -> None:
    src = fake()

    def early(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        r = src.load(cursor, limit, direction)
        return LoadResult(r.items, r.next_cursor, True)

    assert any("claimed end_of_source" in s for s in check_load(early, src.rows))

    def greedy(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        return src.load(cursor, limit + 1, direction)

    assert any("more than its limit" in s for s in check_load(greedy, src.rows))


def test_it_finds_a_bounded_read_that_claims_the_end_at_until() -> None:
    src = fake()

    def load(cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> LoadResult[str]:
        r = src.load(cursor, limit, direction, until)
        if until is not None and len(r.items) < limit:
            return LoadResult(r.items, r.next_cursor, True)   # the defect: until is no end
        return r

    found = check_load(load, src.rows)
    assert found and all("bounded" in s or "more like" in s for s in found), found
    assert "claimed end_of_source with" in found[0]
    assert "lose them" in found[0]
    # The honest one's bounded reads claim the end only when nothing follows.
    assert check_load(fake().load, fake().rows) == []


def test_it_checks_locate() -> None:
    src = fake()
    assert check_load(src.load, src.rows, locate=src.cursor_at) == []
    # Unknown is always allowed.
    assert check_load(src.load, src.rows, locate=lambda p: None) == []
    found = check_load(src.load, src.rows, locate=lambda p: src.cursor_at(p + 1))
    assert found and all("locate(" in s or "more like" in s for s in found), found
    assert "not item 0" in found[0]
    found = check_load(src.load, src.rows, locate=lambda p: "k0")  # type: ignore
    assert found and "not bytes or None" in found[0]


def test_many_violations_of_one_kind_are_counted_not_all_told() -> None:
    src = FakeSource(30)

    def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[str]:
        return src.load(cursor, limit, Direction.FORWARD)

    found = check_load(load, src.rows)
    assert len(found) <= 8 and any("more like the last" in s for s in found), found


def test_fake_source_reports_inserts_and_deletes_as_ranged_invalidations() -> None:
    src: FakeSource[str] = FakeSource(200)
    cfg = Config(page_size=10, prefetch_distance=0)
    with libloader.Feed(src.load, config=cfg, compare=FakeSource.compare,
                        on_release=src.on_release) as feed:
        feed.set_window(0, 100)
        assert feed.settled(10)
        src.insert(35, "new", feed=feed)
        src.delete(80, feed=feed)
        assert feed.settled(10)
        assert feed.items() == src.rows[:len(feed.items())] and "new" in feed.items()
        assert feed.stats().ranged_repairs >= 1
        assert src.bounded, "the repair read with bounded loads"
    assert src.released_exactly_once()


def test_fake_source_cursors_survive_changes_around_them() -> None:
    src: FakeSource[int] = FakeSource(range(5))
    at3 = src.cursor_at(3)
    src.insert(0, -1)
    src.delete(2)
    assert src.index_of(at3) == 3 and src.load(at3, 2).items == [3, 4]
    assert src.load(at3, 5, Direction.BACKWARD).items == [-1, 0, 2]
    seen: List[int] = []
    src.fail = lambda start, attempt: attempt == 1
    with pytest.raises(OSError):
        src.load(b"", 1)
    seen.extend(src.load(b"", 1).items)
    assert seen == [-1] and src.calls == [3, 0, 0] and src.backward == [3]
