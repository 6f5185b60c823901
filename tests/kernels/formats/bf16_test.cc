#include "kernels/formats/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace capplan::kernels {
namespace {

TEST(Bf16, AllCodesRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bf16BitsToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16BitsToFloat(FloatToBf16Bits(f))));
      continue;
    }
    ASSERT_EQ(FloatToBf16Bits(f), b);
  }
}

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: tie -> even (1.0).
  EXPECT_EQ(RoundToBf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even).
  EXPECT_EQ(RoundToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(RoundToBf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)),
            1.0f + std::ldexp(1.0f, -7));
}

TEST(Bf16, ErrorWithinHalfUlpOnRandomValues) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1e4f, 1e4f);
  for (int i = 0; i < 10000; ++i) {
    const float x = d(rng);
    EXPECT_LE(std::fabs(RoundToBf16(x) - x), std::fabs(x) * std::ldexp(1.0f, -8)) << x;
  }
}

TEST(Bf16, NanAndInf) {
  EXPECT_TRUE(std::isnan(RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low 16 bits must not become Inf.
  EXPECT_TRUE(std::isnan(RoundToBf16(BitsToFloat(0x7f800001u))));
  EXPECT_TRUE(std::isinf(RoundToBf16(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isinf(RoundToBf16(3.4e38f)));  // above the BF16 max: overflows (IEEE)
}

}  // namespace
}  // namespace capplan::kernels
