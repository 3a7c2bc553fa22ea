"""Hostile data: values, column names and table names that try to control the terminal, or to
misalign the screen, are shown inert (visible escapes), in cells measured in terminal cells,
with NULL apart from the text 'NULL'; in the pilot and under tmux."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import unicodedata
from pathlib import Path
from typing import Any, List

import pytest
from rich.cells import cell_len

from conftest import fresh, screen_lines
from test_browse_tmux import Tmux, command, tmux  # noqa: F401  (tmux: the fixture)
from libloader.browse._app import SEPARATOR, Browser, cell, inert
from libloader.browse._table import Table, open_readonly

ESC = "\x1b"
HOSTILE: List[Any] = [
    ESC + "]0;pwned title\x07",                 # OSC: set the window title
    ESC + "[2J" + ESC + "[H cleared",           # CSI: clear the screen
    "bell\x07 back\x08 nul\x00 del\x7f",        # C0 and DEL
    "c1 \x9b31m csi \x9d osc \x85 nel",         # C1 controls (8-bit CSI, OSC, NEL)
    "line\nbreak\rreturn\ttab\x0bvt\x0cff",     # line controls
    "bidi \u202eevil\u202c \u2066iso\u2069 \u200f",   # overrides, isolates, marks
    "zero\u200bwidth\u200d\ufeff joiner",       # zero-width characters
    "\u0301leading combining, e\u0301 ok",      # a combining mark with nothing to join
    "表示幅の試験",                             # CJK: two cells each
    "emoji 😀🎉",                               # wide emoji
    "x" * 100_000,                              # 100 KB of text
    b"\x1b[2J\x00\xff" * 10,                    # a BLOB
    None,                                       # NULL ...
    "NULL",                                     # ... next to the text 'NULL'
    "two  spaces   three",                      # spaces kept
    "sep \u2028 par \u2029",                    # line and paragraph separators
    "\u200b" * 50 + "only zero-width",          # zero-width characters before the text
]
NOT_UTF8 = b"bad \xff\xfe utf-8 \x1b[2J"
"""Text that is not UTF-8 (a value of the last row, written as text from bytes)."""


def hostile_db(path: Path) -> Path:
    conn = sqlite3.connect(str(path))
    # A column name and a table name that are escape sequences too.
    conn.execute(f'CREATE TABLE "t{ESC}[31m" (id INTEGER PRIMARY KEY, '
                 f'"v{ESC}]0;col\x07" , tail TEXT)')
    for i, v in enumerate(HOSTILE):
        conn.execute(f'INSERT INTO "t{ESC}[31m" VALUES (?, ?, ?)', (i + 1, v, f"end{i + 1}"))
    conn.execute(f'INSERT INTO "t{ESC}[31m" VALUES (?, CAST(? AS TEXT), ?)',
                 (len(HOSTILE) + 1, NOT_UTF8, f"end{len(HOSTILE) + 1}"))
    conn.commit()
    conn.close()
    return path


def safe(text: str) -> bool:
    """No character a terminal would act on or that reorders or hides text."""
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return False
    return True


def test_inert_shows_every_control_as_a_visible_escape() -> None:
    assert inert("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert inert("\x9b") == "\\x9b"
    assert inert("x\u202ey") == "x\\u202ey"
    assert inert("a\nb\tc") == "a\\nb\\tc"
    assert inert("plain text") == "plain text"
    assert inert("\u0301x") == "\\u0301x"
    for v in HOSTILE:
        assert safe(cell(v)), repr(v)
    assert cell(None) != cell("NULL")
    assert cell("two  spaces") == "two  spaces"


def test_hostile_values_are_inert_on_the_pilot_screen(tmp_path: Path) -> None:
    db = hostile_db(tmp_path / "h.db")

    async def run() -> None:
        conn = open_readonly(str(db))
        app = Browser(Table(conn, f"t{ESC}[31m"), poll_interval=0.3)
        async with app.run_test(size=(100, len(HOSTILE) + 5)) as pilot:
            await fresh(pilot, app)
            lines = screen_lines(app)
            for line in lines:
                assert safe(line), repr(line)
            text = "\n".join(lines)
            assert "\\x1b]0;pwned title\\x07" in text
            assert "\\x1b[2J" in text and "\\x9b31m" in text and "\\u202e" in text
            assert "\\n" in text and "\\t" in text and "\\u200b" in text
            assert "\\x1b[31m" in text      # the table's name, in the title
            # Every row line is as wide, in terminal cells, as the header: the columns line
            # up, CJK and emoji counted as two cells, nothing zero-width left to misalign.
            head = next(i for i, l in enumerate(lines) if l.strip().startswith("#"))
            rows = lines[head + 1:head + 2 + len(HOSTILE)]
            seps = [[cell_len(l[:j]) for j in range(len(l)) if l[j] == SEPARATOR.strip()]
                    for l in [lines[head]] + rows]
            assert all(s == seps[0] for s in seps), seps
            by_id = {r.split(SEPARATOR.strip())[1].strip(): r for r in rows}
            null_row = by_id[str(HOSTILE.index(None) + 1)].split(SEPARATOR.strip())
            text_row = by_id[str(HOSTILE.index("NULL") + 1)].split(SEPARATOR.strip())
            assert null_row[2].strip() != text_row[2].strip() == "NULL"
            assert "two  spaces   three" in text
            assert all(f"end{i + 1}" in text for i in range(len(HOSTILE) + 1))
            assert "bad \\xff\\xfe utf-8 \\x1b[2J" in text
            # The status line and a message that quotes a hostile key are inert too.
            await pilot.press("slash", *"abc", "enter")
            await pilot.pause()
            app.message = "bad \x1b[2J value"   # the status line follows (reactive)
            await pilot.pause()
            assert "\\x1b[2J" in app.status_text()
            for line in screen_lines(app):
                assert safe(line), repr(line)
            # The help screen shows the table's schema: its hostile names inert too.
            await pilot.press("question_mark")
            await pilot.pause()
            text = app.screen.text  # type: ignore[attr-defined]
            assert "CREATE TABLE" in text and "\\x1b]0;col\\x07" in text
            assert all(safe(line) for line in text.splitlines())
            for line in screen_lines(app):
                assert safe(line), repr(line)
    asyncio.run(run())


def test_hostile_values_never_reach_the_terminal_under_tmux(tmp_path: Path, tmux: Tmux) -> None:
    """tmux interprets what the program writes: a title set by a value would show in
    #{pane_title}, a cleared screen would lose the rows."""
    db = hostile_db(tmp_path / "h.db")
    tmux.start(command(sys.executable, "-m", "libloader.browse", str(db)) + "; sleep 60")
    lines = tmux.wait(lambda ls: any(" fresh " in l for l in ls), "the hostile rows, fresh")
    text = "\n".join(lines)
    assert "\\x1b]0;pwned title\\x07" in text
    assert "end1" in text and f"end{len(HOSTILE) + 1}" in text
    title = tmux("display-message", "-p", "-t", "browse", "#{pane_title}")
    assert "pwned" not in title and "col" not in title.replace("libloader", "")
    tmux("send-keys", "-t", "browse", "q")



