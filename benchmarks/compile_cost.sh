#!/usr/bin/env bash
# What a user's file costs to compile (issue 35): README's short example in the header-only mode and
# in the compiled mode (STRATA_SEPARATE_COMPILATION, the runtime library built once beforehand),
# `#include <strata/strata.hpp>` alone, and a file of the same size that includes only <asio.hpp>
# (the baseline: every ratio is against it, measured in the same run). With BASE=<git revision>
# the README example is also compiled against that revision's headers (the "before" column).
# CPU seconds (user + system) and peak memory (max RSS) from /usr/bin/time; REPEAT runs of each,
# interleaved, medians reported. g++ -std=c++20 -O2, as a user's release build would.
#
#   bash benchmarks/compile_cost.sh [--repeat N] [--base REV] [--out FILE]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeat=3 base="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "compile_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
{ [ -x /usr/bin/time ] && command -v bc >/dev/null; } || bash "$root/scripts/deps.sh" time bc
cxx="${CXX:-g++}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/strata-compile-cost.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c++20 -O2 -DASIO_STANDALONE -DASIO_NO_DEPRECATED)

# README's snippet, as examples/small/CMakeLists.txt takes it.
awk '/^```cpp$/{f=1;next} f&&/^```$/{exit} f' "$root/README.md" >"$tmp/readme.cpp"
lines=$(wc -l <"$tmp/readme.cpp")
{
  echo '#include <asio.hpp>'
  echo 'int main() {'
  echo '  asio::io_context ctx;'
  echo '  int n = 0;'
  for _ in $(seq 1 $((lines - 6))); do echo '  asio::post(ctx, [&] { ++n; });'; done
  echo '  ctx.run();'
  echo '  return n > 0 ? 0 : 1;'
  echo '}'
} >"$tmp/asio_only.cpp"
printf '#include <strata/strata.hpp>\nint main() { return 0; }\n' >"$tmp/include_only.cpp"

if [ -n "$base" ]; then
  mkdir -p "$tmp/base"
  git -C "$root" archive "$base" include | tar -x -C "$tmp/base"
fi

# name file extra-flags...
cases=("asio_only|$tmp/asio_only.cpp|"
       "include_only|$tmp/include_only.cpp|-I$root/include"
       "readme_header_only|$tmp/readme.cpp|-I$root/include"
       "readme_compiled|$tmp/readme.cpp|-I$root/include -DSTRATA_SEPARATE_COMPILATION")
[ -n "$base" ] && cases+=("readme_at_base|$tmp/readme.cpp|-I$tmp/base/include")

declare -A cpu mem
for r in $(seq 1 "$repeat"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name file extra <<<"$c"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%U %S %M' -o "$tmp/t" "$cxx" "${flags[@]}" $extra -c "$file" -o "$tmp/$name.o"
    read -r u s m <"$tmp/t"
    cpu[$name]+="$(echo "$u + $s" | bc) "
    mem[$name]+="$m "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
base_cpu=$(echo "${cpu[asio_only]}" | median)
base_mem=$(echo "${mem[asio_only]}" | median)
{
  echo "# compile cost, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes'), $($cxx --version | head -1), $(nproc) CPUs, $repeat runs each"
  printf '%-20s %10s %8s %10s %8s  %s\n' file cpu_s x_asio peak_MB x_asio "runs (cpu s)"
  for c in "${cases[@]}"; do
    IFS='|' read -r name _ _ <<<"$c"
    mc=$(echo "${cpu[$name]}" | median)
    mm=$(echo "${mem[$name]}" | median)
    printf '%-20s %10.2f %8.2f %10.0f %8.2f  %s\n' "$name" "$mc" "$(echo "$mc / $base_cpu" | bc -l)" "$(echo "$mm / 1024" | bc -l)" \
      "$(echo "$mm / $base_mem" | bc -l)" "${cpu[$name]}"
  done
} | tee ${out:+"$out"}
