#!/usr/bin/env python3
"""libloader-browse, measured: keypress to a fresh screen on a table of a million rows.

The app runs headless under Textual's pilot at 120 x 40. For each move (a line: Down with the
cursor row on the window's last line, which scrolls a line; a page, the top, the bottom, a row
number at random depths) the app itself records the time from the
action's start to the first paint of the rows view with a fresh screen, and the rows the
loads returned for it. Beside each, in the same run, a baseline: the bare SQL the move needs
at the least (the keyset query of one window's rows; for a row number and the bottom, also
the OFFSET query that finds its cursor), timed on its own connection; and the repaint floor:
Up pressed at the top, which moves nothing but runs the same action and paint. Medians.

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
import time
from pathlib import Path
from typing import Any, Dict, List

from libloader.browse._app import PAGE_SIZE, PREFETCH, Browser
from libloader.browse._demo import DEMO_TABLE, create_demo_db
from libloader.browse._table import Table, open_readonly

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


async def drive(db: Path, reps: int, seed: int) -> Dict[str, Any]:
    rng = random.Random(seed)
    app = Browser(Table(open_readonly(str(db)), DEMO_TABLE))
    tops: Dict[str, List[int]] = {}
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
            plan += [("line", ("down",)), ("page", ("pagedown",)),
                     ("go to row", ("colon", *str(rng.randrange(1, ROWS)), "enter")),
                     ("top", ("home",)), ("still", ("up",)), ("bottom", ("end",))]
        for kind, keys in plan:
            if kind == "line":
                # ↓ moves the cursor row; on the window's last line it scrolls a line.
                app.cursor = app.height - 1
            before = len(app.samples)
            await pilot.press(*keys)
            await settle()
            while len(app.samples) == before:
                await pilot.pause(0.001)
            tops.setdefault(kind, []).append(app.top)
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
    floor = statistics.median(x.seconds for k, x in labeled if k == "still")
    result["repaint_floor_ms"] = floor * 1000
    for kind in ("line", "page", "go to row", "top", "bottom"):
        s = [x for k, x in labeled if k == kind]
        base = baseline(db, tops[kind], h, offset=kind in ("go to row", "bottom"))
        med = statistics.median(x.seconds for x in s)
        bmed = statistics.median(base)
        result["moves"][kind] = {
            "n": len(s), "median_ms": med * 1000, "baseline_ms": bmed * 1000,
            "ratio": med / bmed, "over_floor": med / floor, "rows_read_max": max(x.rows_read for x in s),
            "rows_fetched_max": max(x.rows_fetched for x in s)}
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
    print(f"repaint floor (Up at the top: no row moves, the same repaint): "
          f"{r['repaint_floor_ms']:.2f} ms median")
    print(f"{'move':<10} {'n':>4} {'key->fresh screen':>18} {'/ floor':>8} {'bare SQL':>10} "
          f"{'rows read (max)':>16} {'rows fetched (max)':>19}")
    for kind, m in r["moves"].items():
        print(f"{kind:<10} {m['n']:>4} {m['median_ms']:>15.2f} ms {m['over_floor']:>7.2f}x "
              f"{m['baseline_ms']:>7.2f} ms {m['rows_read_max']:>16} {m['rows_fetched_max']:>19}")
    print(f"another connection's commit to a row on screen, until the screen shows it: "
          f"{r['live_ms']:.0f} ms median, {r['live_max_ms']:.0f} ms at most over {r['live_n']} "
          f"commits (data_version polled every {r['poll_ms']:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
