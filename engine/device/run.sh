#!/usr/bin/env bash
# The one-call device script: on the H200 machine, in one call,
#   1. builds the kernels (Release, sm_90a) unless a carried build is given;
#      the device image has no Debian development packages, so carry
#      engine/device/deps (engine/device/bring_deps.sh, run here first),
#   2. runs the gpu-labelled tests (log: $OUT/gpu_tests.log),
#   3. the smoke gate: capplan-kernel-bench --smoke (the smallest cases of
#      every kernel and dtype, all checked against the CPU reference, 3
#      repeats, no L2 flush; $OUT/smoke.json, smoke.log), then the same
#      under compute-sanitizer memcheck where it is installed (a bounded
#      time, CAPPLAN_MEMCHECK_S, default 120; 0 skips it),
#   4. the timed sweep, one prioritised case list across the suites whose
#      smoke cases all passed (none when memcheck found errors or the device
#      stopped; mission shapes first), under a time budget, writing
#      $OUT/measurements.json after every case (calibrate/MEASUREMENTS.md),
#   5. the engine's serve-bench matrix with the CUDA backend
#      (engine/device/serve_bench.sh; $OUT/engine_runs.tar.gz, serve_bench.log)
#      in a reserved share of the budget (CAPPLAN_SERVE_BENCH_S, default 150),
#   6. prints a short table last (kernel, shape, median us, GB/s, TFLOP/s,
#      % of roofline).
# The whole run stays under 8 minutes (CAPPLAN_DEVICE_BUDGET_S, default 450).
# At most 8 files come back from $OUT: build.log, gpu_tests.log, smoke.log,
# smoke.json, measurements.json, bench.log, serve_bench.log, engine_runs.tar.gz.
#
# Usage: engine/device/run.sh [--dry-run] [--smoke] [--out DIR] [--build DIR]
#                             [--commit SHA]
#   --dry-run  no GPU: build here if needed, run the CPU reference paths only
#              and write the same JSON shape (marked "dry_run": true)
#   --smoke    stop after the smoke gate (step 3)
#   --out DIR  where results go (default $OUT, else ./out/device)
#   --build DIR  build directory; with CAPPLAN_PREBUILT=1 its binaries are
#              used as they are (carried from another machine)
#   --commit SHA recorded in the file (default: git rev-parse, else "unknown")
# Extra configure arguments: CAPPLAN_DEVICE_CMAKE_ARGS (word-split).
# Exit status: 0 all checks passed; 3 a smoke or sweep case failed (files
# keep what was measured); 1 build or setup failure; 2 usage.
set -uo pipefail
START=$(date +%s)
BUDGET=${CAPPLAN_DEVICE_BUDGET_S:-450}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY=0
SMOKE_ONLY=0
OUTDIR=${OUT:-$ROOT/out/device}
BUILD=""
COMMIT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --smoke) SMOKE_ONLY=1 ;;
    --out) OUTDIR=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --commit) COMMIT=$2; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
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
  read -r -a EXTRA_CMAKE <<<"${CAPPLAN_DEVICE_CMAKE_ARGS:-}"
  log "configuring $BUILD (Release, sm_90a) ${EXTRA_CMAKE[*]}"
  if ! cmake -S "$ROOT/engine/device/kernels_only" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
      "${ARCH_FLAGS[@]}" "${EXTRA_CMAKE[@]}" >"$OUTDIR/build.log" 2>&1; then
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

