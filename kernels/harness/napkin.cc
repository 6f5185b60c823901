#include "kernels/harness/napkin.h"

#include <algorithm>
#include <cstdio>

#include "hw/profile.h"

namespace capplan::kernels {

double Ceilings::FlopsFor(const std::string& compute) const {
  if (compute == "fp8") return fp8_flops_per_s;
  if (compute == "fp32") return fp32_flops_per_s;
  return bf16_flops_per_s;
}

// The ceilings are the hardware profile's own, read by the one profile reader
// (hw/profile.h), so the kernels' fraction of roofline and the simulator's
// roofline can never disagree on a file.
Result<Ceilings> LoadCeilings(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile p, hw::LoadHardwareProfile(path));
  if (!p.has_cost_model) {
    return Status::Invalid(path +
                           ": /compute: the profile has no compute ceilings "
                           "(calibrate/PROFILE.md)");
  }
  Ceilings c;
  c.gpu = p.gpu;
  c.hbm_bytes_per_s = p.hbm_bytes_per_s;
  c.bf16_flops_per_s = p.bf16_flops_per_s;
  c.fp8_flops_per_s = p.fp8_flops_per_s;
  c.fp32_flops_per_s = p.fp32_flops_per_s;
  return c;
}

Result<Ceilings> LoadDefaultCeilings() {
  return LoadCeilings(hw::kDefaultProfileName);
}

Roofline ComputeRoofline(double bytes, double flops, double median_us, const Ceilings& c,
                         const std::string& compute_dtype) {
  Roofline r;
  if (median_us <= 0) return r;
  const double s = median_us * 1e-6;
  r.gb_per_s = bytes / s / 1e9;
  r.tflop_per_s = flops / s / 1e12;
  const double mem_us = c.hbm_bytes_per_s > 0 ? bytes / c.hbm_bytes_per_s * 1e6 : 0;
  const double rate = c.FlopsFor(compute_dtype);
  const double flop_us = rate > 0 ? flops / rate * 1e6 : 0;
  r.memory_bound = mem_us >= flop_us;
  r.ideal_us = std::max(mem_us, flop_us);
  r.fraction = r.ideal_us / median_us;
  return r;
}

std::string NapkinLine(double bytes, double flops, double median_us, const Ceilings& c,
                       const std::string& compute_dtype) {
  const Roofline r = ComputeRoofline(bytes, flops, median_us, c, compute_dtype);
  char buf[200];
  std::snprintf(buf, sizeof(buf), "%10.2f us %9.1f GB/s %8.2f TFLOP/s %5.1f%% of %s roofline",
                median_us, r.gb_per_s, r.tflop_per_s, 100.0 * r.fraction,
                r.memory_bound ? "HBM" : (compute_dtype + " compute").c_str());
  return buf;
}

}  // namespace capplan::kernels
