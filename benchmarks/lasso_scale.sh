#!/usr/bin/env bash
# Lasso at 1M features (issue 37): strata_lasso's STRADS schedulers (priority, Shotgun, round
# robin; 2 workers, sequential batch steps) against glmnet (R) and scikit-learn on strata_gen's
# data, whole process including the read, interleaved, medians of --reps, peak RSS of each.
#
#   bash benchmarks/lasso_scale.sh [--size 1m|100k] [--reps 3] [--fraction 0.1] [--build build-lasso]
#                                  [--out FILE] [--work DIR] [--cap-rounds 30000] [--only "priority glmnet ..."]
#                                  [--thresh T --tol T: skip the calibration, e.g. as an earlier run chose]
#                                  [--no-build: use the binaries in --build as they are]
#
# Protocol (benchmarks/lasso_scale/report.py prints the table):
#  - Data: `strata_gen lasso --size S --seed 1` (reused when cached).
#  - λ = fraction × λ_max, λ_max = ‖Xᵀ(y − ȳ)‖∞ / n. Every program solves the same problem:
#    y centred (strata_lasso centres it), no intercept, no standardisation,
#    F(β) = 1/(2n)‖y − Xβ‖² + λ‖β‖₁ (strata's, glmnet's gaussian and sklearn's Lasso objective).
#  - F*: glmnet at thresh 1e-14 (recorded in WORK/fstar.json with λ; β in WORK/fstar_beta.txt).
#  - Target: F ≤ F* (1 + 1e-4) (relative 1e-4).
#  - glmnet's thresh and sklearn's tol: the loosest of a grid whose F reaches the target, found by
#    an untimed calibration run of each (printed in the raw file).
#  - Time to target, whole process under /usr/bin/time -v (wall, peak RSS):
#      strata: the run stops at duality gap ≤ 1e-4 F (which implies the target); its trace
#        (--metrics, one evaluation per --evaluate-every rounds) says when F first met the target,
#        and the time after that is taken off the wall time: wall − (run seconds − elapsed at the hit).
#      glmnet: svm2csc (libsvm → binary CSC, C++, R has no fast libsvm reader) + Rscript (readBin,
#        glmnet, F): the two wall times added, the larger peak RSS.
#      sklearn: python3 (load_svmlight_file, Lasso.fit, F).
#  - Order: each repetition runs every program once, in the same order.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
size=1m reps=3 fraction=0.1 build="$root/build-lasso" out="" work="" cap=30000 only="" thresh="" tol="" build_step=1
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2;; --reps) reps=$2; shift 2;; --fraction) fraction=$2; shift 2;;
    --build) build=$2; shift 2;; --out) out=$2; shift 2;; --work) work=$2; shift 2;;
    --cap-rounds) cap=$2; shift 2;; --only) only=$2; shift 2;;
    --thresh) thresh=$2; shift 2;; --tol) tol=$2; shift 2;;
    --no-build) build_step=0; shift;;
    *) echo "lasso_scale.sh: unknown flag $1" >&2; exit 2;;
  esac
done
date=$(date +%Y-%m-%d)
out=${out:-$root/benchmarks/results/scale/lasso_${size}_$date.txt}
work=${work:-$HOME/.cache/strata/lasso_scale/$size}
mkdir -p "$work" "$(dirname "$out")"
bash "$root/scripts/deps.sh" r-cran-glmnet time  # R and glmnet, /usr/bin/time; python3-sklearn is in the base list
py=/usr/bin/python3  # Debian's, with python3-sklearn
if [ ! -f "$build/build.ninja" ]; then
  source "$root/scripts/ccache.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-march=native "${launcher[@]}" >/dev/null
fi
[ "$build_step" = 0 ] || ninja -C "$build" -j2 strata_lasso strata_gen >/dev/null
cp "$build/examples/strata_lasso" "$work/strata_lasso"  # the binary measured (a rebuild meanwhile does not touch it)
lasso=$work/strata_lasso
gendir=$HOME/.cache/strata/gen/lasso-$size-s1
"$build/examples/strata_gen" lasso --size "$size" --seed 1 | tail -1
data=$gendir/lasso.$size.svm
g++ -O2 -march=native -std=c++20 "$root/benchmarks/lasso_scale/svm2csc.cpp" -o "$work/svm2csc"
R="Rscript $root/benchmarks/lasso_scale/lasso_glmnet.R"
SK="$py $root/benchmarks/lasso_scale/lasso_sklearn.py"

exec > >(tee "$out") 2>&1
echo "# lasso_scale.sh --size $size --reps $reps --fraction $fraction --cap-rounds $cap ($(date -Is))"
echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# strata $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes'); R $(Rscript -e 'cat(as.character(getRversion()), as.character(packageVersion("glmnet")))'); sklearn $($py -c 'import sklearn; print(sklearn.__version__)')"
echo "# data: $data ($(stat -c %s "$data") bytes)"