# --- 3. smoke gate -----------------------------------------------------------
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
COMMON=(--commit "$COMMIT" --driver "${DRIVER:-}")
[ $DRY = 1 ] && COMMON+=(--dry-run)
log "smoke: capplan-kernel-bench --smoke"
timeout 300 "$BENCH" --smoke "${COMMON[@]}" --out "$OUTDIR/smoke.json" >"$OUTDIR/smoke.log" 2>&1
SMOKE_RC=$?
tail -3 "$OUTDIR/smoke.log"
MEMCHECK_S=${CAPPLAN_MEMCHECK_S:-120}
MEMCHECK_BAD=0
SANITIZER=$(command -v compute-sanitizer 2>/dev/null || echo /usr/local/cuda/bin/compute-sanitizer)
if [ $DRY = 0 ] && [ "$MEMCHECK_S" -gt 0 ] && [ -x "$SANITIZER" ]; then
  log "smoke under compute-sanitizer --tool memcheck (at most ${MEMCHECK_S}s)"
  echo "=== compute-sanitizer --tool memcheck ===" >>"$OUTDIR/smoke.log"
  timeout "$MEMCHECK_S" "$SANITIZER" --tool memcheck --error-exitcode 9 "$BENCH" --smoke \
      "${COMMON[@]}" --out "$BUILD/smoke_memcheck.json" >>"$OUTDIR/smoke.log" 2>&1
  MC=$?
  case $MC in
    0) log "memcheck: clean" ;;
    9) log "memcheck: MEMORY ERRORS (smoke.log)"; SMOKE_RC=3; MEMCHECK_BAD=1 ;;
    124) log "memcheck: not finished in ${MEMCHECK_S}s (smoke.log)" ;;
    *) log "memcheck: rc=$MC (smoke.log)"; [ $SMOKE_RC = 0 ] && SMOKE_RC=3; MEMCHECK_BAD=1 ;;
  esac
fi
# A suite with a failed smoke case is left out of the timed sweep; the
# others are still timed (one device session is minutes long), unless
# memcheck found errors or the device stopped, which taint every suite.
SWEEP_SUITES=()
FINAL_RC=0
if [ $SMOKE_RC != 0 ]; then
  grep -E "fail|error|STOPPED" "$OUTDIR/smoke.log" | head -20
  FAILED=$(sed -n 's/^suites failed: //p' "$OUTDIR/smoke.log" | head -1)
  if [ $SMOKE_RC = 3 ] && [ $MEMCHECK_BAD = 0 ] && [ -n "$FAILED" ] && [ $SMOKE_ONLY = 0 ] &&
     ! grep -q '^STOPPED' "$OUTDIR/smoke.log"; then
    for s in $("$BENCH" --list | awk '{print $1}'); do
      case " $FAILED " in *" $s "*) ;; *) SWEEP_SUITES+=(--suite "$s") ;; esac
    done
  fi
  if [ ${#SWEEP_SUITES[@]} = 0 ]; then
    log "smoke FAILED (rc=$SMOKE_RC): no timed sweep; see smoke.log, smoke.json"
    exit $(( SMOKE_RC == 3 ? 3 : 1 ))
  fi
  log "smoke FAILED in suite(s) $FAILED: the timed sweep leaves them out (smoke.log, smoke.json)"
  FINAL_RC=3
fi
if [ $SMOKE_ONLY = 1 ]; then
  cat "$OUTDIR/smoke.log"
  log "smoke passed: $OUTDIR/smoke.json"
  exit 0
fi

# --- 4. the timed sweep ---------------------------------------------------
SERVE_S=${CAPPLAN_SERVE_BENCH_S:-150}  # reserved for serve-bench (step 5)
LEFT=$(( BUDGET - $(elapsed) - 30 - SERVE_S ))
[ $LEFT -lt 20 ] && LEFT=20
log "capplan-kernel-bench (budget ${LEFT}s)"
"$BENCH" "${COMMON[@]}" "${SWEEP_SUITES[@]}" --out "$OUTDIR/measurements.json" \
    --time-budget-s "$LEFT" >"$OUTDIR/bench.log" 2>&1
RC=$?
[ $FINAL_RC != 0 ] && RC=$FINAL_RC
# --- 5. serve-bench (engine) --------------------------------------------
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
# --- 6. the short table, last ---------------------------------------------
cat "$OUTDIR/bench.log"
log "done: $OUTDIR/measurements.json, $OUTDIR/gpu_tests.log (rc=$RC)"
exit $RC
