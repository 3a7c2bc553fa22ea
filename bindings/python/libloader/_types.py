"""Plain Python values for what crosses the ABI: settings, reads, the spec's state, requests
and the view. All are frozen dataclasses; enum fields are :mod:`libloader._enums` members.
:class:`Page` and :class:`View` are generic in the host's acquisition type."""

from __future__ import annotations

import ctypes
import dataclasses
import numbers
from dataclasses import dataclass, field
from typing import Any, Generic, Optional, Tuple, TypeVar

from . import _ffi
from ._enums import Coverage, Debt, Direction, Failure, Kind, Phase, RequestState

T = TypeVar("T")
"""The host's acquisition type: what :meth:`Loader.settle` takes and ``on_release`` and the
view's pages give back."""

_CONFIG_INT_BITS = {
    "page_size": 32,
    "prefetch_distance": 64,
    "drop_margin": 64,
    "backoff_initial_ms": 64,
    "backoff_max_ms": 64,
    "max_auto_retries": 32,
    "jitter_seed": 64,
    "max_pages": 32,
    "read_timeout_ms": 64,
    "initial_position": 64,
    "jump_threshold": 64,
    "cursor_memo_bytes": 64,
}
"""The integer fields of :class:`Config`, by the width of their C field."""


@dataclass(frozen=True)
class Config:
    """Loader settings. A field left ``None`` keeps the library's default
    (``loader_config_default``); :meth:`defaults` shows them all.

    Each field's type is checked when the config is made: an integer field takes an ``int``
    that fits its C field (not a bool, a float or a string), ``backoff_multiplier`` a real
    number (not a bool or a string), ``recheck_full`` and ``commit_overtaken`` a bool,
    ``initial_cursor`` bytes. A wrong type raises TypeError and a negative or oversized
    integer ValueError, both naming the field. Ranges the library defines (``page_size`` 0, a
    multiplier above 16, ...) are its own to refuse, at :class:`Loader` construction, with
    the matching :class:`LoaderError`.

    Fields (default in brackets):

    page_size [50]
        Items per read (the ``limit`` of each :class:`Read`); 1..=``MAX_PAGE_SIZE``.
    prefetch_distance [50]
        Items to keep loaded on EACH side of the window: the view reaches for
        ``[start - prefetch_distance, start + length + prefetch_distance)`` (from 0 when the
        window starts closer to it), reading forward past the window's end and backward
        before its start. 0 loads only the window.
    drop_margin [0]
        Pages lying wholly more than this many items before the window's start are released;
        0 never drops a page for this reason.
    max_pages [64]
        The most pages the view holds, on both sides of the window; 0 asks for no bound.
        Over it, the pages farthest from the window are released first; pages the window
        plus prefetch needs are never released. Scrolling back over released pages reads
        them again, backward (or, far back, from a remembered cursor: ``jump_threshold``).
    backoff_initial_ms [100]
        The first backoff delay after an own failure, in ms of the :meth:`Loader.tick`
        clock; at least 1.
    backoff_max_ms [30000]
        The cap on the backoff delay, ms; at least ``backoff_initial_ms``.
    backoff_multiplier [2.0]
        The factor between consecutive delays; finite, 1.0..=16.0.
    max_auto_retries [5]
        Automatic (backoff) retries of own failures in a row before the loader waits for an
        explicit one (:meth:`Loader.retry`, a window move); 0 turns them off. Any successful
        answer starts the count again. Once they are spent, nothing loads again until the
        host acts.
    jitter_seed [0]
        Seeds the backoff jitter, so runs are reproducible.
    read_timeout_ms [10000]
        How long, in ms of the :meth:`Loader.tick` clock, a superseded read's answer is
        awaited before the loader lets it go as :meth:`Loader.abandon` would; 0 never.
    recheck_full [True]
        Repair an invalidation that overtook a full read. False restores the model's exact
        ``unifiedMin`` rules, which lose it; ``commit_overtaken`` then has no effect.
    commit_overtaken [True]
        A repair an invalidation overtook runs to its end and commits, and a new one starts
        at once, so the view keeps refreshing under any rate of changes; False settles it
        stale and starts a replacement. Takes effect only with ``recheck_full`` True: with
        ``recheck_full`` False it is ignored, whatever its value (not an error).
    initial_cursor [b""]
        A starting point: the loader first loads around the item just after this cursor
        (the end of a log, a bookmarked row), as :meth:`Loader.jump` does on a fresh loader;
        ``b""`` is the source's start. At most ``MAX_CURSOR_LEN`` bytes.
    initial_position [0]
        The position the item after ``initial_cursor`` gets, and where the window starts;
        at most :data:`libloader.MAX_POSITION`. With ``initial_cursor`` empty (the source's
        start) it is ignored: positions there are the source's own, from 0.
    jump_threshold [:data:`libloader.JUMP_THRESHOLD_AUTO`]
        A window moved more than this many items beyond the held pages does not walk there
        page by page: it starts at the nearest cursor the loader knows (a page it read
        before, the source's start, or the ``locate`` callback's answer), as
        :meth:`Loader.jump` does, and reads about the window plus prefetch. The default is
        the window's length plus twice ``prefetch_distance``; 0 always walks.
    cursor_memo_bytes [4194304]
        The budget of the cursor memo: where the pages read and released started, kept by
        position (cursors only) for far moves back. 48 bytes a cursor (plus its length over
        14 bytes); when full, every other cursor is forgotten. 0 remembers none.
    """

    page_size: Optional[int] = None
    prefetch_distance: Optional[int] = None
    drop_margin: Optional[int] = None
    backoff_initial_ms: Optional[int] = None
    backoff_max_ms: Optional[int] = None
    backoff_multiplier: Optional[float] = None
    max_auto_retries: Optional[int] = None
    jitter_seed: Optional[int] = None
    recheck_full: Optional[bool] = None
    max_pages: Optional[int] = None
    commit_overtaken: Optional[bool] = None
    initial_cursor: Optional[bytes] = None
    initial_position: Optional[int] = None
    read_timeout_ms: Optional[int] = None
    jump_threshold: Optional[int] = None
    cursor_memo_bytes: Optional[int] = None

    def __post_init__(self) -> None:
        for name, bits in _CONFIG_INT_BITS.items():
            value = getattr(self, name)
            if value is not None:
                _unsigned(f"Config.{name}", value, bits)
        m = self.backoff_multiplier
        if m is not None and (isinstance(m, bool) or not isinstance(m, numbers.Real)):
            raise TypeError("Config.backoff_multiplier must be a real number (float), "
                            f"not {type(m).__name__}")
        ic = self.initial_cursor
        if ic is not None and not isinstance(ic, (bytes, bytearray, memoryview)):
            raise TypeError("Config.initial_cursor must be bytes-like, not "
                            f"{type(ic).__name__}")
        for flag in ("recheck_full", "commit_overtaken"):
            r = getattr(self, flag)
            if r is not None and not isinstance(r, bool):
                raise TypeError(f"Config.{flag} must be a bool, not {type(r).__name__}")

    def to_c(self) -> _ffi.loader_config:
        """The C struct: the library's defaults with this config's fields laid over them."""
        c = _ffi.loader_config()
        rc = _ffi.lib().loader_config_default(c)
        if rc != 0:  # pragma: no cover - only NULL fails
            raise RuntimeError(f"loader_config_default returned {rc}")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            if f.name in ("recheck_full", "commit_overtaken"):
                setattr(c, f.name, 1 if v else 0)
            elif f.name == "initial_cursor":
                raw = bytes(v)
                if raw:
                    # The struct keeps the buffer alive: the library copies it in loader_new.
                    buf = (ctypes.c_uint8 * len(raw)).from_buffer_copy(raw)
                    c._initial_cursor_buffer = buf
                    c.initial_cursor = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
                    c.initial_cursor_len = len(raw)
            elif f.name == "backoff_multiplier":
                c.backoff_multiplier = float(v)
            else:
                setattr(c, f.name, _unsigned(f"Config.{f.name}", v, _CONFIG_INT_BITS[f.name]))
        return c

    @classmethod
    def defaults(cls) -> "Config":
        """The library's defaults, every field filled in."""
        return cls.from_c(cls().to_c())

    @classmethod
    def from_c(cls, c: _ffi.loader_config) -> "Config":
        """The settings a C struct holds, every field filled in."""
        return cls(
            page_size=c.page_size,
            prefetch_distance=c.prefetch_distance,
            drop_margin=c.drop_margin,
            backoff_initial_ms=c.backoff_initial_ms,
            backoff_max_ms=c.backoff_max_ms,
            backoff_multiplier=c.backoff_multiplier,
            max_auto_retries=c.max_auto_retries,
            jitter_seed=c.jitter_seed,
            recheck_full=bool(c.recheck_full),
            max_pages=c.max_pages,
            read_timeout_ms=c.read_timeout_ms,
            commit_overtaken=bool(c.commit_overtaken),
            initial_cursor=(bytes(c.initial_cursor[:c.initial_cursor_len])
                            if c.initial_cursor_len else b""),
            initial_position=c.initial_position,
            jump_threshold=c.jump_threshold,
            cursor_memo_bytes=c.cursor_memo_bytes,
        )


