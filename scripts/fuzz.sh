#!/usr/bin/env bash
# Runs libFuzzer targets built by a CAPPLAN_FUZZ build (tests/fuzz/README.md).
#
#   scripts/fuzz.sh [--build DIR] [--seconds N] [--runs N] [TARGET...]
#
# Each target runs alone, in turn, for N seconds (default 10) or N inputs,
# whichever ends first, starting from its seeds: the shipped files of its
# format, the hand-written seeds in tests/fuzz/seeds/<target>/ and every kept
# regression input in
# tests/fuzz/regressions/<target>/. New corpus entries stay in
# DIR/fuzz/corpus/<target>/ (reused by the next run); a crashing input is
# written to DIR/fuzz/artifacts/<target>/ and the script exits 1, telling
# where to keep it. Without TARGET, every target in tests/fuzz/targets.cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-sanitize"
seconds=10
runs=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  read -r -a targets <<<"$(tr '\n' ' ' <"$root/tests/fuzz/targets.cmake" \
    | sed 's/.*set(CAPPLAN_FUZZ_TARGETS\([^)]*\)).*/\1/')"
fi

# The shipped files each target starts from (globs relative to the root).
shipped() {
  case "$1" in
    scenario) echo "scenarios/*.json tests/sim/sweep/data/small_open_loop.json tests/sim/sweep/data/small_pd.json tests/sim/golden/*.json" ;;
    grid) echo "" ;;
    card) echo "models/cards/*.json tests/models/testdata/*.json" ;;
    profile) echo "calibrate/profiles/*.json" ;;
    measurements) echo "calibrate/measurements/public/*.json" ;;
    version_drift) echo "calibrate/measurements/aic-version-drift.json" ;;
    peer_predictions) echo "validation/peer/*.json" ;;
    intervals) echo "validation/intervals.json" ;;
    engine_run) echo "" ;;
    search_space) echo "scenarios/search/*.json tests/sim/sweep/data/small_space.json" ;;
    slo) echo "" ;;
    trace_azure_2023) echo "scenarios/traces/azure_2023_sample.csv" ;;
    trace_azure_2024) echo "scenarios/traces/azure_2024_sample.csv" ;;
    trace_mooncake) echo "scenarios/traces/mooncake_sample.jsonl" ;;
    trace_burstgpt) echo "scenarios/traces/burstgpt_sample.csv" ;;
    lengths) echo "scenarios/traces/lengths_sample.txt" ;;
    summary) echo "tests/report/data/*.json tests/report/data/pd/*.json tests/report/data/sweep/*.json" ;;
    *) echo "fuzz.sh: unknown target $1" >&2; return 1 ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz.sh: $bin not built (make fuzz builds it)" >&2
    exit 2
  fi
  corpus="$build/fuzz/corpus/$t"
  seeds="$build/fuzz/seeds/$t"
  artifacts="$build/fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  rm -rf "$seeds" && mkdir -p "$seeds"
  (cd "$root" && for f in $(shipped "$t"); do [[ -f "$f" ]] && cp "$f" "$seeds/"; done) || true
  for d in seeds regressions; do
    if [[ -d "$root/tests/fuzz/$d/$t" ]]; then
      find "$root/tests/fuzz/$d/$t" -type f ! -name README.md -exec cp {} "$seeds/" \;
    fi
  done
  limit=(-max_total_time="$seconds")
  [[ -n "$runs" ]] && limit+=(-runs="$runs")
  dict=()
  [[ -f "$root/tests/fuzz/dicts/$t.dict" ]] && dict=(-dict="$root/tests/fuzz/dicts/$t.dict")
  log="$build/fuzz/$t.log"
  echo "fuzz.sh: $t (${limit[*]})"
  # detect_leaks: a leak is a failure too. -timeout: one input taking 10 s
  # is a hang. -rss_limit_mb: a run growing past 2 GB is a memory bug.
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$bin" "${limit[@]}" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/fuzz.sh: $t /" || true
  else
    status=1
    tail -n 40 "$log" >&2
    echo "fuzz.sh: $t FAILED; the input is in $artifacts/ (log $log)." >&2
    echo "fuzz.sh: fix the bug, then keep the input as tests/fuzz/regressions/$t/<name>." >&2
  fi
done
exit $status
