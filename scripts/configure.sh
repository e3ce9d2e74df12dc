#!/usr/bin/env bash
# Installs missing Debian packages and configures build/ with CMake + Ninja (ccache when present).
# Sourced by test.sh and demo.sh; BUILD_DIR overrides the build folder.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/deps.sh"
BUILD_DIR="${BUILD_DIR:-$root/build}"
source "$root/scripts/ccache.sh"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${launcher[@]}" >/dev/null
fi
