#!/usr/bin/env bash
# Runs a deterministic trainer once and with --repeat N (N runs in one process, the last one
# reported) and checks that the reported field and the saved model are the same, and that the
# summary gives N run times (a later run must not see anything an earlier one left behind).
#
#   examples/repeat_matches_once.sh N FIELD -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 4 ] && [ "$3" = "--" ] || { echo "usage: $0 N FIELD -- TRAINER ARGS..." >&2; exit 2; }
n=$1 field=$2
shift 3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pick() { grep -o " $1=[^ ]*" | head -n1 | cut -d= -f2; }
once=$("$@" --quiet --save "$tmp/once.model")
many=$("$@" --quiet --save "$tmp/many.model" --repeat "$n")
a=$(pick "$field" <<<"$once") b=$(pick "$field" <<<"$many") runs=$(pick run_seconds <<<"$many")
echo "once: $field=$a; --repeat $n: $field=$b run_seconds=$runs"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "MISMATCH in $field"; exit 1; }
cmp -s "$tmp/once.model" "$tmp/many.model" || { echo "MISMATCH: the saved models differ"; exit 1; }
[ "$(tr ',' '\n' <<<"$runs" | grep -c .)" = "$n" ] || { echo "MISMATCH: expected $n run times"; exit 1; }
echo "MATCH"
