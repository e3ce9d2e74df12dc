#!/usr/bin/env bash
# A one-node Slurm on this machine, and strata's trainers started by srun as Slurm starts them on a
# cluster (as root):
#
#   scripts/slurm_local.sh [--build DIR] [--install]
#
# 1. munged (started when it is not running) and a slurmctld + slurmd of this script's own: config,
#    state, logs and ports in a temporary folder, the node named `hostname -s` at 127.0.0.1.
# 2. srun -n 3 -O strata_mf --transport tcp: rank, size and every task's address from SLURM_PROCID,
#    SLURM_NTASKS, SLURM_NODELIST and SLURM_TASKS_PER_NODE (no hostfile, no flags); BSP's model is
#    byte-identical to the same run under scripts/launch.sh.
# 3. In a build with MPI: srun --mpi=pmix -n 3 -O strata_mf --transport mpi: the same model.
# 4. srun -n 3 with --size 4 on the command line: every task refuses with the sentence naming both.
# Everything it started is stopped on exit (munged only when it started it). Exits 0 when all checks
# pass, 1 when one fails, 77 when it cannot run here (not root; Slurm not installed: --install runs
# scripts/deps.sh slurm-wlm munge, which apt-get installs).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../build install=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:-}; shift 2 || exit 2 ;;
    --install) install=1; shift ;;
    -h | --help) echo "usage: $0 [--build DIR] [--install]"; exit 0 ;;
    *) echo "$0: unknown option '$1'" >&2; exit 2 ;;
  esac
done
say() { echo "slurm_local: $*"; }
skip() { say "skipped: $*"; exit 77; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (it starts slurmctld, slurmd and munged)"
[ "$install" = 0 ] || bash "$here/deps.sh" slurm-wlm munge || fail "could not install slurm-wlm munge"
for c in srun slurmctld slurmd munged; do
  command -v "$c" >/dev/null 2>&1 || skip "no $c (Slurm: run with --install, or scripts/deps.sh slurm-wlm munge)"
done
mf=$build/examples/strata_mf data=$build/examples/tiny_data
[ -x "$mf" ] && [ -f "$data/ratings.train.txt" ] || fail "$mf or its tiny data is missing (build with tests on)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm_local.XXXXXX")
started_munge=0
cleanup() {
  [ -f "$tmp/slurmd.pid" ] && kill "$(cat "$tmp/slurmd.pid")" 2>/dev/null
  [ -f "$tmp/slurmctld.pid" ] && kill "$(cat "$tmp/slurmctld.pid")" 2>/dev/null
  [ "$started_munge" = 1 ] && pkill -u munge -x munged 2>/dev/null
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. munge, slurmctld, slurmd ------------------------------------------------------------------
if ! pgrep -x munged >/dev/null; then
  install -d -o munge -g munge -m 755 /run/munge
  runuser -u munge -- munged 2>"$tmp/munged.err" || fail "munged: $(head -n2 "$tmp/munged.err")"
  started_munge=1
fi
node=$(hostname -s) cpus=$(nproc) port=$((20000 + ($$ % 5000) * 2))
mem=$(slurmd -C 2>/dev/null | grep -o 'RealMemory=[0-9]*' | cut -d= -f2)
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=strata
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=${mem:-1000} State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -n3 "$tmp/slurmctld.log")"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start: $(tail -n3 "$tmp/slurmd.log")"
for _ in $(seq 50); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %t 2>/dev/null | grep -q idle || fail "the node never became idle: $(sinfo 2>&1 | tail -n2)"
say "ok: a one-node Slurm ($(slurmctld -V)) on $node, $cpus CPUs, ports $port-$((port + 1))"

# --- 2-4. srun --------------------------------------------------------------------------------------
train=("$mf" --data "$data" --iterations 6 --rank 4 --workers 1 --consistency bsp --quiet)
bash "$here/launch.sh" -n 3 --base-port $((port + 2)) -- "${train[@]}" --transport tcp --save "$tmp/launch.model" \
  >"$tmp/launch.out" 2>&1 || fail "launch.sh run: $(tail -n3 "$tmp/launch.out")"
timeout 120 srun -n 3 -O "${train[@]}" --transport tcp --save "$tmp/srun_tcp.model" >"$tmp/tcp.out" 2>&1 ||
  fail "srun --transport tcp: $(tail -n3 "$tmp/tcp.out")"
cmp -s "$tmp/launch.model" "$tmp/srun_tcp.model" || fail "srun's tcp model differs from launch.sh's"
say "ok: srun -n 3 strata_mf --transport tcp (addresses from SLURM_NODELIST=$node): $(grep -o 'test_rmse=[^ ]*' "$tmp/tcp.out" | tail -n1), model byte-identical to launch.sh's"
if ldd "$mf" 2>/dev/null | grep -q libmpi; then  # a build with MPI
  if srun --mpi=list 2>&1 | grep -qw pmix; then
    timeout 120 srun --mpi=pmix -n 3 -O "${train[@]}" --transport mpi --save "$tmp/srun_mpi.model" >"$tmp/mpi.out" 2>&1 ||
      fail "srun --mpi=pmix --transport mpi: $(tail -n3 "$tmp/mpi.out")"
    cmp -s "$tmp/launch.model" "$tmp/srun_mpi.model" || fail "srun's mpi model differs from launch.sh's"
    say "ok: srun --mpi=pmix -n 3 strata_mf --transport mpi: model byte-identical to launch.sh's (tcp)"
  else
    say "note: this Slurm has no pmix plugin (srun --mpi=list): --transport mpi under srun not tried"
  fi
fi
timeout 60 srun -n 3 -O "${train[@]}" --transport tcp --size 4 >"$tmp/size.out" 2>&1 && fail "srun with --size 4 against 3 tasks exited 0"
n=$(grep -c -- "--size 4 disagrees with the launcher's world size 3" "$tmp/size.out")
[ "$n" -eq 3 ] || fail "expected 3 tasks to name the disagreement, got $n: $(head -n3 "$tmp/size.out")"
say "ok: srun -n 3 with --size 4: every task refused: $(grep -o -- "--size 4 disagrees[^)]*)" "$tmp/size.out" | head -n1)"
say "all checks passed"
