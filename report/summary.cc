#include "report/summary.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/json_util.h"
#include "report/pd_summary.h"
#include "report/sweep_points.h"

namespace capplan::report {
namespace {

namespace fs = std::filesystem;

// A field that the simulator may write either as a name or as an object
// carrying a "name" (model cards, hardware profiles): shown as text.
Status GetNameLike(JsonObject& o, std::string_view key, std::string* out) {
  const nlohmann::json* v = o.Raw(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (v->is_string()) {
    *out = v->get<std::string>();
  } else if (v->is_object() && v->contains("name") && (*v)["name"].is_string()) {
    *out = (*v)["name"].get<std::string>();
  } else {
    return o.Error(key, "must be a name (string) or an object with a \"name\"");
  }
  return Status::Ok();
}

Status ParseMemory(JsonObject& root, Summary* s) {
  if (!root.Has("memory")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject m, root.Child("memory"));
  MemoryPerGpu mem;
  CAPPLAN_RETURN_IF_ERROR(m.Get("weights_bytes_per_gpu", &mem.weights_bytes));
  CAPPLAN_RETURN_IF_ERROR(m.Get("reserve_bytes_per_gpu", &mem.reserve_bytes));
  CAPPLAN_RETURN_IF_ERROR(m.Get("kv_pool_bytes_per_gpu", &mem.kv_pool_bytes));
  CAPPLAN_RETURN_IF_ERROR(m.Get("gpu_memory_bytes", &mem.gpu_memory_bytes));
  if (m.Has("weights_by_component_bytes")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject c, m.Child("weights_by_component_bytes"));
    for (auto it = c.json().begin(); it != c.json().end(); ++it) {
      double v = 0;
      CAPPLAN_RETURN_IF_ERROR(c.Get(it.key(), &v, true));
      if (v < 0) return c.Error(it.key(), "must be >= 0");
      mem.weights_by_component[it.key()] = v;
    }
  }
  s->memory = mem;
  return Status::Ok();
}

Status ParseLatencies(JsonObject& root, Summary* s) {
  for (const char* stat : {"mean", "median", "p90", "p99"}) {
    for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
      const std::string name = std::string(stat) + "_" + metric;
      std::optional<double> v;
      CAPPLAN_RETURN_IF_ERROR(root.Get(name + "_ms", &v));
      if (v) s->latency_ms[name] = *v;
      std::optional<double> lo, hi;
      CAPPLAN_RETURN_IF_ERROR(root.Get(name + "_ms_lo", &lo));
      CAPPLAN_RETURN_IF_ERROR(root.Get(name + "_ms_hi", &hi));
      if (lo && hi) {
        if (*lo > *hi) return root.Error(name + "_ms_lo", "must be <= " + name + "_ms_hi");
        s->latency_interval_ms[name] = {*lo, *hi};
      }
    }
  }
  return Status::Ok();
}

Status ParseGoodput(JsonObject& root, Summary* s) {
  if (!root.Has("goodput")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject g, root.Child("goodput"));
  CAPPLAN_RETURN_IF_ERROR(g.Get("request_goodput", &s->request_goodput));
  CAPPLAN_RETURN_IF_ERROR(g.Get("good_fraction", &s->good_fraction));
  if (g.Has("slo")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject slo, g.Child("slo"));
    for (auto it = slo.json().begin(); it != slo.json().end(); ++it) {
      double v = 0;
      CAPPLAN_RETURN_IF_ERROR(slo.Get(it.key(), &v, true));
      // vLLM names SLOs by metric ("tpot"); our summaries may add the unit.
      std::string key = it.key();
      if (key.size() < 3 || key.substr(key.size() - 3) != "_ms") key += "_ms";
      s->slo_ms[key] = v;
    }
  }
  return Status::Ok();
}

