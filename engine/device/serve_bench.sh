#!/usr/bin/env bash
# Engine serve-bench runs for the one-call device script, called
# from engine/device/run.sh. Matrix: Kimi K2.6 and GLM-5.2 TP8 slices x
# BF16/FP8 KV x INT4/FP8 weights x kv_integrity none/verify x concurrency
# 1/8/64, each a short closed-loop run, most important first:
#   1-2  kimi-k2.6 FP8 vs BF16 KV at concurrency 64
#   3-4  glm-5.2 INT4 vs FP8 weights at concurrency 64
#   5-6  kv_integrity verify (vs runs 1 and 3) at concurrency 64
#   then concurrency 1 and 8 of those, then the rest of the cross product,
# all within the time left before --deadline (epoch seconds). Run 2 repeats
# run 1 with twice the layers: the pair gives the time per added layer (MoE
# layers: the slice's leading dense layers stay) and the rest of a step
# (embedding, final norm, LM head, sampling, the dense layers), printed as
# "linearity:", so a slice scales to the full model. Each run is one
# process: building a full-dims slice (synthetic weights for every expert)
# costs seconds before its first timed step, so the budget holds few runs.
#
# Outputs (the device tool returns at most 8 files from $OUT): per-run
# ENGINE_RUN files (calibrate/ENGINE_RUN.md) and logs under --work, packed
# after every run into $OUT_DIR/engine_runs.tar.gz; a one-line-per-run table
# on stdout.
#
# It needs `capplan` or `capplan-engine` (the kernels-only device build) in
# --build, with the CUDA backend. Without a device the first run answers "no
# CUDA device: use --backend cpu" and the script stops: it never falls back
# to the CPU backend, so no CPU time is ever reported as GPU time.
#
# Usage: engine/device/serve_bench.sh --out DIR --build DIR [--deadline EPOCH_S]
#        [--layers N] [--work DIR] [--max-runs N] [--dry-run]
#   --dry-run  CPU backend, small dims, tiny workload, labelled cpu (checks
#              the script and the file format here; never device numbers)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=${OUT:-$ROOT/out/device}
BUILD=$ROOT/build-device
DEADLINE=$(( $(date +%s) + 300 ))
LAYERS=2
DRY=0
WORK=""
MAX_RUNS=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT_DIR=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --layers) LAYERS=$2; shift ;;
    --work) WORK=$2; shift ;;
    --max-runs) MAX_RUNS=$2; shift ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "serve_bench.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$WORK" ] || WORK=$BUILD/engine_runs
mkdir -p "$OUT_DIR" "$WORK" || { echo "serve_bench.sh: cannot create $OUT_DIR / $WORK" >&2; exit 1; }
CAPPLAN=$BUILD/capplan
[ -x "$CAPPLAN" ] || CAPPLAN=$BUILD/capplan-engine
if [ ! -x "$CAPPLAN" ]; then
  echo "serve_bench.sh: skipped: neither $BUILD/capplan nor $BUILD/capplan-engine is built"
  exit 0
fi
export CAPPLAN_DATA_DIR=${CAPPLAN_DATA_DIR:-$ROOT}
if [ $DRY = 1 ]; then
  BACKEND=(--backend cpu --cpu-dims small)
  IN=48; OUTLEN=4; CONCS="1 8"
else
  BACKEND=(--backend cuda --cpu-dims full)
  IN=512; OUTLEN=32; CONCS="64 1 8"
fi
declare -A SCEN=([kimi-k2.6]=scenarios/kimi-k2.6-kv-fp8.json [glm-5.2]=scenarios/glm-5.2-decode-fp8.json)

# The run list, most important first; the cross product follows, duplicates
# dropped. Fields: model kv weights integrity concurrency.
RUNS=()
FIRST=$(set -- $CONCS; echo $1)
RUNS+=("kimi-k2.6 fp8 int4 none $FIRST" "kimi-k2.6 fp8 int4 none $FIRST x2")
for c in $CONCS; do
  RUNS+=("kimi-k2.6 fp8 int4 none $c" "kimi-k2.6 bf16 int4 none $c"
         "glm-5.2 fp8 int4 none $c" "glm-5.2 fp8 fp8 none $c"
         "kimi-k2.6 fp8 int4 verify $c" "glm-5.2 fp8 int4 verify $c")
