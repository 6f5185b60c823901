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

MemoryPerGpu MemoryOf(const schema::Memory& m) {
  MemoryPerGpu mem;
  auto num = [](const std::optional<int64_t>& v) { return static_cast<double>(v.value_or(0)); };
  mem.weights_bytes = num(m.weights_bytes_per_gpu);
  mem.reserve_bytes = num(m.reserve_bytes_per_gpu);
  mem.kv_pool_bytes = num(m.kv_pool_bytes_per_gpu);
  mem.gpu_memory_bytes = num(m.gpu_memory_bytes);
  if (m.weights_by_component_bytes) {
    for (const auto& [k, v] : *m.weights_by_component_bytes) {
      mem.weights_by_component[k] = static_cast<double>(v);
    }
  }
  return mem;
}

void Latencies(const schema::RunSummary& run, Summary* s) {
  const std::pair<const char*, const schema::Stats*> metrics[] = {
      {"ttft", &run.ttft}, {"tpot", &run.tpot}, {"itl", &run.itl}, {"e2el", &run.e2el}};
  for (const auto& [metric, st] : metrics) {
    const std::pair<const char*, const std::optional<double>*> stats[] = {
        {"mean", &st->mean}, {"median", &st->median}, {"p90", &st->p90},
        {"p95", &st->p95},   {"p99", &st->p99}};
    for (const auto& [stat, v] : stats) {
      const std::string name = std::string(stat) + "_" + metric;
      if (*v) s->latency_ms[name] = **v;
      const auto iv = run.intervals.find(name + "_ms");
      if (iv != run.intervals.end()) s->latency_interval_ms[name] = {iv->second.lo, iv->second.hi};
    }
  }
}

void Goodput(const schema::Goodput& g, Summary* s) {
  s->request_goodput = g.request_goodput;
  s->good_fraction = g.good_fraction;
  for (const auto& [k, v] : g.slo) {
    // vLLM names SLOs by metric ("tpot"); our summaries may add the unit.
    std::string key = k;
    if (key.size() < 3 || key.substr(key.size() - 3) != "_ms") key += "_ms";
    s->slo_ms[key] = v;
  }
}

// Which offered concurrency a result ran at. The pinned key list has none, so
// read the workload's cap when the simulator echoes it, else the measured
// peak of in-flight requests.
void Concurrency(const schema::RunSummary& run, Summary* s) {
  if (run.workload.is_object()) {
    // capplan simulate echoes the closed-loop (or capped open-loop)
    // concurrency as workload.concurrency; vLLM's name is max_concurrency.
    for (const char* key : {"concurrency", "max_concurrency"}) {
      const auto it = run.workload.find(key);
      if (it != run.workload.end() && it->is_number() && it->get<double>() > 0) {
        s->concurrency = it->get<double>();
        s->concurrency_source = std::string("workload.") + key;
        return;
      }
    }
  }
  const std::pair<const char*, const std::optional<double>*> top[] = {
      {"max_concurrency", &run.max_concurrency}, {"concurrency", &run.concurrency}};
  for (const auto& [key, v] : top) {
    if (*v) {
      s->concurrency = *v;
      s->concurrency_source = key;
      return;
    }
  }
  if (s->max_concurrent_requests) {
    s->concurrency = s->max_concurrent_requests;
    s->concurrency_source = "max_concurrent_requests";
  }
}

