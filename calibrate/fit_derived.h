// The parts of a calibration fit that are not one efficiency class's curve
// fit (fit.h): the all-reduce bus bandwidth from nccl-tests records and the
// classes derived from fitted ones.
#ifndef CAPPLAN_CALIBRATE_FIT_DERIVED_H_
#define CAPPLAN_CALIBRATE_FIT_DERIVED_H_

#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "hw/profile.h"

namespace capplan::calibrate {

// All-reduce bus bandwidth from ring records as a fraction of NVLink; NVLS
// records are listed in out->unused with their fraction. `gpu_of[i]` is the
// profile whose NVLink rate normalizes record i.
void FitAllReduce(const MeasurementSet& set, const std::vector<int>& records,
                  const std::vector<const hw::HardwareProfile*>& gpu_of, CalibrationFit* out);

// grouped_gemm_int4 from grouped_gemm and the fitted W4A16 dequant factor
// (gemm_int4 / gemm_bf16 memory max); nothing when either is not fitted.
void DeriveGroupedInt4(const hw::HardwareProfile& base, CalibrationFit* out);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_FIT_DERIVED_H_
