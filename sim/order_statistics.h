// Order statistics of a large sample without sorting or copying it: a
// percentile of a million requests' TTFT reads the values a few times
// instead of selecting over a copy once per percentile. The values are
// exactly those a sort would put at each rank.
#ifndef CAPPLAN_SIM_ORDER_STATISTICS_H_
#define CAPPLAN_SIM_ORDER_STATISTICS_H_

#include <cstddef>
#include <span>
#include <vector>

namespace capplan::sim {

// out[i] = the value at position ranks[i] of `v` sorted ascending (NaN
// excluded: the values are times). Each rank must be < v.size(); ranks
// may come in any order and repeat.
void OrderStatistics(std::span<const double> v, std::span<const size_t> ranks,
                     std::span<double> out);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_ORDER_STATISTICS_H_