std::optional<double> AsDouble(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
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

std::string Summary::DeploymentField(const std::string& key) const {
  if (!deployment.is_object() || !deployment.contains(key)) return "";
  const auto& v = deployment[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

namespace {

// The keys every summary carries; without them the file is some other JSON
// (a scenario, a profile), and saying so is the fix. A PD summary carries
// pools instead of one deployment.
Status CheckSummaryKeys(const nlohmann::json& doc, const std::string& origin, bool pd) {
  for (const char* key : {pd ? "pools" : "deployment", "output_throughput", "gpus"}) {
    if (!doc.contains(key)) {
      return Status::Usage(origin + ": /" + key +
                           ": required field is missing; not a simulation summary (pass "
                           "DIR/summary.json from 'capplan simulate --out DIR' or a sweep "
                           "directory)");
    }
  }
  return Status::Ok();
}

// A colocated run's one pool: its deployment, KV and memory figures.
Status SinglePoolFields(const schema::RunSummary& run, const std::string& origin, Summary* s) {
  const schema::PoolSummary& p = run.pools.at(0);
  if (!p.deployment.is_object()) {
    return Status::Usage(origin + ": /deployment: must be an object");
  }
  s->deployment = p.deployment;
  s->kv_capacity_tokens = AsDouble(p.kv_capacity_tokens);
  s->kv_bytes_per_token = AsDouble(p.kv_bytes_per_token);
  s->peak_kv_tokens = AsDouble(p.peak_kv_tokens);
  s->max_concurrent_requests = AsDouble(p.max_concurrent_requests);
  s->retractions = AsDouble(p.retractions);
  s->prefix_cache_hit_rate = p.prefix_cache_hit_rate;
  s->accept_length_mean = p.accept_length_mean;
  s->kv_bound = p.kv_bound.value_or(false);
  s->kv_verify_time_share = p.kv_verify_time_share;
  if (p.memory) s->memory = MemoryOf(*p.memory);
  if (p.bound_time_share) s->bound_time_share = *p.bound_time_share;
  if (p.warnings) s->warnings = *p.warnings;
  return Status::Ok();
}

}  // namespace

Result<Summary> ParseSummary(const nlohmann::json& doc, const std::string& origin) {
  // schema::FromJson names a document that is not an object, or a
  // disaggregated flag that is not a boolean; the key check comes first
  // otherwise, as its message says what file to pass instead.
  const auto dis = doc.is_object() ? doc.find("disaggregated") : doc.end();
  const bool pd = dis != doc.end() && dis->is_boolean() && dis->get<bool>();
  if (doc.is_object() && (dis == doc.end() || dis->is_boolean())) {
    CAPPLAN_RETURN_IF_ERROR(CheckSummaryKeys(doc, origin, pd));
  }
  CAPPLAN_ASSIGN_OR_RETURN(const schema::RunSummary run, schema::FromJson(doc, origin));
  Summary s;
  s.origin = origin;
  s.scenario = run.scenario.value_or("");
  s.model = run.model.value_or("");
  s.hardware = run.hardware.value_or("");
  if (run.profile) {
    s.profile_name = run.profile->name;
    s.profile_path = run.profile->path;
    if (!run.profile->provenance.is_null()) {
      s.profile_provenance = DescribeProvenance(run.profile->provenance);
    }
  }
  if (run.workload.is_object()) s.workload = run.workload;
  s.gpus = run.gpus.value_or(0);
  s.completed = static_cast<double>(run.completed.value_or(0));
  s.failed = static_cast<double>(run.failed.value_or(0));
  s.duration_s = run.duration_s.value_or(0);
  s.request_throughput = run.request_throughput.value_or(0);
  s.input_throughput = run.input_throughput.value_or(0);
  s.output_throughput = run.output_throughput.value_or(0);
  s.total_token_throughput = run.total_token_throughput.value_or(0);
  // Per-GPU figures follow InferenceMAX (utils/process_result.py in
  // SemiAnalysisAI/InferenceX): throughput / GPUs.
  s.output_throughput_per_gpu =
      run.output_throughput_per_gpu.value_or(s.output_throughput / s.gpus);
  s.total_token_throughput_per_gpu =
      run.total_token_throughput_per_gpu.value_or(s.total_token_throughput / s.gpus);
  Latencies(run, &s);
  for (const char* key : {"output_throughput", "input_throughput"}) {
    const auto iv = run.intervals.find(key);
    if (iv != run.intervals.end()) s.throughput_interval[key] = {iv->second.lo, iv->second.hi};
  }
  s.usd_per_gpu_hour = run.usd_per_gpu_hour;
  s.joules_per_output_token = run.joules_per_output_token;
  s.gpu_joules_per_output_token = run.gpu_joules_per_output_token;
  s.output_tokens_per_s_per_mw = run.output_tokens_per_s_per_mw;
  s.peak_kw_per_node = run.peak_kw_per_node;
  s.pue = run.pue;
  s.electricity_usd_per_million_output_tokens = run.electricity_usd_per_million_output_tokens;
  if (run.goodput) Goodput(*run.goodput, &s);
  CAPPLAN_RETURN_IF_ERROR(pd ? PdFields(run, &s) : SinglePoolFields(run, origin, &s));
  Concurrency(run, &s);
  const std::string label = run.label.value_or("");
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
    // A search over a sessions workload's session_rate counts sessions/s.
    const auto unit = doc.find("rate_unit");
    const std::string unit_text =
        unit != doc.end() && unit->is_string() ? EchoValue(unit->get<std::string>()) : "req/s";
    const auto sc = summary.find("scenario");
    summary["label"] =
        (sc != summary.end() && sc->is_string() ? sc->get<std::string>() : std::string("search")) +
        " best at SLO (" + config + ", " + rate + " " + unit_text + ")";
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
      // A sweep point file wraps its summary; an invalid point has none and
      // is left out (sweep.csv lists it with its error).
      if (IsPointFile(doc)) {
        CAPPLAN_ASSIGN_OR_RETURN(std::optional<Summary> s, ReadPointSummary(doc, f));
        if (s) out.push_back(std::move(*s));
        continue;
      }
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
