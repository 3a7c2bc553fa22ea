#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/seed-*), one file per scenario.

Each seed is spelled in the decoders' terms (src/abi/ops.rs and the files beside it, src/differential/mod.rs,
src/simulation.rs), so libFuzzer starts from runs that reach the interesting states instead of
finding them from scratch. Rerun after changing a decoder: `python3 fuzz/make_seeds.py`.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- fuzz_abi: op tags are byte % 32 ----
def new(slot=0, page=4, prefetch=0, drop=0, retries=0, recheck=0, counters=0, extra=(),
        source=40, optional=0, script=()):
    # page: byte % 16 >= 4 gives 1 + byte % 8; recheck index 0 = on, 1 = off
    return [0, slot, 8 + (page - 1) if page <= 8 else 0, prefetch, drop, 2, 2, 0, retries,
            0, 0, recheck, counters, *extra, source, optional, len(script), *script]

def window(slot, start, length):
    return [5, slot, 0, 0, start % 64, 0, length % 64]

def settle(slot=0, index=0, count=0, cursor=0, eos=1, out=1):
    return [10, slot, 0, 0, index, count, cursor, eos, out]

def fail(slot=0, index=0):
    return [18, slot, 0, 0, index, 7, 0, 0, 0, 1]

def invalidate(slot=0):
    return [2, slot, 0]

def free(slot=0):
    return [0, slot, slot, 0]

def script(slot, steps):
    return [24, slot, len(steps), *steps]

abi = {
    "load-and-free": new() + window(0, 0, 16) + settle() * 5 + free(),
    "repair-with-a-late-read": new() + window(0, 0, 4) + settle() + window(0, 0, 12)
        + invalidate() + settle(index=1) * 4 + settle() + free(),
    "synchronous-host": new(script=[4] * 20) + window(0, 0, 30) + invalidate()
        + script(0, [4] * 20) + invalidate() + free(),
    "free-inside-callbacks": new(script=[0, 0, 9]) + window(0, 0, 12) + settle() * 3
        + new(slot=1, script=[4, 4, 7, 9]) + window(1, 0, 8) + settle(slot=1) * 3,
    "failures-retry-tick": new(retries=2) + window(0, 0, 8) + fail() + [8, 0, 0, 4, 0, 0]
        + [8, 0, 0, 0, 0xff, 0xff] + settle() * 3 + fail() + [9, 0, 0, 1] + settle() * 3,
    "bad-answers": new() + window(0, 0, 8) + settle(count=13) + settle(cursor=14)
        + settle(cursor=11) + settle(index=5) + settle(index=6) + fail(index=6)
        + [21, 0, 0, 0, 3] + [21, 0, 0, 5, 0] + [21, 0, 0, 8, 3] + settle() * 3 + free()
        + invalidate() + free(),
    "counters-near-the-end": new(counters=11, extra=[1]) + invalidate() + invalidate()
        + window(0, 0, 8) + settle() * 2 + free()
        + new(counters=12, extra=[3]) + window(0, 0, 40) + settle() * 4 + free(),
    "cursors-max-and-empty": new() + window(0, 0, 12) + settle(cursor=10) + settle(cursor=13)
        + settle(cursor=12) + invalidate() + settle() * 4 + free(),
    "drop-margin-and-rewind": new(drop=3) + window(0, 0, 8) + settle() * 3
        + window(0, 40, 8) + settle() * 12 + window(0, 0, 8) + settle() * 6 + free(),
    "recheck-off": new(recheck=1) + invalidate() + window(0, 0, 4) + invalidate()
        + settle() * 4 + free(),
    # recheck byte: low bits recheck_full, high bits (>> 5) max_pages [0, 0, 0, 0, 1, 2, 3, MAX].
    # The settle counts are exact: a settle with no read outstanding decodes one byte fewer.
    "bound-and-scroll-back": new(prefetch=1, drop=3, recheck=6 << 5, source=60)
        + window(0, 0, 8) + settle() * 3 + window(0, 40, 8) + settle() * 10
        + window(0, 0, 8) + settle() * 9 + invalidate() + settle() * 4 + free(),
    "repair-from-the-anchor": new(prefetch=3, drop=3, source=60) + window(0, 29, 8)
        + settle() * 10 + invalidate() + settle() * 4 + free(),
}

