#!/usr/bin/env bash
# A small cluster of hosts out of Linux network namespaces, and a real strata trainer across it:
#
#   scripts/netns_cluster.sh [--build DIR] [--hosts N] [--keep]      (as root)
#
# 1. N namespaces (default 3, 3..4) "stratanc<pid>-h<r>", each with loopback up and one veth with
#    its own address 10.213.X.(r+1)/24 (X from the pid), joined on a bridge that lives in a
#    namespace of its own, "stratanc<pid>-br", so the host's network is not touched. Each veth gets
#    tc netem delay 2ms where the kernel has netem, else a tbf rate limit (the output says which).
# 2. A hostfile of those addresses; strata_mf (BSP, the ctest tiny data) as one process per
#    namespace over TCP with a shared secret: every rank exits 0, rank 0 prints its summary, and
#    the --save model is byte-identical to a loopback run of the same seed. A hostfile entry that
#    no namespace answers makes rank 0 name it after its connect timeout.
# 3. A longer run with checkpoints; after its first checkpoint the last rank's link goes down:
#    the other ranks report "lost rank R (address:port)" within the peer timeout and exit non-zero.
# 4. scripts/launch.sh --hostfile --netns-prefix --restarts 2 --resume-dir: the same job, the link
#    goes down mid-run and back up once the attempt failed; the restart resumes from the newest
#    checkpoint, exits 0, and its model is byte-identical to an uninterrupted run's.
# Every namespace (with its veths and the bridge) is removed on exit, failure, Ctrl-C or SIGTERM,
# unless --keep. Exits 0 when all checks pass, 1 when one fails, 77 (ctest SKIP_RETURN_CODE) when
# it cannot run here: not root, no iproute2, or namespaces cannot be made (unprivileged container).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../build hosts=3 keep=0
usage() { echo "usage: $0 [--build DIR] [--hosts N (3..4)] [--keep]"; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:-}; shift 2 || usage >&2 ;;
    --hosts) hosts=${2:-}; shift 2 || usage >&2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "$0: unknown option '$1'" >&2; usage >&2 ;;
  esac
done
[[ "$hosts" =~ ^[34]$ ]] || { echo "$0: --hosts must be 3 or 4, got '$hosts'" >&2; exit 2; }

say() { echo "netns_cluster: $*"; }
skip() { say "skipped: $*"; exit 77; }
fail() { say "FAILED: $*"; exit 1; }

# --- 0. Can this run here? -----------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (ip netns, veth, bridge, tc)"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
mf=$build/examples/strata_mf data=$build/examples/tiny_data
[ -x "$mf" ] || fail "$mf is not built"
[ -f "$data/ratings.train.txt" ] || fail "no tiny data in $data (configure with tests on)"

id=$$ pfx=stratanc$$ n=$hosts last=$((hosts - 1)) port=7300 timeout_ms=2000
brns=$pfx-br net=10.213.$((id % 254 + 1))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns_cluster.XXXXXX")
export STRATA_SECRET=netns-cluster-$id-$RANDOM  # non-loopback addresses need a shared secret

