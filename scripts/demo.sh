#!/usr/bin/env bash
# README's main command: set up, fetch MovieLens small if needed, train SGD matrix factorisation
# with 4 workers under ESSP (progress shown), then under SSP and BSP, and print a comparison table.
# A 200 µs message latency (jitter 100 µs) is injected so the consistency models differ as they
# would on a network; DEMO_ARGS adds flags to every run (e.g. DEMO_ARGS="--delay 0").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_TYPE="${BUILD_TYPE:-Release}"
source "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR" --target strata_mf
bash "$root/scripts/fetch_data.sh" movielens
mf="$BUILD_DIR/examples/strata_mf"
common=(--workers 4 --staleness 2 --delay 200 --iterations 80 --clocks-per-epoch 4)
read -r -a extra <<< "${DEMO_ARGS:-}"

rows=()
for model in essp ssp bsp; do
  echo "== MF on MovieLens, 4 workers, $model" >&2
  out="$("$mf" --consistency "$model" "${common[@]}" "${extra[@]}" | tee /dev/stderr | grep '^mf summary:')"
  get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$out"; }
  label="$model"; [ "$model" = bsp ] || label="$model s=2"
  rows+=("$(printf '%-10s %10s %9s %9s %18s' "$label" "$(get iterations)" "$(get seconds)" "$(get test_rmse)" "$(get staleness_mean)")")
done
echo
printf '%-10s %10s %9s %9s %18s\n' model iterations seconds "test RMSE" "mean staleness"
printf '%s\n' "${rows[@]}"
