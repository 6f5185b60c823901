// PredictionIntervalsJson (public_validation.h): the residuals of the public
// validation as the intervals the simulator reports.
#include <cmath>

#include "calibrate/fit.h"
#include "calibrate/public_validation.h"
#include "hw/profile.h"

namespace capplan::calibrate {

Result<nlohmann::json> PredictionIntervalsJson(const PublicValidation& v) {
  struct Group {
    const char* name;
    std::vector<std::pair<std::string, std::string>> rows;  // class, metric
  };
  const Group groups[] = {
      {"output_throughput", {{"serving", "output_throughput"}}},
      {"ttft", {{"serving", "mean_ttft_ms"}}},
      {"tpot", {{"serving", "mean_itl_ms"}, {"step", "decode_step_ms"}, {"step", "mean_itl_ms"}}},
  };
  nlohmann::json out;
  out["format"] = "capplan.prediction_intervals.v1";
  out["method"] =
      "empirical p10 and p90 of log(measured / predicted) over the public validation rows of "
      "each group (linear interpolation between order statistics); a prediction p is reported "
      "with [p x ratio_lo, p x ratio_hi]; a run that prices an op outside a curve's valid "
      "range gets [p x ratio_lo / widen, p x ratio_hi x widen] (out_of_range).";
  out["generated_by"] = "capplan validate --public --intervals-out validation/intervals.json";
  nlohmann::json gs = nlohmann::json::object();
  for (const Group& g : groups) {
    std::vector<double> logs;
    for (const PublicValidationRow& r : v.rows) {
      if (!r.skipped.empty() || r.predicted <= 0 || r.measured <= 0) continue;
      for (const auto& [cls, metric] : g.rows) {
        if (r.case_class == cls && r.metric == metric) {
          logs.push_back(std::log(r.measured / r.predicted));
        }
      }
    }
    if (logs.empty()) continue;
    gs[g.name] = {{"rows", logs.size()},
                  {"ratio_lo", std::exp(Quantile(logs, 0.1))},
                  {"ratio_hi", std::exp(Quantile(logs, 0.9))}};
  }
  out["groups"] = gs;
  double worst = 0;
  std::string where;
  for (const std::string& name : hw::ShippedProfileNames()) {
    CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile p, hw::LoadHardwareProfile(name));
    for (const auto& [cls, eff] : p.efficiency) {
      for (const hw::EfficiencyCurve* c : {&eff.compute, &eff.memory}) {
        if (c->fit_points > 0 && c->loo_p90_rel_err > worst) {
          worst = c->loo_p90_rel_err;
          where = name + " " + cls;
        }
      }
    }
  }
  out["out_of_range"] = {
      {"widen", 1 + worst},
      {"method",
       "1 + the largest leave-one-out p90 relative time error of a fitted efficiency "
       "class in the shipped profiles (" +
           (where.empty() ? std::string("none fitted") : where) + ")"}};
  return out;
}

}  // namespace capplan::calibrate
