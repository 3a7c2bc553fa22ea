"""One exception class per ``loader_result`` error code, grouped under three bases, all
subclasses of :class:`LoaderError`:

- :class:`UsageError`: the call was wrong (a bad argument, handle, read, cursor, range or
  setting); nothing changed, so the host fixes the call;
- :class:`ExhaustedError`: a counter or table ran out (epochs, ids, loaders); the loader is
  consistent, but cannot do more of that;
- :class:`InternalError`: a panic inside the library; the loader is poisoned, only ``close()``
  works on it.

Each carries ``code`` (a :class:`~libloader.Result`) and ``message`` (the library's own
text from ``loader_result_str``). :func:`error_for` picks the class for a code.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple, Type, Union

from . import _attribute
from ._enums import Result


class LoaderError(Exception):
    """A libloader call returned an error code. Nothing changed; nothing changed hands."""

    code = _attribute.Documented[Union[Result, int]](
        """The result code: a :class:`~libloader.Result` (a plain int for a code this
        version does not know).""")
    message = _attribute.Documented[str](
        """The library's own text for the code (``loader_result_str``).""")
    function = _attribute.Documented[Optional[str]](
        """The C function whose call returned the code, or None.""")

    def __init__(self, code: Union[Result, int], message: str,
                 function: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.function = function
        name = code.name if isinstance(code, Result) else str(int(code))
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{message} (LOADER_RESULT_{name})")

    def __reduce__(self) -> Tuple[Any, ...]:
        # Made again from its fields, not from the formatted text (``args``): the error
        # crosses a process boundary (pickle, multiprocessing, concurrent.futures) whole.
        return (type(self), (self.code, self.message, self.function), self.__dict__ or None)


class UsageError(LoaderError):
    """The call was wrong: a bad argument, handle, read, cursor, range or setting. Nothing
    changed; nothing changed hands."""


class ExhaustedError(LoaderError):
    """A counter or table ran out: the epochs, the request or read ids, or the loaders a
    process may hold."""


class InternalError(LoaderError):
    """A panic inside the library was caught: the loader is poisoned."""


class NullPointerError(UsageError):
    """A required pointer argument was NULL (only reachable through the raw ctypes layer)."""


class InvalidHandleError(UsageError):
    """The handle is 0, or was never issued."""


class StaleHandleError(UsageError):
    """The handle was freed: a call after ``close()``."""


class UnknownReadError(UsageError):
    """The read id was never issued by this loader."""


class AlreadyAnsweredError(UsageError):
    """The read was already answered."""


class CountOverLimitError(UsageError):
    """``count`` exceeds the read's ``limit``."""


class NullCursorError(UsageError):
    """A cursor pointer was NULL while its length was not 0."""


class CursorTooLongError(UsageError):
    """A cursor is longer than ``MAX_CURSOR_LEN``."""


class WindowOverflowError(UsageError):
    """A window's end overflows: ``start + length`` past 64 bits (``set_window``), or a
    jump's ``position`` over ``MAX_POSITION`` or ``position`` plus the window's length past
    64 bits (``jump``, ``Config.initial_position``)."""


class BufferTooSmallError(UsageError):
    """An output array was too small (the bindings resize and retry; seen only raw)."""


class PanicError(InternalError):
    """A panic inside the library was caught; the handle is now poisoned."""


class PoisonedError(InternalError):
    """An earlier panic poisoned the handle; only ``close()`` works on it."""


class EpochOverflowError(ExhaustedError):
    """The epoch counter is exhausted."""


class IdOverflowError(ExhaustedError):
    """The request or read id space is exhausted."""


class InvalidPageSizeError(UsageError):
    """``page_size`` is 0 or larger than ``MAX_PAGE_SIZE``."""


class InvalidBackoffInitialError(UsageError):
    """``backoff_initial_ms`` is 0."""


class InvalidBackoffMaxError(UsageError):
    """``backoff_max_ms`` is below ``backoff_initial_ms``."""


class InvalidBackoffMultiplierError(UsageError):
    """``backoff_multiplier`` is not a finite number in 1.0..=16.0."""


class MissingCallbackError(UsageError):
    """The ``issue`` or ``release`` callback is missing."""


class TooManyHandlesError(ExhaustedError):
    """No more loaders can be created in this process."""


class NoCompareError(UsageError):
    """A ranged invalidation needs the ``compare`` callback, which the loader was not given
    (``Loader(..., compare=...)``). Nothing changed: call ``invalidate()`` instead."""


class RangeReversedError(UsageError):
    """A ranged invalidation's end comes before its start. Nothing changed."""


class InvalidStructSizeError(UsageError):
    """A struct's ``struct_size`` is not one the library accepts (only reachable through the
    raw ctypes layer, whose structs set it when they are made)."""


class UnknownFieldError(UsageError):
    """A struct sets a field the library does not know: the bindings are newer than the
    library they loaded."""


class RecordFailedError(UsageError):
    """A recording could not start (``Loader(record=...)``): the file cannot be created, or
    the loader already records (``LOADER_RECORD`` is set)."""


class InvalidWorkersError(UsageError):
    """A C feed's ``workers`` is 0 or above ``LOADER_FEED_MAX_WORKERS``."""


class TimedOutError(ExhaustedError):
    """A C feed's wait ran out of time first."""


class CursorStalledError(UsageError):
    """A C feed's load answered with the cursor it was given."""


class RetriesSpentError(ExhaustedError):
    """A C feed's loads kept failing and the automatic retries are spent."""


class ThreadStartError(ExhaustedError):
    """A C feed could not start a thread."""


class FeedOwnedError(UsageError):
    """``loader_free`` on a C feed's handle: the feed owns that loader; free the feed."""


ERRORS: Dict[Result, Type[LoaderError]] = {
    Result.NULL_POINTER: NullPointerError,
    Result.INVALID_HANDLE: InvalidHandleError,
    Result.STALE_HANDLE: StaleHandleError,
    Result.UNKNOWN_READ: UnknownReadError,
    Result.ALREADY_ANSWERED: AlreadyAnsweredError,
    Result.COUNT_OVER_LIMIT: CountOverLimitError,
    Result.NULL_CURSOR: NullCursorError,
    Result.CURSOR_TOO_LONG: CursorTooLongError,
    Result.WINDOW_OVERFLOW: WindowOverflowError,
    Result.BUFFER_TOO_SMALL: BufferTooSmallError,
    Result.PANIC: PanicError,
    Result.POISONED: PoisonedError,
    Result.EPOCH_OVERFLOW: EpochOverflowError,
    Result.ID_OVERFLOW: IdOverflowError,
    Result.INVALID_PAGE_SIZE: InvalidPageSizeError,
    Result.INVALID_BACKOFF_INITIAL: InvalidBackoffInitialError,
    Result.INVALID_BACKOFF_MAX: InvalidBackoffMaxError,
    Result.INVALID_BACKOFF_MULTIPLIER: InvalidBackoffMultiplierError,
    Result.MISSING_CALLBACK: MissingCallbackError,
    Result.TOO_MANY_HANDLES: TooManyHandlesError,
    Result.NO_COMPARE: NoCompareError,
    Result.RANGE_REVERSED: RangeReversedError,
    Result.INVALID_STRUCT_SIZE: InvalidStructSizeError,
    Result.UNKNOWN_FIELD: UnknownFieldError,
    Result.RECORD_FAILED: RecordFailedError,
    Result.INVALID_WORKERS: InvalidWorkersError,
    Result.TIMED_OUT: TimedOutError,
    Result.CURSOR_STALLED: CursorStalledError,
    Result.RETRIES_SPENT: RetriesSpentError,
    Result.THREAD_START: ThreadStartError,
    Result.FEED_OWNED: FeedOwnedError,
}
"""The exception class for each error code."""


def error_for(code: int, message_of: Callable[[int], str],
              function: Optional[str] = None) -> LoaderError:
    """The exception for ``code``; an unknown code gets the base class."""
    try:
        rc: Union[Result, int] = Result(code)
    except ValueError:
        rc = code
    cls = ERRORS.get(rc, LoaderError) if isinstance(rc, Result) else LoaderError
    return cls(rc, message_of(code), function)
