#!/usr/bin/env bash
# Engine serve-bench runs for the one-call device script (issue #6), called
# from engine/device/run.sh. Matrix: Kimi K2.6 and GLM-5.2 TP8 slices x
# BF16/FP8 KV x INT4/FP8 weights x kv_integrity none/verify x concurrency
# 1/8/64, each a short closed-loop run, all within the time left before
# --deadline (epoch seconds). Writes $OUT_DIR/engine_runs/<label>.json
# (calibrate/ENGINE_RUN.md) and a one-line-per-run table to stdout.
#
# It needs a `capplan` binary whose engine has the CUDA backend. That backend
# is NOT written yet: the first run answers "not built yet" and the script
# stops after recording the skip, spending a second of device time. It never
# falls back to the CPU backend, so no CPU time is ever reported as GPU time.
#
# Usage: engine/device/serve_bench.sh --out DIR --build DIR [--deadline EPOCH_S]
#        [--layers N] [--dry-run]   (--dry-run: CPU backend, small dims, labelled cpu)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=${OUT:-$ROOT/out/device}
BUILD=$ROOT/build-device
DEADLINE=$(( $(date +%s) + 300 ))
LAYERS=4
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT_DIR=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --layers) LAYERS=$2; shift ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "serve_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
CAPPLAN=$BUILD/capplan
mkdir -p "$OUT_DIR/engine_runs"
if [ ! -x "$CAPPLAN" ]; then
  echo "serve_bench.sh: skipped: $CAPPLAN not built (the kernels-only device build has no CLI)"
  exit 0
fi
if [ $DRY = 1 ]; then BACKEND=(--backend cpu --cpu-dims small); else BACKEND=(--backend cuda --cpu-dims full); fi
declare -A SCEN=([kimi-k2.6]=scenarios/kimi-k2.6-kv-fp8.json [glm-5.2]=scenarios/glm-5.2-decode-fp8.json)
printf "%-40s %8s %12s %12s %10s\n" run iters out_tok_s tot_tok_s verify_us
for model in kimi-k2.6 glm-5.2; do
  for kv in bf16 fp8; do
    for w in int4 fp8; do
      for integ in none verify; do
        for conc in 1 8 64; do
          left=$(( DEADLINE - $(date +%s) ))
          if [ $left -lt 15 ]; then echo "serve_bench.sh: budget spent, stopping"; exit 0; fi
          label=$model-kv$kv-w$w-$integ-c$conc
          # Short runs: 2 x concurrency requests, 1024 in / 32 out.
          if ! timeout $(( left < 60 ? left : 60 )) "$CAPPLAN" engine serve-bench \
              --scenario "$ROOT/${SCEN[$model]}" --layers "$LAYERS" "${BACKEND[@]}" \
              --kv-cache $kv --weights $w --kv-integrity $integ --concurrency $conc \
              --num-requests $(( 2 * conc )) --input-len 1024 --output-len 32 \
              --out "$OUT_DIR/engine_runs/$label.json" --json >"$OUT_DIR/engine_runs/$label.log" 2>&1; then
            if grep -q "not built yet" "$OUT_DIR/engine_runs/$label.log"; then
              echo "serve_bench.sh: skipped: $(tail -1 "$OUT_DIR/engine_runs/$label.log")"
              exit 0
            fi
            echo "$label FAILED: $(tail -1 "$OUT_DIR/engine_runs/$label.log")"
            continue
          fi
          python3 - "$OUT_DIR/engine_runs/$label.log" "$label" <<'PY' 2>/dev/null || echo "$label (summary unreadable)"
import json, sys
s = json.load(open(sys.argv[1]))
print("%-40s %8d %12.1f %12.1f %10.1f" % (sys.argv[2], s["iterations"], s["output_tokens_per_s"],
      s["total_tokens_per_s"], s["verify_us"]))
PY
        done
      done
    done
  done
done