def test_the_whole_row_view_is_inert_and_copies(tmp_path: Path) -> None:
    from libloader.browse._app import RowScreen, RowsView
    db = hostile_db(tmp_path / "h.db")

    async def run() -> None:
        app = Browser(Table(open_readonly(str(db)), f"t{ESC}[31m"), poll_interval=0.3)
        async with app.run_test(size=(100, len(HOSTILE) + 5)) as pilot:
            await fresh(pilot, app)
            await pilot.press("enter")        # the first shown row, whole
            await pilot.pause()
            assert isinstance(app.screen, RowScreen)
            body = app.screen.body.plain
            assert "\\x1b]0;pwned title\\x07" in body and ESC not in body
            await pilot.press("c")
            await pilot.pause()
            assert app.clipboard == "\t".join(["1", HOSTILE[0], "end1"])
            await pilot.press("escape")
            await pilot.pause()
            # A click on a row: the row of 100 KB, shown up to 20,000 characters.
            view = app.query_one(RowsView)
            i = HOSTILE.index("x" * 100_000)
            await pilot.click(RowsView, offset=(20, 1 + i))
            await pilot.pause()
            assert isinstance(app.screen, RowScreen)
            body = app.screen.body.plain
            assert "x" * 20_000 in body and "80,000 more characters" in body
            await pilot.press("escape")
            await pilot.click(RowsView, offset=(20, 1 + HOSTILE.index("line\nbreak\rreturn\ttab\x0bvt\x0cff")))
            await pilot.pause()
            body = app.screen.body.plain  # type: ignore[attr-defined]
            assert "line\\n\nbreak\\rreturn\\ttab\\x0bvt\\x0cff" in body
            for line in body.splitlines():
                assert safe(line), repr(line)
            assert view is not None
    asyncio.run(run())
