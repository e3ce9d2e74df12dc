#!/usr/bin/env bash
# What a fresh clone's `bash scripts/test.sh` costs with no compiler cache, for each revision given,
# one after the other (run it on a quiet machine; give the revisions in the order to interleave).
# Each revision is cloned from this checkout into a temporary folder (kept: its build serves
# run-time comparisons), and one line is printed per revision: the script's exit status, its wall
# time, the build's (from .ninja_log) and ctest's, and ctest's pass line.
#
#   bash benchmarks/build_time.sh a25ebd1 HEAD        (benchmarks/results/compile/REPORT.md)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -gt 0 ] || { echo "usage: $0 REV [REV ...]" >&2; exit 2; }
for rev in "$@"; do
  sha=$(git -C "$root" rev-parse --short "$rev") || exit 2
  dir="${TMPDIR:-/tmp}/strata-build-time-$sha"
  rm -rf "$dir" && git clone -q "$root" "$dir" && git -C "$dir" checkout -q "$sha" || exit 2
  log="$dir.log"
  start=$(date +%s.%N)
  (cd "$dir" && CCACHE_DISABLE=1 bash scripts/test.sh >"$log" 2>&1)
  rc=$?
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  build=$(awk 'NR > 1 && $2 > m { m = $2 } END { printf "%.0f", m / 1000 }' "$dir/build/.ninja_log")
  ctest=$(awk '/Total Test time/ { print $(NF - 1) }' "$log")
  printf '%s rc=%s wall=%.0f s build=%s s ctest=%s s %s (log %s, build %s/build)\n' "$sha" "$rc" "$wall" "$build" \
    "${ctest:-?}" "$(grep -E 'tests passed' "$log" || echo 'no ctest summary')" "$log" "$dir"
done
