"""The :class:`Loader`: one libloader handle, with Python callables as its callbacks.

How callbacks reach Python
--------------------------
Four module-level ctypes thunks serve every loader; the C ``userdata`` is a small integer
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
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _ffi
from .enums import Answer, Result
from .errors import error_for
from .types import Config, Counts, Page, Read, RequestInfo, Snapshot, View, _signed, _unsigned

IssueCallback = Callable[[Read], Any]
ReleaseCallback = Callable[[Any], Any]
ChangeCallback = Callable[[], Any]
CancelCallback = Callable[[int], Any]
ReadRef = Union[Read, int]

_MISSING = object()


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
    """Attached to an exception a callback raised, when a call re-raises it."""

    callback: str
    """The callback that raised it, with its arguments."""
    call: str
    """The C function whose call delivered the callback and re-raised the exception."""
    result: Union[Result, int]
    """What that call returned: ``Result.OK`` means it completed (a ``settle``'s acquisition
    passed to the loader)."""
    others: Tuple[BaseException, ...]
    """Exceptions later callbacks of the same call raised."""


def callback_context(exc: BaseException) -> Optional[CallbackContext]:
    """The :class:`CallbackContext` of an exception re-raised from a callback, else None."""
    ctx = getattr(exc, "libloader_callback", None)
    return ctx if isinstance(ctx, CallbackContext) else None


def _note(e: BaseException, text: str) -> None:
    add_note = getattr(e, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(text)


class _Host:
    """What the C side's ``userdata`` names: the callables and the lent acquisitions."""

    def __init__(self, on_issue: IssueCallback, on_release: ReleaseCallback,
                 on_change: Optional[ChangeCallback],
                 on_cancel: Optional[CancelCallback]) -> None:
        self.on_issue = on_issue
        self.on_release = on_release
        self.on_change = on_change
        self.on_cancel = on_cancel
        self.held: Dict[int, Any] = {}
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()
        self.key = 0

    def lend(self, obj: Any) -> int:
        with self._lock:
            token = next(self._tokens)
            self.held[token] = obj
        return token


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        # (exception, which callback) raised by callbacks of the running outermost call.
        self.errors: List[Tuple[BaseException, str]] = []
        # The hosts of every loader the running outermost call used, by key: their callbacks
        # may run on this thread until it returns.
        self.pinned: Dict[int, _Host] = {}


_tls = _ThreadState()
_keys = itertools.count(1)
_keys_lock = threading.Lock()


def _host_for(userdata: Optional[int]) -> _Host:
    host = _tls.pinned.get(userdata or 0)
    if host is None:
        raise RuntimeError(f"libloader: a callback for loader key {userdata} ran on a thread "
                           "that is not calling it (only the raw ctypes layer can do that)")
    return host


def _capture(e: BaseException, where: str) -> None:
    try:
        _tls.errors.append((e, where))
    except BaseException:  # pragma: no cover - interpreter shutdown
        pass


def _issue_thunk(userdata: Optional[int], read_ptr: Any) -> None:
    where = "on_issue"
    try:
        host = _host_for(userdata)
        read = Read.from_c(read_ptr.contents)
        where = f"on_issue({read!r})"
        host.on_issue(read)
    except BaseException as e:
        _capture(e, where)


def _release_thunk(userdata: Optional[int], token: int) -> None:
    where = f"on_release (token {token})"
    try:
        host = _host_for(userdata)
        obj = host.held.pop(token, _MISSING)
        if obj is _MISSING:
            raise RuntimeError(f"libloader: the library released token {token}, which it "
                               "does not hold (released twice, or never accepted)")
        host.on_release(obj)
    except BaseException as e:
        _capture(e, where)


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


_ISSUE = _ffi.loader_issue_fn(_issue_thunk)
_RELEASE = _ffi.loader_release_fn(_release_thunk)
_CHANGED = _ffi.loader_changed_fn(_changed_thunk)
_CANCEL = _ffi.loader_cancel_fn(_cancel_thunk)


