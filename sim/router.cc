#include "sim/router.h"

#include <climits>

namespace capplan::sim {

namespace {

int RoundRobin(const RouteQuery& q) {
  return static_cast<int>((*q.cursor)++ % static_cast<uint64_t>(q.n));
}

int ArgMin(int n, const std::function<int64_t(int)>& f) {
  int best = 0;
  int64_t best_v = INT64_MAX;
  for (int i = 0; i < n; ++i) {
    const int64_t v = f(i);
    if (v < best_v) {
      best_v = v;
      best = i;
    }
  }
  return best;
}

int LeastKv(const RouteQuery& q) { return ArgMin(q.n, q.kv_load); }

// The next of the `tied` targets whose f(i) == value, in turn (the query's
// cursor).
int TakeTurns(const RouteQuery& q, const std::function<int64_t(int)>& f, int64_t value, int tied) {
  int pick = static_cast<int>((*q.cursor)++ % static_cast<uint64_t>(tied));
  for (int i = 0; i < q.n; ++i) {
    if (f(i) == value && pick-- == 0) return i;
  }
  return 0;
}

// SGLang's cache-aware policy. When the targets are imbalanced (the busiest
// has more than balance_abs requests more than the idlest AND more than
// balance_rel times as many), the least loaded wins. Otherwise the request
// goes where its prompt's longest prefix is cached, if that prefix is more
// than cache_threshold of the prompt; else to the target whose tree is
// smallest (most room to cache something new).
//
// Several targets can hold the longest prefix (a system prompt every one
// has seen). SGLang's router takes the first tenant of the matched node's
// concurrent map (sgl-router src/tree.rs, prefix_match: "Select the first
// tenant"), an order set by hashing, not by worker index; taking the lowest
// index here would favour target 0. Ties rotate instead (the query's
// cursor): deterministic, and no target is favoured. The same holds for the
// smallest-tree fallback (sgl-router's get_smallest_tenant over a map).
int CacheAware(const RouteQuery& q) {
  // Without content identity there is no prefix to follow: least loaded.
  if (!q.matched_blocks) return ArgMin(q.n, q.in_flight);
  int64_t lo = INT64_MAX, hi = 0;
  for (int i = 0; i < q.n; ++i) {
    const int64_t l = q.in_flight(i);
    lo = std::min(lo, l);
    hi = std::max(hi, l);
  }
  if (hi - lo > kCacheAwareBalanceAbs && static_cast<double>(hi) > kCacheAwareBalanceRel * lo) {
    return ArgMin(q.n, q.in_flight);
  }
  int64_t best_match = -1;
  int tied = 0;
  for (int i = 0; i < q.n; ++i) {
    const int64_t m = q.matched_blocks(i);
    if (m > best_match) {
      best_match = m;
      tied = 1;
    } else if (m == best_match) {
      ++tied;
    }
  }
  if (q.prompt_blocks > 0 &&
      static_cast<double>(best_match) > kCacheAwareThreshold * static_cast<double>(q.prompt_blocks)) {
    return TakeTurns(q, q.matched_blocks, best_match, tied);
  }
  // The smallest tree; its ties (empty trees at the start) rotate as well.
  int64_t smallest = INT64_MAX;
  tied = 0;
  for (int i = 0; i < q.n; ++i) {
    const int64_t t = q.tree_blocks(i);
    if (t < smallest) {
      smallest = t;
      tied = 1;
    } else if (t == smallest) {
      ++tied;
    }
  }
  return TakeTurns(q, q.tree_blocks, smallest, tied);
}

Registry<RouterFn>* BuildRouters() {
  auto* r = new Registry<RouterFn>("router");
  r->Add("round_robin", &RoundRobin, "replicas (and DP-attention ranks) in turn");
  r->Add("least_kv", &LeastKv, "the replica (rank) holding the fewest KV tokens, queued included");
  r->Add("cache_aware", &CacheAware,
         "SGLang router's policy: longest cached prefix unless imbalanced, then least loaded");
  return r;
}

}  // namespace

Registry<RouterFn>& Routers() {
  static Registry<RouterFn>* const kRouters = BuildRouters();
  return *kRouters;
}

bool RouterUsesPrefixTrees(const std::string& name) { return name == "cache_aware"; }

}  // namespace capplan::sim
