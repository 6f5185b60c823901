// Routers: which replica a new request goes to, and which attention rank
// (DP attention) inside it. Registered by name; a scenario's `router` is
// resolved to one once, when the pool is created.
#ifndef CAPPLAN_SIM_ROUTER_H_
#define CAPPLAN_SIM_ROUTER_H_

#include <cstdint>
#include <functional>

#include "common/registry.h"

namespace capplan {

// Picks one of `n` targets. `load(i)` is target i's KV load (tokens held and
// queued); `cursor` is the caller's per-level round-robin counter. Ties go to
// the lowest index, so runs stay deterministic.
using RouterFn = int (*)(int n, const std::function<int64_t(int)>& load, uint64_t* cursor);

Registry<RouterFn>& Routers();

}  // namespace capplan

#endif  // CAPPLAN_SIM_ROUTER_H_
