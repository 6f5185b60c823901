#include "report/pd_compare.h"

#include <cmath>

#include "report/text_util.h"

namespace capplan::report {
namespace {

std::optional<double> Latency(const Summary& s, const std::string& key) {
  const auto it = s.latency_ms.find(key);
  if (it == s.latency_ms.end()) return std::nullopt;
  return it->second;
}

std::optional<double> OutputCost(const Point& p) {
  if (!p.cost || !std::isfinite(p.cost->usd_per_million_output)) return std::nullopt;
  return p.cost->usd_per_million_output;
}

// The figures a pair compares, in table column order (after the
// configuration, role, gpus and gpus_per_pool columns).
std::vector<std::optional<double>> Figures(const Point& p) {
  const Summary& s = *p.summary;
  return {s.output_throughput,    s.output_throughput_per_gpu, Latency(s, "mean_ttft"),
          Latency(s, "p99_ttft"), Latency(s, "mean_tpot"),     Latency(s, "p99_tpot"),
          OutputCost(p)};
}

std::string Text(const std::optional<double>& v) { return v ? FormatNumber(*v) : "n/a"; }

std::string PoolGpus(const Summary& s) {
  if (!s.pd) return std::to_string(s.gpus) + " co-located";
  return std::to_string(s.pd->prefill.gpus) + "P+" + std::to_string(s.pd->decode.gpus) + "D";
}

std::string Ratio(const Summary& s) {
  return std::to_string(s.pd->prefill.replicas) + "P:" + std::to_string(s.pd->decode.replicas) +
         "D";
}

std::vector<std::string> PdColumns(const Summary& s) {
  if (!s.pd) return {"n/a", "n/a", "n/a", "n/a"};
  return {FormatPercent(s.pd->prefill.utilization), FormatPercent(s.pd->decode.utilization),
          Text(s.pd->mean_exposed_transfer_ms), Text(s.pd->p99_exposed_transfer_ms)};
}

std::optional<double> Change(const std::optional<double>& pd, const std::optional<double>& twin) {
  if (!pd || !twin || !(*twin > 0)) return std::nullopt;
  return *pd / *twin - 1;
}

std::string SignedDiff(int d) {
  // Typographic minus, as FormatChange writes it.
  return d > 0 ? "+" + std::to_string(d) : d < 0 ? "\u2212" + std::to_string(-d) : "0";
}

}  // namespace

std::vector<PdPair> PdPairs(const Analysis& a) {
  std::vector<PdPair> pairs;
  for (size_t i = 0; i < a.points.size(); ++i) {
    const Summary& s = *a.points[i].summary;
    if (!s.pd) continue;
    PdPair pair;
    pair.pd = static_cast<int>(i);
    const std::string twin_name = s.scenario + kTwinSuffix;
    for (size_t j = 0; j < a.points.size(); ++j) {
      const Summary& t = *a.points[j].summary;
      if (t.pd || s.scenario.empty() || t.scenario != twin_name) continue;
      if (pair.twin < 0) pair.twin = static_cast<int>(j);
      if (!s.workload.is_null() && t.workload == s.workload) {
        pair.twin = static_cast<int>(j);
        break;
      }
    }
    pairs.push_back(pair);
  }
  return pairs;
}

std::optional<Table> PdComparisonTable(const Analysis& a) {
  const std::vector<PdPair> pairs = PdPairs(a);
  if (pairs.empty()) return std::nullopt;
  Table t{"pd_vs_colocated",
          "PD vs co-located twin",
          "Each PD result (named S) next to the co-located result named S" +
              std::string(kTwinSuffix) +
              " (same workload preferred). Change = PD / twin - 1 (GPUs: difference). "
              "Utilization = busy / (replicas x duration) per pool; exposed transfer = KV "
              "transfer time not hidden behind prefill compute.",
          {"configuration", "role", "gpus", "gpus_per_pool", "output_tok_s", "output_tok_s_per_gpu",
           "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
           "usd_per_million_output_tokens", "prefill_utilization", "decode_utilization",
           "exposed_transfer_mean_ms", "exposed_transfer_p99_ms"},
          {}};
  for (const PdPair& pair : pairs) {
    const Point& pd = a.points[pair.pd];
    const std::string pd_label = a.configs[pd.config].short_label;
    auto row = [&](const Point& p, const std::string& role) {
      std::vector<std::string> r{a.configs[p.config].short_label, role,
                                 std::to_string(p.summary->gpus), PoolGpus(*p.summary)};
      for (const auto& v : Figures(p)) r.push_back(Text(v));
      for (const auto& c : PdColumns(*p.summary)) r.push_back(c);
      return r;
    };
    t.rows.push_back(row(pd, "PD " + Ratio(*pd.summary)));
    if (pair.twin < 0) {
      std::vector<std::string> none{
          pd_label, "no twin: no result named " + pd.summary->scenario + kTwinSuffix};
      none.resize(t.columns.size(), "n/a");
      t.rows.push_back(std::move(none));
      continue;
    }
    const Point& twin = a.points[pair.twin];
    t.rows.push_back(row(twin, "co-located twin"));
    std::vector<std::string> delta{pd_label, "PD vs twin",
                                   SignedDiff(pd.summary->gpus - twin.summary->gpus), ""};
    const auto fp = Figures(pd), ft = Figures(twin);
    for (size_t k = 0; k < fp.size(); ++k) {
      const auto c = Change(fp[k], ft[k]);
      delta.push_back(c ? FormatChange(*c) : "n/a");
    }
    delta.resize(t.columns.size(), "");
    t.rows.push_back(std::move(delta));
  }
  return t;
}

}  // namespace capplan::report
