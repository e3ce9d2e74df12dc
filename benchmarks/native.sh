#!/usr/bin/env bash
# Runs one of the scale experiments (issue 37): installs what it needs, builds the named targets in
# build-native/ (Release with -march=native, configured on first use, through ccache when present)
# and runs benchmarks/SCRIPT with --build build-native and the flags after `--`.
#
#   bash benchmarks/native.sh SCRIPT.py TARGET... -- [flags of the script]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
script=$1
shift
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift
bash "$root/scripts/deps.sh" time
source "$root/scripts/ccache.sh"
build="$root/build-native"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target "${targets[@]}" >/dev/null
exec python3 "$root/benchmarks/$script" --build "$build" "$@"