done
for model in kimi-k2.6 glm-5.2; do
  for kv in bf16 fp8; do
    for w in int4 fp8; do
      for integ in none verify; do
        for c in $CONCS; do RUNS+=("$model $kv $w $integ $c"); done
      done
    done
  done
done

declare -A DONE=()
n=0
printf "%-36s %6s %12s %12s %12s %10s\n" run iters out_tok_s tot_tok_s measured_s verify_us
for spec in "${RUNS[@]}"; do
  [ -n "${DONE[$spec]:-}" ] && continue
  DONE[$spec]=1
  [ $n -ge "$MAX_RUNS" ] && break
  read -r model kv w integ conc mult <<<"$spec"
  layers=$LAYERS
  [ "${mult:-}" = x2 ] && layers=$(( 2 * LAYERS ))
  left=$(( DEADLINE - $(date +%s) ))
  if [ $left -lt 20 ]; then echo "serve_bench.sh: budget spent after $n run(s), stopping"; break; fi
  label=$model-kv$kv-w$w-$integ-c$conc-L$layers
  n=$((n + 1))
  if ! timeout $(( left < 120 ? left : 120 )) "$CAPPLAN" engine serve-bench \
      --scenario "$ROOT/${SCEN[$model]}" --layers "$layers" "${BACKEND[@]}" \
      --kv-cache "$kv" --weights "$w" --kv-integrity "$integ" --concurrency "$conc" \
      --num-requests "$conc" --input-len $IN --output-len $OUTLEN \
      --out "$WORK/$label.json" --json >"$WORK/$label.log" 2>&1; then
    if grep -q "no CUDA device" "$WORK/$label.log"; then
      echo "serve_bench.sh: skipped: $(tail -1 "$WORK/$label.log")"
      break
    fi
    echo "$label FAILED: $(tail -1 "$WORK/$label.log")"
  else
    python3 - "$WORK/$label.log" "$label" <<'PY' 2>/dev/null || echo "$label (summary unreadable)"
import json, sys
s = json.load(open(sys.argv[1]))
print("%-36s %6d %12.1f %12.1f %12.3f %10.1f" % (sys.argv[2], s["iterations"],
      s["output_tokens_per_s"], s["total_tokens_per_s"], s["total_measured_us"] * 1e-6,
      s["verify_us"]))
PY
  fi
  tar -czf "$OUT_DIR/engine_runs.tar.gz" -C "$WORK" . 2>/dev/null || true
done
# Linearity in layers from the first two runs: t(L) = fixed + L * per_layer.
python3 - "$WORK" "$LAYERS" <<'PY' 2>/dev/null || true
import glob, json, sys
work, l1 = sys.argv[1], int(sys.argv[2])
def mean_iter_us(path):
    it = json.load(open(path))["iterations"]
    return sum(i["forward_us"] for i in it) / len(it), len(it)
a = glob.glob(f"{work}/kimi-k2.6-kvfp8-wint4-none-c*-L{l1}.json")
b = glob.glob(f"{work}/kimi-k2.6-kvfp8-wint4-none-c*-L{2 * l1}.json")
if a and b:
    (t1, n1), (t2, n2) = mean_iter_us(a[0]), mean_iter_us(b[0])
    per = (t2 - t1) / l1
    print("linearity: mean forward %.1f us at %d layers, %.1f us at %d; per added layer %.1f us, "
          "rest %.1f us (%d and %d iterations)" % (t1, l1, t2, 2 * l1, per, t1 - l1 * per, n1, n2))
PY
echo "serve_bench.sh: $n run(s); files: $OUT_DIR/engine_runs.tar.gz (ENGINE_RUN json + logs)"
