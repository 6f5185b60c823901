#include "calibrate/runs/vllm_bench_result.h"

#include <cmath>

#include "calibrate/runs/tool_json.h"
#include "common/json_util.h"

namespace capplan::calibrate::runs {

namespace {

const char kHint[] =
    "as `vllm bench serve --save-result` writes it, vllm/benchmarks/serve.py; give --format if "
    "the file is another tool's";

// --save-detailed's per-request lengths, successful requests only (vLLM
// writes output length 0 for a failed one).
Status ReadWorkload(JsonObject& o, int64_t completed, ImportedRun* run) {
  RunWorkload& w = run->workload;
  CAPPLAN_RETURN_IF_ERROR(o.Get("num_prompts", &w.num_requests, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("num_prompts", static_cast<double>(w.num_requests), 1, 1e8));
  CAPPLAN_RETURN_IF_ERROR(GetRate(o, "request_rate", &w.request_rate));
  CAPPLAN_RETURN_IF_ERROR(GetOptional(o, "burstiness", &w.burstiness));
  std::optional<int64_t> conc;
  CAPPLAN_RETURN_IF_ERROR(o.Get("max_concurrency", &conc));
  if (conc)
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("max_concurrency", static_cast<double>(*conc), 1, 1e8));
  w.max_concurrency = conc;
  w.arrival_convention = "vllm";
  w.client = "vllm_bench_serve";
  CAPPLAN_RETURN_IF_ERROR(ReadRequestLengths(o, run));
  if (w.input_lens.empty()) {
    run->notes.push_back(
        "lengths: the run's mean input and output tokens stand in for each "
        "request's (--save-detailed writes them per request)");
  }
  double in = 0, out = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get("total_input_tokens", &in, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("total_output_tokens", &out, true));
  if (completed > 0) {
    w.mean_input_tokens = in / static_cast<double>(completed);
    w.mean_output_tokens = out / static_cast<double>(completed);
  }
  return Status::Ok();
}

Status ReadRun(JsonObject& o, ImportedRun* run) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string date, label;
  CAPPLAN_RETURN_IF_ERROR(o.Get("date", &date));
  run->date = IsoDate(date);
  CAPPLAN_RETURN_IF_ERROR(o.Get("label", &label));
  run->label = label.empty() ? "vllm bench serve" : label;
  CAPPLAN_RETURN_IF_ERROR(o.Get("model_id", &run->model_id));
  int64_t completed = 0, failed = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get("completed", &completed, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("completed", static_cast<double>(completed), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(o.Get("failed", &failed));
  if (failed > 0) {
    run->notes.push_back(std::to_string(failed) + " request(s) failed; the metrics are over the " +
                         std::to_string(completed) + " completed");
  }
  CAPPLAN_RETURN_IF_ERROR(ReadWorkload(o, completed, run));
  for (const char* key : {"request_throughput", "output_throughput", "total_token_throughput"}) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(GetOptional(o, key, &v));
    if (!v) return o.Error(key, "required field is missing");
    AddMetric(run, key, v, key);
  }
  for (const auto& [file, ours] : {std::pair{"ttft", "ttft"}, std::pair{"tpot", "tpot"},
                                   std::pair{"itl", "itl"}, std::pair{"e2el", "e2el"}}) {
    CAPPLAN_RETURN_IF_ERROR(AddLatencyMetrics(o, file, ours, run));
  }
  return Status::Ok();
}

}  // namespace

Result<ImportedRun> ReadVllmBenchResult(const nlohmann::json& doc, const std::string& origin) {
  ImportedRun run;
  run.format = "vllm";
  run.tool = "vllm bench serve";
  run.tool_url = "https://github.com/vllm-project/vllm";
  JsonObject o(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(WithHint(ReadRun(o, &run), kHint));
  return run;
}

}  // namespace capplan::calibrate::runs
