#include "sim/router.h"

#include <climits>

namespace capplan {

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

// SGLang's cache-aware policy. When the targets are imbalanced (the busiest
// has more than balance_abs requests more than the idlest AND more than
// balance_rel times as many), the least loaded wins. Otherwise the request
// goes where its prompt's longest prefix is cached, if that prefix is more
// than cache_threshold of the prompt; else to the target whose tree is
// smallest (most room to cache something new).
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
  int best = 0;
  int64_t best_match = -1;
  for (int i = 0; i < q.n; ++i) {
    const int64_t m = q.matched_blocks(i);
    if (m > best_match) {
      best_match = m;
      best = i;
    }
  }
  if (q.prompt_blocks > 0 &&
      static_cast<double>(best_match) > kCacheAwareThreshold * static_cast<double>(q.prompt_blocks)) {
    return best;
  }
  return ArgMin(q.n, q.tree_blocks);
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

}  // namespace capplan
