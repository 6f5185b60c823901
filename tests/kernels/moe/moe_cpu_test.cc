#include "kernels/moe/moe_cpu.h"

#include <gtest/gtest.h>

#include "kernels/gemm/gemm_cpu.h"
#include "kernels/moe/moe_cost.h"
#include "tests/kernels/gemm/test_util.h"

namespace capplan::kernels {
namespace {

RouterConfig KimiLikeRouter(int experts, int top_k) {
  RouterConfig c;
  c.num_experts = experts;
  c.top_k = top_k;
  c.scoring = MoeScoring::kSigmoid;
  c.routed_scaling_factor = 2.827;  // Kimi K2 config (kernels/moe/moe_router.h)
  return c;
}

// The grouped path must equal a naive per-token loop: each token through its
// k experts one at a time, weighted, plus the shared expert.
TEST(MoeCpuTest, GroupedEqualsPerTokenLoop) {
  const int hidden = 64, inter = 32, experts = 8, k = 2, tokens = 13;
  auto w = RandomMoeWeights(hidden, inter, experts, 1, GemmWeightFormat::kBf16, 128, true, 9);
  ASSERT_TRUE(w.ok());
  const RouterConfig rc = KimiLikeRouter(experts, k);
  const auto x = testing::RandomVector(static_cast<size_t>(tokens) * hidden, 10);
  std::vector<float> y(x.size());
  MoePermutation perm;
  ASSERT_TRUE(MoeForwardCpu(*w, rc, x.data(), tokens, y.data(), &perm).ok());
  EXPECT_EQ(perm.expert_offsets.back(), tokens * k);

  std::vector<float> ref(x.size()), row(hidden), out(hidden), logits(experts);
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < hidden; ++i) row[i] = RoundToBf16(x[t * hidden + i]);
    GemmCpuExact(w->router.data(), row.data(), 1, experts, hidden, logits.data());
    int ids[2];
    float wt[2];
    ASSERT_TRUE(RouteCpu(rc, logits.data(), 1, ids, wt).ok());
    std::vector<double> acc(hidden, 0.0);
    for (int j = 0; j < k; ++j) {
      ASSERT_TRUE(ExpertForwardCpu(w->experts[ids[j]], row.data(), 1, out.data()).ok());
      for (int i = 0; i < hidden; ++i) acc[i] += wt[j] * static_cast<double>(out[i]);
    }
    ASSERT_TRUE(ExpertForwardCpu(w->shared[0], row.data(), 1, out.data()).ok());
    for (int i = 0; i < hidden; ++i) ref[t * hidden + i] = static_cast<float>(acc[i] + out[i]);
  }
  EXPECT_LT(testing::RelErr(y, ref), 1e-6);
}

// Same master weights in FP8 (128x128 blocks) and INT4 against BF16; bounds
// as in gemm_cpu_test (two chained GEMMs roughly add their errors).
TEST(MoeCpuTest, QuantizedExpertsCloseToBf16) {
  const int hidden = 256, inter = 128, experts = 8, k = 2, tokens = 9;
  const RouterConfig rc = KimiLikeRouter(experts, k);
  const auto x = testing::RandomVector(static_cast<size_t>(tokens) * hidden, 12);
  auto run = [&](GemmWeightFormat f, int group, bool sym) {
    auto w = RandomMoeWeights(hidden, inter, experts, 1, f, group, sym, 33);
    EXPECT_TRUE(w.ok());
    std::vector<float> y(x.size());
    EXPECT_TRUE(MoeForwardCpu(*w, rc, x.data(), tokens, y.data()).ok());
    return y;
  };
  const auto bf16 = run(GemmWeightFormat::kBf16, 128, true);
  EXPECT_LT(testing::RelErr(run(GemmWeightFormat::kFp8Block128, 128, true), bf16), 0.12);
  EXPECT_LT(testing::RelErr(run(GemmWeightFormat::kInt4, 32, true), bf16), 0.3);
  EXPECT_LT(testing::RelErr(run(GemmWeightFormat::kInt4, 128, false), bf16), 0.3);
}

TEST(MoeCpuTest, RejectsMismatchedRouter) {
  auto w = RandomMoeWeights(32, 32, 4, 0, GemmWeightFormat::kBf16, 128, true, 1);
  ASSERT_TRUE(w.ok());
  const RouterConfig rc = KimiLikeRouter(8, 2);
  std::vector<float> x(32), y(32);
  EXPECT_EQ(MoeForwardCpu(*w, rc, x.data(), 1, y.data()).code(), StatusCode::kInvalidConfig);
}

TEST(MoeCostTest, TouchedExpertsAndDecodeBytes) {
  EXPECT_NEAR(ExpectedTouchedExperts(1, 384, 8), 8.0, 1e-9);
  EXPECT_NEAR(ExpectedTouchedExperts(100000, 384, 8), 384.0, 1e-6);
  // Kimi K2.6 at EP8: 48 experts per rank, H 7168, I 2048, INT4 g32.
  MoeShape s{1, 7168, 2048, 48, 8};
  const GemmCost c = MoeExpertsCost(s, 8, GemmWeightFormat::kInt4, 32);
  const double per_expert = 3.0 * 7168 * 2048 * (0.5 + 2.0 / 32);
  EXPECT_NEAR(c.weight_bytes, 8 * per_expert, 1.0);
  EXPECT_DOUBLE_EQ(c.flops, 8.0 * 3 * 2 * 7168 * 2048);
}

}  // namespace
}  // namespace capplan::kernels
