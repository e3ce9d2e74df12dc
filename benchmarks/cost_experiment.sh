#!/usr/bin/env bash
# The Hemingway/Ernest cost models on strata (include/strata/cost/, examples/plan.cpp): for MF, LDA
# and Lasso, strata_plan chooses probe runs on data fractions and 1-3 workers under a time budget
# (A-optimal design), fits the system and convergence models from their traces, predicts held-out
# configurations (larger data, 4 workers; MF/LDA: every consistency model and other staleness
# values; Lasso, STRADS rounds: bsp only), then measures every held-out configuration; report.py
# writes benchmarks/results/cost/REPORT.md with the prediction errors and gnuplot figures of
# predicted vs measured, from every <trainer>.json present (a trainer not run keeps its results).
#
#   bash benchmarks/cost_experiment.sh                  (knobs as environment variables, see below)
#   TRAINERS="lasso" bash benchmarks/cost_experiment.sh (only the Lasso part)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$root/build}"
bash "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR" --target strata_plan
DELAY="${DELAY:-200}" SEED="${SEED:-1}" TRAINERS="${TRAINERS:-mf lda lasso}"
MF_BUDGET="${MF_BUDGET:-30}" MF_TARGET="${MF_TARGET:-0.915}" MF_PROBE_ITERS="${MF_PROBE_ITERS:-14}" MF_ITERS="${MF_ITERS:-30}"
LDA_BUDGET="${LDA_BUDGET:-40}" LDA_TARGET="${LDA_TARGET:-9.3}" LDA_PROBE_ITERS="${LDA_PROBE_ITERS:-8}" LDA_ITERS="${LDA_ITERS:-20}"
LDA_DOCS="${LDA_DOCS:-2000}" TOPICS="${TOPICS:-20}"
LASSO_DATA="${LASSO_DATA:-$HOME/.cache/strata/spam.libsvm}" LASSO_BUDGET="${LASSO_BUDGET:-30}" LASSO_TARGET="${LASSO_TARGET:-1e-4}"
LASSO_PROBE_ITERS="${LASSO_PROBE_ITERS:-40}" LASSO_ITERS="${LASSO_ITERS:-100}" LASSO_LAMBDA="${LASSO_LAMBDA:-0.01}"
LASSO_BATCH="${LASSO_BATCH:-64}" LASSO_EVERY="${LASSO_EVERY:-50}" LASSO_SCHEDULER="${LASSO_SCHEDULER:-priority}"
out="$root/benchmarks/results/cost"
traces="${TRACES:-$(mktemp -d)}"
mkdir -p "$out"
py=/usr/bin/python3; [ -x "$py" ] || py=python3
probes=(--delay "$DELAY" --seed "$SEED" --fractions 0.1 0.2 0.4 --probe-workers 1 2 3
        --heldout-fractions 0.7 1 --heldout-workers 1 2 3 4 --measure)
common=("${probes[@]}" --probe-models bsp ssp:2 essp:2 --heldout-models bsp ssp:1 ssp:3 essp:1 essp:3 vap async)
for t in $TRAINERS; do
  rm -f "$out/$t.json" "$out/$t.txt" "$out/$t.knobs" "$out/${t}"_*.png
  case "$t" in
    mf)
      echo "== mf" >&2
      "$BUILD_DIR/examples/strata_plan" --trainer mf "${common[@]}" --budget "$MF_BUDGET" --target "$MF_TARGET" \
        --probe-iterations "$MF_PROBE_ITERS" --measure-iterations "$MF_ITERS" --out "$out/mf.json" --trace-dir "$traces/mf" | tee "$out/mf.txt"
      knobs="DELAY=$DELAY SEED=$SEED MF_BUDGET=$MF_BUDGET MF_TARGET=$MF_TARGET MF_PROBE_ITERS=$MF_PROBE_ITERS MF_ITERS=$MF_ITERS" ;;
    lda)
      echo "== lda" >&2
      "$BUILD_DIR/examples/strata_plan" --trainer lda "${common[@]}" --budget "$LDA_BUDGET" --target "$LDA_TARGET" --max-docs "$LDA_DOCS" \
        --topics "$TOPICS" --probe-iterations "$LDA_PROBE_ITERS" --measure-iterations "$LDA_ITERS" --out "$out/lda.json" \
        --trace-dir "$traces/lda" | tee "$out/lda.txt"
      knobs="DELAY=$DELAY SEED=$SEED LDA_BUDGET=$LDA_BUDGET LDA_TARGET=$LDA_TARGET LDA_PROBE_ITERS=$LDA_PROBE_ITERS LDA_ITERS=$LDA_ITERS LDA_DOCS=$LDA_DOCS TOPICS=$TOPICS" ;;
    lasso)  # STRADS rounds: bsp only; an iteration is LASSO_EVERY rounds; the target is on the duality gap
      echo "== lasso" >&2
      "$BUILD_DIR/examples/strata_plan" --trainer lasso "${probes[@]}" --data "$LASSO_DATA" --budget "$LASSO_BUDGET" \
        --target "$LASSO_TARGET" --lambda-fraction "$LASSO_LAMBDA" --batch "$LASSO_BATCH" --evaluate-every "$LASSO_EVERY" \
        --scheduler "$LASSO_SCHEDULER" --probe-iterations "$LASSO_PROBE_ITERS" --measure-iterations "$LASSO_ITERS" \
        --out "$out/lasso.json" --trace-dir "$traces/lasso" | tee "$out/lasso.txt"
      knobs="DELAY=$DELAY SEED=$SEED LASSO_BUDGET=$LASSO_BUDGET LASSO_TARGET=$LASSO_TARGET LASSO_PROBE_ITERS=$LASSO_PROBE_ITERS LASSO_ITERS=$LASSO_ITERS LASSO_LAMBDA=$LASSO_LAMBDA LASSO_BATCH=$LASSO_BATCH LASSO_EVERY=$LASSO_EVERY LASSO_SCHEDULER=$LASSO_SCHEDULER" ;;
    *) echo "unknown trainer '$t' in TRAINERS (mf lda lasso)" >&2; exit 2 ;;
  esac
  echo "TRAINERS=$t $knobs" > "$out/$t.knobs"
done
"$py" "$root/benchmarks/cost/report.py" "$out"
(cd "$out" && for f in *.gp; do gnuplot "$f"; done && rm -f ./*.gp ./*.dat)
echo "report: $out/REPORT.md (traces in $traces)" >&2
