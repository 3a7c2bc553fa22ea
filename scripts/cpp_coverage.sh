#!/bin/sh
# cpp_coverage.sh: fails when a public function of loader.h is never called by the C++ wrapper.
#
#   scripts/cpp_coverage.sh [HEADER [WRAPPER]]   (defaults: include/loader.h, bindings/cpp/loader.hpp)
#
# The public functions are those declared at the start of a line (after the LOADER_DEPRECATED
# prefix of a deprecated one) outside the header's `#if defined(LOADER_TESTING)` blocks (the
# test ABI), as `make symbols-test` reads them. A
# function counts as covered when the wrapper's code, its `//` comments removed, calls it
# (its name followed by `(`). The feed's job and hosted modes are exempt: they are for hosts
# whose loads must run on threads of their own (Python, an event loop); `loader::Feed<T>` runs
# its C++ loads on the feed's own threads, through `loader_feed_new`.
set -eu
exempt="loader_feed_new_jobs loader_feed_new_hosted loader_feed_new_hosted_ready loader_feed_next_job"
exempt="$exempt loader_feed_complete_job loader_feed_complete_next_job loader_feed_job_hinted"
header=${1:-include/loader.h}
wrapper=${2:-bindings/cpp/loader.hpp}

public=$(sed -e '/^#if defined(LOADER_TESTING)$/,/^#endif$/d' -e 's/^LOADER_DEPRECATED("[^"]*") //' "$header" \
    | grep -E '^[a-z]' \
    | grep -oE '\bloader_[a-z_]+\(' | tr -d '(' | sort -u)
if [ -z "$public" ]; then
    echo "cpp_coverage: no public function found in $header" >&2
    exit 1
fi
code=$(sed 's|//.*$||' "$wrapper")
missing=
n=0
for f in $public; do
    case " $exempt " in *" $f "*) continue ;; esac
    n=$((n + 1))
    printf '%s\n' "$code" | grep -qE "(^|[^A-Za-z0-9_])$f[[:space:]]*\(" || missing="$missing $f"
done
if [ -n "$missing" ]; then
    echo "cpp_coverage: $wrapper calls none of:$missing" >&2
    exit 1
fi
echo "cpp_coverage: $wrapper calls all $n public functions of $header (job and hosted modes exempt)"
