// A benchmark result file of any supported tool: which tool wrote it
// (given, or told by its keys) and its runs.
#ifndef CAPPLAN_CALIBRATE_RUNS_RUN_FILE_H_
#define CAPPLAN_CALIBRATE_RUNS_RUN_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "calibrate/runs/imported_run.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// The formats by name: "vllm" (vllm_bench_result.h), "sglang"
// (sglang_bench_result.h), "guidellm" (guidellm_report.h), "inferencex"
// (inferencex_result.h).
const std::vector<std::string>& RunFormats();

// Reads `text` (the file `origin`) as `format`, or, with format "" or
// "auto", as the format its keys say: an object with `benchmarks` is
// GuideLLM's, with `tput_per_gpu` InferenceX's, with
// `total_token_throughput` vLLM's, and an object or lines with
// `mean_e2e_latency_ms` SGLang's. A file none of them matches is a one-line
// error naming the keys expected.
Result<std::vector<ImportedRun>> ReadRunText(std::string_view text, const std::string& origin,
                                             const std::string& format);

// ReadRunText on a file (common/atomic_file.h ReadFile).
Result<std::vector<ImportedRun>> ReadRunFile(const std::string& path, const std::string& format);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_RUN_FILE_H_