// Which offered concurrency a result ran at. The pinned key list has none, so
// read the workload's cap when the simulator echoes it, else the measured
// peak of in-flight requests.
Status ParseConcurrency(JsonObject& root, Summary* s) {
  if (root.Has("workload")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject w, root.Child("workload"));
    // capplan simulate echoes the closed-loop (or capped open-loop)
    // concurrency as workload.concurrency; vLLM's name is max_concurrency.
    for (const char* key : {"concurrency", "max_concurrency"}) {
      std::optional<double> c;
      CAPPLAN_RETURN_IF_ERROR(w.Get(key, &c));
      if (c && *c > 0) {
        s->concurrency = c;
        s->concurrency_source = std::string("workload.") + key;
        return Status::Ok();
      }
    }
  }
  for (const char* key : {"max_concurrency", "concurrency"}) {
    std::optional<double> c;
    CAPPLAN_RETURN_IF_ERROR(root.Get(key, &c));
    if (c) {
      s->concurrency = c;
      s->concurrency_source = key;
      return Status::Ok();
    }
  }
  if (s->max_concurrent_requests) {
    s->concurrency = s->max_concurrent_requests;
    s->concurrency_source = "max_concurrent_requests";
  }
  return Status::Ok();
}

// A profile's provenance is either a sentence or, as capplan simulate
// writes it, {parameter: kind}; a table cell shows the kinds with counts
// ("datasheet x5, measured x3") rather than every parameter.
std::string DescribeProvenance(const nlohmann::json& prov) {
  if (prov.is_string()) return prov.get<std::string>();
  if (!prov.is_object()) return prov.dump();
  std::map<std::string, int> kinds;
  for (auto it = prov.begin(); it != prov.end(); ++it) {
    ++kinds[it->is_string() ? it->get<std::string>() : it->dump()];
  }
  std::string out;
  for (const auto& [k, n] : kinds) {
    out += (out.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  }
  return out;
}

}  // namespace

Status ParseTimeShares(JsonObject& parent, std::string_view key,
                       std::map<std::string, double>* out) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject b, parent.Child(key));
  for (auto it = b.json().begin(); it != b.json().end(); ++it) {
    double v = 0;
    CAPPLAN_RETURN_IF_ERROR(b.Get(it.key(), &v, true));
    CAPPLAN_RETURN_IF_ERROR(b.CheckRange(it.key(), v, 0.0, 1.0));
    (*out)[it.key()] = v;
  }
  return Status::Ok();
}

