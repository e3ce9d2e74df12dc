#!/usr/bin/env bash
# Starts N processes of one strata run, like a tiny mpirun: on this machine, or each in its own
# network namespace at its hostfile address.
#
#   scripts/launch.sh -n N [--base-port P] [--restarts K --resume-dir DIR] -- ./program args...
#   scripts/launch.sh [-n N] --hostfile FILE [--netns-prefix PFX] [--restarts K --resume-dir DIR] -- ./program args...
#
# Each process gets STRATA_RANK (0..N-1), STRATA_SIZE=N and STRATA_BASE_PORT=P (default 29500;
# rank r listens on 127.0.0.1:P+r), which strata::make_cluster reads. Every line a process prints
# is prefixed with "[rank] " (stdout to stdout, stderr to stderr). When a process fails, the others
# are killed and launch.sh exits with that process's status; it exits 0 when all succeed.
#
# --hostfile FILE: "host port" per line, line r = rank r (runtime/cluster.hpp, read_hostfile).
# The program gets "--hostfile FILE" appended to its arguments and STRATA_RANK / STRATA_SIZE, no
# STRATA_BASE_PORT; -n defaults to the number of hosts listed (a different -n is refused). A
# non-loopback address needs a shared secret: export STRATA_SECRET (or pass --secret / --insecure).
# --netns-prefix PFX (needs --hostfile, and root): rank r runs under "ip netns exec PFXr", i.e. in
# the network namespace named PFX followed by its rank, where its hostfile address lives
# (scripts/netns_cluster.sh builds such namespaces).
#
# --restarts K --resume-dir DIR: after a failed attempt, start the whole job again (at most K
# times), adding "--resume DIR" to the program's arguments once DIR holds a complete checkpoint
# (its manifest lists one): the trainers write DIR with --checkpoint-dir DIR --checkpoint-every k.
set -uo pipefail

usage() {
  echo "usage: $0 -n N [--base-port P] [--restarts K --resume-dir DIR] -- program [args...]" >&2
  echo "       $0 [-n N] --hostfile FILE [--netns-prefix PFX] [--restarts K --resume-dir DIR] -- program [args...]" >&2
  exit 2
}

n=""
base_port="${STRATA_BASE_PORT:-29500}"
restarts=0
resume_dir=""
hostfile=""
netns_prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n | --np) n="${2:-}"; shift 2 || usage ;;
    --base-port) base_port="${2:-}"; shift 2 || usage ;;
    --restarts) restarts="${2:-}"; shift 2 || usage ;;
    --resume-dir) resume_dir="${2:-}"; shift 2 || usage ;;
    --hostfile) hostfile="${2:-}"; shift 2 || usage ;;
    --netns-prefix) netns_prefix="${2:-}"; shift 2 || usage ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "$0: unknown option '$1'" >&2; usage ;;
  esac
