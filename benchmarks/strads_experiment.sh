#!/usr/bin/env bash
# The STRADS experiment (SEEDS.md §2): Lasso on the SpamAssassin bag of words (6,046 x 15,883,
# log1p counts, target spam) at LAMBDA x lambda_max with round robin, uniform random (Shotgun),
# priority and priority + dependency filter, at 1, 2 and 4 workers, several seeds, and over two
# TCP processes; the reference solvers (scikit-learn, glmnet) timed on the same problem; LDA word
# rotation against the data-parallel ESSP trainer. Writes benchmarks/results/strads/REPORT.md,
# PNG plots and the raw JSON Lines traces.
#   bash benchmarks/strads_experiment.sh          (about 10 minutes on 2 cores)
# Knobs (environment): LAMBDA=0.01 BATCH=64 RHO=0.3 EVERY=50 TOL=1e-4 ROUNDS=100000 SEEDS="1 2 3"
#                      WORKERS="1 2 4" BIG_BATCHES="128 256" LDA_ITERS=10 TOPICS=20
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_TYPE="${BUILD_TYPE:-Release}"
source "$root/scripts/configure.sh"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
command -v gnuplot >/dev/null || need+=(gnuplot-nox)
command -v Rscript >/dev/null && Rscript -e 'library(glmnet)' >/dev/null 2>&1 || need+=(r-cran-glmnet)
if [ ${#need[@]} -gt 0 ]; then
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 || true; $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi
cmake --build "$BUILD_DIR" --target strata_lasso strata_lda
bash "$root/scripts/fetch_data.sh" lasso
py=/usr/bin/python3; [ -x "$py" ] || py=python3

LAMBDA="${LAMBDA:-0.01}" BATCH="${BATCH:-64}" RHO="${RHO:-0.3}" EVERY="${EVERY:-50}" TOL="${TOL:-1e-4}"
ROUNDS="${ROUNDS:-100000}" SEEDS="${SEEDS:-1 2 3}" BIG_BATCHES="${BIG_BATCHES:-128 256}" WORKERS="${WORKERS:-1 2 4}" LDA_ITERS="${LDA_ITERS:-10}" TOPICS="${TOPICS:-20}"
out="$root/benchmarks/results/strads"
mkdir -p "$out/metrics"
rm -f "$out"/metrics/*.jsonl "$out"/metrics/*.jsonl.gz "$out"/metrics/*.err "$out"/metrics/*.dat "$out"/*.png
lasso=(--data spam --lambda-fraction "$LAMBDA" --batch "$BATCH" --rho "$RHO" --evaluate-every "$EVERY"
       --tolerance "$TOL" --rounds "$ROUNDS" --quiet)

echo "== references (scikit-learn, glmnet)" >&2
"$py" "$root/benchmarks/strads/lasso_references.py" "$HOME/.cache/strata/spam.libsvm" "$LAMBDA" "$out/metrics/references.jsonl" >&2

for w in $WORKERS; do
  for s in round_robin random priority filtered; do
    for seed in $SEEDS; do
      echo "== lasso $s workers=$w seed=$seed" >&2
      "$BUILD_DIR/examples/strata_lasso" "${lasso[@]}" --scheduler "$s" --workers "$w" --seed "$seed" \
        --metrics "$out/metrics/lasso_${s}_w${w}_s${seed}.jsonl" >&2
    done
  done
done
for seed in $SEEDS; do
  echo "== lasso priority, 2 TCP processes x 1 worker, seed=$seed" >&2
  bash "$root/scripts/launch.sh" -n 2 --base-port 11890 -- "$BUILD_DIR/examples/strata_lasso" --transport tcp "${lasso[@]}" \
    --scheduler priority --workers 1 --seed "$seed" --metrics "$out/metrics/lasso_priority_tcp2_s${seed}.jsonl" >&2
done

# Larger batches, one worker, seed 1: where stepping many coefficients together diverges and the
# dependency filter is meant to keep it safe (a diverging run stops with an error, recorded).
for b in $BIG_BATCHES; do
  for s in random priority filtered; do
    echo "== lasso $s batch=$b" >&2
    big=(--data spam --lambda-fraction "$LAMBDA" --batch "$b" --rho "$RHO" --evaluate-every "$EVERY" --tolerance "$TOL"
         --rounds "$ROUNDS" --quiet --scheduler "$s" --workers 1 --seed 1)
    if ! "$BUILD_DIR/examples/strata_lasso" "${big[@]}" --metrics "$out/metrics/big_${s}_b${b}.jsonl" \
         2> "$out/metrics/big_${s}_b${b}.err" >&2; then
      cat "$out/metrics/big_${s}_b${b}.err" >&2
      rm -f "$out/metrics/big_${s}_b${b}.jsonl"
    fi
  done
done

for m in rotation ps; do
  for w in 1 2; do
    echo "== lda $m workers=$w" >&2
    "$BUILD_DIR/examples/strata_lda" --mode "$m" --consistency essp --staleness 2 --workers "$w" --topics "$TOPICS" \
      --iterations "$LDA_ITERS" --quiet --metrics "$out/metrics/lda_${m}_w${w}.jsonl" >&2
  done
done

"$py" "$root/benchmarks/strads/report.py" "$out" \
  "bash benchmarks/strads_experiment.sh (LAMBDA=$LAMBDA BATCH=$BATCH RHO=$RHO EVERY=$EVERY TOL=$TOL ROUNDS=$ROUNDS SEEDS=\"$SEEDS\" WORKERS=\"$WORKERS\" BIG_BATCHES=\"$BIG_BATCHES\" LDA_ITERS=$LDA_ITERS TOPICS=$TOPICS)"
gzip -f -9 "$out"/metrics/*.jsonl  # the committed traces, compressed (report.py reads them either way)
echo "wrote $out/REPORT.md" >&2
