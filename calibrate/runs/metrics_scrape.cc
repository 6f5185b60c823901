#include "calibrate/runs/metrics_scrape.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "calibrate/runs/tool_json.h"

namespace capplan::calibrate::runs {

namespace {

// What the case calls a scraped quantity, and each engine's metric for it.
struct Known {
  const char* key;
  const char* vllm[2];
  const char* sglang;
};

// Gauges and counters, read as their value.
const std::vector<Known>& Values() {
  static const std::vector<Known> k = {
      {"running_requests", {"vllm:num_requests_running", nullptr}, "sglang:num_running_reqs"},
      {"waiting_requests", {"vllm:num_requests_waiting", nullptr}, "sglang:num_queue_reqs"},
      {"prompt_tokens_total", {"vllm:prompt_tokens_total", nullptr}, "sglang:prompt_tokens_total"},
      {"generation_tokens_total",
       {"vllm:generation_tokens_total", nullptr},
       "sglang:generation_tokens_total"},
      {"preemptions_total", {"vllm:num_preemptions_total", nullptr}, nullptr},
      {"gen_throughput", {nullptr, nullptr}, "sglang:gen_throughput"},
  };
  return k;
}

// The usage gauge (a fraction), its maximum over series.
const Known kUsage = {"kv_usage_fraction",
                      {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
                      "sglang:token_usage"};

// Histograms, read as _sum / _count (x 1000 for seconds -> ms).
struct KnownHistogram {
  Known names;
  double scale;
};
const std::vector<KnownHistogram>& Histograms() {
  static const std::vector<KnownHistogram> k = {
      {{"mean_ttft_ms",
        {"vllm:time_to_first_token_seconds", nullptr},
        "sglang:time_to_first_token_seconds"},
       1000},
      {{"mean_itl_ms",
        {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
        "sglang:inter_token_latency_seconds"},
       1000},
      {{"mean_e2el_ms",
        {"vllm:e2e_request_latency_seconds", nullptr},
        "sglang:e2e_request_latency_seconds"},
       1000},
      {{"mean_iteration_tokens", {"vllm:iteration_tokens_total", nullptr}, nullptr}, 1},
  };
  return k;
}

bool Matches(const Known& k, std::string_view name, std::string* engine) {
  for (const char* v : k.vllm) {
    if (v != nullptr && name == v) {
      *engine = "vllm";
      return true;
    }
  }
  if (k.sglang != nullptr && name == k.sglang) {
    *engine = "sglang";
    return true;
  }
  return false;
}

// The metric name a series line carries for a histogram part: "X_sum" ->
// ("X", "_sum").
std::pair<std::string_view, std::string_view> SplitSuffix(std::string_view name) {
  for (std::string_view suf : {"_sum", "_count"}) {
    if (name.size() > suf.size() && name.substr(name.size() - suf.size()) == suf) {
      return {name.substr(0, name.size() - suf.size()), suf};
    }
  }
  return {name, {}};
}

// One series line -> its name and value. Labels are skipped (quoted values
// may hold braces and escaped quotes).
Status ParseSeries(std::string_view line, const std::string& where, std::string_view* name,
                   double* value) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  *name = line.substr(0, i);
  if (name->empty()) return Status::Usage(where + ": expected 'name[{labels}] value'");
  if (i < line.size() && line[i] == '{') {
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      if (quoted && line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && line[i] == '}') {
        break;
      }
    }
    if (i >= line.size()) return Status::Usage(where + ": labels not closed with '}'");
    ++i;
  }
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
  const std::string_view tok = line.substr(i, end - i);
  if (tok == "+Inf" || tok == "-Inf" || tok == "NaN") {
    *value = tok == "NaN" ? std::nan("") : (tok[0] == '-' ? -HUGE_VAL : HUGE_VAL);
    return Status::Ok();
  }
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), *value);
  if (ec != std::errc() || p != tok.data() + tok.size() || tok.empty()) {
    return Status::Usage(where + ": '" + EchoValue(tok) + "' is not a sample value");
  }
  return Status::Ok();
}

Status Record(std::string_view name, double v, const std::string& where, MetricsScrape* s) {
  std::string engine;
  bool known = false;
  for (const Known& k : Values()) {
    if (Matches(k, name, &engine)) {
      s->values[k.key] += v;
      known = true;
    }
  }
  if (Matches(kUsage, name, &engine)) {
    auto [it, fresh] = s->maxima.emplace(kUsage.key, v);
    if (!fresh) it->second = std::max(it->second, v);
    known = true;
  }
  const auto [base, suffix] = SplitSuffix(name);
  for (const KnownHistogram& h : Histograms()) {
    if (!suffix.empty() && Matches(h.names, base, &engine)) {
      s->values[std::string(h.names.key) + std::string(suffix)] += v;
      known = true;
    }
  }
  if (!known) return Status::Ok();
  if (!s->engine.empty() && s->engine != engine) {
    return Status::Usage(where + ": a " + engine + " metric in a " + s->engine +
                         " scrape; give one engine's /metrics");
  }
  s->engine = engine;
  ++s->series_read;
  return Status::Ok();
}

}  // namespace

Result<MetricsScrape> ParseMetricsScrape(std::string_view text, const std::string& origin) {
  MetricsScrape s;
  CAPPLAN_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, int64_t line_no) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') return Status::Ok();
    line.remove_prefix(first);
    const std::string where = origin + ":" + std::to_string(line_no);
    std::string_view name;
    double v = 0;
    CAPPLAN_RETURN_IF_ERROR(ParseSeries(line, where, &name, &v));
    if (!std::isfinite(v)) return Status::Ok();  // a +Inf bucket bound carries no total
    return Record(name, v, where, &s);
  }));
  if (s.engine.empty()) {
    return Status::Usage(origin +
                         ": no vLLM or SGLang metric found; expected e.g. "
                         "vllm:num_requests_running or sglang:num_running_reqs (the engine's "
                         "/metrics, Prometheus text format)");
  }
  return s;
}

nlohmann::json MetricsScrapeToJson(const MetricsScrape& s) {
  nlohmann::json j;
  j["engine"] = s.engine;
  j["series_read"] = s.series_read;
  for (const Known& k : Values()) {
    auto it = s.values.find(k.key);
    if (it != s.values.end()) j[k.key] = it->second;
  }
  auto usage = s.maxima.find(kUsage.key);
  if (usage != s.maxima.end()) j[kUsage.key] = usage->second;
  for (const KnownHistogram& h : Histograms()) {
    auto sum = s.values.find(std::string(h.names.key) + "_sum");
    auto count = s.values.find(std::string(h.names.key) + "_count");
    if (sum != s.values.end() && count != s.values.end() && count->second > 0) {
      j[h.names.key] = sum->second / count->second * h.scale;
    }
  }
  return j;
}

}  // namespace capplan::calibrate::runs
