// The one discrete-event loop every run uses: pops events in the documented
// order (sim/event_queue.h) and hands each to the pool it names
// (Event::pool indexes `pools`); an event that belongs to no pool (a KV
// transfer completing) goes to the link between the pools (sim/pd_link.h). One
// co-located pool is the one-pool case, a prefill/decode pair the
// two-pool case.
#ifndef CAPPLAN_SIM_EVENT_LOOP_H_
#define CAPPLAN_SIM_EVENT_LOOP_H_

#include <cstdint>
#include <iosfwd>
#include <span>

#include "sim/event_queue.h"
#include "sim/serving_pool.h"

namespace capplan::sim {

class LinkHandler {
 public:
  virtual ~LinkHandler() = default;
  virtual void OnLinkEvent(const Event& e) = 0;  // e.cls == kTransferDone
};

struct LoopOptions {
  // A terminal: requests done of `exit_pool` (where requests leave), rate and
  // ETA, drawn once a run has taken a second. Null: silent.
  std::ostream* progress = nullptr;
  const ServingPool* exit_pool = nullptr;
};

// Starts `entry`'s arrivals and runs until the queue drains; returns the
// time of the last event.
int64_t RunEventLoop(EventQueue& q, std::span<ServingPool* const> pools, ServingPool* entry,
                     LinkHandler* link, const LoopOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_EVENT_LOOP_H_
