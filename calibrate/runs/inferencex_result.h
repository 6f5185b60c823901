// InferenceX result files: the aggregated JSON its CI writes per run
// (agg_<RESULT_FILENAME>.json), made by utils/process_result.py from the
// client's --save-result file.
//
// Shape read from SemiAnalysisAI/InferenceX utils/process_result.py at
// commit 77f3e680728b4026bb0b9e05dca7ba6cb5502362: hw, conc, image, model,
// infmax_model_prefix, framework, precision, spec_decoding, disagg, isl,
// osl, is_multinode, and single-node tp, ep, dp_attention ("true"/"false"),
// tput_per_gpu (total_token_throughput / tp), output_tput_per_gpu,
// input_tput_per_gpu, then every `*_ms` key of the client's result in
// seconds without its `_ms` (mean_ttft, median_ttft, p99_ttft, std_ttft,
// ... for ttft, tpot, itl, e2el) and `*intvty` (1000 / tpot). The client
// runs `--num-prompts $((CONC * 10)) --max-concurrency $CONC` with
// `--random-range-ratio $RANDOM_RANGE_RATIO` (benchmarks/single_node/*.sh,
// benchmarks/benchmark_lib.sh), which the file does not record.
#ifndef CAPPLAN_CALIBRATE_RUNS_INFERENCEX_RESULT_H_
#define CAPPLAN_CALIBRATE_RUNS_INFERENCEX_RESULT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "calibrate/runs/imported_run.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// The recipes' prompts per unit of concurrency (--num-prompts CONC * 10).
inline constexpr int64_t kInferencexPromptsPerConcurrency = 10;

// Single-node results only: a multi-node (disaggregated) one is an error
// naming is_multinode.
Result<ImportedRun> ReadInferencexResult(const nlohmann::json& doc, const std::string& origin);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_INFERENCEX_RESULT_H_
