// The sweep library: runs named measurement suites (all when none named) and
// returns the run header plus records. Used by capplan-kernel-bench
// (engine/device) and by `capplan engine microbench`.
#ifndef CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_
#define CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/napkin.h"
#include "kernels/harness/suite.h"

namespace capplan::kernels {

struct SuiteRun {
  RunInfo info;
  std::vector<MeasurementRecord> records;
  std::vector<std::string> suites_run;
  std::vector<std::string> suites_cut;  // not started because the deadline passed
};

// Registers all suites, validates the names (Usage error with "did you
// mean"), and runs them in order. Without --dry-run it needs a CUDA build
// and device (Unavailable otherwise). `commit` and `driver` go into the header.
Result<SuiteRun> RunSuites(const std::vector<std::string>& names, const SuiteOptions& opt,
                           const std::string& commit, const std::string& driver);

// The closing table: kernel, shape, median us, GB/s, TFLOP/s, % of roofline.
std::string FormatSuiteTable(const std::vector<MeasurementRecord>& recs, const Ceilings& c,
                             bool dry_run);

// Compute dtype of a record for the roofline: "fp8" for FP8 GEMMs, "fp32"
// for FMA-only (CUDA-core) kernels recorded with dtype "fp32", else "bf16".
std::string RooflineDtype(const MeasurementRecord& r);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_
