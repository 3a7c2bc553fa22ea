"""The browser's position index: the key of every ``step``-th row, so a row number's cursor is
an OFFSET of fewer than ``step`` rows from a key it holds, not of up to half the table.

A row number (``:``) needs the key of the row before it. An OFFSET query from the nearer end
steps over every row between: 8 ms at row 500,000 of the demo's million, most of what a row
number cost beyond a window's reads. The index is read once, in slices on the database thread
(:class:`PositionBuild`: one OFFSET of ``step`` rows after the last key found, a slice at a
time, 21 ms for 10^6 rows in all), and is only ever used on that thread's connection while
``PRAGMA data_version`` there is the one it was read under: a commit by any other connection
makes it stale, and a row number goes back to the OFFSET from the nearer end (exact, as
before) until the app reads it again. So the index never gives a row other than SQL's own.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from ._table import Table

STEP = 1024
"""Rows between two keys of the index: an OFFSET of fewer than this many rows finds any row
number's cursor (20-30 us on the demo's table, against 8 ms for row 500,000 from the start)."""

MAX_KEYS = 65_536
"""At most this many keys (a few MiB of Python tuples): a larger table gets a wider step."""

MIN_ROWS = 4 * STEP
"""A table of fewer rows is not indexed: an OFFSET from its nearer end is as quick."""

SLICE_S = 0.002
"""How long one slice of a build holds the database thread: a far move's query waits for
one slice at most."""


def step_for(rows: int) -> int:
    """The step for a table of about ``rows`` rows: :data:`STEP`, wider beyond
    :data:`MAX_KEYS` keys."""
    return max(STEP, -(-rows // MAX_KEYS))


@dataclass(frozen=True, eq=False)
class Positions:
    """A complete index of ``base`` (the app's table object it was read for), read on
    ``conn`` while its ``PRAGMA data_version`` was ``version``. ``keys[i]`` is the key of row
    ``(i + 1) * step - 1`` (rows from 0)."""
    base: Table
    conn: sqlite3.Connection
    version: int
    step: int
    keys: Tuple[Tuple[Any, ...], ...]

    def start_for(self, row: int) -> Tuple[Optional[Tuple[Any, ...]], int]:
        """Where the OFFSET for ``row`` (from 0, at least 0) starts: the key of the nearest
        indexed row before it (None: the table's start) and how many rows to skip after it.
        ``row`` itself indexed: its key, and -1."""
        i = (row + 1) // self.step - 1
        if i < 0:
            return None, row
        i = min(i, len(self.keys) - 1)
        return self.keys[i], row - ((i + 1) * self.step - 1) - 1

    def cursor_row(self, table: Table, row: int) -> Optional[Tuple[Any, ...]]:
        """The key of ``row`` (from 0) found through the index, with ``table`` on the
        index's connection; None when the index is stale there (another connection
        committed), ``table`` is on another connection, or the row is past the table's end.
        Exact: the key is SQL's row ``row`` at the moment of the query."""
        conn = self.conn
        if row < 0 or table.conn is not conn or \
                conn.execute("PRAGMA data_version").fetchone()[0] != self.version:
            return None
        key, skip = self.start_for(row)
        found = key if skip < 0 else table.key_after(key, skip)
        # A commit between the first look and the query: the key may be another row's.
        if conn.execute("PRAGMA data_version").fetchone()[0] != self.version:
            return None
        return found


@dataclass(eq=False)
class PositionBuild:
    """An index of ``base`` being read, a slice at a time (:meth:`slice`), on one connection
    (the database thread's)."""
    base: Table
    step: int
    conn: Optional[sqlite3.Connection] = None
    version: int = -1
    keys: List[Tuple[Any, ...]] = field(default_factory=list)
    done: bool = False
    abandoned: bool = False

    def slice(self, table: Table, budget_s: float = SLICE_S) -> Optional[Positions]:
        """Reads keys for ``budget_s`` at most, with ``table`` (``base`` on the build's
        connection): the complete index once the table's end is reached, else None (call
        again; ``abandoned`` says a commit by another connection made what was read stale,
        or the connection changed, and the build is over)."""
        conn = table.conn
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if self.conn is None:
            self.conn, self.version = conn, version
        elif version != self.version or conn is not self.conn:
            self.abandoned = True
            return None
        end = time.perf_counter() + budget_s
        while True:   # a key at least per slice
            last = self.keys[-1] if self.keys else None
            key = table.key_after(last, self.step - 1)
            if key is None:
                self.done = True
                break
            self.keys.append(key)
            if time.perf_counter() >= end:
                break
        if not self.done:
            return None
        if conn.execute("PRAGMA data_version").fetchone()[0] != self.version:
            self.abandoned = True
            return None
        return Positions(self.base, conn, self.version, self.step, tuple(self.keys))