done
[ $# -gt 0 ] || usage
if [ -n "$hostfile" ]; then
  # The ranks the hostfile lists: its lines less blank lines and '#' comments.
  [ -r "$hostfile" ] || { echo "$0: cannot read the hostfile '$hostfile'" >&2; exit 2; }
  hosts=$(sed 's/#.*//' "$hostfile" | grep -c '[^[:space:]]')
  [ "$hosts" -gt 0 ] || { echo "$0: the hostfile '$hostfile' lists no hosts" >&2; exit 2; }
  [ -n "$n" ] || n=$hosts
fi
[ -z "$netns_prefix" ] || [ -n "$hostfile" ] ||
  { echo "$0: --netns-prefix needs --hostfile (each namespace has its own loopback)" >&2; exit 2; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "$0: -n needs a positive count, got '$n'" >&2; exit 2; }
[ -z "$hostfile" ] || [ "$n" -eq "$hosts" ] || { echo "$0: -n $n, but $hostfile lists $hosts hosts" >&2; exit 2; }
[[ "$base_port" =~ ^[0-9]+$ ]] && [ "$base_port" -ge 1 ] && [ $((base_port + n - 1)) -le 65535 ] ||
  { echo "$0: --base-port '$base_port' does not leave $n ports below 65536" >&2; exit 2; }
[[ "$restarts" =~ ^[0-9]+$ ]] || { echo "$0: --restarts needs a count, got '$restarts'" >&2; exit 2; }
[ "$restarts" -eq 0 ] || [ -n "$resume_dir" ] || { echo "$0: --restarts needs --resume-dir DIR" >&2; exit 2; }

# One attempt: every rank started, waited for; returns the first failure's status (0: all succeeded).
attempt() {
  # Each rank runs in its own process group (job control), so a failure can stop a whole rank:
  # the program and its output filters.
  set -m
  pids=()
  for ((r = 0; r < n; r++)); do
    (
      export STRATA_RANK=$r STRATA_SIZE=$n STRATA_BASE_PORT=$base_port
      cmd=("$@")
      if [ -n "$hostfile" ]; then
        unset STRATA_BASE_PORT
        cmd+=(--hostfile "$hostfile")
      fi
      [ -z "$netns_prefix" ] || cmd=(ip netns exec "$netns_prefix$r" "${cmd[@]}")
      "${cmd[@]}" 2> >(sed -u "s/^/[$r] /" >&2) | sed -u "s/^/[$r] /"
    ) &
    pids+=($!)
  done
  set +m

  kill_rest() {
    for p in "${pids[@]}"; do
      kill -TERM -- "-$p" 2>/dev/null
    done
    sleep 0.5
    for p in "${pids[@]}"; do
      kill -KILL -- "-$p" 2>/dev/null
    done
  }
  trap 'kill_rest; exit 130' INT TERM

  rank_of() {  # the rank whose process group leader is $1
    for ((r = 0; r < n; r++)); do [ "${pids[$r]}" = "$1" ] && echo "$r"; done
  }
  status=0
  running=("${pids[@]}")
  while [ "${#running[@]}" -gt 0 ]; do
    done_pid=""
    wait -n -p done_pid "${running[@]}"
    rc=$?
    if [ -z "${done_pid:-}" ]; then
      # wait -n returned without naming a rank (seen once, in CI under load; bash unsets done_pid
      # first, hence the :-). It waits while a listed rank runs, so the ranks left have ended and
      # bash has reaped one without reporting it: a plain wait gives its status (127: lost).
      done_pid=${running[0]}
      wait "$done_pid"
      rc=$?
      [ "$rc" -ne 127 ] || echo "launch.sh: rank $(rank_of "$done_pid") ended, but its exit status is lost" >&2
    fi
    left=()
    for p in "${running[@]}"; do [ "$p" = "$done_pid" ] || left+=("$p"); done
    running=("${left[@]}")
    if [ "$rc" -ne 0 ]; then
      echo "launch.sh: rank $(rank_of "$done_pid") exited with status $rc; stopping the others" >&2
      status=$rc
      kill_rest
      wait 2>/dev/null
      break
    fi
  done
  return "$status"
}

tries=0
while :; do
  args=("$@")
  if [ "$tries" -gt 0 ] && [ -n "$resume_dir" ] && grep -q '^complete ' "$resume_dir/manifest" 2>/dev/null; then
    args+=(--resume "$resume_dir")
  fi
  attempt "${args[@]}"
  status=$?
  [ "$status" -eq 0 ] && exit 0
  [ "$status" -eq 130 ] && exit 130
  if [ "$tries" -ge "$restarts" ]; then
    [ "$restarts" -gt 0 ] && echo "launch.sh: giving up after $tries restart(s)" >&2
    exit "$status"
  fi
  tries=$((tries + 1))
  echo "launch.sh: restart $tries of $restarts (from the newest complete checkpoint in $resume_dir, if any)" >&2
  sleep 1
done
