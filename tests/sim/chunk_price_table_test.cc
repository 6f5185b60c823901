#include "sim/chunk_price_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace capplan::sim {
namespace {

StepCost CostOf(double s) {
  StepCost c;
  c.seconds = s;
  return c;
}

// Past many growths every key finds its own price, the references handed
// out earlier still read theirs, and keys never stored are not found.
TEST(ChunkPriceTable, FindsEveryStoredKeyAcrossGrowth) {
  ChunkPriceTable t;
  std::vector<const StepCost*> stored;
  for (int64_t i = 0; i < 20'000; ++i) {
    const int64_t key[4] = {i % 64, i * 37, 8192 + i % 17, 0};
    ASSERT_EQ(t.Find(key), nullptr);
    stored.push_back(&t.Insert(key, CostOf(static_cast<double>(i))));
  }
  EXPECT_EQ(t.size(), 20'000u);
  for (int64_t i = 0; i < 20'000; ++i) {
    const int64_t key[4] = {i % 64, i * 37, 8192 + i % 17, 0};
    const StepCost* c = t.Find(key);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c, stored[static_cast<size_t>(i)]);
    EXPECT_EQ(c->seconds, static_cast<double>(i));
    const int64_t other[4] = {i % 64, i * 37, 8192 + i % 17, 1};
    EXPECT_EQ(t.Find(other), nullptr);
  }
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  const int64_t key[4] = {0, 0, 8192, 0};
  EXPECT_EQ(t.Find(key), nullptr);
  EXPECT_EQ(t.Insert(key, CostOf(2.5)).seconds, 2.5);
  EXPECT_EQ(t.Find(key)->seconds, 2.5);
}

}  // namespace
}  // namespace capplan::sim
