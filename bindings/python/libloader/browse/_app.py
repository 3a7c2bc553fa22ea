"""The terminal browser: a Textual app that shows one table's rows through an aio.Feed.

The screen's rows are the loader's window: scrolling moves it (``set_window``), a far move
(the top, the bottom, a row number, a key) rebuilds the view at a cursor (``jump``), so a
keypress reads about a window's rows at any depth. Textual runs on asyncio, so the feed is
:class:`libloader.aio.Feed`: a load that does not wait (a local SQLite query) is answered
inside the call that needs it, and ``changes()`` hands the app each new view. Every
``poll_interval`` seconds the app reads ``PRAGMA data_version``; when another connection has
committed, it invalidates the feed and counts the rows again.
"""

from __future__ import annotations

import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, List, Optional, Tuple, Union

from rich.cells import cell_len, set_cell_size
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.strip import Strip
from textual.widget import Widget
from textual.events import Key
from textual.widgets import Static

from .. import aio
from .._enums import Direction, Failure
from .._feed import FeedSnapshot, LoadResult
from .._types import Config
from ._table import Row, Table

Load = Callable[[bytes, int, Direction], Union[LoadResult[Row], Awaitable[LoadResult[Row]]]]

PAGE_SIZE = 64
PREFETCH = 64
MAX_PAGES = 16
"""The loader's settings: pages of 64 rows, 64 rows loaded on each side of the screen, at
most 16 pages (1,024 rows) held however far the view has scrolled."""

CELL_WIDTH = 32
"""The widest a column is drawn, in terminal cells; longer values are cut with an
ellipsis."""

CELL_SCAN = 4 * CELL_WIDTH
"""The code points of a value a cell looks at: a cell shows at most CELL_WIDTH cells, so a
100 KB value costs no more to draw than a short one."""

SEPARATOR = " │ "

NULL_CELL = "∅"
"""How SQL NULL is shown: apart from the text 'NULL', which shows as itself."""

