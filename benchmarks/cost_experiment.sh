#!/usr/bin/env bash
# The Hemingway/Ernest cost models on strata (include/strata/cost/, examples/plan.cpp): for MF and
# LDA, strata_plan chooses probe runs on data fractions and 1-3 workers under a time budget (A-optimal
# design), fits the system and convergence models from their traces, predicts held-out
# configurations (larger data, 4 workers, every consistency model and other staleness values), then
# measures every held-out configuration; report.py writes benchmarks/results/cost/REPORT.md with the
# prediction errors and gnuplot figures of predicted vs measured.
#
#   bash benchmarks/cost_experiment.sh            (knobs as environment variables, see below)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$root/build}"
bash "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR" --target strata_plan
DELAY="${DELAY:-200}" SEED="${SEED:-1}"
MF_BUDGET="${MF_BUDGET:-30}" MF_TARGET="${MF_TARGET:-0.915}" MF_PROBE_ITERS="${MF_PROBE_ITERS:-14}" MF_ITERS="${MF_ITERS:-30}"
LDA_BUDGET="${LDA_BUDGET:-40}" LDA_TARGET="${LDA_TARGET:-9.3}" LDA_PROBE_ITERS="${LDA_PROBE_ITERS:-8}" LDA_ITERS="${LDA_ITERS:-20}"
LDA_DOCS="${LDA_DOCS:-2000}" TOPICS="${TOPICS:-20}"
out="$root/benchmarks/results/cost"
traces="${TRACES:-$(mktemp -d)}"
mkdir -p "$out"
rm -f "$out"/*.png "$out"/*.json "$out"/*.txt
common=(--delay "$DELAY" --seed "$SEED" --fractions 0.1 0.2 0.4 --probe-workers 1 2 3 --probe-models bsp ssp:2 essp:2
        --heldout-fractions 0.7 1 --heldout-workers 1 2 3 4 --heldout-models bsp ssp:1 ssp:3 essp:1 essp:3 vap async --measure)
echo "== mf" >&2
"$BUILD_DIR/examples/strata_plan" --trainer mf "${common[@]}" --budget "$MF_BUDGET" --target "$MF_TARGET" \
  --probe-iterations "$MF_PROBE_ITERS" --measure-iterations "$MF_ITERS" --out "$out/mf.json" --trace-dir "$traces/mf" | tee "$out/mf.txt"
echo "== lda" >&2
"$BUILD_DIR/examples/strata_plan" --trainer lda "${common[@]}" --budget "$LDA_BUDGET" --target "$LDA_TARGET" --max-docs "$LDA_DOCS" \
  --topics "$TOPICS" --probe-iterations "$LDA_PROBE_ITERS" --measure-iterations "$LDA_ITERS" --out "$out/lda.json" \
  --trace-dir "$traces/lda" | tee "$out/lda.txt"
knobs="DELAY=$DELAY SEED=$SEED MF_BUDGET=$MF_BUDGET MF_TARGET=$MF_TARGET MF_PROBE_ITERS=$MF_PROBE_ITERS MF_ITERS=$MF_ITERS LDA_BUDGET=$LDA_BUDGET LDA_TARGET=$LDA_TARGET LDA_PROBE_ITERS=$LDA_PROBE_ITERS LDA_ITERS=$LDA_ITERS LDA_DOCS=$LDA_DOCS TOPICS=$TOPICS"
python3 "$root/benchmarks/cost/report.py" "$out" "$knobs"
(cd "$out" && for f in *.gp; do gnuplot "$f"; done && rm -f ./*.gp ./*.dat)
echo "report: $out/REPORT.md (traces in $traces)" >&2
