"""Plain Python values for what crosses the ABI: settings, reads, the spec's state, requests
and the view. All are frozen dataclasses; enum fields are :mod:`libloader.enums` members."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from . import _ffi
from .enums import Coverage, Debt, Failure, Kind, Phase, RequestState


@dataclass(frozen=True)
class Config:
    """Loader settings. A field left ``None`` keeps the library's default
    (``loader_config_default``); :meth:`defaults` shows them all."""

    page_size: Optional[int] = None
    """Items per read (library default 50); 1..=``MAX_PAGE_SIZE``."""
    prefetch_distance: Optional[int] = None
    """Items past the window's end to keep loaded (default 50)."""
    drop_margin: Optional[int] = None
    """Pages wholly more than this many items before the window start are released; 0 (the
    default) never drops."""
    backoff_initial_ms: Optional[int] = None
    """First backoff delay after an own failure, ms (default 100); at least 1."""
    backoff_max_ms: Optional[int] = None
    """Cap on the backoff delay, ms (default 30000)."""
    backoff_multiplier: Optional[float] = None
    """Factor between delays (default 2.0); finite, 1.0..=16.0."""
    max_auto_retries: Optional[int] = None
    """Automatic retries before waiting for an explicit one (default 5); 0 disables them."""
    jitter_seed: Optional[int] = None
    """Seeds the backoff jitter (default 0)."""
    recheck_full: Optional[bool] = None
    """Repair an invalidation that overtook a full read (default True)."""

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
            if f.name == "recheck_full":
                c.recheck_full = 1 if v else 0
            elif f.name == "backoff_multiplier":
                c.backoff_multiplier = float(v)
            else:
                bits = 32 if f.name in ("page_size", "max_auto_retries") else 64
                setattr(c, f.name, _unsigned(f.name, v, bits))
        return c

    @classmethod
    def defaults(cls) -> "Config":
        """The library's defaults, every field filled in."""
        return cls.from_c(cls().to_c())

    @classmethod
    def from_c(cls, c: _ffi.loader_config) -> "Config":
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
    """A read the loader asks the host to perform (``loader_read``, copied)."""

    read_id: int
    """Names the read in :meth:`Loader.settle` / :meth:`Loader.fail`. Never reused."""
    request_id: int
    kind: Kind
    epoch: int
    """The epoch the request was stamped with."""
    step: int
    """0 for a request's first read; chain and full reads count up."""
    cursor: bytes
    """Where to start: a ``next_cursor`` the host gave earlier; ``b""`` is the source's start."""
    limit: int
    """At most this many items."""

    @classmethod
    def from_c(cls, r: _ffi.loader_read) -> "Read":
        return cls(
            read_id=r.read_id,
            request_id=r.request_id,
            kind=Kind(r.kind),
            epoch=r.epoch,
            step=r.step,
            cursor=_ffi.cursor_bytes(r.cursor, r.cursor_len),
            limit=r.limit,
        )


@dataclass(frozen=True)
class Snapshot:
    """``loader_snapshot``: the spec's abstract state, plus the loader's counts."""

    epoch: int
    debt: Debt
    phase: Phase
    chain_epoch: int
    failure: Failure
    coverage: Coverage
    settled_once: bool
    cover_epoch: int
    inflight: int
    """Live requests in flight."""
    settled: int
    failed: int
    """Live failed requests, waiting for a retry to release them."""
    next_request_id: int
    pages: int
    """Pages in the view."""
    outstanding_reads: int
    """Reads issued and not yet answered."""
    revalidating: bool
    """A repair or full read is pending or running; the view shown is the old one."""
    end_of_source: bool
    covered_start: int
    covered_end: int
    """The view covers items ``[covered_start, covered_end)``."""
    window_start: int
    window_len: int
    accepted: int
    """Acquisitions accepted so far."""
    released: int
    """Acquisitions released so far."""

    @classmethod
    def from_c(cls, s: _ffi.loader_snapshot) -> "Snapshot":
        values = {f[0]: getattr(s, f[0]) for f in s._fields_}
        values["debt"] = Debt(s.debt)
        values["phase"] = Phase(s.phase)
        values["failure"] = Failure(s.failure)
        values["coverage"] = Coverage(s.coverage)
        return cls(**values)

    @property
    def quiescent(self) -> bool:
        """Idle with no debt, no failure and no read outstanding."""
        return (self.phase is Phase.IDLE and self.debt is Debt.NONE
                and self.failure is Failure.NONE and self.outstanding_reads == 0)


@dataclass(frozen=True)
class Counts:
    """``loader_counts``: the loader's counters since it was created."""

    issued_finite: int
    issued_chain: int
    issued_full: int
    answered_current: int
    answered_stale: int
    cursor_stalls: int
    failed_own: int
    """Own failures: each waited for a retry."""
    failed_stale: int
    """Failures of superseded reads: they only raised the debt."""
    retries_auto: int
    retries_explicit: int
    accepted: int
    released: int
    cancels: int

    @classmethod
    def from_c(cls, c: _ffi.loader_counts) -> "Counts":
        return cls(**{f[0]: getattr(c, f[0]) for f in c._fields_})


@dataclass(frozen=True)
class RequestInfo:
    """``loader_request_info``: one live request."""

    id: int
    kind: Kind
    epoch: int
    state: RequestState
    superseded: bool
    """Authoritative work superseded it while in flight."""

    @classmethod
    def from_c(cls, r: _ffi.loader_request_info) -> "RequestInfo":
        return cls(id=r.id, kind=Kind(r.kind), epoch=r.epoch, state=RequestState(r.state),
                   superseded=bool(r.superseded))


@dataclass(frozen=True)
class Page:
    """One page of the view (``loader_page``)."""

    acquisition: Any
    """The object the host passed to :meth:`Loader.settle` for this page, still owned by the
    loader. ``None`` only if another thread made the loader release it since the view was
    taken."""
    token: int
    """The integer token the bindings passed for it across the ABI."""
    count: int
    epoch: int
    start: int
    """The offset of the page's first item in the source."""


@dataclass(frozen=True)
class View:
    """The view: the pages that make up the current authoritative data, in source order."""

    pages: Tuple[Page, ...]
    revalidating: bool
    """True while a repair or full read is pending: the pages shown are the old view."""

    @property
    def count(self) -> int:
        """Items in the view."""
        return sum(p.count for p in self.pages)

    def __len__(self) -> int:
        return len(self.pages)
