#!/usr/bin/env bash
# Installs the Debian packages capplan needs that are missing, and nothing
# else. Usage: scripts/install_deps.sh build|test
#   build: compiler toolchain and C++ libraries
#   test:  build + what the test suite drives (Jupyter for notebooks,
#          Chromium for the report and what-if page tests, emscripten for the
#          simulator's WebAssembly build, node for the what-if page's syntax
#          check, pybind11 and Python headers for the
#          capplan Python module)
set -euo pipefail
what=${1:-build}
pkgs=(cmake make g++ pkg-config libeigen3-dev libboost-program-options-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev)
if [ "$what" = test ] || [ "$what" = sanitize ]; then
  pkgs+=(jupyter-nbconvert jupyter-core python3-nbclient python3-ipykernel
         python3-matplotlib python3-pandas chromium emscripten nodejs pybind11-dev python3-dev)
fi
if [ "$what" = sanitize ]; then
  pkgs+=(clang-14 libclang-rt-14-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install_deps: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
