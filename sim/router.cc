#include "sim/router.h"

#include <climits>

namespace capplan {

namespace {

int RoundRobin(int n, const std::function<int64_t(int)>&, uint64_t* cursor) {
  return static_cast<int>((*cursor)++ % static_cast<uint64_t>(n));
}

int LeastKv(int n, const std::function<int64_t(int)>& load, uint64_t*) {
  int best = 0;
  int64_t best_load = INT64_MAX;
  for (int i = 0; i < n; ++i) {
    const int64_t l = load(i);
    if (l < best_load) {
      best_load = l;
      best = i;
    }
  }
  return best;
}

Registry<RouterFn>* BuildRouters() {
  auto* r = new Registry<RouterFn>("router");
  r->Add("round_robin", &RoundRobin, "replicas (and DP-attention ranks) in turn");
  r->Add("least_kv", &LeastKv, "the replica (rank) holding the fewest KV tokens, queued included");
  return r;
}

}  // namespace

Registry<RouterFn>& Routers() {
  static Registry<RouterFn>* const kRouters = BuildRouters();
  return *kRouters;
}

}  // namespace capplan
