// `vllm bench serve --save-result` files: one JSON object per run.
//
// Shape read from vllm-project/vllm vllm/benchmarks/serve.py at commit
// 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1 (main_async's result_json and
// benchmark()'s result): date ("%Y%m%d-%H%M%S"), backend, label, model_id,
// tokenizer_id, num_prompts, request_rate (a number or "inf"), burstiness,
// max_concurrency (null without a cap), duration, completed, failed,
// total_input_tokens, total_output_tokens, request_throughput,
// output_throughput, total_token_throughput, {mean,median,std}_X_ms and
// p<P>_X_ms for X in ttft, tpot, itl, e2el (percentiles per
// --metric-percentiles, default 99), and with --save-detailed the
// per-request input_lens, output_lens (0 for a failed request), ttfts, itls.
// With --append-result each run's object is appended after a newline (JSON
// Lines; run_file.h reads them as one run per line). The file does not
// record vLLM's version.
#ifndef CAPPLAN_CALIBRATE_RUNS_VLLM_BENCH_RESULT_H_
#define CAPPLAN_CALIBRATE_RUNS_VLLM_BENCH_RESULT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "calibrate/runs/imported_run.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// Errors name `origin`, the JSON path and the file the key comes from.
Result<ImportedRun> ReadVllmBenchResult(const nlohmann::json& doc, const std::string& origin);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_VLLM_BENCH_RESULT_H_
