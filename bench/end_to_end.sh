#!/usr/bin/env bash
# Times whole `capplan simulate` commands, as a user runs them, with and
# without --out (summary.json and requests.csv written), and checks the two
# targets: the 100k-request trace replay at most 0.27 s and 1M closed-loop
# requests at most 1 s with --out, --out adding at most 25%.
#   * trace-100k: Llama-3.1-8B on 1xH200 with vLLM replaying a 100,000-row
#     Azure 2023 trace (Poisson 6 req/s, 1024 in / 256 out; the trace
#     bench/sim_bench's BM_LlamaTrace_100k replays).
#   * closed-1M: Kimi K2.6 on 8xH200 SGLang (scenarios/kimi-k2.6-kv-fp8.json),
#     1,000,000 requests of 8K in / 1K out, closed loop 64.
#   * vidur-100k: Vidur's own workload, the same trace with vLLM's chunked
#     prefill at 512 tokens and at most 128 running (bench/sim_bench's
#     BM_VidurTrace_100k). Target 0.27 s with --out.
#   * prefill-1M: closed-1M serving both phases (each prompt prefilled in
#     the pool; bench/sim_bench's BM_KimiPrefill_1M). Target 1 s.
# Each figure is the median of RUNS runs (default 5), wall time and CPU time
# (user + system: on a machine shared with other work, the steadier one). With a second
# binary (an older build) both are timed in the same run, alternating, and
# their requests.csv compared byte for byte, summary.json number by number
# (but the simulator's own counters; floats within 1e-9).
# Usage: bench/end_to_end.sh CAPPLAN [CAPPLAN_BEFORE]   (RUNS=N to change)
set -euo pipefail
after=$1 before=${2:-}
runs=${RUNS:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/capplan-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'EOF'
import json, random, sys
work = sys.argv[1]
rng = random.Random(42)
t = 0.0
with open(f"{work}/trace.csv", "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    for _ in range(100_000):
        t += rng.expovariate(6.0)
        x = int(t * 1e7)
        s, frac = divmod(x, 10**7)
        f.write("2023-11-16 %02d:%02d:%02d.%07d,1024,256\n" % (s // 3600 % 24, s // 60 % 60, s % 60, frac))
json.dump({"name": "llama-8b-trace", "model": "llama-3.1-8b", "hardware": "h200-sxm",
           "deployment": {"engine": "vllm", "gpus": 1, "tp": 1},
           "workload": {"kind": "trace", "format": "azure_2023", "path": "trace.csv"}},
          open(f"{work}/trace-100k.json", "w"), indent=1)
json.dump({"name": "vidur-llama-8b", "model": "llama-3.1-8b", "hardware": "h200-sxm",
           "deployment": {"engine": "vllm", "gpus": 1, "tp": 1, "chunked_prefill_tokens": 512,
                          "max_running_requests": 128},
           "workload": {"kind": "trace", "format": "azure_2023", "path": "trace.csv"}},
          open(f"{work}/vidur-100k.json", "w"), indent=1)
EOF

declare -A args
args[trace-100k]="$work/trace-100k.json"
args[closed-1M]="$repo/scenarios/kimi-k2.6-kv-fp8.json --set workload.num_requests=1000000 \
--set workload.warmup_requests=0 --set workload.input_tokens.value=8192 \
--set workload.output_tokens.value=1024"
args[vidur-100k]="$work/vidur-100k.json"
args[prefill-1M]="${args[closed-1M]} --set deployment.phase=both"
cases="trace-100k closed-1M vidur-100k prefill-1M"

# The median of column $2 (1: wall seconds, 2: user + system CPU seconds)
# of the runs in file $1.
median() {
  awk -v c="$2" '{print $c}' "$1" | sort -g |
    awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
# Runs a command, appending "wall cpu" seconds to file $1.
timed() {
  local log=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null
  awk '{print $1, $2 + $3}' "$work/time" >>"$log"
}

declare -A result
for case in $cases; do
  for bin in ${before:+before} after; do
    : >"$work/$case.$bin.plain" && : >"$work/$case.$bin.out"
  done
  for ((i = 0; i < runs; i++)); do
    for bin in ${before:+before} after; do
      exe=$after; [ "$bin" = before ] && exe=$before
      rm -rf "$work/out.$bin"
      # shellcheck disable=SC2086
      timed "$work/$case.$bin.plain" "$exe" simulate ${args[$case]} --row
      # shellcheck disable=SC2086
      timed "$work/$case.$bin.out" "$exe" simulate ${args[$case]} --row --out "$work/out.$bin"
    done
  done
  for bin in ${before:+before} after; do
    for kind in plain out; do
      result[$case.$bin.$kind]="$(median "$work/$case.$bin.$kind" 1) $(median "$work/$case.$bin.$kind" 2)"
    done
  done
  if [ -n "$before" ]; then
    cmp -s "$work/out.before/requests.csv" "$work/out.after/requests.csv" ||
      { echo "end_to_end: $case: requests.csv differs between the two binaries" >&2; exit 1; }
    # Each binary names the profile file in its own source folder; the
    # simulator's own counters (fast-forward, step-cost memo) may differ, and
    # busy-time shares may differ in the order of their floating-point sums.
    python3 - "$work/out.before/summary.json" "$work/out.after/summary.json" <<'PY' ||
import json, sys
own = {"path", "fast_forward_iterations", "fast_forward_completions",
       "step_cost_memo_hits", "step_cost_memo_misses"}
def same(a, b, at):
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - own
        return all(k in a and k in b and same(a[k], b[k], at + "/" + k) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, at) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        ok = abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    else:
        ok = a == b
    if not ok:
        print(f"{at}: {a} vs {b}", file=sys.stderr)
    return ok
sys.exit(0 if same(*(json.load(open(f)) for f in sys.argv[1:3]), "") else 1)
PY
      { echo "end_to_end: $case: summary.json differs between the two binaries" >&2; exit 1; }
    echo "$case: requests.csv ($(wc -c <"$work/out.after/requests.csv") bytes) identical; summary.json too, but for the profile's path, the simulator's counters and float sums within 1e-9"
  fi
done

printf '%-11s %-7s %9s %9s %8s | %9s %9s %8s\n' case binary "wall s" "--out" "+%" \
  "cpu s" "--out" "+%"
pct() { awk -v o="$1" -v p="$2" 'BEGIN {print (o / p - 1) * 100}'; }
for case in $cases; do
  for bin in ${before:+before} after; do
    read -r pw pc <<<"${result[$case.$bin.plain]}"
    read -r ow oc <<<"${result[$case.$bin.out]}"
    printf '%-11s %-7s %9.3f %9.3f %7.1f%% | %9.3f %9.3f %7.1f%%\n' "$case" "$bin" "$pw" "$ow" \
      "$(pct "$ow" "$pw")" "$pc" "$oc" "$(pct "$oc" "$pc")"
  done
done
echo "targets (with --out): trace-100k and vidur-100k <= 0.27 s, closed-1M and prefill-1M <= 1 s, --out adds <= 25%"
echo "(median of $runs runs each; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
