#!/usr/bin/env bash
# Load: strata_load_node on PROCS local processes (scripts/launch.sh, tcp over loopback) x WORKERS
# workers each, a table of ROWS x WIDTH floats, CLOCKS clocks, once per model in MODELS. Each rank
# samples its resident memory every second and checks that its shard equals the sum of all
# increments (no lost update); the final tables of every model are the same plan's, so their
# shard SHA-256s must agree too. Prints "LOAD OK" (exit 0) or "LOAD FAILED: why" (exit 1).
#
#   benchmarks/load_test.sh        # 4 x 16 workers, 100M floats (100000 x 1000), 5000 clocks, bsp and essp2
#   CLOCKS=200 PROCS=2 WORKERS=2 ROWS=2000 WIDTH=20 OUT=/tmp/l benchmarks/load_test.sh
#
# Settings (environment): BIN (strata_load_node; default build/benchmarks/), OUT (default
# benchmarks/results/reliability/load), PROCS, WORKERS, ROWS, WIDTH, CLOCKS, INCS, INC_ROWS,
# GETS, MODELS, SAMPLE_MS (RSS sampling period), BASE_PORT, SEED.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-$root/build/benchmarks/strata_load_node}"
OUT="${OUT:-$root/benchmarks/results/reliability/load}"
PROCS="${PROCS:-4}" WORKERS="${WORKERS:-16}" ROWS="${ROWS:-100000}" WIDTH="${WIDTH:-1000}" CLOCKS="${CLOCKS:-5000}"
INCS="${INCS:-128}" INC_ROWS="${INC_ROWS:-16}" GETS="${GETS:-8}" MODELS="${MODELS:-bsp essp2}"
SAMPLE_MS="${SAMPLE_MS:-1000}" BASE_PORT="${BASE_PORT:-12300}" SEED="${SEED:-1}"

fail() { echo "LOAD FAILED: $*"; exit 1; }
[ -x "$BIN" ] || fail "no strata_load_node at $BIN (cmake --build build --target strata_load_node)"
rm -rf "$OUT"
mkdir -p "$OUT"
{
  echo "load: $PROCS processes x $WORKERS workers, $ROWS x $WIDTH floats, $CLOCKS clocks, $INCS increments into $INC_ROWS rows and $GETS reads per worker per clock"
  echo "start: $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg) cpus: $(nproc) mem_total_kb: $(awk '/MemTotal/ {print $2}' /proc/meminfo)"
} | tee "$OUT/env.txt"
for m in $MODELS; do
  t0=$(date +%s)
  bash "$root/scripts/launch.sh" -n "$PROCS" --base-port "$BASE_PORT" -- "$BIN" --rows "$ROWS" --width "$WIDTH" --workers "$WORKERS" \
    --clocks "$CLOCKS" --incs "$INCS" --inc-rows "$INC_ROWS" --gets "$GETS" --seed "$SEED" --sample-ms "$SAMPLE_MS" --model "$m" --label "load-$m" \
    --out "$OUT/$m" >"$OUT/$m.log" 2>&1
  rc=$?
  echo "$m: exit status $rc after $(($(date +%s) - t0))s; load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt"
  grep "summary:" "$OUT/$m.log"
  [ "$rc" -eq 0 ] || fail "$m run failed (status $rc; 2: lost updates); see $OUT/$m.log"
done
/usr/bin/python3 - "$OUT" "$PROCS" $MODELS <<'EOF' || fail "see above"
import json, sys
out, procs, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
bad = []
for r in range(procs):
    runs = {m: json.load(open(f"{out}/{m}/rank{r}_from0.json")) for m in models}
    for m, x in runs.items():
        if x["lost_updates"] != 0 or not x["exact_in_float"]:
            bad.append(f"{m} rank {r}: {x['lost_updates']} lost updates")
    if len({x["shard_sha256"] for x in runs.values()}) != 1:
        bad.append(f"rank {r}: the models' final shards differ: " + ", ".join(f"{m} {x['shard_sha256'][:16]}" for m, x in runs.items()))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
echo "LOAD OK"
