#include "sim/simulator.h"

#include <memory>

#include "sim/event_loop.h"
#include "sim/serving_pool.h"

namespace capplan::sim {

Result<SimResult> Simulate(const SimConfig& config, const RequestSource& specs,
                           StepPricer& pricer) {
  EventQueue q;
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ServingPool> pool,
                           ServingPool::Create(0, config, specs, pricer, &q));
  ServingPool* pools[] = {pool.get()};
  const int64_t end = RunEventLoop(q, pools, pool.get(), nullptr, {.progress = config.progress});
  return pool->TakeResult(end);
}

}  // namespace capplan::sim
