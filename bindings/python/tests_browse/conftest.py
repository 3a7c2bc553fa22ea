"""Shared fixtures of the browser's tests: the databases, and a pilot's helpers.

The tests need Textual (the `browse` extra). Without it they are skipped, unless
LIBLOADER_BROWSE_REQUIRED=1 (as `make browse-test` sets it): then its absence fails them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable, List, Sequence, Tuple

import pytest

if os.environ.get("LIBLOADER_BROWSE_REQUIRED") == "1":
    import textual  # noqa: F401  (an ImportError here fails the run)
else:
    pytest.importorskip("textual")

from libloader.browse._app import SEPARATOR, Browser, cell, cut, CELL_WIDTH
from libloader.browse._demo import DEMO_TABLE, create_demo_db

REPO = Path(__file__).resolve().parents[3]
BIG_ROWS = 1_000_000


@pytest.fixture(scope="session")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's table of a million rows, made once; the tests only read it."""
    path = tmp_path_factory.mktemp("big") / "big.db"
    create_demo_db(path, BIG_ROWS)
    return path


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    """The demo's table with 20,000 rows, for a test to write to."""
    path = tmp_path / "small.db"
    create_demo_db(path, 20_000)
    return path


def screen_lines(app: Browser) -> List[str]:
    """The text of every line of the app's screen, as the compositor renders it."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_rows(app: Browser) -> List[List[str]]:
    """The cells of each row line on screen (the row number first), read off the screen:
    the lines between the header (the line starting with '#') and the status line."""
    lines = screen_lines(app)
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("#"))
    out = []
    for line in lines[head + 1:head + 1 + app.height]:
        line = without_scrollbar(line)
        if not line.strip():
            break
        out.append([c.strip() for c in line.split(SEPARATOR.strip())])
    return out


SCROLLBAR_GLYPHS = "▁▂▃▄▅▆▇█▔"


def without_scrollbar(line: str) -> str:
    """A row line without the rows view's scrollbar, drawn in its last column (a space, or
    the end of the thumb as a block glyph)."""
    return line[:-1] if line and (line[-1] in SCROLLBAR_GLYPHS or line[-1] == " ") else line


def expected_cells(rows: Sequence[Tuple[Any, ...]]) -> List[List[str]]:
    """Rows from a direct query of every column, as cells are drawn (values cut to the
    column's widest)."""
    return [[cut(cell(v), CELL_WIDTH) for v in r] for r in rows]


def sql_rows_at(db: Path, offset: int, n: int) -> List[Tuple[Any, ...]]:
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(f"SELECT * FROM {DEMO_TABLE} ORDER BY id LIMIT ? OFFSET ?",
                            (n, offset)).fetchall()
    finally:
        conn.close()


def sql_rows_from(db: Path, first_id: int, n: int) -> List[Tuple[Any, ...]]:
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(f"SELECT * FROM {DEMO_TABLE} WHERE id >= ? ORDER BY id LIMIT ?",
                            (first_id, n)).fetchall()
    finally:
        conn.close()


async def until(pilot: Any, pred: Callable[[], bool], timeout: float = 10.0,
                what: str = "the condition") -> None:
    """Lets the app run until ``pred()``; fails after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        if loop.time() > end:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        await pilot.pause(0.01)


async def fresh(pilot: Any, app: Browser, timeout: float = 10.0) -> None:
    """Waits for a fresh screen, painted."""
    await until(pilot, app.is_fresh, timeout, "a fresh screen")
    await pilot.pause()


async def type_row(pilot: Any, n: int) -> None:
    """Goes to row number ``n`` (from 1) as a person does: ':' then the digits, Enter."""
    await pilot.press("colon", *str(n), "enter")
