#!/usr/bin/env bash
# Packaging checks (run by .ci/run after scripts/test.sh), each in a fresh scratch folder:
#   1. cmake-install: configure strata with tests off in the compiled mode (STRATA_HEADER_ONLY=OFF),
#      `cmake --install` into a temporary prefix (which must hold no trainers: apps/ is not installed), then build and run tests/package/cmake (copied out
#      of the source tree) against that prefix only, twice: linking strata::strata (header-only)
#      and strata::runtime (the installed library, STRATA_SEPARATE_COMPILATION).
#   2. meson-subproject: build and run tests/package/meson with strata as a Meson subproject, header-only
#      and with -Dstrata:header_only=false.
#   3. meson-suite: `meson setup -Dheader_only=false` + `meson test` of strata itself.
# Prints "package tests: N passed, M failed" last; exits non-zero when any failed.
# KEEP_TMP=1 keeps the scratch folder (PACKAGE_DIR, default build-package/).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/deps.sh" || exit 1

# The scratch folder lies at a fixed place under the checkout (build-package/, ignored by git), so
# that the compiler sees the same relative paths in every clone and ccache (CCACHE_BASEDIR=the
# checkout) serves a fresh clone what an earlier run compiled: the Meson builds included.
tmp="${PACKAGE_DIR:-$root/build-package}"
rm -rf "$tmp"
mkdir -p "$tmp"
if [ "${KEEP_TMP:-0}" = 1 ]; then
  echo "package tests: keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
source "$root/scripts/ccache.sh"
# Meson finds ccache itself; the environment makes its builds' objects as reusable as CMake's.
[ ${#ccache_env[@]} -eq 0 ] || export "${ccache_env[@]}"

# The consumers are copies: they reach strata only through the install prefix or the subproject link
# (checked below: no -I to the checkout's include/).
cp -R "$root/tests/package" "$tmp/package"

cmake_install() {
  local prefix="$tmp/prefix" build="$tmp/strata-build" consumer="$tmp/consumer-build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_EXAMPLES=OFF -DSTRATA_BUILD_BENCHMARKS=OFF \
    -DSTRATA_HEADER_ONLY=OFF -DCMAKE_INSTALL_PREFIX="$prefix" &&
  cmake --build "$build" &&
  cmake --install "$build" || return 1
  ls "$prefix"/lib*/libstrata_runtime.a "$prefix"/include/strata/runtime/impl/system.ipp || return 1
  # The training programs (apps/trainers) are applications over the library: not installed.
  if [ -n "$(find "$prefix" -path '*trainers*' -print -quit)" ]; then
    echo "the install holds the trainers: $(find "$prefix" -path '*trainers*' -print -quit)"; return 1
  fi
  cmake_consumer "$prefix" "$tmp/consumer-build" OFF && cmake_consumer "$prefix" "$tmp/consumer-runtime" ON
}

# prefix build-dir STRATA_CONSUMER_RUNTIME
cmake_consumer() {
  local prefix=$1 consumer=$2 runtime=$3
  cmake -S "$tmp/package/cmake" -B "$consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DSTRATA_CONSUMER_RUNTIME="$runtime" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF || return 1
  # It must have found the strata just installed, and must not compile against the source tree.
  local found
  found="$(sed -n 's/^strata_DIR:[A-Z]*=//p' "$consumer/CMakeCache.txt")"
  case "$found" in
    "$prefix"/*) echo "strata_DIR=$found" ;;
    *) echo "consumer found strata at '$found', not under $prefix"; return 1 ;;
  esac
  if grep -q -- "$root/include" "$consumer/compile_commands.json"; then
    echo "consumer compiles against $root/include instead of the installed headers"; return 1
  fi
  # The compiled mode must reach the consumer: its files declare the runtime, the library defines it.
  if [ "$runtime" = ON ]; then
    grep -q -- -DSTRATA_SEPARATE_COMPILATION "$consumer/compile_commands.json" || { echo "no STRATA_SEPARATE_COMPILATION"; return 1; }
  elif grep -q -- -DSTRATA_SEPARATE_COMPILATION "$consumer/compile_commands.json"; then
    echo "header-only consumer compiled with STRATA_SEPARATE_COMPILATION"; return 1
  fi
  cmake --build "$consumer" &&
  ctest --test-dir "$consumer" --output-on-failure
}

meson_subproject() {
  mkdir -p "$tmp/package/meson/subprojects" &&
  ln -s "$root" "$tmp/package/meson/subprojects/strata" &&
  meson setup "$tmp/consumer-meson" "$tmp/package/meson" &&
  meson test -C "$tmp/consumer-meson" --print-errorlogs &&
  meson setup "$tmp/consumer-meson-lib" "$tmp/package/meson" -Dstrata:header_only=false &&
  meson test -C "$tmp/consumer-meson-lib" --print-errorlogs &&
  ls "$tmp/consumer-meson-lib"/subprojects/strata/libstrata_runtime.a
}

meson_suite() {
  meson setup "$tmp/strata-meson" "$root" -Dheader_only=false &&
  meson test -C "$tmp/strata-meson" --print-errorlogs
}

passed=0 failed=0 failed_names=()
for t in cmake_install meson_subproject meson_suite; do
  log="$tmp/$t.log"
  start=$SECONDS
  if ( set -x; "$t" ) >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "package test $t: passed ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); failed_names+=("$t")
    echo "package test $t: FAILED ($((SECONDS - start)) s); last lines of its log:"
    tail -n 60 "$log" | sed 's/^/  | /'
  fi
done
echo "package tests: $passed passed, $failed failed${failed_names:+ (${failed_names[*]})}"
[ "$failed" -eq 0 ]
