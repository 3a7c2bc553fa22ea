"""Every failure a message, never a crash; exact row numbers under writes; no empty screen past
the end; schema changes said; the smaller findings (messages cut off, paste, the wheel,
"1 rows", "rows 1–1 of 0", "waiting for: waiting for")."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from textual import events

from conftest import expected_cells, fresh, screen_lines, screen_rows, sql_rows_at, type_row, until
from libloader import Config
from libloader.browse import main
from libloader.browse._app import PAGE_SIZE, PREFETCH, MAX_PAGES, Browser, RowsView
from libloader.browse._demo import DEMO_TABLE, create_demo_db
from libloader.browse._table import Table, open_readonly


def browser(db: Path, **kw: Any) -> Browser:
    return Browser(Table(open_readonly(str(db)), DEMO_TABLE), poll_interval=0.2, **kw)


@pytest.fixture
def journal_db(tmp_path: Path) -> Path:
    """20,000 rows in a rollback-journal database: a writer's exclusive lock keeps every
    reader out (in WAL, readers go on)."""
    path = tmp_path / "j.db"
    create_demo_db(path, 20_000)
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return path


class Lock:
    """Another process's write lock: BEGIN EXCLUSIVE on a connection of its own."""

    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)

    def take(self) -> None:
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("COMMIT")


@pytest.fixture
def lock(journal_db: Path) -> Iterator[Lock]:
    lk = Lock(journal_db)
    yield lk
    if lk.conn.in_transaction:
        lk.release()
    lk.conn.close()


def sql(db: Path, statement: str, *args: Any) -> None:
    conn = sqlite3.connect(str(db), isolation_level=None, timeout=10)
    conn.execute(statement, args)
    conn.close()


def rank(db: Path, first_id: int) -> int:
    conn = sqlite3.connect(str(db))
    try:
        return int(conn.execute(f"SELECT count(*) FROM {DEMO_TABLE} WHERE id < ?",
                                (first_id,)).fetchone()[0])
    finally:
        conn.close()


def numbers_are_the_tables(app: Browser, db: Path) -> bool:
    """The rows on screen are the table's from the first shown one on, numbered as SQL
    ranks them."""
    rows = screen_rows(app)
    if not rows or not app.is_fresh():
        return False
    n = rank(db, int(rows[0][1]))
    return ([r[0] for r in rows] == [f"{n + i + 1:,}" for i in range(len(rows))]
            and [r[1:] for r in rows] == expected_cells(sql_rows_at(db, n, len(rows))))


# ---- 2. every failure a message ----

