#!/usr/bin/env bash
# Runs one simulated ps_node run twice (--sim-cpu none: only the network takes time) and checks
# that both print the same simulated time, message count, rows and result, byte for byte.
#   tests/sim/deterministic.sh PS_NODE ARGS...
set -euo pipefail
node=$1
shift
a=$("$node" "$@" | grep -v '^STARTED')  # STARTED lines carry the process id
b=$("$node" "$@" | grep -v '^STARTED')
echo "$a" | grep -E '^(SIMULATED|RESULT)'
if [ "$a" != "$b" ]; then
  echo "MISMATCH: two runs of the same simulation differ"
  diff <(echo "$a") <(echo "$b") | head -20
  exit 1
fi
echo "MATCH ($(echo "$a" | wc -l) lines)"
