#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/attention/elementwise.h"
#include "tests/kernels/attention/attention_test_util.h"

namespace capplan::kernels {
namespace {

using testing::RandomBf16;

TEST(ElementwiseCpu, FusedAddRmsNormNormalisesTheSum) {
  const int n = 3, d = 256;
  const auto x = RandomBf16(n * d, 1);
  auto res = RandomBf16(n * d, 2);
  const auto res0 = res;
  std::vector<Bf16> w(d, ToBf16(2.0f));
  std::vector<float> y(n * d);
  FusedAddRmsNormCpu(n, d, 1e-6f, x.data(), res.data(), w.data(), y.data());
  for (int i = 0; i < n; ++i) {
    double ss = 0;
    for (int j = 0; j < d; ++j) {
      const size_t k = static_cast<size_t>(i) * d + j;
      ASSERT_EQ(res[k].bits, ToBf16(ToFloat(x[k]) + ToFloat(res0[k])).bits);
      ss += double(y[k]) * y[k];
    }
    EXPECT_NEAR(std::sqrt(ss / d), 2.0, 1e-4);  // rms(y) = w
  }
}

TEST(ElementwiseCpu, SiluMulKnownValues) {
  std::vector<Bf16> gu = {ToBf16(0.0f), ToBf16(1.0f), ToBf16(-2.0f),  // gate
                          ToBf16(5.0f), ToBf16(2.0f), ToBf16(3.0f)};  // up
  std::vector<float> y(3);
  SiluMulCpu(1, 3, gu.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(y[2], 3.0 * -2.0 / (1.0 + std::exp(2.0)), 1e-6);
}

TEST(ElementwiseCpu, RopeIsARotationOfTheRopePartOnly) {
  const int n = 2, heads = 2, hd = 576, off = 512, rd = 64;  // MLA layout
  const auto x = RandomBf16(n * heads * hd, 3);
  const std::vector<int32_t> pos = {0, 1234};
  std::vector<float> y(x.size());
  RopeCpu(n, heads, hd, off, rd, 10000.0f, pos.data(), x.data(), y.data());
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < hd; ++j) {  // position 0: identity
      ASSERT_EQ(y[h * hd + j], ToFloat(x[h * hd + j]));
    }
    const size_t b = (static_cast<size_t>(1) * heads + h) * hd;
    for (int j = 0; j < off; ++j) ASSERT_EQ(y[b + j], ToFloat(x[b + j]));  // latent untouched
    for (int k = 0; k < rd / 2; ++k) {  // each pair keeps its norm
      const double a = ToFloat(x[b + off + k]), c = ToFloat(x[b + off + k + rd / 2]);
      const double ya = y[b + off + k], yc = y[b + off + k + rd / 2];
      ASSERT_NEAR(ya * ya + yc * yc, a * a + c * c, 1e-4);
    }
  }
  // Pair 0 rotates by exactly the position (inv_freq = 1).
  const size_t b = static_cast<size_t>(1) * heads * hd;
  const double a = ToFloat(x[b + off]), c = ToFloat(x[b + off + 32]);
  EXPECT_NEAR(y[b + off], a * std::cos(1234.0) - c * std::sin(1234.0), 1e-5);
}

}  // namespace
}  // namespace capplan::kernels
