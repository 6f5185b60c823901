#include "calibrate/runs/sglang_bench_result.h"

#include <cmath>

#include "calibrate/runs/tool_json.h"
#include "common/json_util.h"

namespace capplan::calibrate::runs {

namespace {

const char kHint[] =
    "as `python -m sglang.bench_serving --output-file` writes each line, "
    "python/sglang/bench_serving.py; give --format if the file is another tool's";

// The random dataset's lengths when the run used it (dataset_name random*).
Status ReadRandomDataset(JsonObject& o, RunWorkload* w) {
  std::string dataset;
  CAPPLAN_RETURN_IF_ERROR(o.Get("dataset_name", &dataset));
  std::optional<int64_t> in, out;
  std::optional<double> r;
  CAPPLAN_RETURN_IF_ERROR(o.Get("random_input_len", &in));
  CAPPLAN_RETURN_IF_ERROR(o.Get("random_output_len", &out));
  CAPPLAN_RETURN_IF_ERROR(GetOptional(o, "random_range_ratio", &r));
  if (dataset.rfind("random", 0) != 0 || !in || !out) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("random_input_len", static_cast<double>(*in), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("random_output_len", static_cast<double>(*out), 1, 1e9));
  if (r) CAPPLAN_RETURN_IF_ERROR(o.CheckRange("random_range_ratio", *r, 0, 1));
  w->random_input_len = in;
  w->random_output_len = out;
  w->random_range_ratio = r.value_or(0.0);
  return Status::Ok();
}

Status ReadWorkload(JsonObject& o, int64_t completed, ImportedRun* run) {
  RunWorkload& w = run->workload;
  std::optional<int64_t> prompts, conc;
  CAPPLAN_RETURN_IF_ERROR(o.Get("num_prompts", &prompts));
  w.num_requests = prompts.value_or(completed);
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("num_prompts", static_cast<double>(w.num_requests), 1, 1e8));
  if (!prompts) {
    run->notes.push_back("the line does not record --num-prompts; completed (" +
                         std::to_string(completed) + ") stands for it");
  }
  CAPPLAN_RETURN_IF_ERROR(GetRate(o, "request_rate", &w.request_rate));
  CAPPLAN_RETURN_IF_ERROR(o.Get("max_concurrency", &conc));
  if (conc)
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("max_concurrency", static_cast<double>(*conc), 1, 1e8));
  w.max_concurrency = conc;
  w.arrival_convention = "sglang";
  w.client = "sglang_bench_serving";
  CAPPLAN_RETURN_IF_ERROR(ReadRequestLengths(o, run));
  CAPPLAN_RETURN_IF_ERROR(ReadRandomDataset(o, &w));
  if (w.input_lens.empty() && !w.random_input_len) {
    run->notes.push_back(
        "lengths: the run's mean input and output tokens stand in for each "
        "request's (--output-details writes them per request)");
  }
  double in = 0, out = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get("total_input_tokens", &in, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("total_output_tokens", &out, true));
  w.mean_input_tokens = in / static_cast<double>(completed);
  w.mean_output_tokens = out / static_cast<double>(completed);
  return Status::Ok();
}

Status ReadRun(JsonObject& o, ImportedRun* run) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  int64_t completed = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get("completed", &completed, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("completed", static_cast<double>(completed), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(o.Get("model_id", &run->model_id));
  CAPPLAN_RETURN_IF_ERROR(ReadWorkload(o, completed, run));
  for (const char* key : {"request_throughput", "input_throughput", "output_throughput"}) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(GetOptional(o, key, &v));
    if (!v) return o.Error(key, "required field is missing");
    AddMetric(run, key, v, key);
  }
  std::optional<double> total;
  CAPPLAN_RETURN_IF_ERROR(GetOptional(o, "total_throughput", &total));
  if (total) AddMetric(run, "total_token_throughput", total, "total_throughput");
  for (const auto& [file, ours] : {std::pair{"ttft", "ttft"}, std::pair{"tpot", "tpot"},
                                   std::pair{"itl", "itl"}, std::pair{"e2e_latency", "e2el"}}) {
    CAPPLAN_RETURN_IF_ERROR(AddLatencyMetrics(o, file, ours, run));
  }
  return Status::Ok();
}

std::string RunLabel(const ImportedRun& run, int index) {
  const RunWorkload& w = run.workload;
  std::string label = "run " + std::to_string(index);
  if (w.max_concurrency) label += " c=" + std::to_string(*w.max_concurrency);
  if (w.request_rate) {
    char b[48];
    std::snprintf(b, sizeof(b), " rate=%g", *w.request_rate);
    label += b;
  }
  return label;
}

}  // namespace

Result<std::vector<ImportedRun>> ReadSglangBenchLines(std::string_view text,
                                                      const std::string& origin) {
  std::vector<ImportedRun> runs;
  size_t start = 0;
  int line_no = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = origin + ":" + std::to_string(line_no);
    auto doc = ParseToolJson(line, where);
    if (!doc.ok()) return WithHint(doc.status(), kHint);
    ImportedRun run;
    run.format = "sglang";
    run.tool = "sglang bench_serving";
    run.tool_url = "https://github.com/sgl-project/sglang";
    JsonObject o(*doc, where, "");
    CAPPLAN_RETURN_IF_ERROR(WithHint(ReadRun(o, &run), kHint));
    run.label = RunLabel(run, static_cast<int>(runs.size()) + 1);
    runs.push_back(std::move(run));
  }
  if (runs.empty()) {
    return Status::Usage(origin + ": no run in the file; expected one JSON object per line (" +
                         kHint + ")");
  }
  return runs;
}

}  // namespace capplan::calibrate::runs
