// Measurement-suite registry. A suite lists the cases of one kernel family
// (shapes, variants); each case checks its result against the CPU reference,
// times it and appends MeasurementRecords. The driver (run_suites.h) runs the
// cases of all suites as one prioritised list, so a failing case is recorded
// and the sweep goes on. Suites are registered by explicit calls from
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
  // The gate before a timed sweep: the smallest one or two cases per kernel
  // and dtype, every one checked against the CPU reference, few repeats and
  // no L2 flush (correctness, not speed).
  bool smoke = false;
  // Keep only shapes whose label (e.g. "b16_ctx4096_q8_kv1_d128_p64")
  // contains one of these substrings; empty keeps all.
  std::vector<std::string> shape_filter;
  // Suites stop starting new shapes once this time has passed.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int timing_repeats = 20;
  int timing_warmup = 3;
  // Timed runs read their operands from HBM (an L2 flush before each repeat).
  bool flush_l2 = true;
  // Each case must finish (host preparation included) within this many
  // seconds of its start; it stops starting new shapes after that.
  double case_budget_s = 90.0;
  uint32_t seed = 1234;

  bool OutOfTime() const { return std::chrono::steady_clock::now() >= deadline; }
  bool Selected(const std::string& shape_label) const;
  // Check against the CPU reference even where it is expensive (smoke runs).
  bool ForceCheck() const { return smoke; }
};

// Case priorities: the mission's shapes (Kimi K2.6 and GLM-5.2 decode at long
// contexts, W4A16 vs FP8 experts at decode sizes, verify) first, then the
// rest of the sweep, then the slow corners.
constexpr int kMissionPriority = 0;
constexpr int kSweepPriority = 1;
constexpr int kLatePriority = 2;

// One case: a unit of work whose failure becomes a record with check
// "error" (the message kept), while the other cases still run.
struct SuiteCase {
  std::string label;     // unique within its suite
  std::string kernel;    // kernel family (for the record of a failed case)
  std::string op_class;  // as MeasurementRecord::op_class
  // Lower runs first; kMissionPriority marks the shapes the planner needs most.
  int priority = kSweepPriority;
  std::function<Status(const SuiteOptions&, MeasurementSink*)> run;
};

// A suite: lists its cases for the options (dry, quick, smoke, filters).
using SuiteFn = std::function<Result<std::vector<SuiteCase>>(const SuiteOptions&)>;

Registry<SuiteFn>& SuiteRegistry();
void RegisterSuite(const std::string& name, SuiteFn fn, const std::string& help = "");

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_SUITE_H_