def test_moves_while_another_process_holds_a_write_lock_say_so(journal_db: Path,
                                                               lock: Lock) -> None:
    async def run() -> None:
        app = browser(journal_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            lock.take()
            for keys in (["G"], ["colon", *"5000", "enter"], ["slash", *"7000", "enter"]):
                app.message = ""
                await pilot.press(*keys)
                await until(pilot, lambda: "locked" in app.status_text(), timeout=10,
                            what=f"a message for {keys}")
                assert "try again" in app.status_text()
                assert app.is_running and app.return_code is None
            lock.release()
            await pilot.press("G")
            await fresh(pilot, app)
            assert app.top == 20_000 - app.height
            assert numbers_are_the_tables(app, journal_db)
    asyncio.run(run())


def test_bottom_after_the_table_is_dropped_says_so(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            sql(small_db, f"DROP TABLE {DEMO_TABLE}")
            await pilot.press("G")
            await pilot.pause()
            await until(pilot, lambda: "dropped" in app.status_text(), timeout=5,
                        what="the drop said")
            assert app.is_running and app.return_code is None
            assert not app.is_fresh()
            assert screen_rows(app) == []    # the old rows are not shown as the table's
            await pilot.press("colon", *"10", "enter", "slash", *"10", "enter", "r")
            await pilot.pause()
            assert app.is_running
    asyncio.run(run())


def test_a_key_beyond_64_bits_is_refused_in_words(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("slash", *"99999999999999999999", "enter")
            await pilot.pause()
            assert "64-bit" in app.status_text()
            assert app.is_running and app.top == 0
            await pilot.press("slash", *"-99999999999999999999", "enter")
            await pilot.pause()
            assert "64-bit" in app.status_text()
            await type_row(pilot, 10**30)   # a row number that big is the last row
            await fresh(pilot, app)
            assert app.top == 20_000 - app.height
    asyncio.run(run())


def _headless(monkeypatch: pytest.MonkeyPatch, after: Any) -> None:
    """main() runs the app headless, and ``after(app)`` runs once it is mounted."""
    run = Browser.run
    mount = Browser.on_mount

    def headless(self: Browser, *a: Any, **k: Any) -> Any:
        return run(self, headless=True, size=(100, 24))

    async def mounted(self: Browser) -> None:
        await mount(self)
        self.set_timer(0.3, lambda: after(self))
    monkeypatch.setattr(Browser, "run", headless)
    monkeypatch.setattr(Browser, "on_mount", mounted)


def test_main_exits_non_zero_when_the_app_ends_on_an_error(
        small_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(app: Browser) -> None:
        raise RuntimeError("a bug")
    _headless(monkeypatch, fail)
    assert main([str(small_db)]) == 1


def test_main_exits_zero_after_q(small_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _headless(monkeypatch, lambda app: app.exit())
    assert main([str(small_db)]) == 0


def test_opening_during_another_process_write_waits_for_it(
        journal_db: Path, lock: Lock, monkeypatch: pytest.MonkeyPatch) -> None:
    _headless(monkeypatch, lambda app: app.exit())
    lock.take()
    timer = threading.Timer(1.0, lock.release)
    timer.start()
    try:
        assert main([str(journal_db)]) == 0
    finally:
        timer.join()


# ---- 3. exact row numbers ----

def test_rows_inserted_before_the_view_renumber_it_within_a_second(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        locate = app.table.locate_key
        threads: set = set()

        def located(*a: Any, **k: Any) -> Any:
            threads.add(threading.current_thread())
            return locate(*a, **k)
        app.table.locate_key = located  # type: ignore[method-assign]
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await type_row(pilot, 5001)
            await fresh(pilot, app)
            assert numbers_are_the_tables(app, small_db)
            conn = sqlite3.connect(str(small_db), isolation_level=None)
            conn.executemany(f"INSERT INTO {DEMO_TABLE} (id, ts, kind, amount) "
                             "VALUES (?, 'now', 'x', 0)", [(i,) for i in (1, 3, 5, 7, 9)])
            conn.close()
            t0 = time.monotonic()
            await until(pilot, lambda: screen_rows(app)[0][0] == "5,006", timeout=5,
                        what="the view renumbered")
            assert time.monotonic() - t0 < 1.5
            await fresh(pilot, app)
            assert numbers_are_the_tables(app, small_db)
            # And deleted ones: 20 rows before the view.
            sql(small_db, f"DELETE FROM {DEMO_TABLE} WHERE id BETWEEN 100 AND 139")
            await until(pilot, lambda: numbers_are_the_tables(app, small_db), timeout=5,
                        what="the view renumbered after deletes")
            assert screen_rows(app)[0][0] == "4,986"
            # Ranked in a worker thread, off the UI thread.
            assert threads and threading.main_thread() not in threads
    asyncio.run(run())


# ---- 4. never an empty screen past the end; schema changes; recovery ----

def test_a_key_above_the_last_shows_the_last_rows(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("slash", *"99999999", "enter")
            await fresh(pilot, app)
            rows = screen_rows(app)
            assert len(rows) == app.height
            assert rows[-1][0] == "20,000"
            assert numbers_are_the_tables(app, small_db)
    asyncio.run(run())


def test_the_table_shrinking_under_the_view_keeps_the_screen_full(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("G")
            await fresh(pilot, app)
            sql(small_db, f"DELETE FROM {DEMO_TABLE} WHERE id > 30000")
            await until(pilot, lambda: numbers_are_the_tables(app, small_db)
                        and len(screen_rows(app)) == app.height, timeout=5,
                        what="a full screen of the last rows")
            assert screen_rows(app)[-1][0] == "15,000"
            await until(pilot, lambda: "of 15,000" in app.status_text(), timeout=5,
                        what="the new total")
    asyncio.run(run())


def test_columns_renamed_or_dropped_show_the_new_columns(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            sql(small_db, f"ALTER TABLE {DEMO_TABLE} RENAME COLUMN note TO remark")
            await until(pilot, lambda: "remark" in app.header_text(), timeout=5,
                        what="the renamed column")
            await fresh(pilot, app)
            assert "columns changed" in app.status_text()
            assert numbers_are_the_tables(app, small_db)
            sql(small_db, f"ALTER TABLE {DEMO_TABLE} DROP COLUMN remark")
            await until(pilot, lambda: "remark" not in app.header_text(), timeout=5,
                        what="the dropped column")
            await fresh(pilot, app)
            assert numbers_are_the_tables(app, small_db)
            assert not any("remark" in c for r in screen_rows(app) for c in r)
    asyncio.run(run())


def test_the_view_recovers_by_itself_after_a_long_lock(journal_db: Path, lock: Lock) -> None:
    """Loads fail while another process holds a lock until the automatic retries are spent:
    the status line says to press r, and once the lock is gone the view recovers without
    it."""
    async def run() -> None:
        config = Config(page_size=PAGE_SIZE, prefetch_distance=PREFETCH, max_pages=MAX_PAGES,
                        max_auto_retries=2, backoff_initial_ms=20, backoff_max_ms=40)
        app = browser(journal_db, feed_config=config)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            lock.take()
            await type_row(pilot, 3000)
            # The row number's cursor is read in a worker: it waits for the lock, then says.
            await until(pilot, lambda: app.message.startswith("going to row"),
                        what="the lock said")
            await pilot.press("pagedown", "pagedown")
            await until(pilot, lambda: app.feed is not None and app.feed.needs_retry,
                        timeout=10, what="the retries spent")
            await pilot.pause(0.3)
            assert "press r" in app.status_text()
            lock.release()
            await fresh(pilot, app, timeout=6)
            assert numbers_are_the_tables(app, journal_db)
    asyncio.run(run())


# ---- 5. the smaller findings ----

def test_an_error_message_is_seen_at_80_columns(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(80, 24)) as pilot:
            await fresh(pilot, app)
            await pilot.press("slash", *"abc", "enter")
            await pilot.pause(0.1)
            status = screen_lines(app)[-2]   # above the footer
            assert "not a value of that type" in status or "abc" in status, status
    asyncio.run(run())


def test_paste_into_the_prompt(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("colon")
            assert app.focused is not None
            app.focused.post_message(events.Paste("1,001"))
            await pilot.pause()
            await pilot.press("enter")
            await fresh(pilot, app)
            assert app.top == 1000
    asyncio.run(run())


def test_the_mouse_wheel_scrolls(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            view = app.query_one(RowsView)
            args = dict(x=5, y=5, delta_x=0, delta_y=1, button=0, shift=False, meta=False,
                        ctrl=False)
            view.post_message(events.MouseScrollDown(view, **args))  # type: ignore[arg-type]
            await pilot.pause()
            await fresh(pilot, app)
            assert app.top > 0
            top = app.top
            view.post_message(events.MouseScrollUp(view, **args))  # type: ignore[arg-type]
            await pilot.pause()
            await fresh(pilot, app)
            assert app.top < top
    asyncio.run(run())


def test_counts_read_as_words(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
    conn.commit()

    async def run() -> None:
        app = Browser(Table(open_readonly(str(path)), "t"), poll_interval=0.2)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            assert "rows 1–1 of 0" not in app.status_text()
            assert "no rows" in app.status_text()
            conn.execute("INSERT INTO t VALUES (1, 'one')")
            conn.commit()
            await until(pilot, lambda: len(screen_rows(app)) == 1, timeout=5, what="the row")
            await fresh(pilot, app)
            title = screen_lines(app)[0]
            assert "1 row " in title and "1 rows" not in title
            assert "waiting for: waiting for" not in app.status_text()
    asyncio.run(run())
    conn.close()


# ---- 6. no full count(*) per commit on a large table ----

def test_a_slow_count_is_not_run_after_every_commit(small_db: Path) -> None:
    """A count that takes 50 ms (a large table's) runs at most 5% of the time under a writer
    committing every 20 ms, the total shown as approximate meanwhile, and off the UI thread:
    keys are answered while it runs. Once the writer stops the total is exact again."""
    async def run() -> None:
        app = browser(small_db)
        count = app.count_rows
        calls: list = []
        threads: set = set()

        def slow_count(name: str) -> int:
            t0 = time.monotonic()
            threads.add(threading.current_thread())
            time.sleep(0.05)
            n = count(name)
            calls.append(time.monotonic() - t0)
            return n
        app.count_rows = slow_count  # type: ignore[method-assign]
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            calls.clear()
            stop = threading.Event()

            def write() -> None:
                conn = sqlite3.connect(str(small_db), isolation_level=None, timeout=10)
                i = 0
                while not stop.is_set():
                    conn.execute(f"INSERT INTO {DEMO_TABLE} (id, ts, kind, amount) "
                                 "VALUES (?, 'now', 'x', 0)", (100_001 + 2 * i,))
                    i += 1
                    stop.wait(0.02)
                conn.close()
            t = threading.Thread(target=write)
            t0 = time.monotonic()
            t.start()
            try:
                await pilot.pause(3.0)
                assert app.invalidations >= 8
                assert "~" in app.status_text() or sum(calls) <= 0.1 * 3.0
            finally:
                stop.set()
                t.join()
            spent = time.monotonic() - t0
            assert calls and sum(calls) <= 0.08 * spent, (calls, spent)
            assert threading.main_thread() not in threads
            conn = sqlite3.connect(str(small_db))
            n = conn.execute(f"SELECT count(*) FROM {DEMO_TABLE}").fetchone()[0]
            conn.close()
            await until(pilot, lambda: f"of {n:,}" in app.status_text(), timeout=5,
                        what="the exact total")
    asyncio.run(run())


def test_keys_are_answered_while_a_count_runs(small_db: Path) -> None:
    async def run() -> None:
        app = browser(small_db)
        count = app.count_rows
        started = threading.Event()

        def slow_count(name: str) -> int:
            started.set()
            time.sleep(1.0)
            return count(name)
        app.count_rows = slow_count  # type: ignore[method-assign]
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            sql(small_db, f"UPDATE {DEMO_TABLE} SET ticks = 1 WHERE id = 2")
            await until(pilot, started.is_set, timeout=5, what="the count")
            t0 = time.monotonic()
            await pilot.press("pagedown")
            await fresh(pilot, app)
            assert time.monotonic() - t0 < 0.5
            assert app.top == app.height
    asyncio.run(run())


# ---- 6. the Textual way: a scroll view with a real scrollbar, sideways scrolling ----

def test_the_scrollbar_shows_the_position_and_moves_the_window(big_db: Path) -> None:
    async def run() -> None:
        app = browser(big_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            view = app.query_one(RowsView)
            assert view.show_vertical_scrollbar
            assert view.virtual_size.height == 1_000_000 + 1   # the rows and the header
            await type_row(pilot, 500_001)
            await fresh(pilot, app)
            assert round(view.scroll_y) == 500_000
            # The scrollbar moved by a person (as a drag does): the window follows, and the
            # row numbers are the table's there.
            view.scroll_to(y=750_000, animate=False, immediate=True)
            await fresh(pilot, app)
            assert app.top == 750_000
            rows = screen_rows(app)
            assert rows[0][0] == "750,001"
            assert [r[1:] for r in rows] == expected_cells(sql_rows_at(big_db, 750_000,
                                                                       len(rows)))
    asyncio.run(run())


def test_wide_rows_scroll_sideways_with_the_numbers_pinned(tmp_path: Path) -> None:
    path = tmp_path / "wide.db"
    conn = sqlite3.connect(str(path))
    cols = ", ".join(f"c{i} TEXT" for i in range(12))
    conn.execute(f"CREATE TABLE w (id INTEGER PRIMARY KEY, {cols})")
    conn.execute(f"INSERT INTO w VALUES (1, {', '.join(repr(f'value-{i}-' + 'x' * 20) for i in range(12))})")
    conn.commit()
    conn.close()

    async def run() -> None:
        app = Browser(Table(open_readonly(str(path)), "w"), poll_interval=0.2)
        async with app.run_test(size=(80, 12)) as pilot:
            await fresh(pilot, app)
            assert "value-11-" not in "\n".join(screen_lines(app))
            await pilot.press("L")     # the rightmost columns
            await pilot.pause()
            lines = screen_lines(app)
            text = "\n".join(lines)
            assert "value-11-" in text and "c11" in text
            row = next(l for l in lines if l.lstrip().startswith("1 │"))
            assert row.lstrip().startswith("1 │")    # the row number stays at the left
            await pilot.press("H")
            await pilot.pause()
            assert "value-0-" in "\n".join(screen_lines(app))
            await pilot.press("right")
            await pilot.pause()
            assert app.query_one(RowsView).scroll_x > 0
    asyncio.run(run())


def test_help_shows_the_keys_and_the_schema_and_ctrl_c_quits(small_db: Path) -> None:
    from libloader.browse._app import HelpScreen

    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 60)) as pilot:
            await fresh(pilot, app)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = "\n".join(screen_lines(app))
            assert "∅ is SQL NULL" in text and "go to a row number" in text
            assert "CREATE TABLE events" in text and "ticks INTEGER" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert not app.is_running
        assert app.return_code == 0
    asyncio.run(run())


def test_the_prompt_is_an_input_that_edits_and_cancels(small_db: Path) -> None:
    from textual.widgets import Input

    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("colon")
            await pilot.pause()
            assert isinstance(app.focused, Input)
            assert "go to row number" in screen_lines(app)[-2]
            await pilot.press(*"12x", "backspace", "left", "3", "enter")   # 132
            await fresh(pilot, app)
            assert app.top == 131
            await pilot.press("slash", *"99", "escape")
            await pilot.pause()
            assert app.top == 131 and not isinstance(app.focused, Input)
            assert " fresh " in screen_lines(app)[-2]
    asyncio.run(run())


def test_the_demo_writer_leaves_the_numbers_the_tables(small_db: Path) -> None:
    """The demo's own writer (updates, inserts between rows and deletes anywhere in the
    table) commits 30 times while the view is in the middle: once it stops, the rows on screen
    and their numbers are the table's."""
    import random
    from libloader.browse._demo import write_step

    async def run() -> None:
        app = browser(small_db)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await type_row(pilot, 10_001)
            await fresh(pilot, app)
            done = threading.Event()

            def write() -> None:
                conn = sqlite3.connect(str(small_db), isolation_level=None, timeout=10)
                rng = random.Random(7)
                for step in range(30):
                    write_step(conn, rng, step, top=400)
                    time.sleep(0.03)
                conn.close()
                done.set()
            threading.Thread(target=write, daemon=True).start()
            await until(pilot, done.is_set, timeout=30, what="the writer's 30 commits")
            await until(pilot, lambda: numbers_are_the_tables(app, small_db), timeout=5,
                        what="the table's rows and numbers")
    asyncio.run(run())


def test_a_message_reaches_the_status_line_by_itself(small_db: Path) -> None:
    """The message is reactive state: set anywhere, the status line shows it at once (a row
    number that does not parse set it and nothing redrew the status line)."""
    async def run() -> None:
        app = Browser(Table(open_readonly(str(small_db)), DEMO_TABLE), poll_interval=60)
        async with app.run_test(size=(110, 30)) as pilot:
            await fresh(pilot, app)
            await pilot.press("colon", *"abc", "enter")
            await pilot.pause(0.1)
            assert "not a row number: 'abc'" in screen_lines(app)[-2]
            app.message = "said elsewhere"
            await pilot.pause(0.1)
            assert screen_lines(app)[-2].lstrip().startswith("said elsewhere ·")
    asyncio.run(run())
