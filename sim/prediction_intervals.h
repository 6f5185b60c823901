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

namespace capplan {

struct IntervalRatio {
  double lo = 1, hi = 1;
  int rows = 0;
};

// group ("output_throughput", "ttft", "tpot") -> ratios. Loaded once.
Result<const std::map<std::string, IntervalRatio>*> GetPredictionIntervals();
Result<std::map<std::string, IntervalRatio>> ParsePredictionIntervals(const std::string& text,
                                                                      const std::string& origin);

// Adds `<key>_lo` / `<key>_hi` beside the throughput, TTFT and TPOT keys of
// an end-to-end summary.
Status AddPredictionIntervals(nlohmann::json* summary);

}  // namespace capplan

#endif  // CAPPLAN_SIM_PREDICTION_INTERVALS_H_
