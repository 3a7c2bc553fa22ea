"""The :class:`Loader`: one libloader handle, with Python callables as its callbacks.

How callbacks reach Python
--------------------------
Five module-level ctypes thunks serve every loader; the C ``userdata`` is a small integer
naming the loader's :class:`_Host` (its callables and the acquisitions it lent the loader).
The thunks live as long as the module, so closing a loader from inside its own callback never
frees the code that is running.

The library runs callbacks on the thread that made the call, outside its locks. A call made
from inside a callback has its effects queued until the running callback returns; the
thread's outermost call delivers them all before it returns. So each thread pins the hosts of
the loaders its running outermost call used, and a thunk finds its host there: a host lives
as long as any of its callbacks can run, even while its :class:`Loader` is being
garbage-collected.

An exception a callback raises is caught in the thunk (ctypes would print and drop it),
stashed per thread, and re-raised when the thread's outermost libloader call returns, after
the C call has completed: the library's state is whatever the call left, consistent, and
every other effect of the call (every ``release`` in particular) was still delivered. If
several callbacks raised, the first is raised and the others are named in its notes. The
re-raised exception carries a :class:`CallbackContext` (:func:`callback_context`): which
callback raised, which call re-raised it and the result that call completed with, so a host
can tell a refused ``settle`` (a :class:`LoaderError` without a context) from an accepted
one whose callbacks raised.

Acquisitions
------------
``settle`` accepts any Python object as the acquisition. The bindings pass an integer token
across the ABI and keep the object until the library releases the token; ``on_release``
then receives the object itself, exactly once. A refused ``settle`` keeps nothing.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple, Union

from . import _ffi, _record_env
from ._enums import Answer, Result
from ._errors import error_for
from ._types import (
    Config,
    Counts,
    Page,
    Read,
    RequestInfo,
    Snapshot,
    T,
    View,
    _read_from_c,
    _signed,
    _unsigned,
)

IssueCallback = Callable[[Read], object]
"""``on_issue(read)``: start the read; answer it later with settle or fail."""
ReleaseCallback = Callable[[T], object]
"""``on_release(acquisition)``: the loader is done with an acquisition it accepted."""
ChangeCallback = Callable[[], object]
"""``on_change()``: the view or the state changed."""
CancelCallback = Callable[[int], object]
"""``on_cancel(read_id)``: a read's answer is no longer needed."""
CompareCallback = Callable[[bytes, bytes], int]
"""``compare(a, b)``: orders two non-empty cursors as the source does: negative when ``a``
comes first, 0 when they name the same position, positive when ``b`` does."""
LocateCallback = Callable[[int], Optional[bytes]]
"""``locate(position)``: the cursor whose next item is at ``position`` in the source's own
numbering (the key of item ``position - 1``; ``b""`` for 0), or None when unknown."""
ReadRef = Union[Read, int]
"""A read as :meth:`Loader.settle` and :meth:`Loader.fail` take it: the :class:`Read` the
loader issued, or its bare ``read_id``."""

_MISSING = object()
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1
_ANSWERS = tuple(Answer(i) for i in range(len(Answer)))
_VIEW_ATTEMPTS = 100
"""How many times :meth:`Loader.view` takes the view again when a page's acquisition was
released by another thread between the listing and its lookup."""


def result_message(code: int) -> str:
    """The library's static message for a result code."""
    raw: Optional[bytes] = _ffi.lib().loader_result_str(int(code))
    return raw.decode("utf-8", "replace") if raw is not None else "unknown result code"


def version() -> str:
    """The shared library's version string."""
    raw: Optional[bytes] = _ffi.lib().loader_version()
    return raw.decode() if raw is not None else ""


@dataclass(frozen=True)
class CallbackContext:
    """Attached to an exception a callback raised, when a call re-raises it.

    Fields:

    callback
        The callback that raised it, with its arguments.
    call
        The C function whose call delivered the callback and re-raised the exception.
    result
        What that call returned: ``Result.OK`` means it completed (a ``settle``'s acquisition
        passed to the loader).
    others
        Exceptions later callbacks of the same call raised.
    """

    callback: str
    call: str
    result: Union[Result, int]
    others: Tuple[BaseException, ...]


def callback_context(exc: BaseException) -> Optional[CallbackContext]:
    """The :class:`CallbackContext` of an exception re-raised from a callback, else None."""
    ctx = getattr(exc, "libloader_callback", None)
    return ctx if isinstance(ctx, CallbackContext) else None


