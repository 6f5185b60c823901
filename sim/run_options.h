// What a scenario run is asked for and what it returns: RunScenario
// (sim/simulate.h), the run driver (sim/run_driver.h) and each pool's
// preparation (sim/prepared_run.h) read the same options, so they sit below
// all three.
#ifndef CAPPLAN_SIM_RUN_OPTIONS_H_
#define CAPPLAN_SIM_RUN_OPTIONS_H_

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema/run_summary.h"

namespace capplan::sim {

struct ReqState;       // sim/sim_state.h
class StepPriceCache;  // sim/step_pricer.h

struct RunOptions {
  std::ostream* progress = nullptr;  // progress bar target (a terminal), or null
  bool want_requests_csv = false;    // RunResult::requests_csv
  // When set, requests.csv streams here as requests finish, instead of into
  // RunResult::requests_csv (a day-long trace's rows need not fit in memory).
  std::ostream* requests_csv_out = nullptr;
  bool want_trace = false;  // Chrome/Perfetto trace JSON
  // Steady decode in closed form (SimConfig::fast_forward); false: one event
  // per iteration, the reference the fast path is tested against.
  bool fast_forward = true;
  // Step prices shared with other runs of the same pools (a sweep's or a
  // search's runs; sim/step_pricer.h). Null: this run prices alone.
  StepPriceCache* price_cache = nullptr;
  // When set, receives every request's final state, in spec order (tests
  // and tools that look at single requests).
  std::vector<ReqState>* requests_out = nullptr;
};

struct RunResult {
  schema::RunSummary summary;
  std::string requests_csv;  // one row per request with its timestamps
  nlohmann::json trace;      // {"traceEvents": [...]} when asked for
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_RUN_OPTIONS_H_
