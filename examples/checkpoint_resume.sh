#!/usr/bin/env bash
# Runs a deterministic (BSP) trainer three times: FULL iterations uninterrupted; PART iterations
# writing a checkpoint every EVERY; then FULL iterations resumed from those checkpoints. Prints
# MATCH when the resumed run's summary FIELD equals the uninterrupted run's exactly, else MISMATCH.
#
#   examples/checkpoint_resume.sh FIELD FULL PART EVERY -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 6 ] && [ "$5" = "--" ] || { echo "usage: $0 FIELD FULL PART EVERY -- TRAINER ARGS..." >&2; exit 2; }
field=$1 full=$2 part=$3 every=$4
shift 5
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-resume.XXXXXX")
trap 'rm -rf "$dir"' EXIT
pick() { grep -o " $field=[^ ]*" | head -n1 | cut -d= -f2; }
a=$("$@" --iterations "$full" --quiet | pick)
"$@" --iterations "$part" --checkpoint-dir "$dir/ck" --checkpoint-every "$every" --quiet >/dev/null
out=$("$@" --iterations "$full" --resume "$dir/ck" --quiet)
echo "$out" | grep -i "resumed from" || { echo "the run did not resume"; echo MISMATCH; exit 1; }
b=$(echo "$out" | pick)
echo "uninterrupted: $field=$a; interrupted after $part and resumed: $field=$b"
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo MATCH; else echo MISMATCH; exit 1; fi
