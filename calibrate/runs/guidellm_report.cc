#include "calibrate/runs/guidellm_report.h"

#include <cmath>
#include <limits>

#include "calibrate/runs/tool_json.h"
#include "common/json_util.h"

namespace capplan::calibrate::runs {

namespace {

const char kHint[] =
    "as GuideLLM writes benchmarks.json, src/guidellm/benchmark/schemas/generative/; give "
    "--format if the file is another tool's";

struct Dist {
  std::optional<double> mean, median, p90, p99;
};

// metrics.<key>.successful: the statistics over successful requests.
Status ReadDist(JsonObject& metrics, const char* key, Dist* d) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject by_status, metrics.Child(key, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, by_status.Child("successful", true));
  CAPPLAN_RETURN_IF_ERROR(GetOptional(s, "mean", &d->mean));
  CAPPLAN_RETURN_IF_ERROR(GetOptional(s, "median", &d->median));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, s.Child("percentiles"));
  if (s.Has("percentiles")) {
    CAPPLAN_RETURN_IF_ERROR(GetOptional(p, "p90", &d->p90));
    CAPPLAN_RETURN_IF_ERROR(GetOptional(p, "p99", &d->p99));
  }
  return Status::Ok();
}

Status AddLatency(JsonObject& metrics, const char* key, const std::string& ours, double scale,
                  ImportedRun* run) {
  Dist d;
  CAPPLAN_RETURN_IF_ERROR(ReadDist(metrics, key, &d));
  auto scaled = [&](const std::optional<double>& v) {
    return v ? std::optional<double>(*v * scale) : std::nullopt;
  };
  const std::string from = std::string(key) + ".successful.";
  AddMetric(run, "mean_" + ours + "_ms", scaled(d.mean), from + "mean");
  AddMetric(run, "median_" + ours + "_ms", scaled(d.median), from + "median");
  if (d.p90) AddMetric(run, "p90_" + ours + "_ms", scaled(d.p90), from + "percentiles.p90");
  if (d.p99) AddMetric(run, "p99_" + ours + "_ms", scaled(d.p99), from + "percentiles.p99");
  return Status::Ok();
}

// config.strategy -> arrivals; the label names the strategy as GuideLLM does.
Status ReadStrategy(JsonObject& bench, ImportedRun* run) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject config, bench.Child("config", true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, config.Child("strategy", true));
  std::string type;
  CAPPLAN_RETURN_IF_ERROR(s.Get("type_", &type, true));
  RunWorkload& w = run->workload;
  w.arrival_convention = "sglang";  // first request at t = 0, no rescaling
  if (type == "synchronous" || type == "concurrent") {
    int64_t streams = 1;
    if (type == "concurrent") {
      CAPPLAN_RETURN_IF_ERROR(s.Get("streams", &streams, true));
      CAPPLAN_RETURN_IF_ERROR(s.CheckRange("streams", static_cast<double>(streams), 1, 1e8));
    }
    w.max_concurrency = streams;
    run->label = type == "concurrent" ? "concurrent@" + std::to_string(streams) : "synchronous";
  } else if (type == "throughput") {
    std::optional<int64_t> conc;
    CAPPLAN_RETURN_IF_ERROR(s.Get("max_concurrency", &conc));
    if (conc)
      CAPPLAN_RETURN_IF_ERROR(s.CheckRange("max_concurrency", static_cast<double>(*conc), 1, 1e8));
    w.max_concurrency = conc;
    run->label = "throughput";
  } else if (type == "constant" || type == "poisson") {
    double rate = 0;
    CAPPLAN_RETURN_IF_ERROR(s.Get("rate", &rate, true));
    CAPPLAN_RETURN_IF_ERROR(s.CheckRange("rate", rate, 1e-9, 1e9));
    w.request_rate = rate;
    w.burstiness = type == "constant" ? std::numeric_limits<double>::infinity() : 1.0;
    char b[64];
    std::snprintf(b, sizeof(b), "%s@%g", type.c_str(), rate);
    run->label = b;
  } else {
    return s.CheckOneOf("type_", type,
                        {"synchronous", "concurrent", "throughput", "constant", "poisson"});
  }
  // Requests a closed loop runs with are exactly their lengths' means here.
  w.client = "lock_step";
  return Status::Ok();
}

