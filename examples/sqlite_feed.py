#!/usr/bin/env python3
"""A live feed over SQLite, loaded by libloader's Feed.

The source is a table of events ordered by (ts, id), with many equal ts values, in a SQLite
file in a temporary directory (100,000 rows by default, so the window goes deep). Reads use
keyset pagination: a cursor is the (ts, id) of the row just before it, 16 bytes big-endian;
empty is the start. A forward read returns the rows after its cursor; a backward read (a
repair reading back from the anchor page, or a scroll back over pages ``max_pages``
released) the rows before it, in source order. The host is one function, ``load``:
the Feed runs it on a pool of reader threads, out of order, with random latency and an
injected failure rate, answers the loader with what it returns (or fails the read when it
raises), cancels loads the loader no longer needs and retries failures on the backoff timer.
A writer thread inserts and deletes rows (half of them among the rows on screen) and, after
each commit, reports every changed row with a ranged invalidation naming that row's cursor
(``invalidate_range(key, key)``): the repair re-reads only the page holding it, with bounded
loads (``WHERE (ts, id) > cursor AND (ts, id) <= until``), and a change off screen re-reads
nothing. ``--invalidate whole`` makes it invalidate everything instead, a control run; a
libloader without ranged invalidation falls back to that too, and the report says so. The
main thread scrolls the window, mostly down, sometimes back. The report gives the rows
re-read per ranged repair beside what a whole invalidation re-reads (window + 2 x prefetch,
by formula; the control run measures it as rows loaded per recovery), and the share of
samples in which the view was fresh.

At the end the writer stops and the feed settles, failures still injected: every read
answered, failed reads retried. The demo checks that the final view equals a direct SQL query
of the same key range, that every page a load returned was released exactly once, and that
the spec's invariants held at every sample. Exit status 1 if any check fails.

    python3 examples/sqlite_feed.py --duration 10
    python3 examples/sqlite_feed.py --seed 7 --fail-rate 0.2 --json
    python3 examples/sqlite_feed.py --invalidate whole
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import libloader
from libloader import Config, Direction, Failure, Feed, FeedStalledError, LoadResult

Row = Tuple[int, int, str]
"""(ts, id, payload)."""


def encode(ts: int, id_: int) -> bytes:
    return struct.pack(">qq", ts, id_)


def decode(cursor: bytes) -> Optional[Tuple[int, int]]:
    if not cursor:
        return None
    ts, id_ = struct.unpack(">qq", cursor)
    return ts, id_


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


def rows_before(conn: sqlite3.Connection, cursor: bytes, limit: int) -> List[Row]:
    """Keyset pagination backward: the rows before ``cursor`` (the row the cursor names is
    one of them), nearest first: (ts, id) descending."""
    before = decode(cursor)
    if before is None:
        return []
    q = ("SELECT ts, id, payload FROM events WHERE ts < ? OR (ts = ? AND id <= ?) "
         "ORDER BY ts DESC, id DESC LIMIT ?")
    return list(conn.execute(q, (before[0], before[0], before[1], limit)))


def rows_bounded(conn: sqlite3.Connection, cursor: bytes, until: bytes,
                 limit: int) -> Tuple[List[Row], bool]:
    """A bounded read: the rows after ``cursor`` and at or before ``until``, at most
    ``limit``, and whether the source ends with them (asked only of a short page: fewer than
    ``limit`` rows means ``until`` or the end was reached, and the loader needs to know which
    only for the view's end)."""
    last = decode(until)
    assert last is not None, "a bounded read ends at a row's cursor"
    after = decode(cursor)
    lower = "" if after is None else "(ts, id) > (?, ?) AND "
    q = (f"SELECT ts, id, payload FROM events WHERE {lower}(ts, id) <= (?, ?) "
         "ORDER BY ts, id LIMIT ?")
    rows = list(conn.execute(q, (*(after or ()), *last, limit)))
    end = False
    if len(rows) < limit:
        tail = rows[-1][:2] if rows else after
        q = ("SELECT 1 FROM events" + ("" if tail is None else " WHERE (ts, id) > (?, ?)")
             + " LIMIT 1")
        end = conn.execute(q, tail or ()).fetchone() is None
    return rows, end


def compare(a: bytes, b: bytes) -> int:
    """Orders two cursors as the table's (ts, id) index does, for ranged invalidation."""
    x, y = decode(a), decode(b)
    assert x is not None and y is not None
    return (x > y) - (x < y)


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# ---- the host ----


class Demo:
    """The database, the writer, the window's movements, and the checks, around one Feed."""

    def __init__(self, args: argparse.Namespace, db: Path) -> None:
        self.args = args
        self.db = db
        self.rng = random.Random(args.seed)
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.made: Dict[int, LoadResult[Row]] = {}
        self.released: Counter[int] = Counter()
        self.errors: List[str] = []
        self.samples = self.fresh_samples = 0
        self.loaded = 0
        """Rows every load returned, either direction."""
        self.recoveries = self.recovery_rows = 0
        self.recovering_from: Optional[int] = None
        """``loaded`` when the current recovery (the view refreshing) was first sampled."""
        self.violations: List[str] = []
        self.stop_writer = threading.Event()
        self.local = threading.local()
        self.conns: List[sqlite3.Connection] = []
        self.reader_seeds = itertools.count(args.seed * 1000)
        self.start = time.monotonic()
        self.ranged = args.invalidate == "ranged"
        """Changes are reported by range; False for a control run, or once the library turned
        out to lack ranged invalidation."""
        self.ranged_missing = False
        self.feed: Feed[Row] = Feed(
            self.load, max_workers=args.readers, on_release=self.on_release, compare=compare,
            config=Config(page_size=args.page_size, prefetch_distance=args.page_size * 2,
                          drop_margin=args.window, backoff_initial_ms=20, backoff_max_ms=500,
                          jitter_seed=args.seed, max_pages=args.max_pages))

    def load(self, cursor: bytes, limit: int, direction: Direction,
             until: Optional[bytes] = None) -> LoadResult[Row]:
        """The host's whole part of a read; runs on one of the Feed's reader threads.
        ``until`` bounds the reads of a ranged repair."""
        if not hasattr(self.local, "conn"):
            self.local.conn = connect(self.db)
            self.local.rng = random.Random(next(self.reader_seeds))
            with self.lock:
                self.conns.append(self.local.conn)
        rng, lat = self.local.rng, self.args.latency_ms / 1000
        time.sleep(min(rng.expovariate(1 / lat), lat * 6))       # until the query runs
        if rng.random() < self.args.fail_rate:
            with self.lock:
                self.counts["failed_injected"] += 1
            raise OSError("injected failure")
        if until is not None:
            # A ranged repair's read: only the rows up to `until`. Fewer than `limit` rows
            # tells the loader the range (or the table) ended.
            rows, start = rows_bounded(self.local.conn, cursor, until, limit)
            # No row up to `until`: the scan reached `until`, the next cursor. The read's
            # own cursor would be a stalled cursor, and the repair would read everything.
            nxt = encode(rows[-1][0], rows[-1][1]) if rows else until
        elif direction is Direction.BACKWARD:
            # The rows just before the cursor, in source order; the next cursor is the one
            # before them: the key of the row before the first (a (limit+1)-th row), or
            # empty at the source's start.
            got = rows_before(self.local.conn, cursor, limit + 1)
            rows = got[:limit][::-1]
            start = len(got) <= limit
            nxt = b"" if start else encode(got[limit][0], got[limit][1])
        else:
            got = rows_after(self.local.conn, cursor, limit + 1)  # the DB at read time
            rows = got[:limit]
            start = len(got) <= limit                             # here: the source's end
            nxt = encode(rows[-1][0], rows[-1][1]) if rows else cursor
        time.sleep(min(rng.expovariate(1 / lat), lat * 6))       # delivering the answer
        result = LoadResult(rows, nxt, end_of_source=start)
        with self.lock:
            self.made[id(result)] = result
            self.loaded += len(rows)
            self.counts[f"reads_{direction.name.lower()}"] += 1
            if until is not None:
                self.counts["bounded_loads"] += 1
                self.counts["bounded_rows"] += len(rows)
        return result

    def on_release(self, result: LoadResult[Row]) -> None:
        with self.lock:
            if self.made.get(id(result)) is not result:
                self.errors.append("released a page no load returned")
            self.released[id(result)] += 1

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
                # Half the changes hit rows on screen (a live feed's readers look where the
                # writes are), half land anywhere in the table.
                shown = [row[:2] for row in self.feed.items()]
                changed: List[Tuple[int, int]] = []
                conn.execute("BEGIN IMMEDIATE")
                for _ in range(inserts):
                    ts = (rng.choice(shown)[0] if shown and rng.random() < 0.5
                          else rng.randrange(self.args.ts_range))
                    cur = conn.execute("INSERT INTO events (ts, payload) VALUES (?, ?)",
                                       (ts, "late event"))
                    changed.append((ts, cur.lastrowid or 0))
                top = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 1
                for _ in range(deletes):
                    if shown and rng.random() < 0.5:
                        victim = conn.execute("SELECT ts, id FROM events WHERE id = ?",
                                              (rng.choice(shown)[1],)).fetchone()
                    else:
                        victim = conn.execute("SELECT ts, id FROM events WHERE id >= ? "
                                              "ORDER BY id LIMIT 1",
                                              (rng.randrange(top),)).fetchone()
                    if victim is not None:
                        conn.execute("DELETE FROM events WHERE id = ?", (victim[1],))
                        changed.append(victim)
                conn.execute("COMMIT")
                # After the commit, as the contract says.
                reported = self.report_changes(changed)
                with self.lock:
                    self.counts["inserted"] += inserts
                    self.counts["deleted"] += len(changed) - inserts
                    self.counts["invalidations"] += reported
        except BaseException as e:  # pragma: no cover - reported in the checks
            with self.lock:
                self.errors.append(f"writer: {type(e).__name__}: {e}")
        finally:
            conn.close()

    def report_changes(self, changed: List[Tuple[int, int]]) -> int:
        """Tells the feed which rows changed: each row's own cursor as a one-row range, or
        one whole invalidation. Returns the invalidations made."""
        if self.ranged:
            try:
                for ts, id_ in changed:
                    key = encode(ts, id_)
                    self.feed.invalidate_range(key, key)
                return len(changed)
            except NotImplementedError:
                # This libloader has no loader_invalidate_range: invalidate everything.
                self.ranged, self.ranged_missing = False, True
        self.feed.invalidate()
        return 1

    # ---- the main thread ----

    def sample(self) -> libloader.Snapshot:
        """Checks the invariants on a state and request list from one moment (state,
        requests, state again, until the two states agree: every change moves a counter)."""
        loader = self.feed.loader
        for _ in range(100):
            s = loader.state
            reqs = loader.requests()
            if loader.state == s:
                self.samples += 1
                self.fresh_samples += not s.revalidating
                with self.lock:
                    loaded = self.loaded
                if s.revalidating and self.recovering_from is None:
                    self.recovering_from = loaded
                elif not s.revalidating and self.recovering_from is not None:
                    self.recoveries += 1
                    self.recovery_rows += loaded - self.recovering_from
                    self.recovering_from = None
                self.violations.extend(libloader.violations(s, reqs))
                return s
        return loader.state

    def scroll(self, s: libloader.Snapshot) -> None:
        # Mostly down; one scroll in five goes back up, over pages max_pages released.
        step = self.rng.randrange(1, self.args.scroll + 1)
        back = self.rng.random() < 0.2
        start = max(s.window_start - step, 0) if back else s.window_start + step
        if s.end_of_source and start + self.args.window > s.covered_end:
            start = 0                             # back to the top: a rewind
            self.counts["rewinds"] += 1
        self.feed.set_window(start, self.args.window)

    def progress(self, s: libloader.Snapshot, out: Any, tty: bool, final: bool = False) -> None:
        with self.lock:
            failures = self.counts["failed_injected"]
        # At most 78 columns: "[999.9s] window at row 999999: refreshing, 99 in flight,
        # 999 failures, retrying".
        line = (f"[{time.monotonic() - self.start:5.1f}s] window at row {s.window_start}: "
                f"{'refreshing' if s.revalidating else 'fresh'}, "
                f"{s.outstanding_reads} in flight, "
                f"{plural(failures, 'failure')}"
                f"{', retrying' if s.failure is Failure.OWN else ''}")
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
        writer = threading.Thread(target=self.writer, daemon=True)
        feed = self.feed
        feed.set_window(0, args.window)
        writer.start()
        next_scroll = next_progress = time.monotonic()
        while time.monotonic() < self.start + args.duration:
            s = self.sample()
            now = time.monotonic()
            if now >= next_scroll:
                self.scroll(s)
                next_scroll = now + args.scroll_interval_ms / 1000
            if now >= next_progress:
                self.progress(s, out, tty)
                next_progress = now + (0.1 if tty else 1.0)
            time.sleep(0.005)

        # Settle: no more writes, failures still injected; the backoff timer retries them,
        # and once the automatic retries are spent the demo retries itself.
        self.stop_writer.set()
        writer.join(30)
        with self.lock:
            self.counts["injected_before_settling"] = self.counts["failed_injected"]
        quiet = False
        settle_deadline = time.monotonic() + 30
        while not quiet and time.monotonic() < settle_deadline:
            try:
                quiet = feed.settled(0.05)
            except FeedStalledError as e:
                # The automatic retries are spent: settled() says so, and the demo retries.
                quiet = False
                if e.problem.reason == "retries_spent" and feed.retry():
                    self.counts["explicit_retries"] += 1
            self.sample()
        s = self.sample()
        self.progress(s, out, tty, final=True)
        report = self.report(s, quiet)
        feed.close()
        for conn in self.conns:
            conn.close()
        with self.lock:
            made, released = len(self.made), sum(self.released.values())
            once = set(self.released) == set(self.made) and all(
                n == 1 for n in self.released.values())
        self.errors += [f"feed: {type(e).__name__}: {e}" for e in feed.errors]
        report["acquisitions"] = {"made": made, "released": released}
        report["checks"]["released_exactly_once"] = made == released and once
        report["checks"]["no_errors"] = not self.errors
        report["errors"] = self.errors[:10]
        report["ok"] = all(report["checks"].values())
        return report

    def report(self, s: libloader.Snapshot, quiet: bool) -> Dict[str, Any]:
        pages = self.feed.pages()
        rows = self.feed.items()
        conn = connect(self.db)
        try:
            sql = rows_between(conn, pages[0].cursor, rows[-1][:2]) if rows else []
            total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            conn.close()
        st = self.feed.stats()
        c = dict(self.counts)
        prefetch = self.args.page_size * 2
        mode = ("ranged" if self.args.invalidate == "ranged" and not self.ranged_missing
                else "whole")
        return {
            "seed": self.args.seed,
            "duration_s": self.args.duration,
            "fail_rate": self.args.fail_rate,
            "readers": self.args.readers,
            "source": {"rows_at_start": self.args.rows, "rows_at_end": total,
                       "inserted": c.get("inserted", 0), "deleted": c.get("deleted", 0),
                       "invalidations": c.get("invalidations", 0)},
            "reads_by_kind": {"finite": st.issued_finite, "chain": st.issued_chain,
                              "full": st.issued_full},
            "reads_by_direction": {"forward": c.get("reads_forward", 0),
                                   "backward": c.get("reads_backward", 0)},
            "recovery": {"window": self.args.window, "page_size": self.args.page_size,
                         "prefetch": self.args.page_size * 2,
                         "recoveries": self.recoveries,
                         "rows_loaded_per_recovery": round(
                             self.recovery_rows / max(self.recoveries, 1), 1)},
            "ranged": {
                "mode": mode,
                "fallback": ("no loader_invalidate_range in this libloader: whole "
                             "invalidations instead") if self.ranged_missing else None,
                "ranged_invalidations": st.ranged_invalidations,
                "ranged_repairs": st.ranged_repairs,
                "bounded_loads": c.get("bounded_loads", 0),
                "rows_reread": c.get("bounded_rows", 0),
                "rows_per_ranged_repair": round(
                    c.get("bounded_rows", 0) / max(st.ranged_repairs, 1), 1),
                "whole_invalidation_rows_by_formula": self.args.window + 2 * prefetch,
            },
            "answers": {"current": st.answered_current, "stale": st.answered_stale,
                        "cursor_stalled": st.cursor_stalls, "cancel_hints": st.cancels},
            "failures": {"injected": c.get("failed_injected", 0),
                         "injected_while_settling": c.get("failed_injected", 0)
                         - c.get("injected_before_settling", 0),
                         "own": st.failed_own, "superseded": st.failed_stale},
            "retries": {"by_backoff_timer": st.retries_auto,
                        "explicit_or_window_move": st.retries_explicit,
                        "explicit_by_the_demo": c.get("explicit_retries", 0)},
            "final": {"epoch": s.epoch, "cover_epoch": s.cover_epoch,
                      "window": [s.window_start, s.window_len],
                      "covered": [s.covered_start, s.covered_end],
                      "pages": len(pages), "items": len(rows),
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
    rec = r["recovery"]
    lines = [
        "",
        f"libloader SQLite feed: seed {r['seed']}, {r['duration_s']} s, "
        f"fail rate {r['fail_rate']}, {r['readers']} readers",
        f"  source        {src['rows_at_start']} -> {src['rows_at_end']} rows: "
        f"{src['inserted']} inserted, {src['deleted']} deleted",
        f"                {src['invalidations']} invalidations",
        f"  reads         {sum(kinds.values())} issued: {kinds['finite']} finite, "
        f"{kinds['chain']} chain, {kinds['full']} full",
        f"                {r['reads_by_direction']['forward']} loads forward, "
        f"{r['reads_by_direction']['backward']} backward",
        f"  recovery      {rec['rows_loaded_per_recovery']} rows loaded per recovery "
        f"({rec['recoveries']}), window {rec['window']}",
        f"                (+ prefetch {rec['prefetch']} each side, pages of "
        f"{rec['page_size']}); view fresh in {100 * r['fresh_fraction']:.0f}%",
        *ranged_lines(r["ranged"]),
        f"  answers       {ans['current']} current, {ans['stale']} stale (late or cancelled)",
        f"                {ans['cancel_hints']} superseded loads cancelled, "
        f"{ans['cursor_stalled']} cursor stalls",
        f"  failures      {fl['injected']} injected ({fl['injected_while_settling']} while "
        f"settling): {fl['own']} failed a read",
        f"                and waited for a retry, {fl['superseded']} a superseded read",
        f"  retries       {rt['by_backoff_timer']} by the backoff timer, "
        f"{rt['explicit_or_window_move']} explicit or by window moves",
        f"  acquisitions  {acq['made']} pages loaded, {acq['released']} released: "
        f"{mark(ch['released_exactly_once'])}",
        f"  final view    window {fin['window'][0]}+{fin['window'][1]}, {fin['pages']} "
        f"pages, {fin['items']} rows, epoch {fin['epoch']}",
        f"                equals SQL over its key range: {mark(ch['view_matches_sql'])}; "
        f"covers the window: {mark(ch['view_covers_window'])}",
        f"  invariants    {r['invariants']['samples']} samples: "
        f"{mark(ch['invariants_held'])}",
        f"  quiescent     at the end: {mark(ch['quiescent'])}",
    ]
    lines += [f"  error         {e}" for e in r.get("errors", [])]
    lines += [f"  violation     {v}" for v in r["invariants"]["violations"]]
    lines.append("  result        " + ("all checks passed" if r["ok"]
                                       else "SOME CHECKS FAILED"))
    print("\n".join(lines))


def ranged_lines(rg: Dict[str, Any]) -> List[str]:
    whole = rg["whole_invalidation_rows_by_formula"]
    if rg["mode"] != "ranged":
        why = rg["fallback"] or "--invalidate whole: the control run"
        return ["  invalidation  whole, each commit: rows loaded per recovery measure it",
                f"                ({why})"]
    per = rg["rows_per_ranged_repair"]
    saved = 100 * (1 - per / whole) if whole else 0.0
    return [
        f"  ranged        {rg['ranged_invalidations']} one-row ranges, "
        f"{rg['ranged_repairs']} ranged repairs: {per} rows re-read",
        f"                per repair ({rg['rows_reread']} rows in {rg['bounded_loads']} "
        "bounded loads), against",
        f"                window + 2 x prefetch = {whole} for a whole invalidation "
        f"(formula): {saved:.0f}% saved",
    ]


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
    p.add_argument("--rows", type=int, default=100_000,
                   help="rows at start (default 100000)")
    p.add_argument("--ts-range", type=int, default=10_000,
                   help="distinct ts values; rows/ts-range rows share each (default 10000)")
    p.add_argument("--page-size", type=int, default=50, help="rows per read (default 50)")
    p.add_argument("--window", type=int, default=100, help="window length (default 100)")
    p.add_argument("--scroll", type=int, default=300,
                   help="largest scroll step, rows (default 300)")
    p.add_argument("--max-pages", type=int, default=12,
                   help="most pages the view holds (default 12; 0: no bound)")
    p.add_argument("--scroll-interval-ms", type=float, default=50.0)
    p.add_argument("--latency-ms", type=float, default=3.0,
                   help="mean read latency, each way (default 3)")
    p.add_argument("--write-interval-ms", type=float, default=250.0,
                   help="mean time between bursts of writes (default 250)")
    p.add_argument("--invalidate", choices=("ranged", "whole"), default="ranged",
                   help="how the writer reports its changes: one ranged invalidation per "
                        "changed row (default), or a whole invalidation per commit (the "
                        "control run)")
    args = p.parse_args(argv)
    if not 0.0 <= args.fail_rate < 1.0:
        p.error("--fail-rate must be in [0, 1)")
    if args.max_pages < 0:
        p.error("--max-pages must be 0 or more")
    if args.duration < 0 or args.readers < 1 or args.page_size < 1 or args.window < 1:
        p.error("--duration, --readers, --page-size and --window must be positive")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="libloader-feed-") as tmp:
        db = Path(tmp) / "events.db"
        create_db(db, args.rows, args.ts_range, random.Random(args.seed))
        report = Demo(args, db).run()
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
