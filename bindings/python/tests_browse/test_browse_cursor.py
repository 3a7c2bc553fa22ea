"""What a person expects next to the rows: a cursor row moved by ↓ ↑ (Enter, c and y act on
it), a column cursor moved by Tab (c copies its cell), a table picker on t (a view refused in
words), the schema on s, and a footer with the keys."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, List

from rich.style import Style

from conftest import fresh, screen_lines, screen_rows, sql_rows_at, type_row, until
from libloader.browse._app import Browser, RowScreen, RowsView, SchemaScreen, TablePicker
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly


def browser(db: Path, name: str = DEMO_TABLE) -> Browser:
    return Browser(Table(open_readonly(str(db)), name), poll_interval=0.2)


def highlighted(app: Browser) -> List[int]:
    """The window's lines drawn in the cursor's style (its background)."""
    bg = app.cursor_style.bgcolor
    assert bg is not None
    return [i for i in range(app.height)
            if any(seg.style is not None and seg.style.bgcolor == bg
                   for seg in app.line_strip(i))]


def copied(value: Any) -> str:
    return "" if value is None else str(value)


def test_the_cursor_row_moves_and_enter_and_the_copies_act_on_it(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            h = app.height
            assert (app.cursor, highlighted(app)) == (0, [0])
            await pilot.press("down", "j", "down")
            await fresh(pilot, app)
            assert (app.top, app.cursor, highlighted(app)) == (0, 3, [3])
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, RowScreen))
            assert "row 4 of events" in app.screen.title_text   # type: ignore[attr-defined]
            await pilot.press("escape")
            await pilot.pause()
            row = sql_rows_at(small_db, 3, 1)[0]
            await pilot.press("y")
            assert app.clipboard == "\t".join(copied(v) for v in row)
            await pilot.press("tab", "tab", "c")   # the third column: ts
            assert app.clipboard == row[2]
            await pilot.press("shift+tab", "c")
            assert app.clipboard == str(row[1])
            # Past the window's bottom the view scrolls a line, the cursor on the last line.
            for _ in range(h):
                await pilot.press("down")
            await fresh(pilot, app)
            assert (app.top, app.cursor) == (4, h - 1)
            assert screen_rows(app)[h - 1][0] == f"{h + 4:,}"
            assert highlighted(app) == [h - 1]
            await pilot.press("y")
            assert app.clipboard.split("\t")[0] == str(sql_rows_at(small_db, h + 3, 1)[0][0])
            await pilot.press("up")
            assert (app.top, app.cursor) == (4, h - 2)
            await pilot.press("end")
            await fresh(pilot, app)
            assert app.cursor == h - 1 and screen_rows(app)[h - 1][0] == "20,000"
            await pilot.press("home")
            await fresh(pilot, app)
            assert (app.top, app.cursor) == (0, 0)
            # A row number puts the cursor on it: at the top, or near the end on its line.
            await type_row(pilot, 500)
            await fresh(pilot, app)
            assert (app.top, app.cursor) == (499, 0)
            await type_row(pilot, 19_999)
            await fresh(pilot, app)
            assert app.top + app.cursor == 19_998 and highlighted(app) == [app.cursor]
    asyncio.run(run())


def wide_db(path: Path) -> Path:
    conn = sqlite3.connect(str(path))
    cols = ", ".join(f"c{i} TEXT" for i in range(12))
    conn.execute(f"CREATE TABLE w (id INTEGER PRIMARY KEY, {cols})")
    conn.execute(f"INSERT INTO w VALUES (1, {', '.join(repr(f'value-{i}-' + 'x' * 20) for i in range(12))})")
    conn.commit()
    conn.close()
    return path


def test_tab_moves_the_column_cursor_and_the_view_follows_it(tmp_path: Path) -> None:
    async def run() -> None:
        app = browser(wide_db(tmp_path / "w.db"), "w")
        async with app.run_test(size=(80, 12)) as pilot:
            await fresh(pilot, app)
            view = app.query_one(RowsView)
            assert view.scroll_x == 0
            await pilot.press(*["tab"] * 12)   # id, c0 .. c11
            await pilot.pause()
            assert app.column == 12 and view.scroll_x > 0
            assert "value-11-" in "\n".join(screen_lines(app))
            await pilot.press("c")
            assert app.clipboard == "value-11-" + "x" * 20
            await pilot.press("tab")            # round to the first column
            await pilot.pause()
            assert app.column == 0 and view.scroll_x == 0
            await pilot.press("c")
            assert app.clipboard == "1"
    asyncio.run(run())


def picker_db(path: Path) -> Path:
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE a (x INTEGER)")
    conn.executemany("INSERT INTO a VALUES (?)", [(i,) for i in range(100)])
    conn.execute("CREATE TABLE b (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID")
    conn.executemany("INSERT INTO b VALUES (?, ?)", [(f"k{i:03}", i) for i in range(50)])
    conn.execute("CREATE VIEW v AS SELECT x FROM a WHERE x > 10")
    conn.commit()
    conn.close()
    return path


def test_the_table_picker_opens_a_table_and_refuses_a_view_in_words(tmp_path: Path) -> None:
    async def run() -> None:
        db = picker_db(tmp_path / "p.db")
        app = browser(db, "a")
        async with app.run_test(size=(100, 20)) as pilot:
            await fresh(pilot, app)
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TablePicker))
            picker = app.screen
            assert isinstance(picker, TablePicker)
            assert picker.names == [("a", "table"), ("b", "table"), ("v", "view")]
            await pilot.press("down", "enter")
            await until(pilot, lambda: app.table.name == "b" and app.is_fresh(),
                        what="table b, fresh")
            await pilot.pause()
            rows = screen_rows(app)
            assert rows[0] == ["1", "k000", "0"] and len(rows) == app.height
            assert "p.db: b" in screen_lines(app)[0] and "50 rows" in screen_lines(app)[0]
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TablePicker))
            await pilot.press("down", "enter")   # b is highlighted: v is next
            await until(pilot, lambda: "is a view" in app.message, what="the view refused")
            assert app.table.name == "b" and "no rowid or primary key" in app.message
            await fresh(pilot, app)
            assert screen_rows(app)[0] == ["1", "k000", "0"]
    asyncio.run(run())


def test_s_shows_the_schema_and_the_footer_the_keys(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            footer = screen_lines(app)[-1]
            for key in ("? help", ": row #", "/ key", "t tables", "s schema", "c copy cell",
                        "y copy row", "q quit"):
                assert key in footer, (key, footer)
            # The prompt has the focus: the footer shows its keys; after Enter, the rows
            # view's again (rebuilt once the row's screen is painted).
            await pilot.press("colon")
            await until(pilot, lambda: "t tables" not in screen_lines(app)[-1],
                        what="the prompt's footer")
            await pilot.press("5", "enter")
            await fresh(pilot, app)
            await until(pilot, lambda: "t tables" in screen_lines(app)[-1],
                        what="the rows view's footer again")
            assert app.top == 4
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, SchemaScreen))
            text = "\n".join(screen_lines(app))
            assert "CREATE TABLE events" in text and "id INTEGER (key)" in text
            assert "ticks INTEGER" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, SchemaScreen)
    asyncio.run(run())
