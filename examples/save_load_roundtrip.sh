#!/usr/bin/env bash
# Trains with --save FILE, then runs the same trainer with --load FILE --iterations 0 and checks
# that a summary field is the same (strata_mf: test_rmse, the loaded model on the test set;
# strata_lda: word_loglik, log p(w | z) of the saved counts). With a ratings file, the second run
# also predicts its pairs (--predict) and the script checks one prediction per line and that the
# RMSE of the predictions is the reported test_rmse.
#
#   examples/save_load_roundtrip.sh FIELD RATINGS|- -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 4 ] && [ "$3" = "--" ] || { echo "usage: $0 FIELD RATINGS|- -- TRAINER ARGS..." >&2; exit 2; }
field=$1 ratings=$2
shift 3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pick() { grep -o " $field=[^ ]*" | head -n1 | cut -d= -f2; }

a=$("$@" --quiet --save "$tmp/model" | pick)
[ -s "$tmp/model" ] || { echo "no model written"; exit 1; }
more=()
[ "$ratings" = - ] || more=(--predict "$ratings" --predictions "$tmp/predictions")
b=$("$@" --quiet --load "$tmp/model" --iterations 0 "${more[@]}" | pick)
echo "trained: $field=$a; loaded: $field=$b"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "MISMATCH"; exit 1; }
if [ "$ratings" != - ]; then
  n=$(grep -cv '^[[:space:]]*$' "$ratings")
  m=$(wc -l <"$tmp/predictions")
  echo "ratings: $n lines; predictions: $m lines"
  [ "$n" = "$m" ] || { echo "MISMATCH in the number of predictions"; exit 1; }
  # The predictions' RMSE against the file's ratings is the loaded model's test RMSE.
  paste -d' ' "$ratings" "$tmp/predictions" | awk -v want="$b" '
    $1 != $4 || $2 != $5 { print "prediction for the wrong pair on line " NR; exit 1 }
    { e = $3 - $6; s += e * e; n++ }
    END { r = sqrt(s / n); d = r - want; if (d < 0) d = -d; printf "RMSE of the predictions %.6f\n", r; exit (d > 6e-5) }'
fi
echo MATCH
