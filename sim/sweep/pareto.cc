#include "sim/sweep/pareto.h"

#include <algorithm>

namespace capplan::sim::sweep {

std::vector<ParetoPoint> ParetoFront(std::vector<ParetoPoint> points) {
  // Sort by x descending (y descending on ties); sweep keeping the best y
  // seen: a point is on the front iff its y beats every point with larger x.
  std::sort(points.begin(), points.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.x != b.x) return a.x > b.x;
    if (a.y != b.y) return a.y > b.y;
    return a.id < b.id;
  });
  std::vector<ParetoPoint> front;
  bool have = false;
  double best_y = 0, best_x = 0;
  for (const ParetoPoint& p : points) {
    const bool duplicate = have && p.x == best_x && p.y == best_y;
    if (!have || p.y > best_y || duplicate) {
      front.push_back(p);
      if (!have || p.y > best_y) {
        best_y = p.y;
        best_x = p.x;
      }
      have = true;
    }
  }
  std::reverse(front.begin(), front.end());
  return front;
}

}  // namespace capplan::sim::sweep
