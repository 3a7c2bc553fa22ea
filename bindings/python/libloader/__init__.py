"""Python bindings for libloader, over ctypes.

libloader decides which page reads of an ordered source to start, which answers are
authoritative and which are stale, what the current view is, and exactly when each buffer a
read produced may be freed. The host (this program) owns the source and the data; see
:class:`Loader`, or let a :class:`Feed` (threads) or :class:`libloader.aio.Feed` (asyncio) run
the host's load function and answer the loader for it.
"""

from __future__ import annotations

from ._ffi import JUMP_THRESHOLD_AUTO, MAX_CURSOR_LEN, MAX_PAGE_SIZE, MAX_POSITION, library_path
from ._library import LibraryNotFoundError
from ._enums import (Answer, Coverage, Debt, Direction, Failure, Kind, Phase, RequestState,
                    Result)
from ._errors import (
    ERRORS,
    ExhaustedError,
    InternalError,
    UsageError,
    AlreadyAnsweredError,
    BufferTooSmallError,
    CountOverLimitError,
    CursorTooLongError,
    EpochOverflowError,
    IdOverflowError,
    InvalidBackoffInitialError,
    InvalidBackoffMaxError,
    InvalidBackoffMultiplierError,
    InvalidHandleError,
    InvalidPageSizeError,
    InvalidStructSizeError,
    LoaderError,
    MissingCallbackError,
    NoCompareError,
    NullCursorError,
    NullPointerError,
    PanicError,
    PoisonedError,
    RangeReversedError,
    StaleHandleError,
    TooManyHandlesError,
    UnknownFieldError,
    RecordFailedError,
    UnknownReadError,
    WindowOverflowError,
    InvalidWorkersError,
    TimedOutError,
    CursorStalledError,
    RetriesSpentError,
    ThreadStartError,
    FeedOwnedError,
)
from ._invariants import violations
from ._feed import Feed, FeedPage, FeedProblem, FeedSnapshot, FeedStalledError, LoadResult
from ._loader import CallbackContext, Loader, callback_context, result_message, version
from ._types import Config, Counts, Page, Read, RequestInfo, Snapshot, View
from . import aio

__version__ = "0.1.0"

__all__ = [
    "JUMP_THRESHOLD_AUTO", "MAX_CURSOR_LEN", "MAX_PAGE_SIZE", "MAX_POSITION", "library_path", "LibraryNotFoundError",
    "Answer", "Coverage", "Debt", "Failure", "Kind", "Phase", "RequestState", "Result",
    "ERRORS", "LoaderError", "UsageError", "ExhaustedError", "InternalError",
    "AlreadyAnsweredError", "BufferTooSmallError",
    "CountOverLimitError", "CursorTooLongError", "EpochOverflowError", "IdOverflowError",
    "InvalidBackoffInitialError", "InvalidBackoffMaxError", "InvalidBackoffMultiplierError",
    "InvalidHandleError", "InvalidPageSizeError", "InvalidStructSizeError",
    "MissingCallbackError", "NoCompareError",
    "NullCursorError", "NullPointerError", "PanicError", "PoisonedError", "RangeReversedError",
    "StaleHandleError",
    "TooManyHandlesError", "UnknownFieldError", "RecordFailedError", "UnknownReadError",
    "WindowOverflowError", "InvalidWorkersError", "TimedOutError", "CursorStalledError",
    "RetriesSpentError", "ThreadStartError", "FeedOwnedError",
    "violations", "CallbackContext", "callback_context", "Loader", "result_message", "version",
    "Config", "Counts", "Page", "Read", "RequestInfo", "Snapshot", "View",
    "Direction", "Feed", "FeedPage", "FeedProblem", "FeedSnapshot", "FeedStalledError",
    "LoadResult", "aio",
]
