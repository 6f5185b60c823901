#include "sim/simulator.h"

#include <memory>

#include "sim/event_loop.h"
#include "sim/serving_pool.h"

namespace capplan::sim {

Result<SimResult> Simulate(const SimConfig& config, const RequestSource& specs,
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

}  // namespace capplan::sim
