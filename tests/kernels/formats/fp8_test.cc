// Exhaustive checks of FP8 E4M3 against a brute-force float64 oracle.
#include "kernels/formats/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace capplan::kernels {
namespace {

// Independent decoder: value = (-1)^s * 2^(e-7) * (1 + m/8), subnormal
// 2^-6 * m/8, computed in double from the spec formula.
double SpecValue(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

bool IsNanCode(int code) { return (code & 0x7f) == 0x7f; }

// Nearest finite code, ties to the even code (even mantissa), saturating.
int OracleEncode(double x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xff : 0x7f;
  int best = -1;
  double best_err = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 256; ++c) {
    if (IsNanCode(c)) continue;
    if ((c >> 7) != (std::signbit(x) ? 1 : 0)) continue;  // keep the sign (incl. -0)
    const double err = std::fabs(SpecValue(c) - x);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best_err = err;
      best = c;
    }
  }
  return best;
}

TEST(Fp8E4m3, DecodesAll256CodesPerSpec) {
  for (int c = 0; c < 256; ++c) {
    const float v = Fp8E4m3ToFloat(static_cast<uint8_t>(c));
    if (IsNanCode(c)) {
      EXPECT_TRUE(std::isnan(v)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(v), SpecValue(c)) << "code " << c;
      EXPECT_EQ(std::signbit(v), c >= 128) << c;
    }
  }
  EXPECT_EQ(Fp8E4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Fp8E4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(Fp8E4m3ToFloat(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(kFp8E4m3Max, 448.0f);
}

TEST(Fp8E4m3, EveryCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if (IsNanCode(c)) continue;
    EXPECT_EQ(FloatToFp8E4m3(Fp8E4m3ToFloat(static_cast<uint8_t>(c))), c) << c;
  }
}

TEST(Fp8E4m3, NanStaysNanWithSign) {
  EXPECT_EQ(FloatToFp8E4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(FloatToFp8E4m3(-std::numeric_limits<float>::quiet_NaN()), 0xff);
  EXPECT_TRUE(std::isnan(RoundToFp8E4m3(std::nanf(""))));
}

TEST(Fp8E4m3, SaturatesBothDirections) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {448.0f, 449.0f, 464.0f, 465.0f, 480.0f, 1e6f, 3e38f, inf}) {
    EXPECT_EQ(FloatToFp8E4m3(x), 0x7e) << x;
    EXPECT_EQ(FloatToFp8E4m3(-x), 0xfe) << x;
  }
}

TEST(Fp8E4m3, MidpointsTieToEvenAndNeighboursRoundToNearest) {
  // For every pair of adjacent finite codes of each sign, probe the midpoint
  // and the floats just either side of it.
  int probes = 0;
  for (int sign = 0; sign < 2; ++sign) {
    for (int c = 0; c < 0x7e; ++c) {
      const int lo = (sign << 7) | c, hi = (sign << 7) | (c + 1);
      const float mid = static_cast<float>((SpecValue(lo) + SpecValue(hi)) / 2.0);
      ASSERT_EQ(static_cast<double>(mid), (SpecValue(lo) + SpecValue(hi)) / 2.0);  // exact
      const int even = (lo & 1) == 0 ? lo : hi;
      EXPECT_EQ(FloatToFp8E4m3(mid), even) << "mid of " << lo;
      const float toward_zero = std::nextafter(mid, 0.0f);
      const float away = std::nextafter(mid, sign ? -1000.0f : 1000.0f);
      EXPECT_EQ(FloatToFp8E4m3(toward_zero), lo) << lo;
      EXPECT_EQ(FloatToFp8E4m3(away), hi) << lo;
      probes += 3;
    }
  }
  EXPECT_EQ(probes, 2 * 126 * 3);
}

TEST(Fp8E4m3, MatchesOracleOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> log_mag(-14.0f, 10.0f);
  for (int i = 0; i < 20000; ++i) {
    float x = std::exp2(log_mag(rng));
    if (i & 1) x = -x;
    ASSERT_EQ(FloatToFp8E4m3(x), OracleEncode(x)) << x;
  }
  EXPECT_EQ(FloatToFp8E4m3(0.0f), 0x00);
  EXPECT_EQ(FloatToFp8E4m3(-0.0f), 0x80);
  EXPECT_EQ(FloatToFp8E4m3(1e-30f), 0x00);  // underflow to zero
}

std::vector<float> RandomMatrix(int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < x.size(); ++i) {
    // Rows of very different magnitude, the case per-token scales exist for.
    x[i] = d(rng) * std::exp2(static_cast<float>((i / cols) % 12) - 6.0f);
  }
  return x;
}

