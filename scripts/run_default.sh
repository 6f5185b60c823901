#!/usr/bin/env bash
# The default planning job (`make run`) on the shipped defaults.
#
# The terminal gets the answer: a summary of the motivating study (at most 16
# lines, every figure read from the simulation summaries by `capplan report
# --format brief`), then where the reports, the what-if page and the
# detailed tables are. The detailed tables (capacity table, simulated rows,
# search tops) go to files under $STUDY. Usage: scripts/run_default.sh [BUILD_DIR]
# CAPPLAN_STUDY_DIR overrides where the study is written (default BUILD/study).
set -euo pipefail
BUILD=${1:-build}
CAPPLAN="$BUILD/capplan"
STUDY=${CAPPLAN_STUDY_DIR:-$BUILD/study}
rm -rf "$STUDY"
mkdir -p "$STUDY"
TABLES="$STUDY/tables.txt"
echo "make run: simulating the motivating study on the shipped defaults (details: $TABLES) ..."

# ---- Detailed tables: $TABLES ----
{
echo "== KV capacity of the shipped model cards on 8x H200 (SGLang defaults) =="
"$CAPPLAN" capacity --table --gpus 8 --tp 8

# Simulated serving: the motivating study (sim/, scenarios/). Model outputs
# from the facts-only H200 profile (calibrate/PROFILE.md), not measurements.
# Each row: capplan simulate SCENARIO --set ... --row. The scenarios give no
# run length: each concurrency gets a window that reaches steady state (one
# warm-up wave and 40 measured, sim/steady_state.h).
SIM="$CAPPLAN simulate"
echo
echo "== (a) Kimi K2.6 decode pool, 8x H200 TP8, 16K in / 1K out: BF16 vs FP8 KV =="
for kv in bf16 fp8; do
  for c in 1 16 64; do
    $SIM scenarios/kimi-k2.6-kv-$kv.json --set workload.concurrency=$c --row
  done
done
echo
echo "== (b) GLM-5.2 decode, 8K in / 1K out: FP8 vs INT4 weights =="
for w in fp8 int4; do
  for c in 1 8 64; do
    $SIM scenarios/glm-5.2-decode-$w.json --set workload.concurrency=$c --row
  done
done
echo
echo "== (c) GLM-5.2 prefill pool, 8K prompts: FP8 vs INT4 weights (input tokens/s) =="
for w in fp8 int4; do
  $SIM scenarios/glm-5.2-prefill-$w.json --out "$STUDY/glm-5.2-prefill-$w" --row
done
echo
echo "== (d) KV integrity verification on the Kimi K2.6 FP8-KV decode pool, concurrency 64 =="
for m in none verify; do
  $SIM scenarios/kimi-k2.6-integrity-$m.json --row
done
} >"$TABLES"

# ---- Planning report of the motivating study (report/) ----
# Re-runs the study's simulations with --out and turns them into one HTML
# report plus its Markdown twin. Each configuration is compared with the
# nearest baseline listed before it: FP8 KV vs BF16 KV, INT4 vs FP8 weights,
# verify vs none.
# Their warnings (mostly op shapes priced outside the profile's fitted ranges)
# go to $WARNINGS, named once at the end; a failing run still shows its error.
WARNINGS="$STUDY/warnings.txt"
: >"$WARNINGS"
warned() {  # command...
  if ! "$@" >/dev/null 2>>"$WARNINGS"; then
    tail -n 3 "$WARNINGS" >&2
    exit 1
  fi
}
study_sim() {  # scenario concurrency
  warned "$CAPPLAN" simulate "scenarios/$1.json" --set workload.concurrency="$2" \
    --out "$STUDY/$1-c$2"
}
for kv in bf16 fp8; do for c in 16 64; do study_sim kimi-k2.6-kv-$kv $c; done; done
for w in fp8 int4; do for c in 8 64; do study_sim glm-5.2-decode-$w $c; done; done
for m in none verify; do study_sim kimi-k2.6-integrity-$m 64; done
# PD (prefill pool -> KV transfer -> decode pool) vs the same 16 GPUs
# co-located, open loop at the scenarios' own rate. The report pairs a PD
# result named S with the co-located result named S-colocated (table "PD vs
# co-located twin"); each twin is also the cost baseline of its PD run.
for s in pd-glm-5.2 pd-kimi-k2.6; do
  for v in "$s-colocated" "$s"; do
    warned "$CAPPLAN" simulate "scenarios/$v.json" --out "$STUDY/$v"
  done
