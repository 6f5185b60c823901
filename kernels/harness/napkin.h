// Napkin math: achieved GB/s and TFLOP/s from the bytes and FLOPs a kernel
// must move/do and its median time, against the ceilings of a hardware
// profile (hw::kDefaultProfileName by default, the one the simulator
// prices steps with; each figure names its source there). Fraction of roofline = ideal time / measured time, where
// ideal time = max(bytes / HBM bandwidth, flops / compute rate).
#ifndef CAPPLAN_KERNELS_HARNESS_NAPKIN_H_
#define CAPPLAN_KERNELS_HARNESS_NAPKIN_H_

#include <string>

#include "common/status.h"

namespace capplan::kernels {

struct Ceilings {
  std::string gpu;
  double hbm_bytes_per_s = 0;
  double bf16_flops_per_s = 0;
  double fp8_flops_per_s = 0;
  double fp32_flops_per_s = 0;
  // FLOP rate for a compute dtype name ("bf16", "fp8", "fp32").
  double FlopsFor(const std::string& compute) const;
};

// Reads the ceilings (memory.hbm_bandwidth_bytes_per_s, compute.{bf16,fp8,
// fp32}_flops_per_s) of a capplan.profile.v1 file; errors name the file and
// JSON path.
Result<Ceilings> LoadCeilings(const std::string& path);
// The default profile's ceilings (hw::kDefaultProfileName).
Result<Ceilings> LoadDefaultCeilings();

struct Roofline {
  double gb_per_s = 0;       // achieved
  double tflop_per_s = 0;    // achieved
  double ideal_us = 0;       // max of the two floors
  double fraction = 0;       // ideal_us / median_us
  bool memory_bound = true;  // which floor is larger
};

Roofline ComputeRoofline(double bytes, double flops, double median_us, const Ceilings& c,
                         const std::string& compute_dtype);

// One line: "1234.5 us  2710 GB/s  12.3 TFLOP/s  63% of HBM roofline".
std::string NapkinLine(double bytes, double flops, double median_us, const Ceilings& c,
                       const std::string& compute_dtype);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_NAPKIN_H_
