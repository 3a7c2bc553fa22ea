"""The browser in a real terminal: tmux runs ``python -m libloader.browse``, the test types
with ``send-keys`` and reads the screen with ``capture-pane``. tmux runs on a server of its
own, on a socket in the test's temporary directory (``-S``), killed at the end."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

from conftest import BIG_ROWS, expected_cells, sql_rows_at, without_scrollbar
from libloader.browse._app import SEPARATOR
from libloader.browse._demo import DEMO_TABLE

WIDTH, HEIGHT = 110, 30


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True,
                              capture_output=True, text=True).stdout

    def start(self, command: str) -> None:
        """Runs ``command`` in a pane of WIDTH x HEIGHT: the pane is made first and the
        command started in it afterwards, so the program never sees tmux's first size
        (80 x 24), whose change it might miss while it starts."""
        self("new-session", "-d", "-s", "browse", "-x", str(WIDTH), "-y", str(HEIGHT),
             "sleep 600")
        self("respawn-pane", "-k", "-t", "browse", command)

    def screen(self) -> List[str]:
        return self("capture-pane", "-p", "-t", "browse").splitlines()

    def wait(self, pred: Callable[[List[str]], bool], what: str, timeout: float = 20) -> List[str]:
        end = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if pred(lines):
                return lines
            if time.monotonic() > end:
                raise AssertionError(f"{what}: not on screen after {timeout} s:\n" +
                                     "\n".join(lines))
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        if os.environ.get("LIBLOADER_BROWSE_REQUIRED") == "1":
            pytest.fail("tmux is not installed (.ci/run installs it)")
        pytest.skip("tmux is not installed")
    t = Tmux(str(tmp_path / "tmux.sock"))
    yield t
    subprocess.run(["tmux", "-S", t.socket, "kill-server"], capture_output=True)


def command(*args: str) -> str:
    """A shell command running ``args`` with this test's PYTHONPATH and LIBLOADER_PATH, and
    without LINES and COLUMNS: a program reads its size from them before the terminal, and
    the tmux server may carry the ones of the shell that started it."""
    env = {k: os.environ[k] for k in ("PYTHONPATH", "LIBLOADER_PATH") if k in os.environ}
    return " ".join(["env", "-u", "LINES", "-u", "COLUMNS",
                     *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                     *(shlex.quote(a) for a in args)])


def rows_on(lines: List[str]) -> List[List[str]]:
    """The row lines of a captured screen, as cells (the row number first)."""
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("#"))
    out = []
    for line in lines[head + 1:]:
        line = without_scrollbar(line.ljust(WIDTH))
        cells = [c.strip() for c in line.split(SEPARATOR.strip())]
        if len(cells) < 2 or not cells[0].replace(",", "").isdigit():
            break
        out.append(cells)
    return out


def fresh_at(row: str) -> Callable[[List[str]], bool]:
    """The status line says the screen from row ``row`` is fresh, and it shows a full window
    (the pane's lines less the title, the header, the status line and the footer) or the table's end."""
    return lambda lines: (any(f"rows {row}–" in l and " fresh " in l for l in lines)
                          and (len(rows_on(lines)) == len(lines) - 4
                               or f"{BIG_ROWS:,} │" in "".join(lines)))


def test_keys_typed_in_tmux_move_the_screen_to_the_rows_sql_returns(
        tmux: Tmux, big_db: Path) -> None:
    tmux.start(command(sys.executable, "-m", "libloader.browse", str(big_db), DEMO_TABLE)
               + "; echo browse-exited-$?; sleep 60")

    lines = tmux.wait(fresh_at("1"), "the first rows, fresh")
    rows = rows_on(lines)
    assert len(rows) == len(lines) - 4 >= 10
    assert [r[1:] for r in rows] == expected_cells(sql_rows_at(big_db, 0, len(rows)))
    h = len(rows)

    tmux("send-keys", "-t", "browse", "End")
    lines = tmux.wait(fresh_at(f"{BIG_ROWS - h + 1:,}"), "the last rows, fresh")
    rows = rows_on(lines)
    assert rows[-1][0] == f"{BIG_ROWS:,}"
    assert [r[1:] for r in rows] == expected_cells(sql_rows_at(big_db, BIG_ROWS - h, h))

    tmux("send-keys", "-t", "browse", ":", "500001", "Enter")
    lines = tmux.wait(fresh_at("500,001"), "row 500,001, fresh")
    rows = rows_on(lines)
    assert [r[1:] for r in rows] == expected_cells(sql_rows_at(big_db, 500_000, h))

    tmux("send-keys", "-t", "browse", "PageUp", "Up")
    lines = tmux.wait(fresh_at(f"{500_001 - h - 1:,}"), "a page and a line up, fresh")
    rows = rows_on(lines)
    assert [r[1:] for r in rows] == expected_cells(sql_rows_at(big_db, 500_000 - h - 1, h))

    tmux("send-keys", "-t", "browse", "q")
    tmux.wait(lambda ls: any("browse-exited-0" in l for l in ls), "a clean exit")


def test_a_commit_by_another_process_reaches_the_terminal(tmux: Tmux, small_db: Path) -> None:
    tmux.start(command(sys.executable, "-m", "libloader.browse", str(small_db)) + "; sleep 60")
    rows = rows_on(tmux.wait(fresh_at("1"), "the first rows, fresh"))
    target = rows[5][1]
    conn = sqlite3.connect(str(small_db), isolation_level=None)
    conn.execute(f"UPDATE {DEMO_TABLE} SET note = 'from elsewhere' WHERE id = ?", (int(target),))
    conn.close()
    rows = rows_on(tmux.wait(lambda ls: any("from elsewhere" in l for l in ls),
                             "the other process's write", timeout=10))
    assert rows[5][1] == target and rows[5][-2] == "from elsewhere"
    tmux("send-keys", "-t", "browse", "q")


def test_the_demo_runs_a_writer_and_failing_loads_and_cleans_up(tmux: Tmux) -> None:
    """`--demo` (smaller here): rows on screen, the writer's commits refreshing them, injected
    failures counted on the status line; after q the writer and the temporary database are
    gone."""
    tmux.start(command(sys.executable, "-m", "libloader.browse", "--demo", "--rows", "20000",
                       "--fail-rate", "0.3", "--write-interval", "0.2")
               + "; echo browse-exited-$?; sleep 60")
    tmux.wait(fresh_at("1"), "the demo's first rows, fresh", timeout=30)

    def failed(lines: List[str]) -> bool:
        status = next((l for l in lines if " in flight · " in l), "")
        m = re.search(r" (\d+) failures?\b", status)
        return m is not None and int(m.group(1)) > 0

    end = time.monotonic() + 30
    while not failed(tmux.screen()):
        assert time.monotonic() < end, "no injected failure on the status line"
        tmux("send-keys", "-t", "browse", "PageDown")
        time.sleep(0.3)
    # The writer's commits change rows, mostly among the first few hundred ids: one reaches the
    # screen as a note the table did not start with.
    tmux("send-keys", "-t", "browse", "Home")
    tmux.wait(lambda ls: any("write " in l for l in ls), "a row the writer changed",
              timeout=60)
    tmux("send-keys", "-t", "browse", "q")
    lines = tmux.wait(lambda ls: any("browse-exited-0" in l for l in ls), "a clean exit")
    made = next(l for l in lines if "making 20,000 rows in " in l)
    db = Path(made.split(" in ", 1)[1].split(" ...")[0])
    assert not db.parent.exists()
    writers = [p for p in Path("/proc").glob("[0-9]*/cmdline")
               if _read(p).count(str(db)) and "--write" in _read(p)]
    assert writers == []


def _read(p: Path) -> str:
    try:
        return p.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:   # the process ended meanwhile
        return ""
