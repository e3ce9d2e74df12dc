#!/usr/bin/env bash
# The ESSP experiment: MF (MovieLens small) and LDA (all 6,046 SpamAssassin documents) with 4
# workers under BSP, SSP(s), ESSP(s), VAP and async, with injected latency, with and without a
# straggler, over delayed<inproc> (threads of one process) and over TCP processes
# (scripts/launch.sh, one worker per process). The objective in every trace is the true model's,
# from a consistent snapshot every EVAL_* iterations (--eval-every). Writes
# benchmarks/results/essp/REPORT.md, the PNG plots, summary.json and the JSON Lines traces.
#   bash benchmarks/essp_experiment.sh          (about 20 minutes on 2 shared cores)
# Knobs (environment): WORKERS=4 DELAY=200 FACTOR=4 SVALS="1 3" MF_SEEDS="1 2 3" LDA_SEEDS="1"
#   MF_ITERS=80 LDA_ITERS=12 TOPICS=50 EVAL_MF=4 EVAL_LDA=2 TCP_S=3 TCP_SEEDS="1" TCP=1 (0: no TCP runs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD_TYPE="${BUILD_TYPE:-Release}"
source "$root/scripts/configure.sh"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v gnuplot >/dev/null; then
  $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 || true; $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
fi
[ "${SKIP_BUILD:-0}" = 1 ] || cmake --build "$BUILD_DIR" --target strata_mf strata_lda
bash "$root/scripts/fetch_data.sh" all

W="${WORKERS:-4}" DELAY="${DELAY:-200}" FACTOR="${FACTOR:-4}" SVALS="${SVALS:-1 3}"
MF_SEEDS="${MF_SEEDS:-1 2 3}" LDA_SEEDS="${LDA_SEEDS:-1}"
MF_ITERS="${MF_ITERS:-80}" LDA_ITERS="${LDA_ITERS:-12}" TOPICS="${TOPICS:-50}" EVAL_MF="${EVAL_MF:-4}" EVAL_LDA="${EVAL_LDA:-2}"
TCP="${TCP:-1}" TCP_S="${TCP_S:-3}" TCP_SEEDS="${TCP_SEEDS:-1}"
STRAGGLER=$((W - 1))
out="$root/benchmarks/results/essp"
mkdir -p "$out/metrics"
rm -f "$out"/metrics/*.jsonl "$out"/metrics/*.jsonl.gz "$out"/metrics/*.summary "$out"/*.png
start=$(date +%s)

app_args() {  # app -> its flags
  if [ "$1" = mf ]; then echo --iterations "$MF_ITERS" --clocks-per-epoch 4 --eval-every "$EVAL_MF"
  else echo --iterations "$LDA_ITERS" --topics "$TOPICS" --eval-every "$EVAL_LDA"; fi
}

# One run: transport (inproc|tcp), straggler (none|slow), app, model[:s], seed.
run() {
  local tr="$1" st="$2" app="$3" m="$4" seed="$5"
  local name="${m%%:*}" s="${m#*:}"
  [ "$s" = "$m" ] && s=0
  local tag="$name"; { [ "$name" = ssp ] || [ "$name" = essp ]; } && tag="${name}_s$s"
  local file="$out/metrics/${tr}_${st}_${app}_${tag}_seed${seed}"
  local net=(--delay "$DELAY" --straggler-factor "$FACTOR" --seed "$seed" --quiet)
  [ "$st" = slow ] && net+=(--straggler "$STRAGGLER")
  echo "== $tr $st $app $tag seed $seed ($(( $(date +%s) - start )) s)" >&2
  # shellcheck disable=SC2046
  if [ "$tr" = inproc ]; then
    "$BUILD_DIR/examples/strata_$app" --consistency "$name" --staleness "$s" --workers "$W" "${net[@]}" $(app_args "$app") \
      --metrics "$file.jsonl" > "$file.summary"
  else
    "$root/scripts/launch.sh" -n "$W" --base-port "${BASE_PORT:-29700}" -- "$BUILD_DIR/examples/strata_$app" --transport tcp \
      --workers 1 --consistency "$name" --staleness "$s" "${net[@]}" $(app_args "$app") --metrics "$file.jsonl" |
      grep '^\[0\]' | sed 's/^\[0\] //' > "$file.summary"
  fi
}

models=(bsp)
for s in $SVALS; do models+=("ssp:$s" "essp:$s"); done
models+=(vap async)
for app in mf lda; do
  seeds="$MF_SEEDS"; [ "$app" = lda ] && seeds="$LDA_SEEDS"
  for seed in $seeds; do
    for st in none slow; do
      for m in "${models[@]}"; do run inproc "$st" "$app" "$m" "$seed"; done
    done
  done
done
if [ "$TCP" = 1 ]; then
  for seed in $TCP_SEEDS; do
    for st in none slow; do
      for app in mf lda; do
        for m in bsp "ssp:$TCP_S" "essp:$TCP_S" vap async; do run tcp "$st" "$app" "$m" "$seed"; done
      done
    done
  done
fi
echo "runs done in $(( $(date +%s) - start )) s" >&2

knobs="WORKERS=$W DELAY=$DELAY FACTOR=$FACTOR SVALS='$SVALS' MF_SEEDS='$MF_SEEDS' LDA_SEEDS='$LDA_SEEDS' MF_ITERS=$MF_ITERS LDA_ITERS=$LDA_ITERS TOPICS=$TOPICS EVAL_MF=$EVAL_MF EVAL_LDA=$EVAL_LDA TCP=$TCP TCP_S=$TCP_S TCP_SEEDS='$TCP_SEEDS'"
/usr/bin/python3 "$root/benchmarks/essp/report.py" "$out" "$knobs" "$(( $(date +%s) - start ))"
(cd "$out" && for f in *.gp; do gnuplot "$f"; done && rm -f ./*.gp ./*.dat)
# Traces over 64 KB are gzipped (the small ones stay readable by tests/ml/test_trace.cpp).
find "$out/metrics" -name '*.jsonl' -size +64k -exec gzip -f {} +
echo "report: $out/REPORT.md" >&2
