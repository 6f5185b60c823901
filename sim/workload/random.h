// Portable random sampling for workload generation.
//
// Why not std::*_distribution: the C++ standard fixes std::mt19937_64's
// output sequence but leaves the algorithms of uniform_int_distribution,
// normal_distribution, gamma_distribution etc. to the library, so the same
// seed gives different workloads under libstdc++, libc++ and MSVC. Every
// sampler here is written out explicitly on top of the raw 64-bit engine
// output. The only remaining platform dependence is the last-ulp accuracy of
// std::log/std::exp/std::cos in the C math library (IEEE 754 requires
// correctly rounded sqrt only), which can move a sample by one token at a
// rounding boundary, never the shape of the distribution.
#ifndef CAPPLAN_SIM_WORKLOAD_RANDOM_H_
#define CAPPLAN_SIM_WORKLOAD_RANDOM_H_

#include <cstdint>
#include <random>

namespace capplan::sim {

class WorkloadRng {
 public:
  // `stream` separates independent sequences drawn from one user seed (input
  // lengths, output lengths, arrivals) so that changing one part of the
  // workload (say the request rate) leaves the others unchanged.
  WorkloadRng(uint64_t seed, uint64_t stream);

  uint64_t NextU64() { return engine_(); }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform01();
  // Uniform in (0, 1): never 0, so log() is finite.
  double OpenUniform01();
  // Uniform integer in [lo, hi] (inclusive), unbiased (rejection sampling).
  int64_t UniformInt(int64_t lo, int64_t hi);
  // Standard normal N(0, 1) by Marsaglia's polar method (no trigonometry,
  // which matters at 100k requests); the second value of each pair is kept
  // for the next call, so the sequence depends only on seed, stream and the
  // order of calls.
  double StandardNormal();
  // Exponential with mean 1.
  double StandardExponential();
  // Gamma(shape, scale=1) by Marsaglia and Tsang (2000), "A simple method
  // for generating gamma variables", ACM TOMS 26(3); for shape < 1 the
  // boost Gamma(shape+1) * U^(1/shape) from the same paper.
  double Gamma(double shape);

 private:
  std::mt19937_64 engine_;
  double spare_normal_ = 0;
  bool has_spare_normal_ = false;
};

// SplitMix64 finalizer (Steele, Lea, Flood 2014): mixes seed and stream
// into a well-spread 64-bit engine seed.
uint64_t MixSeed(uint64_t seed, uint64_t stream);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_RANDOM_H_
