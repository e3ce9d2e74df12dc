#!/usr/bin/env bash
# Exact (SparseLDA) against Metropolis–Hastings (--sampler mh) sampling in strata_lda on
# SpamAssassin (K = 50, BSP, the same number of sweeps): tokens/s per worker thread with
# --bench-baseline (the plain single-threaded loop with the same sampler, interleaved), the
# log-likelihood after every sweep (--metrics), and CPU time per sweep (perf stat task-clock of a
# run of S+2 sweeps minus one of 2 sweeps, which the machine's load disturbs less than wall time).
#
#   benchmarks/lda_sampler_bench.sh BINARY OUT_DIR [SWEEPS]
set -euo pipefail
bin=$1 out=$2 sweeps=${3:-10}
mkdir -p "$out"
data="${STRATA_DATA:-$HOME/.cache/strata}/docword.spam.txt"
common=(--data "$data" --topics 50 --consistency bsp --quiet)
for w in 1 2; do
  for s in sparse mh; do
    echo "== sampler=$s workers=$w sweeps=$sweeps: $bin ${common[*]} --workers $w --sampler $s --iterations $sweeps --bench-baseline"
    "$bin" "${common[@]}" --workers "$w" --sampler "$s" --iterations "$sweeps" --metrics "$out/lda_${s}_w${w}.jsonl" --bench-baseline
  done
done
if command -v perf >/dev/null; then
  for s in sparse mh sparse mh; do
    long=$(perf stat -x, -e task-clock "$bin" "${common[@]}" --workers 1 --sampler "$s" --iterations $((sweeps + 2)) 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
    short=$(perf stat -x, -e task-clock "$bin" "${common[@]}" --workers 1 --sampler "$s" --iterations 2 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
    awk -v s="$s" -v a="$long" -v b="$short" -v n="$sweeps" -v tok=1564260 \
      'BEGIN { ms = a - b; printf "cpu sampler=%s workers=1: %d sweeps %.0f ms CPU (%.0f - %.0f), %.0f tokens per CPU second\n", s, n, ms, a, b, n * tok / (ms / 1000) }'
  done
fi
