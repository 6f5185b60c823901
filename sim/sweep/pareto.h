// Pareto set of (x, y) points where both coordinates are "more is better"
// (for search: x = tokens/s/user, y = output tokens/s/GPU).
#ifndef CAPPLAN_SIM_SWEEP_PARETO_H_
#define CAPPLAN_SIM_SWEEP_PARETO_H_

#include <vector>

namespace capplan::sim::sweep {

struct ParetoPoint {
  double x = 0;
  double y = 0;
  int id = 0;  // caller's index
};

// Points not dominated by any other (another is >= in both and > in one),
// sorted by x ascending (so y descends along the frontier). Exact duplicates
// are all kept.
std::vector<ParetoPoint> ParetoFront(std::vector<ParetoPoint> points);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_PARETO_H_
