// Router decisions on hand-made queries (sim/router.h).
#include "sim/router.h"

#include <gtest/gtest.h>

#include <vector>

namespace capplan::sim {
namespace {

struct Targets {
  std::vector<int64_t> kv, flight, matched, tree;
  uint64_t cursor = 0;
  RouteQuery Query(int64_t prompt_blocks, bool with_trees = true) {
    RouteQuery q;
    q.n = static_cast<int>(kv.size());
    q.kv_load = [this](int i) { return kv[i]; };
    q.in_flight = [this](int i) { return flight[i]; };
    if (with_trees) {
      q.matched_blocks = [this](int i) { return matched[i]; };
      q.tree_blocks = [this](int i) { return tree[i]; };
    }
    q.prompt_blocks = prompt_blocks;
    q.cursor = &cursor;
    return q;
  }
};

int Pick(const char* name, const RouteQuery& q) { return (*Routers().Find(name))(q); }

TEST(SimRouter, RoundRobinAndLeastKv) {
  Targets t{{30, 10, 10}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  EXPECT_EQ(Pick("round_robin", t.Query(0)), 0);
  EXPECT_EQ(Pick("round_robin", t.Query(0)), 1);
  EXPECT_EQ(Pick("least_kv", t.Query(0)), 1);  // tie with 2: the lower index
}

TEST(SimRouter, CacheAwareFollowsTheLongestPrefixAboveThreshold) {
  // 10 prompt blocks: 4 matched on target 2 is 40% > 30%.
  Targets t{{0, 0, 0}, {5, 5, 5}, {1, 0, 4}, {9, 1, 9}};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 2);
  // 3 of 10 is not above 30%: the smallest tree wins.
  t.matched = {3, 0, 0};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 1);
}

// A prefix every target holds (a shared system prompt) is no reason to
// favour target 0: tied targets take turns.
TEST(SimRouter, CacheAwareRotatesAmongTargetsHoldingTheSamePrefix) {
  Targets t{{0, 0, 0}, {5, 5, 5}, {8, 3, 8}, {9, 9, 9}};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 0);
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 2);
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 0);
  t.matched = {8, 3, 9};  // a strictly longest prefix still wins
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 2);
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 2);
}

TEST(SimRouter, CacheAwareBalancesWhenImbalanced) {
  // 100 vs 20 in flight: 80 > 64 and 100 > 1.5 x 20: least loaded, whatever
  // the cache says.
  Targets t{{0, 0}, {100, 20}, {10, 0}, {0, 0}};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 1);
  // 80 vs 20 in flight: 60 is not above 64: the prefix decides.
  t.flight = {80, 20};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 0);
  // 200 vs 150: 50 apart: balanced enough, the prefix decides.
  t.flight = {200, 150};
  EXPECT_EQ(Pick("cache_aware", t.Query(10)), 0);
}

TEST(SimRouter, CacheAwareWithoutContentIsLeastLoaded) {
  Targets t{{0, 0, 0}, {3, 1, 2}, {}, {}};
  EXPECT_EQ(Pick("cache_aware", t.Query(0, /*with_trees=*/false)), 1);
}

}  // namespace
}  // namespace capplan::sim
