#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with Debian's clang 14 (-fsanitize=fuzzer,address,
# undefined) into build-fuzz/ and runs each for FUZZ_SECONDS (default 60) on a scratch copy of its
# seed corpus (tests/fuzz/corpus/<target>/). Any crash, sanitizer report, leak, timeout or
# allocation over FUZZ_MALLOC_MB (default 512) fails the run; the reproducer is left in
# build-fuzz/artifacts/. FUZZ_JOBS targets run side by side (default: one per core). Usage: scripts/fuzz.sh [target ...]   (default: all)
# Reproduce one: build-fuzz/fuzz_ratings build-fuzz/artifacts/crash-...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# clang-14 (libFuzzer needs clang) and libclang-rt-14-dev (the fuzzer and sanitizer runtimes).
bash "$root/scripts/deps.sh" clang-14 libclang-rt-14-dev
dir="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
secs="${FUZZ_SECONDS:-60}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame handshake accept ratings bag_of_words libsvm)
mkdir -p "$dir/artifacts"
cxx=(clang++-14)
source "$root/scripts/ccache.sh"
[ ${#ccache_env[@]} -eq 0 ] || cxx=(env "${ccache_env[@]}" ccache clang++-14)
# Asio does not detect clang 14's C++20 coroutines with libstdc++: say they are there.
# UBSan's -fsanitize=function trips clang 14 on coroutines ("cannot represent a difference across
# sections", llvm/llvm-project#49689), so that one check is left out.
common=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -I"$root/include"
        -DASIO_HAS_CO_AWAIT=1 -DASIO_HAS_STD_COROUTINE=1
        -fsanitize=fuzzer,address,undefined -fno-sanitize=function -fno-sanitize-recover=undefined)
# One target: build it when its sources changed, then fuzz it; returns non-zero on any finding.
fuzz_one() {
  local t=$1 src="$root/tests/fuzz/fuzz_$1.cpp" bin="$dir/fuzz_$1"
  if [ ! -x "$bin" ] || [ -n "$(find "$root/include" "$root/tests/fuzz" -newer "$bin" -name '*.?pp' -print -quit)" ]; then
    echo "fuzz: building $t"
    # Compiled and linked in two steps: ccache caches only the first.
    "${cxx[@]}" "${common[@]}" -c "$src" -o "$bin.o"
    clang++-14 "${common[@]}" "$bin.o" -o "$bin" -lcrypto
  fi
  local work="$dir/corpus_$t" log="$dir/fuzz_$t.log"
  rm -rf "$work"
  mkdir -p "$work"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  echo "fuzz: running $t for ${secs}s"
  if ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
     "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="${FUZZ_MALLOC_MB:-512}" \
       -max_len=4096 -artifact_prefix="$dir/artifacts/${t}-" -print_final_stats=1 "$work" >"$log" 2>&1; then
    echo "fuzz: $t clean: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') executions, corpus $(ls "$work" | wc -l) inputs"
  else
    echo "fuzz: $t FAILED (log $log; reproducer in $dir/artifacts/):" >&2
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20 >&2
    return 1
  fi
}
for t in "${targets[@]}"; do
  [ -f "$root/tests/fuzz/fuzz_$t.cpp" ] || { echo "fuzz: no target $t" >&2; exit 2; }
done
# FUZZ_JOBS targets at a time (default: one per core); each fuzzer is one process on one core.
jobs="${FUZZ_JOBS:-$(nproc)}"
status=0
pids=()
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
