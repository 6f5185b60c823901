// The search space file of `capplan search --space SPACE.json` (format in
// sim/sweep/README.md): scenario paths with candidate values, the request-rate
// path and range to bisect (or one fixed rate), an optional GPU budget, the
// axis whose smallest passing value to report, how many to print.
#ifndef CAPPLAN_SIM_SWEEP_SEARCH_SPACE_H_
#define CAPPLAN_SIM_SWEEP_SEARCH_SPACE_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/sweep/grid.h"

namespace capplan::sim::sweep {

struct SearchSpace {
  std::string origin;
  // "axes": {"deployment.tp": [4, 8], ...}. JSON objects do not keep order,
  // so axes (and the configurations' order) sort by path.
  std::vector<GridAxis> axes;
  std::string rate_path = "workload.request_rate";
  double rate_min = 0;          // per second, in RateUnit(rate_path)
  double rate_max = 0;          // equal to rate_min: one fixed rate, no bisection
  double rate_rel_tol = 0.02;
  std::optional<int> max_total_gpus;
  // "smallest_passing": an axis path whose values are listed smallest first
  // (host memory, replicas); the report gives, for each setting of the
  // other axes, the first of its values that meets every SLO.
  std::optional<std::string> smallest_passing;
  int top_n = 5;

  bool fixed_rate() const { return rate_min == rate_max; }
};

// The unit of the rate at `path`: "sessions/s" for a sessions workload's
// session_rate, else "req/s".
const char* RateUnit(const std::string& path);

Result<SearchSpace> ParseSearchSpace(const nlohmann::json& doc, const std::string& origin);
Result<SearchSpace> LoadSearchSpace(const std::string& path);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SEARCH_SPACE_H_
