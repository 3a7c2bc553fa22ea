#!/bin/sh
# Counts the code lines of a C file's host part: the lines between the comments
# "host part: begin" and "host part: end", less blank lines and comment-only lines (a line
# that starts a comment, continues one, or closes one). Prints the count; with a second
# argument, fails when the count is above it.
file=$1
limit=$2
count=$(sed -n '/host part: begin/,/host part: end/p' "$file" | awk '
    /^[[:space:]]*$/ { next }
    in_comment { if ($0 ~ /\*\//) in_comment = 0; next }
    /^[[:space:]]*\/\*/ { if ($0 !~ /\*\//) in_comment = 1; next }
    /^[[:space:]]*\/\// { next }
    { n++ }
    END { print n + 0 }')
echo "$count"
if [ -n "$limit" ] && [ "$count" -gt "$limit" ]; then
    echo "$file: $count code lines in the host part, more than $limit" >&2
    exit 1
fi
