// Measurement-suite registry. A suite sweeps one kernel family over shapes,
// checks each result against its CPU reference, times it and appends
// MeasurementRecords. Suites are registered by explicit calls from
// RegisterAllSuites() (all_suites.h), not static initialisers, which the
// linker drops from static libraries.
#ifndef CAPPLAN_KERNELS_HARNESS_SUITE_H_
#define CAPPLAN_KERNELS_HARNESS_SUITE_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/registry.h"
#include "common/status.h"
#include "kernels/harness/measurement.h"

namespace capplan::kernels {

struct SuiteOptions {
  // CPU paths only: run the reference on small shapes and record CPU
  // wall-clock time (the file is marked "dry_run": true).
  bool dry_run = true;
  // A few shapes per suite (CI smoke runs).
  bool quick = false;
  // Keep only shapes whose label (e.g. "b16_ctx4096_q8_kv1_d128_p64")
  // contains one of these substrings; empty keeps all.
  std::vector<std::string> shape_filter;
  // Suites stop starting new shapes once this time has passed.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int timing_repeats = 20;
  int timing_warmup = 3;
  uint32_t seed = 1234;

  bool OutOfTime() const { return std::chrono::steady_clock::now() >= deadline; }
  bool Selected(const std::string& shape_label) const;
};

using SuiteFn = std::function<Status(const SuiteOptions&, MeasurementSink*)>;

Registry<SuiteFn>& SuiteRegistry();
void RegisterSuite(const std::string& name, SuiteFn fn, const std::string& help = "");

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_SUITE_H_