std::string Summary::DeploymentField(const std::string& key) const {
  if (!deployment.is_object() || !deployment.contains(key)) return "";
  const auto& v = deployment[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

Result<Summary> ParseSummary(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) {
    return Status::Usage(origin +
                         ": not a simulation summary (expected a JSON object as "
                         "written by 'capplan simulate --out DIR' to DIR/summary.json)");
  }
  // The keys every summary carries (sim/simulate.h); without them the file
  // is some other JSON (a scenario, a profile), and saying so is the fix.
  // A PD summary (sim/pd) carries pools instead of one deployment.
  const auto dis = doc.find("disaggregated");
  if (dis != doc.end() && !dis->is_boolean()) {
    return Status::Usage(origin + ": /disaggregated: must be true or false, got " +
                         EchoValue(dis->dump()));
  }
  const bool pd = dis != doc.end() && dis->get<bool>();
  for (const char* key : {pd ? "pools" : "deployment", "output_throughput", "gpus"}) {
    if (!doc.contains(key)) {
      return Status::Usage(origin + ": /" + key +
                           ": required field is missing; not a simulation summary (pass "
                           "DIR/summary.json from 'capplan simulate --out DIR' or a sweep "
                           "directory)");
    }
  }
  Summary s;
  s.origin = origin;
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.Get("scenario", &s.scenario));
  CAPPLAN_RETURN_IF_ERROR(GetNameLike(root, "model", &s.model));
  CAPPLAN_RETURN_IF_ERROR(GetNameLike(root, "hardware", &s.hardware));
  if (root.Has("profile")) {
    const nlohmann::json* p = root.Raw("profile");
    if (p->is_string()) {
      s.profile_name = p->get<std::string>();
    } else {
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject po, root.Child("profile"));
      CAPPLAN_RETURN_IF_ERROR(po.Get("name", &s.profile_name));
      CAPPLAN_RETURN_IF_ERROR(po.Get("path", &s.profile_path));
      const nlohmann::json* prov = po.Raw("provenance");
      if (prov != nullptr && !prov->is_null()) {
        s.profile_provenance = DescribeProvenance(*prov);
      }
    }
  }
  if (pd) {
    CAPPLAN_RETURN_IF_ERROR(ParsePdFields(root, &s));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, root.Child("deployment", true));
    s.deployment = d.json();
  }
  if (const nlohmann::json* w = root.Raw("workload"); w != nullptr && w->is_object()) {
    s.workload = *w;
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("gpus", &s.gpus, true));
  if (s.gpus < 1) return root.Error("gpus", "must be >= 1, got " + std::to_string(s.gpus));
  CAPPLAN_RETURN_IF_ERROR(root.Get("completed", &s.completed));
  CAPPLAN_RETURN_IF_ERROR(root.Get("failed", &s.failed));
  CAPPLAN_RETURN_IF_ERROR(root.Get("duration_s", &s.duration_s));
  CAPPLAN_RETURN_IF_ERROR(root.Get("request_throughput", &s.request_throughput));
  CAPPLAN_RETURN_IF_ERROR(root.Get("input_throughput", &s.input_throughput));
  CAPPLAN_RETURN_IF_ERROR(root.Get("output_throughput", &s.output_throughput, true));
  if (s.output_throughput < 0) return root.Error("output_throughput", "must be >= 0");
  CAPPLAN_RETURN_IF_ERROR(root.Get("total_token_throughput", &s.total_token_throughput));
  // Per-GPU figures follow InferenceMAX (utils/process_result.py in
  // SemiAnalysisAI/InferenceX): throughput / GPUs.
  s.output_throughput_per_gpu = s.output_throughput / s.gpus;
  s.total_token_throughput_per_gpu = s.total_token_throughput / s.gpus;
  CAPPLAN_RETURN_IF_ERROR(root.Get("output_throughput_per_gpu", &s.output_throughput_per_gpu));
  CAPPLAN_RETURN_IF_ERROR(
      root.Get("total_token_throughput_per_gpu", &s.total_token_throughput_per_gpu));
  CAPPLAN_RETURN_IF_ERROR(ParseLatencies(root, &s));
  CAPPLAN_RETURN_IF_ERROR(root.Get("usd_per_gpu_hour", &s.usd_per_gpu_hour));
  CAPPLAN_RETURN_IF_ERROR(root.Get("kv_capacity_tokens", &s.kv_capacity_tokens));
  CAPPLAN_RETURN_IF_ERROR(root.Get("kv_bytes_per_token", &s.kv_bytes_per_token));
  CAPPLAN_RETURN_IF_ERROR(root.Get("peak_kv_tokens", &s.peak_kv_tokens));
  CAPPLAN_RETURN_IF_ERROR(root.Get("max_concurrent_requests", &s.max_concurrent_requests));
  CAPPLAN_RETURN_IF_ERROR(root.Get("retractions", &s.retractions));
  CAPPLAN_RETURN_IF_ERROR(root.Get("kv_bound", &s.kv_bound));
  CAPPLAN_RETURN_IF_ERROR(root.Get("kv_verify_time_share", &s.kv_verify_time_share));
  CAPPLAN_RETURN_IF_ERROR(ParseMemory(root, &s));
  if (root.Has("bound_time_share")) {
    CAPPLAN_RETURN_IF_ERROR(ParseTimeShares(root, "bound_time_share", &s.bound_time_share));
  }
  CAPPLAN_RETURN_IF_ERROR(ParseGoodput(root, &s));
  CAPPLAN_RETURN_IF_ERROR(root.Get("warnings", &s.warnings));
  CAPPLAN_RETURN_IF_ERROR(ParseConcurrency(root, &s));
  std::string label;
  CAPPLAN_RETURN_IF_ERROR(root.Get("label", &label));
  s.id = !label.empty()        ? label
         : !s.scenario.empty() ? s.scenario
                               : fs::path(origin).stem().string();
  return s;
}

