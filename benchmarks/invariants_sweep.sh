#!/usr/bin/env bash
# End-to-end invariants after a runtime change: LDA on SpamAssassin (all documents) under every
# consistency model, several seeds, over the delayed transport (latency with jitter) and over TCP
# (two processes on this machine, scripts/launch.sh). Each run must report invariants=ok (every
# count conserved: no lost or doubled update across workers, shards and processes) and
# staleness_max within the model's bound (s for ssp/essp, 0 for bsp). Prints one line per run and
# exits non-zero at the end when any run failed. Not a timed benchmark: the figures are checks.
#
#   benchmarks/invariants_sweep.sh [BUILD_DIR] [SEEDS...]   (defaults: build, seeds 1 2 3)
#   SWEEP_ITERATIONS=4 SWEEP_DELAY_US=200 (jitter: the trainer's default, half the delay)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shift || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
lda="$build/examples/strata_lda"
[ -x "$lda" ] || { echo "invariants_sweep: $lda not built (cmake --build $build --target strata_lda)" >&2; exit 2; }
bash "$root/scripts/fetch_data.sh" spam >/dev/null
iters="${SWEEP_ITERATIONS:-4}"
delay="${SWEEP_DELAY_US:-200}"
port=$((29700 + RANDOM % 200))
failed=0

check() {  # check LABEL BOUND OUTPUT
  local label=$1 bound=$2 out=$3 line inv smax
  line="$(grep -m1 'lda summary:' <<< "$out")"
  inv="$(sed -n 's/.* invariants=\([^ ]*\).*/\1/p' <<< "$line")"
  smax="$(sed -n 's/.* staleness_max=\([^ ]*\).*/\1/p' <<< "$line")"
  local ok=yes
  [ "$inv" = ok ] || ok=no
  if [ "$bound" != - ] && { [ -z "$smax" ] || [ "$smax" -gt "$bound" ]; }; then ok=no; fi
  printf '%-34s invariants=%-4s staleness_max=%-3s bound=%-2s %s\n' "$label" "${inv:-none}" "${smax:-?}" "$bound" "$ok"
  if [ $ok = no ]; then
    failed=1
    [ -n "$line" ] || tail -5 <<< "$out"
  fi
}

for model in bsp ssp essp vap async; do
  case $model in bsp) bound=0 ;; ssp | essp) bound=2 ;; *) bound=- ;; esac
  for seed in "${seeds[@]}"; do
    common=(--consistency "$model" --staleness 2 --seed "$seed" --iterations "$iters" --quiet)
    out="$("$lda" "${common[@]}" --workers 2 --nodes 2 --transport delayed --delay "$delay" 2>&1)"
    check "$model seed $seed delayed ${delay}us" "$bound" "$out"
    out="$(bash "$root/scripts/launch.sh" -n 2 --base-port "$port" -- "$lda" "${common[@]}" --workers 2 --nodes 2 --transport tcp 2>&1)"
    port=$((port + 2))
    check "$model seed $seed tcp 2 processes" "$bound" "$out"
  done
done
[ $failed = 0 ] && echo "invariants_sweep: every run kept its invariants" || echo "invariants_sweep: FAILED" >&2
exit $failed