class Loader:
    """One libloader loader.

    ``on_issue(read)`` starts a read; the host answers it later, exactly once, from any
    thread, with :meth:`settle` or :meth:`fail`. ``on_release(acquisition)`` gets back every
    object :meth:`settle` handed over, exactly once, when the loader is done with it (at the
    latest in :meth:`close`). ``on_change()`` runs after the view or the state changed;
    ``on_cancel(read_id)`` hints that a read's answer is no longer needed: it runs once when a
    read becomes superseded, and again in :meth:`close` for every read still outstanding.
    Answering a cancelled read anyway is fine: it is classified stale. A host that aborts the
    I/O should still answer it, cheaply, with ``settle(read, obj, count=0)``; a read never
    answered keeps further finite reads from starting until the next invalidation, and
    ``fail`` costs a full re-read. A hint can arrive after the host answered the read (it was
    queued first): ignore ids you no longer hold.

    Callbacks run on the thread that made the call, never under the library's locks; they may
    call back into this loader. An exception a callback raises is re-raised from the call that
    triggered it (see the module documentation). Any thread may call any method.

    A context manager: ``with Loader(...) as loader:`` closes it on exit. ``close()`` is
    idempotent; an unclosed loader is closed when it is garbage-collected, with a
    ``ResourceWarning``.
    """

    def __init__(self, on_issue: IssueCallback, on_release: ReleaseCallback, *,
                 on_change: Optional[ChangeCallback] = None,
                 on_cancel: Optional[CancelCallback] = None,
                 config: Optional[Config] = None,
                 counters: Optional[Tuple[int, int]] = None) -> None:
        """``counters=(epoch, next_request_id)`` starts the counters there, for testing
        their exhaustion (``loader_new_with_counters``, in the test ABI: it needs a library
        built with the ``testing`` feature, else it raises NotImplementedError)."""
        self._closed = True
        self._handle = 0
        if not callable(on_issue) or not callable(on_release):
            raise TypeError("on_issue and on_release must be callable")
        for name, cb in (("on_change", on_change), ("on_cancel", on_cancel)):
            if cb is not None and not callable(cb):
                raise TypeError(f"{name} must be callable or None")
        lib = _ffi.lib()
        if counters is not None and not _ffi.has_testing():
            raise NotImplementedError("counters= needs libloader built with the testing "
                                      "feature (loader_new_with_counters)")
        c_config = (config or Config()).to_c()
        host = _Host(on_issue, on_release, on_change, on_cancel)
        with _keys_lock:
            host.key = next(_keys)
        self._host = host
        self._close_lock = threading.Lock()
        callbacks = _ffi.loader_callbacks(host.key, _ISSUE, _RELEASE, _CHANGED, _CANCEL)
        out = _ffi.loader_handle(0)
        if counters is None:
            rc = lib.loader_new(c_config, callbacks, ctypes.byref(out))
            name = "loader_new"
        else:
            epoch = _unsigned("epoch", counters[0], 64)
            next_id = _unsigned("next_request_id", counters[1], 64)
            rc = lib.loader_new_with_counters(c_config, callbacks, epoch, next_id,
                                              ctypes.byref(out))
            name = "loader_new_with_counters"
        if rc != Result.OK:
            raise error_for(rc, result_message, name)
        self._handle = out.value
        self._closed = False

    # ---- plumbing ----

    def _invoke(self, name: str, *args: Any, isolated: bool = False,
                on_result: Optional[Callable[[int], None]] = None) -> int:
        """Calls the C function ``name`` with the handle and ``args``; returns its result code,
        after
        ``on_result(rc)`` if given. Then re-raises what callbacks raised, once the thread's
        outermost call returns (``isolated``: this call's own callbacks, whatever the depth;
        for ``__del__``)."""
        fn = getattr(_ffi.lib(), name)
        st = _tls
        st.pinned[self._host.key] = self._host
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
                errors, st.errors = st.errors, []
            if st.depth == 0:
                st.pinned.clear()
        if on_result is not None:
            on_result(rc)
        if errors:
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
        return rc

    def _call(self, name: str, *args: Any) -> None:
        rc = self._invoke(name, *args)
        if rc != Result.OK:
            raise error_for(rc, result_message, name)

    # ---- lifecycle ----

    @property
    def handle(self) -> int:
        """The C handle (a ``uint64_t``); stale once closed."""
        return self._handle

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Frees the loader. Before this returns, ``on_release`` has run exactly once for
        every acquisition the loader still held and ``on_cancel`` for every read still
        outstanding. Later calls raise :class:`~libloader.errors.StaleHandleError`; answers
        to its reads too. Idempotent; allowed inside a callback."""
        self._close(isolated=False)

    def _close(self, isolated: bool) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        rc = self._invoke("loader_free", isolated=isolated)
        if rc != Result.OK:
            raise error_for(rc, result_message, "loader_free")

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
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

    def settle(self, read: ReadRef, acquisition: Any, *, count: Optional[int] = None,
               next_cursor: bytes = b"", end_of_source: bool = False) -> Answer:
        """Answers ``read`` with ``count`` items (default ``len(acquisition)``) held by
        ``acquisition``, any object, and the cursor after them.

        On success the loader owns ``acquisition`` until it passes it to ``on_release``
        (possibly before this returns) and the result says how the answer was classified;
        a late answer to a superseded read is :attr:`Answer.STALE`, not an error. On a
        :class:`LoaderError` nothing changed and the host still owns ``acquisition``. An
        exception a callback of this call raised propagates after the call completed; its
        :func:`callback_context` says so (and the acquisition was accepted)."""
        read_id = _read_id(read)
        if count is None:
            try:
                count = len(acquisition)
            except TypeError:
                raise TypeError("count is required when the acquisition has no len()") from None
        n = _unsigned("count", count, 32)
        cursor = _cursor("next_cursor", next_cursor)
        ptr, length = _ffi.cursor_arg(cursor)
        host = self._host
        token = host.lend(acquisition)
        out = _ffi.c_enum(0)

        def refused(rc: int) -> None:
            if rc != Result.OK:
                host.held.pop(token, None)

        rc = self._invoke("loader_settle", read_id, token, n, ptr, length,
                          bool(end_of_source), ctypes.byref(out), on_result=refused)
        if rc != Result.OK:
            raise error_for(rc, result_message, "loader_settle")
        return Answer(out.value)

    def fail(self, read: ReadRef, code: int = 0) -> Answer:
        """Answers ``read`` with a failure; ``code`` is the host's own. Returns
        :attr:`Answer.CURRENT` for an own failure (it waits for a retry: :meth:`retry`, a
        window move, or the backoff timer through :meth:`tick`) or :attr:`Answer.STALE` for
        a superseded read's (it blocks nothing)."""
        out = _ffi.c_enum(0)
        self._call("loader_fail", _read_id(read), _signed("code", code, 32), ctypes.byref(out))
        return Answer(out.value)

    def retry(self) -> bool:
        """Retries a recorded own failure now, with a full read. Returns whether a read
        started (False: nothing to retry)."""
        out = ctypes.c_bool(False)
        self._call("loader_retry", ctypes.byref(out))
        return bool(out.value)

    def set_window(self, start: int, length: int) -> None:
        """Moves the window to items ``[start, start + length)``. Growing it issues reads;
        with a failure recorded it retries."""
        self._call("loader_set_window", _unsigned("start", start, 64),
                   _unsigned("length", length, 64))

    def tick(self, now_ms: int) -> None:
        """Tells the loader the time (ms, any monotonic clock); fires a due backoff retry."""
        self._call("loader_tick", _unsigned("now_ms", now_ms, 64))

    def next_deadline(self) -> Optional[int]:
        """When to call :meth:`tick` next (ms), or None if no backoff retry is armed."""
        armed = ctypes.c_bool(False)
        deadline = ctypes.c_uint64(0)
        self._call("loader_next_deadline", ctypes.byref(armed), ctypes.byref(deadline))
        return int(deadline.value) if armed.value else None

    # ---- introspection ----

    @property
    def state(self) -> Snapshot:
        """The spec's abstract state and the loader's counts."""
        out = _ffi.loader_snapshot()
        self._call("loader_state", ctypes.byref(out))
        return Snapshot.from_c(out)

    def stats(self) -> Counts:
        """The loader's counters: reads by kind, answers by class, failures, retries,
        acquisitions and cancellation hints."""
        out = _ffi.loader_counts()
        self._call("loader_stats", ctypes.byref(out))
        return Counts.from_c(out)

    def requests(self) -> List[RequestInfo]:
        """Every live request (in flight, settled, or failed and not yet released), in id
        order. Released requests are forgotten and not listed."""
        items = self._fetch("loader_requests", _ffi.loader_request_info, None)
        return [RequestInfo.from_c(r) for r in items]

    def view(self) -> View:
        """The view's pages in source order, and whether it is being revalidated."""
        revalidating = ctypes.c_bool(False)
        items = self._fetch("loader_view", _ffi.loader_page, revalidating)
        held = self._host.held
        pages = tuple(
            Page(acquisition=held.get(p.acquisition), token=p.acquisition, count=p.count,
                 epoch=p.epoch, start=p.start)
            for p in items)
        return View(pages=pages, revalidating=bool(revalidating.value))

    def _fetch(self, name: str, struct: type, extra: Optional[ctypes.c_bool]) -> Sequence[Any]:
        """Calls a capacity/out_len listing, growing the array while it is too small."""
        capacity = 16
        while True:
            arr = _ffi.array(struct, capacity)
            n = ctypes.c_size_t(0)
            args: List[Any] = [arr, capacity, ctypes.byref(n)]
            if extra is not None:
                args.append(ctypes.byref(extra))
            rc = self._invoke(name, *args)
            if rc == Result.BUFFER_TOO_SMALL:
                # Another thread may add more before the next try: leave some room.
                capacity = int(n.value) + 8
                continue
            if rc != Result.OK:
                raise error_for(rc, result_message, name)
            return arr[: n.value]


def _result_name(rc: int) -> str:
    try:
        return f"LOADER_RESULT_{Result(rc).name}"
    except ValueError:
        return f"result {rc}"


def _read_id(read: ReadRef) -> int:
    return _unsigned("read", read.read_id if isinstance(read, Read) else read, 64)


def _cursor(name: str, value: Any) -> bytes:
    if isinstance(value, str):
        raise TypeError(f"{name} must be bytes, not str")
    try:
        return bytes(value)
    except TypeError:
        raise TypeError(f"{name} must be bytes-like, not {type(value).__name__}") from None
