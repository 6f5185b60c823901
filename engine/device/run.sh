#!/usr/bin/env bash
# The one-call device script: on the H200 machine, in one call,
#   1. builds the kernels (Release, sm_90a) unless a carried build is given,
#   2. runs the gpu-labelled tests (log: $OUT/gpu_tests.log),
#   3. times every registered kernel suite over its shape sweep under a time
#      budget and writes $OUT/measurements.json (calibrate/MEASUREMENTS.md),
#   4. runs the engine's serve-bench matrix with the CUDA backend
#      (engine/device/serve_bench.sh; $OUT/engine_runs.tar.gz, serve_bench.log)
#      in a reserved share of the budget (CAPPLAN_SERVE_BENCH_S, default 150),
#   5. prints a short table last (kernel, shape, median us, GB/s, TFLOP/s,
#      % of roofline).
# The whole run stays under 8 minutes (CAPPLAN_DEVICE_BUDGET_S, default 450):
# build and gpu tests first, then the kernel sweep gets what is left minus the
# serve-bench share, and serve-bench runs until the overall deadline.
#
# Usage: engine/device/run.sh [--dry-run] [--out DIR] [--build DIR] [--commit SHA]
#   --dry-run  no GPU: build here if needed, run the CPU reference paths only
#              and write the same JSON shape (marked "dry_run": true)
#   --out DIR  where results go (default $OUT, else ./out/device)
#   --build DIR  build directory; with CAPPLAN_PREBUILT=1 its binaries are
#              used as they are (carried from another machine, see below)
#   --commit SHA recorded in the file (default: git rev-parse, else "unknown")
#
# Carried binaries: the device image may lack GTest/Boost headers. Build here
# with static runtimes and carry the folder:
#   cmake -S engine/device/kernels_only -B build-device -DCMAKE_BUILD_TYPE=Release \
#         -DCAPPLAN_STATIC_RUNTIME=ON && cmake --build build-device -j2 \
#         --target capplan_kernel_bench capplan-engine $(gpu test targets)
#   device run: CAPPLAN_PREBUILT=1 engine/device/run.sh --build build-device --commit SHA
set -uo pipefail
START=$(date +%s)
BUDGET=${CAPPLAN_DEVICE_BUDGET_S:-450}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY=0
OUTDIR=${OUT:-$ROOT/out/device}
BUILD=""
COMMIT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUTDIR=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --commit) COMMIT=$2; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUTDIR" || { echo "run.sh: cannot create $OUTDIR" >&2; exit 1; }
[ -n "$COMMIT" ] || COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "$BUILD" ]; then
  if [ $DRY = 1 ]; then BUILD=$ROOT/build-device-dry; else BUILD=$ROOT/build-device; fi
fi
export CAPPLAN_DATA_DIR=$ROOT   # model cards and ceilings are read from the tree
JOBS=$(nproc 2>/dev/null || echo 2)
elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[run.sh +$(elapsed)s] $*"; }

# --- 1. build -------------------------------------------------------------
gpu_targets() { cmake --build "$BUILD" --target help 2>/dev/null | sed -n -e 's/^\.\.\. \([a-z0-9_]*_gpu_test\).*/\1/p' -e 's/^\([a-z0-9_]*_gpu_test\): .*/\1/p'; }
if [ "${CAPPLAN_PREBUILT:-0}" = 1 ]; then
  log "using prebuilt binaries in $BUILD"
else
  ARCH_FLAGS=()  # sm_90a is the kernels_only project's default
  if command -v ccache >/dev/null 2>&1; then
    ARCH_FLAGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  log "configuring $BUILD (Release, sm_90a)"
  if ! cmake -S "$ROOT/engine/device/kernels_only" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
      "${ARCH_FLAGS[@]}" >"$OUTDIR/build.log" 2>&1; then
    tail -30 "$OUTDIR/build.log"; echo "run.sh: configure failed (log: $OUTDIR/build.log)" >&2; exit 1
  fi
  TARGETS=(capplan_kernel_bench capplan-engine)
  [ $DRY = 0 ] && TARGETS+=($(gpu_targets))
  log "building ${TARGETS[*]} with $JOBS jobs"
  if ! cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >>"$OUTDIR/build.log" 2>&1; then
    grep -E "error" "$OUTDIR/build.log" | head -20
    echo "run.sh: build failed (log: $OUTDIR/build.log)" >&2; exit 1
  fi
