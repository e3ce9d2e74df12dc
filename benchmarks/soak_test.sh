#!/usr/bin/env bash
# Soak: a BSP run of strata_load_node paced to DURATION seconds, with injected message delays
# (strata::delayed<tcp>) and random sleeps in the workers, checkpoints every CKPT_EVERY clocks; at
# KILL_AT seconds one process (KILL_RANK) gets SIGKILL and scripts/launch.sh --restarts 1
# --resume-dir restarts the job from the newest complete checkpoint. Then an uninterrupted run of
# the same plan (no delays, no pacing, no checkpoints), and the checks: every rank of both runs
# found no lost update, and every shard's SHA-256 is the same in both (the tables are equal).
# Prints "SOAK OK" (exit 0) or "SOAK FAILED: why" (exit 1).
#
#   benchmarks/soak_test.sh                       # 10 minutes, 4 processes x 16 workers, 100M floats
#   DURATION=8 CLOCK_MS=20 PROCS=2 WORKERS=2 ROWS=2000 WIDTH=20 CKPT_EVERY=50 OUT=/tmp/s benchmarks/soak_test.sh
#
# Settings (environment): BIN (strata_load_node; default build/benchmarks/), OUT (results folder;
# default benchmarks/results/reliability/soak), WORK (checkpoints; default a temporary folder,
# removed at the end unless KEEP=1), PROCS, WORKERS, ROWS, WIDTH, DURATION (s), CLOCK_MS (pace;
# clocks = DURATION * 1000 / CLOCK_MS), INCS, INC_ROWS, GETS, CKPT_EVERY, DELAY_US, JITTER_US,
# OP_SLEEP_US, KILL_RANK, KILL_AT (s; default DURATION / 2), SAMPLE_MS (RSS sampling period), BASE_PORT,
# SEED, PEER_TIMEOUT_MS (the tcp transport's peer_timeout; default the library's, 10 s).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-$root/build/benchmarks/strata_load_node}"
OUT="${OUT:-$root/benchmarks/results/reliability/soak}"
PROCS="${PROCS:-4}" WORKERS="${WORKERS:-16}" ROWS="${ROWS:-100000}" WIDTH="${WIDTH:-1000}"
DURATION="${DURATION:-600}" CLOCK_MS="${CLOCK_MS:-200}"
INCS="${INCS:-128}" INC_ROWS="${INC_ROWS:-16}" GETS="${GETS:-8}" CKPT_EVERY="${CKPT_EVERY:-500}"
DELAY_US="${DELAY_US:-1000}" JITTER_US="${JITTER_US:-4000}" OP_SLEEP_US="${OP_SLEEP_US:-1000}"
KILL_RANK="${KILL_RANK:-$((PROCS > 2 ? 2 : PROCS - 1))}" KILL_AT="${KILL_AT:-$((DURATION / 2))}"
SAMPLE_MS="${SAMPLE_MS:-1000}" BASE_PORT="${BASE_PORT:-12400}" SEED="${SEED:-1}" PEER_TIMEOUT_MS="${PEER_TIMEOUT_MS:-}"
CLOCKS=$((DURATION * 1000 / CLOCK_MS))

fail() { echo "SOAK FAILED: $*"; exit 1; }
[ -x "$BIN" ] || fail "no strata_load_node at $BIN (cmake --build build --target strata_load_node)"
[ "$CLOCKS" -gt "$CKPT_EVERY" ] || fail "$CLOCKS clocks leave no checkpoint before the end (CKPT_EVERY=$CKPT_EVERY)"
keep_work=1
if [ -z "${WORK:-}" ]; then WORK="$(mktemp -d)"; keep_work="${KEEP:-0}"; fi
rm -rf "$OUT" "$WORK/ckpt"
mkdir -p "$OUT" "$WORK"
launch="$root/scripts/launch.sh"
plan=(--rows "$ROWS" --width "$WIDTH" --workers "$WORKERS" --clocks "$CLOCKS" --incs "$INCS" --inc-rows "$INC_ROWS"
      --gets "$GETS" --seed "$SEED" --sample-ms "$SAMPLE_MS" --model bsp)
[ -z "$PEER_TIMEOUT_MS" ] || plan+=(--peer-timeout-ms "$PEER_TIMEOUT_MS")

{
  echo "soak: $PROCS processes x $WORKERS workers, $ROWS x $WIDTH floats, $CLOCKS clocks paced at $CLOCK_MS ms"
  echo "delays: latency $DELAY_US us + jitter [0, $JITTER_US] us per message, sleeps [0, $OP_SLEEP_US] us before reads and clocks"
  echo "checkpoint every $CKPT_EVERY clocks; SIGKILL rank $KILL_RANK at ${KILL_AT}s; peer_timeout ${PEER_TIMEOUT_MS:-default} ms"
  echo "start: $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg) cpus: $(nproc) mem_total_kb: $(awk '/MemTotal/ {print $2}' /proc/meminfo)"
} | tee "$OUT/env.txt"

