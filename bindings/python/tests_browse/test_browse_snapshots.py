"""Each screen of the browser against the SVG snapshot kept in __snapshots__, with
pytest-textual-snapshot (Textual's own snapshot testing): the rows deep in a million, the
prompt, the help screen, a table of hostile values, the schema, the table picker, the cursor
on a cell. A change of what a screen shows fails
here: look at the report, then `make browse-snapshots` rewrites them (commit them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

if os.environ.get("LIBLOADER_BROWSE_REQUIRED") != "1":
    pytest.importorskip("pytest_textual_snapshot")

from conftest import fresh, type_row
from libloader.browse._app import Browser
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly
from test_browse_hostile import ESC, hostile_db

SIZE = (120, 24)


def demo(db: Path) -> Browser:
    return Browser(Table(open_readonly(str(db)), DEMO_TABLE), title="demo.db: events")


def at_row(n: int, *keys: str) -> Callable[[Any], Any]:
    """Before the screenshot: a fresh screen at row ``n``, then ``keys``."""
    async def run(pilot: Any) -> None:
        app = pilot.app
        await fresh(pilot, app)
        await type_row(pilot, n)
        await fresh(pilot, app)
        if keys:
            await pilot.press(*keys)
            await pilot.pause(0.2)
    return run


def test_rows_deep_in_a_million(big_db: Path, snap_compare: Any) -> None:
    assert snap_compare(demo(big_db), terminal_size=SIZE, run_before=at_row(500_001))


def test_the_row_number_prompt(big_db: Path, snap_compare: Any) -> None:
    assert snap_compare(demo(big_db), terminal_size=SIZE,
                        run_before=at_row(500_001, "colon", *"12345"))


def test_the_help_screen(big_db: Path, snap_compare: Any) -> None:
    assert snap_compare(demo(big_db), terminal_size=(120, 40),
                        run_before=at_row(1, "question_mark"))


def test_hostile_values(tmp_path: Path, snap_compare: Any) -> None:
    db = hostile_db(tmp_path / "h.db")
    app = Browser(Table(open_readonly(str(db)), f"t{ESC}[31m"), title="hostile.db")
    assert snap_compare(app, terminal_size=(100, 26), run_before=at_row(1))


def test_the_schema_screen(big_db: Path, snap_compare: Any) -> None:
    assert snap_compare(demo(big_db), terminal_size=SIZE, run_before=at_row(1, "s"))


def test_the_table_picker(tmp_path: Path, snap_compare: Any) -> None:
    from test_browse_cursor import picker_db
    db = picker_db(tmp_path / "p.db")
    app = Browser(Table(open_readonly(str(db)), "a"), title="p.db: a")
    assert snap_compare(app, terminal_size=(100, 20), run_before=at_row(1, "t"))


def test_the_cursor_on_a_cell(big_db: Path, snap_compare: Any) -> None:
    assert snap_compare(demo(big_db), terminal_size=SIZE,
                        run_before=at_row(500_001, "down", "down", "tab", "tab"))
