"""Thread stress, bounded: worker threads settle and fail reads while the main thread moves the
window, invalidates and retries; then everything is answered, the invariants and the view are
checked, and every acquisition comes back exactly once, including when the loader is closed
while workers are still answering."""

from __future__ import annotations

import queue
import random
import threading
import time
from typing import List, Optional, Tuple

import pytest

import libloader as L
from libloader import Direction, Read
from hosts import Acq, KeyedSource, Ledger, refused

WORKERS = 3
MAIN_STEPS = 1500


class ThreadedHost:
    def __init__(self, seed: int, page_size: int = 2) -> None:
        self.rng = random.Random(seed)
        self.source = KeyedSource(random.Random(seed + 1), n=120, key_range=10)
        self.reads: "queue.Queue[Optional[Read]]" = queue.Queue()
        self.ledger = Ledger()
        self.acq_lock = threading.Lock()
        self.next_acq = 1
        self.fail_rate = 0.1
        self.errors: List[BaseException] = []
        self.answered = 0
        self.stale_handle = 0
        self.loader = L.Loader(self.reads.put, self.ledger.on_release,
                               config=L.Config(page_size=page_size, prefetch_distance=4,
                                               backoff_initial_ms=1, max_auto_retries=3))

    def new_acq(self, items: Tuple[object, ...], cursor: bytes) -> Acq:
        with self.acq_lock:
            acq = Acq(self.next_acq, items, cursor)
            self.next_acq += 1
            self.ledger.offered[acq.n] = acq
            self.ledger.accepted[acq.n] = acq
        return acq

    def answer(self, read: Read, rng: random.Random) -> None:
        if rng.random() < self.fail_rate:
            self.loader.fail(read, 1)
            return
        items, nxt, end = self.source.read(read.cursor, read.limit, read.direction)
        acq = self.new_acq(items, nxt if read.direction is Direction.BACKWARD else read.cursor)
        try:
            self.loader.settle(read, acq, next_cursor=nxt, end_of_source=end)
        except BaseException as e:
            if refused(e):
                with self.acq_lock:
                    del self.ledger.accepted[acq.n]
            raise

    def worker(self, seed: int) -> None:
        rng = random.Random(seed)
        while True:
            read = self.reads.get()
            if read is None:
                return
            if rng.random() < 0.3:
                time.sleep(rng.random() / 2000)
            try:
                self.answer(read, rng)
                self.answered += 1
            except L.StaleHandleError:
                self.stale_handle += 1
            except BaseException as e:  # pragma: no cover - reported by the test
                self.errors.append(e)


def start(h: ThreadedHost) -> List[threading.Thread]:
    threads = [threading.Thread(target=h.worker, args=(i,), daemon=True) for i in range(WORKERS)]
    for t in threads:
        t.start()
    return threads


def stop(h: ThreadedHost, threads: List[threading.Thread]) -> None:
    for _ in threads:
        h.reads.put(None)
    for t in threads:
        t.join(20)
        assert not t.is_alive(), "a worker hung"


def sample(ld: L.Loader) -> Tuple[L.Snapshot, List[L.RequestInfo]]:
    """A state and request list from one moment: read state, requests, state again, until the
    two states agree (every change moves a counter, so equal states bracket no change)."""
    for _ in range(1000):
        a = ld.state
        reqs = ld.requests()
        if ld.state == a:
            return a, reqs
    raise AssertionError("the loader never held still")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_workers_answer_while_the_main_thread_moves_the_window(seed: int) -> None:
    h = ThreadedHost(seed)
    threads = start(h)
    rng = h.rng
    now = 0
    checked = 0
    for _ in range(MAIN_STEPS):
        op = rng.random()
        if op < 0.5:
            h.loader.set_window(rng.randrange(0, 100), rng.randrange(1, 30))
        elif op < 0.6:
            h.source.insert()
            h.loader.invalidate()
        elif op < 0.7:
            h.loader.invalidate()
        elif op < 0.8:
            h.loader.retry()
        else:
            now += rng.choice([1, 5, 50])
            h.loader.tick(now)
        s, reqs = sample(h.loader)
        assert not L.violations(s, reqs), L.violations(s, reqs)
        checked += 1
        if rng.random() < 0.05:
            time.sleep(0.001)
    # Quiesce: no more failures; retry until quiet.
    h.fail_rate = 0.0
    deadline = time.monotonic() + 20
    while True:
        s = h.loader.state
        if s.quiescent and h.reads.empty():
            break
        assert time.monotonic() < deadline, f"did not quiesce: {s}"
        if s.failure is L.Failure.OWN and s.outstanding_reads == 0:
            h.loader.retry()
        time.sleep(0.001)
    stop(h, threads)
    assert not h.errors, h.errors
    s, reqs = sample(h.loader)
    assert not L.violations(s, reqs)
    assert s.cover_epoch == s.epoch and not s.revalidating
    view = h.loader.view()
    items = [k for p in view.pages for k in p.acquisition.items]
    # Keyset: the pages are the source's rows after the first page's cursor (the view need
    # not reach the source's start: repairs start at the anchor, the page holding the
    # window's start); where it does, positions are the source's own.
    first = view.pages[0].acquisition.cursor if view.pages else b""
    assert items == h.source.after(first)[:len(items)]
    assert first != b"" or s.covered_start == 0
    assert s.end_of_source or s.covered_end >= s.window_start + s.window_len
    assert s.accepted - s.released == h.ledger.held()
    h.loader.close()
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0
    assert checked == MAIN_STEPS and h.answered > 300


def test_closing_while_workers_answer_releases_everything_once() -> None:
    h = ThreadedHost(7, page_size=1)
    h.fail_rate = 0.05
    threads = start(h)
    deadline = time.monotonic() + 10
    i = 0
    while h.answered < 100 and time.monotonic() < deadline:
        h.loader.set_window(i % 60, 20)
        if i % 25 == 0:
            h.loader.invalidate()
        i += 1
        time.sleep(0.0002)
    h.loader.set_window(0, 40)
    h.loader.close()                            # workers may be mid-settle
    stop(h, threads)                            # reads still queued are answered after it
    assert not h.errors, h.errors
    # Releases that workers' calls produced may have run after close returned, on their
    # threads; once they are done, every acquisition is back exactly once.
    assert h.ledger.released_exactly_once() and h.ledger.held() == 0
    assert h.answered >= 100
