"""The table as a source: which order it is read in, pages in both directions against a direct
query, the cursor for a row number or a key, and the message for a table it cannot scroll."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, List

import pytest

from libloader import Direction
from libloader.browse import main
from libloader.browse._table import NoKeyError, Table, decode_key, encode_key, open_readonly


def make(tmp_path: Path, *sql: str) -> sqlite3.Connection:
    path = tmp_path / "t.db"
    conn = sqlite3.connect(str(path))
    for s in sql:
        conn.execute(s)
    conn.commit()
    conn.close()
    return open_readonly(str(path))


def walk(t: Table, direction: Direction, limit: int) -> List[Any]:
    """Every row, page by page, as the loader would read them from one end."""
    rows: List[Any] = []
    cursor = b""
    if direction is Direction.BACKWARD:
        last = t.conn.execute(f"SELECT {t._key_sql} FROM \"{t.name}\" ORDER BY "
                              f"{t._desc} LIMIT 1").fetchone()
        cursor = encode_key(last)
    while True:
        r = t.load(cursor, limit, direction)
        assert len(r.items) <= limit
        rows = rows + list(r.items) if direction is Direction.FORWARD else list(r.items) + rows
        if r.end_of_source:
            return rows
        assert r.next_cursor != cursor
        cursor = r.next_cursor


def test_cursor_encoding_round_trips() -> None:
    for key in [(1,), (-2**63,), (2**63 - 1,), ("é x", 3), (b"\x00\xff", None, 2.5), ()]:
        assert decode_key(encode_key(key)) == key


def test_a_composite_text_key_without_rowid_reads_in_key_order(tmp_path: Path) -> None:
    conn = make(tmp_path,
                "CREATE TABLE t (a TEXT, b INTEGER, v TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID",
                *[f"INSERT INTO t VALUES ('{chr(97 + i % 5)}', {i}, 'v{i}')" for i in range(53)])
    t = Table(conn, "t")
    assert t.key == ["a", "b"] and t.key_label == "primary key"
    want = [(r[0], r[1], *r) for r in conn.execute("SELECT * FROM t ORDER BY a, b")]
    for limit in (1, 7, 53, 100):
        assert walk(t, Direction.FORWARD, limit) == want
        # Backward from the cursor after the last row: every row, the last one included.
        assert walk(t, Direction.BACKWARD, limit) == want
    cursor, n = t.locate_key(t.parse_key("c, 10"))
    assert n == [w[:2] for w in want].index(("c", 12))
    assert t.load(cursor, 1, Direction.FORWARD).items[0][:2] == ("c", 12)
    assert t.cursor_at(n, len(want)) == cursor
    with pytest.raises(ValueError, match="2 values"):
        t.parse_key("c")
    with pytest.raises(ValueError, match="not a value"):
        t.parse_key("c, x")


def test_a_nullable_primary_key_falls_back_to_the_rowid(tmp_path: Path) -> None:
    conn = make(tmp_path, "CREATE TABLE t (name TEXT PRIMARY KEY, v INTEGER)",
                "INSERT INTO t VALUES ('b', 1), ('a', 2), (NULL, 3)")
    t = Table(conn, "t")
    assert t.key == ["rowid"] and t.key_label == "rowid"
    assert [r[2] for r in walk(t, Direction.FORWARD, 2)] == [1, 2, 3]


def test_cursor_at_reads_from_the_nearer_end(tmp_path: Path) -> None:
    conn = make(tmp_path, "CREATE TABLE t (id INTEGER PRIMARY KEY)",
                "INSERT INTO t WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n "
                "WHERE x < 100) SELECT 3 * x FROM n")
    t = Table(conn, "t")
    for n in (0, 1, 49, 50, 51, 99, 100, 150):
        first = t.load(t.cursor_at(n, 100), 1, Direction.FORWARD).items
        assert [r[0] for r in first] == ([3 * (n + 1)] if n < 100 else [])


def test_tables_without_a_usable_key_are_refused_in_words(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    conn = make(tmp_path, "CREATE TABLE t (x)", "CREATE VIEW v AS SELECT x FROM t")
    with pytest.raises(NoKeyError, match="is a view"):
        Table(conn, "v")
    with pytest.raises(NoKeyError, match="no table named 'nope'.*its tables: t"):
        Table(conn, "nope")
    db = str(tmp_path / "t.db")
    assert main([db, "v"]) == 2
    assert "is a view: it has no rowid or primary key" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.db")]) == 2
    assert "no database file" in capsys.readouterr().err
