// OrderStatistics against a full sort, on samples shaped as run metrics
// are: wide spreads, values bunched within a fraction of a percent (TPOT
// of a steady batch), many exact ties, zeros and negatives.
#include "sim/order_statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/metrics.h"

namespace capplan::sim {
namespace {

void ExpectSortedRanks(const std::vector<double>& v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = v.size();
  std::vector<size_t> ranks = {0, n - 1, n / 2, n / 2 + 1 < n ? n / 2 + 1 : n - 1, n * 9 / 10,
                               n * 99 / 100, n / 2};
  std::vector<double> out(ranks.size(), -1);
  OrderStatistics(v, ranks, out);
  for (size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(out[i], sorted[ranks[i]]) << "rank " << ranks[i] << " of " << n;
  }
}

TEST(OrderStatistics, MatchesASortOnWideSpreads) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(6.0, 1.5);
  for (size_t n : {1, 2, 3, 100, 4096, 4097, 50000, 300000}) {
    std::vector<double> v(n);
    for (double& x : v) x = dist(rng);
    ExpectSortedRanks(v);
  }
}

TEST(OrderStatistics, MatchesASortOnBunchedValuesAndTies) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> near(40.0, 40.0001);
  std::vector<double> bunched(200000);
  for (double& x : bunched) x = near(rng);
  ExpectSortedRanks(bunched);
  std::vector<double> ties(200000);
  for (size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<double>(i % 3) * 0.5;
  ExpectSortedRanks(ties);
  std::vector<double> same(100000, 12.25);
  ExpectSortedRanks(same);
}

TEST(OrderStatistics, OrdersNegativesAndZerosAsDoublesDo) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> dist(0.0, 1000.0);
  std::vector<double> v(60000);
  for (double& x : v) x = dist(rng);
  for (size_t i = 0; i < v.size(); i += 7) v[i] = 0.0;
  ExpectSortedRanks(v);
}

TEST(OrderStatistics, StatsOfInterpolatesAsASortDoes) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> dist(0.01);
  std::vector<double> v(123457);
  for (double& x : v) x = dist(rng);
  const schema::Stats s = StatsOf(v);
  EXPECT_EQ(*s.median, Percentile(v, 50));
  EXPECT_EQ(*s.p90, Percentile(v, 90));
  EXPECT_EQ(*s.p95, Percentile(v, 95));
  EXPECT_EQ(*s.p99, Percentile(v, 99));
  const schema::Stats none = StatsOf({});
  EXPECT_EQ(*none.median, 0.0);
  EXPECT_EQ(*none.p99, 0.0);
}

}  // namespace
}  // namespace capplan::sim
