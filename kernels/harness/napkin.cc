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

Result<Ceilings> LoadCeilings(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject o(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string format, ignored;
  CAPPLAN_RETURN_IF_ERROR(o.Get("format", &format, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("format", format, {"capplan.ceilings.v1"}));
  Ceilings c;
  CAPPLAN_RETURN_IF_ERROR(o.Get("gpu", &c.gpu, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("hbm_bytes_per_s", &c.hbm_bytes_per_s, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("bf16_flops_per_s", &c.bf16_flops_per_s, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("fp8_flops_per_s", &c.fp8_flops_per_s, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("fp32_flops_per_s", &c.fp32_flops_per_s, true));
  for (const char* k : {"hbm_source", "bf16_source", "fp8_source", "fp32_source"}) {
    CAPPLAN_RETURN_IF_ERROR(o.Get(k, &ignored, true));
  }
  for (const char* k :
       {"hbm_bytes_per_s", "bf16_flops_per_s", "fp8_flops_per_s", "fp32_flops_per_s"}) {
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(k, doc[k].get<double>(), 1e9, 1e17));
  }
  CAPPLAN_RETURN_IF_ERROR(o.Finish());
  return c;
}

Result<Ceilings> LoadDefaultCeilings() {
  return LoadCeilings(DataPath("kernels/harness/h200_ceilings.json"));
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
