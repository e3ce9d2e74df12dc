#!/usr/bin/env bash
# README command 2: set everything up and run the whole test suite (exits non-zero on any failure).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/configure.sh"
cmake --build "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
