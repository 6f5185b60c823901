// SGLang `python -m sglang.bench_serving --output-file F` files: JSON
// Lines, one object appended per run.
//
// Shape read from sgl-project/sglang python/sglang/bench_serving.py at
// commit 0033168f0f58b2bc05aa0273bd475d9c01bafb1c (benchmark()'s `result`):
// backend, dataset_name, request_rate (Python's json writes the default
// float('inf') as the bare token Infinity), max_concurrency (null without a
// cap), sharegpt_output_len, random_input_len, random_output_len,
// random_range_ratio, duration, completed, total_input_tokens,
// total_output_tokens, total_output_tokens_retokenized, request_throughput,
// input_throughput, output_throughput, {mean,median,std,p99}_e2e_latency_ms,
// {mean,median,std,p99}_ttft_ms, {mean,median,std,p99}_tpot_ms,
// {mean,median,std,p95,p99}_itl_ms, concurrency, accept_length; with
// --output-details also input_lens, output_lens, ttfts, itls. Later
// versions add total_throughput and p90 statistics, read when present. The
// line records neither SGLang's version nor the number of prompts sent
// (`completed` stands for it).
#ifndef CAPPLAN_CALIBRATE_RUNS_SGLANG_BENCH_RESULT_H_
#define CAPPLAN_CALIBRATE_RUNS_SGLANG_BENCH_RESULT_H_

#include <string>
#include <string_view>
#include <vector>

#include "calibrate/runs/imported_run.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// Every non-blank line is one run; errors name `origin`:LINE and the key.
Result<std::vector<ImportedRun>> ReadSglangBenchLines(std::string_view text,
                                                      const std::string& origin);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_SGLANG_BENCH_RESULT_H_
