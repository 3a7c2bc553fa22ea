"""libloader-browse's idle CPU on a large table under a writer (`make bench-browse-idle`).

Makes the demo's table with --rows rows (10^7 by default; kept in --db and reused by a later
run), runs `libloader-browse` on it in a tmux pane of 120 x 40 as a person would, and reads
the browser process's CPU time (utime + stime from /proc/PID/stat) over --seconds: first with
no writer, then while the demo's writer process commits every --interval seconds (2 a
second by default; each commit updates a run of rows, inserts three and deletes three). The
browser sits at the top of the table, as after opening it, and is not touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))

from libloader.browse._demo import DEMO_TABLE, create_demo_db, start_writer  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def rows_in(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            n: int = conn.execute(f"SELECT max(rowid) FROM {DEMO_TABLE}").fetchone()[0] or 0
            return n // 2   # the demo's ids are the even numbers up to 2 * rows
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], check=True, capture_output=True,
                          text=True).stdout


def screen(sock: str) -> List[str]:
    return tmux(sock, "capture-pane", "-p", "-t", "browse").splitlines()


def wait_for(sock: str, text: str, timeout: float) -> List[str]:
    end = time.monotonic() + timeout
    while True:
        lines = screen(sock)
        if any(text in line for line in lines):
            return lines
        if time.monotonic() > end:
            raise SystemExit(f"bench-browse-idle: {text!r} not on screen after {timeout} s:\n"
                             + "\n".join(lines))
        time.sleep(0.2)


def measure(pid: int, seconds: float) -> float:
    """The share of one core the process used over ``seconds``, in percent."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    return 100.0 * (c1 - c0) / (t1 - t0)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--db", type=Path,
                   default=Path(tempfile.gettempdir()) / "libloader-browse-idle.db")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--settle", type=float, default=10.0,
                   help="seconds after the first screen before measuring")
    args = p.parse_args(argv)
    if shutil.which("tmux") is None:
        print("bench-browse-idle: tmux is not installed", file=sys.stderr)
        return 1
    db: Path = args.db
    if rows_in(db) != args.rows:
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        t0 = time.monotonic()
        print(f"making {args.rows:,} rows in {db} ...", file=sys.stderr)
        create_demo_db(db, args.rows)
        print(f"made in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    sock = f"libloader-idle-{os.getpid()}"
    env = " ".join(f"{k}={v}" for k, v in (("LIBLOADER_PATH", os.environ.get("LIBLOADER_PATH",
                                                                             "")),
                                           ("PYTHONPATH", str(REPO / "bindings" / "python")))
                   if v)
    cmd = f"exec env {env} {sys.executable} -m libloader.browse {db} {DEMO_TABLE}"
    writer = None
    try:
        tmux(sock, "new-session", "-d", "-s", "browse", "-x", "120", "-y", "40", cmd)
        pid = int(tmux(sock, "list-panes", "-t", "browse", "-F", "#{pane_pid}").split()[0])
        wait_for(sock, " fresh ", 120)
        time.sleep(args.settle)
        quiet = measure(pid, args.seconds)
        writer = start_writer(db, args.interval, seed=7)
        time.sleep(args.settle)
        busy = measure(pid, args.seconds)
        status = next((line.strip() for line in screen(sock) if " in flight" in line), "")
        load = os.getloadavg()[0]
        print(f"libloader-browse on {args.rows:,} rows, tmux 120x40, at the top, untouched; "
              f"CPU of its process over {args.seconds:g} s (utime + stime)")
        print(f"no writer:                              {quiet:6.2f}% of a core")
        print(f"a writer committing every {args.interval:g} s:          {busy:6.2f}% of a core")
        print(f"status line at the end: {status}")
        print(f"load average (1 min) at the end: {load:.2f} on {os.cpu_count()} cores")
    finally:
        if writer is not None:
            writer.terminate()
            writer.wait(5)
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
