// Timing summaries and the CPU timer. Kernel times are reported as median
// and 10th/90th percentiles of repeated runs after warm-up (the median
// resists outliers from clocks and other work on the device); the CUDA event timer is in cuda_timer.h.
#ifndef CAPPLAN_KERNELS_HARNESS_TIMING_H_
#define CAPPLAN_KERNELS_HARNESS_TIMING_H_

#include <functional>
#include <vector>

namespace capplan::kernels {

struct TimingStats {
  double median_us = 0.0;
  double p10_us = 0.0;
  double p90_us = 0.0;
  int repeats = 0;
};

// Percentiles by linear interpolation between order statistics.
TimingStats Summarize(std::vector<double> samples_us);

// Wall-clock timer for CPU paths (dry runs). Not a GPU figure: records made
// with it belong in files marked "dry_run": true.
TimingStats TimeCpu(const std::function<void()>& fn, int warmup, int repeats);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_TIMING_H_
