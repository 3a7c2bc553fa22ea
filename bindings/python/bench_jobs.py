"""The engine's cost from Python, for the shapes the Python feeds could take on it: a minimal
executor over job mode (loader_feed_new_jobs: Python threads looping next_job -> load ->
complete_job) and over hosted mode (loader_feed_new_hosted: Python threads looping load ->
complete_next_job, the answer and the next job in one call), on bench_events.py's 50-row
SQLite keyset query, beside the bare loop calling the same load and the threaded Feed (itself
hosted mode since the Python feed moved onto the engine), in
one run. A measurement, not a feed: no view items, no problems, no exceptions."""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import tempfile
import threading
from typing import Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_events as be  # noqa: E402
from libloader import Direction, LoadResult, _ffi  # noqa: E402

OK, TIMED_OUT = 0, 27


class JobFeed:
    def __init__(self, load, workers: int, threads: int,  # type: ignore[no-untyped-def]
                 hosted: bool = False) -> None:
        lib = self.lib = _ffi.lib()
        self.load = load
        self.pages: Dict[int, LoadResult] = {}   # acquisition -> the load's result
        self.next_acq = 1
        self.lock = threading.Lock()

        @_ffi.loader_release_fn
        def release(_ud, acq):  # type: ignore[no-untyped-def]
            self.pages.pop(acq, None)
        self._release = release
        cfg = _ffi.loader_feed_config()
        cfg.struct_size = ctypes.sizeof(cfg)
        cfg.workers = workers
        cfg.release = release
        self._lc = be._sql_config().to_c()
        cfg.loader = ctypes.pointer(self._lc)
        self.handle = _ffi.loader_feed_handle(0)
        if hosted:
            rc = lib.loader_feed_new_hosted(ctypes.byref(cfg), ctypes.byref(self.handle))
        else:
            rc = lib.loader_feed_new_jobs(ctypes.byref(cfg), _ffi.loader_feed_ready_fn(),
                                          ctypes.byref(self.handle))
        assert rc == OK, rc
        run = self._run_hosted if hosted else self._run
        self.threads = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def _load(self, r: _ffi.loader_read, out: _ffi.loader_load_result) -> tuple:
        """Runs the load for read `r` and fills `out`: the job's status (0, or 1 for a load
        that raised) and the cursor's buffer, to keep alive until the job is answered."""
        cursor = ctypes.string_at(r.cursor, r.cursor_len) if r.cursor_len else b""
        try:
            result = self.load(cursor, r.limit,
                               Direction.FORWARD if r.direction == 0 else Direction.BACKWARD)
        except Exception:
            return 1, None
        with self.lock:
            acq = self.next_acq
            self.next_acq += 1
        self.pages[acq] = result
        nc = result.next_cursor
        buf = (ctypes.c_uint8 * len(nc)).from_buffer_copy(nc) if nc else None
        out.acquisition = acq
        out.count = len(result.items)
        out.next_cursor = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)) if buf else None
        out.next_cursor_len = len(nc)
        out.end_of_source = result.end_of_source
        return 0, buf

    def _run(self) -> None:
        lib, h = self.lib, self.handle.value
        job = _ffi.loader_feed_job()
        out = _ffi.loader_load_result()
        while True:
            rc = lib.loader_feed_next_job(h, 200, ctypes.byref(job))
            if rc == TIMED_OUT:
                continue
            if rc != OK:
                return
            status, _buf = self._load(job.read, out)
            lib.loader_feed_complete_job(job.token, status, ctypes.byref(out) if status == 0
                                         else None)

    def _run_hosted(self) -> None:
        """Hosted mode: this thread is the feed's worker; each answer hands out the next job
        (at once the read that answer issued), one call per load."""
        lib, h = self.lib, self.handle.value
        job = _ffi.loader_feed_job()
        out = _ffi.loader_load_result()
        complete_next = lib.loader_feed_complete_next_job
        rc = lib.loader_feed_next_job(h, 200, ctypes.byref(job))
        while True:
            if rc == TIMED_OUT:
                rc = lib.loader_feed_next_job(h, 200, ctypes.byref(job))
                continue
            if rc != OK or job.token == 0:
                return
            status, _buf = self._load(job.read, out)
            rc = complete_next(job.token, status, ctypes.byref(out) if status == 0 else None,
                               200, ctypes.byref(job))

    def issued(self) -> int:
        l = _ffi.loader_handle(0)
        self.lib.loader_feed_loader(self.handle, ctypes.byref(l))
        n = _ffi.loader_counts()
        n.struct_size = ctypes.sizeof(n)
        assert self.lib.loader_stats(l, ctypes.byref(n)) == OK
        return int(n.issued_finite)

    def close(self) -> None:
        left = ctypes.c_uint32(0)
        self.lib.loader_feed_free(self.handle, -1, ctypes.byref(left))
        for t in self.threads:
            t.join()


def job_moves(src: be.KeysetSource, moves: int, threads: int,
              hosted: bool = False) -> be.Clocks:
    feed = JobFeed(src.load, workers=threads, threads=threads, hosted=hosted)
    t0 = be._clocks()
    for m in range(moves):
        assert feed.lib.loader_feed_set_window(feed.handle, m * be.SQL_MOVE * be.SQL_PAGE,
                                               be.SQL_MOVE * be.SQL_PAGE) == OK
        assert feed.lib.loader_feed_wait_quiescent(feed.handle, 60000) == OK
    per = be._per_load(t0, feed.issued())
    feed.close()
    return per


def main() -> None:
    moves = 50
    with tempfile.TemporaryDirectory() as tmp:
        src = be.KeysetSource(os.path.join(tmp, "items.db"))
        be.bare_loop(src, 2)
        job_moves(src, 2, 1)
        job_moves(src, 2, 1, hosted=True)
        runners: Dict[str, Callable[[], be.Clocks]] = {
            "job mode, 1 Python thread": lambda: job_moves(src, moves, 1),
            "job mode, 4 Python threads": lambda: job_moves(src, moves, 4),
            "hosted mode, 1 Python thread": lambda: job_moves(src, moves, 1, hosted=True),
            "hosted mode, 4 Python threads": lambda: job_moves(src, moves, 4, hosted=True),
            "threaded Feed (4 workers)": lambda: be.feed_moves(src, moves),
        }
        rows: Dict[str, List[tuple]] = {name: [] for name in runners}
        for _ in range(be.REPS):
            for name, run in runners.items():
                b = be.bare_loop(src, moves)
                rows[name].append((run(), b))
    print(f"bare loop: {statistics.median(b[0] for r in rows.values() for _, b in r) * 1e6:.1f} us/load")
    for name, runs in rows.items():
        cpu = statistics.median(f[0] / b[0] for f, b in runs)
        wall = statistics.median(f[1] / b[1] for f, b in runs)
        us = statistics.median(f[0] for f, _ in runs) * 1e6
        print(f"{name:<34} {us:8.1f} us/load  {cpu:5.2f} x CPU  {wall:5.2f} x wall")


if __name__ == "__main__":
    main()
