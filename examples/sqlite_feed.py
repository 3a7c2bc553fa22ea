#!/usr/bin/env python3
"""A live feed over SQLite, loaded by libloader.

The source is a table of events ordered by (ts, id), with many equal ts values, in a SQLite
file in a temporary directory. Reads use keyset pagination: a cursor is the (ts, id) of the
last row read, 16 bytes big-endian; empty is the start. A writer thread inserts and deletes
rows and calls ``invalidate`` after each commit. A pool of reader threads answers the reads
the loader asks for, out of order, with random latency and an injected failure rate: each
reader queries the database when it performs the read, then takes a while to deliver the
answer, which may arrive after an invalidation (the loader classifies it stale). The main
thread scrolls the window and drives the loader's clock with ``tick``.

At the end the writer stops, the loader settles (every read answered, own failures retried),
and the demo checks that the final view equals a direct SQL query of the same key range, that
every acquisition the loader accepted was released exactly once, and that the spec's
invariants held at every sample. Exit status 1 if any check fails.

    python3 examples/sqlite_feed.py --duration 10
    python3 examples/sqlite_feed.py --seed 7 --fail-rate 0.2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import sqlite3
import struct
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import libloader
from libloader import Answer, Config, Failure, Kind, Loader, Read

Row = Tuple[int, int, str]
"""(ts, id, payload)."""


def encode(ts: int, id_: int) -> bytes:
    return struct.pack(">qq", ts, id_)


def decode(cursor: bytes) -> Optional[Tuple[int, int]]:
    if not cursor:
        return None
    ts, id_ = struct.unpack(">qq", cursor)
    return ts, id_


@dataclass(eq=False)
class PageData:
    """An acquisition: the rows one read returned, and the cursor the read started at."""

    n: int
    rows: Tuple[Row, ...]
    start_cursor: bytes

    def __len__(self) -> int:
        return len(self.rows)


# ---- the database ----


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=10, isolation_level=None,
                           check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def create_db(path: Path, rows: int, ts_range: int, rng: random.Random) -> None:
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, "
                 "payload TEXT NOT NULL)")
    conn.execute("CREATE INDEX events_ts_id ON events (ts, id)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO events (ts, payload) VALUES (?, ?)",
                     [(rng.randrange(ts_range), f"event {i}") for i in range(rows)])
    conn.execute("COMMIT")
    conn.close()


def rows_after(conn: sqlite3.Connection, cursor: bytes, limit: int) -> List[Row]:
    """Keyset pagination: the rows after ``cursor`` in (ts, id) order."""
    after = decode(cursor)
    if after is None:
        q = "SELECT ts, id, payload FROM events ORDER BY ts, id LIMIT ?"
        return list(conn.execute(q, (limit,)))
    q = ("SELECT ts, id, payload FROM events WHERE ts > ? OR (ts = ? AND id > ?) "
         "ORDER BY ts, id LIMIT ?")
    return list(conn.execute(q, (after[0], after[0], after[1], limit)))


def rows_between(conn: sqlite3.Connection, after: bytes, last: Tuple[int, int]) -> List[Row]:
    """Every row after ``after`` up to and including ``last``: one key range, straight SQL."""
    lo = decode(after)
    if lo is None:
        q = ("SELECT ts, id, payload FROM events WHERE ts < ? OR (ts = ? AND id <= ?) "
             "ORDER BY ts, id")
        return list(conn.execute(q, (last[0], last[0], last[1])))
    q = ("SELECT ts, id, payload FROM events WHERE (ts > ? OR (ts = ? AND id > ?)) "
         "AND (ts < ? OR (ts = ? AND id <= ?)) ORDER BY ts, id")
    return list(conn.execute(q, (lo[0], lo[0], lo[1], last[0], last[0], last[1])))


# ---- the host ----


class Feed:
    """The host: owns the database, the reader pool, the writer and the loader."""

    def __init__(self, args: argparse.Namespace, db: Path) -> None:
        self.args = args
        self.db = db
        self.rng = random.Random(args.seed)
        self.stop_writer = threading.Event()
        self.fail_rate = args.fail_rate
        self.lock = threading.Lock()
        self.reads: "queue.Queue[Optional[Tuple[Read, float]]]" = queue.Queue()
        self.counts: Counter[str] = Counter()
        self.issued_by_kind: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.errors: List[str] = []
        self.pages: Dict[int, PageData] = {}
        self.released: Counter[int] = Counter()
        self.next_page = 1
        self.samples = 0
        self.fresh_samples = 0
        self.violations: List[str] = []
        self.tls = threading.local()
        self.start = time.monotonic()
        self.loader = Loader(self.on_issue, self.on_release, on_cancel=self.on_cancel,
                             config=Config(page_size=args.page_size,
                                           prefetch_distance=args.page_size * 2,
                                           drop_margin=args.window,
                                           backoff_initial_ms=20, backoff_max_ms=500,
                                           jitter_seed=args.seed))

    def now_ms(self) -> int:
        return int((time.monotonic() - self.start) * 1000)

    # ---- callbacks (run on whichever thread made the call) ----

    def on_issue(self, read: Read) -> None:
        with self.lock:
            self.issued_by_kind[read.kind.name.lower()] += 1
            call = getattr(self.tls, "call", None)
            if read.kind is Kind.FULL and read.step == 0 and call is not None:
                # A full read that a tick, retry or window move started while an own failure
                # was recorded: a retry, by its cause.
                self.retries[call] += 1
        self.reads.put((read, time.monotonic()))

    def on_release(self, page: PageData) -> None:
        with self.lock:
            self.released[page.n] += 1
            self.counts["released"] += 1

    def on_cancel(self, read_id: int) -> None:
        with self.lock:
            self.counts["cancel_hints"] += 1

    def call(self, label: str, fn: Any, *args: Any) -> Any:
        """Runs a main-thread loader call, labelling the retries it starts."""
        failing = self.loader.state.failure is Failure.OWN
        self.tls.call = label if failing else None
        try:
            return fn(*args)
        finally:
            self.tls.call = None

    # ---- threads ----

    def reader(self, index: int) -> None:
        rng = random.Random(self.args.seed * 1000 + index)
        conn = connect(self.db)
        lat = self.args.latency_ms / 1000
        try:
            while True:
                item = self.reads.get()
                if item is None:
                    return
                read, _ = item
                time.sleep(min(rng.expovariate(1 / lat), lat * 6))   # until the query runs
                if rng.random() < self.fail_rate:
                    time.sleep(rng.random() * lat)
                    self.answer_fail(read)
                    continue
                got = rows_after(conn, read.cursor, read.limit + 1)  # the DB at read time
                rows = tuple(got[:read.limit])
                end = len(got) <= read.limit
                nxt = encode(rows[-1][0], rows[-1][1]) if rows else read.cursor
                time.sleep(min(rng.expovariate(1 / lat), lat * 6))   # delivering the answer
                self.answer_settle(read, rows, nxt, end)
        except BaseException as e:  # pragma: no cover - reported in the checks
            with self.lock:
                self.errors.append(f"reader {index}: {type(e).__name__}: {e}")
        finally:
            conn.close()

    def answer_settle(self, read: Read, rows: Tuple[Row, ...], nxt: bytes, end: bool) -> None:
        with self.lock:
            page = PageData(self.next_page, rows, read.cursor)
            self.next_page += 1
            self.pages[page.n] = page   # before the call: it may be released before it returns
        try:
            answer = self.loader.settle(read, page, next_cursor=nxt, end_of_source=end)
        except libloader.LoaderError as e:
            with self.lock:
                del self.pages[page.n]      # refused: still ours
                self.errors.append(f"settle refused: {e}")
            return
        with self.lock:
            self.counts["answered"] += 1
            self.counts[f"answer_{answer.name.lower()}"] += 1

    def answer_fail(self, read: Read) -> None:
        try:
            answer = self.loader.fail(read, 503)
        except libloader.LoaderError as e:
            with self.lock:
                self.errors.append(f"fail refused: {e}")
            return
        with self.lock:
            self.counts["failed_injected"] += 1
            self.counts["failure_own" if answer is Answer.CURRENT else "failure_superseded"] += 1

    def writer(self) -> None:
        rng = random.Random(self.args.seed * 7919)
        conn = connect(self.db)
        interval = self.args.write_interval_ms / 1000
        burst = 0
        try:
            while True:
                if burst:
                    # Bursts of commits a few ms apart catch reads in flight: stale answers.
                    burst -= 1
                    pause = rng.uniform(0.002, 0.01)
                else:
                    burst = rng.randrange(2, 6) if rng.random() < 0.3 else 0
                    pause = rng.uniform(interval / 2, interval * 1.5)
                if self.stop_writer.wait(pause):
                    return
                inserts = rng.randrange(1, 4)
                deletes = rng.randrange(0, 3)
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT INTO events (ts, payload) VALUES (?, ?)",
                                 [(rng.randrange(self.args.ts_range), "late event")
                                  for _ in range(inserts)])
                top = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 1
                for _ in range(deletes):
                    conn.execute("DELETE FROM events WHERE id = (SELECT id FROM events "
                                 "WHERE id >= ? ORDER BY id LIMIT 1)", (rng.randrange(top),))
                conn.execute("COMMIT")
                self.loader.invalidate()          # after the commit, as the contract says
                with self.lock:
                    self.counts["inserted"] += inserts
                    self.counts["deleted"] += deletes
                    self.counts["invalidations"] += 1
        except BaseException as e:  # pragma: no cover - reported in the checks
            with self.lock:
                self.errors.append(f"writer: {type(e).__name__}: {e}")
        finally:
            conn.close()

    # ---- the main thread ----

    def sample(self) -> libloader.Snapshot:
        """Checks the invariants on a state and request list from one moment (state,
        requests, state again, until the two states agree: every change moves a counter)."""
        for _ in range(100):
            s = self.loader.state
            reqs = self.loader.requests()
            if self.loader.state == s:
                self.samples += 1
                self.fresh_samples += not s.revalidating
                bad = libloader.violations(s, reqs)
                if bad:
                    self.violations.extend(bad)
                return s
        return self.loader.state

    def scroll(self, s: libloader.Snapshot) -> None:
        step = self.rng.randrange(1, self.args.scroll + 1)
        start = s.window_start + step
        if s.end_of_source and start + self.args.window > s.covered_end:
            start = 0                             # back to the top: a rewind
            self.counts["rewinds"] += 1
        self.call("window", self.loader.set_window, start, self.args.window)

    def drive_clock(self) -> None:
        self.call("backoff", self.loader.tick, self.now_ms())
        s = self.loader.state
        if s.failure is Failure.OWN and self.loader.next_deadline() is None:
            # The automatic retries ran out: retry explicitly.
            if self.call("explicit", self.loader.retry):
                self.counts["explicit_retries"] += 1

    def progress(self, s: libloader.Snapshot, out: Any, tty: bool, final: bool = False) -> None:
        with self.lock:
            c = dict(self.counts)
        view = self.loader.view()
        line = (f"[{time.monotonic() - self.start:5.1f}s] epoch {s.epoch} "
                f"{s.phase.name.lower()} debt {s.debt.name.lower()} | reads "
                f"{s.outstanding_reads} in flight, {c.get('answered', 0)} answered, "
                f"{c.get('answer_stale', 0)} stale, {c.get('failed_injected', 0)} failed | "
                f"view {len(view)} pages {view.count} items"
                f"{' revalidating' if view.revalidating else ''}")
        if tty:
            # One line, rewritten in place: never wider than the terminal, or it would wrap.
            width = shutil.get_terminal_size().columns - 1
            out.write("\r" + line[:width] + "\x1b[K" + ("\n" if final else ""))
        else:
            out.write(line + "\n")
        out.flush()

    def run(self) -> Dict[str, Any]:
        args = self.args
        out = sys.stderr if args.json else sys.stdout
        tty = out.isatty()
        readers = [threading.Thread(target=self.reader, args=(i,), daemon=True)
                   for i in range(args.readers)]
        writer = threading.Thread(target=self.writer, daemon=True)
        for t in readers:
            t.start()
        self.loader.set_window(0, args.window)
        writer.start()
        next_scroll = next_progress = time.monotonic()
        deadline = self.start + args.duration
        while time.monotonic() < deadline:
            self.drive_clock()
            s = self.sample()
            now = time.monotonic()
            if now >= next_scroll:
                self.scroll(s)
                next_scroll = now + args.scroll_interval_ms / 1000
            if now >= next_progress:
                self.progress(s, out, tty)
                next_progress = now + (0.1 if tty else 1.0)
            time.sleep(0.005)

        # Settle to quiescence: no more writes or failures; answer everything; retry.
        self.stop_writer.set()
        writer.join(30)
        self.fail_rate = 0.0
        settle_deadline = time.monotonic() + 30
        quiet = False
        while time.monotonic() < settle_deadline:
            self.drive_clock()
            s = self.sample()
            if s.failure is Failure.OWN:
                if self.call("explicit", self.loader.retry):
                    self.counts["explicit_retries"] += 1
            want = s.window_start + s.window_len
            if (s.quiescent and not s.revalidating and self.reads.empty()
                    and (s.end_of_source or s.covered_end >= want)):
                quiet = True
                break
            time.sleep(0.002)
        s = self.sample()
        self.progress(s, out, tty, final=True)
        report = self.report(s, quiet)
        for _ in readers:
            self.reads.put(None)
        for t in readers:
            t.join(30)
        self.loader.close()
        with self.lock:
            accepted = len(self.pages)
            released = sum(self.released.values())
            exactly_once = all(self.released[n] == 1 for n in self.pages) and \
                set(self.released) <= set(self.pages)
        report["acquisitions"] = {"accepted": accepted, "released": released,
                                  "accepted_by_library": s.accepted}
        report["checks"]["released_equals_accepted"] = (
            accepted == released == s.accepted and exactly_once)
        report["checks"]["no_errors"] = not self.errors
        report["errors"] = self.errors[:10]
        report["ok"] = all(report["checks"].values())
        return report

    def report(self, s: libloader.Snapshot, quiet: bool) -> Dict[str, Any]:
        view = self.loader.view()
        rows = [r for p in view.pages for r in p.acquisition.rows]
        conn = connect(self.db)
        try:
            if rows:
                base = view.pages[0].acquisition.start_cursor
                sql = rows_between(conn, base, (rows[-1][0], rows[-1][1]))
            else:
                sql = []
            total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            conn.close()
        with self.lock:
            c = dict(self.counts)
        return {
            "seed": self.args.seed,
            "duration_s": self.args.duration,
            "fail_rate": self.args.fail_rate,
            "readers": self.args.readers,
            "source": {"rows_at_start": self.args.rows, "rows_at_end": total,
                       "inserted": c.get("inserted", 0), "deleted": c.get("deleted", 0),
                       "invalidations": c.get("invalidations", 0)},
            "reads_by_kind": {k: self.issued_by_kind.get(k, 0)
                              for k in ("finite", "chain", "full")},
            "answers": {"settled": c.get("answered", 0),
                        "current": c.get("answer_current", 0),
                        "stale": c.get("answer_stale", 0),
                        "cursor_stalled": c.get("answer_cursor_stalled", 0),
                        "cancel_hints": c.get("cancel_hints", 0)},
            "failures": {"injected": c.get("failed_injected", 0),
                         "own": c.get("failure_own", 0),
                         "superseded": c.get("failure_superseded", 0)},
            "retries": {"by_backoff_timer": self.retries.get("backoff", 0),
                        "explicit": self.retries.get("explicit", 0),
                        "by_window_move": self.retries.get("window", 0)},
            "final": {"epoch": s.epoch, "cover_epoch": s.cover_epoch,
                      "window": [s.window_start, s.window_len],
                      "covered": [s.covered_start, s.covered_end],
                      "pages": len(view), "items": len(rows),
                      "end_of_source": s.end_of_source, "rewinds": c.get("rewinds", 0)},
            "fresh_fraction": round(self.fresh_samples / max(self.samples, 1), 3),
            "invariants": {"samples": self.samples, "violations": self.violations[:10]},
            "checks": {
                "quiescent": quiet,
                "view_matches_sql": quiet and rows == sql,
                "view_covers_window": s.end_of_source or s.covered_end >= (
                    s.window_start + s.window_len),
                "invariants_held": not self.violations and self.samples > 0,
            },
        }


def print_report(r: Dict[str, Any]) -> None:
    def mark(ok: bool) -> str:
        return "ok" if ok else "FAILED"

    ch = r["checks"]
    src, ans, fl, rt, fin, acq = (r["source"], r["answers"], r["failures"], r["retries"],
                                  r["final"], r["acquisitions"])
    kinds = r["reads_by_kind"]
    lines = [
        "",
        f"libloader SQLite feed: seed {r['seed']}, {r['duration_s']} s, "
        f"fail rate {r['fail_rate']}, {r['readers']} readers",
        f"  source        {src['rows_at_start']} -> {src['rows_at_end']} rows: "
        f"{src['inserted']} inserted, {src['deleted']} deleted",
        f"                {src['invalidations']} invalidations",
        f"  reads         {sum(kinds.values())} issued: {kinds['finite']} finite, "
        f"{kinds['chain']} chain, {kinds['full']} full",
        f"  answers       {ans['settled']} settled: {ans['current']} current, "
        f"{ans['stale']} stale (late, classified)",
        f"                {ans['cursor_stalled']} cursor stalls, "
        f"{ans['cancel_hints']} cancel hints",
        f"  failures      {fl['injected']} injected: {fl['own']} own (waited for a retry),",
        f"                {fl['superseded']} superseded (only raised the debt)",
        f"  retries       {rt['by_backoff_timer']} by the backoff timer, "
        f"{rt['explicit']} explicit, {rt['by_window_move']} by window moves",
        f"  acquisitions  {acq['accepted']} accepted, {acq['released']} released: "
        f"{mark(ch['released_equals_accepted'])}",
        f"  final view    window {fin['window'][0]}+{fin['window'][1]}, {fin['pages']} "
        f"pages, {fin['items']} rows, epoch {fin['epoch']}",
        f"                equals SQL over its key range: {mark(ch['view_matches_sql'])}; "
        f"covers the window: {mark(ch['view_covers_window'])}",
        f"  invariants    {r['invariants']['samples']} samples: "
        f"{mark(ch['invariants_held'])}; view fresh in {100 * r['fresh_fraction']:.0f}%",
        f"  quiescent     at the end: {mark(ch['quiescent'])}",
    ]
    lines += [f"  error         {e}" for e in r.get("errors", [])]
    lines += [f"  violation     {v}" for v in r["invariants"]["violations"]]
    lines.append("  result        " + ("all checks passed" if r["ok"]
                                       else "SOME CHECKS FAILED"))
    print("\n".join(lines))


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1, help="seeds every random choice (default 1)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="seconds of writes, reads and scrolling (default 10)")
    p.add_argument("--fail-rate", type=float, default=0.05,
                   help="fraction of reads that fail (default 0.05)")
    p.add_argument("--json", action="store_true",
                   help="print the report as one JSON object (progress goes to stderr)")
    p.add_argument("--readers", type=int, default=4, help="reader threads (default 4)")
    p.add_argument("--rows", type=int, default=1000, help="rows at start (default 1000)")
    p.add_argument("--ts-range", type=int, default=100,
                   help="distinct ts values; rows/ts-range rows share each (default 100)")
    p.add_argument("--page-size", type=int, default=50, help="rows per read (default 50)")
    p.add_argument("--window", type=int, default=100, help="window length (default 100)")
    p.add_argument("--scroll", type=int, default=20,
                   help="largest scroll step, rows (default 20)")
    p.add_argument("--scroll-interval-ms", type=float, default=50.0)
    p.add_argument("--latency-ms", type=float, default=3.0,
                   help="mean read latency, each way (default 3)")
    p.add_argument("--write-interval-ms", type=float, default=250.0,
                   help="mean time between bursts of writes (default 250)")
    args = p.parse_args(argv)
    if not 0.0 <= args.fail_rate < 1.0:
        p.error("--fail-rate must be in [0, 1)")
    if args.duration < 0 or args.readers < 1 or args.page_size < 1 or args.window < 1:
        p.error("--duration, --readers, --page-size and --window must be positive")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="libloader-feed-") as tmp:
        db = Path(tmp) / "events.db"
        create_db(db, args.rows, args.ts_range, random.Random(args.seed))
        report = Feed(args, db).run()
    try:
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_report(report)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`); the checks' verdict is still the exit status.
        sys.stdout = open(os.devnull, "w")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
