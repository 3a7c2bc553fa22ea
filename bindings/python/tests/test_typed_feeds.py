"""Both feeds are typed end to end: the item type a load function returns is the feed's, in
``items()``, ``pages()``, snapshots and ``on_release``, for :class:`libloader.Feed` and for
:class:`libloader.aio.Feed` (``async with aio.Feed(load) as feed`` is ``aio.Feed[Row]``, not
``aio.Feed[Any]``). ``make py-mypy`` checks this file with ``mypy --strict``; pytest runs it,
and (when mypy is installed) checks that mypy rejects a program that mixes the item types up,
so the annotations cannot silently decay to ``Any``."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, List, Tuple

import pytest

import libloader as L
from libloader import aio

if TYPE_CHECKING:
    from typing import assert_type
else:
    def assert_type(value: Any, _type: Any) -> Any:
        return value

Row = Tuple[int, str]


def rows(cursor: bytes, limit: int) -> L.LoadResult[Row]:
    at = int.from_bytes(cursor, "big") if cursor else 0
    end = min(at + limit, 12)
    return L.LoadResult([(i, f"row {i}") for i in range(at, end)], end.to_bytes(4, "big"),
                        end == 12)


def load(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[Row]:
    return rows(cursor, limit)


async def aload(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[Row]:
    await asyncio.sleep(0)
    return rows(cursor, limit)


def test_a_threaded_feed_is_typed_by_its_load() -> None:
    released: List[L.LoadResult[Row]] = []
    with L.Feed(load, config=L.Config(page_size=5), on_release=released.append) as feed:
        assert_type(feed, L.Feed[Row])
        feed.set_window(0, 12)
        assert feed.settled(5)
        items = feed.items()
        assert_type(items, List[Row])
        first: Row = items[0]
        assert first == (0, "row 0")
        assert_type(feed.pages()[0].result, L.LoadResult[Row])
        assert_type(feed.snapshot().items, List[Row])
    assert len(released) == 3


def test_an_asyncio_feed_is_typed_by_its_load() -> None:
    async def main() -> None:
        async with aio.Feed(aload, config=L.Config(page_size=5)) as feed:
            assert_type(feed, aio.Feed[Row])
            feed.set_window(0, 12)
            assert await feed.settled(5)
            items = feed.items()
            assert_type(items, List[Row])
            assert items[-1] == (11, "row 11")
            async for snap in feed.changes():
                assert_type(snap, L.FeedSnapshot[Row])
                break

    asyncio.run(main())


MISTYPED = '''
import asyncio
from typing import Tuple
import libloader as L
from libloader import aio

async def aload(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[Tuple[int, str]]:
    return L.LoadResult([(1, "a")], b"", True)

async def main() -> None:
    async with aio.Feed(aload) as feed:
        name: str = feed.items()[0]
'''


def test_mypy_rejects_a_mistyped_asyncio_feed(tmp_path: Any) -> None:
    api = pytest.importorskip("mypy.api")
    program = tmp_path / "mistyped_feed.py"
    program.write_text(MISTYPED)
    out, err, status = api.run(["--strict", "--no-incremental",
                                "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}",
                                str(program)])
    assert status == 1, out + err
    assert 'Incompatible types in assignment (expression has type "tuple[int, str]"' in out, out