done
# Agentic traffic (multi-turn sessions sharing a system prompt): SGLang's
# prefix cache off vs on, then on with EAGLE3 speculative decoding; the same
# sessions and seed.
for v in nocache cache spec; do
  warned "$CAPPLAN" simulate "scenarios/kimi-k2.6-agent-$v.json" --out "$STUDY/kimi-k2.6-agent-$v"
done
# Agent sessions whose contexts outgrow HBM (sim/kv_tiers.h): the same
# sessions with only the GPU's prefix cache, then with the scenario's
# host-memory KV tier (SGLang HiCache, 200 GiB per GPU) under it.
warned "$CAPPLAN" simulate scenarios/agentic/kimi-k2.6-hicache.json --set 'deployment.kv_tiers=[]' \
  --set name=kimi-k2.6-hbm-only --out "$STUDY/kimi-k2.6-hbm-only"
warned "$CAPPLAN" simulate scenarios/agentic/kimi-k2.6-hicache.json --out "$STUDY/kimi-k2.6-hicache"
results=()
for s in kimi-k2.6-kv-bf16 kimi-k2.6-kv-fp8 glm-5.2-decode-fp8 glm-5.2-decode-int4 \
         kimi-k2.6-integrity-none kimi-k2.6-integrity-verify; do
  results+=("$STUDY"/"$s"-c*)
done
results+=("$STUDY/pd-glm-5.2-colocated" "$STUDY/pd-glm-5.2" \
          "$STUDY/pd-kimi-k2.6-colocated" "$STUDY/pd-kimi-k2.6" \
          "$STUDY/kimi-k2.6-agent-nocache" "$STUDY/kimi-k2.6-agent-cache" \
          "$STUDY/kimi-k2.6-agent-spec")
# The what-if page re-simulates shipped scenarios by name; the HBM-only run
# is the host-tier scenario with its tier removed, so these two join the
# reports only.
whatif_results=("${results[@]}")
results+=("$STUDY/kimi-k2.6-hbm-only" "$STUDY/kimi-k2.6-hicache")
for fmt in html md; do
  "$CAPPLAN" report "${results[@]}" --out "$STUDY/report.$fmt" \
    --title "Motivating study: Kimi K2.6 and GLM-5.2 on 8x H200 (simulated)" \
    --baseline kimi-k2.6-kv-bf16 --baseline glm-5.2-decode-fp8 \
    --baseline kimi-k2.6-integrity-none --baseline pd-glm-5.2-colocated \
    --baseline pd-kimi-k2.6-colocated --baseline kimi-k2.6-agent-nocache \
    --baseline kimi-k2.6-hbm-only >/dev/null
done
# The what-if page (`capplan report --interactive`): the study's scenarios,
# one preset per result, re-simulated in the browser as controls change.
# Only when the simulator's WebAssembly module was built (emscripten).
whatif=""
if [ -f "$BUILD/wasm/capplan_sim.js" ]; then
  "$CAPPLAN" report "${whatif_results[@]}" --interactive --wasm "$BUILD/wasm/capplan_sim.js" \
    --out "$STUDY/whatif.html" --title "What if: Kimi K2.6 and GLM-5.2 on 8x H200" >/dev/null
  whatif="$STUDY/whatif.html"
fi
{
echo
echo "== PD vs co-located on 16x H200 (from the planning report; labels in its legend) =="
sed -n '/^## PD vs co-located twin/,/^## /p' "$STUDY/report.md" | grep '^|' || true
} >>"$TABLES"

# At equal offered load (above) throughput is the arrival rate, so cost per
# token mostly counts GPUs. The planning question is the cheapest way to meet
# an SLO: search each deployment's largest SLO-meeting rate (600 requests per
# probe, so queues reach a steady state) and compare the best of each.
{
echo
echo "== At an SLO (p90 TTFT <= 2 s, p90 TPOT <= 50 ms): PD ratio x decode pool precision vs co-located replicas x precision =="
for pair in "pd-glm-5.2 pd-glm-5.2-ratio" "pd-glm-5.2-colocated glm-5.2-colocated" \
            "pd-kimi-k2.6 pd-kimi-k2.6-ratio" "pd-kimi-k2.6-colocated kimi-k2.6-colocated"; do
  set -- $pair
  "$CAPPLAN" search "scenarios/$1.json" --space "scenarios/search/$2.json" \
    --slo 'p90_ttft_ms<=2000' --slo 'p90_tpot_ms<=50' \
    --set workload.num_requests=600 --set workload.warmup_requests=60 \
    --out "$STUDY/search-$2" | sed -n '/^Top configurations/,/^$/p' | head -6
done
} >>"$TABLES"
# The two winners side by side: a search directory reports as its winner, so
# the PD-vs-twin table now compares the cheapest SLO-meeting deployments.
for fmt in html md; do
  "$CAPPLAN" report "$STUDY/search-pd-glm-5.2-ratio" "$STUDY/search-glm-5.2-colocated" \
    "$STUDY/search-pd-kimi-k2.6-ratio" "$STUDY/search-kimi-k2.6-colocated" \
    --out "$STUDY/slo-report.$fmt" \
    --title "Cheapest PD vs co-located deployment meeting p90 TTFT <= 2 s, p90 TPOT <= 50 ms (simulated)" \
    >/dev/null
