// Prediction intervals on simulated metrics, from the residuals of the public
// validation cases (validation/intervals.json, written by `capplan validate
// --public --intervals-out`). A metric m gets m_lo and m_hi: the prediction
// times the p10 and p90 of measured / predicted for its group.
#ifndef CAPPLAN_SIM_PREDICTION_INTERVALS_H_
#define CAPPLAN_SIM_PREDICTION_INTERVALS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan {

struct IntervalRatio {
  double lo = 1, hi = 1;
  int rows = 0;
};

// group ("output_throughput", "ttft", "tpot") -> ratios. Loaded once.
Result<const std::map<std::string, IntervalRatio>*> GetPredictionIntervals();
Result<std::map<std::string, IntervalRatio>> ParsePredictionIntervals(const std::string& text,
                                                                      const std::string& origin);

// Sets the intervals (written as `<key>_lo` / `<key>_hi`) of the throughput,
// TTFT and TPOT metrics a summary has.
Status AddPredictionIntervals(schema::RunSummary* summary);

}  // namespace capplan

#endif  // CAPPLAN_SIM_PREDICTION_INTERVALS_H_
