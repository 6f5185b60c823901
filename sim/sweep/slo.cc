#include "sim/sweep/slo.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/did_you_mean.h"

namespace capplan::sim::sweep {

const char* SloOpText(SloOp op) {
  switch (op) {
    case SloOp::kLe: return "<=";
    case SloOp::kLt: return "<";
    case SloOp::kGe: return ">=";
    case SloOp::kGt: return ">";
  }
  return "?";
}

namespace {

// Energy figures (sim/energy.h) a plan wants small.
constexpr const char* kLowerIsBetterEnergy[] = {
    "joules_per_output_token", "joules_per_total_token", "gpu_joules_per_output_token",
    "avg_kw", "peak_kw", "avg_kw_per_node", "peak_kw_per_node", "provisioned_kw",
    "electricity_usd_per_million_output_tokens", "electricity_usd_per_million_total_tokens"};

struct MetricInfo {
  std::string key;
  bool latency;
};

// Name as typed -> summary key (sim/simulate.h).
const std::map<std::string, MetricInfo>& Metrics() {
  static const std::map<std::string, MetricInfo> m = [] {
    std::map<std::string, MetricInfo> out;
    for (const std::string& stat : schema::StatNames()) {
      for (const char* lat : {"ttft", "tpot", "itl", "e2el"}) {
        const std::string key = stat + "_" + lat + "_ms";
        out[key] = {key, true};
        out[std::string(lat) + "_" + stat + "_ms"] = {key, true};
      }
    }
    for (const char* k : {"output_throughput_per_gpu", "total_token_throughput_per_gpu",
                          "output_throughput", "total_token_throughput", "request_throughput",
                          "cost_usd_per_million_output_tokens",
                          "cost_usd_per_million_total_tokens", "gpus",
                          "output_tokens_per_s_per_mw", "total_tokens_per_s_per_mw"}) {
      out[k] = {k, false};
    }
    for (const char* k : kLowerIsBetterEnergy) out[k] = {k, false};
    // A node's power limit is its peak draw, the figure a rack is sized by.
    out["kw_per_node"] = {"peak_kw_per_node", false};
    return out;
  }();
  return m;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Costs, GPU counts and energy are "less is better"; throughputs (per GPU,
// per MW) "more is better".
bool LowerIsBetter(const std::string& key) {
  for (const char* k : kLowerIsBetterEnergy) {
    if (key == k) return true;
  }
  return key.rfind("cost_", 0) == 0 || key == "gpus";
}

}  // namespace

std::vector<std::string> KnownSloMetrics() {
  std::vector<std::string> names;
  for (const auto& [k, v] : Metrics()) names.push_back(k);
  return names;
}

Result<Slo> ParseSlo(const std::string& raw) {
  Slo s;
  s.text = Trim(raw);
  // Every message echoes the flag escaped and cut, never raw.
  const std::string flag = "--slo '" + EchoValue(s.text) + "'";
  const std::string usage = flag +
                            ": expected METRIC<=VALUE (operators <=, <, >=, >), e.g. "
                            "--slo ttft_p90_ms<=2000";
  const size_t pos = s.text.find_first_of("<>=!");
  if (pos == std::string::npos) return Status::Usage(usage);
  std::string op_text;
  size_t op_end = pos;
  while (op_end < s.text.size() && std::string("<>=!").find(s.text[op_end]) != std::string::npos) {
    op_text += s.text[op_end++];
  }
  if (op_text == "<=") {
    s.op = SloOp::kLe;
  } else if (op_text == "<") {
    s.op = SloOp::kLt;
  } else if (op_text == ">=") {
    s.op = SloOp::kGe;
  } else if (op_text == ">") {
    s.op = SloOp::kGt;
  } else {
    return Status::Usage(flag + ": unknown operator '" + EchoValue(op_text) +
                         "'; use one of <=, <, >=, >");
  }
  s.name = Trim(s.text.substr(0, pos));
  if (s.name.empty()) return Status::Usage(usage);
  const auto it = Metrics().find(s.name);
  if (it == Metrics().end()) {
    return Status::Usage(flag + ": unknown metric '" + EchoValue(s.name) + "'" +
                         DidYouMean(s.name, KnownSloMetrics()));
  }
  s.metric = it->second.key;
  const std::string num = Trim(s.text.substr(op_end));
  char* end = nullptr;
  s.bound = num.empty() ? NAN : std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(s.bound) || s.bound < 0) {
    return Status::Usage(flag + ": bound '" + EchoValue(num) +
                         "' is not a finite non-negative number");
  }
  s.upper = s.op == SloOp::kLe || s.op == SloOp::kLt;
  const bool want_upper = it->second.latency || LowerIsBetter(s.metric);
  if (s.upper != want_upper) {
    return Status::Usage(flag + ": " + s.name + " is " +
                         (want_upper ? "an upper bound; write " + s.name + "<=" + num
                                     : "a lower bound; write " + s.name + ">=" + num));
  }
  return s;
}

Result<std::vector<SloCheck>> CheckSlos(const std::vector<Slo>& slos,
                                        const schema::RunSummary& summary, bool pessimistic) {
  std::vector<SloCheck> checks;
  for (const Slo& s : slos) {
    std::optional<double> v = schema::Metric(summary, s.metric);
    if (pessimistic) {
      if (const auto end = schema::Metric(summary, s.metric + (s.upper ? "_hi" : "_lo"))) v = end;
    }
    if (!v) {
      return Status::Internal("simulation summary has no numeric '" + s.metric +
                              "' (needed by --slo " + EchoValue(s.text) + ")");
    }
    SloCheck c;
    c.slo = &s;
    c.value = *v;
    switch (s.op) {
      case SloOp::kLe: c.met = c.value <= s.bound; break;
      case SloOp::kLt: c.met = c.value < s.bound; break;
      case SloOp::kGe: c.met = c.value >= s.bound; break;
      case SloOp::kGt: c.met = c.value > s.bound; break;
    }
    const double denom = s.bound != 0 ? s.bound : 1.0;
    c.slack = s.upper ? (s.bound - c.value) / denom : (c.value - s.bound) / denom;
    checks.push_back(c);
  }
  return checks;
}

bool AllMet(const std::vector<SloCheck>& checks) {
  for (const auto& c : checks) {
    if (!c.met) return false;
  }
  return true;
}

std::string DescribeCheck(const SloCheck& c) {
  std::ostringstream os;
  os << c.slo->name << "=" << c.value << " ";
  if (c.met) {
    os << SloOpText(c.slo->op);
  } else {
    switch (c.slo->op) {
      case SloOp::kLe: os << ">"; break;
      case SloOp::kLt: os << ">="; break;
      case SloOp::kGe: os << "<"; break;
      case SloOp::kGt: os << "<="; break;
    }
  }
  os << " " << c.slo->bound;
  return os.str();
}

}  // namespace capplan::sim::sweep
