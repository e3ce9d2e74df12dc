#!/usr/bin/env bash
# Sanitizer builds of the tests (-O1 -g1: line tables, enough for reports; ccache when present). Any report fails the run.
#
#   scripts/sanitize.sh [doctest args...]          AddressSanitizer + UndefinedBehaviorSanitizer over
#                                                  the test suite, strata_tests (build-asan/); ASan
#                                                  aborts on its first error, UBSan is made fatal.
#   scripts/sanitize.sh --all [ctest args...]      the same over everything ctest runs (the example
#                                                  trainers too: about 3x the build and run time).
#   scripts/sanitize.sh --thread [doctest args...] ThreadSanitizer over the runtime and transport
#                                                  tests (build-tsan/: only those layers are built into
#                                                  strata_tests, plus the TCP node program they start),
#                                                  e.g. -tc='*tcp*'.
# The sanitizer builds use the header-only mode (STRATA_HEADER_ONLY=ON; SANITIZE_HEADER_ONLY=OFF for
# the compiled one): scripts/test.sh runs the suite in the compiled mode, so CI (.ci/run) passes the
# whole doctest suite in both modes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/deps.sh"
mode=address
case "${1:-}" in
  --thread) mode=thread; shift ;;
  --all) mode=all; shift ;;
esac
source "$root/scripts/ccache.sh"
if [ "$mode" = thread ]; then
  dir="${TSAN_BUILD_DIR:-$root/build-tsan}"
  # -Wno-tsan: GCC warns (an error under -Werror) that TSan does not model the atomic_thread_fence
  # in Asio's scheduler; races it reports through such a fence need a second look.
  flags="-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan"
  extra=(-DSTRATA_TEST_LAYERS="runtime;transport")
else
  dir="${ASAN_BUILD_DIR:-$root/build-asan}"
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  extra=()
fi
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DSTRATA_BUILD_BENCHMARKS=OFF \
    -DSTRATA_HEADER_ONLY="${SANITIZE_HEADER_ONLY:-ON}" \
    "${extra[@]}" "${launcher[@]}" >/dev/null
fi
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
if [ "$mode" = all ]; then
  cmake --build "$dir"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -E 'header_check|compile_fail' "$@"
else
  cmake --build "$dir" --target strata_tests strata_ps_node
  "$dir/tests/strata_tests" "$@"
fi
