#include "sim/event_loop.h"

#include <chrono>

#include "common/progress.h"

namespace capplan::sim {

int64_t RunEventLoop(EventQueue& q, std::span<ServingPool* const> pools, ServingPool* entry,
                     LinkHandler* link, const LoopOptions& options) {
  const ServingPool* exit = options.exit_pool != nullptr ? options.exit_pool : entry;
  const auto wall0 = std::chrono::steady_clock::now();
  ProgressBar bar(options.progress, exit->num_requests(), "simulate");
  bool shown = false;
  int64_t now = 0, events = 0;
  entry->StartArrivals();
  while (!q.empty()) {
    const Event e = q.Pop();
    now = e.time_ns;
    if (e.cls == EventClass::kTransferDone) {
      link->OnLinkEvent(e);
    } else {
      pools[e.pool]->Handle(e);
    }
    // The clock is read every 16k events only: a fast run must not pay for it.
    if (options.progress != nullptr && (++events & 0x3fff) == 0) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      if (s > 1.0) {
        bar.Update(exit->done());
        shown = true;
      }
    }
  }
  if (shown) bar.Update(exit->done());
  bar.Finish();
  return now;
}

}  // namespace capplan::sim
