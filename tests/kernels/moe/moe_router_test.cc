#include "kernels/moe/moe_router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace capplan::kernels {
namespace {

// One token's picks: expert ids best first and their weights.
struct Routed {
  std::vector<int> ids;
  std::vector<float> w;
};

Routed RouteOneToken(const RouterConfig& c, const std::vector<float>& logits) {
  Routed r{std::vector<int>(c.top_k), std::vector<float>(c.top_k)};
  const Status s = RouteCpu(c, logits.data(), 1, r.ids.data(), r.w.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

TEST(MoeRouterTest, SoftmaxTopKRenormalized) {
  RouterConfig c;
  c.num_experts = 4;
  c.top_k = 2;
  const Routed r = RouteOneToken(c, {1.0f, 2.0f, 3.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int>{2, 1}));
  // Renormalized softmax over the two picks: e^3/(e^3+e^2).
  EXPECT_NEAR(r.w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(r.w[0] + r.w[1], 1.0, 1e-6);
  c.renormalize = false;
  const Routed raw = RouteOneToken(c, {1.0f, 2.0f, 3.0f, 0.0f});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + 1.0;
  EXPECT_NEAR(raw.w[0], std::exp(3.0) / z, 1e-6);
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
  const Routed r = RouteOneToken(c, {1.0f, 2.0f, 3.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int>{3, 2}));  // sigmoid(0)+1 = 1.5 beats sigmoid(3) = 0.95
  const double s3 = 0.5, s2 = 1.0 / (1.0 + std::exp(-3.0));
  EXPECT_NEAR(r.w[0], 2.827 * s3 / (s3 + s2), 1e-5);
  EXPECT_NEAR(r.w[0] + r.w[1], 2.827, 1e-5);
}

TEST(MoeRouterTest, GroupLimitedKeepsBestGroups) {
  RouterConfig c;
  c.num_experts = 8;
  c.top_k = 2;
  c.scoring = MoeScoring::kSigmoid;
  c.n_group = 2;
  c.topk_group = 1;
  // Group 0 holds the single best expert, group 1 the best pair sum.
  const Routed r = RouteOneToken(c, {5.0f, -5.0f, -5.0f, -5.0f, 2.0f, 2.0f, 0.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int>{4, 5}));
}

TEST(MoeRouterTest, TiesPickLowerIndex) {
  RouterConfig c;
  c.num_experts = 5;
  c.top_k = 2;
  const Routed r = RouteOneToken(c, {0.0f, 1.0f, 1.0f, 1.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int>{1, 2}));
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