def _unsigned(name: str, value: Any, bits: int) -> int:
    """``value`` as an int in ``0..2**bits``, or TypeError/ValueError naming ``name``.
    ctypes would silently wrap a negative or oversized value."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        v = value.__index__()
    except AttributeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if not 0 <= v < (1 << bits):
        raise ValueError(f"{name} must be in 0..2**{bits}-1, got {v}")
    return int(v)


def _signed(name: str, value: Any, bits: int) -> int:
    """As :func:`_unsigned`, for a signed C integer."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        v = value.__index__()
    except AttributeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise ValueError(f"{name} must fit in int{bits}_t, got {v}")
    return int(v)


@dataclass(frozen=True)
class Read:
    """A read the loader asks the host to perform (``loader_read``, copied).

    A read names the loader that issued it (``loader_key``): answering it to another loader
    raises ValueError instead of answering whichever read of that loader has the same id.

    Fields:

    read_id
        Names the read in :meth:`Loader.settle` / :meth:`Loader.fail`. Never reused.
    request_id
        The request the read belongs to.
    kind
        The kind of that request.
    epoch
        The epoch the request was stamped with.
    step
        0 for a request's first read; chain and full reads count up.
    cursor
        Where to start: a ``next_cursor`` the host gave earlier; ``b""`` is the source's start.
    limit
        At most this many items.
    direction
        Which way from ``cursor``: the items just after it (forward) or just before it
        (backward). Either way the answer lists its items in source order; a backward answer's
        ``next_cursor`` is the position before its first item, and its ``end_of_source`` says
        the source's start was reached.
    until
        A bounded read's last cursor (``None``: unbounded). Answer with the items after
        ``cursor`` and at or before ``until`` (in key terms ``cursor < key <= until``), at most
        ``limit``: fewer than ``limit`` says ``until`` or the source's end was reached, so a
        filtering host keeps scanning past filtered rows until it has ``limit`` or reaches
        ``until``. An empty page whose ``next_cursor`` moved short of ``until`` is not the
        bound: the repair reads on from it. Only the repair after
        :meth:`Loader.invalidate_range` reads bounded, always forward.
    loader_key
        The issuing loader's key (unique in the process, never reused). 0 for a read made by
        hand, which any loader takes as its bare ``read_id``.
    """

    read_id: int
    request_id: int
    kind: Kind
    epoch: int
    step: int
    cursor: bytes
    limit: int
    direction: Direction = Direction.FORWARD
    until: Optional[bytes] = None
    loader_key: int = field(default=0, repr=False)

    @classmethod
    def from_c(cls, r: _ffi.loader_read, loader_key: int = 0) -> "Read":
        """A copy of the C struct, issued by the loader with key ``loader_key``."""
        return cls(
            read_id=r.read_id,
            request_id=r.request_id,
            kind=Kind(r.kind),
            epoch=r.epoch,
            step=r.step,
            cursor=_ffi.cursor_bytes(r.cursor, r.cursor_len),
            limit=r.limit,
            direction=Direction(r.direction),
            until=_until(r),
            loader_key=loader_key,
        )


