#!/usr/bin/env bash
# The device build on an image without Debian development packages: run.sh
# configures and builds engine/device/kernels_only with find_package
# disabled for nlohmann_json, Boost and GTest (so each comes from the carried
# folder engine/device/bring_deps.sh writes), runs its dry smoke gate, builds
# one GoogleTest binary from the carried sources, and then proves that no
# object read a header of those packages from the system and no link used
# their system libraries (the compiler's dependency files and the link lines).
#
# C++ only by default: the CUDA sources are the same ones the main build
# compiles for sm_90a, and none includes a third-party header (the dependency
# check covers them when CUDA is on). CAPPLAN_DEVICE_TEST_CUDA=1 builds the
# CUDA kernels too (about 12 minutes on two busy cores, against 2-3 without).
#
# Usage: device_build_test.sh SOURCE_ROOT WORK_DIR
set -euo pipefail
ROOT=$1
WORK=$2
for f in /usr/include/nlohmann/json.hpp /usr/include/boost/program_options.hpp \
         /usr/src/googletest/CMakeLists.txt; do
  [ -e "$f" ] || { echo "skipped: $f is not installed (nothing to copy)"; exit 77; }
done
command -v ninja >/dev/null || { echo "skipped: ninja is not installed"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
DEPS=$WORK/deps
"$ROOT/engine/device/bring_deps.sh" "$DEPS"
size=$(du -sm "$DEPS" | cut -f1)
[ "$size" -lt 24 ] || { echo "FAIL: carried deps are ${size} MiB (limit 24 of the 64 MiB tree)"; exit 1; }
CUDA=OFF
[ "${CAPPLAN_DEVICE_TEST_CUDA:-0}" = 1 ] && CUDA=ON
export CAPPLAN_DEVICE_CMAKE_ARGS="-G Ninja -DCAPPLAN_DEVICE_DEPS=$DEPS -DCAPPLAN_WITH_CUDA=$CUDA \
-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON \
-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTEST=ON"
BUILD=$WORK/build
OUTDIR=$WORK/out
start=$(date +%s)
if ! "$ROOT/engine/device/run.sh" --dry-run --smoke --build "$BUILD" --out "$OUTDIR" --commit test; then
  echo "FAIL: run.sh --dry-run --smoke"
  tail -40 "$OUTDIR/build.log" 2>/dev/null || true
  exit 1
fi
grep -q "carried copy in $DEPS" "$OUTDIR/build.log" || { echo "FAIL: carried deps unused"; exit 1; }
grep -q "GTest: built from the carried sources" "$OUTDIR/build.log" ||
  { echo "FAIL: GTest not built from source"; exit 1; }
cmake --build "$BUILD" --target kernels_harness_test >>"$OUTDIR/build.log" 2>&1 ||
  { echo "FAIL: a GoogleTest binary did not build from the carried sources"; exit 1; }
"$BUILD/tests/kernels/harness/kernels_harness_test" --gtest_brief=1 >/dev/null ||
  { echo "FAIL: kernels_harness_test"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['dry_run'] and d['records']" \
  "$OUTDIR/smoke.json" || { echo "FAIL: smoke.json"; exit 1; }
# Headers: every dependency the compiler recorded; libraries: every link line.
leaks=$(cd "$BUILD" && ninja -t deps | grep -E '^ +/usr/(local/)?include/(nlohmann|boost|gtest|gmock)/' |
  sort -u | head -5 || true)
[ -z "$leaks" ] || { echo "FAIL: system headers used:"; echo "$leaks"; exit 1; }
libs=$(grep -hoE '/usr/(local/)?lib[^ ]*(boost|gtest|gmock)[^ ]*' "$BUILD/build.ninja" | sort -u || true)
[ -z "$libs" ] || { echo "FAIL: system libraries linked:"; echo "$libs"; exit 1; }
n=$(cd "$BUILD" && ninja -t deps | grep -c "$DEPS/include/" || true)
[ "$n" -gt 0 ] || { echo "FAIL: no object read the carried headers"; exit 1; }
echo "device build without system packages: ok (CUDA $CUDA, $(( $(date +%s) - start ))s, deps ${size} MiB)"
