#include "calibrate/runs/case_builder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "calibrate/public_validation.h"

namespace capplan::calibrate::runs {

namespace {

// A whole token count in [1, 1e9] (the simulator's kMaxRequestTokens; a
// mean outside it is clamped and the scenario reader sees a valid length).
nlohmann::json Fixed(double mean) {
  const double v = std::isfinite(mean) ? std::clamp(mean, 1.0, 1e9) : 1.0;
  return {{"dist", "fixed"}, {"value", std::llround(v)}};
}

nlohmann::json Empirical(const std::vector<int64_t>& values) {
  return {{"dist", "empirical"}, {"values", values}};
}

// A closed loop's requests are issued by the client the run used; its
// lengths decide which client stands for it (sim/workload/clients.h).
void SetLengths(const RunWorkload& w, nlohmann::json* wl, std::string* client) {
  *client = "lock_step";  // means and listed lengths are used exactly
  if (!w.input_lens.empty()) {
    (*wl)["input_tokens"] = Empirical(w.input_lens);
    (*wl)["output_tokens"] = Empirical(w.output_lens);
  } else if (w.random_input_len && w.random_output_len && w.client == "inferencex") {
    // InferenceX's client draws uniform [int(L r), L] around a fixed L.
    (*wl)["input_tokens"] = Fixed(static_cast<double>(*w.random_input_len));
    (*wl)["output_tokens"] = Fixed(static_cast<double>(*w.random_output_len));
    *client = w.client;
  } else if (w.random_input_len && w.random_output_len) {
    for (const auto& [key, len] : {std::pair{"input_tokens", *w.random_input_len},
                                   std::pair{"output_tokens", *w.random_output_len}}) {
      (*wl)[key] = {{"dist", "uniform"},
                    {"value", len},
                    {"range_ratio", w.random_range_ratio.value_or(0.0)},
                    {"convention", "sglang"}};
    }
  } else {
    (*wl)["input_tokens"] = Fixed(w.mean_input_tokens);
    (*wl)["output_tokens"] = Fixed(w.mean_output_tokens);
  }
}

// A tiny run for a row that checks only the KV pool, which does not depend
// on the workload.
nlohmann::json CapacityWorkload() {
  return {{"kind", "closed_loop"},
          {"concurrency", 1},
          {"num_requests", 1},
          {"client", "lock_step"},
          {"input_tokens", Fixed(16)},
          {"output_tokens", Fixed(2)},
          {"seed", 1}};
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

Result<nlohmann::json> RunRow(const ImportedRun& run, bool set_workload, const std::string& file) {
  nlohmann::json row;
  row["label"] = run.label;
  const std::vector<std::string>& allowed = ValidationCaseMetrics();
  nlohmann::json measured = nlohmann::json::object();
  for (const auto& [key, v] : run.measured) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Status::Internal("import: metric '" + key + "' is not one a validation case compares");
    }
    measured[key] = v;
  }
  if (measured.empty()) {
    return Status::Usage(file + ": run '" + EchoValue(run.label) +
                         "' has no metric > 0 to compare (" + Join(run.notes, "; ") + ")");
  }
  row["measured"] = measured;
  if (set_workload) row["set"] = {{"workload", WorkloadJson(run.workload)}};
  if (!run.notes.empty()) row["note"] = Join(run.notes, "; ");
  return row;
}

// The scenario's deployment object (an empty one when it has none or it is
// not an object: the scenario reader reports that when the case runs).
nlohmann::json Deployment(const nlohmann::json& scenario) {
  if (scenario.is_object() && scenario.contains("deployment") &&
      scenario["deployment"].is_object()) {
    return scenario["deployment"];
  }
  return nlohmann::json::object();
}

nlohmann::json Field(const nlohmann::json& o, const char* key) {
  return o.is_object() && o.contains(key) ? o[key] : nlohmann::json();
}

// `capplan capacity` for the scenario's deployment, which prints the
// simulator's KV pool term by term (--explain: each term's rule and source).
std::string CapacityCommand(const nlohmann::json& scenario) {
  const nlohmann::json d = Deployment(scenario);
  std::string cmd = "capplan capacity";
  auto add = [&](const char* flag, const nlohmann::json& v) {
    if (v.is_string()) cmd += std::string(" ") + flag + " " + v.get<std::string>();
    if (v.is_number()) cmd += std::string(" ") + flag + " " + v.dump();
  };
  add("--model", Field(scenario, "model"));
  add("--hardware", Field(scenario, "hardware"));
  for (const auto& [key, flag] :
       {std::pair{"gpus", "--gpus"}, std::pair{"tp", "--tp"}, std::pair{"ep", "--ep"},
        std::pair{"engine", "--engine"}, std::pair{"engine_version", "--engine-version"},
        std::pair{"weights", "--weights"}, std::pair{"kv_cache", "--kv"},
        std::pair{"mem_fraction_static", "--mem-fraction"},
        std::pair{"page_size", "--page-size"}}) {
    add(flag, Field(d, key));
  }
  if (Field(d, "dp_attention") == true) cmd += " --dp-attention";
  return cmd + " --explain";
}

// The engine's KV pool from its start-up line, against the simulator's.
std::optional<nlohmann::json> CapacityRow(const CaseInputs& in, const nlohmann::json& scenario) {
  if (!in.log) return std::nullopt;
  std::optional<int64_t> tokens = in.log->kv_tokens;
  std::string note = "the engine's start-up line in " + in.log_file + ": '" + in.log->kv_line + "'";
  const nlohmann::json d = Deployment(scenario);
  const nlohmann::json page = Field(d, "page_size");
  if (!tokens && in.log->gpu_blocks && page.is_number_integer() && page.get<int64_t>() >= 1 &&
      page.get<int64_t>() <= 4096 && *in.log->gpu_blocks <= int64_t{1} << 40) {
    tokens = *in.log->gpu_blocks * page.get<int64_t>();
    note = "the engine's start-up '# GPU blocks: " + std::to_string(*in.log->gpu_blocks) + "' in " +
           in.log_file + " x the deployment's page_size";
  }
  if (!tokens || *tokens <= 0) return std::nullopt;
  if (Field(d, "dp_attention") == true) {
    note += "; with DP attention SGLang's line counts one attention rank's pool";
  }
  note += "; capplan's pool term by term: " + CapacityCommand(scenario);
  return nlohmann::json{{"label", "engine KV pool (server log)"},
                        {"set", {{"workload", CapacityWorkload()}}},
                        {"measured", {{"kv_capacity_tokens", *tokens}}},
                        {"note", note}};
}

nlohmann::json ImportBlock(const CaseInputs& in) {
  const ImportedRun& first = in.runs.front();
  nlohmann::json imp = {
      {"file", in.run_file},
      {"format", first.format},
      {"tool", first.tool},
      {"tool_version", first.tool_version.empty() ? "not recorded" : first.tool_version},
      {"model_id", first.model_id}};
  if (in.log) {
    imp["server_log"] = ServerLogToJson(*in.log);
    imp["server_log"]["file"] = in.log_file;
  }
  if (in.scrape) {
    imp["metrics_scrape"] = MetricsScrapeToJson(*in.scrape);
    imp["metrics_scrape"]["file"] = in.scrape_file;
  }
  return imp;
}

}  // namespace

