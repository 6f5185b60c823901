// Open-loop arrival processes, as the two serving benchmarks generate them
// (vllm-project/vllm vllm/benchmarks/serve.py, sgl-project/sglang
// python/sglang/bench_serving.py):
//   sglang: i.i.d. gaps, first request at t = 0, no rescaling. SGLang itself
//           draws exponential gaps only (burstiness 1); other burstiness
//           values give a gamma renewal process with the same mean rate.
//   vllm:   gaps ~ Gamma(shape = burstiness, scale = 1 / (rate * burstiness));
//           arrival i = sum of gaps 0..i (so the first request waits one
//           gap), then all arrivals are rescaled so the last one lands at
//           exactly N / rate, as vLLM does to stabilise throughput across
//           seeds.
#ifndef CAPPLAN_SIM_WORKLOAD_ARRIVALS_H_
#define CAPPLAN_SIM_WORKLOAD_ARRIVALS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/random.h"

namespace capplan::sim {

enum class ArrivalConvention { kSglang, kVllm };

// `n` non-decreasing arrival times in ns. rate_per_s = +inf puts every
// arrival at 0; burstiness = +inf gives evenly spaced arrivals. Requires
// rate_per_s > 0 and burstiness > 0 (callers check).
std::vector<int64_t> OpenLoopArrivalsNs(int64_t n, double rate_per_s, double burstiness,
                                        ArrivalConvention convention, WorkloadRng& rng);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_ARRIVALS_H_
