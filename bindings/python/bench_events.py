"""Workload 7 of issue 6: events per second through the Python bindings (`Loader`), beside a
bare ctypes call into the same library, timed in the same run.

The host: a 100-page view of 50-item pages over a virtual source (a cursor is the 8-byte
big-endian position), callbacks that only record (issue queues the read, release counts,
cancel marks the read). Each event is one call: an invalidation arrives every 20 events, a
window move every 20 (offset by 10) alternates between one page past the covered end (a
finite read) and back to 100 pages, and the rest are answers to the oldest pending read
(current or stale, as the loader classifies them; a cancelled finite read is failed instead).
Once the view has grown past 110 pages, the window stays at 100 pages and the next read an
invalidation overtook is failed, which rebuilds the view at 100 pages through a full read. As in the Rust stream (benches/common/stream.rs), an invalidation waits while a chain is past its first step or a
full read runs, so each repair reaches its commit and releases the view it replaces: without
that, every invalidation would overtake the running chain, nothing would ever be released,
and the loader's live requests would grow for the whole run. The realized mix and the
releases per event are printed.

The floor is a bare ctypes call, ``loader_version()`` (no argument, a static string): what
any call from Python into the library costs at least. ``loader_state`` (the handle looked up,
a struct copied out) is timed beside it. Each repetition times the stream and then the floors;
figures are medians over the repetitions, and the ratio is the median of per-repetition
ratios. Times are this thread's CPU time (``time.thread_time_ns``), so time the scheduler gave
to other processes on a shared machine is not counted; wall-clock rates are printed too.

    LIBLOADER_PATH=$PWD/target/release/libloader.so .venv/bin/python \\
        bindings/python/bench_events.py [--quick]
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import time
from typing import Callable, Dict, List, Tuple

import libloader
from libloader import Answer, Direction, Kind, Read, _ffi

PAGE = 50
PAGES = 100
SLACK = 10
"""Past ``PAGES + SLACK`` pages the window stays at ``PAGES`` and the host fails the next
superseded read, which sends the view through a full read of that window."""
REPS = 5
TARGET_US = 3.0
"""The binding may add at most this much per event over the bare ctypes floor."""


class Host:
    """The stream's host; ``run(n)`` makes ``n`` calls."""

    def __init__(self) -> None:
        # (read, [cancelled, overtaken by an invalidation])
        self.pending: List[Tuple[Read, List[bool]]] = []
        self.by_id: Dict[int, List[bool]] = {}
        self.releases = 0
        self.counts = {"current": 0, "stale": 0, "sup-fail": 0, "invalidate": 0, "window": 0}
        self.extend = True
        self.shrink = False
        self.due = 0
        self.n = 0
        self.loader: libloader.Loader[int] = libloader.Loader(
            self.issue, self.release, on_cancel=self.cancel,
            config=libloader.Config(page_size=PAGE, prefetch_distance=0))

    def issue(self, read: Read) -> None:
        flag = [False, False]
        self.pending.append((read, flag))
        self.by_id[read.read_id] = flag

    def release(self, _acq: int) -> None:
        self.releases += 1

    def cancel(self, read_id: int) -> None:
        flag = self.by_id.get(read_id)
        if flag is not None:
            flag[0] = True

    def busy(self) -> bool:
        """A chain past its first step or a full read is pending: an invalidation now would
        overtake a repair that is under way."""
        return any(r.kind is Kind.FULL or (r.kind is Kind.CHAIN and r.step > 0)
                   for r, _ in self.pending)

    def answer_oldest(self) -> None:
        read, flag = self.pending.pop(0)
        del self.by_id[read.read_id]
        if (flag[0] and read.kind is Kind.FINITE) or (flag[1] and self.shrink):
            self.shrink = False
            self.loader.fail(read, 7)
            self.counts["sup-fail"] += 1
            return
        pos = int.from_bytes(read.cursor, "big") if read.cursor else 0
        if read.direction is Direction.BACKWARD:   # the items before pos; 0 is the start
            lo = max(pos - read.limit, 0)
            a = self.loader.settle(read, lo, count=pos - lo,
                                   next_cursor=lo.to_bytes(8, "big") if lo else b"",
                                   end_of_source=lo == 0)
        else:
            a = self.loader.settle(read, pos, count=read.limit,
                                   next_cursor=(pos + read.limit).to_bytes(8, "big"))
        self.counts["current" if a is Answer.CURRENT else "stale"] += 1

    def move(self) -> None:
        if self.extend and not self.shrink:
            s = self.loader.state
            length = s.covered_end + PAGE
            self.shrink = s.pages > PAGES + SLACK
        else:
            length = PAGES * PAGE
        self.extend = not self.extend
        self.loader.set_window(0, length)
        self.counts["window"] += 1

    def event(self) -> None:
        self.n += 1
        k = self.n % 20
        if k == 0:
            self.due += 1
        if self.due and not self.busy():
            self.due -= 1
            for _, flag in self.pending:
                flag[1] = True
            self.loader.invalidate()
            self.counts["invalidate"] += 1
        elif k == 10 or not self.pending:
            self.move()
        else:
            self.answer_oldest()

    def run(self, n: int) -> None:
        for _ in range(n):
            self.event()


