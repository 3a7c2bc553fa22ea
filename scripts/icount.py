#!/usr/bin/env python3
"""The instruction-count gate: counts instructions per event for each workload under
valgrind's callgrind and compares them with the committed baselines (benches/icount.txt).

Instruction counts do not drift with the machine's load, so a growth of more than 3% is a
change in the code, and fails the check unless the same commit updates the baseline with the
reason. A count that fell by more than 3% is reported, so the gain can be locked in.

    scripts/icount.py check                  what `make icount-check` runs
    scripts/icount.py write "why it moved"   measures and rewrites benches/icount.txt
    scripts/icount.py show                   measures and prints, compares nothing

Each workload runs its measured part inside a function named `icount_region` (Rust:
examples/icount.rs, C: c-bench/abi_bench.c --icount), and callgrind collects only there. The
Python Feed load is measured as a difference, (I(2N) - I(N)) / N over the whole process
(bindings/python/bench_events.py --run feed N), since the interpreter's start is no part of a
load. The programs are built by the Makefile's icount-check target before this runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "benches" / "icount.txt"
TOLERANCE = 0.03

RUST = str(ROOT / "target" / "release" / "examples" / "icount")
ABI = str(ROOT / "target" / "c-tests" / "abi_bench")
PYTHON = os.environ.get("ICOUNT_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
PY_BENCH = str(ROOT / "bindings" / "python" / "bench_events.py")


def collected(cmd: List[str], toggle: str | None, env: Dict[str, str] | None = None) -> int:
    """Instructions callgrind counted running `cmd` (only inside `toggle`, if given)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        if toggle:
            args.append(f"--toggle-collect={toggle}")
        r = subprocess.run(args + cmd, capture_output=True, text=True,
                           env={**os.environ, **(env or {})})
        if r.returncode != 0:
            sys.exit(f"icount: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
        m = re.search(r"Collected : (\d+)", r.stderr)
        if not m:
            sys.exit(f"icount: no count from callgrind for {' '.join(cmd)}:\n{r.stderr[-2000:]}")
        return int(m.group(1))


def region(cmd: List[str], n: int) -> Callable[[], float]:
    return lambda: collected(cmd + [str(n)], "*icount_region*") / n


def python_feed(n: int) -> Callable[[], float]:
    def measure() -> float:
        env = {"LIBLOADER_PATH": str(ROOT / "target" / "release" / "libloader.so"),
               "PYTHONHASHSEED": "0"}
        one = collected([PYTHON, PY_BENCH, "--run", "feed", str(n)], None, env)
        two = collected([PYTHON, PY_BENCH, "--run", "feed", str(2 * n)], None, env)
        return (two - one) / n
    return measure


# name -> (unit, measurement). Sizes keep the whole gate to a few minutes under valgrind.
WORKLOADS: Dict[str, Tuple[str, Callable[[], float]]] = {
    "stream": ("event", region([RUST, "stream"], 20_000)),
    "replay": ("call", region([RUST, "replay"], 20_000)),
    "ledger": ("event", region([RUST, "ledger"], 20_000)),
    "abi-stream": ("event", region([ABI, "--icount"], 20_000)),
    "far-move": ("move", region([RUST, "far"], 2_000)),
    "ranged-repair": ("change", region([RUST, "ranged"], 2_000)),
    "python-feed-load": ("load", python_feed(2_000)),
}


def read_baseline() -> Dict[str, Tuple[float, str]]:
    base: Dict[str, Tuple[float, str]] = {}
    for line in BASELINE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, count, reason = line.split(None, 2)
        base[name] = (float(count), reason)
    return base


def measure_all() -> Dict[str, float]:
    counts = {}
    for name, (unit, measure) in WORKLOADS.items():
        counts[name] = measure()
        print(f"icount: {name:<18} {counts[name]:>10.1f} instructions per {unit}", flush=True)
    return counts


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    if mode == "show":
        measure_all()
        return 0
    if mode == "write":
        if len(sys.argv) < 3 or not sys.argv[2].strip():
            sys.exit('icount: write needs the reason: scripts/icount.py write "why it moved"')
        reason = " ".join(sys.argv[2].split())
        counts = measure_all()
        old = read_baseline() if BASELINE.exists() else {}
        lines = [line for line in BASELINE.read_text().splitlines() if line.startswith("#")] \
            if BASELINE.exists() else []
        for name, count in counts.items():
            prev = old.get(name)
            same = prev is not None and abs(count - prev[0]) <= TOLERANCE * prev[0]
            # An entry within tolerance keeps its count and reason: only what moved is restated.
            lines.append(f"{name} {prev[0]:.1f} {prev[1]}" if same and prev
                         else f"{name} {count:.1f} {reason}")
        BASELINE.write_text("\n".join(lines) + "\n")
        print(f"icount: wrote {BASELINE.relative_to(ROOT)}; add the change to the history in "
              "docs/BENCHMARKS.md")
        return 0
    if mode != "check":
        sys.exit(f"icount: unknown mode {mode!r} (check, write or show)")
    base = read_baseline()
    counts = measure_all()
    grew, fell = [], []
    for name, count in counts.items():
        if name not in base:
            grew.append(f"{name}: no baseline in {BASELINE.relative_to(ROOT)}")
            continue
        was, reason = base[name]
        change = count / was - 1
        if change > TOLERANCE:
            grew.append(f"{name}: {was:.1f} -> {count:.1f} instructions per "
                        f"{WORKLOADS[name][0]} (+{100 * change:.1f}%; baseline: {reason})")
        elif change < -TOLERANCE:
            fell.append(f"{name}: {was:.1f} -> {count:.1f} ({100 * change:.1f}%)")
    for line in fell:
        print(f"icount: fell by more than 3%, lock it in with scripts/icount.py write: {line}")
    if grew:
        print("icount: FAILED: instructions per event grew by more than 3%:")
        for line in grew:
            print(f"  {line}")
        print("Win it back, or, if the cost is the price of a change, record it in the same "
              "commit: scripts/icount.py write \"the reason\" (and the history in "
              "docs/BENCHMARKS.md).")
        return 1
    print(f"icount: every count within {TOLERANCE:.0%} of its baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
