#!/usr/bin/env bash
# engine/device/run.sh after a failed smoke gate: the timed sweep runs the
# suites whose smoke cases all passed, and none when the device stopped.
# A stand-in capplan-kernel-bench records how it was called.
set -uo pipefail
ROOT=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/build"
cat >"$WORK/build/capplan-kernel-bench" <<'BENCH'
#!/usr/bin/env bash
case " $* " in
  *" --list "*) printf 'gemm  dense GEMMs\nmoe  MoE experts\nrope  RoPE\n' ;;
  *" --smoke "*) cat "$FAKE_SMOKE_LOG"; exit 3 ;;
  *) echo "$*" >"$FAKE_SWEEP_ARGS" ;;
esac
BENCH
chmod +x "$WORK/build/capplan-kernel-bench"
export FAKE_SWEEP_ARGS=$WORK/sweep_args
fail=0
run() {
  rm -f "$FAKE_SWEEP_ARGS"
  CAPPLAN_PREBUILT=1 CAPPLAN_MEMCHECK_S=0 CAPPLAN_DEVICE_BUDGET_S=60 CAPPLAN_SERVE_BENCH_S=1 \
    "$ROOT/engine/device/run.sh" --build "$WORK/build" --out "$WORK/out" --commit test \
    >"$WORK/log" 2>&1
}

# One suite failed a check: the sweep times the other two, and the run
# still exits 3.
export FAKE_SMOKE_LOG=$WORK/smoke_fail
printf 'moe_grouped_fp8  fp8_block  tokens=1  1233.38  fail\nsuites failed: moe\n' >"$FAKE_SMOKE_LOG"
run
rc=$?
if [ $rc != 3 ]; then echo "FAIL: exit $rc, want 3"; cat "$WORK/log"; fail=1; fi
if ! grep -q -- '--suite gemm --suite rope' "$FAKE_SWEEP_ARGS" 2>/dev/null ||
   grep -q -- '--suite moe' "$FAKE_SWEEP_ARGS"; then
  echo "FAIL: sweep arguments: $(cat "$FAKE_SWEEP_ARGS" 2>/dev/null || echo 'no sweep')"
  fail=1
fi

# The device stopped: nothing is timed.
printf 'suites failed: moe\nSTOPPED after moe/x: an illegal memory access\n' >"$FAKE_SMOKE_LOG"
run
rc=$?
if [ $rc != 3 ]; then echo "FAIL: stopped device: exit $rc, want 3"; fail=1; fi
if [ -e "$FAKE_SWEEP_ARGS" ]; then echo "FAIL: a sweep ran after the device stopped"; fail=1; fi
[ $fail = 0 ] && echo "PASS"
exit $fail
