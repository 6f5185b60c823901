// Output validation shared by every kernel test and measurement suite
// (the style of karpathy/llm.c dev/cuda/common.h): outputs are poisoned
// with NaN before a run so an unwritten element fails loudly, and every
// element must satisfy |out - ref| <= atol + rtol * |ref|. Non-finite
// reference entries are a mask (the reference itself says "undefined here").
#ifndef CAPPLAN_KERNELS_HARNESS_CHECK_H_
#define CAPPLAN_KERNELS_HARNESS_CHECK_H_

#include <cstddef>
#include <string>
#include <vector>

namespace capplan::kernels {

struct CheckResult {
  bool pass = true;
  size_t checked = 0;     // elements compared (finite reference)
  size_t mismatches = 0;  // out of tolerance, including unwritten
  size_t unwritten = 0;   // still NaN (poison) where the reference is finite
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;  // |err| / |ref| over elements with ref != 0
  std::string report;        // first mismatches, one per line
};

// Compares n elements; the report lists the first `max_report` mismatches
// as "[i] out=... ref=... |err|=... tol=...".
CheckResult Check(const float* out, const float* ref, size_t n, double atol, double rtol,
                  int max_report = 10);
CheckResult Check(const std::vector<float>& out, const std::vector<float>& ref, double atol,
                  double rtol, int max_report = 10);

// Fills with quiet NaN: the host-side poison. Device buffers are poisoned by
// memset 0xff, which is NaN in FP32, BF16 and FP8 E4M3 alike.
void Poison(float* data, size_t n);

// Relative L2 error ||out - ref|| / ||ref||: one summary figure per output,
// next to the per-element tolerance check above.
double RelativeL2Error(const float* out, const float* ref, size_t n);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_CHECK_H_
