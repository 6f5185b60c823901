// `capplan calibrate --runs CASE... --out overlay.json`: fits a few
// deployment terms to a user's own benchmark runs (validation cases that
// `capplan import-run` wrote) and writes them as a calibration overlay
// (sim/calibration_overlay.h); the shipped profiles are never rewritten.
//
// Terms, each starting at its prior (the shipped value the runs' scenario
// resolves to) with a Gaussian prior of width sigma:
//   host_s                      the engine's host time per step (sigma 3 ms)
//   cpu_schedule_per_request_s  its scheduling time per running request
//                               (sigma 30 us)
//   kernel_scale.<impl>         a time scale per kernel implementation the
//                               runs' deployment names (log-normal, sigma
//                               ln 1.3), told apart by how each moves the
//                               runs' metrics (a step-level metric where the
//                               case has one, else the decode/prefill mix of
//                               TTFT, TPOT and throughput across the runs)
//   kv_capacity_scale           the engine's KV pool over capplan's plan,
//                               read directly from kv_capacity_tokens rows
//                               (the start-up line import-run reads)
//
// The fit minimizes sum (ln(predicted / measured) / kResidualSigma)^2 +
// sum (theta / sigma)^2 by bounded Gauss-Newton over the simulator itself
// (finite differences, every prediction a full simulation; deterministic).
// A term enters only when a one-sigma change moves some metric by 1% and
// its effect is not a near copy of a term already in (greedy, the term
// that alone explains most of the miss first; at most one term per run less one, and one with a single run: the
// metrics of one run move together); every other term keeps its prior and
// the fit says why.
//
// Honesty: each run (or, for one case of several rows, each concurrency) is
// predicted by a fit on the others; the overlay is refused when that
// held-out error is worse than the priors', naming the term whose holding
// helps most.
#ifndef CAPPLAN_CALIBRATE_RUN_FIT_H_
#define CAPPLAN_CALIBRATE_RUN_FIT_H_

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/calibration_overlay.h"

namespace capplan::calibrate {

inline constexpr double kResidualSigma = 0.1;

struct RunFitOptions {
  // Terms held at their prior by name ("host_s", "kernel_scale.X").
  std::vector<std::string> hold;
  // Which rows (case name, label) the fit may see; all when unset. The
  // others are predicted before and after but never fitted.
  std::function<bool(const std::string& case_name, const std::string& label)> fit_row;
  // Which rows are predicted at all (before and after); all when unset.
  std::function<bool(const std::string& case_name, const std::string& label)> scope_row;
  // Skip the leave-one-out pass (and with it the refusal).
  bool skip_held_out = false;
  // The command line recorded in the overlay's provenance.
  std::string generated_by = "capplan calibrate --runs";
};

struct RunFitTerm {
  sim::OverlayTerm term;
  double sigma = 0;  // prior width, in the term's unit (s) or in ln(scale)
  bool identified = false;
};

struct RunFitResult {
  std::vector<RunFitTerm> terms;
  sim::CalibrationOverlay overlay;  // terms, rows, held-out figures, bands, provenance
  // Mean |predicted / measured - 1| in percent.
  double fit_before_pct = 0, fit_after_pct = 0;    // over the fitted rows
  double other_before_pct = 0, other_after_pct = 0;  // over the rows not fitted
  int fitted_rows = 0, other_rows = 0;
  bool held_out_done = false;
  // Set when the held-out error got worse: the message and the term to blame.
  bool refused = false;
  std::string refusal, blame;
};

Result<RunFitResult> FitRuns(const std::vector<std::string>& case_files,
                             const RunFitOptions& options = {});

// What `capplan calibrate --runs` prints: per term prior -> value (or why it
// kept its prior), per run measured / before / after / held-out, the
// held-out error before and after, and the bands. A refusal is not in the
// table: the caller reports it once, as the command's error.
std::string FormatRunFit(const RunFitResult& r);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_RUN_FIT_H_