# F* (glmnet at thresh 1e-14), once per size and fraction.
if [ ! -f "$work/fstar.json" ] || ! grep -q "\"lambda_fraction\": $fraction," "$work/fstar.json"; then
  "$work/svm2csc" "$data" "$work/x.bin"
  $R "$work/x.bin" fstar "$fraction" 1e-14 "$work/fstar.json" "$work/fstar_beta.txt"
fi
[ -f "$work/x.bin" ] || "$work/svm2csc" "$data" "$work/x.bin"
echo "fstar: $(cat "$work/fstar.json")"
lambda=$($py -c "import json; print(repr(json.load(open('$work/fstar.json'))['lambda']))")
fstar=$($py -c "import json; print(repr(json.load(open('$work/fstar.json'))['fstar']))")
target=$($py -c "print(repr($fstar * (1 + 1e-4)))")
echo "target: F <= $target (F* (1 + 1e-4))"

# Calibration (untimed): the loosest thresh / tol reaching the target.
pick() {  # stdin: lines "... KEY=V F=F ...", loosest first; prints the first V whose F <= target
  $py -c "
import re, sys
for l in sys.stdin:
    print('calibration:', l.strip(), file=sys.stderr)
    m = re.search(r'$1=(\S+) F=(\S+)', l)
    if m and float(m.group(2)) <= $target:
        print(m.group(1)); break"
}
[ -n "$thresh" ] || thresh=$($R "$work/x.bin" calibrate "$lambda" 1e-5,1e-6,1e-7,1e-8 | pick thresh)
[ -n "$tol" ] || tol=$($SK "$data" calibrate "$lambda" 1e-1,3e-2,1e-2,1e-3 | pick tol)
echo "chosen: glmnet thresh=$thresh sklearn tol=$tol"

timed() {  # NAME LOG command...: runs under /usr/bin/time -v, prints wall and peak RSS
  local name=$1 log=$2; shift 2
  /usr/bin/time -v "$@" > "$log" 2> "$log.time" || echo "($name exited $?)" >> "$log"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log.time")
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$log.time")
  echo "$wall $rss"
}
strata_flags=(--data "$data" --lambda "$lambda" --workers 2 --batch-steps sequential --tolerance 1e-4 --quiet)
declare -A sflags=(
  [priority]="--scheduler priority --batch 1000 --sweeps 3 --evaluate-every 300 --rounds 100000"
  [shotgun]="--scheduler random --batch 1000 --evaluate-every 1000 --rounds $cap"
  [round_robin]="--scheduler round_robin --batch 1000 --evaluate-every 1000 --rounds $cap"
)
progs=${only:-"priority shotgun round_robin glmnet sklearn"}
for rep in $(seq 1 "$reps"); do
  for prog in $progs; do
    log=$work/run_${prog}_$rep.log
    case $prog in
      priority|shotgun|round_robin)
        # shellcheck disable=SC2086
        read -r wall rss < <(timed "$prog" "$log" "$lasso" "${strata_flags[@]}" ${sflags[$prog]} \
                               --metrics "$work/trace_${prog}_$rep.jsonl" --out "$work/beta_${prog}.txt")
        echo "run rep=$rep prog=strata_$prog wall=$wall rss_kb=$rss trace=$work/trace_${prog}_$rep.jsonl $(grep -h 'lasso summary' "$log" || tail -1 "$log")";;
      glmnet)
        read -r w1 r1 < <(timed svm2csc "$log.convert" "$work/svm2csc" "$data" "$work/x_run.bin")
        read -r w2 r2 < <(timed glmnet "$log" $R "$work/x_run.bin" fit "$lambda" "$thresh")
        rm -f "$work/x_run.bin"
        echo "run rep=$rep prog=glmnet wall=$($py -c "print(round($w1 + $w2, 2))") rss_kb=$(( r1 > r2 ? r1 : r2 )) convert_wall=$w1 convert_rss_kb=$r1 r_wall=$w2 r_rss_kb=$r2 $(cat "$log")";;
      sklearn)
        read -r wall rss < <(timed sklearn "$log" $SK "$data" fit "$lambda" "$tol")
        echo "run rep=$rep prog=sklearn wall=$wall rss_kb=$rss $(cat "$log")";;
    esac
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
$py "$root/benchmarks/lasso_scale/report.py" "$out" --fstar "$work/fstar.json" --truth "$gendir/truth.beta.txt" \
    --glmnet-beta "$work/fstar_beta.txt" --strata-beta "$work"/beta_priority.txt "$work"/beta_shotgun.txt "$work"/beta_round_robin.txt
