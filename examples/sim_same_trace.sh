#!/usr/bin/env bash
# Runs one trainer twice on a simulated cluster with --sim-cpu none (only the network takes time)
# and checks that both runs wrote the same trace, byte for byte: the same simulated times, objectives
# and staleness histograms.
#   examples/sim_same_trace.sh TRAINER ARGS...     (ARGS include --transport sim --platform FILE)
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" --sim-cpu none --quiet --metrics "$tmp/a.jsonl" >/dev/null
"$@" --sim-cpu none --quiet --metrics "$tmp/b.jsonl" >/dev/null
if ! cmp "$tmp/a.jsonl" "$tmp/b.jsonl"; then echo "MISMATCH: the two traces differ"; exit 1; fi
grep -q '"elapsed_s": [0-9.e-]*[1-9]' "$tmp/a.jsonl" || { echo "MISMATCH: no simulated time in the trace"; exit 1; }
echo "MATCH ($(wc -l < "$tmp/a.jsonl") lines, $(wc -c < "$tmp/a.jsonl") bytes)"