def _note(e: BaseException, text: str) -> None:
    add_note = getattr(e, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(text)


class _Host(Generic[T]):
    """What the C side's ``userdata`` names: the callables and the lent acquisitions."""

    def __init__(self, on_issue: IssueCallback, on_release: ReleaseCallback[T],
                 on_change: Optional[ChangeCallback],
                 on_cancel: Optional[CancelCallback],
                 compare: Optional[CompareCallback] = None,
                 locate: Optional[LocateCallback] = None) -> None:
        self.on_issue = on_issue
        self.on_release = on_release
        self.on_change = on_change
        self.on_cancel = on_cancel
        self.compare = compare
        self.locate = locate
        self.held: Dict[int, T] = {}
        self._tokens = itertools.count(1)
        self.key = 0
        self.handle = 0
        """The loader's handle, once ``loader_new`` returned it."""

    def lend(self, obj: T) -> int:
        """Keeps ``obj`` under a fresh token, the integer that crosses the ABI for it."""
        # Under the GIL, ``next`` on an ``itertools.count`` and a dict store are each atomic:
        # two threads never get the same token, and no lock is needed (it cost a third of
        # a settle's own bookkeeping).
        token = next(self._tokens)
        self.held[token] = obj
        return token


class _ThreadState:
    """One thread's calls into libloader."""

    __slots__ = ("depth", "errors", "pinned", "outs")

    def __init__(self) -> None:
        self.depth = 0
        # The ``loader_answer`` out-parameter of a settle at each nesting depth, reused:
        # making one per call cost as much as the rest of the call's checks.
        self.outs: List[Any] = [_ffi.c_enum(0)]
        # (exception, which callback) raised by callbacks of the running outermost call.
        self.errors: List[Tuple[BaseException, str]] = []
        # The hosts of every loader the running outermost call used, by key: their callbacks
        # may run on this thread until it returns.
        self.pinned: Dict[int, _Host[Any]] = {}


class _PerThread(threading.local):
    # One thread-local lookup per call or callback, then plain slots: each attribute of a
    # threading.local costs a lookup in the thread's dictionary.
    def __init__(self) -> None:
        self.state = _ThreadState()


_tls = _PerThread()
_keys = itertools.count(1)
_keys_lock = threading.Lock()


def _host_for(userdata: Optional[int]) -> _Host[Any]:
    host = _tls.state.pinned.get(userdata or 0)
    if host is None:
        raise RuntimeError(f"libloader: a callback for loader key {userdata} ran on a thread "
                           "that is not calling it (only the raw ctypes layer can do that)")
    return host


def _capture(e: BaseException, where: str) -> None:
    try:
        _tls.state.errors.append((e, where))
    except BaseException:  # pragma: no cover - interpreter shutdown
        pass


# Each thunk names its callback (with the read or the token) only when the callback raised:
# formatting a read's repr for every issue cost more than the rest of the thunk.

def _issue_thunk(userdata: Optional[int], read_address: int) -> None:
    read: Optional[Read] = None
    host: Optional[_Host[Any]] = None
    try:
        host = _tls.state.pinned.get(userdata or 0) or _host_for(userdata)
        read = _read_from_c(read_address, host.key)
        host.on_issue(read)
    except BaseException as e:
        _capture(e, "on_issue" if read is None else f"on_issue({read!r})")
        if host is not None:
            _let_go(host, read_address)


def _let_go(host: _Host[Any], read_address: int) -> None:
    """The read at ``read_address``, whose ``on_issue`` raised, is let go of at once
    (``loader_abandon``, a nested call: its callbacks run after this one returns), so that it
    does not stay outstanding: for a read still needed that is an own failure, which the
    usual retry rules recover; an answer the host gives it later anyway is stale. Refused
    (answered inside ``on_issue`` already, or the loader closed there): harmless."""
    try:
        read_id = _ffi.read_id_at(read_address)
        _ffi.lib().loader_abandon(host.handle, read_id, None)
    except BaseException as e:  # pragma: no cover - interpreter shutdown
        _capture(e, "letting go of the read whose on_issue raised")


def _release_thunk(userdata: Optional[int], token: int) -> None:
    try:
        host = _tls.state.pinned.get(userdata or 0) or _host_for(userdata)
        obj = host.held.pop(token, _MISSING)
        if obj is _MISSING:
            raise RuntimeError(f"libloader: the library released token {token}, which it "
                               "does not hold (released twice, or never accepted)")
        host.on_release(obj)
    except BaseException as e:
        _capture(e, f"on_release (token {token})")


def _changed_thunk(userdata: Optional[int]) -> None:
    try:
        host = _host_for(userdata)
        if host.on_change is not None:
            host.on_change()
    except BaseException as e:
        _capture(e, "on_change()")


def _cancel_thunk(userdata: Optional[int], read_id: int) -> None:
    try:
        host = _host_for(userdata)
        if host.on_cancel is not None:
            host.on_cancel(read_id)
    except BaseException as e:
        _capture(e, f"on_cancel({read_id})")


def _compare_thunk(userdata: Optional[int], a: int, a_len: int, b: int, b_len: int) -> int:
    # Runs only inside loader_invalidate_range, on its thread, with two non-empty cursors.
    # An exception must not cross into C: it is re-raised by invalidate_range, and the
    # library meanwhile takes the two cursors as equal.
    left = right = b""
    try:
        host = _host_for(userdata)
        left = _ffi.bytes_at(a, a_len) if a and a_len else b""
        right = _ffi.bytes_at(b, b_len) if b and b_len else b""
        assert host.compare is not None   # the library calls it only when it was given
        r = host.compare(left, right)
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"compare must return an int, not {type(r).__name__}")
        return -1 if r < 0 else (1 if r > 0 else 0)
    except BaseException as e:
        _capture(e, f"compare({left!r}, {right!r})")
        return 0


