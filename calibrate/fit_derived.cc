#include "calibrate/fit_derived.h"

#include <algorithm>
#include <cstdio>

#include "calibrate/sig_digits.h"

namespace capplan::calibrate {

// All-reduce bus bandwidth from ring records (nccl-tests busbw, a range or a
// value): the midpoint as a fraction of the record GPU's NVLink rate, the
// median over records. NVLS records the same way into the NVLS bandwidth,
// from those of kNvlsFromGpus GPUs on: below that NCCL runs a ring under
// the NVLS name and the records equal the ring's. One value for every GPU
// count from there on; the provenance lists each count's fraction, so the
// spread it leaves is visible.
void FitAllReduce(const MeasurementSet& set, const std::vector<int>& records,
                  const std::vector<const hw::HardwareProfile*>& gpu_of, CalibrationFit* out) {
  std::vector<double> fr, nvls_fr;
  std::string how;
  for (int i : records) {
    const MeasuredKernel& k = set.records[i];
    const double mid = 0.5 * (k.bus_bandwidth_lo + k.bus_bandwidth_hi);
    const double nvlink = gpu_of[i]->nvlink_bytes_per_s;
    const bool nvls = k.kernel == "nccl_all_reduce" && k.variant == "nvls" &&
                      k.Shape("gpus_min") >= kNvlsFromGpus;
    if (nvls) {
      CollectiveFit& n = out->all_reduce_nvls;
      n.records.push_back(i);
      nvls_fr.push_back(mid / nvlink);
      ++out->used_per_source[k.source];
      n.how += (n.how.empty() ? "" : "; ") + SigDigits(mid / 1e9, 3) + " GB/s NVLS busbw at " +
               std::to_string(k.Shape("gpus_min")) + " " + set.sources[k.source].gpu_model + " = " +
               SigDigits(mid / nvlink, 3) + " of NVLink";
      continue;
    }
    if (k.kernel != "nccl_all_reduce" || k.variant != "ring") {
      out->unused.push_back(
          {i, k.variant + " " + k.kernel + " bus bandwidth " + SigDigits(mid / 1e9, 3) +
                  " GB/s at " + std::to_string(k.Shape("gpus_min")) + "-" +
                  std::to_string(k.Shape("gpus_max")) + " GPUs (" + SigDigits(mid / nvlink, 3) +
                  " of NVLink): reported only; below " + std::to_string(kNvlsFromGpus) +
                  " GPUs NCCL's NVLS runs as the ring"});
      continue;
    }
    fr.push_back(mid / nvlink);
    out->all_reduce.records.push_back(i);
    ++out->used_per_source[k.source];
    how += (how.empty() ? "" : "; ") + SigDigits(mid / 1e9, 3) + " GB/s ring busbw at " +
           std::to_string(k.Shape("gpus_min")) + "-" + std::to_string(k.Shape("gpus_max")) + " " +
           set.sources[k.source].gpu_model + " = " + SigDigits(mid / nvlink, 3) + " of " +
           SigDigits(nvlink / 1e9, 3) + " GB/s NVLink";
  }
  if (!nvls_fr.empty()) {
    out->all_reduce_nvls.fitted = true;
    out->all_reduce_nvls.fraction = Quantile(nvls_fr, 0.5);
    out->all_reduce_nvls.points = static_cast<int>(nvls_fr.size());
  }
  if (fr.empty()) return;
  out->all_reduce.fitted = true;
  out->all_reduce.fraction = Quantile(fr, 0.5);
  out->all_reduce.points = static_cast<int>(fr.size());
  out->all_reduce.how = how;
}

}  // namespace capplan::calibrate
