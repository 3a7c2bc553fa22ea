#!/bin/sh
# Regenerates the corpus of recorded runs that `make replay-check` and tests/replay.rs replay
# (tests/replay/*.log). Run through `make replay-corpus`, which builds what it needs first.
#
#   sim-*.log         seeded runs of the simulated host, honest and hostile
#                     (examples/record_corpus.rs)
#   regression-*.log  the loader checker's regressions and host faults (tests/loader_check.rs,
#                     recorded with LOADER_RECORD_DIR)
#   c-sqlite-feed.log the C example examples/sqlite_feed.c, recorded with LOADER_RECORD
#   c-hostile-N.log   the hostile hosts of c-tests/hostile.c (the small ones), the same way
#   demo.log          the demo, examples/sqlite_feed.py, the same way
#
# Arguments: the directory (default tests/replay), the public library's directory, the test
# library's directory, and the directory where the C programs were built.
set -eu
dir=${1:-tests/replay}
lib=${2:-target/release}
testlib=${3:-target/testing/release}
bin=${4:-target/c-tests}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rm -f "$dir"/*.log
mkdir -p "$dir"
CARGO_TARGET_DIR=target/testing cargo run --quiet --release --features testing \
    --example record_corpus -- "$dir"
LOADER_RECORD_DIR="$dir" CARGO_TARGET_DIR=target/testing cargo test --quiet --release \
    --features testing --test loader_check > /dev/null

LOADER_RECORD="$dir/c-sqlite-feed.log" "$bin/sqlite_feed_record" --duration 1 --seed 7 \
    --rows 2000 > /dev/null
test ! -e "$dir/c-sqlite-feed.log.2"

# c-tests/hostile.c creates a loader per case; the cases under 16 KB are kept.
# Its own verdicts are `make c-test-hostile`'s to judge: here it only makes recordings.
LOADER_RECORD="$tmp/hostile.log" "$bin/hostile_record" --quick > /dev/null 2>&1 || true
n=0
for f in "$tmp"/hostile.log "$tmp"/hostile.log.*; do
    if [ "$(wc -c < "$f")" -le 16384 ]; then
        n=$((n + 1))
        cp "$f" "$dir/c-hostile-$n.log"
    fi
done

LOADER_RECORD="$dir/demo.log" LIBLOADER_PATH="$PWD/$lib/libloader.so" \
    PYTHONPATH="$PWD/bindings/python" python3 examples/sqlite_feed.py --duration 1 \
    --rows 3000 > /dev/null
test ! -e "$dir/demo.log.2"

echo "record_corpus: $(ls "$dir"/*.log | wc -l) logs, $(cat "$dir"/*.log | wc -c) bytes in $dir"
