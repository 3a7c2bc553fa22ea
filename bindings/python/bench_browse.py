#!/usr/bin/env python3
"""libloader-browse, measured: keypress to a fresh screen on a table of a million rows.

The app runs headless under Textual's pilot at 120 x 40. For each move (a line: Down with the
cursor row on the window's last line, which scrolls a line; a page, the top, the bottom, a row
number at random depths) the app itself records the time from the action's start to the paint
of a fresh screen, and the rows the loads returned for it. Beside each, in the same run:

- the repaint floor: Down with the cursor row mid-window, which reads nothing, makes the two
  lines the cursor leaves and reaches again (or finds them made ahead) and waits for the
  rows view's paint;
- the full-repaint floor (the floor as first defined, at 82198f2): every row line of the rows
  view made again from its rows (none kept from before; the header's strip is kept, as the
  app keeps it) and painted, no row moved, nothing read, timed as a keypress is (from the
  action's start to the paint of its screen);
- for a far move (the top, the bottom, a row number), the reads floor: the same moves made on
  a bare ``aio.Feed`` with the browser's settings and page load (a keyset query in
  ``asyncio.to_thread``), no UI: the cursor's OFFSET query on a database thread (for a row
  number and the bottom), ``jump``, ``set_window``, until it settles (the window and its
  prefetch read, as a fresh screen needs); and the window's reads alone: the same, with the
  cursor found before the move starts (no OFFSET query timed);
- the bare SQL the move needs at the least (the keyset query of one window's rows; for a row
  number and the bottom, also the OFFSET query that finds its cursor), on its own connection.

A keypress that changes nothing (Up at the top) is reported too: nothing is drawn or painted
for it. Medians.

    python3 bindings/python/bench_browse.py [--reps 40] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Tuple

from libloader import aio
from libloader._enums import Direction
from libloader._feed import LoadResult
from libloader._types import Config
from libloader.browse._app import MAX_PAGES, PAGE_SIZE, PREFETCH, Browser
from libloader.browse._demo import DEMO_TABLE, create_demo_db
from libloader.browse._table import Row, Table, open_readonly

ROWS = 1_000_000


def baseline(db: Path, tops: List[int], h: int, offset: bool) -> List[float]:
    """The bare SQL for each window: the key of the row before it (by OFFSET, or none), and
    the window's rows by keyset."""
    conn = sqlite3.connect(str(db))
    out = []
    for top in tops:
        t0 = time.perf_counter()
        if offset and top > 0:
            # From the nearer end, as the browser does.
            if top - 1 <= ROWS // 2:
                q = f"SELECT id FROM {DEMO_TABLE} ORDER BY id LIMIT 1 OFFSET ?"
                key = conn.execute(q, (top - 1,)).fetchone()[0]
            else:
                q = f"SELECT id FROM {DEMO_TABLE} ORDER BY id DESC LIMIT 1 OFFSET ?"
                key = conn.execute(q, (ROWS - top,)).fetchone()[0]
        else:
            key = 2 * top   # the demo's ids: row n's is 2n + 2, the row before it 2n
        conn.execute(f"SELECT * FROM {DEMO_TABLE} WHERE id > ? ORDER BY id LIMIT ?",
                     (key, h)).fetchall()
        out.append(time.perf_counter() - t0)
    conn.close()
    return out