_HAS_UNTIL = any(f[0] == "until" for f in _ffi.loader_read._fields_)
"""The library's ``loader_read`` carries ``until`` (bounded reads)."""


def _until(r: Any) -> Optional[bytes]:
    """A read struct's ``until``: ``None`` when NULL (unbounded) or when the struct has no
    such field. Reads the field however it is declared (a pointer object or an address)."""
    if not _HAS_UNTIL:
        return None
    ptr = r.until
    if ptr is None or isinstance(ptr, int):
        address = ptr
    else:
        address = ctypes.cast(ptr, ctypes.c_void_p).value
    if not address:
        return None
    n = r.until_len
    return _ffi.bytes_at(address, n) if n else b""


_KINDS = tuple(Kind(i) for i in range(len(Kind)))
_DIRECTIONS = tuple(Direction(i) for i in range(len(Direction)))
_from_address = _ffi.issued_read.from_address


def _read_from_c(address: int, loader_key: int) -> Read:
    """:meth:`Read.from_c` for the issue callback, which gets the struct's address and runs
    once per read: the same value, built without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field), the enum's call and ``ctypes.string_at``, which cost
    more than the rest of the callback. Both cursors are read as plain addresses."""
    r = _from_address(address)
    kind = r.kind
    direction = r.direction
    n = r.cursor_len
    cursor = r.cursor
    until = r.until if _HAS_UNTIL else None
    if until:
        m = r.until_len
        until = _ffi.bytes_at(until, m) if m else b""
    read = object.__new__(Read)
    read.__dict__.update(
        read_id=r.read_id,
        request_id=r.request_id,
        kind=_KINDS[kind] if 0 <= kind < len(_KINDS) else Kind(kind),
        epoch=r.epoch,
        step=r.step,
        cursor=_ffi.bytes_at(cursor, n) if n and cursor else b"",
        limit=r.limit,
        direction=(_DIRECTIONS[direction] if 0 <= direction < len(_DIRECTIONS)
                   else Direction(direction)),
        until=until,
        loader_key=loader_key,
    )
    return read