nlohmann::json WorkloadJson(const RunWorkload& w) {
  nlohmann::json wl;
  std::string client;
  SetLengths(w, &wl, &client);
  wl["num_requests"] = w.num_requests;
  wl["seed"] = 1;
  if (!w.request_rate && w.max_concurrency) {
    wl["kind"] = "closed_loop";
    wl["concurrency"] = *w.max_concurrency;
    wl["client"] = client;
    return wl;
  }
  wl["kind"] = "open_loop";
  if (w.request_rate) {
    wl["request_rate"] = *w.request_rate;
  } else {
    wl["request_rate"] = "inf";
  }
  if (w.burstiness && w.request_rate) {
    if (std::isinf(*w.burstiness)) {
      wl["burstiness"] = "inf";
    } else if (*w.burstiness > 0) {
      wl["burstiness"] = *w.burstiness;
    }
  }
  if (!w.arrival_convention.empty()) wl["arrival_convention"] = w.arrival_convention;
  if (w.max_concurrency) wl["max_concurrency"] = *w.max_concurrency;
  return wl;
}

Result<nlohmann::json> ScenarioFromFlags(const DeploymentFlags& f, const ImportedRun& first) {
  const nlohmann::json& hint = first.deployment;
  auto need = [](const std::string& v, const char* flag, const char* what) -> Status {
    if (!v.empty()) return Status::Ok();
    return Status::Usage(std::string("import-run: missing ") + flag + " (" + what +
                         "); or give --scenario SCENARIO.json");
  };
  CAPPLAN_RETURN_IF_ERROR(need(f.model, "--model", "a model card name or path, models/cards/"));
  CAPPLAN_RETURN_IF_ERROR(
      need(f.hardware, "--gpu", "a hardware profile name or path, calibrate/profiles/"));
  std::string engine = f.engine;
  if (engine.empty() && hint.contains("engine")) engine = hint["engine"].get<std::string>();
  CAPPLAN_RETURN_IF_ERROR(need(engine, "--engine", "vllm or sglang, the engine that served"));
  std::optional<int64_t> tp = f.tp;
  if (!tp && hint.contains("tp")) tp = hint["tp"].get<int64_t>();
  if (!tp) return need("", "--tp", "the tensor-parallel size the engine ran with");
  nlohmann::json d = {{"engine", engine}, {"tp", *tp}, {"replicas", 1}};
  if (!f.engine_version.empty()) d["engine_version"] = f.engine_version;
  std::optional<int64_t> ep = f.ep;
  if (!ep && hint.contains("ep")) ep = hint["ep"].get<int64_t>();
  d["ep"] = ep.value_or(1);
  std::optional<bool> dp = f.dp_attention;
  if (!dp && hint.contains("dp_attention")) dp = hint["dp_attention"].get<bool>();
  d["dp_attention"] = dp.value_or(false);
  d["gpus"] = f.gpus.value_or(*tp);
  if (!f.kv_cache.empty()) d["kv_cache"] = f.kv_cache;
  if (!f.weights.empty()) d["weights"] = f.weights;
  if (f.mem_fraction_static) d["mem_fraction_static"] = *f.mem_fraction_static;
  return nlohmann::json{{"model", f.model}, {"hardware", f.hardware}, {"deployment", d}};
}

