#!/usr/bin/env bash
# A run that fails after its final checkpoint can be finished: runs a deterministic (BSP) trainer
# for ITERS iterations uninterrupted (--save), then with a checkpoint every EVERY (ITERS a multiple
# of EVERY, so the last checkpoint is at the final clock), then --resume from that final
# checkpoint (--save). Prints MATCH when the resumed run exits 0 and saves a model byte-identical
# to the uninterrupted run's, else MISMATCH and why.
#
#   examples/resume_at_end.sh ITERS EVERY -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 4 ] && [ "$3" = "--" ] || { echo "usage: $0 ITERS EVERY -- TRAINER ARGS..." >&2; exit 2; }
iters=$1 every=$2
shift 3
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-resume-end.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "$1"; echo MISMATCH; exit 1; }
"$@" --iterations "$iters" --save "$dir/whole.model" --quiet >/dev/null
"$@" --iterations "$iters" --checkpoint-dir "$dir/ck" --checkpoint-every "$every" --quiet >/dev/null
grep -qx "complete $iters" "$dir/ck/manifest" || fail "no checkpoint at the final iteration $iters"
out=$("$@" --iterations "$iters" --resume "$dir/ck" --save "$dir/resumed.model" --quiet 2>&1) ||
  fail "the run resumed at its final checkpoint failed: $out"
echo "$out" | grep -q "resumed from the checkpoint at iteration $iters" || fail "the run did not resume at $iters: $out"
cmp "$dir/whole.model" "$dir/resumed.model" || fail "the resumed run's model differs from the uninterrupted run's"
echo "resumed at the final checkpoint (iteration $iters): exit 0, the same model file"
echo MATCH
