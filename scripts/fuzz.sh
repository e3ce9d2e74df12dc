#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with Debian's clang 14 (-fsanitize=fuzzer,address,
# undefined) into build-fuzz/ and runs each for FUZZ_SECONDS (default 60) on a scratch copy of its
# seed corpus (tests/fuzz/corpus/<target>/). Any crash, sanitizer report, leak, timeout or
# allocation over FUZZ_MALLOC_MB (default 512) fails the run; the reproducer is left in
# build-fuzz/artifacts/. Usage: scripts/fuzz.sh [target ...]   (default: all)
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
status=0
for t in "${targets[@]}"; do
  src="$root/tests/fuzz/fuzz_$t.cpp"
  bin="$dir/fuzz_$t"
  [ -f "$src" ] || { echo "fuzz: no target $t ($src)" >&2; exit 2; }
  if [ ! -x "$bin" ] || [ -n "$(find "$root/include" "$root/tests/fuzz" -newer "$bin" -name '*.?pp' -print -quit)" ]; then
    echo "fuzz: building $t"
    # Compiled and linked in two steps: ccache caches only the first.
    "${cxx[@]}" "${common[@]}" -c "$src" -o "$bin.o"
    clang++-14 "${common[@]}" "$bin.o" -o "$bin" -lcrypto
  fi
  work="$dir/corpus_$t"
  rm -rf "$work"
  mkdir -p "$work"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  echo "fuzz: running $t for ${secs}s"
  log="$dir/fuzz_$t.log"
  if ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
     "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="${FUZZ_MALLOC_MB:-512}" \
       -max_len=4096 -artifact_prefix="$dir/artifacts/${t}-" -print_final_stats=1 "$work" >"$log" 2>&1; then
    echo "fuzz: $t clean: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') executions, corpus $(ls "$work" | wc -l) inputs"
  else
    status=1
    echo "fuzz: $t FAILED (log $log; reproducer in $dir/artifacts/):" >&2
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20 >&2
  fi
done
exit $status
