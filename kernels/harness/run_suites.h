// The sweep library: runs named measurement suites (all when none named) and
// returns the run header plus records. Used by capplan-kernel-bench
// (engine/device) and by `capplan engine microbench`.
#ifndef CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_
#define CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_

#include <functional>
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
  std::vector<std::string> suites_cut;  // no case started before the deadline
  int cases_run = 0;
  int cases_cut = 0;     // not started: the deadline passed, or the run stopped
  int cases_failed = 0;  // a check "fail" or "error" record
  std::vector<std::string> suites_failed;  // each suite with such a record, once
  std::string stopped;   // why the run stopped early (a sticky device error), or ""
  // Any record that failed its check or could not be measured, or an early stop.
  bool Clean() const { return cases_failed == 0 && stopped.empty(); }
};

struct RunHooks {
  // Called after every case with what was measured so far (the driver writes
  // the file, so an interrupted run keeps its records). An error stops the run.
  std::function<Status(const SuiteRun&)> checkpoint;
  // Called after a case failed: an error means the device cannot go on (a
  // sticky CUDA error) and ends the run, keeping what was measured.
  std::function<Status()> device_health;
};

// The run order of the suites' cases: by priority, and within one priority
// round-robin across the suites (each suite's own order kept), so a short
// budget measures some of every suite's most important cases. Entries are
// {suite index, case index}.
std::vector<std::pair<size_t, size_t>> OrderCases(const std::vector<std::vector<SuiteCase>>& lists);

// Runs the cases of `lists` (lists[i] belongs to suite names[i]) in
// OrderCases order into *run. Each case runs under its own deadline
// (opt.case_budget_s, never past opt.deadline); a case that returns an error
// or throws leaves an error record and the next case runs.
void RunCaseLists(const std::vector<std::string>& names,
                  const std::vector<std::vector<SuiteCase>>& lists, const SuiteOptions& opt,
                  const RunHooks& hooks, SuiteRun* run);

// The record that stands for a case that could not be measured.
MeasurementRecord ErrorRecord(const SuiteCase& c, const std::string& message);

// Registers all suites, validates the names (Usage error with "did you
// mean"), lists their cases and runs them (RunCaseLists). Without --dry-run
// it needs a CUDA build and device (Unavailable otherwise), and checks the
// device after every failed case. `commit` and `driver` go into the header.
Result<SuiteRun> RunSuites(const std::vector<std::string>& names, const SuiteOptions& opt,
                           const std::string& commit, const std::string& driver,
                           const RunHooks& hooks = {});

// The closing table: kernel, shape, median us, GB/s, TFLOP/s, % of roofline.
std::string FormatSuiteTable(const std::vector<MeasurementRecord>& recs, const Ceilings& c,
                             bool dry_run);

// Compute dtype of a record for the roofline: "fp8" for FP8 GEMMs, "fp32"
// for FMA-only (CUDA-core) kernels recorded with dtype "fp32", else "bf16".
std::string RooflineDtype(const MeasurementRecord& r);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_RUN_SUITES_H_
