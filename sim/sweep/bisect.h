// Largest request rate that meets every SLO, by bisection. Assumes the SLO
// outcome is monotone in the rate (more load never makes latency better),
// which holds for a fixed configuration up to simulation noise; the result is
// the last passing rate probed, within rel_tol of the first failing one.
#ifndef CAPPLAN_SIM_SWEEP_BISECT_H_
#define CAPPLAN_SIM_SWEEP_BISECT_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::sim::sweep {

struct RateProbe {
  double rate = 0;
  bool met = false;
  schema::RunSummary summary;  // the simulation at `rate`
  nlohmann::json detail;       // whatever else the caller wants back (checks)
};

struct BisectOptions {
  double min_rate = 0;
  double max_rate = 0;
  double rel_tol = 0.02;  // stop when (fail - pass) <= rel_tol * pass
  int max_probes = 40;
};

struct BisectResult {
  bool feasible = false;    // the SLOs hold at min_rate
  bool hit_max = false;     // ... and still at max_rate: the range, not an SLO, binds
  std::optional<RateProbe> best;        // largest passing rate probed
  std::optional<RateProbe> first_fail;  // smallest failing rate probed
  int probes = 0;
};

// probe(rate) simulates at `rate`. Probes max_rate first (a lightly loaded
// configuration finishes in one simulation), then min_rate, then bisects.
Result<BisectResult> BisectRate(const BisectOptions& options,
                                const std::function<Result<RateProbe>(double)>& probe);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_BISECT_H_
