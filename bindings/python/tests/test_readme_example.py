"""The README's Python example, verbatim, run and checked. When README.md carries a Python
block that imports libloader, it must be this same code."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

EXAMPLE = '''\
import libloader

ROWS = [f"event {i}" for i in range(120)]     # the source: any ordered data
reads = []                                    # reads the loader asked for, not yet answered
def answer_all(loader):                       # a host may answer from any thread, in any order
    while reads:
        read = reads.pop()
        start = int.from_bytes(read.cursor, "big")  # a cursor is the host's bytes; b"" = start
        rows = ROWS[start:start + read.limit]
        loader.settle(read, rows, next_cursor=(start + len(rows)).to_bytes(4, "big"),
                      end_of_source=start + len(rows) == len(ROWS))

with libloader.Loader(reads.append, lambda rows: print("released", rows[0]),
                      config=libloader.Config(page_size=50, prefetch_distance=0)) as loader:
    loader.set_window(0, 100)                 # show items 0..99: two reads of 50
    answer_all(loader)
    print(loader.view().pages[0].acquisition[:2], loader.state.phase.name)
    ROWS.insert(0, "event -1"); loader.invalidate()  # the source changed: a repair re-reads
    answer_all(loader)                        # the new view commits; the old pages are released
    print(loader.view().pages[0].acquisition[:2], loader.state.revalidating)
'''

EXPECTED = """\
['event 0', 'event 1'] IDLE
released event 0
released event 50
['event -1', 'event 0'] False
released event -1
released event 49
"""


def test_the_readme_example_runs_and_prints_what_it_says() -> None:
    assert len(EXAMPLE.splitlines()) <= 20
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(EXAMPLE, "README example", "exec"), {"__name__": "__readme__"})
    assert out.getvalue() == EXPECTED


def test_the_readme_carries_this_example() -> None:
    readme = Path(__file__).resolve().parents[3] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    ours = [b for b in blocks if "import libloader" in b]
    if not ours:
        pytest.skip("README.md has no Python example yet")
    assert EXAMPLE in ours