# --- Cleanup: stop what we started (our running jobs, whose pids cannot have been reused, and
# whatever runs in our namespaces), delete every namespace we made (their veths and the bridge go
# with them). Idempotent; runs once on any exit; INT/TERM exit through it.
ours() { ip netns list 2>/dev/null | awk -v p="^$1-" '$1 ~ p { print $1 }'; }
cleanup() {
  local ns p
  for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null; done
  for ns in $(ours "$pfx"); do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  wait 2>/dev/null
  if [ "$keep" = 1 ]; then say "kept namespaces $pfx-* and $tmp (--keep)"; return; fi
  for ns in $(ours "$pfx"); do
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command in the background and waits for it, so a signal to this script is handled at once.
run() { "$@" & wait $!; }
# Polls (every 0.1 s, at most $1 s) until the command $2... succeeds.
wait_for() {
  local t=$(($1 * 10)); shift
  until "$@"; do t=$((t - 1)); [ "$t" -gt 0 ] || return 1; sleep 0.1; done
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- 1. Namespaces, veths, bridge ----------------------------------------------------------------
# First the namespaces of earlier runs that were killed before their cleanup (SIGKILL), if any.
for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^stratanc[0-9]+-/ { print $1 }'); do
  p=${ns#stratanc} p=${p%%-*}
  kill -0 "$p" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done
ip netns add "$brns" 2>"$tmp/err" || skip "ip netns add failed: $(head -n1 "$tmp/err")"
{
  ip -n "$brns" link set lo up &&
    ip -n "$brns" link add name br0 type bridge &&
    ip -n "$brns" link set br0 up
} 2>"$tmp/err" || fail "bridge: $(cat "$tmp/err")"
: >"$tmp/hosts"
for ((r = 0; r < n; r++)); do
  # rank r: namespace $pfx-h$r, veth h$r (its end) <-> b$r (the bridge's end, a port of br0)
  {
    ip netns add "$pfx-h$r" &&
      ip -n "$pfx-h$r" link set lo up &&
      ip -n "$pfx-h$r" link add name "h$r" type veth peer name "b$r" netns "$brns" &&
      ip -n "$pfx-h$r" addr add "$net.$((r + 1))/24" dev "h$r" &&
      ip -n "$pfx-h$r" link set "h$r" up &&
      ip -n "$brns" link set "b$r" master br0 &&
      ip -n "$brns" link set "b$r" up
  } 2>"$tmp/err" || fail "host $r: $(cat "$tmp/err")"
  echo "$net.$((r + 1)) $port" >>"$tmp/hosts"
done
say "ok: $n hosts $net.1-$n (namespaces $pfx-h0..h$last) on a bridge in namespace $brns"

# Links: netem delay where the kernel has it (sch_netem), else tbf bandwidth, on each host's veth.
shape="none (no tc command)"
if command -v tc >/dev/null 2>&1; then
  if tc -n "$pfx-h0" qdisc add dev h0 root netem delay 2ms 2>"$tmp/err"; then
    shape="netem delay 2ms"
  else
    shape="tbf rate 100mbit (netem unavailable: $(head -n1 "$tmp/err"))"
  fi
  for ((r = 0; r < n; r++)); do
    if [[ "$shape" == netem* ]]; then
      [ "$r" -eq 0 ] || tc -n "$pfx-h$r" qdisc add dev "h$r" root netem delay 2ms
    else
      tc -n "$pfx-h$r" qdisc add dev "h$r" root tbf rate 100mbit burst 64kb latency 20ms
    fi || fail "tc on host $r"
  done
fi
say "ok: links shaped with $shape"

# --- Runs ----------------------------------------------------------------------------------------
train=("$mf" --data "$data" --workers 1 --consistency bsp --rank 4 --seed 7 --quiet)
tcp=(--transport tcp --peer-timeout-ms "$timeout_ms" --connect-timeout-ms 20000)
if [[ "$shape" == netem* ]]; then long=400; else long=6000; fi  # the failure runs' iterations (a few seconds)
every=$((long / 20))
rpid=()
# Starts rank $1 in its namespace on its hostfile address; output to $tmp/$2.$1.{out,err}.
start_rank() {
  local r=$1 tag=$2; shift 2
  timeout 120 ip netns exec "$pfx-h$r" "${train[@]}" "${tcp[@]}" --hostfile "$tmp/hosts" --node-rank "$r" \
    --listen "$net.$((r + 1))" "$@" >"$tmp/$tag.$r.out" 2>"$tmp/$tag.$r.err" &
  rpid[r]=$!
}
# A loopback run of N ranks in the bridge's namespace (its own ports): the reference.
loopback() { run ip netns exec "$brns" bash "$here/launch.sh" -n "$n" --base-port 7400 -- "${train[@]}" "${tcp[@]}" "$@"; }
loopback --iterations 6 --save "$tmp/loop.model" >"$tmp/loop.out" 2>&1 || fail "loopback run: $(tail -n5 "$tmp/loop.out")"
loopback --iterations "$long" --save "$tmp/long.model" >"$tmp/long.out" 2>&1 || fail "loopback run: $(tail -n5 "$tmp/long.out")"

# --- 2. One run across the namespaces ------------------------------------------------------------
for ((r = 0; r < n; r++)); do start_rank "$r" run --iterations 6 --save "$tmp/cluster.model"; done
for ((r = 0; r < n; r++)); do
  wait "${rpid[r]}"; rc=$?
  [ "$rc" -eq 0 ] || fail "cluster run: rank $r exited $rc: $(tail -n3 "$tmp/run.$r.err")"
done
summary=$(grep -o 'mf summary: .*' "$tmp/run.0.out") || fail "cluster run: rank 0 printed no summary"
rmse=$(grep -o 'test_rmse=[^ ]*' <<<"$summary")
rx=0
for ((r = 0; r < n; r++)); do rx=$((rx + $(ip netns exec "$brns" cat "/sys/class/net/b$r/statistics/rx_bytes"))); done
say "ok: cluster run: $n ranks on $net.1-$n exited 0, rank 0: $rmse, the bridge carried $rx bytes"
cmp -s "$tmp/loop.model" "$tmp/cluster.model" || fail "the cluster run's model differs from the loopback run's"
say "ok: its model is byte-identical to a loopback run's ($(wc -c <"$tmp/cluster.model") bytes)"

# --- 2b. A hostfile entry that nobody answers: rank 0 names it after connect_timeout, no hang -----
sed "2s/.*/$net.99 $port/" "$tmp/hosts" >"$tmp/hosts.bad"  # rank 1 on an address no namespace holds
t0=$(now)
timeout 60 ip netns exec "$pfx-h0" "${train[@]}" --transport tcp --connect-timeout-ms 1500 --hostfile "$tmp/hosts.bad" \
  --node-rank 0 --listen "$net.1" --iterations 6 >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "rank 0 with an unreachable rank 1 exited $rc"
grep -qF "rank 1 ($net.99:$port)" "$tmp/bad.err" || fail "rank 0 did not name the unreachable rank 1: $(tail -n2 "$tmp/bad.err")"
say "ok: an unreachable hostfile entry: rank 0 exited $rc after $(since "$t0") s naming rank 1 ($net.99:$port)"

# --- 3. A link goes down mid-run: the others name the lost rank by address ----------------------
first_checkpoint() { grep -q '^complete ' "$1/manifest" 2>/dev/null; }
alive() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done; }
for ((r = 0; r < n; r++)); do
  start_rank "$r" fail --iterations "$long" --checkpoint-dir "$tmp/ck1" --checkpoint-every "$every"
done
wait_for 30 first_checkpoint "$tmp/ck1" || fail "no checkpoint within 30 s"
alive "${rpid[@]}" || fail "a rank ended before the link went down (the run is too short)"
t0=$(now)
ip -n "$brns" link set "b$last" down || fail "cannot take b$last down"
want="lost rank $last ($net.$((last + 1)):$port)"
for ((r = 0; r < n; r++)); do
  wait "${rpid[r]}"; rc=$?
  took=$(since "$t0")
  [ "$rc" -ne 124 ] || fail "rank $r hung after the link went down (killed after 120 s)"
  [ "$rc" -ne 0 ] || fail "rank $r exited 0 although rank $last was cut off"
  [ "$r" -eq "$last" ] && continue
  grep -qF "$want" "$tmp/fail.$r.err" || fail "rank $r did not report '$want': $(tail -n3 "$tmp/fail.$r.err")"
done
# The ranks were waited for in order, so $took is when the last one had ended.
awk -v t="$took" -v l="$(((timeout_ms + 4000) / 1000))" 'BEGIN { exit !(t <= l) }' ||
  fail "the ranks took ${took} s to end after the link went down (peer timeout $timeout_ms ms)"
say "ok: link of rank $last down mid-run: ranks 0..$((last - 1)) reported '$want' and all $n exited non-zero within $took s (peer timeout $timeout_ms ms)"
say "    rank 0: $(grep -F "$want" "$tmp/fail.0.err" | head -n1)"
ip -n "$brns" link set "b$last" up || fail "cannot bring b$last up"

# --- 4. launch.sh --restarts: the link fails mid-run and comes back; the job resumes and ends ----
timeout 150 bash "$here/launch.sh" --hostfile "$tmp/hosts" --netns-prefix "$pfx-h" --restarts 2 --resume-dir "$tmp/ck2" \
  -- "${train[@]}" "${tcp[@]}" --iterations "$long" --checkpoint-dir "$tmp/ck2" --checkpoint-every "$every" \
  --save "$tmp/resumed.model" >"$tmp/launch.out" 2>"$tmp/launch.err" &
lpid=$!
wait_for 30 first_checkpoint "$tmp/ck2" || fail "launch.sh: no checkpoint within 30 s"
alive "$lpid" || fail "launch.sh ended before the link went down: $(tail -n3 "$tmp/launch.err")"
ip -n "$brns" link set "b$last" down || fail "cannot take b$last down"
restarted() { grep -q 'launch.sh: restart 1 of 2' "$tmp/launch.err"; }
wait_for 30 restarted || fail "launch.sh did not restart after the link went down: $(tail -n3 "$tmp/launch.err")"
ip -n "$brns" link set "b$last" up || fail "cannot bring b$last up"
wait "$lpid"; rc=$?
[ "$rc" -eq 0 ] || fail "launch.sh exited $rc after the link came back: $(tail -n5 "$tmp/launch.err")"
resumed=$(grep -o '^\[0\] mf: resumed from the checkpoint at iteration [0-9]*' "$tmp/launch.out") ||
  fail "launch.sh's restart did not resume: $(tail -n3 "$tmp/launch.out")"
grep -q '^\[0\] mf summary: ' "$tmp/launch.out" || fail "launch.sh: rank 0 printed no summary"
say "ok: launch.sh --restarts 2: link down mid-run, attempt 1 failed ($(grep -c 'lost rank' "$tmp/launch.err") 'lost rank' lines), link up, ${resumed#\[0\] mf: }, exit 0"
cmp -s "$tmp/long.model" "$tmp/resumed.model" || fail "the resumed run's model differs from an uninterrupted run's"
say "ok: the resumed model is byte-identical to an uninterrupted loopback run's ($long iterations)"
say "all checks passed"
