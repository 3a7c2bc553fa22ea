"""The README's ranged invalidation example, verbatim, run and checked: a
:class:`libloader.Feed` over keyset SQL (sqlite3 in memory) whose load function answers
bounded reads, told of one inserted row and one deleted row by ``invalidate_range``."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from libloader import _ffi

EXAMPLE = '''\
import sqlite3, struct
import libloader

db = sqlite3.connect(":memory:", check_same_thread=False)   # one loader thread reads it
db.execute("CREATE TABLE t (k INTEGER NOT NULL, id INTEGER PRIMARY KEY)")
db.executemany("INSERT INTO t VALUES (?, ?)", [(i // 3, i) for i in range(1, 1001)])
def key(k, id_):                          # a cursor: the (k, id) of the row just before it
    return struct.pack(">qq", k, id_)
def compare(a, b):                        # orders two cursors as (k, id) does: for keys
    return (a > b) - (a < b)              # >= 0, big-endian bytes compare the same way
def load(cursor, limit, direction, until=None):   # until: a ranged repair's last cursor
    assert direction is libloader.Direction.FORWARD    # this view starts at row 0
    lo = struct.unpack(">qq", cursor) if cursor else (-1, -1)
    hi = struct.unpack(">qq", until) if until else (2**62, 2**62)
    rows = db.execute("SELECT k, id FROM t WHERE (k, id) > (?, ?) AND (k, id) <= (?, ?) "
                      "ORDER BY k, id LIMIT ?", (*lo, *hi, limit)).fetchall()
    return libloader.LoadResult(rows, next_cursor=key(*rows[-1]) if rows else cursor,
                                end_of_source=until is None and len(rows) < limit)

config = libloader.Config(page_size=20, prefetch_distance=20)
with libloader.Feed(load, config=config, compare=compare, max_workers=1) as feed:
    feed.set_window(0, 200); feed.settled(timeout=5)
    read = feed.stats().items_read
    db.execute("INSERT INTO t VALUES (50, 5000)")          # one row, in the 8th page
    feed.invalidate_range(key(50, 5000), key(50, 5000))  # from = to: that row's cursor
    feed.settled(timeout=5)
    print(len(feed.pages()), feed.items()[151:154], feed.stats().items_read - read)
    read = feed.stats().items_read
    db.execute("DELETE FROM t WHERE id = 900")             # (299, 900): not in the view
    feed.invalidate_range(key(299, 900), key(299, 900)); feed.settled(timeout=5)
    print(feed.stats().items_read - read, feed.stats().ranged_repairs)
'''

EXPECTED = """\
12 [(50, 152), (50, 5000), (51, 153)] 21
0 2
"""


@pytest.mark.skipif(not hasattr(_ffi.lib(), "loader_invalidate_range"),
                    reason="libloader was built without ranged invalidation "
                           "(no loader_invalidate_range)")
def test_the_ranged_example_runs_and_prints_what_the_readme_says() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(EXAMPLE, "README ranged invalidation example", "exec"),
             {"__name__": "__readme__"})
    assert out.getvalue() == EXPECTED


def test_the_readme_carries_this_example_and_its_output() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert EXAMPLE in re.findall(r"```python\n(.*?)```", readme, re.S)
    assert EXPECTED in readme