# ---- fuzz_differential: byte % 16 per event ----
INV, WANT, RETRY, SETTLE, FAIL, BADS, BADF = 0, 2, 5, 6, 11, 14, 15
differential = {
    "seed-trace": [WANT, SETTLE, 0, WANT, INV, SETTLE, 1, INV, FAIL, 0],
    "invalidation-during-a-full-read": [INV, INV, SETTLE, 0, SETTLE, 0, WANT, SETTLE, 0],
    "own-failure-and-retry": [WANT, FAIL, 0, RETRY, SETTLE, 0, WANT, SETTLE, 0],
    "chain-replaced-then-abandoned": [WANT, SETTLE, 0, INV, INV, SETTLE, 0, WANT, FAIL, 0,
                                       INV, SETTLE, 0, SETTLE, 0],
    "refused-answers": [WANT, BADS, 0, BADF, 1, SETTLE, 0, BADS, 3, BADF, 4, WANT, FAIL, 0,
                        BADS, 5],
}

# ---- fuzz_loader: config bytes, then op tags byte % 32 ----
def cfg(page=3, prefetch=2, drop=0, retries=1, items=20, keys=4):
    # the op tags: 0..=11 deliver, 12 lying delete, 13 jump, 19 ranged insert, 22 ranged
    # delete, 23..=25 window (start, len)
    return [page - 1, prefetch, drop, retries, 0, 0, items, keys - 1]

D = [0, 0, 0]          # deliver the first pending read, prepared
loader = {
    "deliveries": cfg() + D * 12,
    "insert-and-delete": cfg() + D * 8 + [18, 3] + D * 6 + [21, 5] + D * 6,
    "failures-and-ticks": cfg(retries=2) + D * 3 + [23, 0, 30] + [14, 0] + [27, 0x20, 0x03]
        + D * 4 + [14, 0] + [29] + D * 6,
    "stall-and-ties": cfg(keys=1) + D * 4 + [17, 0] + [29] + D * 6 + [18, 0] + D * 6,
    "drop-and-rewind": cfg(drop=2) + D * 4 + [23, 60, 10] + D * 12 + [23, 0, 10] + D * 10,
    "out-of-order": cfg(page=2) + [23, 0, 40] + [0, 3, 1, 0, 1, 0] * 8 + [30] + D * 10,
    # drop byte: low bits drop_margin, high bits (>> 5) max_pages [0, 0, 0, 0, 1, 2, 3, 6]
    "jump-bound-and-scroll-back": cfg(drop=2 | 5 << 5, items=45) + D * 6 + [13, 40] + D * 10
        + [23, 0, 10] + D * 10 + [13, 3] + D * 8,
    "tightest-bound": cfg(page=2, prefetch=1, drop=4 << 5, items=30) + D * 8 + [23, 20, 6]
        + D * 8 + [23, 0, 6] + D * 8 + [30] + D * 8,
    # an insert and a delete reported with their exact ranges (bounded repairs that rejoin),
    # then a host that lies about a delete: the same bytes as the decoder's test
    "ranged-and-lying": cfg(page=3, prefetch=1, retries=0, items=40, keys=6) + [23, 0, 30]
        + D * 14 + [19, 7] + D * 6 + [22, 10] + D * 6 + [12, 5] + D * 6,
}

for target, seeds in (("fuzz_abi", abi), ("fuzz_differential", differential),
                      ("fuzz_loader", loader)):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        assert all(0 <= b < 256 for b in data), (target, name)
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(bytes(data))
    print(f"{target}: {len(seeds)} seeds")
