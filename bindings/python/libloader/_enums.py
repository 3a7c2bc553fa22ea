"""The C ABI's enums as :class:`enum.IntEnum`, with the values of ``include/loader.h``.

Member names are the C names without their prefix: ``LOADER_RESULT_NULL_POINTER`` is
``Result.NULL_POINTER``. A test checks every value against the header.
"""

from __future__ import annotations

from enum import IntEnum


class Result(IntEnum):
    """``loader_result``: 0 is success, every other value an error."""

    OK = 0
    NULL_POINTER = 1
    INVALID_HANDLE = 2
    STALE_HANDLE = 3
    UNKNOWN_READ = 4
    ALREADY_ANSWERED = 5
    COUNT_OVER_LIMIT = 6
    NULL_CURSOR = 7
    CURSOR_TOO_LONG = 8
    WINDOW_OVERFLOW = 9
    BUFFER_TOO_SMALL = 10
    PANIC = 11
    POISONED = 12
    EPOCH_OVERFLOW = 13
    ID_OVERFLOW = 14
    INVALID_PAGE_SIZE = 15
    INVALID_BACKOFF_INITIAL = 16
    INVALID_BACKOFF_MAX = 17
    INVALID_BACKOFF_MULTIPLIER = 18
    MISSING_CALLBACK = 19
    TOO_MANY_HANDLES = 20
    NO_COMPARE = 21
    RANGE_REVERSED = 22
    INVALID_STRUCT_SIZE = 23
    UNKNOWN_FIELD = 24
    RECORD_FAILED = 25
    INVALID_WORKERS = 26
    TIMED_OUT = 27
    CURSOR_STALLED = 28
    RETRIES_SPENT = 29
    THREAD_START = 30
    FEED_OWNED = 31


class Kind(IntEnum):
    """``loader_kind``: the kind of a request and of its reads."""

    FINITE = 0
    CHAIN = 1
    FULL = 2


class Direction(IntEnum):
    """``loader_direction``: which way a read goes from its cursor. Cursors are positions
    *between* items; ``b""`` is the source's start.

    Members:

    FORWARD
        Up to ``limit`` items just after the cursor, in source order. The next cursor is the
        position after the last one; ``end_of_source`` says the source's end was reached.
    BACKWARD
        Up to ``limit`` items just before the cursor, in source order. The next cursor is the
        position before the first one (a forward read from it returns these items first);
        ``end_of_source`` says the source's *start* was reached (the next cursor is then
        ``b""``).
    """

    FORWARD = 0
    BACKWARD = 1


class Answer(IntEnum):
    """``loader_answer``: how an accepted answer was classified."""

    CURRENT = 0
    STALE = 1
    CURSOR_STALLED = 2


class Debt(IntEnum):
    """The spec's ``debt``: none < bounded < full."""

    NONE = 0
    BOUNDED = 1
    FULL = 2


class Phase(IntEnum):
    """The spec's ``phase``."""

    IDLE = 0
    REPAIR = 1
    FULLHELD = 2


class Failure(IntEnum):
    """The spec's ``failure``."""

    NONE = 0
    OWN = 1
    SUPERSEDED = 2


class Coverage(IntEnum):
    """The spec's ``coverage``."""

    NOTHING = 0
    PAGES = 1
    CHAIN = 2
    FULL = 3


class RequestState(IntEnum):
    """A live request's ``st``. Released requests are forgotten and not listed."""

    INFLIGHT = 0
    SETTLED = 1
    FAILED = 2
