#!/usr/bin/env bash
# Runs a deterministic BSP trainer twice, with an unbounded row cache and with --cache-rows N, and
# checks that the final figure is the same (to the printed digits) and that rows were evicted.
#
#   examples/cache_matches_unbounded.sh N FIELD -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 4 ] && [ "$3" = "--" ] || { echo "usage: $0 N FIELD -- TRAINER ARGS..." >&2; exit 2; }
n=$1 field=$2
shift 3
pick() { grep -o " $1=[^ ]*" | head -n1 | cut -d= -f2; }
full=$("$@" --consistency bsp --quiet)
small=$("$@" --consistency bsp --quiet --cache-rows "$n")
a=$(pick "$field" <<<"$full") b=$(pick "$field" <<<"$small") ev=$(pick evictions <<<"$small")
echo "unbounded: $field=$a; --cache-rows $n: $field=$b, evictions=$ev, cache_peak_rows=$(pick cache_peak_rows <<<"$small")"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "MISMATCH"; exit 1; }
[ -n "$ev" ] && [ "$ev" -gt 0 ] || { echo "NO EVICTIONS (the cache bound was not exercised)"; exit 1; }
echo "MATCH"
