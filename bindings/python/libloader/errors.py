"""One exception class per ``loader_result`` error code, all subclasses of :class:`LoaderError`.

Each carries ``code`` (a :class:`~libloader.enums.Result`) and ``message`` (the library's own
text from ``loader_result_str``). :func:`error_for` picks the class for a code.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Type, Union

from .enums import Result


class LoaderError(Exception):
    """A libloader call returned an error code. Nothing changed; nothing changed hands."""

    code: Union[Result, int]
    message: str
    function: Optional[str]

    def __init__(self, code: Union[Result, int], message: str,
                 function: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.function = function
        name = code.name if isinstance(code, Result) else str(int(code))
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{message} (LOADER_RESULT_{name})")


class NullPointerError(LoaderError):
    """A required pointer argument was NULL (only reachable through the raw ctypes layer)."""


class InvalidHandleError(LoaderError):
    """The handle is 0, or was never issued."""


class StaleHandleError(LoaderError):
    """The handle was freed: a call after ``close()``."""


class UnknownReadError(LoaderError):
    """The read id was never issued by this loader."""


class AlreadyAnsweredError(LoaderError):
    """The read was already answered."""


class CountOverLimitError(LoaderError):
    """``count`` exceeds the read's ``limit``."""


class NullCursorError(LoaderError):
    """A cursor pointer was NULL while its length was not 0."""


class CursorTooLongError(LoaderError):
    """A cursor is longer than ``MAX_CURSOR_LEN``."""


class WindowOverflowError(LoaderError):
    """A window's end overflows: ``start + length`` past 64 bits (``set_window``), or a
    jump's ``position`` over ``MAX_POSITION`` or ``position`` plus the window's length past
    64 bits (``jump``, ``Config.initial_position``)."""


class BufferTooSmallError(LoaderError):
    """An output array was too small (the bindings resize and retry; seen only raw)."""


class PanicError(LoaderError):
    """A panic inside the library was caught; the handle is now poisoned."""


class PoisonedError(LoaderError):
    """An earlier panic poisoned the handle; only ``close()`` works on it."""


class EpochOverflowError(LoaderError):
    """The epoch counter is exhausted."""


class IdOverflowError(LoaderError):
    """The request or read id space is exhausted."""


class InvalidPageSizeError(LoaderError):
    """``page_size`` is 0 or larger than ``MAX_PAGE_SIZE``."""


class InvalidBackoffInitialError(LoaderError):
    """``backoff_initial_ms`` is 0."""


class InvalidBackoffMaxError(LoaderError):
    """``backoff_max_ms`` is below ``backoff_initial_ms``."""


class InvalidBackoffMultiplierError(LoaderError):
    """``backoff_multiplier`` is not a finite number in 1.0..=16.0."""


class MissingCallbackError(LoaderError):
    """The ``issue`` or ``release`` callback is missing."""


class TooManyHandlesError(LoaderError):
    """No more loaders can be created in this process."""


class NoCompareError(LoaderError):
    """A ranged invalidation needs the ``compare`` callback, which the loader was not given
    (``Loader(..., compare=...)``). Nothing changed: call ``invalidate()`` instead."""


class RangeReversedError(LoaderError):
    """A ranged invalidation's end comes before its start. Nothing changed."""


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
