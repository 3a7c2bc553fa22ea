"""The terminal browser: a Textual app that shows one table's rows through an aio.Feed.

The screen's rows are the loader's window: scrolling moves it (``set_window``), a far move
(the top, the bottom, a row number, a key) rebuilds the view at a cursor (``jump``), so a
keypress reads about a window's rows at any depth. Textual runs on asyncio, so the feed is
:class:`libloader.aio.Feed`: a load that does not wait (a local SQLite query) is answered
and ``changes()`` hands the app each new view. No query runs on the UI thread: a load reads
its page in ``asyncio.to_thread`` on that thread's own connection (the feed answers the read
when the thread is done, and a key pressed meanwhile is answered at once); a far move's
cursor, the poll, the count and the rank run in Textual workers whose queries run in threads.
Every ``poll_interval`` seconds the app reads ``PRAGMA data_version``; when another connection
has committed, it invalidates the feed and counts the rows again.

The app's state (the first shown row, the cursor row and column, the row count, the feed's
latest view, the table, the far move in flight, ...) is reactive: setting an attribute is all
a change takes. Once per batch of changes the title, the status line and the rows view's lines
are made from it (the lines only when what they are drawn from changed) and reach the widgets
by data binding; Textual repaints what changed. Once a screen is painted, the lines the next
line, page or cursor move would show are made ahead (:meth:`Browser._draw_ahead`), and a
keypress whose rows are held keeps the reads it starts (the next prefetch) waiting until its
screen is painted (:meth:`Browser._read_gate`). A far move's query on the database thread
reads, right after its cursor, the pages the loader's rebuild there asks for first
(:meth:`Browser._lookup`): the rebuild's reads are answered from them inside ``jump``, with
no thread hand-off or loop turn each, and the view holds the new rows when ``jump`` returns.
A row number's cursor is found through the position index (:mod:`._positions`) while no other
connection has committed since it was read: an OFFSET of fewer than 1,024 rows at any depth.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple, TypeVar, Union, cast

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.events import Click, Key, MouseScrollDown, MouseScrollUp
from textual.geometry import Size
from textual.reactive import reactive, var
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from .. import aio
from .._enums import Direction, Failure
from .._feed import FeedSnapshot, LoadResult
from .._types import Config
from ._positions import MIN_ROWS, PositionBuild, Positions, step_for
from ._table import (MOVE_BUSY_S, NoKeyError, Row, Table, encode_key, open_readonly,
                     quote_name, table_names)

R = TypeVar("R")
L = TypeVar("L")

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

WHEEL_LINES = 3
"""Lines a turn of the mouse wheel scrolls."""

COUNT_SHARE = 0.05
"""The most of its time the poll spends counting the table's rows: after a count that took
``d`` seconds, the next waits ``d / COUNT_SHARE`` (a 1 ms count of a small table, every poll;
a 0.5 s count of 10^7 rows, every 10 s). Between counts the total is shown as approximate
(``~``); the row numbers on screen stay exact (the first shown row is ranked at each
commit)."""

HOLD_S = 0.1
"""How long a keypress's screen waits for its rows: the screen shows the state as it is once
the keypress's screen is fresh, or after HOLD_S at the latest (then with ``…`` for the rows
not read yet, and again when they come). A far move whose reads answer within it is painted
once, its rows, numbers and status together (with a row number's, the prompt closing too),
not a frame of ``…`` first: each frame painted delays the next by up to Textual's frame time
(1/60 s). A row number's or a key's move also holds the screen's other paints from the
prompt's Enter until then (:meth:`Browser._hold_screen`): the prompt closes in that frame."""

START_WAIT_S = 0.002
"""How long the UI thread waits for an idle database thread to begin a far move's query
(:meth:`Browser._lookup`): begun later, the query waited for the interpreter until the UI thread
had closed the prompt and gone idle (0.7-3.5 ms)."""

QUICK_WAIT_S = 0.005
"""How long the UI thread waits for a row number's cursor found through the position index,
and the pages read after it (:meth:`Browser._lookup`; 0.2-0.6 ms when the database thread is
idle): answered within it, the move is made at once. A far move without the index (an OFFSET
of up to half the table) is not waited for."""

READ_AHEAD_WAIT_S = 0.02
"""How long a far move waits for the pages its query reads ahead once its cursor is found
(:meth:`Browser._lookup`; they take well under a millisecond): a read held up (a lock) does
not hold the move up, the loader reads those pages itself."""

AUTO_RETRY_S = 2.0
"""When the loader's automatic retries are spent (a long lock), the poll retries this often
by itself: the view recovers without a key once the cause is gone."""

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
"""The styles of each kind of text when no theme gives them (the rows view's component
classes do)."""


def cell_text(parts: List[Tuple[str, str]], width: int,
              styles: Optional[Dict[str, Style]] = None) -> Text:
    """A cell's runs as styled text, cut and padded to ``width`` terminal cells."""
    t = Text(no_wrap=True, end="")
    styles = styles or CELL_STYLES
    for s, kind in parts:
        t.append(s, styles.get(kind, Style()))
    t.truncate(width, overflow="ellipsis", pad=True)
    return t


Cells = Tuple[List[List[Tuple[str, str]]], List[int]]
"""A row's cells as drawn: each cell's runs of (text, kind) (:func:`cell_parts`), and each
cell's width in terminal cells, uncut."""


class _LineStyles:
    """The styles of a line's segments, combined once per draw's styles: the stale style
    under everything, a run's kind over it, the column cursor's cell style over that, the
    cursor row's style on top (as a rich ``Text`` with these as spans renders them)."""

    __slots__ = ("styles", "stale", "_made")

    def __init__(self, styles: Dict[str, Style], stale: Style) -> None:
        self.styles = styles
        self.stale = stale
        self._made: Dict[Tuple[Optional[str], bool, bool], Style] = {}

    def get(self, kind: Optional[str], cell: bool, cursor: bool) -> Style:
        key = (kind, cell, cursor)
        style = self._made.get(key)
        if style is None:
            styles = self.styles
            style = self.stale
            if kind is not None:
                style = style + styles.get(kind, Style())
            if cell:
                style = style + styles["cell"]
            if cursor:
                style = style + styles["cursor"]
            self._made[key] = style
        return style


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


class RowsView(ScrollView, can_focus=True, inherit_bindings=False):
    """The rows on screen, a Line API scroll view over the whole table: a header line, then
    one line per row of the window. Its virtual height is the table's rows (plus the header),
    so the scrollbar's thumb shows the position in the table; its scroll offset is the
    browser's ``top``: moving one moves the other (a drag of the scrollbar moves the
    window). It scrolls sideways over wide rows, the row numbers pinned at the left. Its
    styles are component classes: the theme's colours apply."""

    DEFAULT_CSS = """
    RowsView { height: 1fr; scrollbar-size-vertical: 1; scrollbar-size-horizontal: 1; }
    RowsView > .rowsview--header { text-style: bold reverse; }
    RowsView > .rowsview--escape { color: $text-warning; text-style: italic; }
    RowsView > .rowsview--null { color: $text-muted; text-style: italic; }
    RowsView > .rowsview--blob { color: $text-accent; }
    RowsView > .rowsview--more { color: $text-muted; }
    RowsView > .rowsview--stale { text-style: dim; }
    RowsView > .rowsview--cursor { background: $boost; text-style: bold; }
    RowsView > .rowsview--cell { background: $accent 40%; }
    """
    COMPONENT_CLASSES = {"rowsview--header", "rowsview--escape", "rowsview--null",
                         "rowsview--blob", "rowsview--more", "rowsview--stale",
                         "rowsview--cursor", "rowsview--cell"}
    BINDINGS = [
        Binding("question_mark,f1", "app.help", "help"),
        Binding("colon", "app.ask('row')", "row #"),
        Binding("slash", "app.ask('key')", "key"),
        Binding("enter", "app.show_row", "show row"),
        Binding("c", "app.copy_cell", "copy cell"),
        Binding("y", "app.copy_row", "copy row"),
        Binding("tab", "app.column(1)", "next column", show=False),
        Binding("shift+tab", "app.column(-1)", "previous column", show=False),
        Binding("t", "app.tables", "tables"),
        Binding("s", "app.schema", "schema"),
        Binding("ctrl+c", "app.quit", "quit", show=False),
        Binding("left,h", "scroll_left", "left", show=False),
        Binding("right,l", "scroll_right", "right", show=False),
        Binding("shift+left,H", "scroll_home", "leftmost", show=False),
        Binding("shift+right,L", "scroll_end", "rightmost", show=False),
    ]

    shown: "reactive[Optional[Shown]]" = reactive(None)
    """What the view shows (bound to the browser's ``shown``): a new value repaints it, and
    its virtual size and vertical offset follow the table's rows and the window's top."""

    def __init__(self, browser: "Browser") -> None:
        super().__init__()
        self.browser = browser
        self._styles_made: Optional[Tuple[Any, Dict[str, Style]]] = None

    def on_resize(self) -> None:
        self.browser.resized()

    def on_key(self, event: Key) -> None:
        if self.browser.prompt_key(event):
            event.stop()
            event.prevent_default()

    def on_click(self, event: Click) -> None:
        """A click on a row puts the cursor there and shows the row whole."""
        if event.y >= 1:
            self.browser.cursor = event.y - 1
            self.browser.action_show_row()

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        self.browser.action_line(WHEEL_LINES)
        event.stop()
        event.prevent_default()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.browser.action_line(-WHEEL_LINES)
        event.stop()
        event.prevent_default()

    def action_scroll_home(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False)

    def action_scroll_left(self) -> None:
        self.scroll_to(x=max(self.scroll_x - 8, 0), animate=False)

    def action_scroll_right(self) -> None:
        self.scroll_to(x=min(self.scroll_x + 8, self.max_scroll_x), animate=False)

    def styles_for(self) -> Dict[str, Style]:
        """The rich styles of the component classes, by kind of text: looked up again when
        the view's styles change (a theme, say). Textual's own cache of them is emptied at
        every refresh of the view, and looking them up took a third of a move's draw."""
        key = (self.app.theme, self.app.ansi_color)
        made = self._styles_made
        if made is None or made[0] != key:
            made = self._styles_made = (key, {
                k: self.get_component_rich_style(f"rowsview--{k}", partial=True)
                for k in ("header", "escape", "null", "blob", "more", "stale", "cursor",
                          "cell")})
        return made[1]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles_made = None

    def watch_shown(self, shown: Optional[Shown]) -> None:
        """The virtual size is the table's (its rows, the header's width), the vertical
        offset the window's top."""
        if shown is None:
            return
        size = Size(shown.width, shown.rows + 1)
        if self.virtual_size != size:
            self._resize_virtual(size)
        if round(self.scroll_y) != shown.top:
            self.scroll_to(y=shown.top, animate=False, force=True, immediate=True)

    def _resize_virtual(self, size: Size) -> None:
        """A new virtual size (the columns' widths follow the window's values; the rows,
        the count), without a layout of the screen: the view's own size stays, only its
        scrollbars' range changes. Setting ``virtual_size`` would lay the whole screen out
        (its reactive is ``layout=True``): 6-9 ms of a far move's screen, measured. When a
        scrollbar appears or goes, the view's content area does change: then its setters
        ask for the layout themselves (``show_*_scrollbar`` are ``layout=True``)."""
        self.set_reactive(RowsView.virtual_size, size)
        if self.is_scrollable and self.container_size:
            # Textual's own update after a layout: scrollbars' visibility and range, the
            # scroll offsets clamped to the new range.
            self._scroll_update(size)
        else:
            self.refresh(layout=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        top = round(new_value)
        if top != self.browser.top and self.browser.feed is not None:
            # The scrollbar was dragged or clicked: the window follows.
            self.browser.scrolled_to(top)

    def render_line(self, y: int) -> Strip:
        shown = self.shown
        if shown is None:
            return Strip.blank(self.size.width)
        width = self.size.width
        x = round(self.scroll_x)
        if y == 0:
            self.browser._painted()
            strip = shown.header
        else:
            strip = shown.lines[y - 1] if y - 1 < len(shown.lines) else Strip([])
        if x:
            pin = shown.pin
            strip = Strip.join([strip.crop(0, pin), strip.crop(pin + x, pin + x + width)])
        fill = (shown.header_style if y == 0 else
                shown.cursor_style if y - 1 == shown.cursor else None)
        return strip.adjust_cell_length(width, fill)


@dataclass
class Preread:
    """The pages a far move's query read ahead for the loader's rebuild (see
    :meth:`Browser._read_ahead`), by read, and the rows their queries fetched."""
    pages: Dict[Tuple[bytes, int, Direction], LoadResult[Row]]
    fetched: int


@dataclass(eq=False, frozen=True)
class Shown:
    """What the rows view shows, drawn once per change of what it is drawn from (the
    window's rows, the top, the cursors, the table, the styles): the header and a line per
    row of the window, as strips."""

    header: Strip
    lines: List[Strip]
    pin: int
    """The cells at the left that do not scroll sideways: the row numbers."""
    top: int
    rows: int
    """The table's rows as the scrollbar counts them."""
    width: int
    """The header's width in cells: the virtual width."""
    cursor: int
    header_style: Style
    cursor_style: Style


class StateLine(Widget):
    """A line of text bound to the browser's state (the title, the status line): a change
    of its ``text`` repaints it, without a layout (its size stays). The text is plain (no
    markup: a table's name or a message in brackets is text) and cut at the line's end.
    Drawn with the Line API, as one strip made once per text and width: a Static's
    content pipeline took about as long as the rows view's changed lines on a line move."""

    DEFAULT_CSS = "StateLine { height: 1; }"

    text: "reactive[str]" = reactive("")

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self._strip: Optional[Tuple[str, int, Style, Strip]] = None

    def render_line(self, y: int) -> Strip:
        app = self.app
        if isinstance(app, Browser):
            app._painted()
        width = self.size.width
        style = self.rich_style
        if y:
            return Strip.blank(width, style)
        made = self._strip
        if made is None or made[:3] != (self.text, width, style):
            text = self.text if cell_len(self.text) <= width else set_cell_size(self.text, width)
            strip = Strip([Segment(text, style)])
            made = self._strip = (self.text, width, style,
                                  strip.adjust_cell_length(width, Style(bgcolor=style.bgcolor)))
        return made[3]


HELP = """Keys
  ↓ j / ↑ k             the cursor a row down / up (the view scrolls at the edge)
  ctrl+e / ctrl+y       the view a line down / up (the mouse wheel: three)
  PgDn space / PgUp b   a page down / up
  Home g / End G        the first / the last row
  Tab / shift+Tab       the column cursor to the next / previous column
  ← h / → l             sideways over wide rows (H / L: leftmost / rightmost)
  :                     go to a row number (1 is the first); paste works
  /                     go to the first row whose key is at least the one typed
  Enter / a click       the cursor row / the clicked row whole (c there copies it)
  c / y                 copy the cell under the cursor / the cursor row (tab-separated)
  t                     pick another table (a view is refused, with why)
  s                     the table's schema
  r                     retry failed reads now (they are retried by themselves too)
  ? F1                  this help (Esc closes it)
  q ctrl+c              quit

What the screen shows
  The rows of one table in its key order, numbered as the table ranks them now: after another
  program's commit the view is read again and renumbered within a poll.
  ∅ is SQL NULL (the text 'NULL' shows as NULL). x'..' is a BLOB (its first 16 bytes).
  Control characters, escape sequences, bidi and zero-width characters in values and names
  show as escapes (\\x1b, \\u202e, \\n), never reach the terminal.
  The status line: the rows shown, fresh (the table's rows now) or refreshing or loading,
  reads in flight, failed reads, and what the loader waits for. ~N rows: the total as last
  counted (a large table is not counted after every commit)."""


class Prompt(Input):
    """Where a row number or a key is typed (an Input: editing, paste); Enter goes there,
    Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, browser: "Browser") -> None:
        super().__init__(id="prompt", compact=True, select_on_focus=False)
        self.browser = browser
        self.can_focus = False   # until the prompt opens

    def action_cancel(self) -> None:
        self.browser.end_ask()


WHOLE_VALUE_CHARS = 20_000
"""The most characters of one value the row view shows; it says how many more there are."""


def whole_value(value: Any, styles: Dict[str, Style]) -> Text:
    """A value as the row view shows it: whole (up to WHOLE_VALUE_CHARS), inert, a line
    break shown as ``\\n`` and then made, a BLOB in hex, NULL as ∅."""
    t = Text(end="")
    if value is None:
        t.append(NULL_CELL + " (NULL)", styles.get("null", Style()))
        return t
    if isinstance(value, bytes):
        shown = value[:WHOLE_VALUE_CHARS // 2]
        t.append("x'" + shown.hex() + "'", styles.get("blob", Style()))
        if len(value) > len(shown):
            t.append(f" … ({len(value) - len(shown):,} more bytes)", styles.get("more", Style()))
        return t
    text = repr(value) if isinstance(value, float) else str(value)
    for part, escaped in inert_parts(text[:WHOLE_VALUE_CHARS]):
        t.append(part, styles.get("escape", Style()) if escaped else Style())
        if escaped and part == "\\n":
            t.append("\n")
    if len(text) > WHOLE_VALUE_CHARS:
        t.append(f" … ({len(text) - WHOLE_VALUE_CHARS:,} more characters)",
                 styles.get("more", Style()))
    return t


class RowScreen(ModalScreen[None]):
    """One row whole: each column's name and its whole value, inert. ``c`` copies the row
    (tab-separated, as the values are) to the clipboard; Esc, q or Enter closes."""

    DEFAULT_CSS = """
    RowScreen { align: center middle; }
    RowScreen > VerticalScroll { width: 100%; height: 90%; border: round $primary;
                                 background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,enter", "app.pop_screen", "close"),
                Binding("c,y", "copy", "copy the row")]

    def __init__(self, title: str, body: Text, copy: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.copy_text = copy

    def compose(self) -> ComposeResult:
        with VerticalScroll() as v:
            v.border_title = self.title_text
            yield Static(self.body, markup=False)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.copy_text)
        self.notify("the row is copied (tab-separated)", timeout=3)


class TablePicker(ModalScreen[Optional[str]]):
    """The database's tables and views, to pick one (Enter); Esc keeps the table shown. A
    view is listed too: picking it says why it cannot be scrolled."""

    DEFAULT_CSS = """
    TablePicker { align: center middle; }
    TablePicker > OptionList { width: 60; max-width: 100%; height: auto; max-height: 80%;
                               border: round $primary; background: $surface; }
    """
    BINDINGS = [Binding("escape,q", "app.pop_screen", "close")]

    def __init__(self, names: List[Tuple[str, str]], current: str) -> None:
        super().__init__()
        self.names = names
        self.current = current

    def compose(self) -> ComposeResult:
        options = OptionList(*[Option(Text(inert(name) + (" (view)" if kind == "view" else ""),
                                           no_wrap=True), id=str(i))
                               for i, (name, kind) in enumerate(self.names)])
        options.border_title = "tables and views: Enter opens, Esc closes"
        yield options

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        at = next((i for i, (n, _) in enumerate(self.names) if n == self.current), 0)
        options.highlighted = at
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.names[int(event.option.id or 0)][0])


class SchemaScreen(ModalScreen[None]):
    """The table's schema: its columns with their declared types, the key the rows are
    ordered by, and its CREATE statement, inert."""

    DEFAULT_CSS = """
    SchemaScreen { align: center middle; }
    SchemaScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 90%;
                                    border: round $primary; background: $surface;
                                    padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,s", "app.pop_screen", "close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll() as v:
            v.border_title = "schema: Esc closes"
            yield Static(self.text, markup=False)


class HelpScreen(ModalScreen[None]):
    """The keys, what the screen shows, and the table's schema."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 90%;
                                  border: round $primary; background: $surface;
                                  padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "app.pop_screen", "close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, markup=False)


class KeysFooter(Footer):
    """Textual's Footer, with the keys of what has the focus. It rebuilds its keys when the
    focus moves (the prompt closing, say): while a keypress waits for its fresh screen, the
    rebuild waits for that screen's paint, looked at every 50 ms (rebuilt in between, it
    delayed a row number's screen by about 85 ms)."""

    def bindings_changed(self, screen: Any) -> None:
        app = self.app
        if isinstance(app, Browser) and app._pending is not None:
            self.set_timer(0.05, lambda: self.bindings_changed(screen))
            return
        super().bindings_changed(screen)


class Browser(App[None]):
    """``Browser(table, load=None, feed_config=None, poll_interval=0.4)``: browses ``table``.

    ``load`` replaces the table's own load (the demo wraps it with failures and latency)."""

    TITLE = "libloader-browse"
    ENABLE_COMMAND_PALETTE = False
    """The footer's room goes to the browser's own keys."""

    # The browser's state. Each is reactive: setting one, wherever, is all a change takes;
    # the screen follows (:meth:`_follow_state`, once per batch of changes, sets the title,
    # the status line and what the rows view shows, which are bound to the widgets).
    message: "var[str]" = var("")
    """What the status line says first (a failure, what to do)."""
    table: "var[Table]" = var(cast(Table, None))
    """The table shown (another after ``t``, or after its columns changed)."""
    label: "var[str]" = var("")
    """The title's name of the table (with the file's after ``t``)."""
    snap: "var[Optional[FeedSnapshot[Row]]]" = var(None, always_update=True)
    """The feed's latest view (each new one is a change)."""
    top: "var[int]" = var(0)
    """The window's first row (from 0): the first shown row."""
    cursor: "var[int]" = var(0)
    """The cursor row: its line in the window (from 0). Enter, c and y act on it."""
    column: "var[int]" = var(0)
    """The column cursor: the column (from 0, as the header shows them) c copies."""
    total: "var[int]" = var(0)
    """The table's rows, as last counted (or read to its end while following)."""
    total_exact: "var[bool]" = var(True)
    """The total is the table's count since the last commit seen (else ``~``)."""
    following: "var[bool]" = var(False)
    """The feed follows the table's end (``F``): the loader moves the window."""
    moving: "var[Optional[object]]" = var(None)
    """While a far move's cursor is read in a worker: its token (a later move replaces it,
    and the earlier one's answer is dropped)."""
    started: "var[bool]" = var(False)
    """The first look at the table (its count and versions) is done."""
    gone: "var[Optional[str]]" = var(None)
    """Why the table cannot be shown any more (dropped, renamed, its key changed), or
    None."""
    asking: "var[Optional[str]]" = var(None)
    """While a row number or a key is typed: ``"row"`` or ``"key"``. The prompt shows in the
    status line's place (the bottom row scrolled to it, :meth:`_show_prompt`); the focus
    moves at once."""

    # What the screen shows, made from the state above by :meth:`_follow_state` and bound
    # to the widgets (data_bind).
    title_line: "var[str]" = var("")
    status_line: "var[str]" = var("")
    shown: "var[Optional[Shown]]" = var(None)

    STATE = ("message", "table", "label", "snap", "top", "cursor", "column", "total",
             "total_exact", "following", "moving", "started", "gone", "asking", "theme")
    """The attributes the screen is made from (the theme's colours too)."""

    CSS = """
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    Footer { height: 1; }
    #bottom { height: 1; overflow: hidden hidden; scrollbar-size: 0 0; }
    #status { height: 1; background: $panel; padding: 0 1; }
    #ask { height: 1; background: $panel; padding: 0 1; }
    #ask-label { width: auto; }
    #prompt { width: 1fr; }
    """
    BINDINGS = [
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("ctrl+e", "line(1)", "a line down", show=False),
        Binding("ctrl+y", "line(-1)", "a line up", show=False),
        Binding("pagedown,space", "page(1)", "page down", show=False),
        Binding("pageup,b", "page(-1)", "page up", show=False),
        Binding("home,g", "top", "top", show=False),
        Binding("end,G", "bottom", "bottom", show=False),
        Binding("r", "retry", "retry", show=False),
        Binding("F", "follow", "follow"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, table: Table, *, load: Optional[Load] = None,
                 feed_config: Optional[Config] = None, poll_interval: float = 0.4,
                 title: Optional[str] = None, follow: bool = False,
                 append_only: bool = False) -> None:
        super().__init__()
        self.table = table
        self.start_following = follow
        """Open at the bottom, following new rows (``--follow``)."""
        self.append_only = append_only
        """Rows are only ever added after the last key (``--append-only``): a commit is
        reported as an append (only the new rows read), not an invalidation."""
        self.fetched = 0
        """Rows the table's queries fetched for the feed's loads."""
        self._inner_load = load
        self.config = feed_config or Config(page_size=PAGE_SIZE, prefetch_distance=PREFETCH,
                                            max_pages=MAX_PAGES)
        self.poll_interval = poll_interval
        self.label = title or f"{table.name}"
        self.feed: Optional[aio.Feed[Row]] = None
        self._count_due = 0.0
        self._counting = False
        self._ranking = False
        self._thread_conns: Dict[str, sqlite3.Connection] = {}
        # The file's path, for the worker threads' own connections: read here, before the
        # app runs (no query runs on the UI thread once it does).
        self._db_path = str(table.conn.execute("PRAGMA database_list").fetchone()[2])
        self._db_name = self._db_path.rsplit("/", 1)[-1]
        self._local = threading.local()
        """Per worker thread: its connection and the table on it (:meth:`_db`)."""
        self._conn_lock = threading.Lock()
        self._worker_conns: List[sqlite3.Connection] = []
        self._db_pool = ThreadPoolExecutor(1, thread_name_prefix="libloader-browse-db")
        """The thread of the workers' queries other than loads, counts and ranks (the poll,
        a far move's cursor, the schema read again): one at a time, on one connection, so
        ``PRAGMA data_version`` is always read on the same connection."""
        self._db_jobs = 0
        """Calls sent to the database thread and not yet answered (:meth:`_to_db`)."""
        self._positions: Optional[Positions] = None
        """The position index (the key of every ``step``-th row), read on the database
        thread's connection: a row number's cursor is an OFFSET of fewer than ``step`` rows
        from one of its keys while no other connection has committed since (see
        :mod:`._positions`)."""
        self._position_build: Optional[PositionBuild] = None
        self.position_builds = 0
        """Position indexes read to the table's end."""
        self.indexed_moves = 0
        """Far moves whose cursor the position index found."""
        self._polling = False
        self._move_top = 0
        """Where the far move in flight (``moving``) goes."""
        self.counts = 0
        """Full counts the poll made."""
        self.version = -1
        self.samples: List[KeySample] = []
        self._pending: Optional[tuple[str, float, int, int]] = None
        self._fresh_pending = False
        self.invalidations = 0
        self._invalidated_at: Optional[float] = None
        self.refresh_seconds: List[float] = []
        """For each invalidation the poll made, the time until the view was fresh again."""
        self.schema = -1
        self._rerank = False
        """A commit was seen: the first shown row is to be ranked again (row numbers)."""
        self._auto_retry_at = 0.0
        self._following_state = False
        """The screen follows the state: a pass of :meth:`_follow_state` is due."""
        self._drawn: Optional[Tuple[Any, ...]] = None
        """What ``shown`` was drawn from (see :meth:`_draw_key`)."""
        self._unpainted = False
        """What the screen shows changed, and is not painted yet."""
        self._hold_timer: Optional[Timer] = None
        self._ask_label = ""
        self._row_cache: Dict[Row, Cells] = {}
        """The window's rows' cells and their widths, as last drawn (:meth:`_draw`)."""
        self._line_cache: Dict[Tuple[int, int], Tuple[Row, Cells, Strip]] = {}
        """The window's lines as last drawn and those drawn ahead, by row number and column
        cursor (-1: none), with the row and the cells each was made from (:meth:`_draw`)."""
        self._line_common: Any = None
        """What every line of ``_line_cache`` was made with (:meth:`_draw`)."""
        self._line_styles = _LineStyles({}, Style())
        self._header_strip: Optional[Tuple[Tuple[str, Style], Strip]] = None
        self._ahead_due = False
        """:meth:`_draw_ahead` is queued."""
        self._pass_state: Any = None
        """The loader's state while :meth:`_follow_state` runs (:meth:`_feed_state`)."""
        self._screen_held = False
        """The screen's paints are held while a row number's or a key's move begins
        (:meth:`_hold_screen`)."""
        """While a keypress's screen waits for its rows: the end of the wait (HOLD_S)."""
        self._reads_gate: Optional[asyncio.Event] = None
        """Reads waiting for a keypress's screen to be painted (:meth:`_read_gate`)."""
        full = Config.from_c(self.config.to_c())   # every setting, the library's defaults too
        self._page_size = full.page_size or 0
        self._prefetch = full.prefetch_distance or 0
        self._preread: Optional[Dict[Tuple[bytes, int, Direction], LoadResult[Row]]] = None
        """While a far move's ``jump`` runs: the pages its query read ahead, by read
        (:meth:`_read_ahead`); the loads of those reads are answered from them."""
        self.preread_answers = 0
        """Loads answered from the pages a far move's query read ahead."""
        self._header = ""
        self._spans: List[Tuple[int, int]] = []
        """Each column's first cell and width in a line, past the pinned row numbers."""

    # ---- layout ----

    def compose(self) -> ComposeResult:
        # No markup: a table's name, a key or a message in brackets is text, not a style.
        yield StateLine(id="title").data_bind(text=Browser.title_line)
        yield RowsView(self).data_bind(shown=Browser.shown)
        # The status line and, under it, the prompt: a row of one line that shows one of
        # them, scrolled to the prompt while it is open (see :meth:`_show_prompt`).
        with Vertical(id="bottom"):
            yield StateLine(id="status").data_bind(text=Browser.status_line)
            with Horizontal(id="ask"):
                yield Static(id="ask-label", markup=False)
                yield Prompt(self)
        yield KeysFooter()

    @property
    def height(self) -> int:
        """The window: the rows the screen shows (the view's height less its header)."""
        return max(self.query_one(RowsView).size.height - 1, 1)

    def set_load(self, load: Load) -> None:
        """Loads through ``load`` instead of :meth:`table_load` (before the app runs): the
        demo wraps :meth:`table_load` with failures and latency."""
        self._inner_load = load

    async def table_load(self, cursor: bytes, limit: int,
                         direction: Direction) -> LoadResult[Row]:
        """A page of the table, read in ``asyncio.to_thread`` (off the UI thread) on that
        thread's own connection, counting the rows its query fetched. During a far move's
        ``jump``, a read its query read ahead is answered at once (:meth:`_read_ahead`)."""
        pages = self._preread
        if pages is not None:
            page = pages.pop((cursor, limit, direction), None)
            if page is not None:
                self.preread_answers += 1
                return page
        gate = self._read_gate()
        if gate is not None:
            await gate.wait()
        result = await asyncio.to_thread(self.load_rows, cursor, limit, direction)
        self.fetched += len(result.items) + (
            1 if direction is Direction.BACKWARD and not result.end_of_source else 0)
        return result

    def _read_gate(self) -> Optional[asyncio.Event]:
        """While a keypress's screen is made from rows already held (a line or a page within
        the prefetch), a read it started (the next prefetch) waits for that screen's paint,
        HOLD_S at most: started at once, its thread took the interpreter from the UI thread
        in the middle of the screen (a page's ``set_window`` took 3.4-5.4 ms instead of
        0.05, and its draw waited up to Python's switch interval, 5 ms). A read the screen
        needs (a far move's, rows not held) starts at once. None: read now."""
        if self._pending is None or not self._window_held():
            return None
        if self._reads_gate is None:
            self._reads_gate = asyncio.Event()
            self.set_timer(HOLD_S, self._open_reads)
        return self._reads_gate

    def _open_reads(self) -> None:
        """The reads held for a keypress's screen (:meth:`_read_gate`) go on."""
        gate, self._reads_gate = self._reads_gate, None
        if gate is not None:
            gate.set()

    def _window_held(self) -> bool:
        """The latest view holds every row of the window the table has (whatever is read
        beyond it)."""
        snap, feed = self.snap, self.feed
        if snap is None or feed is None:
            return False
        state = self._feed_state()
        end = state.covered_end if state.end_of_source else None
        need = self.top + self.height if end is None else min(self.top + self.height, end)
        return snap.start <= self.top and snap.start + len(snap.items) >= need

    def load_rows(self, cursor: bytes, limit: int, direction: Direction) -> LoadResult[Row]:
        """A page of the table on the calling thread's own connection (a worker thread)."""
        return self._db().load(cursor, limit, direction)

    def _db(self) -> Table:
        """The table on the calling worker thread's own connection (made at its first use,
        closed when the app ends); after a schema change, the new table on it."""
        local = self._local
        table = self.table
        if getattr(local, "base", None) is not table:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = open_readonly(self._db_path, check_same_thread=False)
                with self._conn_lock:
                    self._worker_conns.append(conn)
                local.conn = conn
            local.base = table
            local.table = table.on(conn)
        t: Table = local.table
        return t

    def _to_db(self, fn: Callable[..., R], *args: Any) -> "asyncio.Future[R]":
        """``fn(*args)`` started now on the database thread (see ``_db_pool``)."""
        future = asyncio.get_running_loop().run_in_executor(self._db_pool, fn, *args)
        self._db_jobs += 1
        future.add_done_callback(self._db_job_done)
        return future

    def _db_job_done(self, _: Any) -> None:
        self._db_jobs -= 1

    async def _in_db(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` on the database thread, awaited: the UI thread goes on answering
        keys meanwhile."""
        return await self._to_db(fn, *args)

    async def on_mount(self) -> None:
        load: Any = self.table_load
        if self._inner_load is not None:
            load = self._inner_load
        # A far window move (go to row, the bottom) reads the cursor before the row in a
        # worker (an OFFSET query from the nearer end) and jumps there, instead of walking.
        self.feed = aio.Feed(load, config=self.config)
        view = self.query_one(RowsView)
        view.focus()
        if view.size.height > 1:   # else the first layout's resize sets the window
            self.feed.set_window(0, self.height)
        self.run_worker(self._watch(), exclusive=False)
        self._polling = True
        self.run_worker(self._poll_work(), group="poll", exit_on_error=False)
        self.set_interval(self.poll_interval, self._poll)
        for name in self.STATE:
            self.watch(self, name, self._state_changed, init=False)
        self._state_changed()

    def _first_look(self) -> Tuple[int, int, int]:
        """The table's rows and the database's versions (on the database thread)."""
        t = self._db()
        return t.count(), t.data_version(), t.schema_version()

    async def _start(self) -> None:
        """The first look at the table, in the poll's worker: its count, the versions the
        poll compares with; then ``--follow`` goes to the bottom."""
        try:
            total, version, schema = await self._in_db(self._first_look)
        except Exception as e:   # noqa: BLE001 (a lock: the next poll looks again)
            self._failed("reading the table", e)
            return
        self.total, self.version, self.schema = total, version, schema
        self.started = True
        self._want_positions()
        if self.start_following and self.query_one(RowsView).size.height > 1:
            self.action_follow()
        self._keep_full()

    async def on_unmount(self) -> None:
        feed, self.feed = self.feed, None   # the timer and the watcher see it gone
        if feed is not None:
            await feed.close(timeout=1)
        for worker in list(self.workers):
            if worker.group in ("count", "rank"):   # in a thread: its connection closes next
                try:
                    await worker.wait()
                except Exception:   # noqa: BLE001 (cancelled or failed: it ended)
                    pass
        # The database thread's query ends within its busy timeout: then its connection
        # closes with the others.
        await asyncio.to_thread(self._db_pool.shutdown, True)
        for conn in [*self._thread_conns.values(), *self._worker_conns]:
            conn.close()

    def resized(self) -> None:
        """The rows view changed size: the window follows."""
        if self.feed is not None:
            self.top = min(self.top, self._last_top())
            self.feed.set_window(self.top, self.height)
            if self.start_following and self.started and not self.feed.following:
                self.start_following = False
                self.action_follow()

    async def _watch(self) -> None:
        assert self.feed is not None
        async for snap in self.feed.changes():
            self._take(snap)

    def _take(self, snap: FeedSnapshot[Row]) -> None:
        """The feed's view ``snap`` is the latest (one taken already, by a far move's
        ``jump``, is not a change)."""
        if not _same_view(snap, self.snap):
            self.snap = snap
        self._follow_top()
        self._keep_full()

    def _lookup(self, find: Callable[[Table], L], cursor_of: Callable[[L], bytes],
                quick: bool = False
                ) -> Tuple["asyncio.Future[L]", "asyncio.Future[Preread]",
                           Optional[Tuple[L, Preread]]]:
        """Starts a far move's query on the database thread: ``find(table)`` (an OFFSET
        query for the cursor, or a key's lookup), whose answer the first future gets as soon
        as it is found; then, on the same thread, the pages the rebuild at that cursor reads
        (:meth:`_read_ahead`), which the second future gets. The UI thread waits for an idle
        database thread to begin the query (:meth:`_wait_begun`). A ``quick`` query (the
        position index's) is waited for, :data:`QUICK_WAIT_S` at most: the third item is
        then its answer and pages, which the move uses at once (:meth:`_far`)."""
        loop = asyncio.get_running_loop()
        found: "asyncio.Future[L]" = loop.create_future()
        begun = threading.Event() if self._db_jobs == 0 else None
        height = self.height
        ready = threading.Event() if quick and self._db_jobs == 0 else None
        answer: List[Tuple[L, Preread]] = []

        def work() -> Preread:
            t = self._db()
            try:
                with t.patient():
                    if begun is not None:
                        begun.set()
                    value = find(t)
            except BaseException as e:
                loop.call_soon_threadsafe(_resolve, found, None, e)
                raise
            loop.call_soon_threadsafe(_resolve, found, value, None)
            read = self._read_ahead(t, cursor_of(value), height)
            if ready is not None:
                answer.append((value, read))
                ready.set()
            return read

        pages = self._to_db(work)
        pages.add_done_callback(self._read_ahead_done)
        if ready is not None and ready.wait(QUICK_WAIT_S):
            # Counted here, before the move's screen: not again when the future is done.
            pages.remove_done_callback(self._read_ahead_done)
            self.fetched += answer[0][1].fetched
            return found, pages, answer[0]
        self._wait_begun(begun)
        return found, pages, None

    def _read_ahead_done(self, pages: "asyncio.Future[Preread]") -> None:
        """A far move's pages read ahead are in (or its query failed: said by the first
        future, see :meth:`_lookup`): the rows their queries fetched are counted."""
        if not pages.cancelled() and pages.exception() is None:
            self.fetched += pages.result().fetched

    async def _pages_read_ahead(self, pages: "asyncio.Future[Preread]") -> Optional[Preread]:
        """The pages a far move's query reads ahead, once read (READ_AHEAD_WAIT_S at most:
        then None, and the loader reads them as any other)."""
        try:
            return await asyncio.wait_for(asyncio.shield(pages), READ_AHEAD_WAIT_S)
        except Exception:   # noqa: BLE001 (late or failed: the loader reads them)
            return None

    def _read_ahead(self, t: Table, cursor: bytes, height: int) -> "Preread":
        """The reads the loader's rebuild at ``cursor`` makes (``jump``: forward from the
        cursor, a page at a time, over the window and the prefetch after it; then backward
        from it over the prefetch before it), made here, right after the cursor's query, on
        the same thread: the rebuild's loads are answered from them inside ``jump``
        (:meth:`table_load`), where each read made in its own thread cost a hand-off and a
        loop turn, one after the other. A read the loader makes otherwise is made as any
        other; a read that fails here is left to the loader (its backoff retries it)."""
        pages: Dict[Tuple[bytes, int, Direction], LoadResult[Row]] = {}
        fetched = 0
        size = self._page_size
        if size <= 0:
            return Preread(pages, 0)
        try:
            for direction, cover in ((Direction.FORWARD, height + self._prefetch),
                                     (Direction.BACKWARD, self._prefetch)):
                at, got = cursor, 0
                while got < cover and (at or direction is Direction.FORWARD):
                    r = t.load(at, size, direction)
                    pages[(at, size, direction)] = r
                    got += len(r.items)
                    fetched += len(r.items) + (
                        1 if direction is Direction.BACKWARD and not r.end_of_source else 0)
                    if r.end_of_source or r.next_cursor == at:
                        break
                    at = r.next_cursor
        except sqlite3.Error:
            pass
        return Preread(pages, fetched)

    def _row_cursor(self, t: Table, n: int, total: int, positions: Optional[Positions]
                    ) -> bytes:
        """The cursor before row ``n`` (from 0) with ``t`` on the database thread: through
        the position index while it is current there (an OFFSET of fewer than its step),
        else an OFFSET query from the nearer end."""
        if positions is not None and n > 0:
            key = positions.cursor_row(t, n - 1)
            if key is not None:
                self.indexed_moves += 1
                return encode_key(key)
        return t.cursor_at(n, total)

    def _want_positions(self) -> None:
        """Reads the position index, in slices on the database thread, unless one is read
        already for the table as the poll last saw it, or being read, or the table is small
        (:data:`._positions.MIN_ROWS`). Called at the first look and after a far move: a
        table that keeps changing is read again only when a person moves far."""
        p = self._positions
        if self.feed is None or self.gone is not None or self._position_build is not None \
                or self.total < MIN_ROWS or \
                (p is not None and p.base is self.table and p.version == self.version):
            return
        build = self._position_build = PositionBuild(self.table, step_for(self.total))
        self.run_worker(self._read_positions(build), group="positions", exit_on_error=False)

    async def _read_positions(self, build: PositionBuild) -> None:
        try:
            while self._position_build is build and self.feed is not None:
                found = await self._in_db(self._position_slice, build)
                if found is not None:
                    self._positions = found
                    self.position_builds += 1
                    return
                if build.abandoned:
                    return
        except Exception:   # noqa: BLE001 (a lock, the table gone: read after a later move)
            pass
        finally:
            if self._position_build is build:
                self._position_build = None

    def _position_slice(self, build: PositionBuild) -> Optional[Positions]:
        """One slice of ``build`` (on the database thread); abandoned when the app's table
        is another one now."""
        t = self._db()
        if self._local.base is not build.base:
            build.abandoned = True
            return None
        return build.slice(t)

    def _cursor_at(self, n: int, total: int) -> bytes:
        """The cursor before row ``n`` (an OFFSET query from the nearer end), waiting for a
        lock as a far move does (on the database thread)."""
        t = self._db()
        with t.patient():
            return t.cursor_at(n, total)

    def _versions(self) -> Tuple[int, int]:
        """``PRAGMA data_version`` and ``schema_version`` (on the database thread)."""
        t = self._db()
        return t.data_version(), t.schema_version()

    def _keep_full(self) -> None:
        """The table ended before the window's end (it shrank, or a key past the last was
        asked for): the window moves up to show its last rows, never an empty screen."""
        if self.feed is None:
            return
        state = self.feed.state
        if state.end_of_source and self.top > 0 and \
                self.top + self.height > state.covered_end:
            top = max(state.covered_end - self.height, 0)
            if top < self.top:
                self.top = top
                self.feed.set_window(top, self.height)

    def _follow_top(self) -> None:
        """While the feed follows the table's end, the loader moves the window: the screen's
        top follows it."""
        feed = self.feed
        self.following = feed is not None and feed.following
        if feed is not None and feed.following:
            state = feed.state
            self.top = state.window_start
            # The rows read to the end are a floor on the count (which may lag behind).
            if state.end_of_source and state.covered_end > self.total:
                self.total = state.covered_end

    def _poll(self) -> None:
        """The poll's timer: a look for other programs' commits, in a worker (one at a
        time)."""
        if self.feed is None or self._polling:
            return
        self._polling = True
        self.run_worker(self._poll_work(), group="poll", exit_on_error=False)

    async def _poll_work(self) -> None:
        try:
            if not self.started:
                await self._start()
            else:
                await self._look()
        finally:
            self._polling = False

    async def _look(self) -> None:
        """Another connection committed: re-read what the view shows, count the rows, rank
        the first shown row again (so the numbers are the table's own), and say a schema
        change. Retries spent (a long lock) are retried by themselves every AUTO_RETRY_S."""
        try:
            v, schema = await self._in_db(self._versions)
        except sqlite3.Error as e:   # a locked database: the next poll tries again
            self.message = failure_message(e, "a look for other programs' commits",
                                           self.table.name)
            return
        if self.feed is None:
            return
        if v == self.version:
            if self._rerank:
                self._rank_top()
            if not self.total_exact:
                self._count()
            self._auto_retry()
            return
        self.version = v
        try:
            if await self._schema_changed(schema):
                return
        except Exception as e:   # noqa: BLE001 (a lock: said; the next commit looks again)
            self._failed("reading the table's schema", e)
            return
        if self.feed is None:
            return
        self.total_exact = False
        self._positions = None   # stale: read again after the next far move
        self._count()
        self.invalidations += 1
        if self._invalidated_at is None:
            self._invalidated_at = time.monotonic()
        if self.append_only:
            # Rows are only added at the end: nothing shown moved, nor its numbers.
            self.feed.appended()
        else:
            self._rerank = True
            self.feed.invalidate()
            self._rank_top()

    def _count(self) -> None:
        """Counts the table's rows in a thread worker (off the UI thread: a count of 10^7
        rows takes half a second), unless a count runs or the last was too recent for its
        cost (see :data:`COUNT_SHARE`): a large table is not counted after every commit."""
        if self._counting or time.monotonic() < self._count_due:
            return
        self._counting = True
        version, name = self.version, self.table.name
        self.run_worker(lambda: self._count_worker(version, name), thread=True,
                        group="count", exit_on_error=False)

    def _thread_conn(self, group: str) -> sqlite3.Connection:
        """The connection of a worker group's own: one worker of the group at a time uses
        it, from its thread."""
        conn = self._thread_conns.get(group)
        if conn is None:
            conn = open_readonly(self._db_path, check_same_thread=False)
            self._thread_conns[group] = conn
        return conn

    def count_rows(self, name: str) -> int:
        """The rows of table ``name``, on the count worker's connection (in its thread)."""
        n: int = self._thread_conn("count").execute(
            f"SELECT count(*) FROM {quote_name(name)}").fetchone()[0]
        return n

    def _count_worker(self, version: int, name: str) -> None:
        t0 = time.monotonic()
        try:
            n: Optional[int] = self.count_rows(name)
        except Exception:   # noqa: BLE001 (a lock, the table gone: the next poll retries)
            n = None
        seconds = time.monotonic() - t0
        try:
            self.call_from_thread(self._counted, n, seconds, version, name)
        except RuntimeError:   # the app has ended meanwhile
            pass

    def _counted(self, n: Optional[int], seconds: float, version: int, name: str) -> None:
        self._counting = False
        self._count_due = time.monotonic() + seconds / COUNT_SHARE
        if n is None or name != self.table.name:
            return
        self.counts += 1
        self.total = n
        # Exact if nothing was committed since the count began; else counted again.
        self.total_exact = version == self.version
        self._keep_full()

    def _auto_retry(self) -> None:
        feed = self.feed
        if feed is None or self.gone is not None or not feed.needs_retry:
            return
        now = time.monotonic()
        if now - self._auto_retry_at >= AUTO_RETRY_S:
            self._auto_retry_at = now
            feed.retry()

    def _rank_top(self) -> None:
        """Ranks the first shown row in the table as it is now (a count of the keys before
        it), in a thread worker off the UI thread (at row 5,000,000 the count reads that
        many keys); :meth:`_ranked` renumbers the view when it numbers the row otherwise
        (rows were inserted or deleted before it)."""
        feed, snap = self.feed, self.snap
        if feed is None or snap is None or self.gone is not None or self._ranking:
            return
        idx = self.top - snap.start
        if not 0 <= idx < len(snap.items):
            return   # not loaded: ranked at a later poll
        self._rerank = False
        self._ranking = True
        table, key = self.table, tuple(snap.items[idx][:self.table.nkey])
        self.run_worker(lambda: self._rank_worker(table, key), thread=True, group="rank",
                        exit_on_error=False)

    def _rank_worker(self, table: Table, key: Tuple[Any, ...]) -> None:
        try:
            found: Optional[Tuple[bytes, int]] = table.locate_key(
                key, conn=self._thread_conn("rank"))
        except Exception:   # noqa: BLE001 (a lock, the table gone: ranked again later)
            found = None
        try:
            self.call_from_thread(self._ranked, table, key, found)
        except RuntimeError:   # the app has ended meanwhile
            pass

    def _ranked(self, table: Table, key: Tuple[Any, ...],
                found: Optional[Tuple[bytes, int]]) -> None:
        """A rank came back: the view is renumbered if the row is still the first shown
        and its number differs; if the view moved meanwhile, the next poll ranks again."""
        self._ranking = False
        feed, snap = self.feed, self.snap
        if feed is None or snap is None or table is not self.table or self.gone is not None:
            return
        idx = self.top - snap.start
        if found is None or not 0 <= idx < len(snap.items) or \
                tuple(snap.items[idx][:table.nkey]) != key:
            self._rerank = True
            return
        cursor, n = found
        if n == self.top:
            return
        self.top = n
        feed.jump(cursor, n)
        feed.set_window(n, self.height)

    def _reread(self, name: str) -> Optional[Tuple[Table, int]]:
        """Table ``name`` read again (its columns, its key) and its rows, or None when it is
        gone (on the database thread)."""
        t = self._db()
        if not t.exists():
            return None
        table = Table(t.conn, name)
        return table, table.count()

    async def _schema_changed(self, schema: Optional[int] = None) -> bool:
        """Compares the schema's version (read again unless given): on a change, the table
        is read again (its columns, its key) and the change said; a table dropped or renamed
        is said and not shown. Returns whether the view cannot go on as it was."""
        if schema is None:
            schema = (await self._in_db(self._versions))[1]
        if schema == self.schema and self.gone is None:
            return False
        self.schema = schema
        name = self.table.name
        try:
            found = await self._in_db(self._reread, name)
        except NoKeyError as e:
            self._lose(str(e))
            return True
        if found is None:
            self._lose(f"table {name} was dropped or renamed by another program: q to quit")
            return True
        if self.feed is None:
            return True
        table, total = found
        was_gone = self.gone is not None
        self.gone = None
        if table.shape() != self.table.shape() or was_gone:
            old = {c.name for c in self.table.columns}
            new = {c.name for c in table.columns}
            self.table = table
            self.message = ("the table is back" if was_gone else
                            "the table's columns changed" + _diff(old, new)) + ": showing it"
            self.total = total
            self.total_exact = True
            top = min(self.top, max(self.total - self.height, 0))
            cursor = await self._in_db(self._cursor_at, top, total)
            if self.feed is None:
                return True
            self.top = top
            self.feed.jump(cursor, self.top)
            self.feed.set_window(self.top, self.height)
            return True
        return False

    def _lose(self, why: str) -> None:
        self.gone = why
        self.message = why
        self.notify(inert(why), severity="error", timeout=10)

    # ---- what the screen shows ----

    def window_rows(self) -> List[Optional[Row]]:
        """The window's rows from the current view: None where a row is not loaded (yet)."""
        snap, h = self.snap, self.height
        if snap is None:
            return [None] * h
        items = snap.items
        first = self.top - snap.start
        out: List[Optional[Row]] = [None] * min(max(-first, 0), h)
        out.extend(items[max(first, 0):max(first + h, 0)])
        out.extend([None] * (h - len(out)))
        return out

    def is_fresh(self) -> bool:
        """The view is settled (nothing read, nothing owed) and holds every row of the window
        the table has."""
        snap = self.snap
        if snap is None or not snap.settled or self.feed is None or self.gone is not None \
                or self.moving is not None or not self.started:
            return False
        state = self._feed_state()
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

    def _number_width(self) -> int:
        return max(len(f"{self.top + self.height:,}"), len(f"{self.total:,}"), 1)

    def _strip(self, text: Text) -> Strip:
        return Strip(list(text.render(self.console, end="")))

    def _draw_key(self) -> Tuple[Any, ...]:
        """What the rows view's lines are drawn from: when it is unchanged, so are they (a
        page read past the window, a status change, a repair that read the same rows)."""
        state = self._feed_state() if self.feed is not None else None
        end = state.covered_end if state is not None and state.end_of_source else None
        revalidating = self.snap is not None and self.snap.revalidating
        return (self.table, self.gone, self.top, self.height, self.cursor, self.column,
                self.total, end, revalidating, self.theme, tuple(self.window_rows()))

    def _draw(self) -> Shown:
        """The header and the window's lines, as strips: made once per change of what they
        are drawn from (:meth:`_draw_key`), and painted line by line by :class:`RowsView`.
        Every value and name is inert (:func:`inert_parts`), and widths are terminal
        cells.

        A row's cells and a line's strip are kept from the draw before when what they are
        made from is the same (the row, its number, the columns' widths, the cursor on it,
        the styles), or found made ahead (:meth:`_draw_ahead`): a line or a page move, a
        cursor move, makes no line when its lines were made ahead and the columns' widths
        stay, else the lines that changed."""
        rows = self.window_rows() if self.gone is None else [None] * self.height
        names = [inert(n) for n in self._columns()]
        widths = [cell_len(n) for n in names]
        old_rows = self._row_cache
        row_cache: Dict[Row, Cells] = {}
        cells: List[Optional[Cells]] = []
        table = self.table
        old_lines = self._line_cache
        first = self.top
        for i, row in enumerate(rows):
            if row is None:
                cells.append(None)
                continue
            made = row_cache.get(row) or old_rows.get(row)
            if made is None:
                got = old_lines.get((first + i, -1))
                if got is not None and (got[0] is row or got[0] == row):
                    made = got[1]   # its line was made ahead
                else:
                    made = self._row_cells(row, table)
            row_cache[row] = made
            cells.append(made)
        self._row_cache = row_cache
        widths = [min(max(col), CELL_WIDTH)
                  for col in zip(widths, *(made[1] for made in cells if made is not None))]
        self._spans = []
        x = 0
        for w in widths:
            self._spans.append((x, w))
            x += w + len(SEPARATOR)
        nw = self._number_width()
        head = [cut(n, w).ljust(w + len(cut(n, w)) - cell_len(cut(n, w)))
                for n, w in zip(names, widths)]
        self._header = "#".rjust(nw) + SEPARATOR + SEPARATOR.join(head)
        styles = self._styles()
        state = self._feed_state() if self.feed is not None else None
        stale = (styles["stale"] if self.snap is not None and self.snap.revalidating
                 else Style())
        # What every line is made from besides its row, its number and the cursor: when it
        # changes, no line drawn before is kept (the key of each is then its row, its
        # number and the column cursor on it: hashing this with each was most of a draw).
        common = (tuple(widths), nw, stale, self.table, tuple(styles.items()))
        if common != self._line_common:
            self._line_common = common
            self._line_cache = {}
            self._line_styles = _LineStyles(styles, stale)
        line_styles = self._line_styles
        old_lines = self._line_cache
        line_cache: Dict[Tuple[int, int], Tuple[Row, Cells, Strip]] = {}
        lines: List[Strip] = []
        top, cursor, column, gone = self.top, self.cursor, self.column, self.gone
        for i, made in enumerate(cells):
            pos = top + i
            on_cursor = i == cursor
            if made is None:
                if gone is not None or (state is not None and state.end_of_source
                                        and pos >= state.covered_end):
                    lines.append(Strip([]))
                else:
                    lines.append(self._strip(Text(f"{pos + 1:,}".rjust(nw) + SEPARATOR + "…",
                                                  style=styles["more"], end="")))
                continue
            row = rows[i]
            assert row is not None
            key = (pos, column if on_cursor else -1)
            got = old_lines.get(key)
            if got is not None and (got[0] is row or got[0] == row):
                strip = got[2]
            else:
                strip = self._line(pos, nw, made, widths, line_styles, key[1])
            line_cache[key] = (row, made, strip)
            lines.append(strip)
        # The lines drawn ahead (:meth:`_draw_ahead`) a move may show next are kept.
        h = len(cells)
        for key, got in old_lines.items():
            if top - h <= key[0] < top + 2 * h and key not in line_cache:
                line_cache[key] = got
        self._line_cache = line_cache
        header = (self._header, styles["header"])
        if self._header_strip is None or self._header_strip[0] != header:
            self._header_strip = (header, self._strip(Text(self._header,
                                                           style=styles["header"], end="")))
        return Shown(header=self._header_strip[1],
                     lines=lines, pin=nw + len(SEPARATOR), top=self.top,
                     rows=self._last_top() + self.height, width=cell_len(self._header),
                     cursor=self.cursor, header_style=styles["header"],
                     cursor_style=styles["cursor"])

    def _draw_ahead(self) -> None:
        """Once a keypress's screen is painted (or the screen changed with no keypress
        waiting), makes the lines the next move would show from the rows held, with the
        columns' widths drawn now: a page up and down (and a line each way), and the cursor
        row's line for a line, a page or a cursor move each way. The next move's draw then
        finds them made (unless its rows change the columns' widths); a page move made its
        36 lines in its keypress before (1.4-2.5 ms of a 4-6 ms screen)."""
        self._ahead_due = False
        snap, feed = self.snap, self.feed
        if self._pending is not None or feed is None or snap is None or snap.revalidating or \
                self.gone is not None or self._line_common is None or not self.is_running:
            # While the view is refreshed (another program's commit), its lines are drawn
            # stale and drawn again when the repair lands: made ahead then, not twice.
            return
        try:
            h = self.height
        except NoMatches:
            return
        widths, nw = list(self._line_common[0]), self._line_common[1]
        top, cursor, column, table = self.top, self.cursor, self.column, self.table
        items, start = snap.items, snap.start
        cache, rows, st = self._line_cache, self._row_cache, self._line_styles
        wanted = [(pos, -1) for pos in (*range(top - h, top), *range(top + h, top + 2 * h),
                                        top + cursor)]
        wanted += [(top + cursor + d, column) for d in (-h, -1, 1, h)]
        for pos, col in wanted:
            idx = pos - start
            if not 0 <= idx < len(items):
                continue
            row = items[idx]
            got = cache.get((pos, col))
            if got is not None and (got[0] is row or got[0] == row):
                continue
            made = rows.get(row)
            if made is None:
                made = rows[row] = self._row_cells(row, table)
            cache[pos, col] = (row, made, self._line(pos, nw, made, widths, st, col))

    def _ahead(self) -> None:
        """:meth:`_draw_ahead` after what is queued now (keys pressed meanwhile first)."""
        if not self._ahead_due:
            self._ahead_due = True
            self.call_later(self._draw_ahead)

    def _row_cells(self, row: Row,
                   table: Table) -> Cells:
        """A row's cells as runs of (text, kind) (:func:`cell_parts`), and each cell's
        width in terminal cells, uncut."""
        values = row[table.nkey:]
        if table.key_label == "rowid":
            values = (row[0],) + tuple(values)
        parts = [cell_parts(v) for v in values]
        return parts, [sum(cell_len(t) for t, _ in c) for c in parts]

    def _line(self, pos: int, nw: int,
              made: Cells, widths: List[int],
              st: "_LineStyles", column: int) -> Strip:
        """The line of row number ``pos`` (from 0): its number, then each cell cut or padded
        to its column's width, styled (the column cursor's cell when ``column`` >= 0, the
        cursor row's style over the line), as a strip of segments made here: a cell that
        fits is its runs and a pad, with no rich ``Text`` made and rendered for it (which
        took about 50 µs a line); a cell cut to its column goes through :func:`cell_text`."""
        on_cursor = column >= 0
        styles = st.styles
        segments: List[Segment] = []
        # Runs are joined into one segment where a rich Text of the line would render one:
        # the stretches no run's or cell's style covers (the number, the separators, the
        # pads, text of no style), so the screen, and its snapshots, are as they were.
        run: List[str] = [f"{pos + 1:,}".rjust(nw) + SEPARATOR]
        run_key: Any = None
        run_style = base = st.get(None, False, on_cursor)
        length = nw + len(SEPARATOR)

        def piece(text: str, style: Style, key: Any) -> None:
            nonlocal run, run_key, run_style
            if key == run_key:   # a styled run's key is its own: never equal
                run.append(text)
                return
            if run:
                segments.append(Segment("".join(run), run_style))
            run, run_key, run_style = [text], key, style

        for j, (parts, full, w) in enumerate(zip(made[0], made[1], widths)):
            if j:
                piece(SEPARATOR, base, None)
                length += len(SEPARATOR)
            length += w
            is_cell = j == column and bool(styles["cell"])
            plain: Any = ("cell", j) if is_cell else None
            if full <= w:
                for k, (text, kind) in enumerate(parts):
                    if text:
                        piece(text, st.get(kind, is_cell, on_cursor),
                              (j, k) if styles.get(kind) else plain)
                if full < w:
                    piece(" " * (w - full), st.get(None, is_cell, on_cursor), plain)
                continue
            cut_text = cell_text(parts, w, styles)
            if is_cell:
                cut_text.stylize(styles["cell"])
            under = st.get(None, False, False)
            over = styles["cursor"] if on_cursor else None
            for k, seg in enumerate(cut_text.render(self.console, end="")):
                style = under + seg.style if seg.style else under
                piece(seg.text, style + over if over else style,
                      (j, "cut", k) if seg.style else None)
        if not segments and not (on_cursor and styles["cursor"]):
            # A line with no style but its base: rich renders it with no style at all.
            segments.append(Segment("".join(run), run_style or None))
        else:
            segments.append(Segment("".join(run), run_style))
        return Strip(segments, length)

    def header_text(self) -> str:
        return self._header

    @property
    def cursor_style(self) -> Style:
        """The cursor row's style, as last drawn."""
        return self.shown.cursor_style if self.shown is not None else Style()

    def _styles(self) -> Dict[str, Style]:
        try:
            styles = dict(self.query_one(RowsView).styles_for())
        except NoMatches:
            styles = {"header": Style(bold=True, reverse=True), "stale": Style(dim=True),
                      "cursor": Style(reverse=True), "cell": Style(underline=True),
                      **CELL_STYLES}
        styles["text"] = Style()
        return styles

    def pinned_cells(self) -> int:
        """The cells at the left that do not scroll sideways: the row numbers."""
        return self.shown.pin if self.shown is not None else 0

    def scrolled_to(self, top: int) -> None:
        """The rows view was scrolled (its scrollbar): the window moves there."""
        self._begin("scrollbar")
        self._guarded("scrolling", lambda: self._scroll_to(top))

    def line_strip(self, i: int) -> Strip:
        """The window's line ``i`` as last drawn."""
        lines = self.shown.lines if self.shown is not None else []
        return lines[i] if i < len(lines) else Strip([])

    def status_text(self) -> str:
        feed = self.feed
        if feed is None:
            return "starting"
        state = self._feed_state()
        stats = feed.stats()
        last = min(self.top + self.height, self.total)
        if self.gone is not None:
            parts = ["no table"]
        elif last <= self.top:
            parts = ["no rows" if self.total == 0 else
                     f"past the last row (of {self.total:,})"]
        else:
            parts = [f"rows {self.top + 1:,}–{last:,} of {self._total_text()}"]
        if self.following:
            parts.append("following")
        if self.is_fresh():
            parts.append("fresh")
        elif self.gone is not None:
            pass
        elif state.revalidating:
            parts.append("refreshing")
        else:
            parts.append("loading")
        parts.append(f"{state.outstanding_reads} {_plural(state.outstanding_reads, 'read')} "
                     "in flight")
        parts.append(f"{stats.failed_own} {_plural(stats.failed_own, 'failure')}")
        parts.append("waiting for: " + self.waiting_for())
        status = " · ".join(parts)
        # The message first: at 80 columns the line's end is cut off.
        return f"{inert(self.message)} · {status}" if self.message else status

    def _total_text(self) -> str:
        return f"{self.total:,}" if self.total_exact else f"~{self.total:,}"

    def waiting_for(self) -> str:
        """What the loader waits for, in words: the loader's own ``explain()`` when it has
        one, else read from its state."""
        feed = self.feed
        assert feed is not None
        # What only a person can end comes first: the loader's words do not say to press r.
        problem = self.snap.problem if self.snap is not None else None
        if problem is not None or feed.needs_retry:
            reason = problem.reason if problem is not None else "retries_spent"
            return {"retries_spent": "you: retries spent, press r (retried by itself "
                                     f"every {AUTO_RETRY_S:g} s)",
                    "cursor_stalled": "you: a load stalled, press r",
                    "bad_load_result": "you: a load is broken, press r"}[reason]
        explain = getattr(feed, "explain", None)
        if callable(explain):
            try:
                text = str(explain()).strip()
                if text:
                    first = text.splitlines()[0]
                    # The loader waits for nothing when it is quiescent.
                    if first == "quiescent":
                        return "nothing"
                    if first.lower().startswith("waiting for "):
                        first = first[len("waiting for "):]
                    return first
            except Exception:
                pass
        state = self._feed_state()
        if state.failure is Failure.OWN:
            return "a retry after a failed read (backoff)"
        if state.outstanding_reads:
            what = "a repair's reads" if state.revalidating else "page reads"
            return f"{what} ({state.outstanding_reads})"
        if state.revalidating:
            return "a repair to start"
        return "nothing"

    def _state_changed(self) -> None:
        """A state attribute changed (its watcher, for each of ``STATE``): the screen
        follows once for the changes made in the same turn, after the current message."""
        if not self._following_state:
            self._following_state = True
            self.call_next(self._follow_state)

    def _feed_state(self) -> Any:
        """The loader's state: during a pass of :meth:`_follow_state`, as read at its start
        (each read crosses into the loader under the feed's lock; a pass looked at it about
        eight times)."""
        state = self._pass_state
        if state is None:
            assert self.feed is not None
            state = self.feed.state
        return state

    def _follow_state(self) -> None:
        """Makes what the screen shows from the state: the title, the status line and the
        rows view's lines (drawn again only when what they are drawn from changed), which
        the widgets are bound to. Records a keypress's cost once the screen it asked for is
        fresh, after its paint."""
        try:
            if not self.is_running or self.feed is None:
                return
            self._pass_state = self.feed.state
            self.cursor = min(max(self.cursor, 0), max(self._shown() - 1, 0))
            self.column = min(max(self.column, 0), max(len(self._columns()) - 1, 0))
            fresh = self.is_fresh()
            if fresh and self._invalidated_at is not None:
                self.refresh_seconds.append(time.monotonic() - self._invalidated_at)
                self._invalidated_at = None
            pending = self._pending
            if pending is not None and not fresh:
                # The screen waits for reads: none of them waits for the screen.
                self._open_reads()
                wait = pending[1] + HOLD_S - time.perf_counter()
                if wait > 0:   # the keypress's screen waits for its rows (HOLD_S)
                    if self._hold_timer is None:
                        self._hold_timer = self.set_timer(wait, self._hold_over)
                    return
            # The screen shows the state now: a paint held since the prompt closed goes
            # with it (see :meth:`_hold_screen`).
            self._release_screen()
            # The prompt's place: with a row number's move, closed in the frame that shows its
            # rows.
            self._show_prompt(self.asking is not None)
            changed = False
            title = inert(
                f"{self.label} · {self._total_text()} {_plural(self.total, 'row')} by "
                f"{self.table.key_label} ({', '.join(self.table.key)})")
            status = inert(self.status_text())
            if (title, status) != (self.title_line, self.status_line):
                self.title_line, self.status_line = title, status
                changed = True
            key = self._draw_key()
            if key != self._drawn:
                self._drawn = key
                self.shown = self._draw()
                changed = True
            if changed:
                self._unpainted = True
            if fresh and pending is not None and not self._fresh_pending:
                self._fresh_pending = True
                if changed:
                    self._paint_now()
                self.call_after_refresh(self._after_refresh, 3)
            if self._pending is None:
                self._ahead()
        except NoMatches:   # not composed yet, or being torn down
            pass
        finally:
            self._following_state = False
            self._pass_state = None

    def _paint_now(self) -> None:
        """A keypress's fresh screen is painted now, not at Textual's next frame tick:
        Textual paints at most 60 frames a second, on a fixed grid, so a screen made a few
        ms after the last frame (the prefetch's status, say) waited up to 1/60 s for its
        frame. The widgets that changed hand their repaints to the screen at once (they
        did at their next idle), and the screen's update runs after them in its queue.
        Once per keypress: the cap holds for everything else."""
        screen = self.screen
        view = self.query_one(RowsView)
        widgets: List[Widget] = [view, self.query_one("#title", StateLine),
                                 self.query_one("#status", StateLine),
                                 self.query_one("#bottom")]
        widgets += [w for w in (view._vertical_scrollbar, view._horizontal_scrollbar)
                    if w is not None]
        for widget in widgets:
            widget._check_refresh()
        screen.call_later(screen._on_timer_update)

    def _after_refresh(self, tries: int) -> None:
        """After a refresh: with nothing left to paint (or nothing painted in ``tries``
        refreshes: a widget hidden), the screen is the fresh one."""
        if not self._unpainted or tries <= 0:
            self._painted()
        elif self._fresh_pending:
            self.call_after_refresh(self._after_refresh, tries - 1)

    def _hold_over(self) -> None:
        self._hold_timer = None
        self._state_changed()

    def _show_prompt(self, shown: bool) -> None:
        """The bottom row shows the prompt (``shown``) or the status line: the row holds
        both, one under the other, and is scrolled to the one shown. Neither changes size,
        so the screen is not laid out again when the prompt opens or closes (a change of
        their ``display`` was a layout of the whole screen, 30-90 ms of a row number's
        screen on a busy machine); a scroll of the row is reflowed by Textual's fast path for
        scrolls (the visible widgets placed again, none resized), in the frame it shows
        in."""
        bottom = self.query_one("#bottom")
        y = 1 if shown else 0
        if round(bottom.scroll_y) != y:
            bottom.scroll_to(y=y, animate=False, force=True, immediate=True)
            # The screen's reflow of the scroll (Textual's fast path: the visible widgets
            # placed again, none resized) is asked for now, not at the row's next idle,
            # which came after the screen's next frame: that frame showed the row as it was.
            bottom._check_refresh()

    def _hold_screen(self) -> None:
        """Holds the screen's paints (a Textual batch) from the prompt's Enter until the
        screen follows the state again (the row's rows read, or HOLD_S): the focus leaving
        the prompt, painted at once, was a frame of its own before the rows' frame (a
        repaint of the whole screen, and the next frame up to 1/60 s later)."""
        if not self._screen_held:
            self._screen_held = True
            self._begin_batch()
            # Released by the state's next pass; this is a bound should none come.
            self.set_timer(2 * HOLD_S, self._release_screen)

    def _release_screen(self) -> None:
        if self._screen_held:
            self._screen_held = False
            self._end_batch()
            try:
                self.screen.check_idle()
            except Exception:   # noqa: BLE001 (no screen: the app is ending)
                pass

    def _painted(self) -> None:
        """The screen is painting what :meth:`_follow_state` made (the rows view's first
        line or a state line is rendered), or there was nothing to paint: if a keypress
        waited for a fresh screen, this is it."""
        self._unpainted = False
        if self._reads_gate is not None and (self._pending is None or self._fresh_pending):
            self._open_reads()
        if self._fresh_pending and self._pending is not None and self.feed is not None:
            action, t0, read0, fetched0 = self._pending
            self.samples.append(KeySample(action, time.perf_counter() - t0,
                                          self.feed.stats().items_read - read0,
                                          self.fetched - fetched0))
            self._pending = None
            self._fresh_pending = False
            self._ahead()

    def schema_text(self) -> str:
        """The table's schema, inert: its columns with their declared types (the key's
        marked), the order, and its CREATE statement as SQLite keeps it."""
        t = self.table
        cols = "\n".join(f"  {c.name} {c.declared}".rstrip() +
                         (" (key)" if c.name in t.key else "") for c in t.columns)
        text = (f"The table {t.name}: {len(t.columns)} "
                f"{_plural(len(t.columns), 'column')}, in the order of its {t.key_label} "
                f"({', '.join(t.key)})\n{cols}\n\n{t.sql}")
        return "\n".join(inert(line) for line in text.splitlines())

    def help_text(self) -> str:
        """The help screen: the keys, then the table's schema, inert."""
        return "\n".join(inert(line) for line in HELP.splitlines()) + "\n\n" + \
            self.schema_text()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_text()))

    def action_schema(self) -> None:
        self.push_screen(SchemaScreen(self.schema_text()))

    def _row_values(self, i: int) -> Optional[List[Any]]:
        """The values of the window's row ``i`` as the columns show them, or None when it is
        not loaded."""
        rows = self.window_rows() if self.gone is None else []
        if not 0 <= i < len(rows) or rows[i] is None:
            return None
        row = rows[i]
        assert row is not None
        values = list(row[self.table.nkey:])
        if self.table.key_label == "rowid":
            values = [row[0]] + values
        return values

    def action_copy_cell(self) -> None:
        """``c``: the value under the cursor (the cursor row, the column cursor's column)
        to the clipboard, as it is (a BLOB in hex, NULL as nothing)."""
        values = self._row_values(self.cursor)
        if values is None or not 0 <= self.column < len(values):
            return
        self.copy_to_clipboard(_copied(values[self.column]))
        name = self._columns()[self.column]
        self.notify(inert(f"{name} of row {self.top + self.cursor + 1:,} is copied"),
                    timeout=3)

    def action_copy_row(self) -> None:
        """``y``: the cursor row to the clipboard, tab-separated."""
        values = self._row_values(self.cursor)
        if values is None:
            return
        self.copy_to_clipboard("\t".join(_copied(v) for v in values))
        self.notify(f"row {self.top + self.cursor + 1:,} is copied (tab-separated)",
                    timeout=3)

    def action_column(self, delta: int) -> None:
        """Tab / shift+Tab: the column cursor moves; the view scrolls sideways to show its
        column."""
        n = len(self._columns())
        if not n:
            return
        self.column = (self.column + delta) % n
        if self.column < len(self._spans):
            start, width = self._spans[self.column]
            view = self.query_one(RowsView)
            room = max(view.size.width - self.pinned_cells() - 1, 1)
            x = round(view.scroll_x)
            if start < x:
                view.scroll_to(x=start, animate=False)
            elif start + width > x + room:
                view.scroll_to(x=min(start + width - room, view.max_scroll_x), animate=False)

    def action_tables(self) -> None:
        """``t``: the database's tables and views, read in a worker, to pick one."""
        self.run_worker(self._pick_table(), group="db", exit_on_error=False)

    def _names(self) -> List[Tuple[str, str]]:
        """The tables and views, with their kind (on the database thread)."""
        conn = self._db().conn
        views = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'view' ORDER BY name")]
        return [(n, "table") for n in table_names(conn)] + [(v, "view") for v in views]

    async def _pick_table(self) -> None:
        try:
            names = await self._in_db(self._names)
        except Exception as e:   # noqa: BLE001 (a lock: said)
            self._failed("listing the tables", e)
            return
        self.push_screen(TablePicker(names, self.table.name), self._picked)

    def _picked(self, name: Optional[str]) -> None:
        if name is not None and name != self.table.name:
            self.run_worker(self._open_table(name), group="db", exit_on_error=False)

    def _open(self, name: str) -> Tuple[Table, int]:
        """Table ``name`` read (its columns, its key) and its rows (on the database
        thread); NoKeyError says why a view or a keyless table cannot be scrolled."""
        table = Table(self._db().conn, name)
        return table, table.count()

    async def _open_table(self, name: str) -> None:
        """Shows table ``name`` from its first row; a view, or a table without a usable
        key, is refused with a message saying why, and the table shown stays."""
        try:
            table, total = await self._in_db(self._open, name)
        except NoKeyError as e:
            self.message = str(e)
            self.notify(inert(self.message), severity="warning", timeout=8)
            return
        except Exception as e:   # noqa: BLE001 (a lock: said)
            self._failed(f"opening {name}", e)
            return
        if self.feed is None:
            return
        self.table = table
        self.label = f"{self._db_name}: {name}"
        self.total, self.total_exact = total, True
        self.gone, self.message = None, ""
        self.moving = None
        self.top = self.cursor = self.column = 0
        self.query_one(RowsView).scroll_to(x=0, animate=False)
        self.feed.jump(b"", 0)
        self.feed.set_window(0, self.height)

    def action_show_row(self) -> None:
        """Shows the cursor row whole."""
        i = self.cursor
        values = self._row_values(i)
        if values is None:
            return
        styles = self._styles()
        body = Text(end="")
        for name, value in zip(self._columns(), values):
            body.append(inert(name), Style(bold=True))
            body.append("\n")
            body.append_text(whole_value(value, styles))
            body.append("\n\n")
        copy = "\t".join(_copied(v) for v in values)
        self.push_screen(RowScreen(inert(f"row {self.top + i + 1:,} of {self.table.name}: "
                                         "Esc closes, c copies"), body, copy))

    # ---- moves ----

    def _begin(self, action: str) -> None:
        """A keypress's move begins: its cost is recorded once its screen is fresh (looked
        at after its changes, even if it changes nothing)."""
        assert self.feed is not None
        self._pending = (action, time.perf_counter(), self.feed.stats().items_read,
                         self.fetched)
        self._fresh_pending = False
        self.message = ""
        self._state_changed()

    def _last_top(self) -> int:
        total = self.total
        state = self._feed_state() if self.feed is not None else None
        if state is not None and state.end_of_source:
            total = state.covered_end
        return max(total - self.height, 0)

    @property
    def base_top(self) -> int:
        """Where a relative move starts: the top, or the one a far move is going to."""
        return self._move_top if self.moving is not None else self.top

    def _near(self, top: int) -> bool:
        """The window at ``top`` is within a prefetch of the rows held: the loader reads
        what is missing from the cursors it has."""
        snap = self.snap
        if snap is None or not snap.items:
            return False
        reach = self.config.prefetch_distance or 0
        return snap.start - reach <= top and top + self.height <= snap.start + len(
            snap.items) + reach

    def _scroll_to(self, top: int, what: str = "scrolling",
                   then: Optional[Callable[[], None]] = None) -> None:
        """Moves the window to ``top``: near, at once; far, after its cursor is read in a
        worker (:meth:`_far`)."""
        assert self.feed is not None
        if self.gone is not None:
            return
        top = min(max(top, 0), self._last_top())
        if not self._near(top):
            self._far(top, what, then)
            return
        self.moving = None
        self.top = top
        self.feed.set_window(self.top, self.height)
        if then is not None:
            then()

    def _far(self, top: int, what: str, then: Optional[Callable[[], None]] = None) -> None:
        """A far move: the cursor before row ``top`` is read in a worker (an OFFSET query
        from the nearer end, on the database thread), then the view is rebuilt there
        (``jump``), so it reads about the window whatever the distance and the row numbers
        stay the table's own. Keys are answered meanwhile; a later move supersedes it."""
        if top == 0:   # the table's start: its cursor is b"", no query to wait for
            self._jump(b"", 0)
            if then is not None:
                then()
            return
        token = object()
        self.moving, self._move_top = token, top
        # The query starts now, not when the worker first runs (a loop turn later, maybe
        # after a paint), and begins before the UI thread goes on (see START_WAIT_S).
        total = self.total
        positions = self._positions if self._positions is not None and \
            self._positions.base is self.table else None
        found, pages, ready = self._lookup(
            lambda t: self._row_cursor(t, top, total, positions), lambda c: c,
            quick=positions is not None)
        if ready is not None:
            # Found through the position index and read ahead while the UI thread waited:
            # the view is rebuilt now, before the prompt closes, not a loop turn (and the
            # prompt's restyle) later in the worker.
            self._land(ready[0], top, ready[1], then)
            return
        self.run_worker(self._far_work(token, found, pages, top, what, then,
                                       (self.table, self.invalidations)),
                        group="move", exit_on_error=False)

    @staticmethod
    def _wait_begun(begun: Optional[threading.Event]) -> None:
        """Waits (START_WAIT_S at most) for an idle database thread to begin a far move's
        query: the interpreter is handed to it now, and its query runs (without the
        interpreter) while the UI thread closes the prompt. Without the wait, the thread
        took the interpreter only once the UI thread was idle, 0.7-3.5 ms later."""
        if begun is not None:
            begun.wait(START_WAIT_S)

    async def _far_work(self, token: object, found: "asyncio.Future[bytes]",
                        pages: "asyncio.Future[Preread]", top: int, what: str,
                        then: Optional[Callable[[], None]], since: Tuple[Table, int]) -> None:
        try:
            cursor = await found
        except Exception as e:   # noqa: BLE001 (every failure is said, none ends the app)
            if self.moving is token:
                await self._move_failed(what, e)
            return
        if self.moving is not token:
            return
        read = await self._pages_read_ahead(pages)
        if self.moving is not token:
            return
        self._land(cursor, top, read if since == (self.table, self.invalidations) else None,
                   then)

    def _land(self, cursor: bytes, top: int, pages: "Optional[Preread]",
              then: Optional[Callable[[], None]]) -> None:
        """A far move's end, its cursor found: the view rebuilt there (:meth:`_jump`),
        ``then`` run, and the position index read again if a commit made it stale."""
        self._jump(cursor, top, pages)
        if then is not None:
            then()
        self._want_positions()

    def _jump(self, cursor: bytes, top: int, pages: "Optional[Preread]" = None) -> None:
        """The far move's cursor is read: the view is rebuilt there. ``pages``: the pages
        its query read ahead (:meth:`_read_ahead`), if no commit was seen since (the poll's
        invalidation, a table read again): the rebuild's loads are answered from them inside
        this call."""
        self.moving = None
        if self.feed is None or self.gone is not None:
            return
        self.top = top
        self._preread = pages.pages if pages is not None else None
        answered = self.preread_answers
        try:
            self.feed.jump(cursor, top)
            self.feed.set_window(top, self.height)
        finally:
            self._preread = None
        if self.preread_answers != answered:
            # The rebuild was answered from the pages read ahead: the view is new now. The
            # screen takes it here, not a loop turn later from the feed's changes, which
            # came after the prompt's focus change (Textual's restyles, 1-2 ms).
            self._take(self.feed.snapshot())

    async def _move_failed(self, what: str, e: BaseException) -> None:
        """A far move's query failed: a table gone is said as such (looked at on the
        database thread), any other failure as a message."""
        self.moving = None
        self._pending = None
        if isinstance(e, sqlite3.Error):
            try:
                if not await self._in_db(lambda: self._db().exists()):
                    self._lose(f"table {self.table.name} was dropped or renamed by another "
                               "program: q to quit")
                    return
            except sqlite3.Error:
                pass
        self._failed(what, e)

    def go_to(self, n: int, what: str = "scrolling",
              then: Optional[Callable[[], None]] = None) -> None:
        """Puts row ``n`` (from 0) at the top, the cursor on it (near the end, the last rows
        and the cursor on row ``n``): a window move (see :meth:`_scroll_to`)."""
        assert self.feed is not None
        top = min(max(n, 0), max(self.total - self.height, 0))
        self.cursor = max(n, 0) - top
        self._scroll_to(top, what, then)

    def go_to_key(self, text: str) -> None:
        """Puts the first row whose key is at least ``text`` at the top; past the last row,
        the last rows. The key is parsed here (a ValueError says why it does not), and
        looked up in a worker."""
        assert self.feed is not None
        values = self.table.parse_key(text)
        token = object()
        self.moving, self._move_top = token, self.top
        # Started now, as a far move's.
        found, pages, _ = self._lookup(lambda t: t.locate_key(values), lambda f: f[0])
        self.run_worker(self._key_work(token, found, pages, (self.table, self.invalidations)),
                        group="move", exit_on_error=False)

    async def _key_work(self, token: object, found: "asyncio.Future[Tuple[bytes, int]]",
                        pages: "asyncio.Future[Preread]", since: Tuple[Table, int]) -> None:
        try:
            cursor, n = await found
        except Exception as e:   # noqa: BLE001 (every failure is said, none ends the app)
            if self.moving is token:
                await self._move_failed("going to a key", e)
            return
        if self.moving is not token:
            return
        if n > max(self.total - self.height, 0):
            self.moving = None
            self.go_to(n, "going to a key")
            return
        read = await self._pages_read_ahead(pages)
        if self.moving is not token:
            return
        self.cursor = 0
        self._jump(cursor, n, read if since == (self.table, self.invalidations) else None)

    def _guarded(self, what: str, move: Callable[[], object]) -> None:
        """Runs a move; a failure is a message on the status line (and a notification),
        never a crash."""
        try:
            move()
        except Exception as e:   # noqa: BLE001 (every failure is said, none ends the app)
            self._pending = None
            self._failed(what, e)

    def _failed(self, what: str, e: BaseException) -> None:
        self.message = failure_message(e, what, self.table.name)
        self.notify(inert(self.message), severity="error", timeout=6)

    def action_cursor(self, delta: int) -> None:
        """↓ / ↑: the cursor a row down / up; past the window's edge the view scrolls a line
        and the cursor stays on the edge's line."""
        new = self.cursor + delta
        if 0 <= new < self._shown():
            self._begin("cursor")
            self.cursor = new
            return
        self.action_line(delta)

    def action_line(self, delta: int) -> None:
        """ctrl+e / ctrl+y and the wheel: the view a line down / up (the cursor keeps its
        line on screen)."""
        self._begin("line")
        self._guarded("scrolling", lambda: self._scroll_to(self.base_top + delta))

    def action_page(self, delta: int) -> None:
        """A page down / up; at the table's end (its start) the cursor goes to the last
        (the first) row."""
        self._begin("page")
        if self.base_top == (self._last_top() if delta > 0 else 0):
            self.cursor = self.height - 1 if delta > 0 else 0
        self._guarded("scrolling",
                      lambda: self._scroll_to(self.base_top + delta * self.height))

    def _shown(self) -> int:
        """The rows the window shows: fewer than its height at the table's end."""
        end = self.total
        state = self._feed_state() if self.feed is not None else None
        if state is not None and state.end_of_source:
            end = state.covered_end
        return max(min(self.height, end - self.top), 0)

    def action_top(self) -> None:
        self._begin("top")
        self._guarded("going to the top", lambda: self.go_to(0, "going to the top"))

    def action_bottom(self) -> None:
        self._begin("bottom")

        # With the total as last counted: no count(*) of a large table on a keypress.
        self._guarded("going to the bottom",
                      lambda: self.go_to(self.total, "going to the bottom"))

    def action_follow(self) -> None:
        """``F``, as in ``less``: to the bottom, and stay there as rows are added (the
        loader pins the window to the table's end). Scrolling up stops following; scrolling
        back to the bottom follows again."""
        if self.feed is None or not self.started:
            return
        self._begin("follow")

        def pin() -> None:
            if self.feed is not None:
                self.feed.follow()
                self._follow_top()
        self._guarded("following", lambda: self.go_to(self.total, "going to the bottom", pin))

    def action_retry(self) -> None:
        if self.feed is None:
            return
        if self.gone is not None:
            # The table may be back: read the schema again.
            self.run_worker(self._read_again(), group="poll", exit_on_error=False)
            return
        self.message = ""
        self.feed.retry()

    async def _read_again(self) -> None:
        try:
            await self._schema_changed()
        except Exception as e:   # noqa: BLE001 (every failure is said, none ends the app)
            self._failed("reading the table again", e)

    @property
    def typed(self) -> str:
        """What is typed in the prompt."""
        return self.query_one(Prompt).value

    def action_ask(self, kind: str) -> None:
        """Opens the prompt in the status line's place for a row number or a key, and gives
        it the focus: the keys typed go there (not to the bindings) until Enter or Esc."""
        self.asking = kind
        what = ("row number (1 is the first)" if kind == "row"
                else f"key ({', '.join(self.table.key)})")
        label = inert(f"go to {what}: ")
        ask_label = self.query_one("#ask-label", Static)
        if label != self._ask_label:   # its width follows the text: a layout when it changes
            self._ask_label = label
            ask_label.update(label)
        prompt = self.query_one(Prompt)
        prompt.value = ""
        prompt.placeholder = "Enter to go, Esc to cancel"
        prompt.can_focus = True
        # At once, not after a refresh (focus() would wait): the keys typed right after
        # reach the prompt, none is lost.
        self.screen.set_focus(prompt)

    def end_ask(self) -> None:
        """Closes the prompt; the rows view has the focus again."""
        self.asking = None
        self.screen.set_focus(self.query_one(RowsView))
        # Closed, it is scrolled out of the bottom row but still shown: not in the focus
        # chain.
        self.query_one(Prompt).can_focus = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit_prompt(event.value)

    def _submit_prompt(self, value: str) -> None:
        kind, text = self.asking, value.strip()
        self._hold_screen()
        if kind is not None and text:
            self._submit(kind, text)   # first: a far move's query starts now
        self.end_ask()

    def prompt_key(self, event: Key) -> bool:
        """A key the rows view got: ':' or '/' opens the prompt; while it is open, a key
        typed before the focus reached it (typed fast, right after ':') goes to it, in
        order. False for any other key."""
        # Here rather than as bindings: the keys typed right after are taken in order, so
        # none is lost while a binding's action is pending.
        if self.asking is None:
            if event.character in (":", "/"):
                self.action_ask("row" if event.character == ":" else "key")
                return True
            return False
        prompt = self.query_one(Prompt)
        if event.key == "escape":
            self.end_ask()
        elif event.key == "enter":
            self._submit_prompt(prompt.value)
        elif event.key == "backspace":
            prompt.action_delete_left()
        elif event.character is not None and event.is_printable:
            prompt.insert_text_at_cursor(event.character)
        return True

    def _submit(self, kind: str, text: str) -> None:
        if self.gone is not None:
            return
        if kind == "row":
            try:
                n = int(text.replace(",", "").replace("_", ""))
            except ValueError:
                self.message = f"not a row number: {text!r}"
                return
            self._begin("go to row")
            what = f"going to row {n:,}"
            self._guarded(what, lambda: self.go_to(n - 1, what))
        else:
            self._begin("go to key")
            self._guarded("going to a key", lambda: self.go_to_key(text))


def _resolve(future: "asyncio.Future[Any]", value: Any, error: Optional[BaseException]
             ) -> None:
    """Gives ``future`` its value (or ``error``), unless it was cancelled meanwhile."""
    if not future.done():
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


def _same_view(a: FeedSnapshot[Row], b: Optional[FeedSnapshot[Row]]) -> bool:
    """Two snapshots of the same view and state: the same rows (the same objects), at the
    same place, with the same flags."""
    return b is not None and (a.start, a.revalidating, a.reads_in_flight, a.failed, a.settled,
                              a.problem, len(a.items)) == (
        b.start, b.revalidating, b.reads_in_flight, b.failed, b.settled, b.problem,
        len(b.items)) and all(x is y for x, y in zip(a.items, b.items))


def _copied(value: Any) -> str:
    """A value as copied: as it is, a BLOB in hex, NULL as nothing."""
    return "" if value is None else value.hex() if isinstance(value, bytes) else str(value)


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _diff(old: "set[str]", new: "set[str]") -> str:
    gone, added = sorted(old - new), sorted(new - old)
    said = ([f"gone: {', '.join(gone)}"] if gone else []) + (
        [f"new: {', '.join(added)}"] if added else [])
    return f" ({'; '.join(said)})" if said else ""


def failure_message(e: BaseException, what: str, table: str) -> str:
    """A failure in words, with what to do."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    if isinstance(e, ValueError) and not isinstance(e, sqlite3.Error):
        return text    # a key typed that does not parse: the message says why
    if isinstance(e, sqlite3.OperationalError):
        if "locked" in text or "busy" in text:
            return (f"{what}: the database is locked by another program (waited "
                    f"{MOVE_BUSY_S:g} s): try again when its write is done")
        if "no such table" in text:
            return f"{what}: table {table} was dropped or renamed by another program"
        if "no such column" in text:
            return f"{what}: the table's columns changed ({text}): press r"
    return f"{what} failed: {text}"