_UNSAFE = frozenset(("Cc", "Cf", "Cs", "Cn", "Zl", "Zp"))
"""Unicode categories never sent to the terminal: controls (C0, DEL, C1: escape sequences
start with them), format characters (bidi overrides and isolates, zero-width spaces and
joiners, which reorder or hide text), surrogates (undecodable bytes), unassigned code points
(no agreed width), line and paragraph separators."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MAX_MARKS = 2
"""Combining marks kept on one character; more are shown as escapes (a pile of them draws
over the lines around)."""


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:   # a byte that was not UTF-8 (decoded with surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def inert_parts(text: str) -> List[Tuple[str, bool]]:
    """``text`` in runs of (text, escaped): every character a terminal could act on, or that
    reorders, hides or stacks text, becomes a visible escape (``\\x1b``, ``\\u202e``, ``\\n``);
    the rest is kept as it is, spaces included."""
    if text.isascii() and text.isprintable():
        return [(text, False)] if text else []
    parts: List[Tuple[str, bool]] = []
    run: List[str] = []
    marks = 0
    escaped_last = False
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in _UNSAFE:
            bad = True
        elif cat[0] == "M":
            # A mark with no character of its own before it would join the separator.
            bad = escaped_last or not run and not parts or marks >= _MAX_MARKS
            marks += 1
        else:
            bad = False
            marks = 0
        if bad:
            if run:
                parts.append(("".join(run), False))
                run = []
            parts.append((_escape(ch), True))
        else:
            run.append(ch)
        escaped_last = bad
    if run:
        parts.append(("".join(run), False))
    return parts


def inert(text: str) -> str:
    """``text`` safe to show: see :func:`inert_parts`."""
    return "".join(t for t, _ in inert_parts(text))


def cell_parts(value: Any) -> List[Tuple[str, str]]:
    """A value as a cell shows it (before cutting to the column's width), in runs of (text,
    kind): ``"text"``, ``"escape"`` (a control shown as an escape), ``"null"``, ``"blob"``,
    ``"more"`` (the value goes on past what a cell looks at)."""
    if value is None:
        return [(NULL_CELL, "null")]
    if isinstance(value, bytes):
        return [("x'" + value[:16].hex() + ("…'" if len(value) > 16 else "'"), "blob")]
    if isinstance(value, float):
        return [(repr(value), "text")]
    text = str(value)
    parts = [(t, "escape" if e else "text") for t, e in inert_parts(text[:CELL_SCAN])]
    if len(text) > CELL_SCAN:
        parts.append(("…", "more"))
    return parts


def cell(value: Any) -> str:
    """A value as a cell shows it (before cutting to the column's width): inert, spaces
    kept, NULL apart from the text 'NULL'."""
    return "".join(t for t, _ in cell_parts(value))


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells (a wide character counts two), with an
    ellipsis when it was longer."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)) + "…"


CELL_STYLES = {"text": Style(), "escape": Style(color="magenta", italic=True),
               "null": Style(dim=True, italic=True), "blob": Style(color="cyan"),
               "more": Style(dim=True)}


def cell_text(parts: List[Tuple[str, str]], width: int) -> Text:
    """A cell's runs as styled text, cut and padded to ``width`` terminal cells."""
    t = Text(no_wrap=True, end="")
    for s, kind in parts:
        t.append(s, CELL_STYLES[kind])
    t.truncate(width, overflow="ellipsis", pad=True)
    return t


@dataclass
class KeySample:
    """One keypress, from the action to the first paint of a fresh screen."""

    action: str
    seconds: float
    rows_read: int
    """Rows the loads returned to the app for it (the loader's ``items_read``)."""
    rows_fetched: int
    """Rows the table's queries fetched for those loads (a backward load fetches one more,
    for its cursor)."""


class RowsView(Widget, can_focus=True):
    """The rows on screen: a header line, then one line per row of the window."""

    DEFAULT_CSS = """
    RowsView { height: 1fr; }
    """

    def __init__(self, browser: "Browser") -> None:
        super().__init__()
        self.browser = browser

    def on_resize(self) -> None:
        self.browser.resized()

    def on_key(self, event: Key) -> None:
        if self.browser.prompt_key(event):
            event.stop()
            event.prevent_default()

    def render_line(self, y: int) -> Strip:
        b = self.browser
        width = self.size.width
        if y == 0:
            b._painted()
            return b.header_strip().adjust_cell_length(width, HEADER_STYLE)
        return b.line_strip(y - 1).adjust_cell_length(width)


HEADER_STYLE = Style(bold=True, reverse=True)


class Browser(App[None]):
    """``Browser(table, load=None, feed_config=None, poll_interval=0.4)``: browses ``table``.

    ``load`` replaces the table's own load (the demo wraps it with failures and latency)."""

    TITLE = "libloader-browse"
    CSS = """
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #status { height: 1; background: $panel; padding: 0 1; }
    """
    BINDINGS = [
        Binding("down,j", "line(1)", "down", show=False),
        Binding("up,k", "line(-1)", "up", show=False),
        Binding("pagedown,space", "page(1)", "page down", show=False),
        Binding("pageup,b", "page(-1)", "page up", show=False),
        Binding("home,g", "top", "top", show=False),
        Binding("end,G", "bottom", "bottom", show=False),
        Binding("r", "retry", "retry", show=False),
        Binding("q", "quit", "quit", show=False),
    ]

    def __init__(self, table: Table, *, load: Optional[Load] = None,
                 feed_config: Optional[Config] = None, poll_interval: float = 0.4,
                 title: Optional[str] = None) -> None:
        super().__init__()
        self.table = table
        self.fetched = 0
        """Rows the table's queries fetched for the feed's loads."""
        self._inner_load = load
        self.config = feed_config or Config(page_size=PAGE_SIZE, prefetch_distance=PREFETCH,
                                            max_pages=MAX_PAGES)
        self.poll_interval = poll_interval
        self.label = title or f"{table.name}"
        self.feed: Optional[aio.Feed[Row]] = None
        self.snap: Optional[FeedSnapshot[Row]] = None
        self.top = 0
        self.total = 0
        self.version = -1
        self.message = ""
        self.samples: List[KeySample] = []
        self._pending: Optional[tuple[str, float, int, int]] = None
        self._fresh_pending = False
        self.invalidations = 0
        self._invalidated_at: Optional[float] = None
        self.refresh_seconds: List[float] = []
        """For each invalidation the poll made, the time until the view was fresh again."""
        self.asking: Optional[str] = None
        """While a row number or a key is typed: ``"row"`` or ``"key"``."""
        self.typed = ""
        self._header = ""
        self._header_strip = Strip([])
        self._lines: List[Strip] = []

    # ---- layout ----

    def compose(self) -> ComposeResult:
        # No markup: a table's name, a key or a message in brackets is text, not a style.
        yield Static(id="title", markup=False)
        yield RowsView(self)
        yield Static(id="status", markup=False)

    @property
    def height(self) -> int:
        """The window: the rows the screen shows (the view's height less its header)."""
        return max(self.query_one(RowsView).size.height - 1, 1)

    def set_load(self, load: Load) -> None:
        """Loads through ``load`` instead of :meth:`table_load` (before the app runs): the
        demo wraps :meth:`table_load` with failures and latency."""
        self._inner_load = load

    def table_load(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        """A page of the table, counting the rows its query fetched."""
        result = self.table.load(cursor, limit, direction)
        self.fetched += len(result.items) + (
            1 if direction is Direction.BACKWARD and not result.end_of_source else 0)
        return result

    async def on_mount(self) -> None:
        self.total = self.table.count()
        self.version = self.table.data_version()
        load: Any = self.table_load
        if self._inner_load is not None:
            load = self._inner_load
        # A far window move (go to row, the bottom) asks the table for the cursor before the
        # row (an OFFSET query from the nearer end) and starts there, instead of walking.
        self.feed = aio.Feed(load, config=self.config,
                             locate=lambda n: self.table.cursor_at(n, self.total))
        view = self.query_one(RowsView)
        view.focus()
        if view.size.height > 1:   # else the first layout's resize sets the window
            self.feed.set_window(0, self.height)
        self.run_worker(self._watch(), exclusive=False)
        self.set_interval(self.poll_interval, self._poll)
        self._show()

    async def on_unmount(self) -> None:
        feed, self.feed = self.feed, None   # the timer and the watcher see it gone
        if feed is not None:
            await feed.close(timeout=1)

    def resized(self) -> None:
        """The rows view changed size: the window follows."""
        if self.feed is not None:
            self.top = min(self.top, self._last_top())
            self.feed.set_window(self.top, self.height)
            self._show()

    async def _watch(self) -> None:
        assert self.feed is not None
        async for snap in self.feed.changes():
            self.snap = snap
            self._show()

    def _poll(self) -> None:
        """Another connection committed: re-read what the view shows, count the rows."""
        if self.feed is None:
            return
        try:
            v = self.table.data_version()
            if v == self.version:
                return
            self.version = v
            self.total = self.table.count()
        except sqlite3.Error as e:   # a locked database: the next poll tries again
            self.message = f"poll: {e}"
            return
        self.invalidations += 1
        if self._invalidated_at is None:
            self._invalidated_at = time.monotonic()
        self.feed.invalidate()
        self._show()

    # ---- what the screen shows ----

    def window_rows(self) -> List[Optional[Row]]:
        """The window's rows from the current view: None where a row is not loaded (yet)."""
        snap = self.snap
        out: List[Optional[Row]] = []
        for i in range(self.height):
            idx = self.top + i - (snap.start if snap else 0)
            out.append(snap.items[idx] if snap and 0 <= idx < len(snap.items) else None)
        return out

    def is_fresh(self) -> bool:
        """The view is settled (nothing read, nothing owed) and holds every row of the window
        the table has."""
        snap = self.snap
        if snap is None or not snap.settled or self.feed is None:
            return False
        state = self.feed.state
        if state.window_start != self.top:
            return False
        end = state.covered_end if state.end_of_source else None
        need = self.top + self.height if end is None else min(self.top + self.height, end)
        return snap.start <= self.top and snap.start + len(snap.items) >= need

    def _columns(self) -> List[str]:
        names = [c.name for c in self.table.columns]
        if self.table.key_label == "rowid":
            names = [self.table.key[0]] + names
        return names

    def _cells(self, row: Row) -> List[List[Tuple[str, str]]]:
        values = row[self.table.nkey:]
        if self.table.key_label == "rowid":
            values = (row[0],) + tuple(values)
        return [cell_parts(v) for v in values]

    def _number_width(self) -> int:
        return max(len(f"{self.top + self.height:,}"), len(f"{self.total:,}"), 1)

    def _strip(self, text: Text) -> Strip:
        return Strip(list(text.render(self.console, end="")))

    def _draw(self) -> None:
        """The header and the window's lines, as strips: made once per change of the view,
        the window or the size, and painted line by line by :class:`RowsView`. Every value
        and name is inert (:func:`inert_parts`), and widths are terminal cells."""
        rows = self.window_rows()
        names = [inert(n) for n in self._columns()]
        widths = [cell_len(n) for n in names]
        cells = [None if row is None else self._cells(row) for row in rows]
        for cs in cells:
            if cs is not None:
                widths = [max(w, min(cell_len("".join(t for t, _ in c)), CELL_WIDTH))
                          for w, c in zip(widths, cs)]
        widths = [min(w, CELL_WIDTH) for w in widths]
        nw = self._number_width()
        head = [cut(n, w).ljust(w + len(cut(n, w)) - cell_len(cut(n, w)))
                for n, w in zip(names, widths)]
        self._header = "#".rjust(nw) + SEPARATOR + SEPARATOR.join(head)
        self._header_strip = self._strip(Text(self._header, style=HEADER_STYLE, end=""))
        state = self.feed.state if self.feed is not None else None
        stale = Style(dim=True) if self.snap is not None and self.snap.revalidating else Style()
        lines: List[Strip] = []
        for i, cs in enumerate(cells):
            pos = self.top + i
            if cs is None:
                if state is not None and state.end_of_source and pos >= state.covered_end:
                    lines.append(Strip([]))
                else:
                    lines.append(self._strip(Text(f"{pos + 1:,}".rjust(nw) + SEPARATOR + "…",
                                                  style=Style(dim=True), end="")))
                continue
            line = Text(f"{pos + 1:,}".rjust(nw) + SEPARATOR, style=stale, no_wrap=True,
                        end="")
            for j, (c, w) in enumerate(zip(cs, widths)):
                if j:
                    line.append(SEPARATOR)
                line.append_text(cell_text(c, w))
            lines.append(self._strip(line))
        self._lines = lines

    def header_text(self) -> str:
        return self._header

    def header_strip(self) -> Strip:
        return self._header_strip

    def line_strip(self, i: int) -> Strip:
        return self._lines[i] if i < len(self._lines) else Strip([])

    def status_text(self) -> str:
        feed = self.feed
        if feed is None:
            return "starting"
        state = feed.state
        stats = feed.stats()
        last = min(self.top + self.height, max(self.total, self.top + 1))
        parts = [f"rows {self.top + 1:,}–{last:,} of {self.total:,}"]
        if self.is_fresh():
            parts.append("fresh")
        elif state.revalidating:
            parts.append("refreshing")
        else:
            parts.append("loading")
        parts.append(f"{state.outstanding_reads} reads in flight")
        parts.append(f"{stats.failed_own} failures")
        parts.append("waiting for: " + self.waiting_for())
        if self.message:
            parts.append(inert(self.message))
        return " · ".join(parts)

    def waiting_for(self) -> str:
        """What the loader waits for, in words: the loader's own ``explain()`` when it has
        one, else read from its state."""
        feed = self.feed
        assert feed is not None
        explain = getattr(feed, "explain", None)
        if callable(explain):
            try:
                text = str(explain()).strip()
                if text:
                    first = text.splitlines()[0]
                    # The loader waits for nothing when it is quiescent.
                    return "nothing" if first == "quiescent" else first
            except Exception:
                pass
        problem = self.snap.problem if self.snap is not None else None
        if problem is not None:
            return {"retries_spent": "you: retries spent, press r",
                    "cursor_stalled": "you: a load stalled, press r",
                    "bad_load_result": "you: a load is broken, press r"}[problem.reason]
        state = feed.state
        if state.failure is Failure.OWN:
            return "a retry after a failed read (backoff)"
        if state.outstanding_reads:
            what = "a repair's reads" if state.revalidating else "page reads"
            return f"{what} ({state.outstanding_reads})"
        if state.revalidating:
            return "a repair to start"
        return "nothing"

    def _show(self) -> None:
        """Redraws, and records a keypress's cost once the screen it asked for is fresh."""
        fresh = self.is_fresh()
        if fresh:
            if self._invalidated_at is not None:
                self.refresh_seconds.append(time.monotonic() - self._invalidated_at)
                self._invalidated_at = None
            if self._pending is not None:
                self._fresh_pending = True
        try:
            self.query_one("#title", Static).update(inert(
                f"{self.label} · {self.total:,} rows by {self.table.key_label} "
                f"({', '.join(self.table.key)}) · ↑↓ PgUp PgDn Home End · : row · / key · "
                "r retry · q quit"))
            if self.asking is not None:
                what = ("row number (1 is the first)" if self.asking == "row"
                        else f"key ({', '.join(self.table.key)})")
                status = f"go to {what}: {inert(self.typed)}▏ Enter to go, Esc to cancel"
            else:
                status = self.status_text()
            self.query_one("#status", Static).update(inert(status))
            self._draw()
            self.query_one(RowsView).refresh()
        except NoMatches:   # not composed yet, or being torn down
            pass

    def _painted(self) -> None:
        """The rows view is painting: if a keypress waited for a fresh screen, this is it."""
        if self._fresh_pending and self._pending is not None and self.feed is not None:
            action, t0, read0, fetched0 = self._pending
            self.samples.append(KeySample(action, time.perf_counter() - t0,
                                          self.feed.stats().items_read - read0,
                                          self.fetched - fetched0))
            self._pending = None
            self._fresh_pending = False

    # ---- moves ----

    def _begin(self, action: str) -> None:
        assert self.feed is not None
        self._pending = (action, time.perf_counter(), self.feed.stats().items_read,
                         self.fetched)
        self._fresh_pending = False
        self.message = ""

    def _last_top(self) -> int:
        total = self.total
        state = self.feed.state if self.feed is not None else None
        if state is not None and state.end_of_source:
            total = state.covered_end
        return max(total - self.height, 0)

    def _scroll_to(self, top: int) -> None:
        assert self.feed is not None
        self.top = min(max(top, 0), self._last_top())
        self.feed.set_window(self.top, self.height)
        self._show()

    def go_to(self, n: int) -> None:
        """Puts row ``n`` (from 0) at the top: a window move. A far one starts at a cursor
        the loader remembers near the row, or at the one the feed's ``locate`` gives
        (:meth:`Table.cursor_at`, an OFFSET query from the nearer end), so it reads about
        the window whatever the distance, and the row numbers stay the table's own."""
        assert self.feed is not None
        self._scroll_to(min(max(n, 0), max(self.total - self.height, 0)))

    def go_to_key(self, text: str) -> None:
        """Puts the first row whose key is at least ``text`` at the top."""
        assert self.feed is not None
        values = self.table.parse_key(text)
        cursor, n = self.table.locate_key(values)
        self.top = n
        self.feed.jump(cursor, n)
        self.feed.set_window(n, self.height)
        self._show()

    def action_line(self, delta: int) -> None:
        self._begin("line")
        self._scroll_to(self.top + delta)

    def action_page(self, delta: int) -> None:
        self._begin("page")
        self._scroll_to(self.top + delta * self.height)

    def action_top(self) -> None:
        self._begin("top")
        self.go_to(0)

    def action_bottom(self) -> None:
        self._begin("bottom")
        self.go_to(self.total)

    def action_retry(self) -> None:
        if self.feed is not None:
            self.feed.retry()
            self._show()

    def action_ask(self, kind: str) -> None:
        """Starts typing a row number or a key on the status line: the keys typed go there
        (not to the bindings) until Enter or Esc."""
        self.asking = kind
        self.typed = ""
        self._show()

    def prompt_key(self, event: Key) -> bool:
        """A key that starts typing on the status line (':' a row number, '/' a key), or one
        typed there; False for any other key."""
        if self.asking is None:
            # Here rather than as bindings: the keys typed right after come through this
            # same method, in order, so none is lost while a binding's action is pending.
            if event.character in (":", "/"):
                self.action_ask("row" if event.character == ":" else "key")
                return True
            return False
        if event.key == "escape":
            self.asking = None
        elif event.key == "enter":
            kind, text = self.asking, self.typed.strip()
            self.asking = None
            if text:
                self._submit(kind, text)
        elif event.key == "backspace":
            self.typed = self.typed[:-1]
        elif event.character is not None and event.is_printable:
            self.typed += event.character
        self._show()
        return True

    def _submit(self, kind: str, text: str) -> None:
        try:
            if kind == "row":
                n = int(text.replace(",", "").replace("_", ""))
                self._begin("go to row")
                self.go_to(n - 1)
            else:
                self._begin("go to key")
                self.go_to_key(text)
        except ValueError as e:
            self._pending = None
            self.message = str(e) if kind == "key" else f"not a row number: {text!r}"
