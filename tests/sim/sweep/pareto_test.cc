#include <gtest/gtest.h>

#include "sim/sweep/pareto.h"

namespace capplan::sim::sweep {
namespace {

TEST(ParetoTest, KeepsOnlyNonDominatedSortedByX) {
  // (x, y): 3 dominates 1 (same x, higher y); 4 is dominated by 2.
  auto front = ParetoFront({{10, 100, 0}, {20, 80, 1}, {10, 120, 2}, {15, 70, 3}, {30, 10, 4},
                            {30, 10, 5}});
  std::vector<int> ids;
  for (const auto& p : front) ids.push_back(p.id);
  ASSERT_EQ(front.size(), 4u);
  EXPECT_EQ(front[0].id, 2);
  EXPECT_EQ(front[1].id, 1);
  EXPECT_EQ(front[2].x, 30);
  EXPECT_EQ(front[3].x, 30);  // exact duplicates both kept
  EXPECT_TRUE(ParetoFront({}).empty());
}

}  // namespace
}  // namespace capplan::sim::sweep