Result<nlohmann::json> BuildCase(const CaseInputs& in) {
  if (in.runs.empty()) return Status::Internal("import: no runs to build a case from");
  const ImportedRun& first = in.runs.front();
  nlohmann::json scenario = in.scenario;
  scenario["name"] = in.name;
  // The pool the engine sized follows the fraction it ran with; a scenario
  // that leaves it to the engine profile takes the log's.
  if (in.log && in.log->mem_fraction_static && Field(scenario, "deployment").is_object() &&
      Field(scenario["deployment"], "mem_fraction_static").is_null()) {
    scenario["deployment"]["mem_fraction_static"] = *in.log->mem_fraction_static;
  }
  scenario["workload"] = WorkloadJson(first.workload);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < in.runs.size(); ++i) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json row, RunRow(in.runs[i], i > 0, in.run_file));
    rows.push_back(std::move(row));
  }
  if (auto cap = CapacityRow(in, scenario)) rows.push_back(std::move(*cap));
  const std::string base = std::filesystem::path(in.run_file).filename().string();
  std::string note = "Imported by capplan import-run from " + in.run_file + "; tool version " +
                     (first.tool_version.empty() ? "not recorded" : first.tool_version);
  if (!first.model_id.empty()) note += "; the tool's model id '" + first.model_id + "'";
  nlohmann::json c = {
      {"format", "capplan.validation_case.v1"},
      {"name", in.name},
      {"class", "serving"},
      {"predict", "simulate"},
      {"description", "Runs measured by " + first.tool + " (" + base + "), " +
                          std::to_string(in.runs.size()) +
                          " run(s), imported with capplan import-run; each row's measured "
                          "metrics are compared with the simulator's prediction of its workload "
                          "on the scenario's deployment. Validation only: nothing is fitted to "
                          "these rows."},
      {"source",
       {{"url", first.tool_url},
        {"date", first.date.empty() ? "not recorded" : first.date},
        {"title", first.tool + " result " + base},
        {"note", note}}},
      {"scenario", scenario},
      {"rows", rows},
      {"import", ImportBlock(in)}};
  return c;
}

}  // namespace capplan::calibrate::runs
