// The parts of a calibration fit that are not one efficiency class's curve
// fit (fit.h): the all-reduce bus bandwidth from nccl-tests records.
#ifndef CAPPLAN_CALIBRATE_FIT_DERIVED_H_
#define CAPPLAN_CALIBRATE_FIT_DERIVED_H_

#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "hw/profile.h"

namespace capplan::calibrate {

// nccl-tests on 8xH100 (calibrate/measurements/public/k5-nccl-allreduce-h100.json,
// https://github.com/NVIDIA/nccl/issues/1455): NVLS bus bandwidth equals the
// ring's at 2-4 GPUs and exceeds it from 5 on.
inline constexpr int kNvlsFromGpus = 5;

// All-reduce bus bandwidth from ring records as a fraction of NVLink, and
// the NVLS bandwidth from NVLS records of kNvlsFromGpus GPUs on; the other
// NVLS records are listed in out->unused with their fraction. `gpu_of[i]` is the
// profile whose NVLink rate normalizes record i.
void FitAllReduce(const MeasurementSet& set, const std::vector<int>& records,
                  const std::vector<const hw::HardwareProfile*>& gpu_of, CalibrationFit* out);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_FIT_DERIVED_H_
