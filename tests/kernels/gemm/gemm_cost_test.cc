#include "kernels/gemm/gemm_cost.h"

#include <gtest/gtest.h>

namespace capplan::kernels {
namespace {

TEST(GemmCostTest, FlopsAndBytes) {
  const GemmCost c = DenseGemmCost(16, 7168, 2048, GemmWeightFormat::kBf16);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 16 * 7168 * 2048);
  EXPECT_DOUBLE_EQ(c.weight_bytes, 2.0 * 7168 * 2048);
  EXPECT_DOUBLE_EQ(c.act_bytes, 2.0 * 16 * 2048);
  EXPECT_DOUBLE_EQ(c.out_bytes, 2.0 * 16 * 7168);
}

// Marlin's "ideal 3.87x" over FP16 for g128 INT4 (IST-DASLab/marlin
// README.md) is the
// weight-byte ratio 2 / (0.5 + 2/128).
TEST(GemmCostTest, Int4Group128IsMarlinsIdealRatio) {
  const double bf16 = WeightBytes(4096, 4096, GemmWeightFormat::kBf16);
  const double int4 = WeightBytes(4096, 4096, GemmWeightFormat::kInt4, 128);
  EXPECT_NEAR(bf16 / int4, 3.87, 0.01);
  // Group 32 (Kimi K2.6) costs 4x the scales; asymmetric adds zero points.
  EXPECT_GT(WeightBytes(4096, 4096, GemmWeightFormat::kInt4, 32), int4);
  EXPECT_GT(WeightBytes(4096, 4096, GemmWeightFormat::kInt4, 128, true), int4);
}

TEST(GemmCostTest, Fp8BlockScalesCountPartialBlocks) {
  const double b = WeightBytes(129, 256, GemmWeightFormat::kFp8Block128);
  EXPECT_DOUBLE_EQ(b, 129.0 * 256 + 4.0 * 2 * 2);
  const GemmCost c = DenseGemmCost(3, 129, 256, GemmWeightFormat::kFp8Block128);
  EXPECT_DOUBLE_EQ(c.act_bytes, 3.0 * 256 + 4.0 * 3 * 2);
}

}  // namespace
}  // namespace capplan::kernels
