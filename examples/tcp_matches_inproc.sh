#!/usr/bin/env bash
# Runs a deterministic BSP trainer twice, in one process (--nodes N, inproc) and as N processes
# over TCP (scripts/launch.sh), and checks that the final figure agrees within a tolerance. With
# --mpi MPIEXEC, the first run is N processes over MPI instead (mpirun -n N ... --transport mpi); with
# --sim PLATFORM, it is N nodes of one process on a simulated cluster (--transport sim --platform PLATFORM).
#
#   examples/tcp_matches_inproc.sh [--mpi MPIEXEC | --sim PLATFORM] LAUNCH_SH BASE_PORT N FIELD TOLERANCE -- TRAINER ARGS...
#
# FIELD is the summary field to compare (test_rmse for strata_mf, loglik for strata_lda).
# TOLERANCE "bits": both runs also --save their model, and the two files must be byte-identical
# (BSP sums each clock's floating-point updates in writer order, whatever order they arrive in).
set -euo pipefail
mpiexec="" platform=""
if [ "${1:-}" = --mpi ]; then mpiexec=$2; shift 2; fi
if [ "${1:-}" = --sim ]; then platform=$2; shift 2; fi
[ $# -ge 7 ] && [ "$6" = "--" ] || { echo "usage: $0 [--mpi MPIEXEC | --sim PLATFORM] LAUNCH_SH BASE_PORT N FIELD TOLERANCE -- TRAINER ARGS..." >&2; exit 2; }
launch=$1 port=$2 n=$3 field=$4 tol=$5
shift 6
pick() { grep -o " $field=[^ ]*" | head -n1 | cut -d= -f2; }
save_a=() save_b=()
if [ "$tol" = bits ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  save_a=(--save "$tmp/inproc.model") save_b=(--save "$tmp/tcp.model")
fi
if [ -n "$mpiexec" ]; then
  # rank 0's lines only (--tag-output prefixes each line with [job,rank]<stdout>:)
  a=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$mpiexec" -n "$n" --oversubscribe --tag-output \
        "$@" --transport mpi --workers 1 --consistency bsp --quiet "${save_a[@]}" | grep '^\[1,0\]<stdout>:' | pick)
  first="mpi ($n processes x 1 worker)"
elif [ -n "$platform" ]; then
  a=$("$@" --transport sim --platform "$platform" --nodes "$n" --workers 1 --consistency bsp --quiet "${save_a[@]}" | pick)
  first="sim ($n nodes x 1 worker on $(basename "$platform"))"
else
  a=$("$@" --transport inproc --nodes "$n" --workers 1 --consistency bsp --quiet "${save_a[@]}" | pick)
  first="inproc ($n nodes x 1 worker)"
fi
b=$(bash "$launch" -n "$n" --base-port "$port" -- "$@" --transport tcp --workers 1 --consistency bsp --quiet "${save_b[@]}" | grep '^\[0\] ' | pick)
echo "$first: $field=$a; tcp ($n processes x 1 worker): $field=$b; tolerance $tol"
if [ "$tol" = bits ]; then
  if [ -z "$a" ] || [ -z "$b" ] || ! cmp "$tmp/inproc.model" "$tmp/tcp.model"; then echo "MISMATCH"; exit 1; fi
  echo "MATCH (models byte-identical, $(wc -c < "$tmp/tcp.model") bytes)"
  exit 0
fi
awk -v a="$a" -v b="$b" -v t="$tol" 'BEGIN { d = a - b; if (d < 0) d = -d; if (a == "" || b == "" || d > t) { print "MISMATCH"; exit 1 } print "MATCH" }'
