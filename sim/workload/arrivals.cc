#include "sim/workload/arrivals.h"

#include <cmath>

namespace capplan::sim {

std::vector<int64_t> OpenLoopArrivalsNs(int64_t n, double rate_per_s, double burstiness,
                                        ArrivalConvention convention, WorkloadRng& rng) {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(n, 0)), 0);
  if (n <= 0 || std::isinf(rate_per_s)) return out;
  // Gamma(k, theta) with k * theta = 1 / rate keeps the mean gap at 1/rate
  // for every burstiness; k = 1 is the Poisson process.
  const double theta_s = 1.0 / (rate_per_s * burstiness);
  std::vector<double> t(out.size());
  double sum = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 0 && convention == ArrivalConvention::kSglang) {
      t[i] = 0;
      continue;
    }
    // Infinite shape: the gamma gap collapses to its mean.
    sum += std::isinf(burstiness) ? 1.0 / rate_per_s : rng.Gamma(burstiness) * theta_s;
    t[i] = sum;
  }
  double scale = 1.0;
  if (convention == ArrivalConvention::kVllm && sum > 0) {
    scale = (static_cast<double>(n) / rate_per_s) / sum;
  }
  for (size_t i = 0; i < t.size(); ++i) out[i] = std::llround(t[i] * scale * 1e9);
  return out;
}

}  // namespace capplan::sim
