#!/usr/bin/env bash
# Adaptive mode (include/strata/cost/adaptive.hpp, strata_mf --adaptive): MF on MovieLens small
# under an injected latency, time to a target test RMSE for fixed staleness bounds and for the
# adaptive run that re-plans its bound every K iterations from its own trace, several seeds.
# Prints one line per run and a summary table (markdown) on stdout; traces in $TRACES.
#
#   bash benchmarks/adaptive_experiment.sh       (knobs as environment variables, see below)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$root/build}"
bash "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR" --target strata_mf -j2 >&2
data="${STRATA_DATA:-$HOME/.cache/strata}"
[ -f "$data/ratings.train.txt" ] || bash "$root/scripts/fetch_data.sh" >&2
DELAY="${DELAY:-200}" WORKERS="${WORKERS:-2}" ITERS="${ITERS:-40}" TARGET="${TARGET:-0.915}"
K="${K:-8}" CANDIDATES="${CANDIDATES:-0,1,2,4}" SEEDS="${SEEDS:-1 2 3}" MODEL="${MODEL:-ssp}" FIXED="${FIXED:-0 2}" MIN_GAP="${MIN_GAP:-0}"
traces="${TRACES:-$(mktemp -d)}"
mkdir -p "$traces"
common=(--consistency "$MODEL" --workers "$WORKERS" --iterations "$ITERS" --delay "$DELAY" --data "$data" --quiet)
for seed in $SEEDS; do
  for s in $FIXED; do
    "$BUILD_DIR/examples/strata_mf" "${common[@]}" --staleness "$s" --seed "$seed" --metrics "$traces/fixed_s${s}_seed${seed}.jsonl" >&2
  done
  "$BUILD_DIR/examples/strata_mf" "${common[@]}" --staleness 0 --seed "$seed" --adaptive "$K" --adaptive-candidates "$CANDIDATES" \
    --adaptive-target "$TARGET" --adaptive-min-gap "$MIN_GAP" --metrics "$traces/adaptive_seed${seed}.jsonl" >&2
done
/usr/bin/python3 - "$traces" "$TARGET" "$SEEDS" "$FIXED" <<'PY'
import json, sys, statistics, glob, os
traces, target, seeds, fixed = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def tta(path):
    recs = [json.loads(l) for l in open(path)][1:]
    # sustained RMSE: the worst from iteration i on (as trace_fit's time_to)
    worst, sus = float("-inf"), []
    for r in reversed(recs):
        worst = max(worst, r["rmse"]); sus.append(worst)
    sus.reverse()
    for r, v in zip(recs, sus):
        if v <= target: return r["iteration"], r["elapsed_s"], recs
    return None, None, recs
rows = [("fixed s=%s" % s, "fixed_s%s_seed%%s.jsonl" % s) for s in fixed] + [("adaptive", "adaptive_seed%s.jsonl")]
print("| configuration | seed | iterations to RMSE <= %.3f | seconds to it | final RMSE | total seconds | bounds per segment |" % target)
print("|---|---|---|---|---|---|---|")
summary = {}
for name, pat in rows:
    for seed in seeds:
        it, sec, recs = tta(os.path.join(traces, pat % seed))
        bounds = []
        for r in recs:
            if "staleness_bound" in r and (not bounds or r["segment"] != bounds[-1][0]): bounds.append((r["segment"], r["staleness_bound"]))
        b = ",".join("%g" % x for _, x in bounds) if bounds else "-"
        print("| %s | %s | %s | %s | %.4f | %.2f | %s |" % (name, seed, it if it is not None else "not reached",
              "%.2f" % sec if sec is not None else "-", recs[-1]["rmse"], recs[-1]["elapsed_s"], b))
        summary.setdefault(name, []).append(sec)
print()
print("| configuration | seconds to target, mean over seeds | min | max | reached |")
print("|---|---|---|---|---|")
for name, v in summary.items():
    ok = [x for x in v if x is not None]
    if ok: print("| %s | %.2f | %.2f | %.2f | %d/%d |" % (name, statistics.mean(ok), min(ok), max(ok), len(ok), len(v)))
    else: print("| %s | - | - | - | 0/%d |" % (name, len(v)))
PY
echo "traces in $traces" >&2
