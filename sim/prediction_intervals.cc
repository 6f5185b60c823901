#include "sim/prediction_intervals.h"

#include <algorithm>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/cost_model.h"

namespace capplan::sim {

Result<PredictionIntervals> ParsePredictionIntervals(const std::string& text,
                                                     const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("format", format, {"capplan.prediction_intervals.v1"}));
  root.Touch("method");
  root.Touch("generated_by");
  PredictionIntervals out;
  if (root.Has("out_of_range")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child("out_of_range", true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("widen", &out.out_of_range_widen, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("widen", out.out_of_range_widen, 1, 100));
    o.Touch("method");
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject groups, root.Child("groups", true));
  for (const std::string name : {"output_throughput", "ttft", "tpot"}) {
    if (!groups.Has(name)) continue;
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject g, groups.Child(name, true));
    IntervalRatio r;
    CAPPLAN_RETURN_IF_ERROR(g.Get("ratio_lo", &r.lo, true));
    CAPPLAN_RETURN_IF_ERROR(g.Get("ratio_hi", &r.hi, true));
    CAPPLAN_RETURN_IF_ERROR(g.Get("rows", &r.rows, true));
    CAPPLAN_RETURN_IF_ERROR(g.CheckRange("ratio_lo", r.lo, 1e-6, 1e6));
    CAPPLAN_RETURN_IF_ERROR(g.CheckRange("ratio_hi", r.hi, r.lo, 1e6));
    CAPPLAN_RETURN_IF_ERROR(g.CheckRange("rows", r.rows, 1, 1e6));
    CAPPLAN_RETURN_IF_ERROR(g.Finish());
    out.groups[name] = r;
  }
  CAPPLAN_RETURN_IF_ERROR(groups.Finish());
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return out;
}

Result<const PredictionIntervals*> GetPredictionIntervals() {
  static const Result<PredictionIntervals> kIntervals = []() -> Result<PredictionIntervals> {
    const std::string path = DataPath("validation/intervals.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParsePredictionIntervals(text, path);
  }();
  if (!kIntervals.ok()) return kIntervals.status();
  return &kIntervals.value();
}

bool HasOutOfRangeShapes(const schema::RunSummary& summary) {
  for (const schema::PoolSummary& p : summary.pools) {
    if (!p.warnings) continue;
    for (const std::string& line : *p.warnings) {
      // The cost model's wording (sim/cost_model.cc).
      if (line.find(kOutOfRangeText) != std::string::npos ||
          line.find(kAssumedKernelText) != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

double CrossVersionDrift(const schema::RunSummary& summary) {
  double d = 0;
  for (const schema::PoolSummary& p : summary.pools) {
    d = std::max(d, p.cross_version_drift.value_or(0));
  }
  return d;
}

Status AddPredictionIntervals(schema::RunSummary* summary) {
  CAPPLAN_ASSIGN_OR_RETURN(const PredictionIntervals* iv, GetPredictionIntervals());
  const double widen = (HasOutOfRangeShapes(*summary) ? iv->out_of_range_widen : 1.0) *
                       (1 + CrossVersionDrift(*summary));
  const auto* intervals = &iv->groups;
  const std::map<std::string, std::vector<std::string>> keys = {
      {"output_throughput", {"output_throughput", "output_throughput_per_gpu"}},
      {"ttft", {"mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms"}},
      {"tpot", {"mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p95_tpot_ms", "p99_tpot_ms"}},
  };
  for (const auto& [group, names] : keys) {
    auto it = intervals->find(group);
    if (it == intervals->end()) continue;
    for (const std::string& k : names) {
      const std::optional<double> x = schema::Metric(*summary, k);
      if (!x) continue;
      summary->intervals[k] = {*x * it->second.lo / widen, *x * it->second.hi * widen};
    }
  }
  WidenForShortWindow(summary);
  return Status::Ok();
}

void WidenForShortWindow(schema::RunSummary* s) {
  if (!s->window_occupancy || *s->window_occupancy >= kSteadyOccupancy) return;
  const double o = std::max(*s->window_occupancy, 1e-3);
  for (auto& [key, iv] : s->intervals) {
    iv.lo *= o;
    iv.hi /= o;
  }
}

}  // namespace capplan::sim