@dataclass(frozen=True)
class Snapshot:
    """``loader_snapshot``: what the loader is doing. The fields a host acts on come last in
    this class (``quiescent``, the window, what the view covers); the first are the ledger's
    state under the model's names, for diagnostics and tests (include/loader.h describes
    each).

    Fields:

    epoch
        How many invalidations the loader has seen: each bumps it. The model's ``epoch``.
    debt
        The work the view owes the source since the last invalidation: nothing, a bounded
        repair, or a full read. The model's ``debt``.
    phase
        The repair running: none (idle), a bounded repair, or a full read. The model's
        ``phase``.
    chain_epoch
        The epoch the running repair was started at. The model's ``chainEpoch``.
    failure
        Whether a read failed and what it costs: nothing, the loader's own read (it waits for a
        retry), or a superseded one. The model's ``failure``.
    coverage
        What the view was last made current by: nothing yet, pages, a repair or a full read. The
        model's ``coverage``.
    settled_once
        A current answer has committed at least once (an invalidation then owes a bounded
        repair, not a full read). The model's ``settledOnce``.
    cover_epoch
        The epoch of the request that last made the view current: the view reflects every change
        before it. The model's ``coverEpoch``.
    inflight
        Live requests in flight.
    settled
        Live settled requests (their acquisitions are held).
    failed
        Live failed requests, waiting for a retry to release them.
    next_request_id
        The id the next request will get.
    pages
        Pages in the view.
    outstanding_reads
        Reads issued and not yet answered.
    revalidating
        A repair or full read is pending or running; the view shown is the old one.
    end_of_source
        The view reaches the source's end.
    covered_start
        The first item the view covers.
    covered_end
        The view covers items ``[covered_start, covered_end)``.
    window_start
        The window's first item.
    window_len
        The window's length, in items.
    accepted
        Acquisitions accepted so far.
    released
        Acquisitions the loader let go of so far.
    quiescent
        Nothing left to do until the host calls again: no read outstanding, not revalidating, no
        failure recorded, the ledger idle with no debt and nothing in flight. Read from the
        library (``loader_snapshot.quiescent``); a Snapshot built by hand defaults to False.
    start_of_source
        The first held page starts at the source's start: positions are the source's own
        (``loader_snapshot.start_of_source``).
    """

    epoch: int
    debt: Debt
    phase: Phase
    chain_epoch: int
    failure: Failure
    coverage: Coverage
    settled_once: bool
    cover_epoch: int
    inflight: int
    settled: int
    failed: int
    next_request_id: int
    pages: int
    outstanding_reads: int
    revalidating: bool
    end_of_source: bool
    covered_start: int
    covered_end: int
    window_start: int
    window_len: int
    accepted: int
    released: int
    quiescent: bool = False
    start_of_source: bool = False

    @classmethod
    def from_c(cls, s: _ffi.loader_snapshot) -> "Snapshot":
        """A copy of the C struct."""
        values = {f[0]: getattr(s, f[0]) for f in s._fields_ if f[0] != "struct_size"}
        values["debt"] = Debt(s.debt)
        values["phase"] = Phase(s.phase)
        values["failure"] = Failure(s.failure)
        values["coverage"] = Coverage(s.coverage)
        return cls(**values)


