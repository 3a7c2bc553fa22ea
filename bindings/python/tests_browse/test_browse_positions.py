"""The position index (the key of every ``step``-th row): a row number found through it is
SQL's own row, on any key; a commit by another connection makes it stale at once (a row
number goes back to the OFFSET from the nearer end), and it is read again after a far move."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, List, Optional, Tuple

from conftest import fresh, sql_rows_at, until
from libloader.browse._app import Browser
from libloader.browse._demo import DEMO_TABLE, create_demo_db
from libloader.browse._positions import PositionBuild, Positions
from libloader.browse._table import Table, open_readonly


def _composite(path: Path, n: int) -> None:
    """A WITHOUT ROWID table keyed by (text, integer), the text with non-ASCII letters,
    inserted out of order."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (a, b)) "
                 "WITHOUT ROWID")
    words = ["émile", "zoë", "alpha", "Ωmega", "beta", "日本", "a b"]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                     [(words[(i * 7) % len(words)], (i * 7919) % 10007 - 5000, i)
                      for i in range(n)])
    conn.close()


def _build(table: Table, step: int) -> Positions:
    build = PositionBuild(table, step)
    while True:
        found = build.slice(table, budget_s=0.0)
        assert not build.abandoned
        if found is not None:
            return found


def _offset(conn: sqlite3.Connection, row: int) -> Optional[Tuple[Any, ...]]:
    r = conn.execute("SELECT a, b FROM t ORDER BY a, b LIMIT 1 OFFSET ?", (row,)).fetchone()
    return None if r is None else tuple(r)


def test_every_row_found_through_the_index_is_sqls(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    _composite(db, 3000)
    table = Table(open_readonly(str(db)), "t")
    check = sqlite3.connect(str(db))
    for step in (1, 7, 64, 1024, 5000):
        positions = _build(table, step)
        assert len(positions.keys) == 3000 // step
        for row in range(0, 3003):
            key, skip = positions.start_for(row)
            # Fewer than a step of rows skipped, within the table.
            assert skip < step or row >= 3000, (step, row, skip)
            assert positions.cursor_row(table, row) == _offset(check, row), (step, row)
    # On another connection it is not used: its version there means nothing.
    other = table.on(open_readonly(str(db)))
    assert positions.cursor_row(other, 5) is None


def test_a_commit_by_another_connection_makes_the_index_stale(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    _composite(db, 500)
    table = Table(open_readonly(str(db)), "t")
    writer = sqlite3.connect(str(db), isolation_level=None)
    positions = _build(table, 16)
    assert positions.cursor_row(table, 300) == _offset(writer, 300)
    writer.execute("INSERT INTO t VALUES ('', 0, 'first')")   # before every row
    assert positions.cursor_row(table, 300) is None
    # A build that meets a commit between its slices is abandoned.
    build = PositionBuild(table, 16)
    assert build.slice(table, budget_s=0.0) is None and len(build.keys) == 1
    writer.execute("DELETE FROM t WHERE a = ''")
    assert build.slice(table, budget_s=0.0) is None and build.abandoned


def test_row_numbers_use_the_index_and_stay_exact_across_commits(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    create_demo_db(db, 20_000)
    writer = sqlite3.connect(str(db), isolation_level=None)

    async def run() -> None:
        # A slow poll: the commit below is not seen before the move after it.
        app = Browser(Table(open_readonly(str(db)), DEMO_TABLE), poll_interval=30.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await fresh(pilot, app)
            await until(pilot, lambda: app.position_builds == 1, what="the index read")
            h = app.height
            marks: List[int] = []

            async def go(n: int) -> None:
                await pilot.press("colon", *str(n), "enter")
                await until(pilot, lambda: app.top == n - 1 and app.is_fresh(),
                            what=f"row {n}")
                await fresh(pilot, app)
                rows = [r for r in app.window_rows()[:h] if r is not None]
                assert [r[0] for r in rows] == [r[0] for r in sql_rows_at(db, n - 1, h)], n
                marks.append(app.indexed_moves)

            await go(15_000)
            await go(1_025)
            assert marks == [1, 2]
            # Five rows before every row shown, committed; the poll has not looked yet.
            writer.executemany(f"INSERT INTO {DEMO_TABLE} (id, ts, kind, amount) "
                               "VALUES (?, '', '', 0)", [(-i,) for i in range(5)])
            await go(9_000)   # the index is stale: the OFFSET from the start, exact
            assert marks[-1] == 2
            # Once the poll sees the commit, the next far move reads the index again.
            app.poll_interval = 0.1
            app._poll()
            await until(pilot, lambda: app.invalidations == 1, what="the commit seen")
            await fresh(pilot, app)
            await go(8_000)
            await until(pilot, lambda: app.position_builds == 2, what="the index read again")
            await go(3_000)
            assert marks[-2:] == [2, 3]
    asyncio.run(run())
