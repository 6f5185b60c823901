#include "sim/workload/random.h"

#include <cmath>

namespace capplan::sim {

uint64_t MixSeed(uint64_t seed, uint64_t stream) {
  // Constants are SplitMix64's (golden-ratio increment and its finalizer).
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

WorkloadRng::WorkloadRng(uint64_t seed, uint64_t stream) : engine_(MixSeed(seed, stream)) {}

double WorkloadRng::Uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double WorkloadRng::OpenUniform01() {
  return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53;
}

int64_t WorkloadRng::UniformInt(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (range == 0) return static_cast<int64_t>(engine_());  // the full 64-bit range
  // Reject the top partial bucket so every value is equally likely.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
  uint64_t x;
  do {
    x = engine_();
  } while (x >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % range);
}

double WorkloadRng::StandardNormal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double x, y, s;
  do {
    x = 2.0 * Uniform01() - 1.0;
    y = 2.0 * Uniform01() - 1.0;
    s = x * x + y * y;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = y * f;
  has_spare_normal_ = true;
  return x * f;
}

double WorkloadRng::StandardExponential() { return -std::log(OpenUniform01()); }

double WorkloadRng::Gamma(double shape) {
  if (shape == 1.0) return StandardExponential();
  if (shape < 1.0) {
    return Gamma(shape + 1.0) * std::pow(OpenUniform01(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = StandardNormal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = OpenUniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace capplan::sim
