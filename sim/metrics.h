// Serving-benchmark statistics as vLLM and SGLang compute them
// (../shared/facts/conventions.md): request-weighted TTFT/TPOT/E2EL with
// numpy-style linearly interpolated percentiles, and token-weighted ITL.
// ITL is pooled over every token of every request, which is too many samples
// to keep for a 100k-request run, so it goes into a log histogram: 128
// buckets per power of two (values < 256 ns exact), so a percentile read at
// the bucket midpoint is within 2^-8 (0.4%) of the exact sample; the mean is
// exact.
#ifndef CAPPLAN_SIM_METRICS_H_
#define CAPPLAN_SIM_METRICS_H_

#include <cstdint>
#include <vector>

namespace capplan {

// numpy.percentile(values, p) with the default linear interpolation; 0 for
// an empty input. Sorts a copy.
double Percentile(std::vector<double> values, double p);
double Mean(const std::vector<double>& values);

class LogHistogram {
 public:
  LogHistogram();
  void Add(int64_t v, int64_t weight = 1);
  int64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / count_ : 0; }
  // Nearest-rank percentile (p in [0, 100]) at the bucket midpoint.
  double Percentile(double p) const;

 private:
  static int Index(int64_t v);
  static double Midpoint(int idx);
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace capplan

#endif  // CAPPLAN_SIM_METRICS_H_
