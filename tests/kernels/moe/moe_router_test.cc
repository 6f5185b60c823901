#include "kernels/moe/moe_router.h"

#include <gtest/gtest.h>

#include <cmath>

namespace capplan::kernels {
namespace {

TEST(MoeRouterTest, SoftmaxTopKRenormalized) {
  RouterConfig c;
  c.num_experts = 4;
  c.top_k = 2;
  const float logits[4] = {1.0f, 2.0f, 3.0f, 0.0f};
  int ids[2];
  float w[2];
  ASSERT_TRUE(RouteCpu(c, logits, 1, ids, w).ok());
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 1);
  // Renormalized softmax over the two picks: e^3/(e^3+e^2).
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
  c.renormalize = false;
  ASSERT_TRUE(RouteCpu(c, logits, 1, ids, w).ok());
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + 1.0;
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-6);
}

// DeepSeek/Kimi: the bias steers the choice, the weights ignore it, and the
// scaling factor multiplies the renormalized weights.
TEST(MoeRouterTest, SigmoidBiasChoosesUnbiasedWeightsScaled) {
  RouterConfig c;
  c.num_experts = 4;
  c.top_k = 2;
  c.scoring = MoeScoring::kSigmoid;
  c.routed_scaling_factor = 2.827;  // Kimi K2 config (kernels/moe/moe_router.h)
  c.correction_bias = {0.0f, 0.0f, 0.0f, 1.0f};
  const float logits[4] = {1.0f, 2.0f, 3.0f, 0.0f};
  int ids[2];
  float w[2];
  ASSERT_TRUE(RouteCpu(c, logits, 1, ids, w).ok());
  EXPECT_EQ(ids[0], 3);  // sigmoid(0)+1 = 1.5 beats sigmoid(3) = 0.95
  EXPECT_EQ(ids[1], 2);
  const double s3 = 0.5, s2 = 1.0 / (1.0 + std::exp(-3.0));
  EXPECT_NEAR(w[0], 2.827 * s3 / (s3 + s2), 1e-5);
  EXPECT_NEAR(w[0] + w[1], 2.827, 1e-5);
}

TEST(MoeRouterTest, GroupLimitedKeepsBestGroups) {
  RouterConfig c;
  c.num_experts = 8;
  c.top_k = 2;
  c.scoring = MoeScoring::kSigmoid;
  c.n_group = 2;
  c.topk_group = 1;
  // Group 0 holds the single best expert, group 1 the best pair sum.
  const float logits[8] = {5.0f, -5.0f, -5.0f, -5.0f, 2.0f, 2.0f, 0.0f, 0.0f};
  int ids[2];
  float w[2];
  ASSERT_TRUE(RouteCpu(c, logits, 1, ids, w).ok());
  EXPECT_EQ(ids[0], 4);
  EXPECT_EQ(ids[1], 5);
}

TEST(MoeRouterTest, TiesPickLowerIndex) {
  RouterConfig c;
  c.num_experts = 5;
  c.top_k = 2;
  const float logits[5] = {0.0f, 1.0f, 1.0f, 1.0f, 0.0f};
  int ids[2];
  float w[2];
  ASSERT_TRUE(RouteCpu(c, logits, 1, ids, w).ok());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
}

TEST(MoeRouterTest, RejectsBadConfigs) {
  RouterConfig c;
  c.num_experts = 4;
  c.top_k = 5;
  EXPECT_FALSE(ValidateRouterConfig(c).ok());
  c.top_k = 2;
  c.n_group = 3;
  EXPECT_FALSE(ValidateRouterConfig(c).ok());
  c.n_group = 1;
  c.correction_bias = {1.0f};
  EXPECT_FALSE(ValidateRouterConfig(c).ok());
  EXPECT_FALSE(ParseMoeScoring("sigmoidd").ok());
  EXPECT_EQ(*ParseMoeScoring("sigmoid"), MoeScoring::kSigmoid);
}

}  // namespace
}  // namespace capplan::kernels
