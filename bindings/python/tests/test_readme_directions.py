"""The README's directions example, verbatim, run and checked: a :class:`libloader.Feed`
whose load function answers both directions, opened deep with ``jump``, scrolled up with
backward reads, and repaired around the window only."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

EXAMPLE = '''\
import libloader
from libloader import Direction

ROWS = [f"row {i}" for i in range(100_000)]    # the source; a cursor: the next row's index
def load(cursor, limit, direction):             # called on the feed's threads
    at = int.from_bytes(cursor, "big")          # b"" is the source's start
    if direction is Direction.FORWARD:          # the rows after the cursor
        lo, hi = at, min(at + limit, len(ROWS)); nxt, end = hi, hi == len(ROWS)
    else:                                       # the rows before it, in source order
        lo, hi = max(at - limit, 0), at; nxt, end = lo, lo == 0
    return libloader.LoadResult(ROWS[lo:hi], next_cursor=nxt.to_bytes(4, "big") if nxt else b"",
                                end_of_source=end)

config = libloader.Config(page_size=50, prefetch_distance=50, max_pages=8)
with libloader.Feed(load, config=config) as feed:
    feed.jump((90_000).to_bytes(4, "big"), 90_000)    # open at row 90,000, numbered 90,000
    feed.set_window(90_000, 100); feed.settled(timeout=5)
    print(feed.items()[0], feed.items()[-1], feed.stats().items_read)
    feed.set_window(89_800, 100); feed.settled(timeout=5)  # scroll up: reads go backward
    print(feed.items()[0], feed.stats().issued_backward, feed.stats().items_read)
    feed.invalidate(); feed.settled(timeout=5)         # a repair reads around the window only
    print(feed.stats().items_read, len(feed.pages()))
'''

EXPECTED = """\
row 89950 row 90149 200
row 89750 5 400
600 4
"""


def test_the_directions_example_runs_and_prints_what_the_readme_says() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(EXAMPLE, "README directions example", "exec"), {"__name__": "__readme__"})
    assert out.getvalue() == EXPECTED


def test_the_readme_carries_this_example_and_its_output() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert EXAMPLE in re.findall(r"```python\n(.*?)```", readme, re.S)
    assert EXPECTED in readme
