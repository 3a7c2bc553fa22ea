"""Load functions of the wrong signature, which ``mypy --strict`` must reject: each line
with a ``rejected`` comment must get an error, and no other line may (``test_typed_loads.py``).
Not a module to import: it is only type-checked."""

from __future__ import annotations

from typing import Optional

import libloader as L
from libloader import aio
from libloader.testing import check_load


def two(cursor: bytes, limit: int) -> L.LoadResult[int]:
    return L.LoadResult([], cursor, True)


def text_cursor(cursor: str, limit: int, direction: L.Direction) -> L.LoadResult[int]:
    return L.LoadResult([], b"", True)


def until_required(cursor: bytes, limit: int, direction: L.Direction,
                   until: bytes) -> L.LoadResult[int]:
    return L.LoadResult([], until, True)


def not_a_result(cursor: bytes, limit: int, direction: L.Direction) -> list[int]:
    return []


async def atwo(cursor: bytes, limit: int) -> L.LoadResult[int]:
    return L.LoadResult([], cursor, True)


async def aplain(cursor: bytes, limit: int, direction: L.Direction) -> L.LoadResult[int]:
    return L.LoadResult([], cursor, True)


def threaded() -> None:
    L.Feed(two)  # rejected
    L.Feed(text_cursor)  # rejected
    L.Feed(until_required)  # rejected
    L.Feed(not_a_result)  # rejected
    L.Feed(aplain)  # rejected: a coroutine is not a LoadResult
    L.Feed(lambda cursor, limit: L.LoadResult([1], cursor, True))  # rejected


async def asyncio_feeds() -> None:
    aio.Feed(atwo)  # rejected
    aio.Feed(two)  # rejected
    aio.Feed(text_cursor)  # rejected


def tested(until: Optional[bytes]) -> None:
    check_load(two, [1])  # rejected
    check_load(atwo, [1])  # rejected
