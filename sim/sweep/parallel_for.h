// A minimal thread pool for independent work items (sweep points, search
// configurations): `jobs` threads take the next index until all are done.
#ifndef CAPPLAN_SIM_SWEEP_PARALLEL_FOR_H_
#define CAPPLAN_SIM_SWEEP_PARALLEL_FOR_H_

#include <cstdint>
#include <functional>

#include "common/status.h"

namespace capplan::sim::sweep {

// Calls fn(i) for i in [0, n) on min(jobs, n) threads (jobs <= 0: hardware
// concurrency). After the first error no new items start; that error (the
// one with the lowest index among those that failed) is returned.
Status ParallelFor(int64_t n, int jobs, const std::function<Status(int64_t)>& fn);

int DefaultJobs();

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_PARALLEL_FOR_H_
