"""A SQLite table as an ordered source: its order key, keyset cursors, page loads, row lookups.

The order is the table's primary key when every one of its columns is NOT NULL (always so in
a WITHOUT ROWID table), otherwise the rowid (an INTEGER PRIMARY KEY is the rowid). A cursor is
the key of the row just before it, encoded by :func:`encode_key`; ``b""`` is the table's
start. A forward load reads ``WHERE (key) > (cursor) ORDER BY key LIMIT n``, a backward one
the same the other way round, so a page costs its own rows at any depth. A view, or a table
with neither a rowid nor a primary key, has no such order: :class:`NoKeyError` says so.
"""

from __future__ import annotations

import copy
import sqlite3
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from .._enums import Direction
from .._feed import LoadResult
from .._ffi import MAX_CURSOR_LEN

Row = Tuple[Any, ...]
"""One row as the browser holds it: the key's values, then every column of the table."""

_ROWID_NAMES = ("rowid", "_rowid_", "oid")

LOAD_BUSY_S = 0.1
"""How long a page load waits for another program's lock: briefly (the screen says what it
waits for meanwhile); a load that fails is retried by the loader's backoff."""
MOVE_BUSY_S = 1.0
"""How long a far move (a row number, a key, the bottom) waits for another program's lock
before it gives up with a message: a person pressed a key and waits for it."""
OPEN_BUSY_S = 5.0
"""How long opening the database waits for another program's write to end."""

_INT64 = (-2**63, 2**63 - 1)


class NoKeyError(ValueError):
    """The table cannot be scrolled with keyset cursors; the message says why and what to
    do."""


def encode_key(values: Sequence[Any]) -> bytes:
    """A cursor for the key ``values``: per value a tag byte and its bytes (8-byte big-endian
    integers and doubles, length-prefixed text and blobs, a tag alone for NULL)."""
    out = bytearray()
    for v in values:
        if v is None:
            out += b"n"
        elif isinstance(v, bool) or isinstance(v, int):
            out += b"i" + struct.pack(">q", int(v))
        elif isinstance(v, float):
            out += b"f" + struct.pack(">d", v)
        elif isinstance(v, str):
            raw = v.encode("utf-8", "surrogateescape")
            out += b"t" + struct.pack(">I", len(raw)) + raw
        elif isinstance(v, (bytes, bytearray, memoryview)):
            raw = bytes(v)
            out += b"b" + struct.pack(">I", len(raw)) + raw
        else:
            raise TypeError(f"a key value of type {type(v).__name__} has no cursor encoding")
    if len(out) > MAX_CURSOR_LEN:
        raise ValueError(f"a key of {len(out)} bytes is longer than a cursor may be "
                         f"({MAX_CURSOR_LEN} bytes)")
    return bytes(out)


def decode_key(cursor: bytes) -> Tuple[Any, ...]:
    """The key values :func:`encode_key` encoded in ``cursor``."""
    values: List[Any] = []
    i = 0
    while i < len(cursor):
        tag = cursor[i:i + 1]
        i += 1
        if tag == b"n":
            values.append(None)
        elif tag == b"i":
            values.append(struct.unpack_from(">q", cursor, i)[0])
            i += 8
        elif tag == b"f":
            values.append(struct.unpack_from(">d", cursor, i)[0])
            i += 8
        elif tag in (b"t", b"b"):
            (n,) = struct.unpack_from(">I", cursor, i)
            raw = cursor[i + 4:i + 4 + n]
            values.append(raw.decode("utf-8", "surrogateescape") if tag == b"t" else raw)
            i += 4 + n
        else:
            raise ValueError(f"not a key cursor: tag {tag!r} at byte {i - 1}")
    return tuple(values)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


quote_name = _quote
"""A name quoted as an SQL identifier."""


@dataclass(frozen=True)
class Column:
    name: str
    declared: str
    """The declared type, as written (may be empty)."""


