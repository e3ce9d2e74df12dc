#!/usr/bin/env bash
# The ESSP experiment (SEEDS.md §1): MF (MovieLens small) and LDA (SpamAssassin, a subset) under
# BSP, SSP(s), ESSP(s), VAP and async, all with the same injected latency and one straggler;
# writes benchmarks/results/essp/REPORT.md, the PNG plots and the raw JSON Lines metrics.
#   bash benchmarks/essp_experiment.sh            (about 10 minutes on 2 cores)
# Knobs (environment): WORKERS=4 DELAY=200 STRAGGLER=3 FACTOR=4 SVALS="1 3" MF_ITERS=80
#                      LDA_ITERS=15 LDA_DOCS=2000 TOPICS=20
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_TYPE="${BUILD_TYPE:-Release}"
source "$root/scripts/configure.sh"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v gnuplot >/dev/null; then
  $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 || true; $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
fi
cmake --build "$BUILD_DIR" --target strata_mf strata_lda
bash "$root/scripts/fetch_data.sh" all

W="${WORKERS:-4}" DELAY="${DELAY:-200}" STRAGGLER="${STRAGGLER:-3}" FACTOR="${FACTOR:-4}"
SVALS="${SVALS:-1 3}" MF_ITERS="${MF_ITERS:-80}" LDA_ITERS="${LDA_ITERS:-15}" LDA_DOCS="${LDA_DOCS:-2000}" TOPICS="${TOPICS:-20}"
out="$root/benchmarks/results/essp"
mkdir -p "$out/metrics"
rm -f "$out"/metrics/*.jsonl "$out"/*.png
net=(--workers "$W" --delay "$DELAY" --straggler "$STRAGGLER" --straggler-factor "$FACTOR" --quiet)
models=(bsp)
for s in $SVALS; do models+=("ssp:$s" "essp:$s"); done
models+=(vap async)

for app in mf lda; do
  for m in "${models[@]}"; do
    name="${m%%:*}"; s="${m#*:}"; [ "$s" = "$m" ] && s=0
    tag="$name"; [ "$name" = ssp ] || [ "$name" = essp ] && tag="${name}_s$s"
    if [ "$app" = mf ]; then
      args=(--iterations "$MF_ITERS" --clocks-per-epoch 4)
    else
      args=(--iterations "$LDA_ITERS" --max-docs "$LDA_DOCS" --topics "$TOPICS")
    fi
    echo "== $app $tag" >&2
    "$BUILD_DIR/examples/strata_$app" --consistency "$name" --staleness "$s" "${net[@]}" "${args[@]}" \
      --metrics "$out/metrics/${app}_${tag}.jsonl" | tee "$out/metrics/${app}_${tag}.summary"
  done
done

# Per-thread throughput against plain single-threaded loops in the same binary (no latency).
"$BUILD_DIR/examples/strata_mf" --consistency bsp --workers 1 --iterations 40 --quiet --bench-baseline > "$out/metrics/bench_mf.txt"
"$BUILD_DIR/examples/strata_lda" --consistency bsp --workers 1 --iterations 8 --max-docs "$LDA_DOCS" --topics "$TOPICS" \
  --quiet --bench-baseline > "$out/metrics/bench_lda.txt"

python3 "$root/benchmarks/essp/report.py" "$out" "W=$W DELAY=$DELAY STRAGGLER=$STRAGGLER FACTOR=$FACTOR SVALS='$SVALS' MF_ITERS=$MF_ITERS LDA_ITERS=$LDA_ITERS LDA_DOCS=$LDA_DOCS TOPICS=$TOPICS"
(cd "$out" && for f in *.gp; do gnuplot "$f"; done && rm -f ./*.gp ./*.dat)
echo "report: $out/REPORT.md" >&2
