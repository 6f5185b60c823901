// One benchmark run as a result file recorded it, in capplan's terms: the
// record every reader in this folder returns (vllm_bench_result.h,
// sglang_bench_result.h, guidellm_report.h, inferencex_result.h) and the
// case builder (case_builder.h) turns into a validation case row.
#ifndef CAPPLAN_CALIBRATE_RUNS_IMPORTED_RUN_H_
#define CAPPLAN_CALIBRATE_RUNS_IMPORTED_RUN_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace capplan::calibrate::runs {

// How the benchmark client sent its requests, and with how many tokens.
struct RunWorkload {
  int64_t num_requests = 0;
  // The client's --max-concurrency; absent: no cap.
  std::optional<int64_t> max_concurrency;
  // Mean arrival rate in req/s; absent: every request at once (the clients'
  // default --request-rate inf).
  std::optional<double> request_rate;
  // Gamma shape of the gaps (vLLM's --burstiness); +infinity: evenly spaced.
  std::optional<double> burstiness;
  // sim/workload's arrival_convention ("vllm" or "sglang") and closed-loop
  // client (vllm_bench_serve, sglang_bench_serving, inferencex, lock_step).
  std::string arrival_convention, client;
  // Per request, when the file lists them (successful requests only).
  std::vector<int64_t> input_lens, output_lens;
  // The client's random dataset when the file records it: each length is
  // drawn around `random_*_len` with `random_range_ratio` (sglang convention).
  std::optional<int64_t> random_input_len, random_output_len;
  std::optional<double> random_range_ratio;
  // Otherwise the run's means (tokens per completed request).
  double mean_input_tokens = 0, mean_output_tokens = 0;
};

struct ImportedRun {
  std::string format;        // run_file.h's name: "vllm", "sglang", "guidellm", "inferencex"
  std::string tool;          // "vllm bench serve", ...
  std::string tool_url;      // the tool's public repository
  std::string tool_version;  // "" when the file does not record it
  std::string label;         // the run within its file ("run 1", "concurrent@16")
  std::string date;          // YYYY-MM-DD, or "" when the file does not record it
  std::string model_id;      // as the tool recorded it (a Hugging Face id, a path)
  RunWorkload workload;
  // capplan metric key (schema/run_summary.h) -> measured value, every value
  // finite and > 0; a metric the file gives as 0 or not at all is left out
  // and named in `notes`.
  std::vector<std::pair<std::string, double>> measured;
  std::vector<std::string> notes;  // what was left out or assumed, one sentence each
  // Deployment fields the file itself records (InferenceX: tp, ep,
  // dp_attention, engine); flags and a scenario take precedence.
  nlohmann::json deployment = nlohmann::json::object();
};

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_IMPORTED_RUN_H_
