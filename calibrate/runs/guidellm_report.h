// GuideLLM `guidellm benchmark --output-path benchmarks.json` reports: one
// GenerativeBenchmarksReport with a list of benchmarks, one per strategy.
//
// Shape read from vllm-project/guidellm at commit
// 03820eba155d34eb602244535cc2412c32af6f54:
// src/guidellm/benchmark/schemas/generative/report.py (report: args,
// benchmarks), .../generative/benchmark.py (benchmark: type_
// "generative_benchmark", config, scheduler_state, scheduler_metrics,
// metrics, requests), src/guidellm/benchmark/schemas/base.py (config:
// strategy, ...), src/guidellm/schemas/statistics.py (a distribution:
// mean, median, mode, variance, std_dev, min, max, count, total_sum,
// percentiles {p001 .. p50, p90, p95, p99, p999}; a StatusDistributionSummary
// holds one per status: successful, incomplete, errored, total), and
// .../generative/metrics.py at commit 06cef2910dc1517f863ce09ff118af07d463d055
// (metrics: request_totals, requests_per_second, request_concurrency,
// request_latency [s], prompt_token_count, output_token_count,
// time_to_first_token_ms, time_per_output_token_ms, inter_token_latency_ms,
// prompt_tokens_per_second, output_tokens_per_second, tokens_per_second).
// Strategies (src/guidellm/scheduler strategies): synchronous, concurrent
// (streams), throughput (max_concurrency), constant (rate), poisson (rate).
// The report records no GuideLLM version.
#ifndef CAPPLAN_CALIBRATE_RUNS_GUIDELLM_REPORT_H_
#define CAPPLAN_CALIBRATE_RUNS_GUIDELLM_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/runs/imported_run.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// One run per benchmark, successful requests' statistics; errors name
// `origin` and /benchmarks/N/...
Result<std::vector<ImportedRun>> ReadGuidellmReport(const nlohmann::json& doc,
                                                    const std::string& origin);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_GUIDELLM_REPORT_H_