async def reads_floor(db: Path, moves: List[Tuple[str, int]], h: int,
                      known: bool = False) -> Dict[str, List[float]]:
    """Each far move's reads alone, on a bare aio.Feed (see the module's doc): seconds from
    the move's start until the feed settles, by kind. ``known``: the cursor is found before
    the move starts (its OFFSET query not timed): the window's reads alone."""
    local = threading.local()

    def table() -> Table:
        t = getattr(local, "table", None)
        if t is None:
            t = local.table = Table(open_readonly(str(db), check_same_thread=False), DEMO_TABLE)
        return t

    async def load(cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        return await asyncio.to_thread(lambda: table().load(cursor, limit, direction))

    pool = ThreadPoolExecutor(1)
    loop = asyncio.get_running_loop()
    out: Dict[str, List[float]] = {}
    config = Config(page_size=PAGE_SIZE, prefetch_distance=PREFETCH, max_pages=MAX_PAGES)
    async with aio.Feed(load, config=config) as feed:
        feed.set_window(0, h)
        await feed.settled()
        for kind, top in moves:
            # From a page away, as the browser's moves start from where the last one ended.
            if known:
                cursor = await loop.run_in_executor(pool, table().cursor_at, top, ROWS)
            t0 = time.perf_counter()
            if kind == "top":
                cursor = b""
            elif not known:
                cursor = await loop.run_in_executor(pool, table().cursor_at, top, ROWS)
            feed.jump(cursor, top)
            feed.set_window(top, h)
            await feed.settled()
            out.setdefault(kind, []).append(time.perf_counter() - t0)
    pool.shutdown()
    return out


def full_repaint(app: Browser) -> None:
    """The full-repaint floor's action: what the rows view's lines were drawn from is
    forgotten (the cells, the lines, the styles they were made with), so the next pass of
    the state draws every line again, and a keypress's screen is waited for."""
    app._begin("full repaint")
    app._row_cache = {}
    app._line_cache = {}
    app._line_common = None
    app._drawn = None


async def drive(db: Path, reps: int, seed: int) -> Dict[str, Any]:
    rng = random.Random(seed)
    app = Browser(Table(open_readonly(str(db)), DEMO_TABLE))
    tops: Dict[str, List[int]] = {}
    order: List[Tuple[str, int]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        async def settle() -> None:
            while not app.is_fresh():
                await pilot.pause(0.001)
            await pilot.pause()

        await settle()
        h = app.height
        plan: List[Any] = []
        labeled: List[Any] = []
        for _ in range(reps):
            # A line and a page after a row number, away from the table's end (at its end
            # they move nothing); Up at the top moves nothing.
            plan += [("go to row", ("colon", *str(rng.randrange(1, ROWS - 1000)), "enter")),
                     ("line", ("down",)), ("page", ("pagedown",)), ("bottom", ("end",)),
                     ("top", ("home",)), ("nothing", ("up",)), ("floor", ("down",)),
                     ("full repaint", ())]
        for kind, keys in plan:
            if kind == "line":
                # ↓ moves the cursor row; on the window's last line it scrolls a line.
                app.cursor = app.height - 1
                await settle()
            elif kind == "floor":
                # Mid-window, ↓ moves the cursor row only: the rows view is drawn again.
                app.cursor = app.height // 2
                await settle()
            before = len(app.samples)
            if keys:
                await pilot.press(*keys)
            else:
                full_repaint(app)
            await settle()
            while len(app.samples) == before:
                await pilot.pause(0.001)
            tops.setdefault(kind, []).append(app.top)
            order.append((kind, app.top))
            labeled.append((kind, app.samples[-1]))
        # Live: another connection commits a change to a row on screen; the time until the
        # screen shows it (the data_version poll, every poll_interval, then the repair).
        await pilot.press("home")
        await settle()
        writer = sqlite3.connect(str(db), isolation_level=None)
        live: List[float] = []
        for i in range(reps // 4 or 1):
            first = app.window_rows()[3]
            assert first is not None
            note = f"live {i}"
            t0 = time.perf_counter()
            writer.execute(f"UPDATE {DEMO_TABLE} SET note = ? WHERE id = ?", (note, first[0]))
            while not (app.is_fresh() and (app.window_rows()[3] or ())[-2:-1] == (note,)):
                await pilot.pause(0.005)
            live.append(time.perf_counter() - t0)
            await pilot.pause(rng.uniform(0, app.poll_interval))
        writer.close()
    result: Dict[str, Any] = {"window": h, "page_size": PAGE_SIZE, "prefetch": PREFETCH,
                              "budget": h + 2 * PREFETCH + 2 * PAGE_SIZE, "moves": {}}
    result["live_ms"] = statistics.median(live) * 1000
    result["live_max_ms"] = max(live) * 1000
    result["live_n"] = len(live)
    result["poll_ms"] = app.poll_interval * 1000
    floor = statistics.median(x.seconds for k, x in labeled if k == "floor")
    result["repaint_floor_ms"] = floor * 1000
    full = statistics.median(x.seconds for k, x in labeled if k == "full repaint")
    result["full_repaint_ms"] = full * 1000
    result["nothing_ms"] = statistics.median(x.seconds for k, x in labeled
                                             if k == "nothing") * 1000
    far = [(k, top) for k, top in order if k in ("go to row", "top", "bottom")]
    reads = await reads_floor(db, far, h)
    window_reads = await reads_floor(db, far, h, known=True)
    for kind in ("line", "page", "go to row", "top", "bottom"):
        s = [x for k, x in labeled if k == kind]
        base = baseline(db, tops[kind], h, offset=kind in ("go to row", "bottom"))
        med = statistics.median(x.seconds for x in s)
        bmed = statistics.median(base)
        m = result["moves"][kind] = {
            "n": len(s), "median_ms": med * 1000, "baseline_ms": bmed * 1000,
            "ratio": med / bmed, "over_floor": med / floor, "over_full": med / full,
            "rows_read_max": max(x.rows_read for x in s),
            "rows_fetched_max": max(x.rows_fetched for x in s)}
        if kind in reads:
            rmed = statistics.median(reads[kind])
            m["reads_ms"] = rmed * 1000
            m["over_reads"] = med / rmed
            m["over_reads_and_floor"] = med / (rmed + floor)
            m["over_reads_and_full"] = med / (rmed + full)
            wmed = statistics.median(window_reads[kind])
            m["window_reads_ms"] = wmed * 1000
            m["over_window_reads_and_full"] = med / (wmed + full)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=40)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        create_demo_db(db, ROWS)
        r = asyncio.run(drive(db, args.reps, args.seed))
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"libloader-browse on {ROWS:,} rows, 120x40 headless: window {r['window']} rows, "
          f"page {r['page_size']}, prefetch {r['prefetch']}; "
          f"budget window + 2 prefetch + 2 pages = {r['budget']} rows")
    print(f"repaint floor (Down mid-window: the cursor's two lines made again or made "
          f"ahead, the rows view painted, nothing read): {r['repaint_floor_ms']:.2f} ms median")
    print(f"full-repaint floor (every line of the rows view made again and painted, no row "
          f"moved, nothing read): {r['full_repaint_ms']:.2f} ms median")
    print(f"a key that changes nothing (Up at the top: nothing drawn): {r['nothing_ms']:.2f} ms")
    print(f"{'move':<10} {'n':>4} {'key->fresh screen':>18} {'/ floor':>8} {'/ full':>7} "
          f"{'bare SQL':>10} "
          f"{'rows read (max)':>16} {'rows fetched (max)':>19} {'reads alone':>12} "
          f"{'/ reads':>8} {'/ (reads + floor)':>18} {'/ (reads + full)':>17} "
          f"{'window reads':>13} {'/ (window reads + full)':>24}")
    for kind, m in r["moves"].items():
        extra = (f" {m['reads_ms']:>9.2f} ms {m['over_reads']:>7.2f}x "
                 f"{m['over_reads_and_floor']:>17.2f}x {m['over_reads_and_full']:>16.2f}x "
                 f"{m['window_reads_ms']:>10.2f} ms {m['over_window_reads_and_full']:>23.2f}x"
                 if "reads_ms" in m else "")
        print(f"{kind:<10} {m['n']:>4} {m['median_ms']:>15.2f} ms {m['over_floor']:>7.2f}x "
              f"{m['over_full']:>6.2f}x {m['baseline_ms']:>7.2f} ms {m['rows_read_max']:>16} "
              f"{m['rows_fetched_max']:>19}" + extra)
    print(f"another connection's commit to a row on screen, until the screen shows it: "
          f"{r['live_ms']:.0f} ms median, {r['live_max_ms']:.0f} ms at most over {r['live_n']} "
          f"commits (data_version polled every {r['poll_ms']:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
