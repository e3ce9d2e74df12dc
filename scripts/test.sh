#!/usr/bin/env bash
# README command 2: set everything up and run the whole test suite (exits non-zero on any failure).
# The header self-containment check (ctest label header_check: every header compiled on its own,
# minutes of CPU with a cold compiler cache) runs with STRATA_HEADER_CHECK=1, as CI does.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR"
skip=(-LE header_check)
[ "${STRATA_HEADER_CHECK:-0}" = 1 ] && skip=()
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "${skip[@]}" "$@"