@dataclass(frozen=True)
class Counts:
    """``loader_counts``: the loader's counters since it was created.

    Fields:

    issued_finite
        Finite reads issued (pages past the covered end).
    issued_chain
        Repair chain steps issued.
    issued_full
        Full read steps issued.
    answered_current
        Answers classified current.
    answered_stale
        Answers classified stale.
    cursor_stalls
        Accepted answers classified :attr:`Answer.CURSOR_STALLED`.
    failed_own
        Own failures: each waited for a retry.
    failed_stale
        Failures of superseded reads: they only raised the debt.
    retries_auto
        Retries the backoff timer started.
    retries_explicit
        Retries the host started (:meth:`Loader.retry`, a window move).
    accepted
        Acquisitions accepted.
    released
        Acquisitions released.
    cancels
        Cancellation hints sent (at most one per read).
    issued_backward
        Reads issued backward (also counted by kind).
    items_read
        Items in the answers accepted for reads still outstanding (current, stale and stalled
        alike): what the loader made the host read. A late answer (``late_answers``) is not
        counted here, though its acquisition is in ``accepted``.
    renumbered
        Times the view's positions were renumbered, the window moving with them.
    jumps
        Jumps (:meth:`Loader.jump`, or a starting point in the config).
    resumed
        Retries that resumed a failed repair at its failed read.
    abandoned
        Reads the loader no longer needed, let go of at no cost: a superseded read passed to
        :meth:`Loader.abandon`, failed after its cancel hint, timed out (``read_timeout_ms``),
        or whose ``on_issue`` raised. A read still needed that is abandoned (or whose
        ``on_issue`` raised) is a failure instead, counted in ``failed_own``.
    timed_out
        Of those, the ones ``read_timeout_ms`` let go of.
    late_answers
        Answers (settle or fail) to reads already let go of, whether counted in ``abandoned`` or
        in ``failed_own``: stale; a settle's acquisition is accepted and released at once, its
        items not in ``items_read``.
    ranged_invalidations
        Ranged invalidations (:meth:`Loader.invalidate_range`) accepted.
    ranged_repairs
        Repairs that re-read only the pages a ranged invalidation marked (none, for a change
        outside the held pages) and rejoined the pages kept.
    retries_page
        Of the retries, those that read a failed page again (one finite read) instead of the
        full source.
    far_jumps
        Window moves far from the held pages that started at a known cursor (a page read before,
        the source's start, or ``locate``) instead of walking.
    located
        ``locate`` calls that gave a cursor.
    locate_unknown
        ``locate`` calls that answered unknown (None), or a cursor too long.
    """

    issued_finite: int
    issued_chain: int
    issued_full: int
    answered_current: int
    answered_stale: int
    cursor_stalls: int
    failed_own: int
    failed_stale: int
    retries_auto: int
    retries_explicit: int
    accepted: int
    released: int
    cancels: int
    issued_backward: int = 0
    items_read: int = 0
    renumbered: int = 0
    jumps: int = 0
    resumed: int = 0
    abandoned: int = 0
    timed_out: int = 0
    late_answers: int = 0
    ranged_invalidations: int = 0
    ranged_repairs: int = 0
    retries_page: int = 0
    far_jumps: int = 0
    located: int = 0
    locate_unknown: int = 0

    @classmethod
    def from_c(cls, c: _ffi.loader_counts) -> "Counts":
        """A copy of the C struct."""
        return cls(**{f[0]: getattr(c, f[0]) for f in c._fields_ if f[0] != "struct_size"})


@dataclass(frozen=True)
class RequestInfo:
    """``loader_request_info``: one live request.

    Fields:

    id
        The request's id.
    kind
        Finite, chain or full.
    epoch
        The epoch it was stamped with.
    state
        In flight, settled or failed.
    superseded
        Authoritative work superseded it while in flight.
    """

    id: int
    kind: Kind
    epoch: int
    state: RequestState
    superseded: bool

    @classmethod
    def from_c(cls, r: _ffi.loader_request_info) -> "RequestInfo":
        """A copy of the C struct."""
        return cls(id=r.id, kind=Kind(r.kind), epoch=r.epoch, state=RequestState(r.state),
                   superseded=bool(r.superseded))


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of the view (``loader_page``).

    Fields:

    acquisition
        The object the host passed to :meth:`Loader.settle` for this page, still owned by the
        loader when the view was taken.
    token
        The integer token the bindings passed for it across the ABI.
    count
        Items in the page.
    epoch
        The epoch of the request whose answer made the page.
    start
        The offset of the page's first item in the source.
    """

    acquisition: T
    token: int
    count: int
    epoch: int
    start: int


@dataclass(frozen=True)
class View(Generic[T]):
    """The view: the pages that make up the current authoritative data, in source order.

    Fields:

    pages
        The pages, in source order.
    revalidating
        True while a repair or full read is pending: the pages shown are the old view.
    """

    pages: Tuple[Page[T], ...]
    revalidating: bool

    @property
    def count(self) -> int:
        """Items in the view."""
        return sum(p.count for p in self.pages)

    def __len__(self) -> int:
        """Pages in the view."""
        return len(self.pages)
