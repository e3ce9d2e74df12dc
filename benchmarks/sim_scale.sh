#!/usr/bin/env bash
# The simulated cluster at scale (issue 39): strata_mf on strata_gen's 10M-rating data with up to
# 1,024 simulated workers (64 hosts x 16) on the 256-host fat tree, CPU time measured. Per shape it
# prints the trainer's summary, the simulation's line (simulated seconds, wall seconds, slowdown,
# messages) and the process's wall time and peak memory (GNU time).
#
#   bash benchmarks/sim_scale.sh [BUILD_DIR] [ITERATIONS] [SHAPES...]     shapes: NODESxWORKERS, e.g. 64x16
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=${1:-$root/build}
iterations=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(1x2 4x4 16x4 16x16 64x16)
bash "$root/scripts/deps.sh" time
data="$HOME/.cache/strata/gen/mf-10m-s1"
"$build/examples/strata_gen" mf --size 10m --out "$data" >/dev/null
for shape in "${shapes[@]}"; do
  nodes=${shape%x*} workers=${shape#*x}
  echo "== $nodes hosts x $workers workers = $((nodes * workers)) workers, $iterations iterations, essp s=2 (commit $(git -C "$root" rev-parse --short HEAD))"
  /usr/bin/time -f "process: %e s wall, %M KB peak" "$build/examples/strata_mf" --data "$data" --rank 32 --clocks-per-epoch 1 \
    --user-order --iterations "$iterations" --consistency essp --staleness 2 --quiet \
    --transport sim --platform "$root/examples/platforms/fattree256.txt" --nodes "$nodes" --workers "$workers" 2>&1
done
