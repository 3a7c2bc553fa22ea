"""The screen follows the browser's reactive state: a state attribute set, with no redraw
called, changes what the screen shows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import List

from conftest import fresh, screen_lines, until
from libloader.browse._app import Browser
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
