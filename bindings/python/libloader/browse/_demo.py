"""The demo: a table of a million rows made in one statement, a writer process, injected
load failures and latency.

The table's ids are the even numbers from 2 to 2,000,000, so the writer can insert rows
between any two. The writer runs as its own process, with its own connection, as another
program writing to the database would: each step updates a run of rows (mostly among the
first few hundred, where the browser opens), inserts a few rows and deletes a few, and
commits.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable, List, Optional, Union

from .._enums import Direction
from .._feed import LoadResult
from ._table import Row

DEMO_TABLE = "events"
DEMO_ROWS = 1_000_000

_KINDS = ("click", "view", "buy", "login", "logout", "search", "error", "share")


def create_demo_db(path: Path, rows: int = DEMO_ROWS) -> None:
    """Makes ``path`` a database with the demo table of ``rows`` rows, in WAL mode (the
    browser reads while the writer writes). One INSERT from a recursive CTE: a second or two
    for a million rows."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute(f"CREATE TABLE {DEMO_TABLE} (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, "
                     "kind TEXT NOT NULL, amount REAL NOT NULL, note TEXT, "
                     "ticks INTEGER NOT NULL DEFAULT 0)")
        kinds = " ".join(f"WHEN {i} THEN '{k}'" for i, k in enumerate(_KINDS))
        conn.execute("BEGIN")
        conn.execute(
            f"INSERT INTO {DEMO_TABLE} (id, ts, kind, amount, note) "
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?) "
            "SELECT 2 * x, "
            "strftime('%Y-%m-%d %H:%M:%S', 1767225600 + x * 7, 'unixepoch'), "
            f"CASE (x * 7919) % {len(_KINDS)} {kinds} END, "
            "((x * 104729) % 100000) / 100.0, "
            "'row ' || (2 * x) FROM n", (rows,))
        conn.execute("COMMIT")
        conn.execute("PRAGMA synchronous = NORMAL")
    finally:
        conn.close()


def write_step(conn: sqlite3.Connection, rng: random.Random, step: int, top: int) -> None:
    """One commit of the demo writer: a run of 20 rows' ``ticks`` bumped (three times in
    four among the first ``top`` ids), three rows inserted between existing ones and three
    deleted."""
    conn.execute("BEGIN IMMEDIATE")
    hi = conn.execute(f"SELECT max(id) FROM {DEMO_TABLE}").fetchone()[0] or 2
    start = rng.randrange(0, top) if rng.random() < 0.75 else rng.randrange(0, hi)
    conn.execute(f"UPDATE {DEMO_TABLE} SET ticks = ticks + 1, note = ? "
                 "WHERE id BETWEEN ? AND ?", (f"write {step}", start, start + 40))
    for _ in range(3):
        odd = rng.randrange(0, hi // 2) * 2 + 1
        conn.execute(f"INSERT OR IGNORE INTO {DEMO_TABLE} (id, ts, kind, amount, note) "
                     "VALUES (?, strftime('%Y-%m-%d %H:%M:%S', 'now'), 'insert', 0, ?)",
                     (odd, f"inserted at {step}"))
        conn.execute(f"DELETE FROM {DEMO_TABLE} WHERE id = ?", (rng.randrange(0, hi // 2) * 2,))
    conn.execute("COMMIT")


def start_writer(path: Path, interval: float, seed: int) -> "subprocess.Popen[bytes]":
    """The writer process (``python -m libloader.browse._demo --write PATH``), started with
    this interpreter and its import path."""
    return subprocess.Popen(
        [sys.executable, "-m", "libloader.browse._demo", "--write", str(path),
         "--interval", str(interval), "--seed", str(seed)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_writer(path: Path, interval: float, seed: int, steps: Optional[int] = None) -> None:
    """Writes until killed (or ``steps`` commits), one commit every ``interval`` seconds."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
    rng = random.Random(seed)
    step = 0
    try:
        while steps is None or step < steps:
            step += 1
            write_step(conn, rng, step, top=400)
            time.sleep(interval)
    finally:
        conn.close()


class Faults:
    """Wraps a load: fails it with probability ``fail_rate`` (an OSError, which the feed's
    backoff retries) and delays it by up to ``latency`` seconds, so reads are seen in
    flight."""

    def __init__(self, load: Callable[[bytes, int, Direction],
                                      Union[LoadResult[Row], Awaitable[LoadResult[Row]]]],
                 fail_rate: float, latency: float, seed: int = 1) -> None:
        self.inner = load
        self.fail_rate = fail_rate
        self.latency = latency
        self.rng = random.Random(seed)
        self.injected = 0

    async def __call__(self, cursor: bytes, limit: int,
                       direction: Direction) -> LoadResult[Row]:
        if self.latency > 0:
            await asyncio.sleep(self.rng.uniform(0, self.latency))
        if self.rng.random() < self.fail_rate:
            self.injected += 1
            raise OSError("injected failure (--demo)")
        result = self.inner(cursor, limit, direction)
        if inspect.isawaitable(result):   # the app's load, which reads in a thread
            return await result
        return result


def _main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m libloader.browse._demo",
                                description="The demo's writer process.")
    p.add_argument("--write", required=True, metavar="DB")
    p.add_argument("--interval", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=None)
    args = p.parse_args(argv)
    try:
        run_writer(Path(args.write), args.interval, args.seed, args.steps)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(_main())
