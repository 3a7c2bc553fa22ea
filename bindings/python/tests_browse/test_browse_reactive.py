"""The screen follows the browser's reactive state: a state attribute set, with no redraw
called, changes what the screen shows; a keypress's screen is painted when it is fresh (within
HOLD_S), not first as a frame of placeholders."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, List

import pytest

from conftest import fresh, screen_lines, until
from libloader.browse._app import HOLD_S, Browser, RowsView
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly


def browser(db: Path) -> Browser:
    return Browser(Table(open_readonly(str(db)), DEMO_TABLE), poll_interval=0.2)


def painted_cursor_lines(app: Browser) -> List[int]:
    """The window's lines the screen paints in the cursor's background (read off the
    compositor's strips, not off what the app drew)."""
    bg = app.cursor_style.bgcolor
    assert bg is not None
    strips = app.screen._compositor.render_strips()
    head = next(i for i, s in enumerate(strips) if s.text.strip().startswith("#"))
    return [i for i, s in enumerate(strips[head + 1:head + 1 + app.height])
            if any(seg.style is not None and seg.style.bgcolor == bg for seg in s)]


def test_the_screen_follows_state_set_alone(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            assert painted_cursor_lines(app) == [0]
            app.cursor = 3
            await until(pilot, lambda: painted_cursor_lines(app) == [3],
                        what="the cursor row painted where it was set")
            # An approximate total is counted again by the poll (every 0.4 s), which would
            # replace the one set here before the test reads the title: no count runs now, and
            # the next is put off, as a recent costly count would put it off.
            await until(pilot, lambda: not app._counting, what="the first count done")
            app._count_due = time.monotonic() + 3600
            app.total, app.total_exact = 12_345, False
            await until(pilot, lambda: "~12,345 rows" in screen_lines(app)[0],
                        what="the title showing the total set")
            app.message = "a message set"
            await until(pilot, lambda: any(line.startswith(" a message set")
                                           for line in screen_lines(app)),
                        what="the status line showing the message")
            # A cursor set past the window's rows is brought back by the screen's pass.
            app.cursor = 10 * app.height
            await until(pilot, lambda: app.cursor == app.height - 1, what="the cursor clamped")
            await until(pilot, lambda: painted_cursor_lines(app) == [app.height - 1],
                        what="the clamped cursor painted")
    asyncio.run(run())


def test_a_far_move_within_the_hold_paints_no_placeholder_frame(small_db: Path) -> None:
    """A row number whose reads answer within HOLD_S is painted once: its rows, numbers and
    status together, no frame of ``…`` placeholders before them (and the prompt closes in
    that frame)."""
    async def run() -> None:
        app = browser(small_db)
        painted: List[str] = []
        render_line = RowsView.render_line

        def recording(self: RowsView, y: int) -> Any:
            strip = render_line(self, y)
            painted.append(strip.text)
            return strip
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.pause(0.5)   # the poll's first looks are done
            quick = 0
            RowsView.render_line = recording   # type: ignore[method-assign]
            try:
                for row in (15_001, 3_001, 9_001):
                    before = len(app.samples)
                    await pilot.press("colon", *str(row))
                    await pilot.pause(0.2)
                    painted.clear()
                    await pilot.press("enter")
                    await until(pilot, lambda: len(app.samples) > before, what="the sample")
                    await fresh(pilot, app)
                    assert app.top == row - 1
                    if app.samples[-1].seconds < HOLD_S:
                        quick += 1
                        assert not [t for t in painted if t.rstrip().endswith("│ …")], painted
                    assert any(t.strip().startswith(f"{row:,} ") for t in painted)
            finally:
                RowsView.render_line = render_line   # type: ignore[method-assign]
            if not quick:
                pytest.skip("no move answered within HOLD_S on this machine now")
    asyncio.run(run())
