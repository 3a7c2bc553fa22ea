"""The browser's database work runs off the UI thread: every query's thread is recorded while a
person scrolls, jumps, types a key and another program commits, and keys are answered while
a page load is held up."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from conftest import expected_cells, fresh, screen_rows, sql_rows_at, type_row, until
from libloader.browse import _app
from libloader.browse._app import Browser, HelpScreen
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly


def traced(conn: sqlite3.Connection, seen: List[Tuple[bool, str]]) -> sqlite3.Connection:
    """``conn``, recording each statement it runs and whether it ran on the main (the UI)
    thread."""
    conn.set_trace_callback(
        lambda sql: seen.append((threading.current_thread() is threading.main_thread(), sql)))
    return conn


def test_no_query_runs_on_the_ui_thread(small_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: List[Tuple[bool, str]] = []
    real_open = _app.open_readonly

    def open_traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return traced(real_open(*args, **kwargs), seen)
    monkeypatch.setattr(_app, "open_readonly", open_traced)
    table = Table(open_readonly(str(small_db)), DEMO_TABLE)
    app = Browser(table, poll_interval=0.1)
    traced(table.conn, seen)   # the command line's connection: the app must not use it

    async def run() -> None:
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            for key in ("ctrl+e", "pagedown", "end", "ctrl+y", "home"):
                await pilot.press(key)
                await fresh(pilot, app)
            await type_row(pilot, 12_345)
            await fresh(pilot, app)
            assert app.top == 12_344
            await pilot.press("slash", *"5000", "enter")
            await fresh(pilot, app)
            assert app.top == 2_499   # ids are even: id 5000 is row 2,500
            writer = sqlite3.connect(str(small_db), isolation_level=None)
            writer.execute(f"UPDATE {DEMO_TABLE} SET note = 'seen' WHERE id = 5000")
            writer.close()
            await until(pilot, lambda: app.invalidations >= 1, what="the poll seeing a commit")
            await fresh(pilot, app)
            assert screen_rows(app)[0][5] == "seen"
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.press("escape")
            await until(pilot, lambda: app.counts >= 1, what="a count")
    asyncio.run(run())
    on_ui = [sql for on_main, sql in seen if on_main]
    assert on_ui == []
    # The work was done, on other threads: the loads' keyset queries, the poll, the count.
    sqls = [sql for _, sql in seen]
    assert sum("ORDER BY" in s and "LIMIT" in s for s in sqls) >= 5
    assert any("data_version" in s for s in sqls)
    assert any("count(*)" in s for s in sqls)


def test_keys_are_answered_while_a_load_is_held_up(small_db: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page load waits until the test lets it go (at most 5 s): meanwhile the help
    screen opens on ? and ctrl+e moves the top a line, each within half a second; let go, the screen
    is the table's rows."""
    gate = threading.Event()
    real_load = Table.load

    def held(self: Table, *args: Any) -> Any:
        gate.wait(5)
        return real_load(self, *args)
    monkeypatch.setattr(Table, "load", held)
    app = Browser(Table(open_readonly(str(small_db)), DEMO_TABLE), poll_interval=0.1)

    async def run() -> None:
        async with app.run_test(size=(110, 30)) as pilot:
            await pilot.pause(0.3)
            assert app.feed is not None and app.feed.state.outstanding_reads > 0
            t0 = time.perf_counter()
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), timeout=2)
            assert time.perf_counter() - t0 < 0.5
            await pilot.press("escape")
            t0 = time.perf_counter()
            await pilot.press("ctrl+e")   # a line down
            await until(pilot, lambda: app.top == 1, timeout=2, what="the top moving")
            assert time.perf_counter() - t0 < 0.5
            assert not gate.is_set() and not app.is_fresh()
            gate.set()
            await fresh(pilot, app)
            rows = screen_rows(app)
            assert [r[1:] for r in rows] == expected_cells(sql_rows_at(small_db, 1, len(rows)))
    try:
        asyncio.run(run())
    finally:
        gate.set()
