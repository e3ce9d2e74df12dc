#!/usr/bin/env bash
# The simulated cluster at scale (issue 39): strata_mf on strata_gen's 10M-rating data (rank 32) or
# strata_lda on its 10M-token corpus (K = 100), ESSP s=2, with up to 1,024 simulated workers (64
# hosts x 16) on the 256-host fat tree, CPU time measured. Per shape it prints the trainer's summary,
# the simulation's line (simulated seconds, wall seconds, slowdown, messages) and the process's wall
# time and peak memory (GNU time). Extra trainer flags after `--` (e.g. -- --average-items).
#
#   [TRAINER=mf|lda] bash benchmarks/sim_scale.sh [BUILD_DIR] [ITERATIONS] [SHAPES...] [-- FLAGS...]
#   shapes: NODESxWORKERS, e.g. 64x16
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=${1:-$root/build}
iterations=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
shapes=() extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
  shapes+=("$1"); shift
done
[ ${#shapes[@]} -gt 0 ] || shapes=(1x2 4x4 16x4 16x16 64x16)
trainer=${TRAINER:-mf}
bash "$root/scripts/deps.sh" time
case "$trainer" in
  mf)
    data="$HOME/.cache/strata/gen/mf-10m-s1"
    "$build/examples/strata_gen" mf --size 10m --out "$data" >/dev/null
    cmd=("$build/examples/strata_mf" --data "$data" --rank 32 --clocks-per-epoch 1 --user-order) ;;
  lda)
    data="$HOME/.cache/strata/gen/lda-10m-s1"
    "$build/examples/strata_gen" lda --size 10m --out "$data" >/dev/null
    cmd=("$build/examples/strata_lda" --data "$data/docword.10m.txt" --topics 100) ;;
  *) echo "$0: TRAINER is mf or lda, not '$trainer'" >&2; exit 2 ;;
esac
for shape in "${shapes[@]}"; do
  nodes=${shape%x*} workers=${shape#*x}
  echo "== $trainer: $nodes hosts x $workers workers = $((nodes * workers)) workers, $iterations iterations, essp s=2 ${extra[*]} (commit $(git -C "$root" rev-parse --short HEAD))"
  /usr/bin/time -f "process: %e s wall, %M KB peak" "${cmd[@]}" --iterations "$iterations" --consistency essp --staleness 2 --quiet \
    --transport sim --platform "$root/examples/platforms/fattree256.txt" --nodes "$nodes" --workers "$workers" "${extra[@]}" 2>&1
done
