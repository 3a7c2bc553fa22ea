"""The browser driven headless through Textual's pilot, as a person uses it: keys pressed, the
screen's rows compared with a direct SQL query; the rows a keypress reads, and the pages held
after a long scroll, counted on a table of a million rows."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from pathlib import Path

from conftest import (BIG_ROWS, expected_cells, fresh, screen_rows, sql_rows_at, sql_rows_from,
                      type_row, until)
from libloader.browse._app import MAX_PAGES, PAGE_SIZE, PREFETCH, Browser
from libloader.browse._demo import DEMO_TABLE, Faults
from libloader.browse._table import Table, open_readonly


def browser(db: Path) -> Browser:
    return Browser(Table(open_readonly(str(db)), DEMO_TABLE), poll_interval=0.3)


def check_screen_at(app: Browser, db: Path, offset: int) -> None:
    """The screen shows rows offset+1.. numbered so, and they are the table's rows there."""
    rows = screen_rows(app)
    assert len(rows) == min(app.height, BIG_ROWS - offset)
    want = expected_cells(sql_rows_at(db, offset, len(rows)))
    assert [r[1:] for r in rows] == want
    assert [r[0] for r in rows] == [f"{offset + i + 1:,}" for i in range(len(rows))]


def test_keys_scroll_and_jump_to_the_rows_sql_returns(big_db: Path) -> None:
    async def run() -> None:
        app = browser(big_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            h = app.height
            check_screen_at(app, big_db, 0)
            # ctrl+e / ctrl+y scroll a line; ↓ ↑ move the cursor, and scroll at the edge.
            moves = [("ctrl+e", 1), ("ctrl+e", 2), ("pagedown", 2 + h), ("space", 2 + 2 * h),
                     ("ctrl+y", 1 + 2 * h), ("pageup", 1 + h), ("b", 1), ("ctrl+y", 0),
                     ("up", 0), ("end", BIG_ROWS - h), ("down", BIG_ROWS - h),
                     ("pageup", BIG_ROWS - 2 * h), ("home", 0), ("G", BIG_ROWS - h), ("g", 0)]
            for key, top in moves:
                await pilot.press(key)
                await fresh(pilot, app)
                assert app.top == top, key
                check_screen_at(app, big_db, top)
            for n in (1, 123_457, 500_001, 999_001, BIG_ROWS):
                await type_row(pilot, n)
                await fresh(pilot, app)
                top = min(n - 1, BIG_ROWS - h)
                assert app.top == top
                check_screen_at(app, big_db, top)
            # A key: the first row whose id is at least the one typed (ids are even).
            await pilot.press("slash", *"777777", "enter")
            await fresh(pilot, app)
            rows = screen_rows(app)
            assert rows[0][1] == "777778"
            assert rows[0][0] == f"{777778 // 2:,}"
            check_screen_at(app, big_db, 777778 // 2 - 1)
            # Not a key, not a row number: the status line says so and nothing moves.
            top = app.top
            await pilot.press("slash", *"abc", "enter")
            await pilot.pause()
            assert "not a value of that type" in app.status_text()
            await type_row(pilot, 0)
            await pilot.pause()
            assert app.top == 0   # row 0 is before the first: the top
    asyncio.run(run())


def test_a_far_move_reads_a_window_and_its_prefetch_at_any_depth(big_db: Path) -> None:
    """window + 2·prefetch + 2·page rows at most, for the top, the bottom and a row number at
    rows 0, 500,000 and 999,000, counted both as the loader's items_read and as the rows the
    table's queries fetched."""
    async def run() -> None:
        app = browser(big_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            budget = app.height + 2 * PREFETCH + 2 * PAGE_SIZE
            presses = [("goto", 500_000), ("goto", 0), ("goto", 999_000), ("end", None),
                       ("goto", 500_000), ("home", None), ("goto", 999_000)]
            for kind, row in presses:
                before = len(app.samples)
                if kind == "goto":
                    assert row is not None
                    await type_row(pilot, row + 1)
                else:
                    await pilot.press(kind)
                await fresh(pilot, app)
                await until(pilot, lambda: len(app.samples) > before, what="the sample")
                s = app.samples[-1]
                # Each move lands away from the view it left: it reads at least the window.
                assert app.height <= s.rows_read <= budget, (kind, row, s)
                assert s.rows_fetched <= budget, (kind, row, s)
                check_screen_at(app, big_db, app.top)
    asyncio.run(run())


def test_held_pages_stay_within_the_bound_over_100000_rows(big_db: Path) -> None:
    async def run() -> None:
        app = browser(big_db)
        async with app.run_test(size=(90, 203)) as pilot:
            await fresh(pilot, app)
            assert app.feed is not None
            assert app.feed.loader is not None
            most_held = 0
            while app.top < 100_000:
                await pilot.press("pagedown")
                await fresh(pilot, app)
                stats = app.feed.stats()
                held = stats.accepted - stats.released
                most_held = max(most_held, held, app.feed.state.pages)
            check_screen_at(app, big_db, app.top)
            stats = app.feed.stats()
            # Every row from 0 to the window's end was read once, and most were let go of.
            assert stats.items_read >= 100_000
            assert most_held <= MAX_PAGES, most_held
            assert stats.released >= 100_000 // PAGE_SIZE - MAX_PAGES
    asyncio.run(run())


class Writer:
    """Another connection writing in the rows around ``first_id``: updates, inserts between
    rows (odd ids), deletes; one commit every ``interval`` seconds."""

    def __init__(self, db: Path, first_id: int, span: int, interval: float = 0.05) -> None:
        self.db, self.first_id, self.span, self.interval = db, first_id, span, interval
        self.stop = threading.Event()
        self.commits = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        conn = sqlite3.connect(str(self.db), isolation_level=None, timeout=10)
        rng = random.Random(5)
        while not self.stop.is_set():
            lo = self.first_id + rng.randrange(0, self.span)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"UPDATE {DEMO_TABLE} SET ticks = ticks + 1, note = ? WHERE id "
                         "BETWEEN ? AND ?", (f"write {self.commits}", lo, lo + 10))
            conn.execute(f"INSERT OR IGNORE INTO {DEMO_TABLE} (id, ts, kind, amount, note) "
                         "VALUES (?, 'now', 'insert', 0, 'new')", (lo | 1,))
            conn.execute(f"DELETE FROM {DEMO_TABLE} WHERE id = ?", ((lo + 20) & ~1,))
            conn.execute("COMMIT")
            self.commits += 1
            self.stop.wait(self.interval)
        conn.close()


def test_the_view_follows_a_writer_while_loads_fail(small_db: Path) -> None:
    """A writer changes the rows on screen and a fifth of the loads fail (and are slow):
    keys still move the view, and once the writer stops the screen is the table's rows."""
    async def run() -> None:
        app = browser(small_db)
        faults = Faults(app.table_load, fail_rate=0.2, latency=0.01, seed=3)
        app.set_load(faults)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app, timeout=30)
            await type_row(pilot, 5001)
            await fresh(pilot, app, timeout=30)
            writer = Writer(small_db, first_id=10_002 - 40, span=200)
            writer.thread.start()
            try:
                for key in ["down", "pagedown", "up", "pageup", "j", "j", "k"] * 3:
                    await pilot.press(key)
                    await pilot.pause(0.05)
                await until(pilot, lambda: writer.commits >= 40, timeout=30,
                            what="40 commits")
            finally:
                writer.stop.set()
                writer.thread.join()
            invalidations = app.invalidations
            # The last commit is seen by the next poll and the view refreshes.
            await until(pilot, lambda: app.invalidations > invalidations or app.is_fresh(),
                        timeout=30)
            await fresh(pilot, app, timeout=30)
            await pilot.pause(2 * app.poll_interval)
            await fresh(pilot, app, timeout=30)
            rows = screen_rows(app)
            assert len(rows) == app.height
            assert [r[1:] for r in rows] == expected_cells(
                sql_rows_from(small_db, int(rows[0][1]), len(rows)))
            # The numbers too: the first shown row's is its rank in the table now.
            conn = sqlite3.connect(str(small_db))
            before = conn.execute(f"SELECT count(*) FROM {DEMO_TABLE} WHERE id < ?",
                                  (int(rows[0][1]),)).fetchone()[0]
            conn.close()
            assert [r[0] for r in rows] == [f"{before + i + 1:,}" for i in range(len(rows))]
            assert faults.injected > 0
            assert app.feed is not None and app.feed.stats().failed_own > 0
            assert app.invalidations > 0
            assert any("write" in c for r in rows for c in r)
    asyncio.run(run())


def test_a_write_by_another_connection_reaches_the_screen(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            first = screen_rows(app)[3]
            assert first[-1] == "0"
            conn = sqlite3.connect(str(small_db), isolation_level=None)
            conn.execute(f"UPDATE {DEMO_TABLE} SET ticks = 41, note = 'changed' WHERE id = ?",
                         (int(first[1]),))
            conn.close()
            await until(pilot, lambda: screen_rows(app)[3][-1] == "41", timeout=10,
                        what="the change on screen")
            assert screen_rows(app)[3][-2] == "changed"
            assert app.refresh_seconds
    asyncio.run(run())


def _append_rows(db: Path, first_id: int, n: int) -> None:
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.executemany(f"INSERT INTO {DEMO_TABLE} (id, ts, kind, amount, note) "
                     "VALUES (?, '2026-12-01 00:00:00', 'new', 1.0, 'appended')",
                     [(first_id + 2 * i,) for i in range(n)])
    conn.close()


def test_f_follows_new_rows_at_the_bottom(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            assert app.feed is not None and not app.feed.following
            await pilot.press("F")
            await fresh(pilot, app)
            assert app.feed.following and "following" in app.status_text()
            assert screen_rows(app)[-1][1] == str(2 * 20_000)
            _append_rows(small_db, 2 * 20_001, 3)
            await until(pilot, lambda: screen_rows(app)[-1][1] == str(2 * 20_003), timeout=10,
                        what="the new rows at the bottom")
            await fresh(pilot, app)
            assert app.feed.following and app.top == 20_003 - app.height
            # Scrolling up stops following: new rows do not move the screen.
            await pilot.press("pageup")
            await fresh(pilot, app)
            assert not app.feed.following
            top = app.top
            _append_rows(small_db, 2 * 20_004, 2)
            await until(pilot, lambda: app.total == 20_005, timeout=10, what="the count")
            await fresh(pilot, app)
            assert app.top == top and "following" not in app.status_text()
            # F again: the bottom, following.
            await pilot.press("F")
            await fresh(pilot, app)
            assert app.feed.following
            assert screen_rows(app)[-1][1] == str(2 * 20_005)
    asyncio.run(run())


def test_follow_and_append_only_read_only_the_new_rows(small_db: Path) -> None:
    """`--follow --append-only`: opened at the bottom, following; each commit is reported as
    an append, so the rows read are the rows added."""
    async def run() -> None:
        app = Browser(Table(open_readonly(str(small_db)), DEMO_TABLE), poll_interval=0.1,
                      follow=True, append_only=True)
        async with app.run_test(size=(110, 30)) as pilot:
            await until(pilot, lambda: app.feed is not None and app.feed.following,
                        what="following from the start")
            await fresh(pilot, app)
            assert app.feed is not None
            assert screen_rows(app)[-1][1] == str(2 * 20_000)
            read = app.feed.stats().items_read
            for k in range(3):
                _append_rows(small_db, 2 * (20_001 + 4 * k), 4)
                last = str(2 * (20_004 + 4 * k))
                await until(pilot, lambda: screen_rows(app)[-1][1] == last, timeout=10,
                            what="the new rows at the bottom")
            await fresh(pilot, app)
            assert app.feed.stats().items_read - read == 12
            assert app.feed.following
    asyncio.run(run())
