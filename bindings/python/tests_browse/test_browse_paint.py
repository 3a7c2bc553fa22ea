"""What a keypress costs the screen, counted (counts do not drift with the machine's load,
as the milliseconds of ``make bench-browse`` do): closing the row-number prompt lays nothing
out and its screen is painted once; a move to the top or the bottom lays nothing out when
the columns' widths change; a move within the rows held makes no line in its keypress (its
lines were made ahead) and starts no read before its screen's paint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from textual._compositor import Compositor
from textual.screen import Screen

from conftest import fresh, until
from libloader.browse._app import HOLD_S, Browser, KeysFooter, Prompt, RowsView
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dict[str, Any]]:
    """Counts of the screen's layouts (``Screen._refresh_layout``), apart from its
    reflows of a scroll (the same with ``scroll=True``: the visible widgets placed again,
    none resized), and paints (``Compositor.render_update``) begun from a keypress until its fresh
    screen is recorded (see :func:`measured`)."""
    c: Dict[str, Any] = {"on": None, "layouts": 0, "scrolls": 0, "paints": 0, "what": []}
    layout, paint = Screen._refresh_layout, Compositor.render_update

    def counting() -> int:
        # A paint records the keypress's sample as it begins: counted; what follows is not.
        return int(c["on"] is not None and len(c["on"][0].samples) == c["on"][1])

    def counted_layout(self: Screen, *a: Any, **k: Any) -> Any:
        if c["on"] is not None:
            c["scrolls" if k.get("scroll") else "layouts"] += 1
            c["what"].append(sorted(type(w).__name__ for w in self._layout_widgets))
        return layout(self, *a, **k)

    def counted_paint(self: Compositor, *a: Any, **k: Any) -> Any:
        c["paints"] += counting()
        return paint(self, *a, **k)

    monkeypatch.setattr(Screen, "_refresh_layout", counted_layout)
    # The footer's keys are those of what has the focus, rebuilt when it moves (a layout;
    # after a keypress's screen is painted, see KeysFooter): kept out of the counts, which
    # are of what a keypress's move and its screen lay out.
    monkeypatch.setattr(KeysFooter, "bindings_changed", lambda self, screen: None)
    monkeypatch.setattr(Compositor, "render_update", counted_paint)
    yield c


async def measured(pilot: Any, app: Browser, counts: Dict[str, Any], *keys: str) -> None:
    """Presses ``keys`` and counts: the paints until the keypress's fresh screen is
    recorded (by the paint that shows it), the layouts until 0.2 s after (a layout the
    keypress caused comes at that paint or later)."""
    before = len(app.samples)
    counts.update(on=(app, before), layouts=0, scrolls=0, paints=0, what=[])
    await pilot.press(*keys)
    await until(pilot, lambda: len(app.samples) > before, what="the keypress's fresh screen")
    await pilot.pause(0.2)
    counts["on"] = None


def test_a_row_number_lays_nothing_out_and_paints_once(big_db: Path,
                                                      counts: Dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shown: List[bool] = []
    painted = Browser._painted

    def painted_status(self: Browser) -> None:
        if self._fresh_pending:   # the paint that records the keypress's screen
            # What that paint shows: the status line placed on screen, the prompt not.
            visible = self.screen._compositor.visible_widgets
            shown.append(self.query_one("#status") in visible and
                         self.query_one(Prompt) not in visible)
        painted(self)

    monkeypatch.setattr(Browser, "_painted", painted_status)

    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE))
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            held = 0
            for n in (500_000, 123_456, 987_654, 250_001, 750_002):
                await pilot.press("colon", *str(n))
                await until(pilot, lambda: app.typed == str(n), what="the number typed")
                await pilot.pause(0.1)
                await measured(pilot, app, counts, "enter")
                assert app.top == n - 1 and app.asking is None
                # The prompt closing and the row's rows, in one paint, with no layout (the
                # focus leaving the prompt is held for it; the prompt is scrolled away: one
                # reflow of that scroll, in that paint).
                assert counts["layouts"] == 0 and counts["scrolls"] == 1, counts
                # That paint shows the status line, the prompt gone.
                assert shown[-1], shown
                if app.samples[-1].seconds < HOLD_S:
                    # Its reads answered within the hold (on a loaded machine they may
                    # not: then the screen shows the rows as they come, by design).
                    held += 1
                    assert counts["paints"] == 1, counts
                await fresh(pilot, app)
            assert held, "no move's reads answered within HOLD_S: the machine is too busy"
    asyncio.run(run())


def test_the_top_and_the_bottom_lay_nothing_out(big_db: Path,
                                                counts: Dict[str, Any]) -> None:
    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE))
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            await pilot.pause(0.3)
            view = app.query_one(RowsView)
            widths: List[int] = [view.virtual_size.width]
            for key in ("end", "home", "end", "home"):
                await measured(pilot, app, counts, key)
                widths.append(view.virtual_size.width)
                assert counts["layouts"] == counts["scrolls"] == 0, (key, counts)
                # The scrollbar's range follows the virtual size all the same.
                assert view.vertical_scrollbar.window_virtual_size == view.virtual_size.height
                await fresh(pilot, app)
            # The demo's widest values differ at the two ends: the virtual width changed.
            assert len(set(widths)) > 1, widths
    asyncio.run(run())


def test_a_move_within_the_rows_held_makes_no_line_at_its_keypress(
        big_db: Path, counts: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A line, a page and a cursor move show lines made ahead, after the screen before
    was painted (``_draw_ahead``): none is made between the key and its fresh screen, which
    is one paint with no layout, and the reads the move starts (a page's next prefetch)
    begin after that paint (``_read_gate``). Once settled, the lines made ahead are those of
    the rows new to the screen's neighbourhood only: a page down, the page beyond (h) and
    the cursor row's line for the next line moves and page (3); a line down, the row beyond
    the next page (1) and the cursor row's line for the next page each way and the next
    line (3, or fewer when made for an earlier screen)."""
    made: List[int] = [0]
    line = Browser._line

    def counted_line(self: Browser, *a: Any) -> Any:
        made[0] += 1
        return line(self, *a)

    monkeypatch.setattr(Browser, "_line", counted_line)
    at_screen: List[Any] = []
    painted = Browser._painted
    reads: List[int] = [0]
    load_rows = Browser.load_rows

    def counted_load_rows(self: Browser, *a: Any) -> Any:
        reads[0] += 1   # in the load's thread, as it starts
        return load_rows(self, *a)

    monkeypatch.setattr(Browser, "load_rows", counted_load_rows)

    def painted_counted(self: Browser) -> None:
        if self._fresh_pending:   # the paint that records the keypress's screen
            at_screen.append((made[0], reads[0]))
        painted(self)

    monkeypatch.setattr(Browser, "_painted", painted_counted)

    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE))
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            await pilot.press("colon", *"400000", "enter")
            await fresh(pilot, app)
            await pilot.pause(0.2)
            h = app.height
            # (the key, the cursor row before, the rows the view moves, the lines made
            # ahead after it at most; a cursor move's are not counted)
            for key, cursor, moved, ahead in [("down", h - 1, 1, 4), ("pagedown", 5, h, h + 3),
                                              ("down", 5, 0, None), ("pagedown", 7, h, h + 3),
                                              ("down", h - 1, 1, 4)]:
                app.cursor = cursor
                await fresh(pilot, app)
                await pilot.pause(0.1)
                top = app.top
                made[0] = reads[0] = 0
                await measured(pilot, app, counts, key)
                assert (app.top, app.cursor) == (top + moved, cursor + (moved == 0))
                # No line made from the key to its fresh screen, and no read begun (the
                # next prefetch waits for that screen's paint).
                assert at_screen[-1] == (0, 0), (key, at_screen)
                assert counts["paints"] == 1, (key, counts)
                assert counts["layouts"] == counts["scrolls"] == 0, (key, counts)
                await fresh(pilot, app)
                await pilot.pause(0.1)
                if ahead is not None:
                    assert 0 < made[0] <= ahead, (key, made, ahead)
    asyncio.run(run())
