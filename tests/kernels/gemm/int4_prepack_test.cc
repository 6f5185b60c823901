#include "kernels/gemm/int4_prepack.h"

#include <gtest/gtest.h>

#include "tests/kernels/gemm/test_util.h"

namespace capplan::kernels {
namespace {

class Int4PrepackTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Round trip with N not a multiple of the 64-row tile (padding path).
TEST_P(Int4PrepackTest, RoundTripsAndPadsWithZeros) {
  const auto [group, sym] = GetParam();
  const int n = 100, k = 256;
  const auto w = testing::RandomVector(static_cast<size_t>(n) * k, 21);
  auto q = QuantizeInt4(w.data(), n, k, group, sym);
  ASSERT_TRUE(q.ok());
  auto p = PrepackInt4(*q);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->n_padded, 128);
  EXPECT_EQ(p->qweight.size(), static_cast<size_t>(128) * k / 8);
  const Int4Weights back = UnpackInt4(*p);
  EXPECT_EQ(back.packed, q->packed);
  ASSERT_EQ(back.scales.size(), q->scales.size());
  for (size_t i = 0; i < back.scales.size(); ++i) EXPECT_EQ(back.scales[i].bits, q->scales[i].bits);
  EXPECT_EQ(back.zeros, q->zeros);
  // Padded rows dequantize to zero: zero scale.
  for (int g = 0; g < k / group; ++g) {
    for (int r = n; r < p->n_padded; ++r) EXPECT_EQ(p->scales[g * p->n_padded + r].bits, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, Int4PrepackTest,
                         ::testing::Combine(::testing::Values(32, 128), ::testing::Bool()),
                         [](const auto& info) {
                           return "g" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_sym" : "_asym");
                         });

// Pins the documented word layout: element (n=70, k=45) lives in tile
// (nt=1, kt=1), row 6, word 1, nibble 5.
TEST(Int4PrepackLayoutTest, DocumentedPosition) {
  const int n = 128, k = 64;
  Int4Weights q;
  q.rows = n;
  q.cols = k;
  q.group = 32;
  q.symmetric = true;
  q.packed.assign(n * k / 2, 0);
  q.scales.assign(n * k / 32, ToBf16(1.0f));
  const size_t idx = 70 * k + 45;
  q.packed[idx >> 1] = static_cast<uint8_t>(0xB << 4);  // odd index: high nibble
  auto p = PrepackInt4(q);
  ASSERT_TRUE(p.ok());
  const int kt_count = k / 32;
  const size_t word = (static_cast<size_t>(1) * kt_count + 1) * 64 * 4 + 6 * 4 + 1;
  EXPECT_EQ(p->qweight[word], 0xBu << 20);
}

TEST(Int4PrepackLayoutTest, RejectsGroupNotMultipleOfTile) {
  Int4Weights q;
  q.rows = 4;
  q.cols = 48;
  q.group = 16;
  EXPECT_FALSE(PrepackInt4(q).ok());
}

}  // namespace
}  // namespace capplan::kernels