# 1. The soak, killed and resumed.
t0=$(date +%s)
bash "$launch" -n "$PROCS" --base-port "$BASE_PORT" --restarts 1 --resume-dir "$WORK/ckpt" -- "$BIN" "${plan[@]}" --label soak \
  --delay "$DELAY_US" --jitter "$JITTER_US" --op-sleep-us "$OP_SLEEP_US" --clock-ms "$CLOCK_MS" \
  --checkpoint-dir "$WORK/ckpt" --checkpoint-every "$CKPT_EVERY" --out "$OUT/soak" >"$OUT/soak.log" 2>&1 &
job=$!
killed="" pid=""
while kill -0 "$job" 2>/dev/null; do
  now=$(date +%s)
  [ -n "$pid" ] || pid=$(cat "$OUT/soak/rank$KILL_RANK.pid" 2>/dev/null)  # the first attempt's process
  if [ -z "$killed" ] && grep -q "^launch.sh: restart" "$OUT/soak.log"; then
    kill -TERM "$job"
    wait "$job"
    fail "the job failed on its own before the kill, at $((now - t0))s: $(grep -m1 -E 'ERROR|fatal' "$OUT/soak.log")"
  fi
  if [ -z "$killed" ] && [ $((now - t0)) -ge "$KILL_AT" ] && grep -q '^complete ' "$WORK/ckpt/manifest" 2>/dev/null && [ -n "$pid" ]; then
    at=$(tail -n 1 "$OUT/soak/rank${KILL_RANK}_from0.rss.csv" | cut -d, -f3)
    kill -KILL "$pid" && killed="$((now - t0))"
    echo "killed rank $KILL_RANK (pid $pid) with SIGKILL at ${killed}s, its workers at $((at / WORKERS)) clocks; checkpoints then: $(grep -c '^complete ' "$WORK/ckpt/manifest")" |
      tee -a "$OUT/env.txt"
  fi
  sleep 0.5
done
wait "$job"
rc=$?
t1=$(date +%s)
echo "soak: launch.sh exit status $rc after $((t1 - t0))s; end load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt"
[ -n "$killed" ] || fail "the run ended before the kill (no complete checkpoint by ${KILL_AT}s?); see $OUT/soak.log"
[ "$rc" -eq 0 ] || fail "the resumed soak failed (status $rc); see $OUT/soak.log"
grep -q "restart 1 of 1" "$OUT/soak.log" || fail "launch.sh did not restart the job; see $OUT/soak.log"
grep "RESUMED" "$OUT/soak.log" | tee -a "$OUT/env.txt"

# 2. The same plan, uninterrupted: no delays, no pacing, no checkpoints.
bash "$launch" -n "$PROCS" --base-port "$BASE_PORT" -- "$BIN" "${plan[@]}" --label reference --out "$OUT/reference" >"$OUT/reference.log" 2>&1
rc=$?
echo "reference: exit status $rc after $(($(date +%s) - t1))s; end load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt"
[ "$rc" -eq 0 ] || fail "the uninterrupted run failed (status $rc); see $OUT/reference.log"
[ "$keep_work" = 1 ] || rm -rf "$WORK"

# 3. No lost update in either run, and the same tables.
/usr/bin/python3 - "$OUT" "$PROCS" <<'EOF' || fail "see above"
import json, glob, os, sys
out, procs = sys.argv[1], int(sys.argv[2])
bad = []
for r in range(procs):
    resumed = [f for f in glob.glob(f"{out}/soak/rank{r}_from*.json") if not f.endswith("_from0.json")]
    ref = f"{out}/reference/rank{r}_from0.json"
    if len(resumed) != 1 or not os.path.exists(ref):
        bad.append(f"rank {r}: missing results (resumed {resumed}, reference {ref})")
        continue
    a, b = json.load(open(resumed[0])), json.load(open(ref))
    for name, x in (("soak", a), ("reference", b)):
        if x["lost_updates"] != 0 or not x["exact_in_float"]:
            bad.append(f"rank {r} {name}: {x['lost_updates']} lost updates")
    same = a["shard_sha256"] == b["shard_sha256"]
    print(f"rank {r}: resumed from clock {a['from_clock']}, cells {a['cells_checked']}, lost {a['lost_updates']}/{b['lost_updates']}, "
          f"sha256 {a['shard_sha256'][:16]} vs {b['shard_sha256'][:16]}: {'equal' if same else 'DIFFERENT'}")
    if not same:
        bad.append(f"rank {r}: shard differs from the uninterrupted run's")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
echo "SOAK OK"
