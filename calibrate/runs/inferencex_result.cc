#include "calibrate/runs/inferencex_result.h"

#include "calibrate/runs/tool_json.h"
#include "common/json_util.h"
#include "schema/run_summary.h"

namespace capplan::calibrate::runs {

namespace {

const char kHint[] =
    "as InferenceX's utils/process_result.py writes agg_*.json; give --format if the file is "
    "another tool's";

// The file's deployment fields, as scenario deployment keys.
Status ReadDeployment(JsonObject& o, ImportedRun* run) {
  bool multinode = false;
  if (o.Has("is_multinode") && o.json()["is_multinode"].is_boolean()) {
    multinode = o.json()["is_multinode"].get<bool>();
  }
  o.Touch("is_multinode");
  if (multinode) {
    return o.Error("is_multinode",
                   "a multi-node (disaggregated) result is not imported; "
                   "give a single-node one");
  }
  std::optional<int64_t> tp, ep;
  CAPPLAN_RETURN_IF_ERROR(o.Get("tp", &tp));
  CAPPLAN_RETURN_IF_ERROR(o.Get("ep", &ep));
  if (tp) {
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("tp", static_cast<double>(*tp), 1, 1024));
    run->deployment["tp"] = *tp;
  }
  if (ep) {
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("ep", static_cast<double>(*ep), 1, 1024));
    run->deployment["ep"] = *ep;
  }
  const nlohmann::json* dp = o.Raw("dp_attention");
  if (dp != nullptr && dp->is_string()) run->deployment["dp_attention"] = *dp == "true";
  if (dp != nullptr && dp->is_boolean()) run->deployment["dp_attention"] = *dp;
  std::string framework;
  CAPPLAN_RETURN_IF_ERROR(o.Get("framework", &framework));
  if (framework == "vllm" || framework == "sglang") run->deployment["engine"] = framework;
  std::string hw, precision, image;
  CAPPLAN_RETURN_IF_ERROR(o.Get("hw", &hw));
  CAPPLAN_RETURN_IF_ERROR(o.Get("precision", &precision));
  CAPPLAN_RETURN_IF_ERROR(o.Get("image", &image));
  run->tool_version = image;
  run->notes.push_back("InferenceX run: hw '" + EchoValue(hw) + "', framework '" +
                       EchoValue(framework) + "', precision '" + EchoValue(precision) + "'");
  return Status::Ok();
}

Status ReadRun(JsonObject& o, ImportedRun* run) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(ReadDeployment(o, run));
  CAPPLAN_RETURN_IF_ERROR(o.Get("model", &run->model_id));
  int64_t conc = 0, isl = 0, osl = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get("conc", &conc, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("conc", static_cast<double>(conc), 1, 1e6));
  CAPPLAN_RETURN_IF_ERROR(o.Get("isl", &isl, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("isl", static_cast<double>(isl), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(o.Get("osl", &osl, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("osl", static_cast<double>(osl), 1, 1e9));
  RunWorkload& w = run->workload;
  w.max_concurrency = conc;
  w.num_requests = conc * kInferencexPromptsPerConcurrency;
  w.client = "inferencex";
  w.arrival_convention = "vllm";
  w.random_input_len = isl;
  w.random_output_len = osl;
  run->notes.push_back(
      "num_requests = 10 x conc and the client's range ratio are the recipes' "
      "(benchmarks/single_node/*.sh); the file records neither");
  run->label = "conc=" + std::to_string(conc);
  for (const auto& [key, ours] : {std::pair{"tput_per_gpu", "total_token_throughput_per_gpu"},
                                  std::pair{"output_tput_per_gpu", "output_throughput_per_gpu"}}) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(GetOptional(o, key, &v));
    if (!v) return o.Error(key, "required field is missing");
    AddMetric(run, ours, v, key);
  }
  run->notes.push_back(
      "per-GPU throughputs are InferenceX's (divided by tp), capplan's divide "
      "by every GPU of the deployment: the same when gpus = tp");
  for (const char* what : {"ttft", "tpot", "itl", "e2el"}) {
    for (const std::string& stat : schema::StatNames()) {
      const std::string key = stat + "_" + what;  // seconds
      std::optional<double> v;
      CAPPLAN_RETURN_IF_ERROR(GetOptional(o, key, &v));
      if (v) *v *= 1000;
      if (stat == "mean" || (v && *v > 0)) {
        AddMetric(run, key + "_ms", v, key);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ImportedRun> ReadInferencexResult(const nlohmann::json& doc, const std::string& origin) {
  ImportedRun run;
  run.format = "inferencex";
  run.tool = "InferenceX";
  run.tool_url = "https://github.com/SemiAnalysisAI/InferenceX";
  JsonObject o(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(WithHint(ReadRun(o, &run), kHint));
  return run;
}

}  // namespace capplan::calibrate::runs
