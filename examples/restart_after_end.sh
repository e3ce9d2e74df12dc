#!/usr/bin/env bash
# scripts/launch.sh --restarts recovers a job that fails after its final checkpoint: 2 TCP ranks
# train to the end with checkpoints, then each fails once (exit 3, as a crash while writing the
# outputs would); the restart resumes at the final checkpoint and must finish with exit 0.
#
#   examples/restart_after_end.sh LAUNCH PORT ITERS EVERY -- TRAINER ARGS...
set -euo pipefail
[ $# -ge 6 ] && [ "$5" = "--" ] || { echo "usage: $0 LAUNCH PORT ITERS EVERY -- TRAINER ARGS..." >&2; exit 2; }
launch=$1 port=$2 iters=$3 every=$4
shift 5
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-restart-end.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/fail_once.sh" <<'SCRIPT'
marker="$FAIL_ONCE_DIR/failed-$STRATA_RANK"
[ -e "$marker" ] && exec "$@"
touch "$marker"
"$@" || exit
exit 3
SCRIPT
export FAIL_ONCE_DIR=$dir
bash "$launch" -n 2 --base-port "$port" --restarts 1 --resume-dir "$dir/ck" -- bash "$dir/fail_once.sh" "$@" --transport tcp \
  --iterations "$iters" --checkpoint-dir "$dir/ck" --checkpoint-every "$every" --quiet
echo "launch.sh: finished with exit 0"