class Table:
    """One table of an open database, read in its key order.

    Every method runs a query on ``conn`` on the calling thread: use it from one thread
    (:meth:`on` gives the same table on another thread's connection)."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name
        row = conn.execute("SELECT type, sql FROM sqlite_schema WHERE name = ? COLLATE NOCASE "
                           "AND type IN ('table', 'view')", (name,)).fetchone()
        if row is None:
            tables = table_names(conn)
            listed = ", ".join(tables) if tables else "none"
            raise NoKeyError(f"no table named {name!r} in the database (its tables: {listed})")
        kind, sql = row
        self.sql: str = sql or ""
        """The table's CREATE statement, as SQLite keeps it."""
        if kind == "view":
            raise NoKeyError(f"{name!r} is a view: it has no rowid or primary key to keep a "
                             "cursor on. Browse the tables it reads from instead")
        info = conn.execute(f"PRAGMA table_xinfo({_quote(name)})").fetchall()
        # table_xinfo: cid, name, type, notnull, dflt_value, pk, hidden (hidden columns of a
        # virtual table are 1; generated columns 2 or 3 are real columns).
        self.columns = [Column(r[1], r[2] or "") for r in info if r[6] != 1]
        pk = sorted((r[5], r[1], r[2] or "", bool(r[3])) for r in info if r[5] > 0)
        without_rowid = bool(sql) and "WITHOUT ROWID" in " ".join(sql.upper().split())
        column_names = {c.name.lower() for c in self.columns}
        rowid = next((n for n in _ROWID_NAMES if n not in column_names), None)
        if pk and (without_rowid or all(notnull for _, _, _, notnull in pk)
                   or (len(pk) == 1 and pk[0][2].upper() == "INTEGER")):
            self.key = [name for _, name, _, _ in pk]
            self.key_types = [declared for _, _, declared, _ in pk]
            self.key_label = "primary key"
        elif not without_rowid and rowid is not None and self._has_rowid(rowid):
            self.key = [rowid]
            self.key_types = ["INTEGER"]
            self.key_label = "rowid"
        else:
            raise NoKeyError(
                f"table {name!r} has no usable key: no rowid (a virtual table, or its columns "
                "shadow rowid, _rowid_ and oid) and no primary key whose columns are all NOT "
                "NULL. Keyset scrolling needs a unique, non-null order")
        # Every column qualified with the table's name: a column renamed or dropped by another
        # program is then an error ("no such column"), never a double-quoted string that
        # SQLite takes for a literal, which would show the old name as every row's value.
        t = _quote(name)

        def q(col: str) -> str:
            return f"{t}.{_quote(col)}"
        cols = ", ".join(q(k) for k in self.key)
        self._key_sql = cols
        self._tuple = f"({cols})"
        everything = ", ".join(q(c.name) for c in self.columns)
        self._select = f"SELECT {cols}, {everything} FROM {t}"
        self._keys_only = f"SELECT {cols} FROM {t}"
        self._asc = ", ".join(f"{q(k)} ASC" for k in self.key)
        self._desc = ", ".join(f"{q(k)} DESC" for k in self.key)
        self._marks = "(" + ", ".join("?" for _ in self.key) + ")"
        self.nkey = len(self.key)

    def on(self, conn: sqlite3.Connection) -> "Table":
        """The same table read through ``conn`` (a worker thread's own connection): its
        queries are made once, here only the connection differs."""
        other = copy.copy(self)
        other.conn = conn
        return other

    def shape(self) -> Tuple[Any, ...]:
        """What the browser's queries depend on: the columns and the key."""
        return (tuple(self.columns), tuple(self.key), self.key_label)

    def set_busy(self, seconds: float) -> None:
        """How long a query waits for another program's lock before it fails."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    @contextmanager
    def patient(self) -> Iterator[None]:
        """Queries inside wait up to :data:`MOVE_BUSY_S` for a lock (a far move a person
        asked for), then :data:`LOAD_BUSY_S` again."""
        self.set_busy(MOVE_BUSY_S)
        try:
            yield
        finally:
            self.set_busy(LOAD_BUSY_S)

    def _has_rowid(self, rowid: str) -> bool:
        try:
            self.conn.execute(f"SELECT {rowid} FROM {_quote(self.name)} LIMIT 0")
        except sqlite3.OperationalError:
            return False
        return True

    # ---- pages ----

    def load(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        """One page: at most ``limit`` rows after ``cursor`` (before it, in key order, for a
        backward load), as :class:`libloader.Feed` wants it."""
        after = decode_key(cursor) if cursor else None
        if direction is Direction.BACKWARD:
            if after is None:
                return LoadResult([], b"", True)
            # The rows up to the cursor's key (the row just before the position), one more
            # than asked: its key is the cursor before the page's first row.
            rows = self.conn.execute(
                f"{self._select} WHERE {self._tuple} <= {self._marks} ORDER BY {self._desc} "
                "LIMIT ?", (*after, limit + 1)).fetchall()
            if len(rows) <= limit:
                rows.reverse()
                return LoadResult(rows, b"", True)
            before = rows.pop()
            rows.reverse()
            return LoadResult(rows, encode_key(before[:self.nkey]), False)
        sql, args = self._ascending(self._select, after)
        rows = self.conn.execute(f"{sql} LIMIT ?", (*args, limit)).fetchall()
        next_cursor = encode_key(rows[-1][:self.nkey]) if rows else cursor
        return LoadResult(rows, next_cursor, len(rows) < limit)

    # ---- far moves: a row number or a key to a cursor ----

    def count(self) -> int:
        """The table's rows."""
        n: int = self.conn.execute(f"SELECT count(*) FROM {_quote(self.name)}").fetchone()[0]
        return n

    def cursor_at(self, n: int, total: int) -> bytes:
        """The cursor just before row ``n`` (from 0) of a table of ``total`` rows: the key of
        row ``n - 1``, read with an OFFSET from whichever end is nearer; ``b""`` for row 0.
        A row past the end gives the cursor after the last row."""
        if n <= 0:
            return b""
        row: Optional[Sequence[Any]]
        if n - 1 <= total // 2:
            row = self.key_after(None, n - 1)
        else:
            row = self.conn.execute(f"{self._keys_only} ORDER BY {self._desc} LIMIT 1 OFFSET ?",
                                    (max(total - n, 0),)).fetchone()
        if row is None:
            row = self.conn.execute(f"{self._keys_only} ORDER BY {self._desc} LIMIT 1").fetchone()
        return b"" if row is None else encode_key(row)

    def key_after(self, key: Optional[Tuple[Any, ...]], skip: int) -> Optional[Tuple[Any, ...]]:
        """The key of the row ``skip`` rows after the row whose key is ``key`` (``skip`` rows
        from the table's start when None), or None past the last row."""
        sql, args = self._ascending(self._keys_only, key)
        row = self.conn.execute(f"{sql} LIMIT 1 OFFSET ?", (*args, skip)).fetchone()
        return None if row is None else tuple(row)

    def _ascending(self, select: str, after: Optional[Sequence[Any]]
                   ) -> Tuple[str, Tuple[Any, ...]]:
        """``select`` in key order from the table's start, or from just after the key
        ``after``: the query and its parameters, for a LIMIT to follow."""
        if after is None:
            return f"{select} ORDER BY {self._asc}", ()
        return f"{select} WHERE {self._tuple} > {self._marks} ORDER BY {self._asc}", tuple(after)

    def locate_key(self, values: Sequence[Any],
                   conn: Optional[sqlite3.Connection] = None) -> Tuple[bytes, int]:
        """The cursor just before the first row whose key is at least ``values``, and that
        row's number (from 0); on ``conn`` when given (a worker thread's connection)."""
        conn = conn or self.conn
        before = conn.execute(
            f"SELECT count(*) FROM {_quote(self.name)} WHERE {self._tuple} < {self._marks}",
            tuple(values)).fetchone()[0]
        prev = conn.execute(
            f"{self._keys_only} WHERE {self._tuple} < {self._marks} ORDER BY {self._desc} "
            "LIMIT 1", tuple(values)).fetchone()
        return (b"" if prev is None else encode_key(prev)), int(before)

    def parse_key(self, text: str) -> Tuple[Any, ...]:
        """A key typed by a person: one value per key column, separated by commas, each
        read as its column's declared type (an integer, a real, else text). ValueError, in
        words, when it does not parse."""
        parts = [p.strip() for p in text.split(",")] if self.nkey > 1 else [text.strip()]
        if len(parts) != self.nkey:
            raise ValueError(f"the key has {self.nkey} columns ({', '.join(self.key)}): type "
                             f"{self.nkey} values separated by commas")
        values: List[Any] = []
        for part, declared, col in zip(parts, self.key_types, self.key):
            affinity = declared.upper()
            try:
                if "INT" in affinity:
                    v = int(part)
                    if not _INT64[0] <= v <= _INT64[1]:
                        raise OverflowError
                    values.append(v)
                elif any(t in affinity for t in ("REAL", "FLOA", "DOUB")):
                    values.append(float(part))
                else:
                    values.append(part)
            except ValueError:
                raise ValueError(f"{col} is {declared or 'untyped'}: {part!r} is not a "
                                 "value of that type") from None
            except OverflowError:
                raise ValueError(f"{col} is {declared}: {part} is beyond SQLite's 64-bit "
                                 f"integers ({_INT64[0]:,} to {_INT64[1]:,})") from None
        return tuple(values)

    def schema_version(self) -> int:
        """``PRAGMA schema_version``: changes when any connection changes the schema."""
        v: int = self.conn.execute("PRAGMA schema_version").fetchone()[0]
        return v

    def exists(self) -> bool:
        """The table is still in the database (not dropped or renamed)."""
        return self.conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND "
                                 "name = ? COLLATE NOCASE", (self.name,)).fetchone() is not None

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits."""
        v: int = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return v


def table_names(conn: sqlite3.Connection) -> List[str]:
    """The database's tables, without SQLite's own."""
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]


def open_readonly(path: str, timeout: float = LOAD_BUSY_S,
                  check_same_thread: bool = True) -> sqlite3.Connection:
    """The database at ``path``, read-only (the browser never writes to it), in autocommit:
    each load sees the latest commit. A short busy timeout by default (:data:`LOAD_BUSY_S`):
    a load that meets a writer's lock fails, and the loader's backoff retries it; the
    command line opens with :data:`OPEN_BUSY_S` and sets it afterwards. Text that is not
    UTF-8 is read with its bad bytes kept (surrogateescape), to be shown as escapes."""
    from pathlib import Path
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no database file at {path}")
    conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout,
                           isolation_level=None, check_same_thread=check_same_thread)
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    conn.execute("PRAGMA query_only = 1")
    return conn


def first_table(conn: sqlite3.Connection) -> Optional[str]:
    names = table_names(conn)
    return names[0] if names else None
