"""Workload 7 of issue 6: events per second through the ctypes bindings.

A simpler host than benches/common/stream.rs, with the same kinds of event: a 100-page view
of 50-item pages over a virtual source (a cursor is the 8-byte big-endian position), callbacks
that only record (issue queues the read, release counts, cancel marks the read). Each event is
one call: every 20th an invalidation, every 20th (offset by 10) a window move alternating
between one page past the covered end and back to 100 pages, the rest answers to the oldest
pending read (current or stale, as the loader classifies them; a cancelled finite read is
failed instead). The realized mix is printed. Median of 5 repetitions after a warm-up.

    LIBLOADER_PATH=$PWD/target/release/libloader.so .venv/bin/python \
        bindings/python/bench_events.py [--quick]
"""
import statistics
import sys
import time

import libloader
from libloader import Answer

PAGE = 50
PAGES = 100
REPS = 5


class Host:
    def __init__(self) -> None:
        self.pending = []          # [read, cancelled]
        self.by_id = {}
        self.releases = 0
        self.counts = {"current": 0, "stale": 0, "sup-fail": 0, "invalidate": 0, "window": 0}
        self.extend = True
        self.n = 0
        self.loader = libloader.Loader(
            self.issue, self.release, on_cancel=self.cancel,
            config=libloader.Config(page_size=PAGE, prefetch_distance=0))

    def issue(self, read) -> None:
        entry = [read, False]
        self.pending.append(entry)
        self.by_id[read.read_id] = entry

    def release(self, _acq) -> None:
        self.releases += 1

    def cancel(self, read_id: int) -> None:
        entry = self.by_id.get(read_id)
        if entry is not None:
            entry[1] = True

    def answer_oldest(self) -> None:
        read, cancelled = self.pending.pop(0)
        del self.by_id[read.read_id]
        if cancelled and read.kind == libloader.Kind.FINITE:
            self.loader.fail(read, 7)
            self.counts["sup-fail"] += 1
            return
        pos = int.from_bytes(read.cursor, "big") if read.cursor else 0
        a = self.loader.settle(read, pos, count=read.limit,
                               next_cursor=(pos + read.limit).to_bytes(8, "big"))
        self.counts["current" if a == Answer.CURRENT else "stale"] += 1

    def move(self) -> None:
        if self.extend:
            length = self.loader.state.covered_end + PAGE
        else:
            length = PAGES * PAGE
        self.extend = not self.extend
        self.loader.set_window(0, length)
        self.counts["window"] += 1

    def event(self) -> None:
        self.n += 1
        k = self.n % 20
        if k == 0 or not self.pending and k < 10:
            self.loader.invalidate()
            self.counts["invalidate"] += 1
        elif k == 10 or not self.pending:
            self.move()
        else:
            self.answer_oldest()

    def run(self, n: int) -> None:
        for _ in range(n):
            self.event()


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    events = 5_000 if quick else 100_000
    h = Host()
    h.loader.set_window(0, PAGES * PAGE)
    while h.pending:
        h.answer_oldest()
    h.run(events)                          # warm-up
    for key in h.counts:
        h.counts[key] = 0
    rates = []
    for _ in range(REPS):
        t = time.perf_counter_ns()
        h.run(events)
        rates.append(events / ((time.perf_counter_ns() - t) / 1e9))
    total = sum(h.counts.values())
    rate = statistics.median(rates)
    print("== workload 7: events per second through the Python (ctypes) bindings ==")
    print(f"libloader {libloader.version()}; view {h.loader.state.pages} pages of {PAGE} items; "
          f"{'quick' if quick else 'full'} mode; median of {REPS} repetitions of {events} events")
    print("mix: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in h.counts.items()))
    print(f"{'Python stream, view 100 pages':<44} {rate:>10.0f} events/s  "
          f"({1e9 / rate:.0f} ns/event)")
    h.loader.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
