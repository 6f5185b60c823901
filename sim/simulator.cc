#include "sim/simulator.h"

#include <chrono>
#include <memory>
#include <ostream>

#include "common/progress.h"
#include "sim/event_queue.h"
#include "sim/serving_pool.h"

namespace capplan {

Result<SimResult> Simulate(const SimConfig& config, const std::vector<SimRequestSpec>& specs,
                           StepPricer& pricer) {
  EventQueue q;
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<ServingPool> pool,
                           ServingPool::Create(0, config, specs, pricer, &q));
  const auto wall0 = std::chrono::steady_clock::now();
  // Requests done, rate and ETA, once a run has taken a second.
  ProgressBar bar(config.progress, pool->num_requests(), "simulate");
  int64_t now = 0;
  int64_t events = 0;
  bool shown = false;
  pool->StartArrivals();
  while (!q.empty()) {
    const Event e = q.Pop();
    now = e.time_ns;
    pool->Handle(e);
    if (config.progress != nullptr && (++events & 0x3fff) == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      if (s > 1.0) {
        bar.Update(pool->done());
        shown = true;
      }
    }
  }
  if (shown) bar.Update(pool->done());
  bar.Finish();
  return pool->TakeResult(now);
}

}  // namespace capplan