def _locate_thunk(userdata: Optional[int], position: int, buf: int, capacity: int,
                  len_out: int) -> int:
    # Runs only inside loader_set_window, on its thread, for a far move. An exception must
    # not cross into C: it is re-raised by set_window, and the library meanwhile takes the
    # answer as unknown.
    try:
        host = _host_for(userdata)
        assert host.locate is not None   # the library calls it only when it was given
        r = host.locate(position)
        if r is None:
            return 0
        if not isinstance(r, (bytes, bytearray, memoryview)):
            raise TypeError(f"locate must return bytes or None, not {type(r).__name__}")
        raw = bytes(r)
        if len(raw) > capacity:
            raise ValueError(f"locate returned a cursor of {len(raw)} bytes, over "
                             f"MAX_CURSOR_LEN ({capacity})")
        ctypes.memmove(buf, raw, len(raw))
        ctypes.c_size_t.from_address(len_out).value = len(raw)
        return 1
    except BaseException as e:
        _capture(e, f"locate({position})")
        return 0


_ISSUE_BY_ADDRESS = _ffi.issue_address_fn(_issue_thunk)  # kept alive: _ISSUE points at it
_ISSUE = ctypes.cast(_ISSUE_BY_ADDRESS, _ffi.loader_issue_fn)
_RELEASE = _ffi.loader_release_fn(_release_thunk)
_CHANGED = _ffi.loader_changed_fn(_changed_thunk)
_CANCEL = _ffi.loader_cancel_fn(_cancel_thunk)
_NO_CHANGED = _ffi.loader_changed_fn()  # NULL
_NO_CANCEL = _ffi.loader_cancel_fn()  # NULL
_COMPARE_FIELD: Any = next((f[1] for f in _ffi.loader_callbacks._fields_
                           if f[0] == "compare"), None)
"""The type of ``loader_callbacks.compare``, or None for a library without ranged
invalidation: then no loader has a compare callback, and invalidate_range is unavailable."""
_COMPARE_BY_ADDRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_size_t)(_compare_thunk)
"""The compare thunk taking the cursors by address (plain ints, read without a pointer
object); kept alive: _COMPARE points at it."""
_COMPARE = (ctypes.cast(_COMPARE_BY_ADDRESS, _COMPARE_FIELD) if _COMPARE_FIELD is not None
            else None)
_NO_COMPARE = _COMPARE_FIELD() if _COMPARE_FIELD is not None else None  # NULL
_LOCATE_FIELD: Any = next((f[1] for f in _ffi.loader_callbacks._fields_
                          if f[0] == "locate"), None)
_LOCATE_BY_ADDRESS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64,
                                      ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_void_p)(_locate_thunk)
"""The locate thunk taking the buffer and the length by address; kept alive: _LOCATE
points at it."""
_LOCATE = ctypes.cast(_LOCATE_BY_ADDRESS, _LOCATE_FIELD) if _LOCATE_FIELD is not None else None


def _raise_callback_errors(errors: List[Tuple[BaseException, str]], name: str,
                           rc: int) -> None:
    """Raises the first exception callbacks of the call ``name`` raised, with its context."""
    first, where = errors[0]
    try:
        code: Union[Result, int] = Result(rc)
    except ValueError:
        code = rc
    try:
        first.libloader_callback = CallbackContext(  # type: ignore[attr-defined]
            where, name, code, tuple(e for e, _ in errors[1:]))
    except AttributeError:  # pragma: no cover - an exception type without a __dict__
        pass
    _note(first, f"libloader: raised in the callback {where}; re-raised by {name}, "
          f"which completed with {_result_name(rc)}: the loader's state is what that "
          "call left, and every other callback of the call still ran")
    for other, other_where in errors[1:]:
        _note(first, f"libloader: the callback {other_where} also raised "
              f"{type(other).__name__}: {other}")
    raise first


