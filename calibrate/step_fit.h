// Per-step fixed costs fitted from the public step cases (validation/cases
// of class "step": SGLang decode steps, vLLM batch latencies and ITL).
//
// What a step costs beyond its kernels' roofline time is split between the
// hardware profile (the CUDA-graph replay: overheads.graph_launch_s and
// graph_node_s; the latency of each all-reduce, two per layer under TP) and
// the serving engine (models/engine_step_costs.h: a host cost every step
// pays, and CPU scheduling that an overlapping engine hides behind the GPU),
// per engine version where the public cases differ: SGLang 0.4.5 (S1), vLLM
// 0.8.0 without overlap (S2), vLLM 0.19 with asynchronous scheduling (S3).
// Each step case's prediction is linear in these as long as no overlapped
// CPU time starts to show, so the fit prices every case once on the
// kernel-fitted profiles and the base engine costs, and once per parameter
// with that parameter moved (finite differences through the simulator's own
// step pricer), then solves the relative least squares with every parameter
// >= 0 (all subsets of the active set, the best feasible one). Leave-one-out:
// each row predicted from the linear fit without it. The final values are
// priced again, so the errors reported are the simulator's, not the linear
// model's.
//
// Parameters no step case can separate are held at their base value and
// listed with the reason (step_fit.cc kHeld).
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
  // A dotted profile path ("overheads.graph_node_s") or an engine
  // version's step cost ("sglang 0.4.0 host_s").
  std::string path;
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
// `step_costs`: the base engine step costs (a capplan.engine_step_costs.v1
// document); every step case runs with the entry of its engine and version.
Result<StepFit> FitStepOverheads(const std::map<std::string, nlohmann::json>& profiles,
                                 const nlohmann::json& step_costs, const std::string& cases_dir,
                                 const std::string& scratch_dir);

// Writes the fitted values, each with kind "fitted" and a source naming the
// cases, the rows and the leave-one-out error: the hardware ones into every
// profile, the engine ones into `step_costs`.
Status ApplyStepFit(const StepFit& fit, std::map<std::string, nlohmann::json>* profiles,
                    nlohmann::json* step_costs);

// The fit's section of the calibrate report (Markdown).
std::string StepFitMarkdown(const StepFit& fit);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_STEP_FIT_H_