done
{
echo
echo "== Winners at the SLO, PD vs co-located (slo-report; labels in its legend) =="
sed -n '/^## PD vs co-located twin/,/^## /p' "$STUDY/slo-report.md" | grep '^|' || true
} >>"$TABLES"

# The energy line's runs (sim/energy.h): the decode comparisons at
# concurrency 64 again, under names short enough to label that line.
energy=()
for pair in "kimi-k2.6-kv-bf16:Kimi bf16 KV" "kimi-k2.6-kv-fp8:Kimi fp8 KV" \
            "glm-5.2-decode-fp8:GLM fp8" "glm-5.2-decode-int4:GLM int4"; do
  s=${pair%%:*}
  warned "$CAPPLAN" simulate "scenarios/$s.json" --set "name=${pair#*:}" \
    --set workload.concurrency=64 --out "$STUDY/energy-$s"
  energy+=("$STUDY/energy-$s")
done

# ---- The answer: at most 16 lines, every figure from the summaries ----
brief() {  # title baseline-result result
  "$CAPPLAN" report "$2" "$3" --format brief --out - --title "$1"
}
{
echo "== Motivating study, 8x H200 per pool: simulated (facts-only profile), not measured; \$/M = USD per million tokens =="
brief "Kimi K2.6 KV fp8 vs bf16, 16K context" \
  "$STUDY/kimi-k2.6-kv-bf16-c64" "$STUDY/kimi-k2.6-kv-fp8-c64"
brief "GLM-5.2 decode weights int4 vs fp8" \
  "$STUDY/glm-5.2-decode-fp8-c64" "$STUDY/glm-5.2-decode-int4-c64"
brief "GLM-5.2 prefill weights int4 vs fp8, 8K prompts" \
  "$STUDY/glm-5.2-prefill-fp8" "$STUDY/glm-5.2-prefill-int4"
brief "Kimi K2.6 KV integrity verify vs none" \
  "$STUDY/kimi-k2.6-integrity-none-c64" "$STUDY/kimi-k2.6-integrity-verify-c64"
brief "Kimi K2.6 agents past HBM (10-50K contexts), host KV tier vs HBM only" \
  "$STUDY/kimi-k2.6-hbm-only" "$STUDY/kimi-k2.6-hicache"
brief "GLM-5.2 at SLO p90 TTFT 2 s/TPOT 50 ms, cheapest PD vs co-located" \
  "$STUDY/search-glm-5.2-colocated" "$STUDY/search-pd-glm-5.2-ratio"
brief "Kimi K2.6 at the same SLO, cheapest PD vs co-located" \
  "$STUDY/search-kimi-k2.6-colocated" "$STUDY/search-pd-kimi-k2.6-ratio"
# One line of energy (sim/energy.h) for the decode comparisons above.
"$CAPPLAN" report "${energy[@]}" --format energy --out - --title "Energy, decode at c=64"
} >"$STUDY/summary.txt.tmp"
# Renamed into place only when complete, so a failed run leaves no summary
# that looks finished.
mv "$STUDY/summary.txt.tmp" "$STUDY/summary.txt"
cat "$STUDY/summary.txt"
echo "Reports: $STUDY/report.html and $STUDY/slo-report.html (Markdown: *.md)"
if [ -n "$whatif" ]; then
  echo "What-if page (re-simulates in the browser): $whatif"
fi
echo "Detailed tables: $TABLES; simulation summaries: $STUDY/*/summary.json"
if [ -s "$WARNINGS" ]; then
  echo "Simulator warnings ($(wc -l <"$WARNINGS") lines, e.g. op shapes outside the profile's fitted ranges, extrapolated): $WARNINGS"
fi