Status ReadBenchmark(JsonObject& bench, ImportedRun* run) {
  CAPPLAN_RETURN_IF_ERROR(bench.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(ReadStrategy(bench, run));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject m, bench.Child("metrics", true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject totals, m.Child("request_totals", true));
  int64_t ok = 0, total = 0;
  CAPPLAN_RETURN_IF_ERROR(totals.Get("successful", &ok, true));
  CAPPLAN_RETURN_IF_ERROR(totals.CheckRange("successful", static_cast<double>(ok), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(totals.Get("total", &total));
  run->workload.num_requests = std::max(ok, total);
  CAPPLAN_RETURN_IF_ERROR(
      totals.CheckRange("total", static_cast<double>(run->workload.num_requests), 1, 1e8));
  if (total > ok) {
    run->notes.push_back(std::to_string(total - ok) +
                         " request(s) incomplete or errored; the metrics are over the " +
                         std::to_string(ok) + " successful");
  }
  Dist in, out;
  CAPPLAN_RETURN_IF_ERROR(ReadDist(m, "prompt_token_count", &in));
  CAPPLAN_RETURN_IF_ERROR(ReadDist(m, "output_token_count", &out));
  run->workload.mean_input_tokens = in.mean.value_or(0);
  run->workload.mean_output_tokens = out.mean.value_or(0);
  // A rate distribution's mean is GuideLLM's reported rate over the
  // measured window (what its console prints as req/s and tok/s).
  for (const auto& [key, ours] : {std::pair{"requests_per_second", "request_throughput"},
                                  std::pair{"prompt_tokens_per_second", "input_throughput"},
                                  std::pair{"output_tokens_per_second", "output_throughput"},
                                  std::pair{"tokens_per_second", "total_token_throughput"}}) {
    Dist d;
    CAPPLAN_RETURN_IF_ERROR(ReadDist(m, key, &d));
    AddMetric(run, ours, d.mean, std::string(key) + ".successful.mean");
  }
  CAPPLAN_RETURN_IF_ERROR(AddLatency(m, "time_to_first_token_ms", "ttft", 1, run));
  CAPPLAN_RETURN_IF_ERROR(AddLatency(m, "time_per_output_token_ms", "tpot", 1, run));
  CAPPLAN_RETURN_IF_ERROR(AddLatency(m, "inter_token_latency_ms", "itl", 1, run));
  return AddLatency(m, "request_latency", "e2el", 1000, run);  // seconds
}

Status ReadReport(JsonObject& root, std::vector<ImportedRun>* runs) {
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  const nlohmann::json* list = root.Raw("benchmarks");
  if (list == nullptr || !list->is_array() || list->empty()) {
    return root.Error("benchmarks", "must be a non-empty array of benchmarks");
  }
  std::string model;
  if (root.Has("args")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject args, root.Child("args"));
    if (args.json().contains("model") && args.json()["model"].is_string()) {
      model = args.json()["model"].get<std::string>();
    }
  }
  for (size_t i = 0; i < list->size(); ++i) {
    ImportedRun run;
    run.format = "guidellm";
    run.tool = "GuideLLM";
    run.tool_url = "https://github.com/vllm-project/guidellm";
    run.model_id = model;
    run.notes.push_back(
        "lengths: the successful requests' mean prompt and output tokens stand in for each "
        "request's");
    JsonObject bench((*list)[i], root.origin(), "/benchmarks/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(ReadBenchmark(bench, &run));
    for (const ImportedRun& r : *runs) {
      if (r.label == run.label) run.label += " #" + std::to_string(i + 1);
    }
    runs->push_back(std::move(run));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ImportedRun>> ReadGuidellmReport(const nlohmann::json& doc,
                                                    const std::string& origin) {
  std::vector<ImportedRun> runs;
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(WithHint(ReadReport(root, &runs), kHint));
  return runs;
}

}  // namespace capplan::calibrate::runs