class Loader(Generic[T]):
    """One libloader loader, generic in the host's acquisition type ``T``.

    ``on_issue(read)`` starts a read; the host answers it later, exactly once, from any
    thread, with :meth:`settle` or :meth:`fail`. If ``on_issue`` raises, the read is let go
    of at once (as :meth:`abandon`), before the exception is re-raised: for a read still
    needed that is an own failure the retry rules recover (the backoff through :meth:`tick`,
    :meth:`retry`, a window move), and an answer given to it later anyway is
    :attr:`Answer.STALE`. No read stays outstanding because ``on_issue`` raised.
    ``on_release(acquisition)`` gets back every object :meth:`settle` handed over, exactly
    once, when the loader is done with it (at the latest in :meth:`close`). ``on_change()`` runs after the view or the state changed;
    ``on_cancel(read_id)`` hints that a read's answer is no longer needed: it runs once when a
    read becomes superseded, and again in :meth:`close` for every read still outstanding.
    Answering a cancelled read anyway is fine: it is classified stale. A host that aborts the
    I/O should still answer it, cheaply, with ``settle(read, obj, count=0)``; a read never
    answered keeps further finite reads from starting until the next invalidation, and
    ``fail`` costs a full re-read. A hint can arrive after the host answered the read (it was
    queued first): ignore ids you no longer hold.

    ``compare(a, b)`` orders two non-empty cursors as the source does (negative, 0 or
    positive, as ``a`` comes before, at or after ``b``); it is needed only by
    :meth:`invalidate_range`, runs only inside it, on its thread, and must not call this
    loader.

    ``locate(position)`` returns the cursor whose next item is at ``position`` in the
    source's own numbering (the key of item ``position - 1``, ``b""`` for 0), or None when
    the host cannot tell: an indexed count, an ``OFFSET`` query, a log's offsets. It runs
    only inside :meth:`set_window`, on its thread, for a move farther than
    ``Config.jump_threshold`` from the held pages with no remembered cursor within a page
    of the target, and must not call this loader. Without it (or with None), such a move
    starts at the nearest cursor the loader remembers, or walks page by page.

    ``T`` is what :meth:`settle` takes, ``on_release`` receives and :meth:`view` shows in each
    :class:`Page`; a type checker infers it from ``on_release``'s parameter, or it is given:
    ``Loader[list[int]](on_issue, on_release)``.

    Callbacks run on the thread that made the call, never under the library's locks; they may
    call back into this loader. An exception a callback raises is re-raised from the call that
    triggered it (see the module documentation). Any thread may call any method.

    Arguments are checked before anything happens: a value of the wrong type raises TypeError
    and one out of range ValueError, naming the argument, and the call changes nothing.

    A context manager: ``with Loader(...) as loader:`` closes it on exit. ``close()`` is
    idempotent; an unclosed loader is closed when it is garbage-collected, with a
    ``ResourceWarning``.
    """

    def __init__(self, on_issue: IssueCallback, on_release: ReleaseCallback[T], *,
                 on_change: Optional[ChangeCallback] = None,
                 on_cancel: Optional[CancelCallback] = None,
                 config: Optional[Config] = None,
                 counters: Optional[Tuple[int, int]] = None,
                 compare: Optional[CompareCallback] = None,
                 locate: Optional[LocateCallback] = None,
                 record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        """``config`` is a :class:`Config` or None (the library's defaults); a mapping is
        refused (TypeError): ``Config(**mapping)`` converts one and checks its fields.
        ``counters=(epoch, next_request_id)`` starts the counters there, for testing their
        exhaustion (``loader_new_with_counters``, in the test ABI: it needs a library built
        with the ``testing`` feature, else it raises NotImplementedError).
        ``record=path`` records the loader's run to that file (``loader_record``): every call
        and callback, for ``loader-check --replay`` and for a bug report; it raises
        RecordFailedError when the file cannot be created or ``LOADER_RECORD`` already
        records the loader. ``LOADER_RECORD`` naming a file that cannot be created records
        nothing and warns (RuntimeWarning), not raises: the variable is for a program whose
        code does not change, which is not to fail for it."""
        self._closed = True
        self._handle = 0
        self._owned = False
        """A feed owns it: the feed's finalizer closes it, not this one's."""
        if not callable(on_issue) or not callable(on_release):
            raise TypeError("on_issue and on_release must be callable")
        for name, cb in (("on_change", on_change), ("on_cancel", on_cancel),
                         ("compare", compare), ("locate", locate)):
            if cb is not None and not callable(cb):
                raise TypeError(f"{name} must be callable or None")
        if config is not None and not isinstance(config, Config):
            raise TypeError("config must be a libloader.Config or None, not "
                            f"{type(config).__name__} (Config(**mapping) converts a mapping)")
        start: Optional[Tuple[int, int]] = None
        if counters is not None:
            if not isinstance(counters, (tuple, list)) or len(counters) != 2:
                raise TypeError("counters must be a pair (epoch, next_request_id)")
            start = (_unsigned("counters[0] (epoch)", counters[0], 64),
                     _unsigned("counters[1] (next_request_id)", counters[1], 64))
        lib = _ffi.lib()
        if counters is not None and not _ffi.has_testing():
            raise NotImplementedError("counters= needs libloader built with the testing "
                                      "feature (loader_new_with_counters)")
        c_config = (config or Config()).to_c()
        if locate is not None and _LOCATE_FIELD is None:
            raise NotImplementedError("locate= needs a libloader with loader_locate_fn")
        host: _Host[T] = _Host(on_issue, on_release, on_change, on_cancel, compare, locate)
        with _keys_lock:
            host.key = next(_keys)
        self._host = host
        self._lib = lib
        self._settle_fn = _ffi.settle_taking_bytes()
        self._close_lock = threading.Lock()
        # The optional callbacks stay NULL when not given: the library then skips them,
        # instead of crossing into Python to do nothing.
        callbacks = _ffi.loader_callbacks(host.key, _ISSUE, _RELEASE,
                                          _CHANGED if on_change is not None else _NO_CHANGED,
                                          _CANCEL if on_cancel is not None else _NO_CANCEL)
        if _COMPARE_FIELD is not None:
            callbacks.compare = _COMPARE if compare is not None else _NO_COMPARE
        if _LOCATE_FIELD is not None and locate is not None:
            callbacks.locate = _LOCATE
        out = _ffi.loader_handle(0)
        if start is None:
            rc = lib.loader_new(c_config, callbacks, ctypes.byref(out))
            name = "loader_new"
        else:
            rc = lib.loader_new_with_counters(c_config, callbacks, start[0], start[1],
                                              ctypes.byref(out))
            name = "loader_new_with_counters"
        if rc != Result.OK:
            raise error_for(rc, result_message, name)
        _record_env.warn_if_unrecordable(stacklevel=2)
        if record is not None:
            rc = lib.loader_record(out.value, os.fsencode(record))
            if rc != Result.OK:
                lib.loader_free(out.value)
                raise error_for(rc, result_message, "loader_record")
        self._handle = out.value
        host.handle = out.value
        self._closed = False

    # ---- plumbing ----

    def _invoke(self, name: str, fn: Any, args: Tuple[Any, ...], token: int = 0,
                isolated: bool = False) -> int:
        """Calls ``fn``, the C function ``name``, with the handle and ``args``; returns its
        result code. A refused call gives the acquisition lent under ``token`` (if not 0)
        back to the host. Then re-raises what callbacks raised, once the thread's outermost
        call returns (``isolated``: this call's own callbacks, whatever the depth; for
        ``__del__``)."""
        st = _tls.state
        host = self._host
        st.pinned[host.key] = host
        saved: List[Tuple[BaseException, str]] = []
        if isolated:
            saved, st.errors = st.errors, []
        st.depth += 1
        try:
            rc: int = fn(self._handle, *args)
        finally:
            st.depth -= 1
            errors: List[Tuple[BaseException, str]] = []
            if isolated:
                errors, st.errors = st.errors, saved
            elif st.depth == 0:
                if st.errors:
                    errors, st.errors = st.errors, []
                st.pinned.clear()
        if token and rc != Result.OK:
            host.held.pop(token, None)
        if errors:
            _raise_callback_errors(errors, name, rc)
        return rc

    def _call(self, name: str, *args: Any) -> None:
        rc = self._invoke(name, getattr(self._lib, name), args)
        if rc != Result.OK:
            raise error_for(rc, result_message, name)

    def _read_id(self, read: ReadRef) -> int:
        """The id to pass for ``read``; refuses a :class:`Read` another loader issued."""
        if isinstance(read, Read):
            key = read.loader_key
            if key != self._host.key and key != 0:
                raise ValueError(f"read: {read!r} was issued by another loader (key {key}), "
                                 f"not by this one (key {self._host.key})")
            rid: object = read.read_id
        else:
            rid = read
        if type(rid) is int and 0 <= rid <= _U64:
            return rid
        return _unsigned("read", rid, 64)

    # ---- lifecycle ----

    @property
    def handle(self) -> int:
        """The C handle (a ``uint64_t``); stale once closed."""
        return self._handle

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Frees the loader. Before this returns, ``on_release`` has run exactly once for
        every acquisition the loader still held and ``on_cancel`` for every read still
        outstanding. Later calls raise :class:`~libloader.StaleHandleError`; answers
        to its reads too. Idempotent; allowed inside a callback."""
        self._close(isolated=False)

    def _close(self, isolated: bool) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        rc = self._invoke("loader_free", self._lib.loader_free, (), isolated=isolated)
        if rc != Result.OK:
            raise error_for(rc, result_message, "loader_free")

    def __enter__(self) -> "Loader[T]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_closed", True) or getattr(self, "_owned", False):
            return   # closed, or its owner (a feed) closes it
        try:
            warnings.warn(f"unclosed {self!r}: closing it now", ResourceWarning, stacklevel=2)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
        # Raised from __del__, a callback's exception goes to sys.unraisablehook.
        self._close(isolated=True)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<libloader.Loader handle={self._handle:#x} {state}>"

    # ---- host events ----

    def invalidate(self) -> None:
        """The source changed: starts a repair or a full read as the rules say."""
        self._call("loader_invalidate")

    def appended(self) -> None:
        """Items were added after the source's last item, and nothing else changed (a log
        line, a chat message, a row with a growing key): the cheap report of an append. Nothing
        is re-read and no repair starts; the view stops claiming the source's end, and when
        the window wants the end (or :meth:`follow` is on) one read forward from the last held
        cursor returns just the new items. A read in flight across the append keeps its items,
        but its claim of the end is not believed. Do not report an append as
        ``invalidate_range(last_cursor, None)``: a range starts at an item, so that re-reads
        the last page every time."""
        self._call("loader_appended")

    def follow(self, on: bool = True) -> None:
        """Follow mode, as ``tail -f`` and ``less +F``: pins the window to the source's end
        (its length kept), so that it stays on the last items as the source grows, reading
        forward until the end if the view does not reach it yet. A :meth:`set_window` away
        from the end unpins it and one back to the end pins it again, until
        ``follow(False)``; :meth:`jump` unpins. Read :attr:`state` ``.window_start`` back
        after a change: the loader moves the window itself."""
        if type(on) is not bool:
            raise TypeError(f"on: expected a bool, got {type(on).__name__}")
        self._call("loader_follow", on)

    @property
    def following(self) -> bool:
        """Whether the window is pinned to the source's end now."""
        out = ctypes.c_bool(False)
        self._call("loader_following", out)
        return bool(out.value)

    def invalidate_range(self, from_cursor: bytes, to_cursor: Optional[bytes]) -> None:
        """The source changed, but only between two positions. An item lies at the cursor
        just after it (its key, in keyset terms); every changed item (inserted, deleted or
        updated) lies at a cursor ``k`` with ``from_cursor <= k <= to_cursor``. ``b""`` is
        the source's start, ``None`` (``to_cursor`` only) its end. A host reporting one
        changed row passes that row's cursor as both.

        The next repair re-reads only the held pages that may hold a changed item, with
        bounded reads (:attr:`Read.until`), and rejoins the pages kept before and after them;
        a change outside the held pages re-reads nothing. Several ranged invalidations before
        a commit merge; :meth:`invalidate` subsumes them.

        Needs ``compare=`` (else :class:`~libloader.NoCompareError`, and nothing
        changed). A range whose end comes before its start raises
        :class:`~libloader.RangeReversedError` (nothing changed); a cursor over
        ``MAX_CURSOR_LEN`` :class:`~libloader.CursorTooLongError`; a cursor that is
        not bytes-like TypeError. An exception ``compare`` raised is re-raised here, after
        the call completed with those two cursors taken as equal: the range may have been
        marked wrongly, so follow it with :meth:`invalidate` to be safe. A range too narrow
        (a change outside it) is a host bug: the view may be wrong outside what was re-read
        until an invalidation covers it; nothing leaks. A library without the export
        (``loader_invalidate_range``) raises NotImplementedError."""
        start = _cursor("from_cursor", from_cursor)
        end = None if to_cursor is None else _cursor("to_cursor", to_cursor)
        if not hasattr(self._lib, "loader_invalidate_range") or _COMPARE_FIELD is None:
            raise NotImplementedError("this libloader has no ranged invalidation "
                                      "(loader_invalidate_range): call invalidate()")
        from_ptr, from_len = _ffi.cursor_arg(start)
        if end is None:
            to_ptr, to_len = None, 0         # NULL: the source's end
        elif end:
            to_ptr, to_len = _ffi.cursor_arg(end)
        else:
            to_ptr, to_len = (ctypes.c_uint8 * 1)(), 0   # not NULL, empty: the source's start
        self._call("loader_invalidate_range", from_ptr, from_len, to_ptr, to_len)

    def settle(self, read: ReadRef, acquisition: T, *, count: Optional[int] = None,
               next_cursor: bytes = b"", end_of_source: bool = False,
               items_before: Optional[int] = None) -> Answer:
        """Answers ``read`` with ``count`` items (default ``len(acquisition)``) held by
        ``acquisition``, and the cursor after them.

        ``items_before`` (a host that knows it: a count query, an offset its API returns) is
        how many items come before the page's first: when the page enters the view, the view
        is renumbered so that it starts there, and the window moves with it
        (``loader_settle_counted``). A count that contradicts the view is ignored.

        ``next_cursor`` is bytes-like (``bytes``, ``bytearray``, ``memoryview``); an int, a
        str or a list is refused. ``end_of_source`` is a bool.

        An empty page (no items) whose ``next_cursor`` moved is progress: it takes no
        position, ``on_release`` gets it back at once, and the next read starts at
        ``next_cursor`` (a bounded read's too, short of its ``until``). An unmoved
        ``next_cursor`` with items, or without items and without ``end_of_source`` (for a read
        not hinted cancelled), is :attr:`Answer.CURSOR_STALLED`: a chain escalates to a full
        read, a finite or full read records an own failure that waits for backoff.

        On success the loader owns ``acquisition`` until it passes it to ``on_release``
        (possibly before this returns) and the result says how the answer was classified;
        a late answer to a superseded read is :attr:`Answer.STALE`, not an error. On a
        :class:`LoaderError`, TypeError or ValueError nothing changed and the host still owns
        ``acquisition``. An exception a callback of this call raised propagates after the
        call completed; its :func:`callback_context` says so (and the acquisition was
        accepted)."""
        host = self._host
        # The common case (a Read this loader issued: its id came from the library) is
        # checked inline; anything else goes through the checks that name the argument.
        if type(read) is Read and read.loader_key == host.key:
            read_id = read.read_id
            if type(read_id) is not int or not 0 <= read_id <= _U64:
                read_id = self._read_id(read)
        else:
            read_id = self._read_id(read)
        if count is None:
            try:
                count = len(acquisition)  # type: ignore[arg-type]
            except TypeError:
                raise TypeError("count is required when the acquisition has no len()") from None
        n = count if type(count) is int and 0 <= count <= _U32 else _unsigned("count", count, 32)
        cursor = next_cursor if type(next_cursor) is bytes else _cursor("next_cursor",
                                                                          next_cursor)
        if end_of_source is not True and end_of_source is not False:
            raise TypeError(f"end_of_source must be a bool, not {type(end_of_source).__name__}")
        if items_before is not None:
            return self._settle_counted(read_id, acquisition, n, cursor, end_of_source,
                                        _unsigned("items_before", items_before, 64))
        # The hot path: what _invoke does, written out for this one call (its generic
        # argument passing and a fresh out-parameter per call cost as much as the checks).
        token = next(host._tokens)   # host.lend, inline
        host.held[token] = acquisition
        st = _tls.state
        st.pinned[host.key] = host
        depth = st.depth
        outs = st.outs
        if depth == len(outs):
            outs.append(_ffi.c_enum(0))
        out = outs[depth]
        st.depth = depth + 1
        errors = None
        try:
            # An empty cursor crosses as NULL with length 0, as the header documents.
            rc: int = self._settle_fn(self._handle, read_id, token, n, cursor or None,
                                      len(cursor), end_of_source, out)
        finally:
            st.depth = depth
            if depth == 0:
                if st.errors:
                    errors, st.errors = st.errors, []
                st.pinned.clear()
        if rc != Result.OK:
            host.held.pop(token, None)
        if errors:
            _raise_callback_errors(errors, "loader_settle", rc)
        if rc != Result.OK:
            raise error_for(rc, result_message, "loader_settle")
        value = out.value
        return _ANSWERS[value] if 0 <= value < len(_ANSWERS) else _answer(value)

    def _settle_counted(self, read_id: int, acquisition: T, n: int, cursor: bytes,
                        end_of_source: bool, before: int) -> Answer:
        """``settle(..., items_before=before)``: ``loader_settle_counted``."""
        token = self._host.lend(acquisition)
        out = _ffi.c_enum(0)
        ptr, length = _ffi.cursor_arg(bytes(cursor))
        rc = self._invoke("loader_settle_counted", self._lib.loader_settle_counted,
                          (read_id, token, n, ptr, length, end_of_source, before, out), token)
        if rc != Result.OK:
            raise error_for(rc, result_message, "loader_settle_counted")
        return _answer(out.value)

    def fail(self, read: ReadRef, code: int = 0) -> Answer:
        """Answers ``read`` with a failure; ``code`` is the host's own. Returns
        :attr:`Answer.CURRENT` for an own failure (it waits for a retry: :meth:`retry`, a
        window move, or the backoff timer through :meth:`tick`) or :attr:`Answer.STALE` for
        a superseded read's (it blocks nothing). Failing a read after its ``on_cancel`` hint
        is how a host lets it go: as :meth:`abandon`, it costs nothing."""
        read_id = self._read_id(read)
        out = _ffi.c_enum(0)
        self._call("loader_fail", read_id, _signed("code", code, 32), out)
        return _answer(out.value)

    def abandon(self, read: ReadRef) -> Answer:
        """The host gives up on ``read`` and will not answer it (a worker stopped, a request
        aborted). For a read the loader no longer needed (it was hinted through
        ``on_cancel``) this costs nothing: no debt, no re-read, and :attr:`Answer.STALE` is
        returned. For a read still needed it is a failure, as :meth:`fail`
        (:attr:`Answer.CURRENT`: it waits for a retry). If the answer arrives later anyway,
        :meth:`settle` accepts it as :attr:`Answer.STALE` and ``on_release`` runs for it at
        once. A superseded read never answered is let go of the same way after
        ``Config.read_timeout_ms`` of :meth:`tick` time."""
        read_id = self._read_id(read)
        out = _ffi.c_enum(0)
        self._call("loader_abandon", read_id, out)
        return _answer(out.value)

    def retry(self) -> bool:
        """Retries a recorded own failure now, with a full read. Returns whether a read
        started (False: nothing to retry)."""
        out = ctypes.c_bool(False)
        self._call("loader_retry", out)
        return bool(out.value)

    def set_window(self, start: int, length: int) -> None:
        """Moves the window to items ``[start, start + length)``. Growing it issues reads;
        with a failure recorded it retries. A move farther than ``Config.jump_threshold``
        from the held pages starts at the nearest cursor known (a page read before, the
        source's start, ``locate``) and reads about the window plus prefetch; with none
        known, it walks page by page. An exception ``locate`` raised is re-raised here,
        after the move (which took the answer as unknown)."""
        self._call("loader_set_window", _unsigned("start", start, 64),
                   _unsigned("length", length, 64))

    def jump(self, cursor: bytes, position: int) -> None:
        """Rebuilds the view around the item just after ``cursor`` (a ``next_cursor`` the
        host gave earlier, or one it made; ``b""`` is the source's start), numbering that
        item ``position``; the window moves to start there, its length kept. A loader with
        nothing held and nothing in flight just starts there; otherwise the view is
        invalidated and the repair starts at ``cursor``.

        ``cursor`` is bytes-like (an int, a str or a list is refused: TypeError);
        ``position`` a non-negative int (TypeError, ValueError). The library refuses a cursor
        over ``MAX_CURSOR_LEN`` (:class:`~libloader.CursorTooLongError`) and a
        ``position`` whose window would overflow
        (:class:`~libloader.WindowOverflowError`)."""
        raw = _cursor("cursor", cursor)
        pos = _unsigned("position", position, 64)
        ptr, length = _ffi.cursor_arg(raw)
        self._call("loader_jump", ptr, length, pos)

    def tick(self, now_ms: int) -> None:
        """Tells the loader the time (ms, any monotonic clock); fires a due backoff retry."""
        self._call("loader_tick", _unsigned("now_ms", now_ms, 64))

    def next_deadline(self) -> Optional[int]:
        """When to call :meth:`tick` next (ms): a backoff retry is armed or a superseded read
        will time out; None if neither."""
        armed = ctypes.c_bool(False)
        deadline = ctypes.c_uint64(0)
        self._call("loader_next_deadline", armed, deadline)
        return int(deadline.value) if armed.value else None

    # ---- introspection ----

    @property
    def state(self) -> Snapshot:
        """The spec's abstract state and the loader's counts."""
        out = _ffi.loader_snapshot()
        self._call("loader_state", out)
        return Snapshot.from_c(out)

    def stats(self) -> Counts:
        """The loader's counters: reads by kind, answers by class, failures, retries,
        acquisitions and cancellation hints."""
        out = _ffi.loader_counts()
        self._call("loader_stats", out)
        return Counts.from_c(out)

    def explain(self) -> str:
        """Why the loader waits, in plain sentences, one a line (``loader_explain``):
        ``"quiescent"`` when nothing is left to do; otherwise the reads it waits for (id,
        direction, cursor, issued how long ago on the :meth:`tick` clock), a repair running,
        a failure recorded and what retries it ("retry budget spent after 5 failures: call
        Loader.retry() or move the window"), the reads let go of. For people and logs: the
        wording may change between releases; decide with :attr:`state`."""
        fn = getattr(self._lib, "loader_explain", None)
        if fn is None:
            raise NotImplementedError("explain: the loaded libloader predates loader_explain")
        capacity = 512
        while True:
            buf = ctypes.create_string_buffer(capacity)
            n = ctypes.c_size_t(0)
            rc = self._invoke("loader_explain", fn, (buf, capacity, n))
            if rc == Result.BUFFER_TOO_SMALL:
                # The state may change before the next try: leave some room.
                capacity = int(n.value) + 64
                continue
            if rc != Result.OK:
                raise error_for(rc, result_message, "loader_explain")
            # The library's sentences name its C functions; a Python host calls methods.
            return buf.value.decode("utf-8").replace("loader_retry", "Loader.retry()")

    def requests(self) -> List[RequestInfo]:
        """Every live request (in flight, settled, or failed and not yet released), in id
        order. Released requests are forgotten and not listed."""
        items = self._fetch("loader_requests", _ffi.loader_request_info, None)
        return [RequestInfo.from_c(r) for r in items]

    def view(self) -> View[T]:
        """The view's pages in source order, and whether it is being revalidated.

        Every page holds its acquisition: if another thread made the loader release one
        between the library's listing and its lookup here, the view changed meanwhile, and
        it is taken again."""
        for _ in range(_VIEW_ATTEMPTS):
            revalidating = ctypes.c_bool(False)
            items = self._fetch("loader_view", _ffi.loader_page, revalidating)
            held = self._host.held
            try:
                pages = tuple(Page(acquisition=held[p.acquisition], token=p.acquisition,
                                   count=p.count, epoch=p.epoch, start=p.start)
                              for p in items)
            except KeyError:
                continue
            return View(pages=pages, revalidating=bool(revalidating.value))
        raise RuntimeError(f"libloader: the view kept listing acquisitions this loader does "
                           f"not hold ({_VIEW_ATTEMPTS} attempts): answers given through the "
                           "raw ctypes layer, or releases on other threads without pause")

    def _fetch(self, name: str, struct: type, extra: Optional[ctypes.c_bool]) -> Sequence[Any]:
        """Calls a capacity/out_len listing, growing the array while it is too small."""
        fn = getattr(self._lib, name)
        capacity = 16
        while True:
            arr = _ffi.array(struct, capacity)
            n = ctypes.c_size_t(0)
            args: Tuple[Any, ...] = (arr, capacity, n) if extra is None else (
                arr, capacity, n, extra)
            rc = self._invoke(name, fn, args)
            if rc == Result.BUFFER_TOO_SMALL:
                # Another thread may add more before the next try: leave some room.
                capacity = int(n.value) + 8
                continue
            if rc != Result.OK:
                raise error_for(rc, result_message, name)
            return arr[: n.value]


def _answer(value: int) -> Answer:
    """The :class:`Answer` for a C value, by index: the enum's call costs more than the rest
    of a ``settle``'s bookkeeping."""
    if 0 <= value < len(_ANSWERS):
        return _ANSWERS[value]
    return Answer(value)  # raises ValueError naming the value


def _result_name(rc: int) -> str:
    try:
        return f"LOADER_RESULT_{Result(rc).name}"
    except ValueError:
        return f"result {rc}"


def _cursor(name: str, value: object) -> bytes:
    """``value`` as bytes if it is bytes-like (supports the buffer protocol), else TypeError
    naming ``name``: ``bytes(123)`` would be 123 zero bytes, and ``bytes("s")`` an error only
    by luck."""
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, str):
        raise TypeError(f"{name} must be bytes, not str")
    try:
        return memoryview(value).tobytes()  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be bytes-like (bytes, bytearray, memoryview), not "
                        f"{type(value).__name__}") from None
