// Routers: which replica a new request goes to, and which attention rank
// (DP attention) inside it. Registered by name; a scenario's `router` is
// resolved to one once, when the pool is created.
#ifndef CAPPLAN_SIM_ROUTER_H_
#define CAPPLAN_SIM_ROUTER_H_

#include <cstdint>
#include <functional>

#include "common/registry.h"

namespace capplan::sim {

// What a router may look at to pick one of `n` targets. Ties go to the
// lowest index, so runs stay deterministic.
struct RouteQuery {
  int n = 0;
  // Target i's KV load: tokens held and queued.
  std::function<int64_t(int)> kv_load;
  // Requests routed to target i and not finished (what SGLang's router
  // counts as a worker's load).
  std::function<int64_t(int)> in_flight;
  // Cache-aware routing only (null otherwise): the request's prompt blocks
  // found in target i's approximate tree, and the size of that tree.
  std::function<int64_t(int)> matched_blocks;
  std::function<int64_t(int)> tree_blocks;
  int64_t prompt_blocks = 0;
  uint64_t* cursor = nullptr;  // the caller's round-robin counter for this level
};

using RouterFn = int (*)(const RouteQuery& q);

Registry<RouterFn>& Routers();

// True when the router needs the approximate per-target prefix trees.
bool RouterUsesPrefixTrees(const std::string& name);

// SGLang router's cache_aware defaults (sgl-project/sglang, the router's
// RouterConfig: cache_threshold 0.3, balance_abs_threshold 64,
// balance_rel_threshold 1.5; the router's launch_router --help lists them).
inline constexpr double kCacheAwareThreshold = 0.3;
inline constexpr int64_t kCacheAwareBalanceAbs = 64;
inline constexpr double kCacheAwareBalanceRel = 1.5;

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_ROUTER_H_
