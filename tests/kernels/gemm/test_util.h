// Helpers shared by the GEMM/MoE tests: seeded random data and the relative
// error norm ||out - ref|| / ||ref|| (kernels::RelativeL2Error's figure).
#ifndef CAPPLAN_TESTS_KERNELS_GEMM_TEST_UTIL_H_
#define CAPPLAN_TESTS_KERNELS_GEMM_TEST_UTIL_H_

#include <cmath>
#include <random>
#include <vector>

namespace capplan::kernels::testing {

inline std::vector<float> RandomVector(size_t n, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// NaN anywhere in `out` gives +inf so it can never pass a bound.
inline double RelErr(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace capplan::kernels::testing

#endif  // CAPPLAN_TESTS_KERNELS_GEMM_TEST_UTIL_H_
