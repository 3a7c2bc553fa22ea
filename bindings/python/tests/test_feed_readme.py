"""The README's asyncio example, verbatim, run and checked: a :class:`libloader.aio.Feed`
over a list, with one failed load, an invalidation, and every page released once."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

EXAMPLE = '''\
import asyncio
import libloader

ROWS = [f"event {i}" for i in range(120)]     # the source: any ordered data
errors = [OSError("timed out")]               # the first load fails

async def load(cursor, limit, direction):     # a query or an HTTP call
    await asyncio.sleep(0.01)
    if errors:
        raise errors.pop()                    # the read fails; the backoff timer retries it
    start = int.from_bytes(cursor, "big")     # a cursor is the host's bytes; b"" = start
    rows = ROWS[start:start + limit]
    return libloader.LoadResult(rows, next_cursor=(start + len(rows)).to_bytes(4, "big"),
                                end_of_source=start + len(rows) == len(ROWS))

async def main():
    config = libloader.Config(page_size=50)   # 50 items a load, and 50 more prefetched
    released = lambda page: print("released", page.items[0])
    async with libloader.aio.Feed(load, config=config, on_release=released) as feed:
        feed.set_window(0, 50)                # show items 0..49
        await feed.settled(timeout=5)
        print(feed.items()[:2], len(feed.items()), "after", repr(feed.last_error))
        ROWS.insert(0, "event -1"); feed.invalidate()   # the source changed: a repair re-reads
        await feed.settled(timeout=5)         # the new view commits; the old pages go back
        print(feed.items()[:2], len(feed.items()))

asyncio.run(main())
'''

EXPECTED = """\
['event 0', 'event 1'] 100 after OSError('timed out')
released event 0
released event 50
['event -1', 'event 0'] 100
released event -1
released event 49
"""


def test_the_asyncio_example_runs_and_prints_what_it_says() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(EXAMPLE, "README asyncio example", "exec"), {"__name__": "__readme__"})
    assert out.getvalue() == EXPECTED


def test_the_readme_carries_this_example_and_its_output() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert EXAMPLE in re.findall(r"```python\n(.*?)```", readme, re.S)
    assert "It prints:\n\n```\n" + EXPECTED + "```\n" in readme
