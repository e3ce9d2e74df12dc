#!/usr/bin/env bash
# The network half of this machine's platform for the simulated cluster (sim/platform.hpp), measured:
#
#   benchmarks/sim_calibrate.sh [--build DIR] [--runs N] [--out FILE]
#
# Runs strata_bench_tcp N times (default 3) and takes the median of its raw-socket baselines: the
# 64-byte ping-pong's median round trip and the pipelined 1 MiB stream's rate. It writes a platform
# of one host (`nproc` cores, speed 1.0: this machine's core is the reference) whose link makes a
# simulated message cost what a raw loopback message costs: in a star a message crosses two links,
# so each link's latency is a quarter of the round trip, and its bandwidth the stream's rate.
# Default output: ~/.cache/strata/platforms/this_machine.txt (examples/platforms/this_machine.txt is
# this script's output on the development machine). The compute rates of the trainers' kernels,
# the other half of the calibration, are to come (issue 39).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../build runs=3 out=${HOME}/.cache/strata/platforms/this_machine.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "$0: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bench=$build/benchmarks/strata_bench_tcp
[ -x "$bench" ] || { echo "$0: $bench is not built (cmake --build $build --target strata_bench_tcp)" >&2; exit 1; }
rtts=() rates=()
for ((i = 1; i <= runs; i++)); do
  txt=$("$bench")
  # section 1's 1024K line: batch batches window raw-MB/s ...; section 3's figures line: raw-median-us ...
  rates+=("$(awk '/^ *1024K/ && !seen { print $4; seen = 1 }' <<<"$txt")")
  rtts+=("$(awk '/raw median us/ { getline; print $1 }' <<<"$txt")")
  echo "run $i: raw 64-byte round trip ${rtts[-1]} us, raw 1 MiB stream ${rates[-1]} MB/s" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rtt=$(median "${rtts[@]}") rate=$(median "${rates[@]}")
lat=$(awk -v r="$rtt" 'BEGIN { printf "%.3f", r / 4 }')
mkdir -p "$(dirname "$out")"
cat >"$out" <<EOF
# This machine as one host, measured by benchmarks/sim_calibrate.sh on $(date -u +%Y-%m-%d) ($(hostname -s),
# commit $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)): medians of $runs runs of strata_bench_tcp's raw
# loopback baselines: a 64-byte round trip of $rtt us (a message crosses two links of a star each
# way: $lat us per link) and $rate MB/s for pipelined 1 MiB batches (runs: ${rtts[*]} us; ${rates[*]} MB/s).
name      this-machine
topology  star
hosts     1
cores     $(nproc)
speed     1.0
link      ${rate}MBps ${lat}us
EOF
echo "wrote $out: link ${rate}MBps ${lat}us" >&2
