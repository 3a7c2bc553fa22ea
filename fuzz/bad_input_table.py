#!/usr/bin/env python3
"""Turns the call tallies of a `fuzz_abi` replay into the bad-input table of
docs/ROBUSTNESS.md.

    cd fuzz && cargo build --release --example replay
    LOADER_FUZZ_STATS=1 target/release/examples/replay fuzz_abi -q target/corpus/fuzz_abi/* \\
        > stats.tsv
    python3 bad_input_table.py stats.tsv

Each line of the replay's tallies is `call<TAB>code<TAB>count`. Every refused call was
checked by the target as it ran: the code equals the one computed from the arguments, and the
call changed nothing (state, requests, view, deadline), ran no callback and released nothing;
so the "lost" column is the target's verdict, and a run that lost anything would have crashed
instead of producing these counts.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

# What the decoder feeds a call to get each refusal, in the order of the header's result codes.
BAD: Dict[str, Tuple[str, str]] = {
    "NullPointer": ("LOADER_RESULT_NULL_POINTER",
                    "a NULL out-parameter, config or callbacks pointer"),
    "InvalidHandle": ("LOADER_RESULT_INVALID_HANDLE",
                      "handle 0, a random value, a live handle with bits flipped or cut to 32 bits"),
    "StaleHandle": ("LOADER_RESULT_STALE_HANDLE",
                    "a freed handle: a call after free, a double free, a call from a callback "
                    "while its loader is being freed"),
    "UnknownRead": ("LOADER_RESULT_UNKNOWN_READ",
                    "read id 0, one past the last issued, or random"),
    "AlreadyAnswered": ("LOADER_RESULT_ALREADY_ANSWERED",
                        "a read already settled or failed (a second answer)"),
    "CountOverLimit": ("LOADER_RESULT_COUNT_OVER_LIMIT", "count = limit + 1 up to UINT32_MAX"),
    "NullCursor": ("LOADER_RESULT_NULL_CURSOR", "next_cursor NULL with a length > 0"),
    "CursorTooLong": ("LOADER_RESULT_CURSOR_TOO_LONG",
                      "a cursor of LOADER_MAX_CURSOR_LEN + 1 (4097) bytes or more"),
    "WindowOverflow": ("LOADER_RESULT_WINDOW_OVERFLOW", "start + len past UINT64_MAX"),
    "BufferTooSmall": ("LOADER_RESULT_BUFFER_TOO_SMALL",
                       "a NULL or short array (the length needed comes back in out_len)"),
    "Panic": ("LOADER_RESULT_PANIC", "a panic inside the library (loader_test_panic)"),
    "Poisoned": ("LOADER_RESULT_POISONED", "any call on a loader after it panicked"),
    "EpochOverflow": ("LOADER_RESULT_EPOCH_OVERFLOW",
                      "an invalidation with the epoch at UINT64_MAX (test constructor)"),
    "IdOverflow": ("LOADER_RESULT_ID_OVERFLOW",
                   "a call that may start a request with the request id at UINT64_MAX"),
    "InvalidPageSize": ("LOADER_RESULT_INVALID_PAGE_SIZE",
                        "page_size 0 or above LOADER_MAX_PAGE_SIZE"),
    "InvalidBackoffInitial": ("LOADER_RESULT_INVALID_BACKOFF_INITIAL",
                              "backoff_initial_ms 0"),
    "InvalidBackoffMax": ("LOADER_RESULT_INVALID_BACKOFF_MAX", "backoff_max_ms below backoff_initial_ms"),
    "InvalidBackoffMultiplier": ("LOADER_RESULT_INVALID_BACKOFF_MULTIPLIER",
                                 "backoff_multiplier below 1, above 16, NaN or infinite"),
    "MissingCallback": ("LOADER_RESULT_MISSING_CALLBACK", "the issue or release callback NULL"),
    "InvalidStructSize": ("LOADER_RESULT_INVALID_STRUCT_SIZE",
                          "a config whose struct_size is 0, callbacks whose struct_size is "
                          "UINT32_MAX"),
}


def call_name(call: str) -> str:
    return re.sub(r" \(.*\)$", "", call)


def main(path: str) -> None:
    by_code: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    answers: List[Tuple[str, str, int]] = []
    ok = 0
    for line in open(path, encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        call, code, n = parts[0], parts[1], int(parts[2])
        if " answer: " in call:
            answers.append((call, code, n))
            continue
        if code == "Ok":
            ok += n
            continue
        by_code[code][call_name(call)] += n
    unknown = sorted(set(by_code) - set(BAD))
    if unknown:
        sys.exit(f"codes with no description: {unknown}")
    print("| bad input | expected code | observed (calls) | lost |")
    print("|---|---|---|---|")
    for code, (name, what) in BAD.items():
        calls = by_code.get(code)
        if not calls:
            print(f"| {what} | `{name}` | not reached by the corpus | — |")
            continue
        total = sum(calls.values())
        detail = ", ".join(f"`{c}` {n:,}" for c, n in sorted(calls.items(), key=lambda x: -x[1]))
        print(f"| {what} | `{name}` | {total:,}: {detail} | nothing |")
    print()
    print(f"Accepted calls in the same replay: {ok:,}. How the accepted answers were classified:")
    print()
    print("| answer | classified | calls |")
    print("|---|---|---|")
    for call, code, n in answers:
        print(f"| {call.split(': ', 1)[1]} (`{call.split(' ')[0]}`) | `{code}` | {n:,} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