fi
BENCH=$BUILD/capplan-kernel-bench
[ -x "$BENCH" ] || { echo "run.sh: $BENCH missing" >&2; exit 1; }

# --- 2. gpu tests ---------------------------------------------------------
if [ $DRY = 1 ]; then
  echo "dry run: gpu tests not run (no device); they skip cleanly under ctest -L gpu" >"$OUTDIR/gpu_tests.log"
elif [ "${CAPPLAN_PREBUILT:-0}" = 1 ]; then
  # ctest files of a carried build name this machine's paths: run the
  # gpu-labelled test binaries directly (same tests as ctest -L gpu).
  : >"$OUTDIR/gpu_tests.log"
  for t in $(find "$BUILD" -name '*_gpu_test' -type f -perm -u+x | sort); do
    log "gpu test $(basename "$t")"
    timeout 120 "$t" >>"$OUTDIR/gpu_tests.log" 2>&1 || echo "FAILED: $t" >>"$OUTDIR/gpu_tests.log"
  done
else
  log "ctest -L gpu"
  (cd "$BUILD" && timeout 180 ctest -L gpu --output-on-failure) >"$OUTDIR/gpu_tests.log" 2>&1 \
    || echo "run.sh: some gpu tests FAILED (see gpu_tests.log)"
fi
grep -E "tests passed|FAILED|\[  FAILED  \]|PASSED" "$OUTDIR/gpu_tests.log" | tail -15

# --- 3. measurements ------------------------------------------------------
SERVE_S=${CAPPLAN_SERVE_BENCH_S:-150}  # reserved for serve-bench (step 4)
LEFT=$(( BUDGET - $(elapsed) - 30 - SERVE_S ))
[ $LEFT -lt 20 ] && LEFT=20
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
BENCH_ARGS=(--out "$OUTDIR/measurements.json" --commit "$COMMIT" --driver "${DRIVER:-}"
            --time-budget-s "$LEFT")
[ $DRY = 1 ] && BENCH_ARGS+=(--dry-run)
log "capplan-kernel-bench (budget ${LEFT}s)"
"$BENCH" "${BENCH_ARGS[@]}" >"$OUTDIR/bench.log" 2>&1
RC=$?
# --- 4. serve-bench (engine) --------------------------------------------
SB_DEADLINE=$(( START + BUDGET - 10 ))
if [ $DRY = 1 ]; then
  # A dry run here spends most of its budget building on 2 cores; its two
  # tiny CPU runs (a few seconds) still run so the path stays exercised.
  NOW=$(date +%s)
  [ $SB_DEADLINE -lt $(( NOW + 60 )) ] && SB_DEADLINE=$(( NOW + 60 ))
fi
log "serve-bench until the deadline ($(( SB_DEADLINE - $(date +%s) ))s left)"
SB_ARGS=(--out "$OUTDIR" --build "$BUILD" --deadline $SB_DEADLINE)
[ $DRY = 1 ] && SB_ARGS+=(--dry-run --max-runs "${CAPPLAN_SERVE_BENCH_DRY_RUNS:-2}")
"$ROOT/engine/device/serve_bench.sh" "${SB_ARGS[@]}" >"$OUTDIR/serve_bench.log" 2>&1 || true
cat "$OUTDIR/serve_bench.log"
# --- 5. the short table, last ---------------------------------------------
cat "$OUTDIR/bench.log"
log "done: $OUTDIR/measurements.json, $OUTDIR/gpu_tests.log (rc=$RC)"
exit $RC
