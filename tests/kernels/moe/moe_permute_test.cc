#include "kernels/moe/moe_permute.h"

#include <gtest/gtest.h>

#include <random>

namespace capplan::kernels {
namespace {

TEST(MoePermuteTest, GroupsRowsByExpertStably) {
  const int tokens = 37, k = 3, experts = 16;
  std::mt19937 rng(5);
  std::vector<int> ids(tokens * k);
  // Experts 0..7 only, so experts 8..15 get zero rows (the ragged case).
  for (int& e : ids) e = static_cast<int>(rng() % 8);
  auto p = PermuteByExpert(ids.data(), tokens, k, experts);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->expert_offsets.front(), 0);
  EXPECT_EQ(p->expert_offsets.back(), tokens * k);
  for (int e = 8; e < experts; ++e) EXPECT_EQ(p->RowsOf(e), 0);
  EXPECT_LE(p->TouchedExperts(), 8);
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < k; ++j) {
      const int row = p->slot_row[t * k + j];
      EXPECT_EQ(p->row_token[row], t);
      const int e = ids[t * k + j];
      EXPECT_GE(row, p->expert_offsets[e]);
      EXPECT_LT(row, p->expert_offsets[e + 1]);
    }
  }
  // Stable: within an expert, token order is kept.
  for (int e = 0; e < experts; ++e) {
    for (int r = p->expert_offsets[e] + 1; r < p->expert_offsets[e + 1]; ++r) {
      EXPECT_LE(p->row_token[r - 1], p->row_token[r]);
    }
  }
}

TEST(MoePermuteTest, RejectsOutOfRangeIds) {
  const int ids[2] = {0, 4};
  auto p = PermuteByExpert(ids, 1, 2, 4);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidConfig);
}

TEST(MoePermuteTest, ZeroTokens) {
  auto p = PermuteByExpert(nullptr, 0, 8, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->TouchedExperts(), 0);
}

}  // namespace
}  // namespace capplan::kernels
