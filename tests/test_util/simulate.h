// One pool run from a bare SimConfig, without a scenario: the discrete-event
// core's tests and the calibration tests drive a pool this way (a fake or a
// fixed step pricer, hand-made requests). Scenario runs go through
// sim/simulate.h RunScenario and the run driver (sim/run_driver.h).
//
// Replicas behind a router, each with one or more attention ranks (DP
// attention) stepping in lockstep, one event per iteration per replica (a
// decode iteration emits one token for every running request). Event order:
// sim/event_queue.h. Scheduling policy: sim/scheduler.h.
#ifndef CAPPLAN_TESTS_TEST_UTIL_SIMULATE_H_
#define CAPPLAN_TESTS_TEST_UTIL_SIMULATE_H_

#include <memory>
#include <vector>

#include "common/status.h"
#include "sim/event_loop.h"
#include "sim/scheduler.h"
#include "sim/serving_pool.h"
#include "sim/sim_config.h"

namespace capplan::sim {

inline Result<SimResult> Simulate(const SimConfig& config, const RequestSource& specs,
                                  StepPricer& pricer) {
  EventQueue q;
  // A bare config is resolved here: ratios it leaves 0 are SGLang's.
  SimConfig filled = config;
  CAPPLAN_RETURN_IF_ERROR(FillSglangDefaults(&filled.sched));
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ServingPool> pool,
                           ServingPool::Create(0, filled, specs, pricer, &q));
  ServingPool* pools[] = {pool.get()};
  const int64_t end = RunEventLoop(q, pools, pool.get(), nullptr, {.progress = config.progress});
  return pool->TakeResult(end);
}

inline Result<SimResult> Simulate(const SimConfig& config, const std::vector<SimRequestSpec>& specs,
                                  StepPricer& pricer) {
  return Simulate(config, SpecVector(specs), pricer);
}

}  // namespace capplan::sim

#endif  // CAPPLAN_TESTS_TEST_UTIL_SIMULATE_H_
