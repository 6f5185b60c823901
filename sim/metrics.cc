#include "sim/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace capplan {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Index: values < 256 map to themselves; above, 128 buckets per power of two
// (the 8 leading bits).
LogHistogram::LogHistogram() : buckets_(256 + 56 * 128, 0) {}

int LogHistogram::Index(int64_t v) {
  if (v < 256) return static_cast<int>(std::max<int64_t>(v, 0));
  const int shift = std::bit_width(static_cast<uint64_t>(v)) - 8;  // >= 1
  return 256 + (shift - 1) * 128 + static_cast<int>((v >> shift) - 128);
}

double LogHistogram::Midpoint(int idx) {
  if (idx < 256) return idx;
  const int shift = (idx - 256) / 128 + 1;
  const int64_t top = (idx - 256) % 128 + 128;
  return static_cast<double>(top << shift) + static_cast<double>(int64_t{1} << shift) / 2.0;
}

void LogHistogram::Add(int64_t v, int64_t weight) {
  buckets_[Index(v)] += weight;
  count_ += weight;
  sum_ += static_cast<double>(v) * static_cast<double>(weight);
}

double LogHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p / 100.0 * count_)));
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return Midpoint(static_cast<int>(i));
  }
  return Midpoint(static_cast<int>(buckets_.size() - 1));
}

}  // namespace capplan
