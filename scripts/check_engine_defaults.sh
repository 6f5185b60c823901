#!/usr/bin/env bash
# Serving-engine defaults (chunk size, page size, running-request caps,
# CUDA-graph batch sizes, memory fractions) live in models/engines/*.json
# only. Fails when library or CLI code initializes one of those knobs with a
# non-zero literal; zero means "take the engine profile's default".
set -euo pipefail
cd "$(dirname "$0")/.."
knobs='chunked_prefill(_tokens|_size)?|page_size|max_running_requests|cuda_graph_max_bs|max_num_seqs|max_num_batched_tokens|mem_fraction(_static)?|gpu_memory_utilization|utilization_default'
pattern="\\b(${knobs})\\s*=\\s*(0\\.[0-9]*[1-9]|[1-9])"
# The reference engine's kernels and self-tests pick their own page sizes;
# only its scenario reader (serve_bench) takes serving-engine defaults.
hits=$(grep -rnE "$pattern" --include='*.h' --include='*.cc' \
         common models sim calibrate report cli engine/serve_bench.h engine/serve_bench.cc \
         2>/dev/null || true)
if [ -n "$hits" ]; then
  echo "engine defaults written as literals outside models/engines/*.json:"
  echo "$hits"
  exit 1
fi
echo "check_engine_defaults: no engine default is a literal in code"
