// Sizing answers of a search: for each setting of the other axes, the
// smallest value of one axis (host memory per GPU, replicas) that meets
// every SLO, so "how much host memory is enough, and what does adding GPUs
// instead cost" reads off one table.
#ifndef CAPPLAN_SIM_SWEEP_SMALLEST_PASSING_H_
#define CAPPLAN_SIM_SWEEP_SMALLEST_PASSING_H_

#include <vector>

#include "sim/sweep/search.h"
#include "sim/sweep/search_space.h"

namespace capplan::sim::sweep {

// One row per setting of the axes other than space.smallest_passing, in the
// order of their first configuration; empty when the space names no axis.
// "Smallest" is the space's listed order: the axis lists its values
// smallest first, since values may be objects ([] for no host tier).
std::vector<SmallestPassing> FindSmallestPassing(const SearchSpace& space,
                                                 const SearchResult& result);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SMALLEST_PASSING_H_
