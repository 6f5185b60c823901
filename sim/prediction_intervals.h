// Prediction intervals on simulated metrics, from the residuals of the public
// validation cases (validation/intervals.json, written by `capplan validate
// --public --intervals-out`). A metric m gets m_lo and m_hi: the prediction
// times the p10 and p90 of measured / predicted for its group, widened to
// [lo / w, hi x w] when the run priced an op at a shape outside the range a
// profile curve was fitted or anchored on (the cost model's "outside the
// profile's valid range" warnings): w is the file's out_of_range.widen
// (validation/README.md says how it is derived).
//
// A run whose ops were priced partly by kernel tables measured at another
// engine or release than the deployment's (cross-version, hw/profile.h
// CrossVersionNote) is widened again, by 1 + D: D is a pool's
// cross_version_drift, the sum over those ops of their busy time times
// their table's version_drift, over the pool's busy time (so a table that
// drifts 12% and prices half the busy time adds 6%); with several pools the
// largest D. The interval becomes [lo / (w (1 + D)), hi x w (1 + D)].
#ifndef CAPPLAN_SIM_PREDICTION_INTERVALS_H_
#define CAPPLAN_SIM_PREDICTION_INTERVALS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::sim {

struct IntervalRatio {
  double lo = 1, hi = 1;
  int rows = 0;
};

struct PredictionIntervals {
  // group ("output_throughput", "ttft", "tpot") -> ratios.
  std::map<std::string, IntervalRatio> groups;
  double out_of_range_widen = 1;  // >= 1
};

// Loaded once.
Result<const PredictionIntervals*> GetPredictionIntervals();
Result<PredictionIntervals> ParsePredictionIntervals(const std::string& text,
                                                     const std::string& origin);

// True when a pool's warnings say an op was priced outside a curve's valid
// range, or by a kernel table assumed from another implementation's.
bool HasOutOfRangeShapes(const schema::RunSummary& summary);

// A closed loop's measured window below this occupancy (mean requests in
// flight / concurrency, sim/steady_state.h) has not reached steady state.
// A window short by 2% moves throughput by less than 2% (its smaller
// batches step faster), so any two windows at or above it answer within
// the 2% a planner reads as one answer (tests/sim/steady_state_test.cc).
inline constexpr double kSteadyOccupancy = 0.98;

// The largest pool's cross_version_drift; 0 when no op was priced
// cross-version.
double CrossVersionDrift(const schema::RunSummary& summary);

// Sets the intervals (written as `<key>_lo` / `<key>_hi`) of the throughput,
// TTFT and TPOT metrics a summary has, widened when HasOutOfRangeShapes and
// by 1 + CrossVersionDrift, then by WidenForShortWindow.
Status AddPredictionIntervals(schema::RunSummary* summary);

// Widens every interval by the summary's window occupancy when that is below
// kSteadyOccupancy: a window at occupancy o moves a metric by up to a factor
// 1/o from its steady value.
void WidenForShortWindow(schema::RunSummary* s);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_PREDICTION_INTERVALS_H_
