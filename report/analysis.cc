#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/did_you_mean.h"
#include "report/text_util.h"

namespace capplan::report {
namespace {

// Results that differ only in offered load belong to one configuration; two
// scenarios with the same deployment (say, with and without SLOs) do not.
std::string ConfigKey(const Summary& s) {
  return s.id + "\n" + s.model + "\n" + s.hardware + "\n" + s.profile_name + "\n" +
         std::to_string(s.gpus) + "\n" + s.deployment.dump();
}

// Display names of the step-time shares in sim/simulate.h's bound_time_share.
std::string ShareName(const std::string& key) {
  if (key == "memory") return "HBM bandwidth";
  return key;
}
std::string ShareText(const std::string& key, double v) {
  if (key == "memory") return "HBM-bound " + FormatPercent(v) + " of step time";
  if (key == "compute") return "compute-bound " + FormatPercent(v);
  if (key == "communication") return "communication " + FormatPercent(v);
  return key + " " + FormatPercent(v);
}

std::string MetricName(const std::string& slo_key) {
  std::string m = slo_key.substr(0, slo_key.size() - 3);  // strip "_ms"
  std::string up;
  for (char c : m) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up == "E2EL" ? "E2E" : up;
}

void LabelConfigs(std::vector<Config>* configs) {
  std::map<std::string, std::vector<int>> by_base;
  for (size_t i = 0; i < configs->size(); ++i) {
    by_base[(*configs)[i].first->id].push_back(static_cast<int>(i));
  }
  for (auto& [base, idx] : by_base) {
    for (int i : idx) (*configs)[i].label = base;
    if (idx.size() < 2) continue;
    // Name the configurations by what differs between them.
    std::set<std::string> keys;
    for (int i : idx) {
      const auto& d = (*configs)[i].first->deployment;
      for (auto it = d.begin(); it != d.end(); ++it) keys.insert(it.key());
    }
    std::vector<std::string> differing;
    for (const auto& k : keys) {
      std::set<std::string> values;
      for (int i : idx) values.insert((*configs)[i].first->DeploymentField(k));
      if (values.size() > 1) differing.push_back(k);
    }
    std::set<std::string> models;
    for (int i : idx) models.insert((*configs)[i].first->model);
    for (int i : idx) {
      const Summary& s = *(*configs)[i].first;
      std::string extra = models.size() > 1 ? s.model : "";
      for (const auto& k : differing) {
        if (!extra.empty()) extra += ", ";
        extra += k + "=" + s.DeploymentField(k);
      }
      if (!extra.empty()) (*configs)[i].label = base + " (" + extra + ")";
    }
  }
  // Still ambiguous (e.g. same deployment, different profile): number them.
  std::map<std::string, int> seen;
  for (auto& c : *configs) {
    const int n = ++seen[c.label];
    if (n > 1) c.label += " #" + std::to_string(n);
  }
}

// One naming scheme per report: mixing names and letters would make the
// reader guess which is which.
void ShortLabels(std::vector<Config>* configs) {
  bool all_short = true;
  for (const auto& c : *configs) all_short = all_short && c.label.size() <= kMaxShortLabel;
  for (size_t i = 0; i < configs->size(); ++i) {
    (*configs)[i].short_label = all_short ? (*configs)[i].label : LetterLabel(i);
  }
}

}  // namespace

std::string LetterLabel(size_t index) {
  std::string out;
  for (size_t n = index + 1; n > 0; n = (n - 1) / 26) {
    out.insert(out.begin(), static_cast<char>('A' + (n - 1) % 26));
  }
  return out;
}

std::string ChangePhrase(double change, const std::string& what, const std::string& baseline) {
  return FormatChange(change) + " " + what + " vs " + baseline;
}

namespace {

// A limit a result runs against: its name, the fraction of it in use and
// how the report says so.
struct Limit {
  std::string name;
  double used;
  std::string text;
};

std::optional<Limit> KvLimit(const Summary& s) {
  if (s.kv_capacity_tokens && *s.kv_capacity_tokens > 0 && s.peak_kv_tokens) {
    double used = *s.peak_kv_tokens / *s.kv_capacity_tokens;
    if (s.kv_bound) used = std::max(used, 1.0);
    std::string text = "KV " + FormatPercent(std::min(used, 1.0)) + " full";
    if (s.retractions && *s.retractions > 0) {
      text += " (" + FormatNumber(*s.retractions) + " retractions)";
    }
    return Limit{"KV capacity", used, text};
  }
  if (s.kv_bound) return Limit{"KV capacity", 1.0, "KV full"};
  return std::nullopt;
}

// The SLO closest to its limit and the goodput. Each SLO is judged at the
// statistic it bounds (a search's p90 TTFT by the p90), or at the p99 where
// the source names none (a goodput SLO bounds every request).
std::optional<Limit> SloLimit(const Summary& s) {
  if (s.slo_ms.empty()) return std::nullopt;
  double worst = 0;
  std::string worst_text;
  for (const auto& [key, limit] : s.slo_ms) {
    const std::string metric = key.substr(0, key.size() - 3);
    const auto named = s.slo_stat.find(metric);
    const std::string stat = named != s.slo_stat.end() ? named->second : "p99";
    auto it = s.latency_ms.find(stat + "_" + metric);
    if (it == s.latency_ms.end() || !(limit > 0)) continue;
    const double ratio = it->second / limit;
    if (ratio >= worst) {
      worst = ratio;
      worst_text = stat + " " + MetricName(key) + " " + FormatNumber(it->second) +
                   " ms = " + FormatPercent(ratio) + " of " + FormatNumber(limit) + " ms SLO";
    }
  }
  double good_fraction = 1.0;
  const bool have_good = s.good_fraction || (s.request_goodput && s.request_throughput > 0);
  if (have_good) {
    good_fraction = s.good_fraction ? *s.good_fraction : *s.request_goodput / s.request_throughput;
    if (!worst_text.empty()) worst_text += ", ";
    worst_text += "goodput " + FormatPercent(good_fraction) + " of requests";
  }
  // Fewer than 99% of requests within SLO is how DistServe-style goodput
  // studies call an SLO violated; 1% tolerance is the p99 the SLO states.
  double used = worst;
  if (good_fraction < 0.99) used = std::max(used, 1.0);
  if (worst_text.empty()) return std::nullopt;
  return Limit{"SLO", used, worst_text};
}

// PD: which pool is busier decides whose step-time shares follow (the
// summary parser took them from that pool). Returns that pool's prefix.
std::string AddPoolParts(const Summary& s, std::vector<std::string>* parts) {
  if (!s.pd) return "";
  const bool prefill_busier = s.pd->prefill.utilization > s.pd->decode.utilization;
  parts->push_back("prefill pool busy " + FormatPercent(s.pd->prefill.utilization) +
                   ", decode pool busy " + FormatPercent(s.pd->decode.utilization));
  if (s.pd->mean_exposed_transfer_ms) {
    parts->push_back("exposed KV transfer mean " + FormatNumber(*s.pd->mean_exposed_transfer_ms) +
                     " ms");
  }
  return prefill_busier ? "prefill pool: " : "decode pool: ";
}

using Shares = std::vector<std::pair<std::string, double>>;

// The next limit as load grows: the capacity-type limit closest to full,
// else the largest step-time share that does not bind.
std::string NextLimit(const Binding& b, const std::optional<Limit>& kv,
                      const std::optional<Limit>& slo, const Shares& shares,
                      const std::string& pool_prefix) {
  std::optional<Limit> next;
  for (const auto& l : {kv, slo}) {
    if (!l || l->name == b.binds) continue;
    if (!next || l->used > next->used) next = l;
  }
  if (next) {
    return next->name + " (" + next->text + "; " +
           FormatPercent(std::max(0.0, 1.0 - next->used)) + " headroom)";
  }
  if (!shares.empty() && pool_prefix + ShareName(shares.front().first) != b.binds) {
    return ShareName(shares.front().first) + " (" +
           ShareText(shares.front().first, shares.front().second) + ")";
  }
  if (shares.size() > 1) {
    return ShareName(shares[1].first) + " (" + ShareText(shares[1].first, shares[1].second) + ")";
  }
  return "n/a";
}

}  // namespace

Binding AnalyzeBinding(const Summary& s) {
  std::vector<std::string> parts;
  const std::optional<Limit> kv = KvLimit(s);
  if (kv) parts.push_back(kv->text);
  const std::string pool_prefix = AddPoolParts(s, &parts);
  // Shares of step time, largest first.
  Shares shares(s.bound_time_share.begin(), s.bound_time_share.end());
  std::sort(shares.begin(), shares.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [k, v] : shares) {
    if (v > 0) parts.push_back(ShareText(k, v));
  }
  if (s.kv_verify_time_share && *s.kv_verify_time_share > 0) {
    parts.push_back("KV integrity verify " + FormatPercent(*s.kv_verify_time_share) +
                    " of step time");
  }
  const std::optional<Limit> slo = SloLimit(s);
  if (slo) parts.push_back(slo->text);

  Binding b;
  for (size_t i = 0; i < parts.size(); ++i) b.headroom += (i ? "; " : "") + parts[i];
  // KV first: once the pool is full the scheduler queues or retracts, which
  // no faster kernel undoes. The threshold leaves the last page per request.
  if (kv && kv->used >= 0.95) {
    b.binds = "KV capacity";
  } else if (slo && slo->used >= 1.0) {
    b.binds = "SLO";
  } else if (!shares.empty()) {
    b.binds = pool_prefix + ShareName(shares.front().first);
  } else {
    b.binds = "unknown (summary has no bound_time_share)";
  }
  b.next_limit = NextLimit(b, kv, slo, shares, pool_prefix);
  return b;
}

namespace {

Status CheckReportOptions(const ReportOptions& options) {
  if (options.pareto_tokens != "output" && options.pareto_tokens != "total") {
    return Status::Usage("report: --pareto-tokens must be 'output' or 'total', got '" +
                         options.pareto_tokens + "'" +
                         DidYouMean(options.pareto_tokens, {"output", "total"}));
  }
  if (options.usd_per_gpu_hour && !(*options.usd_per_gpu_hour > 0)) {
    return Status::Usage("report: --usd-per-gpu-hour must be > 0");
  }
  return Status::Ok();
}

// Results that differ only in offered load share a configuration; its
// points in order of concurrency.
void GroupConfigs(Analysis& a) {
  std::map<std::string, int> config_of_key;
  for (size_t i = 0; i < a.results.size(); ++i) {
    const Summary& s = a.results[i];
    const std::string key = ConfigKey(s);
    auto [it, inserted] = config_of_key.emplace(key, static_cast<int>(a.configs.size()));
    if (inserted) a.configs.push_back(Config{"", "", 0, {}, &s});
    Point p;
    p.summary = &s;
    p.config = it->second;
    a.configs[it->second].points.push_back(static_cast<int>(i));
    a.points.push_back(p);
    if (a.concurrency_source.empty()) a.concurrency_source = s.concurrency_source;
  }
  LabelConfigs(&a.configs);
  ShortLabels(&a.configs);
  for (auto& c : a.configs) {
    std::stable_sort(c.points.begin(), c.points.end(), [&](int x, int y) {
      const auto& cx = a.results[x].concurrency;
      const auto& cy = a.results[y].concurrency;
      if (cx && cy) return *cx < *cy;
      return cx.has_value() && !cy.has_value();
    });
  }
}

// The --baseline configurations (the first one by default), and each
// configuration's: the nearest baseline listed before it.
Status PickBaselines(Analysis& a) {
  const ReportOptions& options = a.options;
  std::vector<std::string> labels;
  for (const auto& c : a.configs) labels.push_back(c.label);
  for (const auto& name : options.baselines) {
    int found = -1;
    for (size_t i = 0; i < a.configs.size(); ++i) {
      if (a.configs[i].label == name || a.configs[i].short_label == name) {
        found = static_cast<int>(i);
      }
    }
    // A result's own name (scenario, label) also picks its configuration.
    for (size_t i = 0; found < 0 && i < a.points.size(); ++i) {
      if (a.results[i].id == name) found = a.points[i].config;
    }
    if (found < 0) {
      return Status::Usage("report: --baseline: unknown configuration '" + name + "'" +
                           DidYouMean(name, labels));
    }
    a.baseline_configs.push_back(found);
  }
  if (a.baseline_configs.empty()) a.baseline_configs.push_back(0);
  std::sort(a.baseline_configs.begin(), a.baseline_configs.end());
  a.baseline_configs.erase(std::unique(a.baseline_configs.begin(), a.baseline_configs.end()),
                           a.baseline_configs.end());
  // Configurations are numbered in input order, so "listed before" is "<".
  for (size_t c = 0; c < a.configs.size(); ++c) {
    int base = a.baseline_configs.front();
    for (int b : a.baseline_configs) {
      if (b <= static_cast<int>(c)) base = b;
    }
    a.configs[c].baseline = base;
  }
  return Status::Ok();
}

// Interactivity, the Pareto y value, cost per token and what binds.
void ScorePoints(Analysis& a) {
  const ReportOptions& options = a.options;
  for (auto& p : a.points) {
    const Summary& s = *p.summary;
    const auto tpot = s.latency_ms.find("median_tpot");
    if (tpot != s.latency_ms.end() && tpot->second > 0) {
      p.tokens_per_s_per_user = 1000.0 / tpot->second;
    }
    p.pareto_y = options.pareto_tokens == "total" ? s.total_token_throughput_per_gpu
                                                  : s.output_throughput_per_gpu;
    const std::optional<double> price =
        options.usd_per_gpu_hour ? options.usd_per_gpu_hour : s.usd_per_gpu_hour;
    if (price) {
      Cost c;
      c.usd_per_gpu_hour = *price;
      // One second at the measured rate: the same figure as the simulator's
      // run total, at the price this report uses.
      c.usd_per_million_output =
          schema::CostPerMillionTokens(*price, s.gpus, 1.0, s.output_throughput);
      c.usd_per_million_total =
          schema::CostPerMillionTokens(*price, s.gpus, 1.0, s.total_token_throughput);
      p.cost = c;
    }
    p.binding = AnalyzeBinding(s);
  }
}

// Compares each point with the baseline configuration at the nearest
// offered concurrency: cost per token moves with load, so comparing a
// lightly loaded point with a saturated one would credit the wrong lever.
void CompareWithBaselines(Analysis& a) {
  for (size_t i = 0; i < a.points.size(); ++i) {
    Point& p = a.points[i];
    const Config& base = a.configs[a.configs[p.config].baseline];
    if (&base == &a.configs[p.config]) continue;
    int best = base.points.front();
    double best_d = std::numeric_limits<double>::infinity();
    for (int j : base.points) {
      const auto& cj = a.results[j].concurrency;
      const auto& ci = p.summary->concurrency;
      if (!cj || !ci || *cj <= 0 || *ci <= 0) continue;
      const double d = std::fabs(std::log(*cj / *ci));
      if (d < best_d) {
        best_d = d;
        best = j;
      }
    }
    p.baseline_point = best;
    const Point& b = a.points[best];
    if (p.cost && b.cost && std::isfinite(b.cost->usd_per_million_output) &&
        std::isfinite(p.cost->usd_per_million_output)) {
      p.output_cost_change = p.cost->usd_per_million_output / b.cost->usd_per_million_output - 1;
    }
    if (p.cost && b.cost && std::isfinite(b.cost->usd_per_million_total) &&
        std::isfinite(p.cost->usd_per_million_total)) {
      p.total_cost_change = p.cost->usd_per_million_total / b.cost->usd_per_million_total - 1;
    }
  }
}

// Pareto front: no other point is at least as interactive and at least as
// productive per GPU while strictly better in one.
void MarkParetoFront(Analysis& a) {
  for (auto& p : a.points) {
    if (!(p.tokens_per_s_per_user > 0)) continue;
    bool dominated = false;
    for (const auto& q : a.points) {
      if (&q == &p || !(q.tokens_per_s_per_user > 0)) continue;
      if (q.tokens_per_s_per_user >= p.tokens_per_s_per_user && q.pareto_y >= p.pareto_y &&
          (q.tokens_per_s_per_user > p.tokens_per_s_per_user || q.pareto_y > p.pareto_y)) {
        dominated = true;
        break;
      }
    }
    p.on_pareto_front = !dominated;
  }
}

}  // namespace

Result<Analysis> Analyze(std::vector<Summary> results, const ReportOptions& options) {
  if (results.empty()) return Status::Usage("report: no results to report");
  CAPPLAN_RETURN_IF_ERROR(CheckReportOptions(options));
  Analysis a;
  a.options = options;
  a.results = std::move(results);
  GroupConfigs(a);
  CAPPLAN_RETURN_IF_ERROR(PickBaselines(a));
  ScorePoints(a);
  CompareWithBaselines(a);
  MarkParetoFront(a);
  return a;
}

}  // namespace capplan::report