void ExpectWithinFp8Bound(const std::vector<float>& x, const Fp8Tensor& t) {
  std::vector<float> back(x.size());
  DequantizeFp8(t, back.data());
  for (int r = 0; r < t.rows; ++r) {
    for (int c = 0; c < t.cols; ++c) {
      const size_t i = static_cast<size_t>(r) * t.cols + c;
      const float s = t.ScaleAt(r, c);
      // Normal range: half a step of 2^-3 relative; subnormal range: half of
      // the 2^-9 step, times the scale. Plus float rounding of x / s.
      const float bound = std::fabs(x[i]) * (kFp8E4m3RelErr + 1e-6f) + s * std::ldexp(1.0f, -10);
      ASSERT_LE(std::fabs(back[i] - x[i]), bound) << "r=" << r << " c=" << c;
    }
  }
}

TEST(Fp8Scales, BlockMaxMapsTo448AndErrorsAreBounded) {
  const int rows = 200, cols = 300;  // partial edge blocks on purpose
  const auto x = RandomMatrix(rows, cols, 11);
  for (Fp8Blocking b : {Fp8Blocking::PerTensor(), Fp8Blocking::PerToken(),
                        Fp8Blocking::TokenGroup(128), Fp8Blocking::Block128()}) {
    auto t = QuantizeFp8(x.data(), rows, cols, b);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const int br = b.block_rows <= 0 ? rows : b.block_rows;
    const int bc = b.block_cols <= 0 ? cols : b.block_cols;
    EXPECT_EQ(t->scale_rows, (rows + br - 1) / br) << Fp8BlockingName(b);
    EXPECT_EQ(t->scale_cols, (cols + bc - 1) / bc) << Fp8BlockingName(b);
    // Every block's largest element lands on +-448 (code 0x7e / 0xfe).
    std::vector<int> has_max(t->scales.size(), 0);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        if ((t->codes[static_cast<size_t>(r) * cols + c] & 0x7f) == 0x7e) {
          has_max[static_cast<size_t>(r / br) * t->scale_cols + c / bc] = 1;
        }
      }
    }
    for (int h : has_max) EXPECT_EQ(h, 1) << Fp8BlockingName(b);
    ExpectWithinFp8Bound(x, *t);
  }
}

TEST(Fp8Scales, PerTokenBeatsPerTensorOnSkewedRows) {
  const int rows = 24, cols = 64;
  const auto x = RandomMatrix(rows, cols, 3);
  auto err = [&](Fp8Blocking b) {
    auto t = QuantizeFp8(x.data(), rows, cols, b);
    std::vector<float> back(x.size());
    DequantizeFp8(*t, back.data());
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) e += std::fabs(back[i] - x[i]);
    return e;
  };
  EXPECT_LT(err(Fp8Blocking::PerToken()), err(Fp8Blocking::PerTensor()));
}

TEST(Fp8Scales, RejectsNonFiniteAndBadShapes) {
  std::vector<float> x = {1.0f, std::numeric_limits<float>::infinity()};
  EXPECT_EQ(QuantizeFp8(x.data(), 1, 2, Fp8Blocking::PerTensor()).status().code(),
            StatusCode::kInvalidConfig);
  EXPECT_FALSE(QuantizeFp8(x.data(), 0, 2, Fp8Blocking::PerTensor()).ok());
  std::vector<float> zeros(4, 0.0f);
  auto t = QuantizeFp8(zeros.data(), 2, 2, Fp8Blocking::PerToken());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->scales[0], 1.0f);
}

}  // namespace
}  // namespace capplan::kernels
