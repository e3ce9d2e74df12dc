#!/usr/bin/env bash
# ThreadSanitizer over the runtime and transport tests (build-tsan/, -O1; only those layers are
# built into strata_tests, plus the TCP node program the transport tests start). Any data race
# report fails the run. Extra arguments go to the test executable (e.g. -tc='*tcp*').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/deps.sh"
dir="${TSAN_BUILD_DIR:-$root/build-tsan}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -Wno-tsan: GCC warns (an error under -Werror) that TSan does not model the atomic_thread_fence
# in Asio's scheduler; races it reports through such a fence need a second look.
flags="-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DSTRATA_BUILD_BENCHMARKS=OFF \
    -DSTRATA_TEST_LAYERS="runtime;transport" "${launcher[@]}" >/dev/null
fi
cmake --build "$dir" --target strata_tests strata_ps_node
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:${TSAN_OPTIONS:-}"
"$dir/tests/strata_tests" "$@"
