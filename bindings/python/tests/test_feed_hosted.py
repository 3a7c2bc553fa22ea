"""The C feed in hosted mode (``loader_feed_new_hosted``) driven from Python threads through
ctypes, as a Python executor would drive it: the Python threads are the feed's workers, each
looping load -> ``loader_feed_complete_next_job``; a load that raises fails its read, which
the feed's backoff retries; every page is released exactly once, and the feed's counters say
so."""

from __future__ import annotations

import ctypes
import threading
from typing import Dict, List, Optional, Set

from libloader import Config, _ffi

OK, TIMED_OUT = 0, 27
ITEMS = 1000


class Hosted:
    """A hosted-mode feed over the numbers 0..ITEMS, a page of 10 per read, loaded by
    ``threads`` Python threads; the first ``fails`` loads raise."""

    def __init__(self, threads: int, fails: int = 0) -> None:
        self.lib = _ffi.lib()
        self.lock = threading.Lock()
        self.made: Set[int] = set()
        self.released: List[int] = []
        self.loaded_on: Set[int] = set()
        self.fails = fails
        self.next_acq = 1

        @_ffi.loader_release_fn
        def release(_ud: Optional[int], acq: int) -> None:
            with self.lock:
                self.released.append(acq)

        self._release = release
        cfg = _ffi.loader_feed_config()
        cfg.struct_size = ctypes.sizeof(cfg)
        cfg.workers = threads
        cfg.release = release
        self._lc = Config(page_size=10, prefetch_distance=0).to_c()
        cfg.loader = ctypes.pointer(self._lc)
        self.handle = _ffi.loader_feed_handle(0)
        assert self.lib.loader_feed_new_hosted(ctypes.byref(cfg), ctypes.byref(self.handle)) == OK
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def _load(self, r: _ffi.loader_read, out: _ffi.loader_load_result,
              at: List[ctypes.Array]) -> int:  # type: ignore[type-arg]
        start = int.from_bytes(ctypes.string_at(r.cursor, r.cursor_len), "big") \
            if r.cursor_len else 0
        with self.lock:
            self.loaded_on.add(threading.get_ident())
            if self.fails > 0:
                self.fails -= 1
                raise OSError("the source is down")
            acq = self.next_acq
            self.next_acq += 1
            self.made.add(acq)
        end = min(ITEMS, start + r.limit)
        buf = (ctypes.c_uint8 * 8).from_buffer_copy(end.to_bytes(8, "big"))
        at[:] = [buf]
        out.acquisition = acq
        out.count = end - start
        out.next_cursor = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
        out.next_cursor_len = 8
        out.end_of_source = end == ITEMS
        return 0

    def _run(self) -> None:
        h = self.handle.value
        job = _ffi.loader_feed_job()
        out = _ffi.loader_load_result()
        keep: List[ctypes.Array] = []  # type: ignore[type-arg]
        rc = self.lib.loader_feed_next_job(h, 100, ctypes.byref(job))
        while True:
            if rc == TIMED_OUT:
                rc = self.lib.loader_feed_next_job(h, 100, ctypes.byref(job))
                continue
            if rc != OK or job.token == 0:
                return  # the feed was freed
            try:
                status = self._load(job.read, out, keep)
            except Exception:
                status = 1
            rc = self.lib.loader_feed_complete_next_job(
                job.token, status, ctypes.byref(out) if status == 0 else None, 100,
                ctypes.byref(job))

    def free(self) -> _ffi.loader_feed_counts:
        counts = _ffi.loader_feed_counts()
        counts.struct_size = ctypes.sizeof(counts)
        left = ctypes.c_uint32(99)
        assert self.lib.loader_feed_free_counted(self.handle, -1, ctypes.byref(left),
                                                 ctypes.byref(counts)) == OK
        assert left.value == 0
        for t in self.threads:
            t.join(10)
            assert not t.is_alive()
        return counts


def _released_once(feed: Hosted) -> None:
    seen: Dict[int, int] = {}
    for acq in feed.released:
        seen[acq] = seen.get(acq, 0) + 1
    assert set(seen) == feed.made
    assert all(n == 1 for n in seen.values())


def test_python_threads_are_the_workers_and_every_page_is_released_once() -> None:
    feed = Hosted(threads=3)
    assert feed.lib.loader_feed_set_window(feed.handle, 0, 200) == OK
    assert feed.lib.loader_feed_wait_quiescent(feed.handle, 20000) == OK
    assert feed.lib.loader_feed_set_window(feed.handle, 500, 100) == OK
    assert feed.lib.loader_feed_wait_quiescent(feed.handle, 20000) == OK
    ours = {t.ident for t in feed.threads}
    counts = feed.free()
    assert feed.loaded_on and feed.loaded_on <= ours
    _released_once(feed)
    assert counts.handed_out == len(feed.made)
    assert counts.handed_out == counts.accepted + counts.given_back
    assert counts.running == 0


def test_a_load_that_raises_fails_its_read_and_the_backoff_retries_it() -> None:
    feed = Hosted(threads=2, fails=2)
    assert feed.lib.loader_feed_set_window(feed.handle, 0, 50) == OK
    assert feed.lib.loader_feed_wait_quiescent(feed.handle, 20000) == OK
    counts = feed.free()
    _released_once(feed)
    assert counts.failed == 2
    assert counts.handed_out == len(feed.made) == counts.accepted + counts.given_back

