#!/usr/bin/env bash
# Installs the Debian packages strata needs, and nothing when all are present.
# Usage: scripts/deps.sh [extra-package ...]
set -euo pipefail
pkgs=(g++ cmake ninja-build meson pkg-config ccache
      libasio-dev libcereal-dev libxtensor-dev xtl-dev doctest-dev
      libcli11-dev libbenchmark-dev
      libssl-dev  # libcrypto: SHA-256, HMAC and the per-frame AES-GMAC tags of the tcp transport
      libopenmpi-dev openmpi-bin  # the mpi transport and its tests (optional to strata's build: left out without them)
      libsimgrid-dev  # the simulated cluster and its tests (optional to strata's build: left out without it)
      python3-scipy python3-sklearn "$@")  # reference solvers the tests compare against (NNLS, Lasso)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "strata: installing Debian packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
