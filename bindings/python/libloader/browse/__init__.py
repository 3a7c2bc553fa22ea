"""``libloader-browse DB [TABLE]``: scroll any SQLite table in the terminal, live, at any depth.

The command line: it opens the database read-only, picks the table (the first one when none
is named), checks it has a key to keep cursors on, and runs the Textual app
(:mod:`libloader.browse._app`). ``--demo`` makes a table of a million rows in a temporary
file, runs a writer process on it and injects failures and latency into the loads. Textual
is an optional dependency: ``pip install './bindings/python[browse]'``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

__all__ = ["main"]


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="libloader-browse",
        description="Scroll a SQLite table in its key order, live: the view follows other "
                    "programs' writes. Keys: arrows/j k the cursor, PgUp/PgDn/space b, "
                    "Home/End g G, Tab a column, : go to a row number, / go to a key, Enter the "
                    "row, c/y copy a cell/row, t tables, s schema, F follow the bottom, "
                    "r retry, ? help, q quit.")
    p.add_argument("db", nargs="?", help="the SQLite database file")
    p.add_argument("table", nargs="?", help="the table (default: the first one)")
    p.add_argument("--demo", action="store_true",
                   help="browse a new table of a million rows while a writer process changes "
                        "it and loads fail now and then")
    p.add_argument("--rows", type=int, default=None, help="--demo: the table's rows")
    p.add_argument("--fail-rate", type=float, default=None,
                   help="the share of loads that fail (default 0, 0.05 with --demo)")
    p.add_argument("--latency", type=float, default=None,
                   help="the most seconds a load is delayed (default 0, 0.05 with --demo)")
    p.add_argument("--write-interval", type=float, default=0.5,
                   help="--demo: seconds between the writer's commits")
    p.add_argument("--follow", action="store_true",
                   help="open at the bottom and follow new rows there (as F does, like "
                        "less +F); scrolling up stops following, back to the bottom resumes")
    p.add_argument("--append-only", action="store_true",
                   help="the table only ever gets new rows after its last key (a log): "
                        "report each commit as an append, which reads only the new rows, "
                        "instead of re-reading what the view shows")
    p.add_argument("--poll", type=float, default=0.4,
                   help="seconds between looks at PRAGMA data_version")
    args = p.parse_args(argv)
    if not args.demo and not args.db:
        p.error("name a database file, or use --demo")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    try:
        from ._app import Browser
    except ImportError as e:
        print(f"libloader-browse needs Textual ({e}): pip install './bindings/python[browse]' "
              "from a checkout, or pip install 'ledgered-loader[browse]'", file=sys.stderr)
        return 2
    from ._demo import DEMO_ROWS, DEMO_TABLE, Faults, create_demo_db, start_writer
    from ._table import LOAD_BUSY_S, OPEN_BUSY_S, NoKeyError, Table, first_table, open_readonly

    tmp: Optional[str] = None
    writer = None
    try:
        if args.demo:
            tmp = tempfile.mkdtemp(prefix="libloader-browse-")
            db = Path(tmp) / "demo.db"
            rows = args.rows if args.rows is not None else DEMO_ROWS
            print(f"libloader-browse: making {rows:,} rows in {db} ...", file=sys.stderr)
            create_demo_db(db, rows)
            writer = start_writer(db, args.write_interval, seed=1)
            name: Optional[str] = DEMO_TABLE
        else:
            db = Path(args.db)
            name = args.table
        try:
            # Another program's write may be under way: wait for it (loads wait less).
            conn = open_readonly(str(db), timeout=OPEN_BUSY_S)
            name = name or first_table(conn)
            if name is None:
                print(f"libloader-browse: {db} has no tables", file=sys.stderr)
                return 2
            table = Table(conn, name)
            table.set_busy(LOAD_BUSY_S)
        except (NoKeyError, FileNotFoundError) as e:
            print(f"libloader-browse: {e}", file=sys.stderr)
            return 2
        except Exception as e:   # not a database, unreadable, ...
            print(f"libloader-browse: cannot read {db}: {e}", file=sys.stderr)
            return 2
        fail = args.fail_rate if args.fail_rate is not None else (0.05 if args.demo else 0.0)
        latency = args.latency if args.latency is not None else (0.05 if args.demo else 0.0)
        app = Browser(table, poll_interval=args.poll, follow=args.follow,
                      append_only=args.append_only,
                      title=f"{db.name}: {name}" + (" (demo: a writer runs, loads fail)"
                                                     if args.demo else ""))
        if fail > 0 or latency > 0:
            app.set_load(Faults(app.table_load, fail, latency))
        app.run()
        # Non-zero when the app ended on an error (Textual sets 1 for an exception).
        return app.return_code or 0
    finally:
        if writer is not None:
            writer.terminate()
            writer.wait(5)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
