// Per-step fixed costs fitted from the public step cases (validation/cases
// of class "step": SGLang decode steps, vLLM batch latencies and ITL).
//
// What a step costs beyond its kernels' roofline time is a handful of
// profile parameters the simulator already reads: the CUDA-graph replay's
// fixed cost per step (overheads.graph_launch_s, which also carries what
// every step pays once: sampling's host side, the output copy), the CPU
// scheduling per step that shows when the engine does not overlap it with
// the GPU (overheads.cpu_schedule_s) and the latency of each all-reduce
// (collectives.all_reduce.latency_s: two per layer under TP). Each step
// case's prediction is linear in them as long as no overlapped CPU time
// starts to show, so the fit prices every case once on the kernel-fitted
// profiles and once per parameter with that parameter moved (finite
// differences through the simulator's own step pricer), then solves the
// relative least squares with every parameter >= 0 (all subsets of the
// active set, the best feasible one). Leave-one-out: each row predicted from
// the linear fit without it. The final profiles are priced again, so the
// errors reported are the simulator's, not the linear model's.
//
// Parameters no step case can separate are held at the base profile's
// value and listed (eager launch per kernel: every case runs CUDA graphs;
// per-request CPU time: hidden by overlap or confounded with the per-step
// time in the one non-overlapped engine).
#ifndef CAPPLAN_CALIBRATE_STEP_FIT_H_
#define CAPPLAN_CALIBRATE_STEP_FIT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::calibrate {

struct StepFitRow {
  std::string case_name, label, metric;
  double measured = 0;
  double before = 0;  // predicted on the kernel-fitted profiles, base overheads
  double after = 0;   // predicted on the final profiles
  double loo = 0;     // linear leave-one-out prediction
};

struct StepFitParam {
  std::string path;  // dotted path in the profile ("overheads.graph_launch_s")
  double base = 0, value = 0;
  bool at_zero = false;  // the non-negativity bound is active
  std::string why;       // what identifies it
};

struct StepFit {
  std::vector<StepFitParam> params;
  std::vector<std::string> held;  // "path: why"
  std::vector<StepFitRow> rows;
  // Relative time error |pred / measured - 1| over the rows.
  double mape_before = 0, mape_after = 0, loo_median = 0, loo_p90 = 0;
};

// `profiles`: name -> profile document (the kernel-fitted profiles); the
// step cases under `cases_dir` that name these profiles are priced on them
// (written to `scratch_dir` as files). Returns the fit; the caller writes
// the values into the documents (ApplyStepFit).
Result<StepFit> FitStepOverheads(const std::map<std::string, nlohmann::json>& profiles,
                                 const std::string& cases_dir, const std::string& scratch_dir);

// Writes the fitted values, each with kind "fitted" and a source naming the
// cases, the rows and the leave-one-out error, into every document.
void ApplyStepFit(const StepFit& fit, std::map<std::string, nlohmann::json>* profiles);

// The fit's section of the calibrate report (Markdown).
std::string StepFitMarkdown(const StepFit& fit);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_STEP_FIT_H_
