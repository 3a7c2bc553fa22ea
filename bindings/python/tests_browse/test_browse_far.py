"""A far move's reads, counted and ordered: a row number's or a key's query on the database
thread reads the pages the loader's rebuild asks for right after the cursor, so the rebuild
is answered inside ``jump`` (no read waits for a load's thread or a loop turn), and the query
begins before the prompt closes; pages read before a commit the app has seen are not used."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from conftest import fresh, sql_rows_at, until
from libloader.browse import _app
from libloader.browse._app import Browser
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """Counts the loads made in a load's thread (``load_rows``)."""
    loads = [0]
    load_rows = Browser.load_rows

    def counted(self: Browser, *a: Any) -> Any:
        loads[0] += 1
        return load_rows(self, *a)

    monkeypatch.setattr(Browser, "load_rows", counted)
    return loads


async def _go(pilot: Any, app: Browser, prefix: str, text: str) -> None:
    await pilot.press(prefix, *text)
    await until(pilot, lambda: app.typed == text, what="the text typed")
    await pilot.pause(0.1)
    before = len(app.samples)
    await pilot.press("enter")
    await until(pilot, lambda: len(app.samples) > before, what="the move's fresh screen")


def test_a_far_moves_rebuild_is_answered_inside_its_jump(big_db: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _count_loads(monkeypatch)
    at_jump: List[Tuple[int, int, bool, List[Any]]] = []
    jump = Browser._jump

    def watched_jump(self: Browser, *a: Any, **k: Any) -> None:
        jump(self, *a, **k)
        assert self.feed is not None
        snap = self.feed.snapshot()
        first = self.top - snap.start
        rows = snap.items[first:first + self.height] if 0 <= first else []
        at_jump.append((self.top, loads[0], snap.settled, [r[0] for r in rows]))

    monkeypatch.setattr(Browser, "_jump", watched_jump)

    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE))
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            h = app.height
            for prefix, text, top in [("colon", "500000", 499_999), ("colon", "123456", 123_455),
                                      ("colon", "987654", 987_653),
                                      ("slash", "500002", 250_000), ("slash", "1000", 499)]:
                loads[0] = 0
                await _go(pilot, app, prefix, text)
                sample = app.samples[-1]
                assert app.top == top, (text, app.top)
                # When the jump returned, the view held the window's new rows, settled: the
                # rebuild's three reads were answered inside it, none in a load's thread.
                jumped_top, jumped_loads, settled, ids = at_jump[-1]
                assert (jumped_top, jumped_loads, settled) == (top, 0, True), (text, at_jump)
                want = [r[0] for r in sql_rows_at(big_db, top, h)]
                assert ids == want, text
                # The reads are those the loader asked for: the window and a prefetch page on
                # each side (the budget's), none more; the extra row fetched is the one a
                # backward page reads past its first row, as before.
                assert (sample.rows_read, sample.rows_fetched) == (192, 193), (text, sample)
                assert loads[0] == 0, (text, loads)
                await fresh(pilot, app)
    asyncio.run(run())


def test_a_far_moves_query_begins_before_the_prompt_closes(
        big_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a generous START_WAIT_S (a busy machine may take longer than its 2 ms to run
    the database thread), the cursor's query (through the position index, or the OFFSET)
    has begun when the prompt closes. The wait is for an idle database thread: the test
    makes each move with none of its jobs out (no poll, the index read), which a poll every
    0.4 s, on a loaded machine, did not always leave."""
    monkeypatch.setattr(_app, "START_WAIT_S", 1.0, raising=False)
    order: List[str] = []
    row_cursor, end_ask = Browser._row_cursor, Browser.end_ask

    def query(self: Browser, *a: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            order.append("query")
        return row_cursor(self, *a)

    def close(self: Browser) -> None:
        order.append("close")
        end_ask(self)

    monkeypatch.setattr(Browser, "_row_cursor", query)
    monkeypatch.setattr(Browser, "end_ask", close)

    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE), poll_interval=3600)
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            for text in ("400000", "600000", "700001"):
                await until(pilot, lambda: app._db_jobs == 0 and app._position_build is None,
                            what="the database thread idle")
                order.clear()
                await _go(pilot, app, "colon", text)
                assert order[:2] == ["query", "close"], (text, order)
                await fresh(pilot, app)
    asyncio.run(run())


def test_pages_read_before_a_commit_seen_are_not_used(big_db: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit the poll saw (an invalidation) between a far move's query and its jump:
    the pages read ahead may be older than it, so the loader reads the rebuild itself. (No
    position index: a move found through it is made in the call that typed Enter, where no
    commit can be seen meanwhile.)"""
    monkeypatch.setattr(_app, "MIN_ROWS", 10**12)
    loads = _count_loads(monkeypatch)
    pages_read_ahead = Browser._pages_read_ahead

    async def commit_seen_meanwhile(self: Browser, *a: Any) -> Any:
        pages = await pages_read_ahead(self, *a)
        self.invalidations += 1
        return pages

    monkeypatch.setattr(Browser, "_pages_read_ahead", commit_seen_meanwhile)

    async def run() -> None:
        app = Browser(Table(open_readonly(str(big_db)), DEMO_TABLE))
        async with app.run_test(size=(120, 40)) as pilot:
            await fresh(pilot, app)
            loads[0] = 0
            answered = app.preread_answers
            await _go(pilot, app, "colon", "300000")
            await fresh(pilot, app)
            assert app.top == 299_999
            assert app.preread_answers == answered
            assert loads[0] == 3, loads
    asyncio.run(run())
