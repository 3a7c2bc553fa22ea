"""Load functions of the right signature, which ``mypy --strict`` must accept for each feed
(``test_typed_loads.py`` checks it; ``make py-mypy`` checks this file too)."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

import libloader as L
from libloader import aio
from libloader.testing import FakeSource, check_load


def plain(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[int]:
    return L.LoadResult(list(range(limit)), cursor, True)


def bounded(cursor: bytes, limit: int, direction: L.Direction,
            until: Optional[bytes] = None) -> L.LoadResult[int]:
    return L.LoadResult([], until or cursor, True)


def loose(cursor: bytes, limit: int, direction: int, **kwargs: Any) -> L.LoadResult[str]:
    return L.LoadResult(["a"], cursor, True)


async def aplain(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[int]:
    await asyncio.sleep(0)
    return L.LoadResult([1], cursor, True)


async def abounded(cursor: bytes, limit: int, direction: L.Direction,
                   until: Optional[bytes] = None) -> L.LoadResult[int]:
    return L.LoadResult([1], cursor, True)


def threaded() -> List[int]:
    with L.Feed(plain) as a, L.Feed(bounded, compare=FakeSource.compare) as b:
        with L.Feed(lambda c, n, d: L.LoadResult([c], c, True)) as c:
            first: bytes = c.items()[0]
        with L.Feed(loose) as d:
            name: str = d.items()[0]
        with L.Feed(FakeSource[str](10).load) as e:
            text: str = e.items()[0]
        return a.items() + b.items()


async def asyncio_feeds() -> List[int]:
    async with aio.Feed(aplain) as a, aio.Feed(abounded) as b, aio.Feed(plain) as c:
        return a.items() + b.items() + c.items()


def tested() -> List[str]:
    return check_load(plain, range(3)) + check_load(aplain, range(3)) + \
        check_load(FakeSource(3).load, range(3))
