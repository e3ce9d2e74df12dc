#!/usr/bin/env bash
# LDA by word rotation against the parameter server's data-parallel trainer as K grows (issue 37;
# benchmarks/lda_topics_experiment.py says the protocol).
#
#   bash benchmarks/lda_topics_experiment.sh --topics 1000 10000 --targets T1 T2 [--reps 3] [more flags of the .py]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/deps.sh" time
source "$root/scripts/ccache.sh"
build="$root/build-native"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target strata_lda strata_gen >/dev/null
exec python3 "$root/benchmarks/lda_topics_experiment.py" --build "$build" "$@"