namespace {

// A `capplan search --out` directory stands for its winner: the simulation
// summary of the best configuration at the largest rate meeting the SLOs,
// labelled with its configuration and rate so the tables say what it is.
Result<Summary> LoadSearchWinner(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  const nlohmann::json* w = doc.is_object() && doc.contains("winner") ? &doc["winner"] : nullptr;
  if (w == nullptr || !w->is_object() || !w->contains("summary")) {
    return Status::Invalid(path +
                           ": /winner: no configuration met the SLOs, so there is no "
                           "result to report (relax the SLOs or widen the search space)");
  }
  nlohmann::json summary = (*w)["summary"];
  if (summary.is_object() && !summary.contains("label")) {
    std::string config;
    if (const auto it = w->find("config"); it != w->end() && it->is_object()) {
      for (const auto& [k, v] : it->items()) {
        config += (config.empty() ? "" : " ") + k + "=" +
                  (v.is_string() ? v.get<std::string>() : v.dump());
      }
    }
    char rate[32];
    const auto r = w->find("request_rate_req_per_s");
    std::snprintf(rate, sizeof(rate), "%.3g",
                  r != w->end() && r->is_number() ? r->get<double>() : 0.0);
    const auto sc = summary.find("scenario");
    summary["label"] =
        (sc != summary.end() && sc->is_string() ? sc->get<std::string>() : std::string("search")) +
        " best at SLO (" + config + ", " + rate + " req/s)";
  }
  CAPPLAN_ASSIGN_OR_RETURN(Summary s, ParseSummary(summary, path + " /winner/summary"));
  // The search's SLOs name their statistic ("p90_ttft_ms<=2000"), which the
  // winner's goodput block drops; the latency charts draw them.
  if (const auto it = w->find("slo_checks"); it != w->end() && it->is_array()) {
    for (const auto& check : *it) {
      if (!check.is_object() || !check.contains("metric") || !check["metric"].is_string() ||
          !check.contains("bound") || !check["bound"].is_number()) {
        continue;
      }
      const std::string metric = check["metric"].get<std::string>();  // p90_ttft_ms
      const size_t us = metric.find('_');
      if (us == std::string::npos || metric.size() < us + 4 ||
          metric.substr(metric.size() - 3) != "_ms") {
        continue;
      }
      const std::string name = metric.substr(us + 1, metric.size() - 3 - us - 1);
      s.slo_ms[name + "_ms"] = check["bound"].get<double>();
      s.slo_stat[name] = metric.substr(0, us);
    }
  }
  return s;
}

}  // namespace

Result<std::vector<Summary>> LoadResults(const std::vector<std::string>& inputs) {
  if (inputs.empty()) {
    return Status::Usage(
        "report: no results given; pass summary JSON files or result "
        "directories (capplan report RESULT... --out FILE)");
  }
  std::vector<Summary> out;
  std::vector<std::string> files;
  auto flush = [&]() -> Status {
    for (const auto& f : files) {
      CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(f));
      CAPPLAN_ASSIGN_OR_RETURN(Summary s, ParseSummary(doc, f));
      out.push_back(std::move(s));
    }
    files.clear();
    return Status::Ok();
  };
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      const fs::path single = fs::path(in) / "summary.json";
      if (fs::exists(single, ec)) {
        files.push_back(single.string());
        continue;
      }
      if (IsSweepFolder(in)) {
        CAPPLAN_RETURN_IF_ERROR(flush());  // keep the order of inputs
        CAPPLAN_ASSIGN_OR_RETURN(std::vector<Summary> points, LoadSweepFolder(in));
        for (Summary& s : points) out.push_back(std::move(s));
        continue;
      }
      const fs::path search = fs::path(in) / "search.json";
      if (fs::exists(search, ec)) {
        CAPPLAN_RETURN_IF_ERROR(flush());  // keep the order of inputs
        CAPPLAN_ASSIGN_OR_RETURN(Summary s, LoadSearchWinner(search.string()));
        out.push_back(std::move(s));
        continue;
      }
      std::vector<std::string> points;
      for (const auto& e : fs::directory_iterator(in, ec)) {
        std::error_code type_ec;
        if (e.is_regular_file(type_ec) && e.path().extension() == ".json") {
          points.push_back(e.path().string());
        }
      }
      if (ec) return Status::Io(in + ": cannot list directory: " + ec.message());
      if (points.empty()) {
        return Status::NotFound(in +
                                ": no summary.json and no sweep point *.json in this "
                                "directory; pass 'capplan simulate/sweep --out' directories");
      }
      std::sort(points.begin(), points.end());
      files.insert(files.end(), points.begin(), points.end());
    } else if (fs::exists(in, ec)) {
      files.push_back(in);
    } else {
      return Status::NotFound(EchoValue(in, 256) + ": no such file or directory");
    }
  }
  CAPPLAN_RETURN_IF_ERROR(flush());
  return out;
}

}  // namespace capplan::report
