#include "kernels/harness/napkin.h"

#include <algorithm>
#include <cstdio>

#include "common/data_path.h"
#include "common/json_util.h"

namespace capplan::kernels {

double Ceilings::FlopsFor(const std::string& compute) const {
  if (compute == "fp8") return fp8_flops_per_s;
  if (compute == "fp32") return fp32_flops_per_s;
  return bf16_flops_per_s;
}

namespace {

// One `{value, provenance}` parameter of a profile section (calibrate/PROFILE.md).
Status ProfileValue(JsonObject& section, const char* key, double* out) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject param, section.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(param.Get("value", out, true));
  return param.CheckRange("value", *out, 1e9, 1e17);
}

}  // namespace

// The ceilings are the hardware profile's own (one source of truth for the
// simulator's roofline and the kernels' fraction of roofline); only the keys
// read here are checked, the rest of the profile is the calibrator's business.
Result<Ceilings> LoadCeilings(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject o(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(o.Get("format", &format, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("format", format, {"capplan.profile.v1"}));
  Ceilings c;
  CAPPLAN_RETURN_IF_ERROR(o.Get("gpu", &c.gpu, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject memory, o.Child("memory", true));
  CAPPLAN_RETURN_IF_ERROR(ProfileValue(memory, "hbm_bandwidth_bytes_per_s", &c.hbm_bytes_per_s));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject compute, o.Child("compute", true));
  CAPPLAN_RETURN_IF_ERROR(ProfileValue(compute, "bf16_flops_per_s", &c.bf16_flops_per_s));
  CAPPLAN_RETURN_IF_ERROR(ProfileValue(compute, "fp8_flops_per_s", &c.fp8_flops_per_s));
  CAPPLAN_RETURN_IF_ERROR(ProfileValue(compute, "fp32_flops_per_s", &c.fp32_flops_per_s));
  return c;
}

Result<Ceilings> LoadDefaultCeilings() {
  return LoadCeilings(DataPath("calibrate/profiles/h200-sxm.json"));
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
