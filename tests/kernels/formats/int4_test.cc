#include "kernels/formats/int4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace capplan::kernels {
namespace {

std::vector<float> Random(int n, uint32_t seed, float offset) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(offset, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Int4, NibbleOrderLowFirst) {
  const uint8_t packed[2] = {0x21, 0x43};
  EXPECT_EQ(Int4Nibble(packed, 0), 1);
  EXPECT_EQ(Int4Nibble(packed, 1), 2);
  EXPECT_EQ(Int4Nibble(packed, 2), 3);
  EXPECT_EQ(Int4Nibble(packed, 3), 4);
}

TEST(Int4, SymmetricExactOnGridAndBoundedElsewhere) {
  // Values on the grid k * s (|k| <= 7, s a BF16 value) round-trip exactly.
  const int rows = 4, cols = 128;
  std::vector<float> w(rows * cols);
  for (int i = 0; i < rows * cols; ++i) w[i] = static_cast<float>(i % 15 - 7) * 0.25f;
  auto q = QuantizeInt4(w.data(), rows, cols, 32, true);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::vector<float> back(w.size());
  DequantizeInt4(*q, back.data());
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(back[i], w[i]) << i;

  for (int group : {32, 128}) {
    const auto r = Random(8 * 256, 9, 0.0f);
    auto qr = QuantizeInt4(r.data(), 8, 256, group, true);
    ASSERT_TRUE(qr.ok());
    std::vector<float> br(r.size());
    DequantizeInt4(*qr, br.data());
    for (size_t i = 0; i < r.size(); ++i) {
      const float s = ToFloat(qr->scales[i / group]);
      // Half a step, plus what BF16 rounding of the scale can push the
      // extreme value (|k| = 7) by: 7 * s * 2^-8.
      ASSERT_LE(std::fabs(br[i] - r[i]), 0.5f * s + 7.0f * s * std::ldexp(1.0f, -8) + 1e-6f) << i;
    }
    EXPECT_DOUBLE_EQ(Int4StorageBytes(*qr), 8 * 256 / 2.0 + 2.0 * 8 * 256 / group);
  }
}

TEST(Int4, AsymmetricHandlesShiftedDistributions) {
  const int rows = 6, cols = 256;
  const auto w = Random(rows * cols, 4, 3.0f);  // mostly positive
  auto sym = QuantizeInt4(w.data(), rows, cols, 128, true);
  auto asym = QuantizeInt4(w.data(), rows, cols, 128, false);
  ASSERT_TRUE(sym.ok() && asym.ok());
  ASSERT_EQ(asym->zeros.size(), static_cast<size_t>(rows * 2));
  std::vector<float> bs(w.size()), ba(w.size());
  DequantizeInt4(*sym, bs.data());
  DequantizeInt4(*asym, ba.data());
  double es = 0, ea = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    es += std::fabs(bs[i] - w[i]);
    ea += std::fabs(ba[i] - w[i]);
    const float s = ToFloat(asym->scales[i / 128]);
    ASSERT_LE(std::fabs(ba[i] - w[i]), 0.5f * s + 15.0f * s * std::ldexp(1.0f, -8) + 1e-5f) << i;
  }
  EXPECT_LT(ea, es);  // the zero point buys back the unused negative half
}

TEST(Int4, RejectsBadGroups) {
  std::vector<float> w(64, 1.0f);
  EXPECT_EQ(QuantizeInt4(w.data(), 1, 64, 64, true).status().code(), StatusCode::kUsage);
  EXPECT_EQ(QuantizeInt4(w.data(), 1, 48, 32, true).status().code(), StatusCode::kUsage);
  w[3] = std::nanf("");
  EXPECT_FALSE(QuantizeInt4(w.data(), 1, 64, 32, true).ok());
}

}  // namespace
}  // namespace capplan::kernels
