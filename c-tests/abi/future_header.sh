#!/bin/sh
# Writes to stdout a loader.h one release newer than the one given: the header as it is, with
# one field appended to each struct that may grow, as a later release would add it. A host
# built against it (c-tests/abi/abi_host.c with LOADER_ABI_FUTURE) stands for a host newer than
# the library it runs against. Each field is 8 bytes, so it grows the struct whatever its
# layout; fails if a struct is not found, so a renamed struct cannot skip the test.
set -eu
header=${1:?usage: future_header.sh include/loader.h}
for s in loader_config loader_callbacks loader_snapshot loader_counts; do
    grep -q "^} $s;\$" "$header" || { echo "future_header.sh: no struct $s in $header" >&2; exit 1; }
done
sed -e '/^} loader_config;$/i\
  uint64_t future_knob;' \
    -e '/^} loader_callbacks;$/i\
  void (*future_hook)(void *userdata, loader_acquisition acquisition);' \
    -e '/^} loader_snapshot;$/i\
  uint64_t future_gauge;' \
    -e '/^} loader_counts;$/i\
  uint64_t future_count;' \
    "$header"
