#!/usr/bin/env bash
# Test of strata_lda --save-z and strata_lda_z_loglik together: the log-likelihood that the
# trainer reports for its final state (summed from its tables and documents) must equal the one
# recounted from the assignments it writes, to the 7 digits the summary prints (1e-6 relative; one
# token moved changes it by ~1e-3 here).
# Usage: lda_z_loglik_check.sh STRATA_LDA Z_LOGLIK DOCWORD OUTDIR [strata_lda flags...]
set -euo pipefail
lda=$1 tool=$2 data=$3 out=$4
shift 4
mkdir -p "$out"
summary=$("$lda" --data "$data" --save-z "$out/final.z" --quiet "$@" | grep '^lda summary:')
ll=$(sed -n 's/.* loglik=\([^ ]*\).*/\1/p' <<<"$summary")
topics=$(sed -n 's/.* --topics \([0-9]*\).*/\1/p' <<<" $*")
alpha=$(sed -n 's/.* --alpha \([^ ]*\).*/\1/p' <<<" $*")
beta=$(sed -n 's/.* --beta \([^ ]*\).*/\1/p' <<<" $*")
vocab=$(sed -n '2p' "$data")
recount=$("$tool" --z "$out/final.z" --topics "$topics" --vocab-size "$vocab" --alpha "$alpha" --beta "$beta")
echo "$summary"
echo "$recount"
ll2=$(sed -n 's/.* loglik=\([^ ]*\).*/\1/p' <<<"$recount")
python3 - "$ll" "$ll2" <<'PY'
import sys
a, b = float(sys.argv[1]), float(sys.argv[2])
ok = abs(a - b) <= 1e-6 * abs(a)
print(f"trainer {a:.9e} recount {b:.9e}: {'SAME' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
