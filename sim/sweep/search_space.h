// The search space file of `capplan search --space SPACE.json` (format in
// sim/sweep/README.md): scenario paths with candidate values, the request-rate
// path and range to bisect, an optional GPU budget, how many to print.
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
  double rate_min = 0;          // req/s
  double rate_max = 0;          // req/s
  double rate_rel_tol = 0.02;
  std::optional<int> max_total_gpus;
  int top_n = 5;
};

Result<SearchSpace> ParseSearchSpace(const nlohmann::json& doc, const std::string& origin);
Result<SearchSpace> LoadSearchSpace(const std::string& path);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SEARCH_SPACE_H_
