#include "kernels/harness/timing.h"

#include <algorithm>
#include <chrono>

namespace capplan::kernels {

namespace {
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}
}  // namespace

TimingStats Summarize(std::vector<double> samples_us) {
  std::sort(samples_us.begin(), samples_us.end());
  TimingStats s;
  s.repeats = static_cast<int>(samples_us.size());
  s.median_us = Percentile(samples_us, 0.5);
  s.p10_us = Percentile(samples_us, 0.1);
  s.p90_us = Percentile(samples_us, 0.9);
  return s;
}

TimingStats TimeCpu(const std::function<void()>& fn, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> us;
  us.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return Summarize(std::move(us));
}

}  // namespace capplan::kernels
