#include "sim/simulator.h"

#include <chrono>
#include <memory>
#include <ostream>

#include "sim/event_queue.h"
#include "sim/serving_pool.h"

namespace capplan {

Result<SimResult> Simulate(const SimConfig& config, const std::vector<SimRequestSpec>& specs,
                           StepPricer& pricer) {
  EventQueue q;
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ServingPool> pool,
                           ServingPool::Create(0, config, specs, pricer, &q));
  const auto wall0 = std::chrono::steady_clock::now();
  bool progress_shown = false;
  int64_t now = 0;
  int64_t events = 0;
  pool->StartArrivals();
  while (!q.empty()) {
    const Event e = q.Pop();
    now = e.time_ns;
    pool->Handle(e);
    if (config.progress != nullptr && (++events & 0x3fff) == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      if (s > 1.0) {
        *config.progress << "\rsimulate: " << pool->done() << "/" << pool->num_requests()
                         << " requests" << std::flush;
        progress_shown = true;
      }
    }
  }
  if (progress_shown) *config.progress << "\n";
  return pool->TakeResult(now);
}

}  // namespace capplan
