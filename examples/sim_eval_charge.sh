#!/usr/bin/env bash
# Evaluating the true model every iteration must not hide the iterations' own communication: runs
# one trainer on a simulated cluster with --sim-cpu none (only the network takes time) twice, with
# --eval-every 1 (a snapshot after every clock, its time left out of elapsed_s) and with
# --eval-every 0 (no snapshot), and checks that the two runs' iteration time (the trace's last
# elapsed_s) agree within a factor LIMIT (default 1.5). (When the snapshot's meeting and reads were
# charged to the evaluation, the first run's iterations took no simulated time at all.)
#   examples/sim_eval_charge.sh LIMIT TRAINER ARGS...     (ARGS include --transport sim --platform FILE)
set -euo pipefail
limit=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" --sim-cpu none --quiet --eval-every 1 --metrics "$tmp/eval1.jsonl" >/dev/null
"$@" --sim-cpu none --quiet --eval-every 0 --metrics "$tmp/eval0.jsonl" >/dev/null
python3 - "$tmp/eval1.jsonl" "$tmp/eval0.jsonl" "$limit" <<'PY'
import json, sys
def last(path):
    t = [json.loads(l)["elapsed_s"] for l in open(path) if '"elapsed_s"' in l]
    return t[-1], len(t)
(e1, n1), (e0, n0) = last(sys.argv[1]), last(sys.argv[2])
lim = float(sys.argv[3])
print(f"iteration time: eval-every 1 {e1:.6g} s, eval-every 0 {e0:.6g} s ({n1} and {n0} records)")
if n1 != n0 or e0 <= 0 or not (e0 / lim <= e1 <= e0 * lim):
    print(f"MISMATCH: the iterations of the evaluated run took {e1 / e0 if e0 > 0 else float('nan'):.3g}x those of the other")
    sys.exit(1)
print(f"AGREE ({e1 / e0:.3f}x)")
PY
