#!/usr/bin/env bash
# Copies the third-party code the device build needs into an ignored folder
# that travels with a device run, because the device image has the CUDA
# Toolkit, CMake and ninja but no Debian development packages:
#   include/nlohmann/   nlohmann/json, header-only (the whole folder)
#   include/boost/      the Boost headers that <boost/program_options.hpp>
#                       pulls in (their closure as g++ resolves it here, plus
#                       config/, predef/ and type_traits/ whole, whose
#                       includes depend on the compiler version)
#   lib/libboost_program_options.a   the static library built for x86-64
#   googletest/         GoogleTest and GoogleMock sources, built from source
# engine/device/kernels_only/CMakeLists.txt uses this folder for each package
# that find_package does not find. Run it here before a device run and name
# the folder in the run's carry list (it stays well under the 64 MiB limit:
# about 12 MB).
#
# Usage: engine/device/bring_deps.sh [DEST]   (default engine/device/deps)
# Sources can be overridden: CAPPLAN_DEPS_INCLUDE (default /usr/include),
# CAPPLAN_DEPS_LIB (default /usr/lib/x86_64-linux-gnu), CAPPLAN_DEPS_GTEST_SRC
# (default /usr/src/googletest).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$ROOT/engine/device/deps}
INC=${CAPPLAN_DEPS_INCLUDE:-/usr/include}
LIB=${CAPPLAN_DEPS_LIB:-/usr/lib/x86_64-linux-gnu}
GTEST_SRC=${CAPPLAN_DEPS_GTEST_SRC:-/usr/src/googletest}
CXX=${CXX:-g++}

need() { [ -e "$1" ] || { echo "bring_deps.sh: $1 not found ($2)" >&2; exit 1; }; }
need "$INC/nlohmann/json.hpp" "Debian package nlohmann-json3-dev"
need "$INC/boost/program_options.hpp" "Debian package libboost-program-options-dev"
need "$LIB/libboost_program_options.a" "Debian package libboost-program-options-dev"
need "$GTEST_SRC/CMakeLists.txt" "Debian package googletest"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/include" "$TMP/lib"
cp -r "$INC/nlohmann" "$TMP/include/"
# The header closure of program_options as this compiler resolves it.
printf '#include <boost/program_options.hpp>\nint main() { return 0; }\n' >"$TMP/probe.cc"
"$CXX" -std=c++20 -I"$INC" -M "$TMP/probe.cc" | tr ' \\' '\n\n' | grep -E "^$INC/boost/" |
  sort -u >"$TMP/boost_headers.txt"
[ -s "$TMP/boost_headers.txt" ] || { echo "bring_deps.sh: no Boost headers found" >&2; exit 1; }
(cd "$INC" && sed "s#^$INC/##" "$TMP/boost_headers.txt" | xargs cp --parents -t "$TMP/include")
for d in config predef type_traits; do cp -r "$INC/boost/$d" "$TMP/include/boost/"; done
cp "$LIB/libboost_program_options.a" "$TMP/lib/"
mkdir -p "$TMP/googletest"
cp "$GTEST_SRC/CMakeLists.txt" "$TMP/googletest/"
cp -r "$GTEST_SRC/googletest" "$GTEST_SRC/googlemock" "$TMP/googletest/"
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$TMP" "$DEST"
trap - EXIT
chmod -R u+w,a+rX "$DEST"
echo "bring_deps.sh: wrote $DEST ($(du -sh "$DEST" | cut -f1))"
