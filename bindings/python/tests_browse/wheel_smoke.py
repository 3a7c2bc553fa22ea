"""Run by `make browse-wheel-test` with an installed wheel (no sources on the path): the
browser, headless, opens a small table and shows its first rows, fresh."""

import asyncio
import sqlite3
import sys
import tempfile
from pathlib import Path

import libloader
from libloader.browse._app import Browser
from libloader.browse._table import Table, open_readonly


async def main(db: Path) -> None:
    app = Browser(Table(open_readonly(str(db)), "t"))
    async with app.run_test(size=(60, 12)) as pilot:
        for _ in range(500):
            if app.is_fresh():
                break
            await pilot.pause(0.01)
        assert app.is_fresh(), "no fresh screen"
        await pilot.pause()
        text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "row 1 " in text and "rows 1–8 of 100" in text, text   # 12 lines: title, header, 8 rows, status, footer


with tempfile.TemporaryDirectory() as tmp:
    db = Path(tmp) / "w.db"
    c = sqlite3.connect(str(db))
    c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    c.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"row {i} ") for i in range(1, 101)])
    c.commit()
    c.close()
    asyncio.run(main(db))
assert "site-packages" in libloader.__file__, libloader.__file__
print(f"wheel_smoke: the installed libloader-browse showed a fresh screen ({sys.executable})")