def time_calls(fn: Callable[[], object], n: int) -> Tuple[float, float]:
    """(CPU ns, wall ns) per call of ``fn``, over ``n`` calls."""
    t, w = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.thread_time_ns() - t) / n, (time.perf_counter_ns() - w) / n


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    events = 5_000 if quick else 100_000
    floor_calls = 20_000 if quick else 400_000
    h = Host()
    h.loader.set_window(0, PAGES * PAGE)
    while h.pending:
        h.answer_oldest()
    h.run(events)                          # warm-up
    for key in h.counts:
        h.counts[key] = 0
    h.releases = 0
    lib = _ffi.lib()
    version = lib.loader_version
    state_fn = lib.loader_state
    handle = h.loader.handle
    snapshot = _ffi.loader_snapshot()
    snapshot_ref = ctypes.byref(snapshot)

    def state_call() -> object:
        return state_fn(handle, snapshot_ref)

    stream: List[Tuple[float, float]] = []
    floor: List[Tuple[float, float]] = []
    state: List[Tuple[float, float]] = []
    for _ in range(REPS):
        stream.append(time_calls(h.event, events))
        floor.append(time_calls(version, floor_calls))
        state.append(time_calls(state_call, floor_calls))
    total = sum(h.counts.values())
    live = h.loader.state
    cpu = statistics.median(s[0] for s in stream)
    wall = statistics.median(s[1] for s in stream)
    floor_cpu = statistics.median(f[0] for f in floor)
    state_cpu = statistics.median(s[0] for s in state)
    ratio = statistics.median(s[0] / f[0] for s, f in zip(stream, floor))
    over = statistics.median((s[0] - f[0]) / 1000 for s, f in zip(stream, floor))
    print("== workload 7: events per second through the Python bindings ==")
    print(f"libloader {libloader.version()}; Python {sys.version.split()[0]}; view "
          f"{live.pages} pages of {PAGE} items; {'quick' if quick else 'full'} mode; median of "
          f"{REPS} repetitions of {events} events and {floor_calls} floor calls; CPU time")
    print("mix: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in h.counts.items())
          + f"; {h.releases / total:.2f} releases/event; {live.inflight + live.settled} live "
          "requests at the end")
    print(f"{'Loader stream, view 100 pages':<44} {1e9 / cpu:>10.0f} events/s  "
          f"({cpu / 1000:.2f} us/event; wall clock {1e9 / wall:.0f} events/s)")
    print(f"{'floor: bare ctypes loader_version()':<44} {floor_cpu:>10.0f} ns/call")
    print(f"{'bare ctypes loader_state(handle, &snapshot)':<44} {state_cpu:>10.0f} ns/call")
    print(f"{'Loader stream / floor':<44} {ratio:>10.1f} x floor  (per-repetition ratios, "
          "median)")
    verdict = "met" if over <= TARGET_US else "MISSED"
    print(f"target: the binding adds <= {TARGET_US:.0f} us/event over the floor: {verdict} "
          f"({over:.2f} us/event over it)")
    h.loader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
